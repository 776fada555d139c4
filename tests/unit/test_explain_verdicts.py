"""explain's verdicts say what decides them: the node is the scope of `explain node`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubectl_desched import cli

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo-cluster.yaml")


def _explain(*args: str) -> tuple[str, str]:
    """The command on the demo snapshot, with no kubeconfig (so no context namespace): its table, its JSON."""
    env = {"KUBECONFIG": "/nonexistent"}
    text = CliRunner().invoke(cli.cli, ["explain", *args, "--from-file", DEMO], env=env)
    doc = CliRunner().invoke(cli.cli, ["explain", *args, "--from-file", DEMO, "-o", "json"], env=env)
    assert text.exit_code == 0 and doc.exit_code == 0, text.output + doc.output
    return text.stdout, doc.stdout


# --- 8: the node is the scope of explain node ----------------------------------------------------------------------

def test_explain_node_without_n_judges_every_namespace_of_the_node() -> None:
    text, raw = _explain("node", "worker-a1")
    doc = json.loads(raw)
    assert doc["namespaces"] is None
    assert not [p for p in doc["pods"] if "not in scope" in p["why"]]
    assert {p["namespace"] for p in doc["pods"]} >= {"batch", "kube-system", "monitoring", "payments", "shop"}
    # judged in their own namespaces: a protection or a plugin's decision, not the scope
    assert "LowNodeUtilization: selected" in next(p for p in doc["pods"] if p["pod"] == "ledger-0")["why"]
    assert "are judged (-n" not in text
    assert raw == _explain("node", "worker-a1", "-A")[1]  # -A says the same


def test_explain_node_with_n_narrows_and_says_once_how_to_widen() -> None:
    text, raw = _explain("node", "worker-a1", "-n", "shop")
    doc = json.loads(raw)
    assert doc["namespaces"] == ["shop"]
    widen = "  Only pods in namespace shop are judged (-n shop); without -n, every pod on the node is"
    assert text.splitlines()[1] == widen and text.count("are judged") == 1
    verdicts = {p["pod"]: p["why"] for p in doc["pods"]}
    assert verdicts["ledger-0"] == "protected: namespace payments not in scope (-n shop)"
    assert "not in scope" not in verdicts["checkout-t2ff6924gf-49crz"]
