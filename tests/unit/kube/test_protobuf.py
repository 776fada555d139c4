"""The protobuf read (kube/protobuf.py): a page's first bytes give its continue token and remaining count, a page
becomes the model the JSON read makes of the same objects, a page it cannot take whole sends the list back to JSON,
and a field wire.py reads that the messages lack stops the converter's build. The messages are made here with the
generated classes; tests/integration/test_protobuf_reads_live.py reads a real apiserver's both ways."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from kubectl_desched.errors import DeschedError
from kubectl_desched.kube import decode, live, protobuf
from kubectl_desched.kube.config import Connection
from kubectl_desched.kube.k8spb import core_v1_pb2, runtime_pb2
from kubectl_desched.model import wire

core: Any = core_v1_pb2
runtime: Any = runtime_pb2
T0 = 1_780_000_000  # 2026-05-28T20:26:40Z
T0_TEXT = "2026-05-28T20:26:40Z"


def _pair(name: str, node: str, cpu: str = "100m", labels: dict[str, str] | None = None) -> tuple[dict, Any]:
    """One pod as the API's JSON and as its protobuf message."""
    labels = labels or {"app": "web"}
    as_json = {"metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}",
                            "labels": dict(sorted(labels.items())), "creationTimestamp": T0_TEXT},
               "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i",
                                                          "resources": {"requests": {"cpu": cpu}}}]},
               "status": {"phase": "Running", "startTime": T0_TEXT,
                          "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": T0_TEXT}]}}
    m = core.Pod()
    m.metadata.name, m.metadata.namespace, m.metadata.uid = name, "shop", f"uid-{name}"
    for k, v in labels.items():
        m.metadata.labels[k] = v
    m.metadata.creationTimestamp.seconds = T0
    m.spec.nodeName = node
    c = m.spec.containers.add()
    c.name, c.image = "c", "i"
    c.resources.requests["cpu"].string = cpu
    m.status.phase = "Running"
    m.status.startTime.seconds = T0
    cond = m.status.conditions.add()
    cond.type, cond.status = "Ready", "True"
    cond.lastTransitionTime.seconds = T0
    return as_json, m


def _page(items: list[Any], cont: str = "", left: int | None = None, kind: str = "PodList") -> bytes:
    found = (core.NodeList if kind == "NodeList" else core.PodList)()
    found.metadata.resourceVersion = "7"
    if cont:
        setattr(found.metadata, "continue", cont)
    if left is not None:
        found.metadata.remainingItemCount = left
    for m in items:
        found.items.add().CopyFrom(m)
    envelope = runtime.Unknown()
    envelope.typeMeta.apiVersion, envelope.typeMeta.kind = "v1", kind
    envelope.raw = found.SerializeToString()
    return protobuf.MAGIC + envelope.SerializeToString()


def _model(pods: list[Any]) -> list[Any]:
    return [msgspec.to_builtins(p) for p in pods]


# --- the first bytes -------------------------------------------------------------------------------------------

def test_a_pages_first_bytes_name_its_continue_token_and_what_is_left() -> None:
    data = _page([_pair(f"p{i}", "n")[1] for i in range(50)], cont="tok-1", left=950)
    assert len(data) > live.PEEK
    assert protobuf.head(data[:live.PEEK]) == ("tok-1", 950)
    assert live.next_token(data[:live.PEEK]) == "tok-1" and live.remaining_items(data[:live.PEEK]) == 950
    assert protobuf.head(_page([_pair("p", "n")[1]])[:live.PEEK]) == ("", None)  # the last page


@pytest.mark.parametrize("cut", [4, 6, 12, 20])
def test_first_bytes_that_stop_inside_the_list_metadata_say_nothing(cut: int) -> None:
    data = _page([_pair("p", "n")[1]], cont="a-long-continue-token", left=3)
    assert protobuf.head(data[:cut]) == (None, None)


@pytest.mark.parametrize("data", [protobuf.MAGIC + b"\xff\xff\xff", protobuf.MAGIC + b"\x0b\x00", protobuf.MAGIC])
def test_first_bytes_that_are_no_list_say_nothing(data: bytes) -> None:
    assert protobuf.head(data) == (None, None)


# --- a page ----------------------------------------------------------------------------------------------------

def test_a_page_is_the_model_the_json_read_makes_of_the_same_pods() -> None:
    pairs = [_pair("a", "n1", labels={"zz": "1", "app": "web", "mm": "2"}), _pair("b", "n2", cpu="2")]
    as_json = json.dumps({"metadata": {"continue": "t"}, "items": [j for j, _ in pairs]}).encode()
    from_json = decode.page(as_json, "Pod")
    from_pb = protobuf.page(_page([m for _, m in pairs], cont="t"), "Pod")
    assert from_json is not None and from_pb is not None
    assert from_pb[1] == from_json[1] == "t"
    assert json.dumps(_model(from_pb[0])) == json.dumps(_model(from_json[0]))  # labels in key order too
    assert list(from_pb[0][0].labels) == ["app", "mm", "zz"]


def test_go_zero_time_is_no_time_and_the_epoch_is_a_time() -> None:
    _, m = _pair("p", "n")
    m.status.conditions[0].lastTransitionTime.Clear()  # present and empty: how Go writes time.Time{}
    zero = m.status.conditions.add()
    zero.type, zero.status = "Custom", "Unknown"
    zero.lastTransitionTime.seconds = 0  # written: 1970-01-01T00:00:00Z
    found = protobuf.page(_page([m]), "Pod")
    assert found is not None
    assert found[0][0].condition_times == "|1970-01-01T00:00:00Z"


