"""Typed decoding from bytes (kube/decode.py) against the slow way (json, the full schema, then the same types):
the same model whichever way an object is read, and everything the typed decode does not take goes the slow way."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kubectl_desched.errors import UsageError
from kubectl_desched.kube import decode, live
from kubectl_desched.kube.snapshot import load_snapshot
from kubectl_desched.model import objects as model
from tests import builders as b
from tests.unit.test_fuzz_readers import base_cluster


def _fields(obj: Any) -> Any:
    """A model object as comparable values (a PDB's selector is a function: compared by what it selects)."""
    if isinstance(obj, model.PodDisruptionBudget):
        return (obj.namespace, obj.name, obj.disruptions_allowed, obj.fresh,
                obj.selector({"app": "web", "tier": "x"}), obj.selector({}))
    return msgspec.structs.asdict(obj)


def _page(items: list[dict[str, Any]], cont: str = "") -> bytes:
    kindless = [{k: v for k, v in o.items() if k != "kind"} for o in items]
    return json.dumps({"kind": "List", "metadata": {"continue": cont}, "items": kindless}).encode()


@pytest.mark.parametrize("kind", ["Pod", "Node", "PodDisruptionBudget", "Namespace", "PriorityClass",
                                  "PersistentVolumeClaim", "NodeMetric", "NodeMetrics", "PodMetrics"])
def test_a_page_decodes_typed_into_what_the_slow_way_makes(kind: str) -> None:
    objs = [o for o in base_cluster() if o["kind"] == kind]
    assert objs
    fast = decode.page(_page(objs, "next"), kind)
    assert fast is not None
    slow = [model.from_json(kind, o) for o in objs]
    assert [_fields(o) for o in fast[0]] == [_fields(o) for o in slow] and fast[1] == "next"


def test_nulls_and_unknown_kinds_go_the_slow_way_with_the_same_result() -> None:
    pod = base_cluster()[2]
    pod["status"]["conditions"][0]["reason"] = None  # null is the empty value to the API, not a string
    data = _page([pod])
    assert decode.page(data, "Pod") is None
    read = live.typed_page("Pod")(data, "/api/v1/pods")[0]
    pod["status"]["conditions"][0].pop("reason")
    assert [_fields(p) for p in read] == [_fields(model.pod_from_json(pod))]


def test_what_the_typed_decode_refuses_is_named_by_the_slow_way() -> None:
    pod = base_cluster()[2]
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    data = _page([pod])
    assert decode.page(data, "Pod") is None
    with pytest.raises(model.ParseError) as info:
        live.typed_page("Pod")(data, "/api/v1/pods")
    assert str(info.value) == ("Pod shop/web-0: spec.containers[0].resources.requests[cpu]: must be a quantity "
                               "such as 500m or 1Gi, not the string 'lots'")


def test_unread_fields_are_skipped_whatever_they_hold() -> None:
    pod = base_cluster()[2]
    pod["metadata"]["managedFields"] = [{"manager": 5, "fieldsV1": {"f:spec": {"f:x": [None, True]}}}]
    pod["spec"]["containers"][0]["env"] = "not a list"  # no plugin reads it; the API's non-strict decoding
    fast = decode.page(_page([pod]), "Pod")
    assert fast is not None and fast[0][0].name == "web-0"


def _same_as_streamed(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    typed = load_snapshot([str(path)])
    with monkeypatch.context() as m:
        m.setattr(decode, "snapshot", lambda _data: None)
        streamed = load_snapshot([str(path)])
    for a, b_ in ((typed.pods, streamed.pods), (list(typed.nodes.values()), list(streamed.nodes.values())),
                  (typed.pdbs, streamed.pdbs)):
        assert [_fields(o) for o in a] == [_fields(o) for o in b_]
    assert {k: [_fields(o) for o in v] for k, v in typed.extra.items()} == \
        {k: [_fields(o) for o in v] for k, v in streamed.extra.items()}


def test_a_snapshot_reads_the_same_typed_and_streamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(b.cluster(*base_cluster())))
    data = path.read_bytes()
    assert decode.snapshot(data) is not None  # the fast way takes it
    _same_as_streamed(path, monkeypatch)


@pytest.mark.parametrize("indent", [4, 2, 1])
def test_an_indented_list_is_read_by_its_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                indent: int) -> None:
    """kubectl get -o json indents by 4; any indent will do. The whole List is never scanned first, and a mapped
    file's pages are given back as the read goes (here every page)."""
    doc = b.cluster(*base_cluster())
    doc["metadata"] = {"resourceVersion": "", "nested": {"a": {"b": 1}}}  # the List's own fields, after the items
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc, indent=indent, sort_keys=True) + "\n")
    found = decode.Objects()
    assert decode._indented_items(path.read_bytes(), found) is True
    assert len(found.pods) == len([o for o in doc["items"] if o["kind"] == "Pod"])
    scanned: list[object] = []
    monkeypatch.setattr(decode, "_SNAPSHOT", _Spy(decode._SNAPSHOT, scanned))
    monkeypatch.setattr(decode, "_PIECE", 1)  # one item a piece
    _same_as_streamed(path, monkeypatch)
    assert all(len(bytes(d)) < 400 for d in scanned)  # only the List around its items was decoded as a whole


