"""Read the cluster state from a live API server: paginated LISTs of raw JSON through the kubernetes
client's transport, turned page by page into the lean model (never into the client's model classes)."""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

import urllib3

from kubectl_desched import heap, interrupts, safeload
from kubectl_desched.errors import DeschedError
from kubectl_desched.kube import decode, httplog, optional_kinds, protobuf, readahead
from kubectl_desched.kube.apierrors import api_exception, is_api_exception
from kubectl_desched.model import wire
from kubectl_desched.model.objects import ParseError, cycle_collector_paused, from_json, node_from_json
from kubectl_desched.model.state import ClusterState
from kubectl_desched.sanitize import one_line, shown

T = TypeVar("T")

if TYPE_CHECKING:
    from kubernetes.client.exceptions import ApiException

    from kubectl_desched.kube.config import Connection, Timeout  # it imports the kubernetes client

Progress = Callable[[str, int, int | None], None]  # label, items read, all of them when the server says
PageParser = Callable[[bytes, str], tuple[list[Any], str]]


class NotJSON(urllib3.exceptions.ProtocolError, json.JSONDecodeError):
    """A 2xx answer whose body is not the JSON object asked for: cut short, an HTML page from a proxy, bytes that
    are not UTF-8, a list where an object belongs. For the client it is an answer that did not arrive, so it is
    a transport error (a urllib3 ProtocolError, as an incomplete read is): callers that handle a dropped
    connection handle this too, and a write whose answer is unreadable is treated as lost, never as failed.
    It is also a JSONDecodeError, for callers that catch that."""

    def __init__(self, method: str, path: str, problem: str) -> None:
        Exception.__init__(self, f"the answer to {method} {path} {problem}")
        # JSONDecodeError's attributes, without keeping the (possibly huge) body alive
        self.msg, self.doc, self.pos, self.lineno, self.colno = problem, "", 0, 1, 1

    def __str__(self) -> str:
        return str(self.args[0])


class TooLarge(NotJSON):
    """An answer longer than answer_limit() allows (a Content-Length of 1 TB, a body without end): read no further.
    Like any answer that did not arrive whole, a transport error for the client."""

    def __init__(self, method: str, path: str, limit: int) -> None:
        super().__init__(method, path, f"is larger than the {safeload.describe_size(limit)} one answer may have")


# The most one answer may have, read in chunks: a huge Content-Length allocates nothing and an endless body stops
# there. The largest real answers are LIST pages: 500 pods are 2-4 MB, and at 256 MiB each would average 512 KiB,
# a third of the most etcd stores for one object (1.5 MiB).
ANSWER_LIMIT = 256 << 20


def answer_limit(conn: Connection) -> int:
    """A larger --chunk-size raises the bound in proportion; with --chunk-size 0 an answer is a whole list, the
    cluster's pods included, so it is bounded as a JSON snapshot of the cluster is."""
    if conn.chunk_size <= 0:
        return safeload.MAX_JSON_SNAPSHOT_CHARS
    return max(ANSWER_LIMIT, conn.chunk_size * ANSWER_LIMIT // 500)


_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number",
               bool: "a boolean", type(None): "null"}


def json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def decode_json(data: bytes, method: str, path: str) -> dict[str, Any]:
    """Parse an answer's body, which the API always makes an object; NotJSON names the request and what is
    wrong with the body."""
    try:
        doc = json.loads(data)
    except ValueError as e:  # JSONDecodeError, or UnicodeDecodeError for bytes that are not text
        raise NotJSON(method, path, f"was not JSON ({_body_problem(data, e)})") from None
    if not isinstance(doc, dict):
        raise NotJSON(method, path, f"was not a JSON object but {json_type(doc)}")
    return doc


