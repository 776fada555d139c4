"""Reading cluster state from kubectl output files (kube/snapshot.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_desched.errors import UsageError
from kubectl_desched.kube.snapshot import load_snapshot
from tests import builders as b


def _objects() -> list[dict[str, Any]]:
    return [
        b.node("n1", cpu="4"), b.node("n2", cpu="2"),
        b.pod("web-1", "n1", cpu="500m", labels={"app": "web"}), b.pod("db-1", "n2", namespace="data"),
        b.pdb("web", {"app": "web"}, allowed=1),
        b.priority_class("high", 1000),
    ]


def _check(state: Any, source_names: list[str]) -> None:
    assert sorted(state.nodes) == ["n1", "n2"]
    assert sorted(p.key for p in state.pods) == ["data/db-1", "default/web-1"]
    assert [x.name for x in state.pdbs] == ["web"]
    assert [o.name for o in state.extra["PriorityClass"]] == ["high"]
    assert state.nodes["n1"].allocatable["cpu"] == 4000.0
    assert state.source == "file " + ", ".join(source_names)


def _one_line_error(paths: list[str]) -> str:
    with pytest.raises(UsageError) as info:
        load_snapshot(paths)
    message = str(info.value)
    assert "\n" not in message
    assert info.value.exit_code == 2
    return message


def test_kubectl_yaml_list(tmp_path: Path) -> None:
    f = tmp_path / "cluster.yaml"
    f.write_text(yaml.safe_dump(b.cluster(*_objects())))
    _check(load_snapshot([str(f)]), [str(f)])


def test_kubectl_json_list(tmp_path: Path) -> None:
    f = tmp_path / "cluster.json"
    f.write_text(json.dumps(b.cluster(*_objects()), indent=2))
    _check(load_snapshot([str(f)]), [str(f)])


def test_typed_lists_and_nested_lists(tmp_path: Path) -> None:
    objs = _objects()
    doc = {"kind": "List", "items": [
        {"apiVersion": "v1", "kind": "NodeList", "items": objs[:2]},
        {"apiVersion": "v1", "kind": "PodList", "items": objs[2:4]},
        *objs[4:],
    ]}
    f = tmp_path / "nested.yaml"
    f.write_text(yaml.safe_dump(doc))
    _check(load_snapshot([str(f)]), [str(f)])


def test_multi_document_yaml_with_empty_documents(tmp_path: Path) -> None:
    f = tmp_path / "multi.yaml"
    f.write_text("---\n" + "\n---\n".join(yaml.safe_dump(o) for o in _objects()) + "\n---\n")
    _check(load_snapshot([str(f)]), [str(f)])


def test_single_objects_in_several_files(tmp_path: Path) -> None:
    paths = []
    for i, obj in enumerate(_objects()):
        f = tmp_path / f"obj{i}.json"
        f.write_text(json.dumps(obj))
        paths.append(str(f))
    _check(load_snapshot(paths), paths)


def test_top_level_json_array(tmp_path: Path) -> None:
    f = tmp_path / "array.json"
    f.write_text(json.dumps(_objects()))
    _check(load_snapshot([str(f)]), [str(f)])


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(yaml.safe_dump(b.cluster(*_objects()))))
    _check(load_snapshot(["-"]), ["<stdin>"])


def test_stdin_and_file_together(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    objs = _objects()
    f = tmp_path / "nodes.yaml"
    f.write_text(yaml.safe_dump(b.cluster(*objs[:2])))
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(b.cluster(*objs[2:]))))
    _check(load_snapshot([str(f), "-"]), [str(f), "<stdin>"])


def test_invalid_yaml_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("kind: List\nitems:\n  - kind: Node\n    metadata: {name: n1\n")
    message = _one_line_error([str(f)])
    assert message.startswith(f"{f}: not valid YAML at line 5")


def test_invalid_json_names_file_line_and_column(tmp_path: Path) -> None:
    f = tmp_path / "bad.json"
    f.write_text('{\n  "kind": "List",\n  "items": [1,\n}\n')
    message = _one_line_error([str(f)])
    assert message.startswith(f"{f}: not valid JSON: line 4 column 1")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("- 1\n- 2\n", "expected Kubernetes objects, found a int"),
        ("just a string\n", "expected Kubernetes objects, found a str"),
        ("kind: List\nitems: [3]\n", "expected Kubernetes objects, found a int"),
        ("metadata: {name: x}\n", "an object without a kind"),
    ],
)
def test_not_objects(tmp_path: Path, content: str, expected: str) -> None:
    f = tmp_path / "weird.yaml"
    f.write_text(content)
    message = _one_line_error([str(f)])
    assert message.startswith(f"{f}: ")
    assert expected in message


def test_no_nodes_names_every_file(tmp_path: Path) -> None:
    f1, f2 = tmp_path / "pods.yaml", tmp_path / "empty.yaml"
    f1.write_text(yaml.safe_dump(b.cluster(b.pod("a", "n1"))))
    f2.write_text("")
    message = _one_line_error([str(f1), str(f2)])
    assert message.startswith(f"{f1}, {f2}: no Node objects found")


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    message = _one_line_error([str(missing)])
    assert message == f"cannot read {missing}: No such file or directory"


def test_directory_and_binary_file(tmp_path: Path) -> None:
    assert "cannot read" in _one_line_error([str(tmp_path)])
    f = tmp_path / "bin.yaml"
    f.write_bytes(b"\xff\xfe\x00kind")
    assert _one_line_error([str(f)]) == f"{f}: not a text file"


def test_bad_object_names_file_and_object(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump(b.cluster(b.node("n1"), b.pod("p", "n1", cpu="a-lot", namespace="ns"))))
    message = _one_line_error([str(f)])
    assert message.startswith(f"{f}: Pod ns/p: spec.containers[0].resources.requests[cpu]: must be a quantity")


def test_malformed_object(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump(b.cluster(b.node("n1"), {"kind": "Pod", "metadata": "not-a-map"})))
    message = _one_line_error([str(f)])
    assert message == f"{f}: a Pod: metadata: must be an object, not the string 'not-a-map'"
