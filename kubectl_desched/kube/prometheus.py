"""Prometheus's HTTP API as the upstream descheduler's Prometheus metrics source reads it: one instant query
(`/api/v1/query`), whose answer must be a vector of samples, each labelled `instance` with a node's name and valued
in [0, 1]. Plugins never call it: the loader (app/loading.py) evaluates each query the policy's plugins name and
puts the answers in the state (model/metrics.PrometheusReading), as NodeMetrics are read.

Prometheus is reached directly (a URL, with a bearer token and a CA if given) or through the API server's service
proxy (`service/NAMESPACE/[https:]NAME[:PORT][/PATH]`: the user's kubeconfig connection, so a kubeconfig and RBAC
on `services/proxy` are all it takes). Every answer is bounded (size and time) as the API's answers are; whatever
goes wrong is one DeschedError line naming where the query went (UsageError for a target or file the user gave)."""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urlsplit

import urllib3

from kubectl_desched import __version__, safeload
from kubectl_desched.errors import DeschedError, UsageError
from kubectl_desched.kube import httplog, live, overrides
from kubectl_desched.kube.apierrors import api_exception, is_api_exception
from kubectl_desched.kube.live import NotJSON, api_message, describe_api_error, json_type
from kubectl_desched.model.metrics import PrometheusReading
from kubectl_desched.sanitize import hold, mask_url, one_line, shown

if TYPE_CHECKING:
    from kubectl_desched.kube.config import Connection, Timeout

SERVICE_PREFIX = "service/"
QUERY_PATH = "/api/v1/query"
# An answer is one sample per node, some 200 bytes each: 5,000 nodes are 1 MB. A bound 32 times that.
ANSWER_LIMIT = 32 << 20
# Without --request-timeout: connect within 30 s, each read within 60 s, the whole answer within 120 s (a server
# that trickles a byte at a time never hits the read bound). Prometheus's own query timeout is 2 minutes.
CONNECT_TIMEOUT, READ_TIMEOUT, ANSWER_DEADLINE = 30.0, 60.0, 120.0
TOKEN_KEY = "prometheusAuthToken"  # the Secret's data key upstream reads the token from
_SERVICE_HOST = re.compile(r"^(?P<name>[a-z0-9]([-a-z0-9]*[a-z0-9])?)\.(?P<ns>[a-z0-9]([-a-z0-9]*[a-z0-9])?)"
                           r"\.svc(\.cluster\.local)?\.?$")
_SERVICE = re.compile(r"^(?P<ns>[a-z0-9]([-a-z0-9]*[a-z0-9])?)/(?:(?P<scheme>https?):)?"
                      r"(?P<name>[a-z0-9]([-a-z0-9]*[a-z0-9])?)(?::(?P<port>[A-Za-z0-9-]{1,15}))?(?P<path>/.*)?$")


@dataclass(frozen=True)
class Service:
    """A Prometheus behind a Service, reached through the API server's proxy subresource."""

    namespace: str
    name: str
    scheme: str = ""  # "https" when the service port speaks TLS (the API server does not verify its certificate)
    port: str = ""  # a number or a port name; none: the service's only port
    path: str = ""  # a route prefix (Prometheus's --web.route-prefix), without the trailing slash

    def proxy_path(self, api_path: str) -> str:
        scheme = f"{self.scheme}:" if self.scheme == "https" else ""
        port = f":{self.port}" if self.port else ""
        return (f"/api/v1/namespaces/{self.namespace}/services/{scheme}{quote(self.name)}{port}/proxy"
                f"{self.path}{api_path}")

    def shown(self) -> str:
        scheme = "https:" if self.scheme == "https" else ""
        port = f":{self.port}" if self.port else ""
        return f"service {self.namespace}/{scheme}{self.name}{port}{self.path} (through the API server)"


@dataclass(frozen=True)
class Target:
    """Where the queries go: a URL, or a service through the API server; `origin` names the flag or policy field."""

    origin: str
    url: str = ""
    service: Service | None = None

    def shown(self) -> str:
        return self.service.shown() if self.service else f"Prometheus at {mask_url(self.url)}"