def test_a_terminating_pod_and_a_pointer_left_unset() -> None:
    _, m = _pair("p", "n")
    m.metadata.deletionTimestamp.seconds = T0
    found = protobuf.page(_page([m]), "Pod")
    assert found is not None
    pod = found[0][0]
    assert pod.terminating and pod.priority is None and pod.affinity is None


@pytest.mark.parametrize("spoil", ["name", "kind", "bytes", "cut"])
def test_a_page_it_cannot_take_whole_is_none(spoil: str) -> None:
    _, m = _pair("p", "n")
    if spoil == "name":
        m.metadata.name = "Not_A_Name"  # the model refuses it: the JSON read says why
    data = _page([m], kind="Status" if spoil == "kind" else "PodList")
    if spoil == "bytes":
        data = protobuf.MAGIC + b"\x12\x05\xff\xff"
    if spoil == "cut":
        data = data[:-3]
    assert protobuf.page(data, "Pod") is None


def test_a_field_wire_reads_that_the_message_lacks_stops_the_build() -> None:
    class Odd(wire._Wire, kw_only=True):
        no_such_field: str = ""

    with pytest.raises(protobuf.NotInProtobuf, match=r"k8s\.io\.api\.core\.v1\.Pod has no field noSuchField"):
        protobuf.compile_converter(Odd, core.Pod.DESCRIPTOR)


# --- through the live reader ------------------------------------------------------------------------------------

class Server:
    """Pods and nodes two a page, as protobuf when asked so (unless `json_only`), as JSON otherwise."""

    def __init__(self, pairs: list[tuple[dict, Any]], json_only: bool = False) -> None:
        self.pairs, self.json_only = pairs, json_only
        self.node = {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "4", "pods": "110"}}}
        self.asked: list[tuple[str, str]] = []

    def __call__(self, conn: Any, method: str, path: str, *, query: Any = None, accept: str = "application/json",
                 head: Any = None, **_kw: Any) -> bytes:
        q = dict(query or [])
        self.asked.append((path, accept))
        start = int(q.get("continue") or 0)
        if path == "/api/v1/pods":
            chunk = self.pairs[start:start + 2]
            cont = str(start + 2) if start + 2 < len(self.pairs) else ""
            if accept.startswith(protobuf.ACCEPT.split(",")[0]) and not self.json_only:
                data = _page([m for _, m in chunk], cont=cont)
            else:
                data = json.dumps({"metadata": {"continue": cont}, "items": [j for j, _ in chunk]}).encode()
        elif path == "/api/v1/nodes":
            data = json.dumps({"metadata": {}, "items": [self.node]}).encode()
        else:
            data = b'{"metadata": {}, "items": []}'
        if head is not None:
            head(data[:live.PEEK])
        return data


def _conn(protobuf: bool = True) -> Connection:
    return Connection(api=None, server="https://example:6443", context="ctx", namespace="default",  # type: ignore[arg-type]
                      protobuf=protobuf)


def _pods_asked(server: Server) -> list[str]:
    return [accept.split(",")[0] for path, accept in server.asked if path == "/api/v1/pods"]


def test_pods_are_read_as_protobuf_page_by_page(monkeypatch: pytest.MonkeyPatch) -> None:
    server = Server([_pair(f"p{i}", "n") for i in range(5)])
    monkeypatch.setattr(live, "request_raw", server)
    state = live.read_cluster(_conn())
    assert [p.name for p in state.pods] == [f"p{i}" for i in range(5)]
    assert _pods_asked(server) == [protobuf.ACCEPT.split(",")[0]] * 3


def test_a_page_protobuf_cannot_take_reads_the_list_again_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = [_pair(f"p{i}", "n") for i in range(5)]
    pairs[3][1].metadata.name = "Not_A_Name"  # only the protobuf one: the JSON page reads
    server = Server(pairs)
    monkeypatch.setattr(live, "request_raw", server)
    state = live.read_cluster(_conn())
    assert [p.name for p in state.pods] == [f"p{i}" for i in range(5)]
    assert _pods_asked(server) == ["application/vnd.kubernetes.protobuf"] * 2 + ["application/json"] * 3


def test_an_object_neither_read_takes_is_named_by_the_json_read(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = [_pair(f"p{i}", "n") for i in range(3)]
    pairs[1][0]["metadata"]["name"] = pairs[1][1].metadata.name = "Not_A_Name"
    monkeypatch.setattr(live, "request_raw", Server(pairs))
    with pytest.raises(DeschedError, match="Not_A_Name"):
        live.read_cluster(_conn())


def test_a_server_that_answers_json_to_protobuf_is_read_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    server = Server([_pair(f"p{i}", "n") for i in range(3)], json_only=True)
    monkeypatch.setattr(live, "request_raw", server)
    assert len(live.read_cluster(_conn()).pods) == 3
    assert _pods_asked(server) == [protobuf.ACCEPT.split(",")[0]] * 2  # asked for it, took what came


def test_without_protobuf_json_is_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    server = Server([_pair(f"p{i}", "n") for i in range(3)])
    monkeypatch.setattr(live, "request_raw", server)
    assert len(live.read_cluster(_conn(protobuf=False)).pods) == 3
    assert {accept for _, accept in server.asked} == {"application/json"}


@pytest.mark.parametrize("seconds", [1, 59, 3599, 86399, 86400, T0, T0 + 86399, -1, -86401, 253402300799])
def test_a_time_is_written_as_go_writes_rfc3339_seconds(seconds: int) -> None:
    import time

    class Set:
        def HasField(self, _name: str) -> bool:
            return True

    assert protobuf._time(seconds, Set()) == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