class _Spy:
    def __init__(self, inner: Any, seen: list[object]) -> None:
        self.inner, self.seen = inner, seen

    def decode(self, data: Any) -> Any:
        self.seen.append(bytes(data))
        return self.inner.decode(data)


@pytest.mark.parametrize("mangle", [
    lambda t: t.replace('\n        }\n    ]', '}\n    ]', 1),  # the last item closed on its last line
    lambda t: t.replace('\n        },\n        {', '\n        }, {', 1),  # two items on one line
])
def test_items_laid_out_otherwise_within_the_list_still_read_by_layout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mangle: Any) -> None:
    """The layout only places the cuts between pieces: within a piece the items may be laid out any way."""
    text = mangle(json.dumps(b.cluster(*base_cluster()), indent=4))
    path = tmp_path / "snap.json"
    path.write_text(text)
    assert decode._indented_items(path.read_bytes(), decode.Objects()) is True
    _same_as_streamed(path, monkeypatch)


def test_a_cut_the_layout_misplaces_leaves_the_list_to_a_scan_of_the_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An item holding what looks like the gap between two items (indented against its depth) makes a piece that
    is not whole items: the List is then scanned whole, and reads the same."""
    doc = b.cluster(*base_cluster())
    text = json.dumps(doc, indent=4)
    first = text.index('"items": [\n        {') + len('"items": [\n        ')
    fake = '"odd": [{"a": 1},\n        {"b": 2}], '
    text = text[:first + 1] + fake + text[first + 1:]  # inside the first item, at the items' indent
    path = tmp_path / "snap.json"
    path.write_text(text)
    data = path.read_bytes()
    monkeypatch.setattr(decode, "_PIECE", data.index(b'{"b": 2}') + 1 - first)  # the cut falls in the fake gap
    assert decode._indented_items(data, decode.Objects()) is None
    assert decode.snapshot(data) is not None
    _same_as_streamed(path, monkeypatch)


@pytest.mark.parametrize("around", [
    '{\n    "kind": "List",\n    "x": {\n    "items": [\n        %s\n    ]\n    }\n}\n',  # nested in another field
    '{\n    "kind": "List",\n    "items": [\n        %s\n    ],\n    "items": []\n}\n',  # replaced by a later key
])
def test_an_items_array_that_is_not_the_lists_own_is_not_read_as_its_items(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, around: str) -> None:
    """Found in review: the array the layout read must be the List's own items, as json.loads has them."""
    item = json.dumps(b.pod("p", "n1"), indent=4).replace("\n", "\n        ")
    data = (around % item).encode()
    assert json.loads(data)["items"] == [] if '"items": []' in around else "items" not in json.loads(data)
    assert decode._indented_items(data, decode.Objects()) is None  # the whole scan judges it
    found = decode.snapshot(data)
    assert found is not None and found.pods == []


