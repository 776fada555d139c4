"""explain's verdicts say what decides them: the node is the scope of `explain node`, a budget that allows no
disruption keeps a pod the quick read would call MAYBE, and `explain pod` lands the pod where the plan does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kubectl_desched.cli import main as cli
from kubectl_desched.cli.plugin_flags import build_policy, default_plugins, registry
from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.framework.policy_decoder import Policy
from kubectl_desched.framework.runner import Scope, run
from kubectl_desched.model.objects import node_from_json, pdb_from_json, pod_from_json
from kubectl_desched.model.state import ClusterState
from kubectl_desched.ui.explain import explain_node_doc, explain_node_text, explain_pod_doc, explain_pod_text
from tests import builders as b

DEMO = str(Path(__file__).resolve().parents[3] / "examples" / "demo-cluster.yaml")


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


# --- 10: explain pod lands the pod where the plan does, and leads with what decides --------------------------------

PREFER_WORKER_2 = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 100, "preference": {"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["worker-2"]}]}}]}}


def _pod_doc(*flags: str, affinity: dict[str, Any] | None = PREFER_WORKER_2) -> tuple[dict[str, Any], EvictionPlan]:
    """worker-2 over-utilized by three web pods that prefer it; worker-1 nearly empty, worker-3 in between."""
    extra = {"affinity": affinity} if affinity else {}
    state = _state(b.node("worker-1"), b.node("worker-2"), b.node("worker-3"),
                   *(b.pod(f"web-{i}", "worker-2", cpu="800m", memory="256Mi", labels={"app": "web"},
                           owner_name="web", **extra) for i in range(3)),
                   b.pod("light", "worker-1", cpu="100m", memory="64Mi"),
                   b.pod("middle", "worker-3", cpu="1500m", memory="2Gi"))
    policy = _policy(cli.explain_pod, "--plugin=LowNodeUtilization", *flags)
    plan = run(policy, state, Scope())
    pod = state.find_pod("default", "web-0")
    assert pod is not None
    return explain_pod_doc(plan, pod, ["LowNodeUtilization"]), plan


def test_explain_pod_kept_futile_lands_back_and_never_says_another_node_takes_it() -> None:
    doc, plan = _pod_doc()
    assert not plan.candidates and len(plan.kept_futile) == 3
    lines = explain_pod_text(doc).splitlines()
    assert lines[1] == ("Verdict: KEEP - the move would change nothing: would land back on worker-2; picked by "
                        "LowNodeUtilization")
    landing = {k: doc["landing"][k] for k in ("planned", "node", "tied", "recreated")}
    assert landing == {"planned": False, "node": "worker-2", "tied": [], "recreated": True}
    assert "If evicted, its replacement would likely land on: worker-2, its own node" in lines
    assert "Other nodes it fits now: worker-1, worker-3" in lines
    assert not any(line.startswith("Other nodes that could take it") for line in lines)
    assert doc["why"].startswith("LowNodeUtilization: selected (node over target")  # explain node's words stay


def test_explain_pod_of_a_candidate_shows_the_plans_destination() -> None:
    doc, plan = _pod_doc(affinity=None)
    pod = plan.state.find_pod("default", "web-0")
    assert plan.placement is not None and pod is not None
    dest = plan.placement.destinations[id(pod)]
    assert doc["verdict"] == "evict" and doc["landing"]["planned"]
    assert (doc["landing"]["node"], doc["landing"]["tied"]) == (dest.node, [n for n in dest.tied if n != dest.node])
    text = explain_pod_text(doc)
    assert text.splitlines()[1].startswith("Verdict: EVICT - LowNodeUtilization: node over target")
    tie = f" (tied with {', '.join(doc['landing']['tied'])})" if doc["landing"]["tied"] else ""
    assert f"\nIts replacement would likely land on: {dest.node}{tie}\n" in text
    assert dest.node not in doc["otherNodes"]["fits"]  # the estimate names it; the list does not repeat it


def test_explain_pod_with_keep_futile_plans_the_landing_back() -> None:
    doc, _plan = _pod_doc("--keep-futile")
    assert doc["verdict"] == "evict" and doc["landing"]["planned"] and doc["landing"]["node"] == "worker-2"
    assert "\nIts replacement would likely land on: worker-2, its own node\n" in explain_pod_text(doc)


def test_demo_explain_pod_agrees_with_the_plans_reasons() -> None:
    """Every pod of worker-a1 the plan keeps as futile: the landing explain pod shows is the node its reason names;
    a pod its 2-of-2 budget keeps leads with that budget."""
    node = json.loads(_explain("node", "worker-a1")[1])
    futile = [p for p in node["pods"] if "the move would change nothing" in p["why"]]
    assert futile
    for p in futile:
        text, raw = _explain("pod", "-n", p["namespace"], p["pod"])
        doc = json.loads(raw)
        assert doc["decides"].startswith("the move would change nothing: ")
        assert text.splitlines()[1] == f"Verdict: KEEP - {doc['decides']}"
        assert f"would land on {doc['landing']['node']}" in doc["decides"]
    text, _raw = _explain("pod", "shop/checkout-t2ff6924gf-49crz")
    assert text.splitlines()[1] == ("Verdict: KEEP - PodDisruptionBudget checkout-pdb allows no disruption "
                                    "(2 healthy, 2 required): the API would refuse the eviction; picked by "
                                    "LowNodeUtilization")
    text, _raw = _explain("pod", "batch/debug-shell")
    assert "Verdict: KEEP - protected: bare pod (no owner)" in text
    assert "\nIf evicted: no controller recreates it\n" in text


# --- a plugin that checks its rule before the filters: a protected pod it matched is not "does not select it" ---

def test_explain_pod_says_a_protected_pod_cannot_be_selected_whichever_order_the_plugin_checks() -> None:
    text, raw = _explain("pod", "-n", "batch", "debug-shell")  # a bare pod: protected
    rows = {p["plugin"]: p["result"] for p in json.loads(raw)["plugins"]}
    assert rows["PodLifeTime"] == "cannot select it (protected: bare pod (no owner))"
    assert rows["LowNodeUtilization"] == ("cannot select it (protected: bare pod (no owner)); "
                                          "its node is over-utilized")
    assert "does not select it" not in text
    ledger = {p["plugin"]: p["result"] for p in json.loads(_explain("pod", "-n", "payments", "ledger-0")[1])["plugins"]}
    assert ledger["RemoveFailedPods"] == "does not select it"  # not protected: its rule is why
