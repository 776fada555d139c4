"""explain's verdicts say what decides them: the node is the scope of `explain node`, and a budget that allows
no disruption keeps a pod the quick read would call MAYBE."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kubectl_desched import cli
from kubectl_desched.commandline.plugin_flags import build_policy, default_plugins, registry
from kubectl_desched.explain import explain_node_doc, explain_node_text
from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.framework.runner import Scope, run
from kubectl_desched.model import node_from_json, pdb_from_json, pod_from_json
from kubectl_desched.policy import Policy
from kubectl_desched.state import ClusterState
from tests import builders as b

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo-cluster.yaml")


def _explain(*args: str) -> tuple[str, str]:
    """The command on the demo snapshot, with no kubeconfig (so no context namespace): its table, its JSON."""
    env = {"KUBECONFIG": "/nonexistent"}
    text = CliRunner().invoke(cli.cli, ["explain", *args, "--from-file", DEMO], env=env)
    doc = CliRunner().invoke(cli.cli, ["explain", *args, "--from-file", DEMO, "-o", "json"], env=env)
    assert text.exit_code == 0 and doc.exit_code == 0, text.output + doc.output
    return text.stdout, doc.stdout


def _policy(command: Any, *args: str) -> Policy:
    ctx = command.make_context("explain", ["x", *args])
    flags = cli.EXPLAIN_PLUGINS.parse(ctx, dict(ctx.params))
    return build_policy(registry(ctx), flags, "balance", default_plugins(registry(ctx), "explain"))


def _state(*objs: dict[str, Any]) -> ClusterState:
    return ClusterState([node_from_json(o) for o in objs if o["kind"] == "Node"],
                        [pod_from_json(o) for o in objs if o["kind"] == "Pod"],
                        [pdb_from_json(o) for o in objs if o["kind"] == "PodDisruptionBudget"])


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


# --- 9: on the quick read, a budget that allows no disruption decides ----------------------------------------------

def _one_node_plan(*flags: str, allowed: int = 0) -> EvictionPlan:
    """explain node's quick read of a busy node whose web pods a budget guards (2 healthy of 2 required)."""
    objs = [b.node("busy", cpu="4"),
            *(b.pod(f"web-{i}", "busy", cpu="900m", labels={"app": "web"}, owner_name="web") for i in range(2)),
            *(b.pod(f"api-{i}", "busy", cpu="900m", labels={"app": "api"}, owner_name="api") for i in range(2)),
            b.pdb("web", {"app": "web"}, allowed=allowed, healthy=(2, 2) if allowed == 0 else (3, 2))]
    return run(_policy(cli.explain_node, "--plugin=LowNodeUtilization", *flags), _state(*objs), Scope(),
               one_node=True)


def _node_verdicts(plan: EvictionPlan) -> dict[str, tuple[str, str]]:
    doc = explain_node_doc(plan, plan.state.nodes["busy"], considered=True)
    return {p["pod"]: (p["verdict"], p["why"]) for p in doc["pods"]}


def test_quick_read_keeps_a_pod_whose_budget_allows_no_disruption() -> None:
    plan = _one_node_plan()
    assert plan.estimated == ["LowNodeUtilization"]
    verdicts = _node_verdicts(plan)
    maybe = "LowNodeUtilization: the node is over-utilized"
    for name in ("web-0", "web-1"):
        verdict, why = verdicts[name]
        assert verdict == "keep"
        assert why.startswith("PodDisruptionBudget web allows no disruption (2 healthy, 2 required): the API would "
                              "refuse the eviction; " + maybe)
    for name in ("api-0", "api-1"):  # no budget guards them: still an estimate
        assert verdicts[name][0] == "maybe" and verdicts[name][1].startswith(maybe)
    text = explain_node_text(explain_node_doc(plan, plan.state.nodes["busy"], considered=True))
    assert "KEEP       PodDisruptionBudget web allows no disruption (2 healthy, 2 required)" in text


def test_quick_read_budget_with_room_or_ignored_stays_maybe() -> None:
    assert {v for v, _ in _node_verdicts(_one_node_plan(allowed=1)).values()} == {"maybe"}
    loose = _node_verdicts(_one_node_plan("--no-respect-pdbs"))
    assert {v for v, _ in loose.values()} == {"maybe"}  # as upstream's dry run plans it: the budget is ignored