def test_crlf_lines_are_not_the_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "snap.json"
    path.write_bytes(json.dumps(b.cluster(*base_cluster()), indent=4).replace("\n", "\r\n").encode())
    assert decode._indented_items(path.read_bytes(), decode.Objects()) is None
    _same_as_streamed(path, monkeypatch)


def test_an_indented_object_with_items_is_left_to_the_streamed_read() -> None:
    data = json.dumps({"apiVersion": "v1", "items": [b.node("n1")], "kind": "Pod"}, indent=4).encode()
    assert decode._indented_items(data, decode.Objects()) is False
    assert decode.snapshot(data) is None


@pytest.mark.parametrize("doc", [
    [b.node("n1")],  # a top-level array
    {"kind": "List", "items": [b.node("n1"), {"kind": "List", "items": [b.pod("p", "n1")]}]},  # a List in a List
    {"kind": "List", "items": [b.node("n1"), {"kind": "Service", "metadata": {"name": "s"}}]},  # a kind not typed
    {"kind": "NodeMetricsList", "items": [b.node("n1"), {"metadata": {"name": "n1"}, "usage": {}}]},  # no kind
    {"kind": "Pod", "items": [], "metadata": {"name": "p"}},  # one object, not a List
])
def test_what_the_typed_decode_does_not_take_whole_is_left_to_the_streamed_read(doc: Any) -> None:
    assert decode.snapshot(json.dumps(doc).encode()) is None


def test_extra_kinds_given_as_parsed_json_become_the_model_once() -> None:
    from kubectl_desched.model.state import ClusterState
    state = ClusterState([], [], extra={"PriorityClass": [b.priority_class("high", 1000)],
                                        "Deployment": [{"kind": "Deployment"}]})
    assert state.extra["PriorityClass"] == [model.PriorityClass("high", 1000)]
    assert state.extra["Deployment"] == [{"kind": "Deployment"}]  # a kind no Struct types stays as parsed


class _Stdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


@pytest.mark.parametrize("null", [False, True])
def test_standard_input_is_read_once_typed_or_streamed(monkeypatch: pytest.MonkeyPatch, null: bool) -> None:
    objs = base_cluster()
    if null:
        objs[2]["spec"]["priority"] = None  # the streamed read takes the bytes the typed decode left
    monkeypatch.setattr(sys, "stdin", _Stdin(json.dumps(b.cluster(*objs)).encode()))
    state = load_snapshot(["-"])
    assert [p.name for p in state.pods] == ["web-0", "web-1", "db-0"] and state.pods[0].priority == (None if null
                                                                                                     else 100)


def test_standard_input_that_is_not_text_is_one_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", _Stdin(b'{"kind": "List", "items": [\xff]}'))
    with pytest.raises(UsageError) as info:
        load_snapshot(["-"])
    assert str(info.value) == "<stdin>: not a text file"