def _body_problem(data: bytes, e: ValueError) -> str:
    head = data[:80].lstrip()
    if head[:1] == b"<":
        return f"{len(data):,} bytes of HTML or XML starting {shown(head.decode('utf-8', 'replace')[:40])}"
    if isinstance(e, UnicodeDecodeError):
        return f"{len(data):,} bytes that are not UTF-8 text"
    if isinstance(e, json.JSONDecodeError):
        # Cut short: the parser ran out of text (an error at the very end, or a string never closed).
        if e.pos >= len(e.doc.rstrip()) or e.msg.startswith("Unterminated string"):
            return f"cut short after {len(data):,} bytes"
        return f"{len(data):,} bytes, invalid at character {e.pos:,}: {e.msg}"
    return f"{len(data):,} bytes: {one_line(e, 80)}"


def list_page(data: bytes, path: str) -> tuple[list[Any], str]:
    """A LIST answer's items and its continue token, after checking the envelope's shape (each item's is the
    model's business)."""
    page = decode_json(data, "GET", path)
    items, meta = page.get("items"), page.get("metadata")
    if items is not None and not isinstance(items, list):
        raise NotJSON("GET", path, f"was not a list: its items are {json_type(items)}")
    if meta is not None and not isinstance(meta, dict):
        raise NotJSON("GET", path, f"was not a list: its metadata is {json_type(meta)}")
    cont = (meta or {}).get("continue")
    if cont is not None and not isinstance(cont, str):
        raise NotJSON("GET", path, f"was not a list: its metadata.continue is {json_type(cont)}")
    return items or [], cont or ""


class ReadAsJSON(Exception):
    """A protobuf page the protobuf read does not take whole: the list is read again as JSON."""


def typed_page(kind: str, asked_protobuf: bool = False) -> PageParser:
    """A LIST page of a kind the model types, decoded from its bytes into the model (kube/decode.py, or
    kube/protobuf.py for the protobuf answer to a protobuf read); a JSON page the typed decoder does not take whole
    is read again the slow way, which names the object and field at fault. A protobuf answer to a JSON read is
    not JSON, and said so."""
    protobuf_kind = asked_protobuf and kind in protobuf.KINDS

    def parse(data: bytes, path: str) -> tuple[list[Any], str]:
        if protobuf_kind and protobuf.is_protobuf(data):
            found = protobuf.page(data, kind)
            if found is None:
                raise ReadAsJSON(path)
            return found
        fast = decode.page(data, kind)
        if fast is not None:
            return fast
        items, cont = list_page(data, path)
        return [from_json(kind, obj) for obj in items], cont

    return parse


def each_item(parse: Callable[[Mapping[str, Any]], Any]) -> PageParser:
    """A LIST page read as parsed JSON, each item through `parse`."""

    def parse_page(data: bytes, path: str) -> tuple[list[Any], str]:
        items, cont = list_page(data, path)
        return [parse(obj) for obj in items], cont

    return parse_page


def api_message(e: ApiException) -> str:
    """What the server said in an error answer (its Status message, else the HTTP reason), made safe to print:
    one line, no control characters, a few hundred characters at most."""
    try:
        body = json.loads(e.body or "")
        if isinstance(body, dict) and body.get("message"):
            return one_line(body["message"])
    except (ValueError, TypeError):
        pass
    return one_line(e.reason or "") or f"HTTP {e.status}"


def describe_api_error(e: Exception, what: str, server: str) -> DeschedError:
    """One line that says what failed and what the server or network said (sanitized: see api_message)."""
    if is_api_exception(e):
        if e.status == 401:
            return DeschedError(f"{what}: unauthorized (401): the server at {server} rejected your credentials")
        if e.status == 403:
            return DeschedError(f"{what}: forbidden (403): {api_message(e)}")
        if e.status == 0:
            return DeschedError(f"{what}: {one_line(e.reason)}")
        return DeschedError(f"{what}: {api_message(e)} ({e.status})")
    if isinstance(e, NotJSON):
        return DeschedError(f"{what}: {e}")
    if isinstance(e, urllib3.exceptions.MaxRetryError):
        reason = e.reason
        if isinstance(reason, urllib3.exceptions.SSLError):
            return DeschedError(f"{what}: TLS error talking to {server}: {one_line(reason)}")
        return DeschedError(f"{what}: cannot reach the API server at {server}: {_short(reason)}")
    if isinstance(e, urllib3.exceptions.TimeoutError | TimeoutError):
        return DeschedError(f"{what}: timed out talking to {server} (see --request-timeout)")
    return DeschedError(f"{what}: {type(e).__name__}: {_short(e)}")


