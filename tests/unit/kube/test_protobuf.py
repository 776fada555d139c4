"""The protobuf read (kube/protobuf.py): a page's first bytes give its continue token and remaining count, a page
becomes the model the JSON read makes of the same objects, a page it cannot take whole sends the list back to JSON,
and a field wire.py reads that the messages lack stops the converter's build. The messages are made here with the
generated classes; tests/integration/test_protobuf_reads_live.py reads a real apiserver's both ways."""

from __future__ import annotations

import datetime
import json
from typing import Any

import msgspec
import pytest

from kubectl_desched.errors import DeschedError
from kubectl_desched.kube import decode, httplog, live, protobuf
from kubectl_desched.kube.config import Connection
from kubectl_desched.kube.k8spb import core_v1_pb2, meta_v1_pb2, runtime_pb2
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


@pytest.mark.parametrize("where", ["magic", "envelope", "token", "count"])
def test_first_bytes_that_stop_inside_the_list_metadata_say_nothing(where: str) -> None:
    data = _page([_pair("p", "n")[1]], cont="a-long-continue-token", left=3)
    token = data.index(b"a-long-continue-token")
    cut = {"magic": 2, "envelope": 8, "token": token + 5, "count": token + len("a-long-continue-token") + 1}[where]
    assert protobuf.head(data[:cut]) == (None, None)
    assert protobuf.head(data[:token + 40]) == ("a-long-continue-token", 3)


def test_a_negative_remaining_count_says_nothing() -> None:
    assert protobuf.head(_page([_pair("p", "n")[1]], cont="t", left=-5)) == ("t", None)


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


@pytest.mark.parametrize("spoil", ["name", "kind", "bytes", "cut", "utf-8", "year 10000", "far time"])
def test_a_page_it_cannot_take_whole_is_none(spoil: str) -> None:
    _, m = _pair("p", "n")
    if spoil == "name":
        m.metadata.name = "Not_A_Name"  # the model refuses it: the JSON read says why
    if spoil == "utf-8":
        m.metadata.annotations["note"] = "\N{SNOWMAN}"
    if spoil == "year 10000":
        m.status.conditions[0].lastTransitionTime.seconds = 253402300800
    if spoil == "far time":
        m.spec.tolerations.add().key = "k"
        m.status.conditions[0].lastTransitionTime.seconds = 1 << 62
    data = _page([m], kind="Status" if spoil == "kind" else "PodList")
    if spoil == "bytes":
        data = protobuf.MAGIC + b"\x12\x05\xff\xff"
    if spoil == "cut":
        data = data[:-3]
    if spoil == "utf-8":  # a string the server never checked (a protobuf client wrote it): upb refuses it
        data = data.replace("\N{SNOWMAN}".encode(), b"\xff\xfe\xfd")
    assert protobuf.page(data, "Pod") is None


def test_a_field_wire_reads_that_the_message_lacks_stops_the_build() -> None:
    class Odd(wire._Wire, kw_only=True):
        no_such_field: str = ""

    with pytest.raises(protobuf.NotInProtobuf, match=r"k8s\.io\.api\.core\.v1\.Pod has no field noSuchField"):
        protobuf.compile_converter(Odd, core.Pod.DESCRIPTOR)


# Go pointers among the optional scalars wire.py reads: protobuf leaves them out when unset, as JSON does. A plain Go
# value with omitempty is always in protobuf and left out of JSON at zero: protobuf._ZERO_IS_UNSET.
POINTERS = {f"k8s.io.api.core.v1.{f}" for f in (
    "PodSpec.priority", "Toleration.tolerationSeconds", "TopologySpreadConstraint.minDomains",
    "TopologySpreadConstraint.nodeAffinityPolicy", "TopologySpreadConstraint.nodeTaintsPolicy")}


def _optional_scalars(cls: type, desc: Any, seen: set[str]) -> set[str]:
    import msgspec.inspect as mi

    found: set[str] = set()
    if desc.full_name in seen:
        return found
    seen.add(desc.full_name)
    for f in mi.type_info(cls).fields:  # type: ignore[attr-defined]
        holder = desc
        if f.encode_name not in desc.fields_by_name:  # an inlined Go struct (protobuf._INLINED)
            holder = desc.fields_by_name[protobuf._INLINED[desc.full_name]].message_type
        pd = holder.fields_by_name[f.encode_name]
        t, optional = protobuf._unwrap(f.type)
        if isinstance(t, mi.ListType | mi.VarTupleType):
            t = protobuf._unwrap(t.item_type)[0]
        if isinstance(t, mi.StructType):
            found |= _optional_scalars(t.cls, pd.message_type, seen)
        elif optional and pd.message_type is None and not protobuf._is_repeated(pd):
            found.add(f"{holder.full_name}.{pd.name}")
    return found


