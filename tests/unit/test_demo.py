"""The bundled demo (the README's first command) keeps telling its story."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubectl_desched.cli import cli

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo-cluster.yaml")


def _run(*args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--from-file", DEMO, "-A", "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_demo_balance_moves_pods_off_the_hot_workers_only() -> None:
    doc = _run("balance")
    assert doc["mode"] == "snapshot"
    nodes = {n["name"]: n for n in doc["nodes"]}
    classes = {name: n["class"].get("LowNodeUtilization") for name, n in nodes.items()}
    assert classes["worker-a1"] == classes["worker-a2"] == "over-utilized"
    assert classes["worker-b1"] == classes["worker-b2"] == "under-utilized"
    assert classes["worker-c1"] == "unschedulable"
    sources = {c["node"] for c in doc["candidates"]}
    assert sources == {"worker-a1", "worker-a2"}
    assert not {c["namespace"] for c in doc["candidates"]} & {"kube-system", "monitoring"}
    for name in ("worker-a1", "worker-a2"):
        assert nodes[name]["after"]["cpu"] <= 50.0 < nodes[name]["now"]["cpu"]
    assert any(c["warnings"] for c in doc["candidates"])  # a PDB without budget is flagged


def test_demo_explain_names_each_protection() -> None:
    doc = _run("explain", "node", "worker-a1")
    whys = [p["why"] for p in doc["pods"] if p["verdict"] == "keep"]
    for protection in ("bare pod", "system critical", "DaemonSet pod", "local storage"):
        assert any(protection in w for w in whys), protection
    assert {p["verdict"] for p in doc["pods"]} == {"keep", "evict"}