def _short(e: object) -> str:
    text = str(e)
    for marker in ("Connection refused", "Name or service not known", "timed out", "No route to host"):
        if marker in text:
            return marker.lower()
    return one_line(text.splitlines()[0], 200) if text.strip() else type(e).__name__


def request_json(conn: Connection, method: str, path: str, *, query: list[tuple[str, Any]] | None = None,
                 body: Any = None, timeout: Timeout = None, accept: str = "application/json",
                 content_type: str = "application/json") -> Any:
    """One API call through the kubernetes client (auth incl. token refresh, TLS, proxies), returning the parsed
    JSON object. Raw bytes in, json.loads out: no model classes. Non-2xx answers raise ApiException; a 2xx body
    that is not a JSON object raises NotJSON. `timeout` replaces the connection's (--request-timeout) for this
    call."""
    if content_type != "application/json":  # a PATCH names its patch type
        data = request_raw(conn, method, path, query=query, body=body, timeout=timeout, accept=accept,
                           content_type=content_type)
    else:
        data = request_raw(conn, method, path, query=query, body=body, timeout=timeout, accept=accept)
    return decode_json(data, method, path) if data else None


def request_raw(conn: Connection, method: str, path: str, *, query: list[tuple[str, Any]] | None = None,
                body: Any = None, timeout: Timeout = None, accept: str = "application/json",
                head: Callable[[bytes], None] | None = None, content_type: str = "application/json",
                read: Callable[[Any], bytes] | None = None, log_body: bool = True) -> bytes:
    """The answer's body; `head`, if given, is called with the first PEEK bytes of a 2xx body as soon as they
    arrive, before the rest is read. `read`, if given, reads the whole body from the stream instead, with bounds
    of its own (a Prometheus answer through the service proxy); log_body False keeps the body out of -v 8 (a
    Secret's)."""
    api = conn.api
    # gzip as client-go asks: the apiserver compresses answers over 128 KiB (a LIST page of 500 pods, ~9x smaller),
    # which matters over an operator's link to a remote cluster; urllib3 decodes it (Content-Encoding: gzip).
    # Without it (--disable-compression) the server spends no CPU compressing: faster on loopback or a fast LAN.
    headers = {"Accept": accept, "Content-Type": content_type}  # a PATCH names its patch type
    if conn.compress:
        headers["Accept-Encoding"] = "gzip"
    method, url, headers, body, post = api.param_serialize(
        method, path, query_params=query or [], header_params=headers, body=body, auth_settings=["BearerToken"],
    )
    resp = api.call_api(method, url, header_params=headers, body=body, post_params=post,
                        _request_timeout=timeout or conn.timeout)
    limit = answer_limit(conn)
    if resp.data is None and read is not None:
        data = read(resp.response)
    elif resp.data is None:
        stream = resp.response  # urllib3's, unread (the client asks it not to preload)
        first = b""
        if head is not None and 200 <= resp.status <= 299:
            first = stream.read(PEEK)
            head(first)
        data = first + safeload.read_bytes(stream, limit + 1 - len(first))
        if len(data) > limit:
            stream.close()  # the rest is never read: the connection cannot serve another request
    else:  # a transport that reads answers whole
        data = resp.data
    if httplog.enabled(8):
        httplog.body(data if log_body else b"[not shown: it may hold a secret]")
    if len(data) > limit:
        raise TooLarge(method, path, limit)
    if not 200 <= resp.status <= 299:
        # an error answer to a protobuf read is written as protobuf too: its Status as the JSON one it stands for
        text = (protobuf.status_json(data) if protobuf.is_protobuf(data) else None) or data.decode("utf-8", "replace")
        raise api_exception()(http_resp=resp, body=text)
    return data


def bounded_timeout(conn: Connection, read: float = 30.0) -> tuple[float, float]:
    """The connection's timeout, with a read bound where --request-timeout set none: a write or a poll made
    while acting must not hang forever on a silent server (a LIST of 150,000 pods may take long; those keep none)."""
    given = conn.timeout if isinstance(conn.timeout, tuple) else (30.0, None)
    return (given[0], given[1] or read)