def parse_target(text: str, origin: str, *, in_cluster: bool = False) -> Target:
    """`service/NS/[https:]NAME[:PORT][/PATH]`, or an http(s) URL. A URL whose host is a service's cluster DNS
    name (NAME.NS.svc[.cluster.local]) only resolves inside the cluster: from outside it, it is reached through
    the API server's service proxy, with the URL's scheme, port and path."""
    text = text.strip()
    if not text:
        raise UsageError(f"{origin}: empty; give a URL such as http://127.0.0.1:9090 or "
                         "service/NAMESPACE/NAME:PORT")
    if text.startswith(SERVICE_PREFIX):
        m = _SERVICE.match(text[len(SERVICE_PREFIX):])
        if m is None:
            raise UsageError(f"{origin}: {shown(text)} is not service/NAMESPACE/[https:]NAME[:PORT][/PATH], "
                             "e.g. service/monitoring/prometheus-k8s:9090")
        return Target(origin, service=Service(m["ns"], m["name"], m["scheme"] or "", m["port"] or "",
                                              (m["path"] or "").rstrip("/")))
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018  (a bad port raises here)
    except ValueError as e:
        raise UsageError(f"{origin}: {shown(mask_url(text))} is not a URL: {one_line(e, 80)}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{origin}: {shown(mask_url(text))} is not an http:// or https:// URL, nor "
                         "service/NAMESPACE/NAME:PORT")
    if parts.query or parts.fragment:
        raise UsageError(f"{origin}: {shown(mask_url(text))}: give the server's address without a query or fragment")
    if parts.username is not None or parts.password is not None:  # urllib3 would drop them without a word
        raise UsageError(f"{origin}: {shown(mask_url(text))}: credentials in the URL are not sent; give "
                         "--prometheus-token-file (a bearer token) instead")
    svc = _SERVICE_HOST.match(parts.hostname)
    if svc is not None and not in_cluster:
        port = str(parts.port) if parts.port else ""
        return Target(origin, service=Service(svc["ns"], svc["name"], parts.scheme, port, parts.path.rstrip("/")))
    return Target(origin, url=text.rstrip("/"))


def token_from_file(path: str) -> str:
    """--prometheus-token-file: the token, its line end trimmed (as client-go reads a token file), held so that
    nothing shown can quote it."""
    token = safeload.read_file(path, 64 << 10).strip()
    hold(token)
    if not token:
        raise UsageError(f"--prometheus-token-file {path}: the file is empty")
    if why := overrides.token_problem(token):
        raise UsageError(f"--prometheus-token-file {path}: the token {why}")
    return token


def token_from_secret(conn: Connection, namespace: str, name: str, field: str) -> str:
    """The policy's authToken: the Secret's `prometheusAuthToken`, read with the user's credentials."""
    path = f"/api/v1/namespaces/{quote(namespace, safe='')}/secrets/{quote(name, safe='')}"
    what = f"reading the Prometheus token ({field}: Secret {namespace}/{name})"
    try:
        doc = json.loads(live.request_raw(conn, "GET", path, log_body=False))
    except (ValueError, TypeError):
        raise DeschedError(f"{what}: the answer was not JSON") from None
    except Exception as e:
        if is_api_exception(e) and e.status == 404:
            raise DeschedError(f"{what}: the Secret does not exist") from None
        if is_api_exception(e) and e.status == 403:
            raise DeschedError(f"{what}: forbidden (403): {api_message(e)}; give --prometheus-token-file "
                               "instead") from None
        if isinstance(e, api_exception() | urllib3.exceptions.HTTPError | OSError | NotJSON):
            raise describe_api_error(e, what, conn.server) from None
        raise
    data = doc.get("data") if isinstance(doc, dict) else None
    encoded = data.get(TOKEN_KEY) if isinstance(data, dict) else None
    if not isinstance(encoded, str) or not encoded:
        raise DeschedError(f"{what}: the Secret has no {TOKEN_KEY} data, or it is empty")
    try:
        token = base64.b64decode(encoded, validate=True).decode("ascii").strip()
    except (binascii.Error, UnicodeDecodeError):
        raise DeschedError(f"{what}: its {TOKEN_KEY} is not base64 of ASCII text") from None
    hold(token)
    if not token or overrides.token_problem(token):
        raise DeschedError(f"{what}: its {TOKEN_KEY} cannot be sent as a bearer token")
    return token


def _timeouts(request_timeout: float) -> tuple[float, float, float]:
    if request_timeout > 0:
        return request_timeout, request_timeout, request_timeout
    return CONNECT_TIMEOUT, READ_TIMEOUT, ANSWER_DEADLINE


def _read(stream: Any, limit: int, within: float, what: str) -> bytes:
    """At most `limit` bytes, all within `deadline` (monotonic): an endless or trickling answer stops."""
    parts: list[bytes] = []
    size = 0
    deadline = time.monotonic() + within
    while True:
        chunk = stream.read1(65536)  # what has arrived, up to 64 KiB: a trickle is seen as it comes
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)
        size += len(chunk)
        if size > limit:
            raise DeschedError(f"{what}: the answer is larger than the {safeload.describe_size(limit)} one "
                               "answer may have")
        if time.monotonic() > deadline:
            raise DeschedError(f"{what}: the answer did not end within {within:g} s "
                               "(--request-timeout sets the bound)")


