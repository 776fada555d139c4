"""The streaming JSON reader (kube/jsonstream.py) against json.loads, with chunks small enough to cut
every token, and the snapshot loader built on it."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from kubectl_desched.errors import UsageError
from kubectl_desched.kube import jsonstream
from kubectl_desched.kube.jsonstream import stream_json
from kubectl_desched.kube.snapshot import load_snapshot
from tests import builders as b


class _Pipe(io.StringIO):
    def seekable(self) -> bool:
        return False


def _stream(text: str, head_len: int = 3, pipe: bool = False) -> tuple[Any, list[Any]]:
    """As snapshot.py does: the head is read from the input first, the stream reads on."""
    items: list[Any] = []
    f = _Pipe(text) if pipe else io.StringIO(text)
    rest = stream_json(f, f.read(head_len), items.append)
    return rest, items


@pytest.fixture(params=[1, 2, 5, 64, 1 << 20], ids=lambda n: f"chunk{n}")
def chunk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(jsonstream, "CHUNK", request.param)
    return int(request.param)


LIST = {
    "apiVersion": "v1",
    "items": [
        {"kind": "Pod", "metadata": {"name": "caf\u00e9-\U0001f600", "n": 1234567890123, "f": -1.5e-7},
         "spec": {"a": [True, False, None, "x\"y\\z\u2028"], "e": {}, "l": []}},
        {"kind": "Node", "metadata": {"name": "n1"}},
        [],
        12345678,
    ],
    "kind": "List",
    "metadata": {"resourceVersion": "987654"},
}


@pytest.mark.parametrize("indent", [None, 4])
def test_list_items_come_one_by_one_and_the_rest_is_returned(chunk: int, indent: int | None) -> None:
    rest, items = _stream(json.dumps(LIST, indent=indent, ensure_ascii=False))
    assert items == LIST["items"]
    assert rest == {k: v for k, v in LIST.items() if k != "items"}


def test_top_level_array_and_plain_objects(chunk: int) -> None:
    rest, items = _stream(json.dumps([{"kind": "Pod"}, 7, "s", {"kind": "Node"}]))
    assert rest is None and items == [{"kind": "Pod"}, 7, "s", {"kind": "Node"}]
    obj = {"kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}}, "items": {"not": "an array"}}
    rest, items = _stream(json.dumps(obj))
    assert rest == obj and items == []
    assert _stream("  [ ]  ") == (None, [])
    assert _stream("{ }\n") == ({}, [])


@pytest.mark.parametrize(
    "text",
    [
        '{\n  "kind": "List",\n  "items": [1,\n}\n',
        '{"items": [{"a": 1}, {"b": tru}]}',
        '{"items": [{"a": 1} {"b": 2}]}',
        '{"items": [{"a": "open string}]}',
        '{"kind": "List", "items": []} {"again": 1}',
        '{"kind": "List", "items": [{"a": 1}]',
        '{"kind" "List"}',
        '{kind: "List"}',
        '[{"a": 1},\n\n   {"b": \x01}]',
        '{"items": [{"a": "\\u12"}]}',
        '{"x": 12',
        '[',
    ],
)
@pytest.mark.parametrize("pipe", [False, True], ids=["file", "pipe"])
def test_errors_have_json_loads_line_column_and_message(chunk: int, text: str, pipe: bool) -> None:
    """A file is read again up to the error to count its lines; a pipe's lines are counted as it streams."""
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as got:
        _stream(text, head_len=1, pipe=pipe)
    assert (got.value.msg, got.value.lineno, got.value.colno) == (
        expected.value.msg, expected.value.lineno, expected.value.colno)


def _cluster_objects() -> list[dict[str, Any]]:
    return [b.node("n1", cpu="4"), b.node("n2"), b.pod("web-1", "n1", cpu="500m", labels={"app": "web"}),
            b.pod("db-1", "n2", namespace="data"), b.pdb("web", {"app": "web"}, allowed=1)]


def test_snapshot_of_many_chunks_matches_the_whole_file(tmp_path: Path, chunk: int) -> None:
    f = tmp_path / "c.json"
    f.write_text(json.dumps(b.cluster(*_cluster_objects()), indent=4))
    state = load_snapshot([str(f)])
    assert sorted(state.nodes) == ["n1", "n2"]
    assert [(p.key, p.node_name, p.requests.get("cpu")) for p in state.pods] == [
        ("default/web-1", "n1", 500.0), ("data/db-1", "n2", 100.0)]
    assert [x.name for x in state.pdbs] == ["web"]


def test_an_object_with_items_that_is_not_a_list_is_one_object(tmp_path: Path) -> None:
    """kubectl sorts keys, so "kind" comes after "items": the items were read before the kind said
    this is no List. As with a whole-file parse, the object counts as itself and its items do not."""
    widget, nodes = tmp_path / "widget.json", tmp_path / "nodes.json"
    widget.write_text(json.dumps({"apiVersion": "v1", "items": [b.node("ghost")], "kind": "Widget",
                                  "metadata": {"name": "w"}}))
    nodes.write_text(json.dumps(b.cluster(b.node("n1"))))
    state = load_snapshot([str(widget), str(nodes)])
    assert sorted(state.nodes) == ["n1"]
    assert [o["metadata"]["name"] for o in state.extra["Widget"]] == ["w"]


def test_a_bad_object_before_a_syntax_error_reports_the_syntax_error(tmp_path: Path) -> None:
    f = tmp_path / "c.json"
    f.write_text('{"kind": "List", "items": [{"kind": "Pod", "metadata": "x"},\n{"kind": ]}')
    with pytest.raises(UsageError, match=r"not valid JSON: line 2 column 10: Expecting value"):
        load_snapshot([str(f)])


def test_invalid_utf8_in_the_middle_is_not_a_text_file(tmp_path: Path, chunk: int) -> None:
    f = tmp_path / "c.json"
    f.write_bytes(json.dumps(b.cluster(*_cluster_objects())).encode()[:-40] + b"\xff\xfe" + b"}]}")
    with pytest.raises(UsageError, match="not a text file"):
        load_snapshot([str(f)])