class ListExpired(Exception):
    """The continue token expired (410 Gone) during a long paginated read."""


# The apiserver writes a list's metadata before its items, so the next page's token is in the first bytes.
PEEK = 4096
_CONTINUE = re.compile(rb'"continue"\s*:\s*"([A-Za-z0-9+/=_-]+)"')
_REMAINING = re.compile(rb'"remainingItemCount"\s*:\s*([0-9]{1,15})\b')
AHEAD = 2  # pages being fetched or held beyond the one being parsed: 2 x 3.6 MB at 500 pods a page


def remaining_items(head: bytes) -> int | None:
    """How many items a list's first page says are left after it (metadata.remainingItemCount, before the
    items); None when it does not say (the last page, a field selector, an old server)."""
    if protobuf.is_protobuf(head):
        return protobuf.head(head)[1]
    items = head.find(b'"items"')
    found = _REMAINING.search(head, 0, items) if items >= 0 else None
    return int(found.group(1)) if found else None


def next_token(head: bytes) -> str | None:
    """The continue token a list's first bytes name: "" when its metadata, before the items, has none (the last
    page), None when they do not say (no metadata before the items within them). Only the metadata is searched:
    no user's string comes before the items."""
    if protobuf.is_protobuf(head):
        return protobuf.head(head)[0]
    items = head.find(b'"items"')
    if items < 0 or head.find(b'"metadata"', 0, items) < 0:
        return None
    found = _CONTINUE.search(head, 0, items)
    return found.group(1).decode() if found else ""


def list_pages(conn: Connection, path: str, *, field_selector: str | None = None,
               progress: Progress | None = None, label: str = "", parse: PageParser = list_page,
               accept: str = "application/json") -> Iterator[list[Any]]:
    """Yield the items of a LIST page by page, as `parse` makes them of the page's bytes (parsed JSON by
    default); raises ListExpired on 410 Gone mid-list. Each page is asked for as soon as the first bytes of the
    one before name it, on helper threads (readahead.py): the server builds it while we receive and parse."""

    def fetch(cont: str, headed: Callable[[str | None], None]) -> bytes:
        query: list[tuple[str, Any]] = [("limit", conn.chunk_size)] if conn.chunk_size > 0 else []
        if cont:
            query.append(("continue", cont))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        told = False

        def head(first: bytes) -> None:
            nonlocal told
            told = True
            headed(next_token(first))

        try:
            with interrupts.abandonable():
                raw = request_raw(conn, "GET", path, query=query, accept=accept, head=head)
        except api_exception() as e:
            if e.status == 410 and cont:
                raise ListExpired(path) from None
            raise
        if not told:  # a transport that reads the answer whole
            headed(next_token(raw[:PEEK]))
        return raw

    seen = 0
    total: int | None = None
    pool = ThreadPoolExecutor(max_workers=AHEAD + 2, thread_name_prefix="list")
    pages = readahead.ReadAhead(pool, fetch, AHEAD)
    try:
        page: readahead.Page | None = pages.first()
        while page is not None:
            raw = pages.take(page)
            left = remaining_items(raw[:PEEK]) if not seen and raw else None
            items, cont = parse(raw, path) if raw else ([], "")
            del raw
            page = pages.follow(page, cont)
            if left is not None:
                total = len(items) + left  # the list is read at the first page's resourceVersion
            seen += len(items)
            if progress:
                progress(label, seen, total)
            yield items
    finally:  # done, stopped or failed: nothing more is asked for, and what is on its way is not waited for
        pages.close()
        pool.shutdown(wait=False, cancel_futures=True)


def _read_all(conn: Connection, path: str, parse: PageParser, *, field_selector: str | None = None,
              progress: Progress | None = None, label: str = "", accept: str = "application/json",
              each_page: Callable[[], None] = lambda: None) -> list[Any]:
    """Read a whole list; on 410 Gone start again from the first page, as kubectl does."""
    for _attempt in range(4):
        out: list[Any] = []
        try:
            for page in list_pages(conn, path, field_selector=field_selector, progress=progress, label=label,
                                   parse=parse, accept=accept):
                out += page
                each_page()
            return out
        except ListExpired:
            continue
    raise DeschedError(f"listing {label or path}: the list kept expiring (410 Gone); try again")