def test_every_optional_scalar_wire_reads_is_known_as_a_pointer_or_left_out_at_zero() -> None:
    """A field added to wire.py as `X | None` is read here only once it is known which of the two it is in Go."""
    found = _optional_scalars(wire.Pod, core.Pod.DESCRIPTOR, set()) | _optional_scalars(wire.Node, core.Node.DESCRIPTOR,
                                                                                         set())
    assert found == POINTERS | protobuf._ZERO_IS_UNSET


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


def test_a_page_protobuf_cannot_take_reads_the_list_again_as_json(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    pairs = [_pair(f"p{i}", "n") for i in range(5)]
    pairs[3][1].metadata.name = "Not_A_Name"  # only the protobuf one: the JSON page reads
    server = Server(pairs)
    monkeypatch.setattr(live, "request_raw", server)
    monkeypatch.setattr(httplog, "verbosity", 6)
    state = live.read_cluster(_conn())
    assert [p.name for p in state.pods] == [f"p{i}" for i in range(5)]
    asked = _pods_asked(server)
    ahead = asked.count("application/vnd.kubernetes.protobuf")  # the 3rd page may be asked for before the 2nd fails
    assert ahead in (2, 3) and asked == ["application/vnd.kubernetes.protobuf"] * ahead + ["application/json"] * 3
    assert '"Protobuf" kind="Pod" item=1 read="again as JSON"' in capsys.readouterr().err


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


def test_a_protobuf_answer_to_a_json_read_is_one_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = [_pair(f"p{i}", "n") for i in range(3)]
    pairs[1][1].metadata.name = "Not_A_Name"  # the protobuf read gives up, and its JSON read gets protobuf too
    server = Server(pairs)

    def always_protobuf(conn: Any, method: str, path: str, **kw: Any) -> bytes:
        return server(conn, method, path, **{**kw, "accept": protobuf.ACCEPT})

    monkeypatch.setattr(live, "request_raw", always_protobuf)
    with pytest.raises(DeschedError, match=r"the answer to GET /api/v1/pods was not JSON"):
        live.read_cluster(_conn())


def test_without_the_protobuf_package_json_is_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    server = Server([_pair(f"p{i}", "n") for i in range(3)])
    monkeypatch.setattr(live, "request_raw", server)
    monkeypatch.setattr(protobuf, "_classes", lambda: None)
    assert len(live.read_cluster(_conn()).pods) == 3
    assert {accept for _, accept in server.asked} == {"application/json"}


def test_an_error_written_as_protobuf_is_read_as_its_json_status() -> None:
    meta: Any = meta_v1_pb2
    status = meta.Status()
    status.status, status.reason, status.code = "Failure", "Forbidden", 403
    status.message = 'pods is forbidden: User "limited" cannot list resource "pods"'
    envelope = runtime.Unknown()
    envelope.typeMeta.apiVersion, envelope.typeMeta.kind = "v1", "Status"
    envelope.raw = status.SerializeToString()
    text = protobuf.status_json(protobuf.MAGIC + envelope.SerializeToString())
    assert text is not None and json.loads(text)["message"] == status.message
    assert json.loads(text)["code"] == 403
    assert protobuf.status_json(_page([_pair("p", "n")[1]])) is None  # a list is no Status


def test_without_protobuf_json_is_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    server = Server([_pair(f"p{i}", "n") for i in range(3)])
    monkeypatch.setattr(live, "request_raw", server)
    assert len(live.read_cluster(_conn(protobuf=False)).pods) == 3
    assert {accept for _, accept in server.asked} == {"application/json"}


class _Set:
    def HasField(self, _name: str) -> bool:
        return True


@pytest.mark.parametrize("seconds", [0, 1, 59, 3599, 86399, 86400, T0, T0 + 86399, -1, -86401, 253402300799,
                                     -30610224000, -62135596800])
def test_a_time_is_written_as_go_writes_rfc3339_seconds(seconds: int) -> None:
    """Go: the year in four digits (0999), UTC as Z; -62135596800 is year 1, written when it has nanoseconds."""
    when = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(seconds=seconds)
    assert protobuf._time(seconds, _Set()) == when.isoformat().replace("+00:00", "Z")


@pytest.mark.parametrize("seconds", [253402300800, -62167219201, 1 << 62])  # year 10000, year -1, far off
def test_a_time_go_cannot_write_as_json_is_refused(seconds: int) -> None:
    with pytest.raises(ValueError):
        protobuf._time(seconds, _Set())
