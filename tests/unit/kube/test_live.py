"""The live reader's paging: limit/continue, a restart on 410 Gone, field selectors for named nodes, and
errors turned into one line. The transport is replaced here; tests/integration runs it against a real apiserver."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from kubectl_desched.errors import DeschedError
from kubectl_desched.kube import live
from kubectl_desched.kube.config import Connection
from tests import builders as b


class FakeServer:
    """Serves /api/v1/nodes (and one node), /api/v1/pods and PDBs two items per page, as raw JSON with the
    metadata first as the apiserver writes it (or last); can expire one continue token."""

    def __init__(self, nodes: list[dict], pods: list[dict], expire_once: bool = False,
                 metadata_last: bool = False) -> None:
        self.lists = {"/api/v1/nodes": nodes, "/api/v1/pods": pods, "/apis/policy/v1/poddisruptionbudgets": []}
        self.expire_once = expire_once
        self.metadata_last = metadata_last
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.asked = threading.Event()  # set when a page after the first is requested

    def __call__(self, conn: Any, method: str, path: str, *, query: Any = None, body: Any = None,
                 timeout: Any = None, accept: str = "application/json", head: Any = None) -> bytes:
        data = self.answer(path, dict(query or []))
        if head is not None:  # as the real transport: the first bytes, before the rest is read
            head(data[:live.PEEK])
        return data

    def answer(self, path: str, q: dict[str, Any]) -> bytes:
        self.calls.append((path, q))
        if q.get("continue"):
            self.asked.set()
        if path.startswith("/api/v1/nodes/"):
            found = [n for n in self.lists["/api/v1/nodes"] if n["metadata"]["name"] == path.rsplit("/", 1)[1]]
            if not found:
                raise ApiException(status=404, reason="Not Found")
            return json.dumps(found[0]).encode()
        if path.startswith("/apis/policy/v1/namespaces/"):
            ns = path.split("/")[5]
            items = [b for b in self.lists["/apis/policy/v1/poddisruptionbudgets"] if b["metadata"]["namespace"] == ns]
        else:
            items = self.lists[path]
        if "fieldSelector" in q and q["fieldSelector"].startswith("spec.nodeName="):
            node = q["fieldSelector"].split("=", 1)[1]
            items = [i for i in items if i["spec"]["nodeName"] == node]
        start = int(q.get("continue") or 0)
        if start and self.expire_once and path == "/api/v1/pods":
            self.expire_once = False
            raise ApiException(status=410, reason="Gone")
        size = min(int(q["limit"]), 2) if "limit" in q else max(len(items), 1)  # pages of 2 stand for 500
        page = items[start:start + size]
        nxt = start + size if start + size < len(items) else None
        meta: dict[str, Any] = {"resourceVersion": "7", "continue": f"{nxt:04d}" if nxt else ""}
        if nxt and "fieldSelector" not in q:  # as the apiserver: not on the last page, nor under a selector
            meta["remainingItemCount"] = len(items) - nxt
        doc = {"items": page, "metadata": meta} if self.metadata_last else {"metadata": meta, "items": page}
        return json.dumps(doc).encode()


def _conn(chunk_size: int = 500) -> Connection:
    return Connection(api=None, server="https://example:6443", context="ctx", namespace="default",  # type: ignore[arg-type]
                      chunk_size=chunk_size)


def _objects() -> tuple[list[dict], list[dict]]:
    nodes = [b.node(f"n{i}") for i in range(3)]
    pods = [b.pod(f"p{i}", f"n{i % 3}") for i in range(7)]
    return nodes, pods


def test_pages_are_followed_to_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeServer(*_objects())
    monkeypatch.setattr(live, "request_raw", server)
    state = live.read_cluster(_conn())
    assert sorted(state.nodes) == ["n0", "n1", "n2"]
    assert sorted(p.name for p in state.pods) == [f"p{i}" for i in range(7)]
    pod_calls = [q for path, q in server.calls if path == "/api/v1/pods"]
    assert len(pod_calls) == 4 and all(q["limit"] == 500 for q in pod_calls)
    assert "fieldSelector" not in pod_calls[0]  # unscheduled pods count among minReplicas' siblings


@pytest.mark.parametrize(("chunk_size", "limits"), [(1, [1] * 7), (0, [None])])
def test_chunk_size_sets_the_page_limit_and_zero_reads_one_answer(monkeypatch: pytest.MonkeyPatch, chunk_size: int,
                                                                   limits: list[int | None]) -> None:
    server = FakeServer(*_objects())
    monkeypatch.setattr(live, "request_raw", server)
    state = live.read_cluster(_conn(chunk_size))
    assert len(state.pods) == 7
    assert [q.get("limit") for path, q in server.calls if path == "/api/v1/pods"] == limits


def test_an_expired_continue_token_restarts_the_list(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeServer(*_objects(), expire_once=True)
    monkeypatch.setattr(live, "request_raw", server)
    state = live.read_cluster(_conn())
    names = [p.name for p in state.pods]
    assert sorted(names) == [f"p{i}" for i in range(7)] and len(names) == 7  # no duplicates from the first try
    starts = [q.get("continue") for path, q in server.calls if path == "/api/v1/pods"]
    assert starts.count(None) == 2  # read from the first page twice


def test_named_nodes_read_their_pods_by_field_selector(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeServer(*_objects())
    monkeypatch.setattr(live, "request_raw", server)
    state = live.read_cluster(_conn(), node_names=["n1"])
    assert sorted(p.name for p in state.pods) == ["p1", "p4"]
    selectors = {q.get("fieldSelector") for path, q in server.calls if path == "/api/v1/pods"}
    assert selectors == {"spec.nodeName=n1"}


def test_forbidden_lists_become_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_a: Any, **_k: Any) -> Any:
        raise ApiException(status=403, reason="Forbidden")

    monkeypatch.setattr(live, "request_raw", refuse)
    with pytest.raises(DeschedError) as err:
        live.read_cluster(_conn())
    assert str(err.value).startswith("reading the cluster: forbidden (403)")
    assert "\n" not in str(err.value)


def test_forbidden_pdbs_only_warn(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeServer(*_objects())

    def no_pdbs(conn: Any, method: str, path: str, **kw: Any) -> Any:
        if "poddisruptionbudgets" in path:
            raise ApiException(status=403, reason="Forbidden")
        return server(conn, method, path, **kw)

    monkeypatch.setattr(live, "request_raw", no_pdbs)
    warnings: list[str] = []
    state = live.read_cluster(_conn(), warn=warnings.append)
    assert state.pdbs == [] and len(state.pods) == 7
    assert warnings and "PodDisruptionBudgets" in warnings[0]


@pytest.mark.parametrize("metadata_last", [False, True])
def test_the_next_page_is_asked_for_while_this_one_is_used(monkeypatch: pytest.MonkeyPatch,
                                                           metadata_last: bool) -> None:
    server = FakeServer(*_objects(), metadata_last=metadata_last)
    monkeypatch.setattr(live, "request_raw", server)
    if metadata_last:
        monkeypatch.setattr(live, "PEEK", 40)  # the token is beyond the peek: found by the parse instead
    pages = live.list_pages(_conn(), "/api/v1/pods")
    first = next(pages)
    assert server.asked.wait(5)  # requested before the caller asks for it
    rest = [p for page in pages for p in page]
    assert [p["metadata"]["name"] for p in first + rest] == [f"p{i}" for i in range(7)]
    starts = [q.get("continue") for _path, q in server.calls]
    assert starts == [None, "0002", "0004", "0006"]  # each page once, whether the token was peeked or parsed


def test_the_first_bytes_name_the_next_page_only_from_the_lists_metadata() -> None:
    page = b'{"kind":"PodList","metadata":{"resourceVersion":"7","continue":"abc="},"items":[{"metadata":{}}]}'
    assert live.next_token(page) == "abc="
    last = b'{"kind":"PodList","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"labels":{"continue":"x"}}}]}'
    assert live.next_token(last) == ""  # the last page: a label further on names nothing
    assert live.next_token(b'{"kind":"PodList","metadata":{"continue":""},"items":[]}') == ""
    assert live.next_token(b'{"items":[{"metadata":{"continue":"x"}}],"metadata":{"continue":"y"}}') is None
    assert live.next_token(b'{"kind":"PodList","metadata":{"resourceVersion":"7","cont') is None  # cut short


class HeldServer(FakeServer):
    """Sends each page's first bytes at once and the rest only once the test lets it: pages still on their way."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.release = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, conn: Any, method: str, path: str, *, query: Any = None, head: Any = None,
                 **_kw: Any) -> bytes:
        with self.lock:
            data = self.answer(path, dict(query or []))
        if head is not None:
            head(data[:live.PEEK])
        assert self.release.wait(10)
        return data