def _read_typed(conn: Connection, path: str, kind: str, **kw: Any) -> list[Any]:
    """A whole list of a kind the model types: pods and nodes as protobuf where the connection may, and again as
    JSON if a page of it is not one the protobuf read takes whole (the JSON read names what is wrong with it)."""
    if conn.protobuf and kind in protobuf.KINDS and protobuf.available():
        try:
            return _read_all(conn, path, typed_page(kind, asked_protobuf=True), accept=protobuf.ACCEPT, **kw)
        except ReadAsJSON:
            pass
    return _read_all(conn, path, typed_page(kind), **kw)


# Only each object's metadata: a pod's is a small part of it.
_METADATA_ONLY = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"


def _keys_page(raw: bytes, path: str) -> tuple[list[str], str]:
    doc = decode_json(raw, "GET", path)
    items = doc.get("items") or []
    keys = [f"{(o.get('metadata') or {}).get('namespace', '')}/{(o.get('metadata') or {}).get('name', '')}"
            for o in items if isinstance(o, dict)]
    return keys, (doc.get("metadata") or {}).get("continue") or ""


def pod_keys_matching(conn: Connection, field_selector: str) -> set[str]:
    """namespace/name of the pods the apiserver says match kubectl's --field-selector (it knows every pod field
    label and says which it does not support); only their metadata is read."""
    try:
        return set(_read_all(conn, "/api/v1/pods", _keys_page, field_selector=field_selector,
                             label="pods matching --field-selector", accept=_METADATA_ONLY))
    except (api_exception(), urllib3.exceptions.HTTPError, OSError, NotJSON) as e:
        raise describe_api_error(e, "reading the pods that match --field-selector", conn.server) from None


EXTRA_KINDS = {
    "Namespace": "/api/v1/namespaces",
    "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses",
    "PersistentVolumeClaim": "/api/v1/persistentvolumeclaims",
    "NodeMetrics": "/apis/metrics.k8s.io/v1beta1/nodes",
    "PodMetrics": "/apis/metrics.k8s.io/v1beta1/pods",
    "NodeMetric": "/apis/slo.koordinator.sh/v1alpha1/nodemetrics",
    # Koordinator's MigrationController checks (plugins/koordinator/arbitration.py): owners and live jobs.
    "ReplicaSet": "/apis/apps/v1/replicasets",
    "Deployment": "/apis/apps/v1/deployments",
    "StatefulSet": "/apis/apps/v1/statefulsets",
    "ReplicationController": "/api/v1/replicationcontrollers",
    "PodMigrationJob": "/apis/scheduling.koordinator.sh/v1alpha1/podmigrationjobs",
    # --surge's checks (framework/surge.py): an autoscaler that targets the Deployment would undo the surge.
    "HorizontalPodAutoscaler": "/apis/autoscaling/v2/horizontalpodautoscalers",
}

OPTIONAL_KINDS = optional_kinds.OPTIONAL_KINDS


def _slim_workload(o: Mapping[str, Any]) -> Mapping[str, Any]:
    """What the MigrationController and --surge checks read of an owner; a ReplicaSet's pod template is most of
    its size."""
    meta, spec, status = o.get("metadata") or {}, o.get("spec") or {}, o.get("status") or {}
    return {"kind": o.get("kind"),
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "labels", "ownerReferences",
                                              "deletionTimestamp", "generation") if k in meta},
            "spec": {k: spec[k] for k in ("replicas", "selector", "paused", "strategy") if k in spec},
            **({"status": {k: status[k] for k in ("observedGeneration", "replicas", "updatedReplicas",
                                                  "readyReplicas") if k in status}}
               if o.get("kind") == "Deployment" else {})}