def _two_pods_typed() -> list[model.Pod]:
    pods = []
    for i in range(2):
        p = b.pod(f"web-{i}", "node-a.zone-1", namespace="shop")
        p["status"]["conditions"] = [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "PodScheduled", "status": "True", "reason": "Scheduled",
             "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        pods.append(p)
    page = json.loads(_page(pods))  # fresh string objects for every pod, as a decoded page has
    fast = decode.page(_page(page["items"]), "Pod")
    assert fast is not None
    return fast[0]


def test_values_pods_repeat_are_kept_once() -> None:
    """Memory at 150,000 pods: the namespace, node name and conditions' words of every pod are the same objects (the
    pods' sequences of condition types, statuses and reasons are one tuple), and a pod's condition times are one
    string, read back into the conditions when asked."""
    a, c = _two_pods_typed()
    assert a.namespace is c.namespace and a.node_name is c.node_name
    assert a.condition_kinds is c.condition_kinds
    assert a.condition_kinds == (("Ready", "True", ""), ("PodScheduled", "True", "Scheduled"))
    assert a.condition_kinds[0][1] is a.condition_kinds[1][1]
    assert a.condition_times == "2026-01-01T00:00:00Z|2026-01-01T00:00:00Z"
    assert a.ready and c.ready
    assert [(x.type, x.status, x.reason, x.last_transition) for x in a.conditions] == [
        ("Ready", "True", "", "2026-01-01T00:00:00Z"), ("PodScheduled", "True", "Scheduled", "2026-01-01T00:00:00Z")]


def test_a_name_checked_as_a_node_is_still_checked_as_a_namespace() -> None:
    """Node names may hold dots, namespaces may not: a value seen in one field is not taken as valid for the other."""
    _two_pods_typed()  # "node-a.zone-1" is now known as a node name
    bad = b.pod("web-9", "n1", namespace="node-a.zone-1")
    with pytest.raises(model.ParseError, match=r"metadata\.namespace"):
        model.pod_from_json(bad)


@pytest.mark.parametrize(("where", "value"), [
    ("startTime", "2026-01-01T00:00:00Z|2026-01-01T00:00:00Z"),  # two good times joined: still not one
    ("startTime", "yesterday"),
    ("lastTransitionTime", "2026-13-01T00:00:00Z"),
    ("lastTransitionTime", "2026-01-01T00:00:00Z|2026-01-01T00:00:00Z"),  # one condition's time holding two
    ("lastTransitionTime", "|"),
])
def test_a_pods_status_times_are_checked_all_at_once_and_named_one_by_one(where: str, value: str) -> None:
    """The typed decode checks a pod's status times with one match; what it refuses, the slow way names."""
    pod = b.pod("web-0", "n1", namespace="shop")
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    field = "status.startTime"
    if where == "startTime":
        pod["status"]["startTime"] = value
    else:
        pod["status"]["conditions"].append({"type": "Initialized", "status": "True", "lastTransitionTime": value})
        field = "status.conditions[1].lastTransitionTime"
    data = _page([pod])
    assert decode.page(data, "Pod") is None
    with pytest.raises(model.ParseError) as info:
        live.typed_page("Pod")(data, "/api/v1/pods")
    assert str(info.value).startswith(f"Pod shop/web-0: {field}: must be an RFC 3339 timestamp")


def test_good_status_times_pass_the_typed_decode() -> None:
    pod = b.pod("web-0", "n1", namespace="shop")
    pod["status"]["conditions"] = [
        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00.123+02:00"},
        {"type": "Initialized", "status": "True"}]
    fast = decode.page(_page([pod]), "Pod")
    assert fast is not None
    assert [c.last_transition for c in fast[0][0].conditions] == ["2026-01-01T00:00:00.123+02:00", ""]


def test_conditions_without_times_or_none_at_all_read_back_as_given() -> None:
    p = b.pod("p", "n1")
    p["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"},
                                 {"type": "Ready", "status": "False", "reason": "ContainersNotReady",
                                  "lastTransitionTime": "2026-01-01T00:00:05Z"},
                                 {"type": "Initialized", "status": "True"}]
    q = b.pod("q", "n1")
    q["status"]["conditions"] = []
    fast = decode.page(_page([p, q]), "Pod")
    assert fast is not None
    pod, bare = fast[0]
    assert [(c.type, c.status, c.reason, c.last_transition) for c in pod.conditions] == [
        ("PodScheduled", "True", "", ""), ("Ready", "False", "ContainersNotReady", "2026-01-01T00:00:05Z"),
        ("Initialized", "True", "", "")]
    assert not pod.ready
    assert bare.conditions == () and not bare.ready
    assert [_fields(x) for x in (pod, bare)] == [_fields(model.pod_from_json(x)) for x in (p, q)]  # the slow way too