def _asked(server: FakeServer) -> list[str | None]:
    return [q.get("continue") for _path, q in server.calls]


def _wait_for(predicate: Any) -> None:
    deadline = time.monotonic() + 5
    while not predicate():
        assert time.monotonic() < deadline, "not asked for in 5 s"
        time.sleep(0.005)


def test_each_page_is_asked_for_once_the_one_before_names_it_not_once_it_has_arrived(
        monkeypatch: pytest.MonkeyPatch) -> None:
    server = HeldServer(*_objects())
    monkeypatch.setattr(live, "request_raw", server)
    pages = live.list_pages(_conn(), "/api/v1/pods")
    reader = threading.Thread(target=lambda: next(pages), daemon=True)
    reader.start()
    # the first page has not arrived whole, yet its first bytes named the second: AHEAD pages are on their way
    _wait_for(lambda: len(server.calls) == live.AHEAD)
    assert _asked(server) == [None, "0002"]
    server.release.set()
    reader.join(5)
    rest = [p for page in pages for p in page]
    assert [p["metadata"]["name"] for p in rest] == [f"p{i}" for i in range(2, 7)]
    assert _asked(server) == [None, "0002", "0004", "0006"]  # each page once, in order


def test_no_more_pages_are_read_ahead_than_the_bound_while_the_parser_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    pods = [b.pod(f"p{i}", "n0") for i in range(20)]
    server = FakeServer([], pods)
    monkeypatch.setattr(live, "request_raw", server)
    pages = live.list_pages(_conn(), "/api/v1/pods")
    next(pages)  # the parser has taken one page and holds on to it
    _wait_for(lambda: len(server.calls) == 1 + live.AHEAD)
    time.sleep(0.2)
    assert len(server.calls) == 1 + live.AHEAD  # the page taken and AHEAD more on their way; not the other 7
    pages.close()
    time.sleep(0.1)
    assert len(server.calls) == 1 + live.AHEAD  # a closed read asks for nothing more