def _slim_hpa(o: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = o.get("metadata") or {}
    return {"metadata": {k: meta[k] for k in ("name", "namespace") if k in meta},
            "spec": {"scaleTargetRef": (o.get("spec") or {}).get("scaleTargetRef") or {}}}


def _slim_job(o: Mapping[str, Any]) -> Mapping[str, Any]:
    meta, spec, status = o.get("metadata") or {}, o.get("spec") or {}, o.get("status") or {}
    return {"metadata": {k: meta[k] for k in ("name", "uid", "creationTimestamp") if k in meta},
            "spec": {k: spec[k] for k in ("podRef", "mode") if k in spec},
            "status": {k: status[k] for k in ("phase",) if k in status}}


def _slim_of_kind(kind: str, obj: Mapping[str, Any]) -> Any:
    return _slim_workload({**obj, "kind": kind})


# A LIST's items carry no kind: each slim form puts it back where the plugin needs it.
_SLIM: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    **{kind: functools.partial(_slim_of_kind, kind)
       for kind in ("ReplicaSet", "Deployment", "StatefulSet", "ReplicationController")},
    "PodMigrationJob": _slim_job,
    "HorizontalPodAutoscaler": _slim_hpa,
}

# Kinds served by add-ons: when the API is missing, say which add-on, and stop (never fall back to requests).
ADDON_APIS = {
    "NodeMetrics": "the metrics API (metrics.k8s.io/v1beta1) is not available: install metrics-server",
    "PodMetrics": "the metrics API (metrics.k8s.io/v1beta1) is not available: install metrics-server",
    "NodeMetric": "Koordinator's NodeMetric API (slo.koordinator.sh/v1alpha1) is not served: install Koordinator",
}


def _read_extra(conn: Connection, kind: str, warn: Callable[[str], None] = lambda _m: None) -> list[Any] | None:
    """The kind's objects; None for an optional kind that may not be listed (left out of the state)."""
    try:
        parse = typed_page(kind) if kind in wire.EXTRA else each_item(_SLIM.get(kind, lambda o: o))
        return _read_all(conn, EXTRA_KINDS[kind], parse, label=kind)
    except ParseError as e:
        raise DeschedError(f"reading {kind}: {e}") from None
    except api_exception() as e:
        # 404: group not served; 503: an aggregated API registered but its server is down.
        if kind in ADDON_APIS and e.status in (404, 503):
            raise DeschedError(f"{ADDON_APIS[kind]} ({e.status} on {EXTRA_KINDS[kind]})") from None
        if kind in OPTIONAL_KINDS and e.status == 404:
            return []
        if kind in OPTIONAL_KINDS and e.status == 403:
            warn(f"cannot list {kind} objects ({api_message(e)}); the checks that need them are left out")
            return None
        raise


def _read_extras(conn: Connection, kinds: set[str] | frozenset[str], warn: Callable[[str], None]) -> dict[str, Any]:
    found = {kind: _read_extra(conn, kind, warn) for kind in sorted(kinds)}
    return {kind: objs for kind, objs in found.items() if objs is not None}


class _Beside:
    """A read on its own thread while the pods are read (the server sends both at once): its answer or its error
    when asked for. A daemon thread, so an interrupted command exits without waiting for it."""

    def __init__(self, read: Callable[[], Any]) -> None:
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(read,), name="beside", daemon=True)
        self._thread.start()

    def _run(self, read: Callable[[], Any]) -> None:
        try:
            self._value = read()
        except BaseException as e:  # handed to the reader's thread by result()
            self._error = e

    def raise_if_failed(self) -> None:
        if self._error is not None:
            raise self._error

    def result(self) -> Any:
        self._thread.join()
        self.raise_if_failed()
        return self._value

    def with_read(self, read: Callable[[], T]) -> tuple[Any, T]:
        """This read's answer and `read`'s, made meanwhile on the caller's thread: this read's error comes first,
        as when it was made first. An interrupt (Ctrl-C, a signal) leaves at once, not waiting for it."""
        try:
            other = read()
        except Exception:
            self.result()
            raise
        return self.result(), other

    def done_without_error(self) -> bool:
        """Whether the read has ended with its answer (not waiting for it)."""
        return not self._thread.is_alive() and self._error is None


