"""Which nodes a run considers, as upstream decides it: Ready nodes (a node without a Ready condition counts) that
match the policy's nodeSelector, and no plugin runs at all with fewer than two of them."""

from __future__ import annotations

from typing import Any

from kubectl_desched.framework.policy_decoder import decode_policy, policy_from_plugins
from kubectl_desched.framework.runner import FEW_NODES, Scope, run
from kubectl_desched.model.objects import node_from_json, pod_from_json
from kubectl_desched.model.state import ClusterState
from kubectl_desched.plugins import in_tree_registry
from kubectl_desched.ui.explain import Verdicts
from tests import builders as b
from tests.builders import as_upstream

TAINTED = b.node("tainted", taints=[b.taint("maintenance")], labels={"pool": "main"})


def _plan(objs: list[dict[str, Any]], node_selector: str | None = None) -> Any:
    raw = policy_from_plugins([("RemovePodsViolatingNodeTaints", "deschedule", {})], {}, {})
    if node_selector:
        raw["nodeSelector"] = node_selector
    state = ClusterState([node_from_json(o) for o in objs if o["kind"] == "Node"],
                         [pod_from_json(o) for o in objs if o["kind"] == "Pod"])
    return run(as_upstream(decode_policy(raw, in_tree_registry(), "flags")), state, Scope())


def test_two_ready_nodes_run_the_plugins() -> None:
    plan = _plan([TAINTED, b.node("other"), b.pod("web", "tainted")])
    assert [c.pod.name for c in plan.candidates] == ["web"]
    assert plan.messages == []


def test_fewer_than_two_ready_nodes_run_nothing_and_say_why() -> None:
    plan = _plan([TAINTED, b.node("down", ready=False), b.pod("web", "tainted")])
    assert plan.candidates == []
    assert plan.messages == [("descheduler", FEW_NODES)]
    assert Verdicts(plan).of(plan.state.find_pod("default", "web")) == ("keep", f"descheduler: {FEW_NODES}")


def test_the_policy_node_selector_decides_the_count() -> None:
    objs = [TAINTED, b.node("other", labels={"pool": "batch"}), b.pod("web", "tainted")]
    assert _plan(objs, "pool=main").candidates == []
    assert [c.pod.name for c in _plan(objs, "pool in (main,batch)").candidates] == ["web"]


def test_a_node_without_a_ready_condition_counts_as_ready() -> None:
    silent = b.node("silent")
    silent["status"]["conditions"] = []
    plan = _plan([TAINTED, silent, b.pod("web", "tainted")])
    assert [c.pod.name for c in plan.candidates] == ["web"]