def test_a_guess_the_parse_contradicts_is_dropped_with_what_it_started(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeServer(*_objects())
    wrong = {"0002": "0003"}  # what page 1's first bytes seem to say; its parse says 0002

    def misleading(conn: Any, method: str, path: str, *, head: Any = None, **kw: Any) -> bytes:
        data = server(conn, method, path, **kw)
        if head is not None:
            token = live.next_token(data[:live.PEEK]) or ""
            head(data[:live.PEEK].replace(token.encode(), wrong.get(token, token).encode()) if token else data)
        return data

    monkeypatch.setattr(live, "request_raw", misleading)
    pages = live.list_pages(_conn(), "/api/v1/pods")
    names = [p["metadata"]["name"] for page in pages for p in page]
    assert names == [f"p{i}" for i in range(7)]  # every pod once, in order
    asked = _asked(server)
    assert [a for a in asked if a != "0003" and a != "0005"] == [None, "0002", "0004", "0006"]


def test_progress_counts_the_items_read_and_all_of_them_as_the_first_page_says(
        monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeServer(*_objects())
    monkeypatch.setattr(live, "request_raw", server)
    told: list[tuple[str, int, int | None]] = []
    live.read_cluster(_conn(), progress=lambda label, n, total: told.append((label, n, total)))
    assert told == [("pods", 2, 7), ("pods", 4, 7), ("pods", 6, 7), ("pods", 7, 7)]
    told.clear()
    live.read_cluster(_conn(), node_names=["n0"], progress=lambda label, n, total: told.append((label, n, total)))
    assert told == [("pods", 2, None), ("pods", 3, None)]  # a field selector's list gives no count


@pytest.mark.parametrize(("head", "left"), [
    (b'{"kind":"PodList","metadata":{"continue":"x","remainingItemCount":149500},"items":[', 149500),
    (b'{"metadata": {"remainingItemCount" : 3}, "items": [', 3),
    (b'{"metadata":{"continue":""},"items":[{"metadata":{"remainingItemCount":5}}', None),  # an item's, not the list's
    (b'{"metadata":{"remainingItemCount":-1},"items":[', None),
    (b'{"metadata":{"remainingItemCount":12', None),  # the items not within the first bytes
    (b"", None),
])
def test_remaining_items_is_read_from_the_list_metadata_only(head: bytes, left: int | None) -> None:
    assert live.remaining_items(head) == left


def _cluster_wide_list_not_yet_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a real server, the cluster-wide PDB LIST read beside the pods has not come whole by the time they
    have (the fake one answers at once): few namespaces are then read one by one."""
    monkeypatch.setattr(live._Beside, "done_without_error", lambda self: False)


def test_read_node_reads_one_node_its_pods_and_their_namespaces_pdbs(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes, pods = _objects()
    pods.append(b.pod("shop-1", "n1", namespace="shop"))
    server = FakeServer(nodes, pods)
    server.lists["/apis/policy/v1/poddisruptionbudgets"] = [
        b.pdb("web", {"app": "web"}), b.pdb("cart", {"app": "cart"}, namespace="shop"),
        b.pdb("other", {"app": "x"}, namespace="elsewhere")]
    monkeypatch.setattr(live, "request_raw", server)
    _cluster_wide_list_not_yet_whole(monkeypatch)
    state = live.read_node(_conn(), "n1")
    assert state is not None and list(state.nodes) == ["n1"]
    assert sorted(p.name for p in state.pods) == ["p1", "p4", "shop-1"]
    assert sorted(x.name for x in state.pdbs) == ["cart", "web"]
    paths = [path for path, _q in server.calls]
    assert "/api/v1/nodes" not in paths  # one node, not the list
    assert {"/apis/policy/v1/namespaces/shop/poddisruptionbudgets",  # two namespaces: a LIST each
            "/apis/policy/v1/namespaces/default/poddisruptionbudgets"} <= set(paths)
    assert {q.get("fieldSelector") for path, q in server.calls if path == "/api/v1/pods"} == {"spec.nodeName=n1"}
    assert live.read_node(_conn(), "nope") is None


def test_read_node_reads_the_pdbs_of_the_namespaces_in_scope_only(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes, pods = _objects()
    pods += [b.pod("shop-1", "n1", namespace="shop"), b.pod("ops-1", "n1", namespace="ops")]
    server = FakeServer(nodes, pods)
    server.lists["/apis/policy/v1/poddisruptionbudgets"] = [
        b.pdb("web", {"app": "web"}), b.pdb("cart", {"app": "cart"}, namespace="shop"),
        b.pdb("agent", {"app": "agent"}, namespace="ops")]
    monkeypatch.setattr(live, "request_raw", server)
    state = live.read_node(_conn(), "n1", in_scope=lambda pod: pod.namespace != "ops")
    assert state is not None and sorted(p.name for p in state.pods) == ["ops-1", "p1", "p4", "shop-1"]  # every pod
    assert sorted(x.name for x in state.pdbs) == ["cart", "web"]
    assert not [path for path, _q in server.calls if "/namespaces/ops/" in path]  # not even asked for
    server.calls.clear()
    state = live.read_node(_conn(), "n1", in_scope=lambda _pod: False)
    assert state is not None and state.pdbs == [] and not [p for p, _q in server.calls if "/namespaces/" in p]


def _after(server: FakeServer, held: str, until: str) -> Any:
    """The server, with `held` answered only once `until` was asked for: read one after the other, the reads
    would wait (and fail on the timeout)."""
    asked = threading.Event()

    def answer(conn: Any, method: str, path: str, **kw: Any) -> Any:
        if path == until:
            asked.set()
        elif path == held:
            assert asked.wait(10), f"{held} was read before {until}, not beside it"
        return server(conn, method, path, **kw)

    return answer


def test_read_node_reads_the_node_beside_its_pods(monkeypatch: pytest.MonkeyPatch) -> None:
    """The node's GET is answered only once its pods were asked for: read one after the other, this would wait."""
    monkeypatch.setattr(live, "request_raw", _after(FakeServer(*_objects()), "/api/v1/nodes/n1", "/api/v1/pods"))
    state = live.read_node(_conn(), "n1")
    assert state is not None and list(state.nodes) == ["n1"] and sorted(p.name for p in state.pods) == ["p1", "p4"]


def test_read_node_says_the_nodes_error_before_its_pods(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both reads fail: the node's answer decides, as when it was read first (a 404 is "no such node")."""
    server = FakeServer(*_objects())

    def failing(conn: Any, method: str, path: str, **kw: Any) -> Any:
        if path == "/api/v1/pods":
            raise ApiException(status=500, reason="Internal Server Error")
        if path.startswith("/api/v1/nodes/"):
            raise ApiException(status=404 if path.endswith("/gone") else 403, reason="no")
        return server(conn, method, path, **kw)

    monkeypatch.setattr(live, "request_raw", failing)
    assert live.read_node(_conn(), "gone") is None
    with pytest.raises(DeschedError, match="403"):
        live.read_node(_conn(), "n1")


def _node_in_many_namespaces(count: int) -> tuple[FakeServer, list[dict]]:
    nodes, pods = _objects()
    pods += [b.pod(f"x{i}", "n1", namespace=f"ns{i}") for i in range(count)]
    pdbs = [b.pdb(f"b{i}", {"app": "x"}, namespace=f"ns{i}") for i in range(count)]
    pdbs.append(b.pdb("far", {"app": "x"}, namespace="nowhere-near"))  # no pod of n1 is in its namespace
    server = FakeServer(nodes, pods)
    server.lists["/apis/policy/v1/poddisruptionbudgets"] = pdbs
    return server, pdbs


def test_read_node_reads_many_namespaces_pdbs_in_one_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past FEW_NAMESPACES one cluster-wide LIST, kept to the namespaces in scope, is quicker than a LIST each."""
    server, _pdbs = _node_in_many_namespaces(live.FEW_NAMESPACES)  # and the namespace of p1 and p4: one more
    monkeypatch.setattr(live, "request_raw", server)
    state = live.read_node(_conn(), "n1")
    assert state is not None
    assert sorted(x.name for x in state.pdbs) == sorted(f"b{i}" for i in range(live.FEW_NAMESPACES))
    paths = [path for path, _q in server.calls if "poddisruptionbudgets" in path]
    assert set(paths) == {"/apis/policy/v1/poddisruptionbudgets"}  # pages of it, none by namespace
    server.calls.clear()
    server2, _ = _node_in_many_namespaces(live.FEW_NAMESPACES - 1)  # at the bound: still one LIST per namespace
    monkeypatch.setattr(live, "request_raw", server2)
    _cluster_wide_list_not_yet_whole(monkeypatch)
    state = live.read_node(_conn(), "n1")
    assert state is not None and len(state.pdbs) == live.FEW_NAMESPACES - 1
    by_namespace = {path for path, _q in server2.calls if "/namespaces/" in path}
    assert len(by_namespace) == live.FEW_NAMESPACES  # ns0..ns6 and default


def test_read_node_reads_the_cluster_wide_pdbs_beside_its_pods(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past FEW_NAMESPACES the cluster-wide PDB LIST was already under way while the pods were read."""
    server, _pdbs = _node_in_many_namespaces(live.FEW_NAMESPACES + 2)
    monkeypatch.setattr(live, "request_raw", _after(server, "/api/v1/pods", "/apis/policy/v1/poddisruptionbudgets"))
    state = live.read_node(_conn(), "n1")
    assert state is not None and len(state.pdbs) == live.FEW_NAMESPACES + 2


def _few_namespaces_many_pdbs() -> FakeServer:
    """n1 holds one pod (namespace default) and the cluster 41 PDBs: 21 pages of 2 of the cluster-wide LIST."""
    nodes, pods = _objects()
    server = FakeServer(nodes, [{**pods[0], "spec": {**pods[0]["spec"], "nodeName": "n1"}}])
    server.lists["/apis/policy/v1/poddisruptionbudgets"] = [
        *(b.pdb(f"b{i}", {"app": "x"}, namespace=f"ns{i}") for i in range(40)), b.pdb("web", {"app": "web"})]
    return server


def test_read_node_stops_the_cluster_wide_pdb_list_when_the_namespaces_are_few(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Not yet whole when the pods say their namespaces are few: the LIST stops at its next page, and the
    namespace's own LIST answers."""
    server = _few_namespaces_many_pdbs()
    held = threading.Event()
    listed: list[str] = []

    def held_list(conn: Any, method: str, path: str, **kw: Any) -> Any:
        if path == "/apis/policy/v1/poddisruptionbudgets":
            listed.append(path)
            if len(listed) > 1:  # the pages after the first wait until read_node has answered
                assert held.wait(10)
        return server(conn, method, path, **kw)

    monkeypatch.setattr(live, "request_raw", held_list)
    state = live.read_node(_conn(), "n1")
    assert state is not None and [x.name for x in state.pdbs] == ["web"]
    assert "/apis/policy/v1/namespaces/default/poddisruptionbudgets" in [path for path, _q in server.calls]
    asked = len(listed)  # the first page and those the read-ahead asked for meanwhile
    assert asked <= 1 + live.AHEAD
    held.set()
    time.sleep(0.3)  # unheld, a LIST that did not stop would ask for its 21 pages at once
    assert len(listed) <= asked + live.AHEAD  # at most what the read-ahead had asked for before the stop


def test_read_node_takes_the_cluster_wide_pdb_list_when_it_is_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Already whole when the pods are read: its answer is kept to the namespaces in scope, and no namespace is
    read on its own."""
    server = _few_namespaces_many_pdbs()
    monkeypatch.setattr(live, "request_raw", server)
    monkeypatch.setattr(live._Beside, "done_without_error", lambda self: (self.result(), True)[1])  # waits for it
    state = live.read_node(_conn(), "n1")
    assert state is not None and [x.name for x in state.pdbs] == ["web"]
    assert not [path for path, _q in server.calls if "/namespaces/" in path]


def _cluster_wide_pdbs_failing(server: FakeServer, status: int) -> Any:
    def answer(conn: Any, method: str, path: str, **kw: Any) -> Any:
        if path == "/apis/policy/v1/poddisruptionbudgets":
            raise ApiException(status=status, reason="no")
        return server(conn, method, path, **kw)

    return answer


def test_read_node_ignores_a_failed_cluster_wide_list_when_the_namespaces_are_few(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live, "request_raw", _cluster_wide_pdbs_failing(_few_namespaces_many_pdbs(), 500))
    warned: list[str] = []
    state = live.read_node(_conn(), "n1", warn=warned.append)
    assert state is not None and [x.name for x in state.pdbs] == ["web"] and not warned


def test_read_node_falls_back_to_namespaces_when_the_cluster_wide_list_is_forbidden(
        monkeypatch: pytest.MonkeyPatch) -> None:
    server, _pdbs = _node_in_many_namespaces(live.FEW_NAMESPACES + 2)
    monkeypatch.setattr(live, "request_raw", _cluster_wide_pdbs_failing(server, 403))  # a namespaced role
    warned: list[str] = []
    state = live.read_node(_conn(), "n1", warn=warned.append)
    assert state is not None and not warned
    assert sorted(x.name for x in state.pdbs) == sorted(f"b{i}" for i in range(live.FEW_NAMESPACES + 2))


def test_nodes_and_pdbs_are_read_beside_the_pods(monkeypatch: pytest.MonkeyPatch) -> None:
    """The nodes and the PDBs are answered only once the pods' last page was asked for: read one after the other,
    this would wait (and fail on the timeout)."""
    server = FakeServer(*_objects())
    last_pod_page = threading.Event()

    def beside(conn: Any, method: str, path: str, **kw: Any) -> Any:
        if path == "/api/v1/pods" and dict(kw.get("query") or []).get("continue") == "0006":
            last_pod_page.set()
        elif path != "/api/v1/pods":
            assert last_pod_page.wait(10), f"{path} was read after the pods, not beside them"
        return server(conn, method, path, **kw)

    monkeypatch.setattr(live, "request_raw", beside)
    state = live.read_cluster(_conn())
    assert sorted(state.nodes) == ["n0", "n1", "n2"] and len(state.pods) == 7


def test_a_failed_node_read_stops_the_pod_read_and_is_the_only_thing_said(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes, _pods = _objects()
    server = FakeServer(nodes, [b.pod(f"p{i}", "n0") for i in range(40)])  # 20 pages
    refused = threading.Event()

    def no_nodes(conn: Any, method: str, path: str, **kw: Any) -> Any:
        if path == "/api/v1/nodes" or "poddisruptionbudgets" in path:
            if path == "/api/v1/nodes":
                refused.set()
            raise ApiException(status=403, reason="Forbidden")
        if dict(kw.get("query") or []).get("continue"):
            assert refused.wait(10)
            time.sleep(0.05)  # the node reader has handed its error over
        return server(conn, method, path, **kw)

    monkeypatch.setattr(live, "request_raw", no_nodes)
    warnings: list[str] = []
    with pytest.raises(DeschedError, match=r"^reading the cluster: forbidden \(403\)"):
        live.read_cluster(_conn(), warn=warnings.append)
    assert len([q for path, q in server.calls if path == "/api/v1/pods"]) < 20
    assert warnings == []  # the PDBs' refusal is said only after a read that got that far


def test_an_interrupt_during_the_pod_read_does_not_wait_for_the_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeServer(*_objects())
    release = threading.Event()

    def slow_nodes(conn: Any, method: str, path: str, **kw: Any) -> Any:
        if path == "/api/v1/pods":
            raise KeyboardInterrupt
        release.wait(10)  # a node read that hangs
        return server(conn, method, path, **kw)

    monkeypatch.setattr(live, "request_raw", slow_nodes)
    for read in (live.read_cluster, lambda conn: live.read_node(conn, "n1")):  # explain node's: one node's GET
        began = time.monotonic()
        try:
            with pytest.raises(KeyboardInterrupt):
                read(_conn())
            assert time.monotonic() - began < 5
        finally:
            release.set()
        release.clear()


def test_the_progress_line_on_a_terminal_says_of_how_many(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from kubectl_desched.app.loading import _Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    err = Terminal()
    monkeypatch.setattr("sys.stderr", err)
    progress = _Progress()
    progress("pods", 12_000, 150_000)
    progress("pods", 12_500, None)  # a list that gave no count
    progress("pods", 13_000, 12_900)  # a count the server got wrong is not shown
    progress.done()
    assert err.getvalue() == ("\rreading pods: 12,000 of 150,000   \rreading pods: 12,500   "
                              "\rreading pods: 13,000   \r\x1b[K")
    monkeypatch.setattr("sys.stderr", io.StringIO())  # not a terminal: nothing
    quiet = _Progress()
    quiet("pods", 1, 2)
    quiet.done()
    assert not quiet.shown