@cycle_collector_paused()
def read_cluster(conn: Connection, *, node_names: list[str] | None = None, progress: Progress | None = None,
                 warn: Callable[[str], None] = lambda _m: None, kinds: set[str] | frozenset[str] = frozenset()
                 ) -> ClusterState:
    """Nodes, pods and PDBs. With a short list of node names only those nodes' pods are read
    (field selector spec.nodeName), which is what `explain node` and `--nodes` need.

    The nodes, and then the PDBs and other kinds, are read beside the pods, each on its own thread: at 5,000
    nodes that is 50 MB the server sends while it pages through the pods. What comes out is what reading them
    one after the other gives: the same objects, the first error in that order (nodes, pods, PDBs, other
    kinds; a failed node read stops the pod read at its next page), the warnings in that order too."""
    what = "reading the cluster"
    heap.one_heap()  # before the helper threads: pages they read leave no holes in heaps of their own
    later: list[str] = []  # warnings of the reads beside, said once the pods are read (as before, in order)
    nodes_read = _Beside(lambda: _read_typed(conn, "/api/v1/nodes", "Node", label="nodes"))
    others_read = _Beside(lambda: (_read_pdbs(conn, later.append), _read_extras(conn, kinds, later.append)))

    def read_pods() -> list[Any]:
        if node_names is not None and len(node_names) <= 20:
            return [p for name in node_names for p in _read_typed(
                conn, "/api/v1/pods", "Pod", field_selector=f"spec.nodeName={name}", progress=progress,
                label="pods")]
        # Unscheduled pods too: no plugin moves them, but minReplicas counts them as upstream does.
        return _read_typed(conn, "/api/v1/pods", "Pod", progress=progress, label="pods",
                           each_page=nodes_read.raise_if_failed)  # a failed node read stops it

    try:
        try:
            nodes, pods = nodes_read.with_read(read_pods)
        except ParseError as e:
            raise DeschedError(f"{what}: {e}") from None
        try:
            pdbs, extra = others_read.result()
        finally:  # said only once nodes and pods are read, as when these reads came after them
            for w in later:
                warn(w)
    except (api_exception(), urllib3.exceptions.HTTPError, OSError) as e:
        raise describe_api_error(e, what, conn.server) from None
    return ClusterState(nodes, pods, pdbs, source=f"cluster {conn.server} (context {conn.context})", extra=extra,
                        server_version=server_version(conn))  # once the rest is read: a failed read never asks


def server_version(conn: Connection) -> str:
    """The API server's gitVersion (which scheduler the placement estimate follows); "" when it will not say:
    nothing else depends on it, so no error of it stops a run."""
    try:
        doc = request_json(conn, "GET", "/version")
    except Exception:  # any answer but a version: the estimate takes the current scheduler
        return ""
    version = doc.get("gitVersion") if isinstance(doc, dict) else None
    return version if isinstance(version, str) else ""


# Up to this many namespaces their PDBs are read namespace by namespace; past it, in one cluster-wide LIST: one
# request instead of a round trip each. On a quiet machine both cost the same (106 LISTs or 2,671 PDBs: 0.05 s);
# on a loaded one the LIST was 0.09 s against 0.38 s.
FEW_NAMESPACES = 8


_PDBS = "/apis/policy/v1/poddisruptionbudgets"


def _read_pdbs(conn: Connection, warn: Callable[[str], None], namespaces: set[str] | None = None,
               started: _Beside | None = None) -> list[Any]:
    """Every PDB, or those of some namespaces: a few concurrent small LISTs for a few namespaces, one cluster-wide
    LIST kept to them for more (by namespace again where the user may not list them cluster-wide). started: that
    cluster-wide LIST, already under way: its answer is taken, for few namespaces too."""
    parse = typed_page("PodDisruptionBudget")
    try:
        if namespaces is not None and len(namespaces) <= FEW_NAMESPACES and started is None:
            return _read_pdbs_of(conn, namespaces, parse)
        try:
            found = started.result() if started is not None else _read_all(conn, _PDBS, parse, label="pdbs")
        except api_exception() as e:
            if e.status != 403 or namespaces is None:
                raise
            return _read_pdbs_of(conn, namespaces, parse)  # a namespaced role: its namespaces may still answer
        return found if namespaces is None else [b for b in found if b.namespace in namespaces]
    except api_exception() as e:
        if e.status not in (403, 404):
            raise
        warn(f"cannot list PodDisruptionBudgets ({api_message(e)}); PDB hints are left out")
        return []