def _direct(target: Target, params: dict[str, str], token: str | None, ca_file: str | None, insecure: bool,
            request_timeout: float, what: str) -> tuple[int, bytes]:
    connect, read, whole = _timeouts(request_timeout)
    pool = urllib3.PoolManager(cert_reqs="CERT_NONE" if insecure else "CERT_REQUIRED", ca_certs=ca_file,
                               retries=False, timeout=urllib3.Timeout(connect=connect, read=read))
    url = f"{target.url}{QUERY_PATH}?{urlencode(params)}"
    headers = {"Accept": "application/json", "User-Agent": f"kubectl-desched/{__version__} (python)"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if httplog.enabled(7):
        httplog.request("GET", url, headers.items())
    start = time.monotonic()
    try:
        resp = pool.request("GET", url, headers=headers, preload_content=False, redirect=False)
        data = _read(resp, ANSWER_LIMIT, whole, what)
    except urllib3.exceptions.SSLError as e:
        hint = "" if ca_file else " (--prometheus-ca-file names the CA that signed its certificate)"
        raise DeschedError(f"{what}: TLS error: {_reason(e)}{hint}") from None
    except urllib3.exceptions.NewConnectionError as e:  # a ConnectTimeoutError to urllib3, but refused mostly
        raise DeschedError(f"{what}: cannot reach it: {_reason(e)}") from None
    except (urllib3.exceptions.ReadTimeoutError, urllib3.exceptions.ConnectTimeoutError, TimeoutError):
        raise DeschedError(f"{what}: timed out (--request-timeout sets the bound)") from None
    except (urllib3.exceptions.HTTPError, OSError) as e:
        raise DeschedError(f"{what}: cannot reach it: {_reason(e)}") from None
    finally:
        pool.clear()
    if httplog.enabled(6):
        httplog.response("GET", url, resp.status, resp.reason or "", time.monotonic() - start)
    if httplog.enabled(8):
        httplog.body(data)
    return resp.status, data


def _reason(e: BaseException) -> str:
    text = str(getattr(e, "reason", None) or e)
    for marker in ("Connection refused", "Name or service not known", "No route to host",
                   "certificate verify failed", "timed out"):
        if marker in text:
            return marker.lower()
    return one_line(text.splitlines()[0] if text.strip() else type(e).__name__, 200)


def _proxied(conn: Connection, service: Service, params: dict[str, str], request_timeout: float,
             what: str) -> tuple[int, bytes]:
    connect, read, whole = _timeouts(request_timeout)
    timeout: Timeout = (connect, read)
    try:  # bounded as a direct answer is: ANSWER_LIMIT bytes, `whole` seconds in all
        return 200, live.request_raw(conn, "GET", service.proxy_path(QUERY_PATH), query=list(params.items()),
                                     timeout=timeout, read=lambda stream: _read(stream, ANSWER_LIMIT, whole, what))
    except Exception as e:
        if is_api_exception(e) and e.status and e.body:
            return int(e.status), e.body.encode() if isinstance(e.body, str) else bytes(e.body)
        if isinstance(e, api_exception() | urllib3.exceptions.HTTPError | OSError | NotJSON):
            raise describe_api_error(e, what, conn.server) from None
        raise


def evaluate(target: Target, query: str, *, conn: Connection | None, token: str | None = None,
             ca_file: str | None = None, insecure: bool = False, request_timeout: float = 0.0,
             now: datetime | None = None) -> PrometheusReading:
    """Evaluate `query` at `now` (the tool's clock, as upstream asks at its time.Now()) and check the answer."""
    when = (now or datetime.now(UTC)).astimezone(UTC)
    params = {"query": query, "time": f"{when.timestamp():.3f}"}
    what = f"querying {target.shown()}"
    if target.service is not None:
        if conn is None:
            raise UsageError(f"{target.origin}: {target.service.shown()} needs a cluster connection, and the "
                             "state comes from a file (--from-file): give Prometheus's URL")
        status, data = _proxied(conn, target.service, params, request_timeout, what)
    else:
        status, data = _direct(target, params, token, ca_file, insecure, request_timeout, what)
    values, warnings = parse_answer(status, data, what, via_api=target.service is not None)
    return PrometheusReading(query, target.shown(), when, values, warnings)


def parse_answer(status: int, data: bytes, what: str, *, via_api: bool = False) -> tuple[dict[str, float],
                                                                                             tuple[str, ...]]:
    """The samples' values by their `instance` label, and Prometheus's warnings; a DeschedError for anything
    upstream's source would refuse (an error, not a vector, a sample without `instance` or outside [0, 1]), and
    for what it would take without a word: NaN, a node named twice."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):  # RecursionError: nested beyond the parser's depth
        raise DeschedError(f"{what}: {_not_json(status, data)}") from None
    if not isinstance(doc, dict):
        raise DeschedError(f"{what}: HTTP {status}: the answer was {json_type(doc)}, not Prometheus's object")
    if doc.get("status") == "error" or not 200 <= status <= 299:
        if "errorType" in doc or "error" in doc:
            kind, message = one_line(doc.get("errorType") or "error", 40), one_line(doc.get("error") or "", 300)
            raise DeschedError(f"{what}: HTTP {status}: Prometheus refused the query: {kind}: {message}")
        if via_api and doc.get("kind") == "Status":  # the API server's own answer: no such service, no endpoints
            message = one_line(doc.get("message") or doc.get("reason") or "", 300)
            raise DeschedError(f"{what}: HTTP {status} from the API server: {message}")
        raise DeschedError(f"{what}: HTTP {status}: the answer was not Prometheus's (no status, no error)")
    if doc.get("status") != "success":
        said = f"is {shown(doc['status'])}, not success" if "status" in doc else "is missing"
        raise DeschedError(f"{what}: the answer's status {said}: is this Prometheus's address?")
    result = doc.get("data")
    if not isinstance(result, dict):
        raise DeschedError(f"{what}: the answer has no data object")
    result_type = result.get("resultType")
    if result_type != "vector":
        named = one_line(result_type, 20) if isinstance(result_type, str) else "?"
        raise DeschedError(f"{what}: the query's result is a {named}, "
                           "not the instant vector of one sample per node (labelled instance) that upstream reads")
    samples = result.get("result")
    if not isinstance(samples, list):
        raise DeschedError(f"{what}: the vector's result is not a list")
    values: dict[str, float] = {}
    for i, sample in enumerate(samples):
        values_of(sample, i, values, what)
    raw_warnings = doc.get("warnings") or []
    warnings = tuple(one_line(w, 200) for w in raw_warnings[:5]) if isinstance(raw_warnings, list) else ()
    return values, warnings


def values_of(sample: Any, i: int, values: dict[str, float], what: str) -> None:
    if not isinstance(sample, Mapping) or not isinstance(sample.get("metric"), Mapping):
        raise DeschedError(f"{what}: sample {i} is not an object with a metric")
    labels = sample["metric"]
    node = labels.get("instance")
    if not isinstance(node, str) or not node:
        raise DeschedError(f"{what}: sample {i} ({_labels(labels)}) has no instance label: the query must label "
                           "each sample with its node's name (e.g. label_replace or a recording rule)")
    pair = sample.get("value")
    if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[1], str):
        raise DeschedError(f"{what}: sample {i} (instance {shown(node)}) has no [time, value] pair")
    try:
        value = float(pair[1])
    except ValueError:
        raise DeschedError(f"{what}: sample {i} (instance {shown(node)}) has the value {shown(pair[1])}, "
                           "not a number") from None
    if math.isnan(value):
        raise DeschedError(f"{what}: instance {shown(node)} has the value NaN: the query must give each node a "
                           "share in [0, 1]")
    if not 0.0 <= value <= 1.0:
        raise DeschedError(f"{what}: instance {shown(node)} has the value {pair[1][:30]}, outside [0, 1]: the query "
                           "must give each node its share (0.5 for half), not a percentage or an amount")
    if node in values:
        raise DeschedError(f"{what}: instance {shown(node)} has two samples: aggregate them, e.g. "
                           "max by (instance) (...)")
    values[node] = value


def _labels(labels: Mapping[str, Any]) -> str:
    text = ", ".join(f"{k}={v}" for k, v in list(labels.items())[:4])
    return one_line(text or "no labels", 100)


def _not_json(status: int, data: bytes) -> str:
    if not data.strip():
        return f"HTTP {status} with an empty answer"
    head = data[:80].lstrip()
    if head[:1] == b"<":
        return f"HTTP {status}: {len(data):,} bytes of HTML starting {shown(head.decode('utf-8', 'replace')[:40])}, " \
               "not Prometheus's JSON (is this Prometheus's address?)"
    return f"HTTP {status}: the answer ({len(data):,} bytes) was not JSON"