def _read_pdbs_of(conn: Connection, namespaces: set[str], parse: PageParser) -> list[Any]:
    paths = [f"/apis/policy/v1/namespaces/{quote(ns, safe='')}/poddisruptionbudgets" for ns in sorted(namespaces)]
    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="pdbs") as pool:
        return [b for found in pool.map(lambda p: _read_all(conn, p, parse), paths) for b in found]


@cycle_collector_paused()
def read_node(conn: Connection, name: str, *, warn: Callable[[str], None] = lambda _m: None,
              kinds: set[str] | frozenset[str] = frozenset(),
              in_scope: Callable[[Any], bool] = lambda _pod: True) -> ClusterState | None:
    """`explain node`'s quick read: that node, its pods (field selector spec.nodeName) and the cluster-wide
    settings (the PDBs of the namespaces of its pods in_scope, the extra kinds), none of the other nodes' pods.
    A pod out of scope is never a candidate, so no PDB of its namespace is consulted. None when the node does not
    exist.

    The node and the cluster-wide PDB LIST are read beside the pods. That LIST is kept past FEW_NAMESPACES in
    scope; with fewer it is used only if it is already whole, else it stops at its next page and each namespace is
    read. Objects, errors and warnings are those of reading one after the other (node, pods, PDBs, extra kinds)."""
    what = f"reading node {name}"
    heap.one_heap()  # before the helper threads, as read_cluster
    unneeded = threading.Event()  # set on every way out but the one that takes the cluster-wide LIST's answer

    def unless_unneeded() -> None:
        if unneeded.is_set():
            raise _NotNeeded

    try:
        node_read = _Beside(lambda: _read_one_node(conn, name))
        pdbs_read = _Beside(lambda: _read_all(conn, _PDBS, typed_page("PodDisruptionBudget"), label="pdbs",
                                              each_page=unless_unneeded))
        try:
            try:
                node, pods = node_read.with_read(lambda: _read_all(
                    conn, "/api/v1/pods", typed_page("Pod"), field_selector=f"spec.nodeName={name}", label="pods"))
            except ParseError as e:
                raise DeschedError(f"{what}: {e}") from None
            except api_exception() as e:
                if e.status == 404:
                    return None
                raise
            namespaces = {p.namespace for p in pods if in_scope(p)}  # a PDB covers its namespace only
            # past FEW_NAMESPACES the LIST is what would be asked for; below, its answer if it has come whole
            take_list = len(namespaces) > FEW_NAMESPACES or pdbs_read.done_without_error()
            if not take_list:
                unneeded.set()
            pdbs = _read_pdbs(conn, warn, namespaces, started=pdbs_read if take_list else None)
        finally:
            unneeded.set()  # whatever ends here: the LIST reads no further page
        extra = _read_extras(conn, kinds, warn)
    except (api_exception(), urllib3.exceptions.HTTPError, OSError) as e:
        raise describe_api_error(e, what, conn.server) from None
    return ClusterState([node], pods, pdbs, source=f"node {name} of cluster {conn.server} (context {conn.context})",
                        extra=extra)


class _NotNeeded(Exception):
    """Ends a read beside another whose answer made it needless."""


def _read_one_node(conn: Connection, name: str) -> Any:
    path = f"/api/v1/nodes/{quote(name, safe='')}"
    with interrupts.abandonable():  # on a helper thread: an interrupted command may leave without its answer
        data = request_raw(conn, "GET", path)
    # an empty body reaches node_from_json as None: its schema check names what is missing
    return decode.one(data, "Node") or node_from_json(
        decode_json(data, "GET", path) if data else None)  # type: ignore[arg-type]
