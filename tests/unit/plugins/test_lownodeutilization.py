"""LowNodeUtilization through the real runner: policy_from_plugins -> decode_policy -> run, with a Scope,
and the notes and node reports that explain reads."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.framework.policy_decoder import decode_policy, policy_from_plugins
from kubectl_desched.framework.runner import Scope, considered_nodes, run
from kubectl_desched.model.label_selectors import parse_selector
from kubectl_desched.model.objects import Pod
from kubectl_desched.model.state import ClusterState
from kubectl_desched.plugins import in_tree_registry
from kubectl_desched.term.color import Painter
from kubectl_desched.ui.explain import Verdicts, explain_node_doc, explain_node_text
from kubectl_desched.ui.plan_view import candidates_table, node_rows, nodes_table
from tests import builders as b
from tests.builders import as_upstream

LNU = "LowNodeUtilization"
CPU_ARGS = {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}}


def _state(objs: list[dict[str, Any]]) -> ClusterState:
    return b.state(objs)


def plan_for(objs: list[dict[str, Any]], lnu_args: dict[str, Any] | None = None, *,
             evictor_args: dict[str, Any] | None = None, limits: dict[str, int | None] | None = None,
             scope: Scope | None = None, respect_pdbs: bool = True, per_workload: int | None = None) -> EvictionPlan:
    raw = policy_from_plugins([(LNU, "balance", lnu_args or CPU_ARGS)], evictor_args or {}, limits or {})
    policy = as_upstream(decode_policy(raw, in_tree_registry(), "flags"))
    policy.limits.respect_pdbs = respect_pdbs
    policy.limits.per_workload = per_workload
    return run(policy, _state(objs), scope or Scope())


def evicted(plan: EvictionPlan) -> list[str]:
    return [c.pod.name for c in plan.candidates]


def pod(plan: EvictionPlan, name: str, namespace: str = "default") -> Pod:
    p = plan.state.find_pod(namespace, name)
    assert p is not None
    return p


def klass(plan: EvictionPlan, node: str) -> str:
    (report,) = [r for r in plan.node_reports[node] if r.plugin == LNU]
    return report.klass


def verdict(plan: EvictionPlan, name: str, namespace: str = "default") -> tuple[str, str]:
    return Verdicts(plan).of(pod(plan, name, namespace))


def _busy_node(name: str = "n1", count: int = 4, cpu: str = "1", **pod_kw: Any) -> list[dict[str, Any]]:
    """A 4-cpu node at count x cpu of requests, and the pods."""
    return [b.node(name, cpu="4"), *(b.pod(f"{name}-p{i}", name, cpu=cpu, **pod_kw) for i in range(count))]


# --- the worked example from the reference -------------------------------------------------------------------------


def _worked_example() -> list[dict[str, Any]]:
    objs = [b.node("n1", cpu="4", pods=9), b.node("n2", cpu="4", pods=10),
            b.node("n3", cpu="4", pods=10, unschedulable=True)]
    objs += [b.pod(f"p{i}", "n1", cpu="400m") for i in range(1, 6)]
    objs += [
        b.pod("ds", "n1", cpu="400m", owner="DaemonSet"),
        b.pod("mirror", "n1", cpu="400m", annotations={"kubernetes.io/config.mirror": "x"},
              volumes=[{"name": "host", "hostPath": {"path": "/x"}}, {"name": "scratch", "emptyDir": {}}]),
        b.pod("critical", "n1", cpu="400m", priority=2_000_000_000),
        b.pod("p9", "n2", cpu="400m"),
    ]
    return objs


WORKED_ARGS = {"thresholds": {"cpu": 30, "pods": 30}, "targetThresholds": {"cpu": 50, "pods": 50}}


def test_the_pods_a_node_keeps_once_back_under_share_one_note() -> None:
    """At 150,000 pods the kept pods' notes are tens of thousands: one text for all that a node keeps, one entry."""
    objs = [b.node("n1", cpu="4"), b.node("n2", cpu="4"), *(b.pod(f"p{i}", "n1", cpu="400m") for i in range(8))]
    plan = plan_for(objs, WORKED_ARGS)
    kept = [pod(plan, f"p{i}") for i in range(8) if f"p{i}" not in evicted(plan)]
    assert len(kept) == 5
    assert {id(plan.notes[id(p)][0]) for p in kept} == {id(plan.notes[id(kept[0])][0])}
    assert plan.notes[id(kept[0])] == ((LNU, "not moved: node is back under the target thresholds"),)


def test_worked_example_evicts_four() -> None:
    plan = plan_for(_worked_example(), WORKED_ARGS)
    assert evicted(plan) == ["p1", "p2", "p3", "p4"]
    assert all(c.plugin == LNU and c.profile == "kubectl-desched" for c in plan.candidates)
    assert plan.candidates[0].reason == "node over target: the node's cpu 80% > 50%, pods 88.9% > 50%"
    assert plan.candidates[3].reason == "node over target: the node's pods 55.6% > 50%"
    assert (klass(plan, "n1"), klass(plan, "n2"), klass(plan, "n3")) == ("over-utilized", "under-utilized",
                                                                         "unschedulable")
    assert plan.node_reports["n1"][0].detail == ("cpu 80%, pods 88.9% (under <= cpu 30%, pods 30%; "
                                                 "over > cpu 50%, pods 50%)")
    assert verdict(plan, "p5") == ("keep", "LowNodeUtilization: not moved: node is back under the target thresholds")
    assert verdict(plan, "ds") == ("keep", "protected: DaemonSet pod")
    assert verdict(plan, "mirror") == ("keep", "protected: mirror pod; local storage (hostPath host)")
    assert verdict(plan, "critical") == ("keep", "protected: system critical (priority 2000000000)")
    assert verdict(plan, "p1") == ("evict", "LowNodeUtilization: node over target: "
                                            "the node's cpu 80% > 50%, pods 88.9% > 50%")
    assert verdict(plan, "p9") == ("keep", "no enabled plugin selects it")
    assert plan.errors == [] and plan.messages == []


def test_worked_example_with_node_eviction_limit() -> None:
    plan = plan_for(_worked_example(), {**WORKED_ARGS, "evictionLimits": {"node": 2}})
    assert evicted(plan) == ["p1", "p2"]
    for name in ("p3", "p4", "p5"):
        assert verdict(plan, name) == ("keep", "LowNodeUtilization: not moved: evictionLimits.node (2) reached")


def test_worked_example_needs_memory_allocatable() -> None:
    """cpu, memory and pods are always tracked: a destination without memory allocatable has no memory headroom."""
    objs = _worked_example()
    for o in objs:
        if o["kind"] == "Node":
            del o["status"]["allocatable"]["memory"]
            del o["status"]["capacity"]["memory"]
    plan = plan_for(objs, WORKED_ARGS)
    assert evicted(plan) == []
    assert verdict(plan, "p1") == ("keep", "LowNodeUtilization: not moved: under-utilized nodes have no memory left "
                                           "below their targets")


def test_destination_headroom_runs_out() -> None:
    objs = [b.node("n1", pods=9), b.node("n2", pods=10)]
    objs += [b.pod(f"src-{i}", "n1", cpu="10m") for i in range(9)]
    objs += [b.pod(f"dst-{i}", "n2", cpu="10m") for i in range(4)]
    # n2: 4/10 pods = 40% <= 45 -> under; room for int(50% of 10) - 4 = 1 more pod
    plan = plan_for(objs, {"thresholds": {"pods": 45}, "targetThresholds": {"pods": 50}})
    assert evicted(plan) == ["src-0"]
    assert verdict(plan, "src-1") == ("keep", "LowNodeUtilization: not moved: under-utilized nodes have no pods left "
                                              "below their targets")


# --- classification ----------------------------------------------------------------------------------------------


def test_deviation_thresholds() -> None:
    # cpu usage 10%, 20%, 90%: average 40% -> under <= 40-10 = 30%, over > 40+10 = 50%
    objs = [b.node("low1", cpu="10"), b.pod("l1", "low1", cpu="1"),
            b.node("low2", cpu="10"), b.pod("l2", "low2", cpu="2"),
            b.node("high", cpu="10"), *(b.pod(f"h{i}", "high", cpu="1") for i in range(9))]
    args = {"thresholds": {"cpu": 10}, "targetThresholds": {"cpu": 10}, "useDeviationThresholds": True}
    plan = plan_for(objs, args)
    assert (klass(plan, "low1"), klass(plan, "low2"), klass(plan, "high")) == ("under-utilized", "under-utilized",
                                                                               "over-utilized")
    assert "(under <= cpu 30%; over > cpu 50%)" in plan.node_reports["high"][0].detail
    assert evicted(plan) == ["h0", "h1", "h2", "h3"]  # 90% -> 50%


def test_deviation_thresholds_clamp_and_may_exceed_targets() -> None:
    objs = [b.node("a", cpu="10"), b.node("c", cpu="10"), *(b.pod(f"c{i}", "c", cpu="1") for i in range(6))]
    # average 30%: under <= clamp(30-50) = 0%, over > 30+5 = 35%
    plan = plan_for(objs, {"thresholds": {"cpu": 50}, "targetThresholds": {"cpu": 5}, "useDeviationThresholds": True})
    assert "(under <= cpu 0%; over > cpu 35%)" in plan.node_reports["a"][0].detail
    assert (klass(plan, "a"), klass(plan, "c")) == ("under-utilized", "over-utilized")
    assert evicted(plan) == ["c0", "c1", "c2"]


@pytest.mark.parametrize(("number_of_nodes", "moves"), [(0, True), (1, False), (2, False)])
def test_number_of_nodes(number_of_nodes: int, moves: bool) -> None:
    objs = [b.node("empty"), *_busy_node()]
    plan = plan_for(objs, {**CPU_ARGS, "numberOfNodes": number_of_nodes})
    assert bool(evicted(plan)) is moves
    if not moves:
        text = f"1 under-utilized node(s), not more than numberOfNodes {number_of_nodes}"
        assert plan.messages == [(LNU, text)]
        assert verdict(plan, "n1-p0") == ("keep", f"LowNodeUtilization: not moved: {text}")


def test_no_under_utilized_nodes() -> None:
    objs = [*_busy_node("n1"), *_busy_node("n2", count=2)]
    plan = plan_for(objs)
    assert evicted(plan) == []
    assert plan.messages == [(LNU, "no node is under-utilized")]
    assert (klass(plan, "n1"), klass(plan, "n2")) == ("over-utilized", "appropriately utilized")
    assert verdict(plan, "n1-p0") == ("keep", "LowNodeUtilization: not moved: no node is under-utilized")
    assert verdict(plan, "n2-p0") == ("keep", "no enabled plugin selects it")


def test_all_nodes_under_utilized() -> None:
    objs = [b.node("n1"), b.node("n2"), b.pod("a", "n1", cpu="100m")]
    plan = plan_for(objs)
    assert evicted(plan) == []
    assert plan.messages == [(LNU, "all nodes are under-utilized")]


def test_no_over_utilized_node() -> None:
    objs = [b.node("empty"), *_busy_node(count=2)]
    plan = plan_for(objs)
    assert evicted(plan) == []
    assert plan.messages == [(LNU, "no node is above the target thresholds")]
    assert klass(plan, "n1") == "appropriately utilized"


def test_unschedulable_node_is_not_a_destination() -> None:
    objs = [b.node("cordoned", unschedulable=True), *_busy_node()]
    plan = plan_for(objs)
    assert evicted(plan) == []
    assert klass(plan, "cordoned") == "unschedulable"
    assert plan.messages == [(LNU, "no node is under-utilized")]


def test_not_ready_nodes_are_not_considered() -> None:
    objs = [b.node("broken", ready=False), *_busy_node()]
    plan = plan_for(objs)
    assert "broken" not in plan.node_reports
    assert evicted(plan) == []


def test_terminal_pods_do_not_count() -> None:
    objs = [b.node("empty"), *_busy_node(count=2), b.pod("done", "n1", cpu="3", phase="Succeeded")]
    plan = plan_for(objs)
    assert klass(plan, "n1") == "appropriately utilized"
    assert evicted(plan) == []


# --- destinations and namespaces ---------------------------------------------------------------------------------


def test_pod_not_tolerating_any_destination_taint_is_skipped() -> None:
    gpu_taint = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
    tolerates = [{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    objs = [b.node("gpu", taints=[gpu_taint]), b.node("n1", cpu="4"),
            b.pod("plain", "n1", cpu="1"), b.pod("plain2", "n1", cpu="1"),
            b.pod("tolerant", "n1", cpu="1", tolerations=tolerates), b.pod("zzz", "n1", cpu="1")]
    plan = plan_for(objs)
    assert evicted(plan) == ["tolerant"]  # the only pod that fits the tainted destination
    assert verdict(plan, "plain") == ("keep", "LowNodeUtilization: not moved: no under-utilized node tolerates "
                                              "its taints")
    assert verdict(plan, "zzz") == ("keep", "LowNodeUtilization: not moved: no under-utilized node tolerates "
                                            "its taints")


def test_with_one_tolerable_destination_pods_move() -> None:
    objs = [b.node("gpu", taints=[{"key": "gpu", "effect": "NoSchedule"}]), b.node("free"), *_busy_node()]
    plan = plan_for(objs)
    assert evicted(plan) == ["n1-p0", "n1-p1"]


def test_evictable_namespaces_exclude() -> None:
    # the excluded namespace sorts first, so its pods are looked at (and skipped) before the others move
    objs = [b.node("empty"), b.node("n1", cpu="4"),
            b.pod("sys-0", "n1", cpu="1", namespace="infra"), b.pod("sys-1", "n1", cpu="1", namespace="infra"),
            b.pod("app-0", "n1", cpu="1", namespace="shop"), b.pod("app-1", "n1", cpu="1", namespace="shop")]
    plan = plan_for(objs, {**CPU_ARGS, "evictableNamespaces": {"exclude": ["infra"]}})
    assert evicted(plan) == ["app-0", "app-1"]
    for name in ("sys-0", "sys-1"):
        assert verdict(plan, name, "infra") == (
            "keep", "LowNodeUtilization: not moved: namespace infra is in evictableNamespaces.exclude")


# --- order and limits ----------------------------------------------------------------------------------------------


def test_eviction_order_priority_then_qos() -> None:
    guaranteed = {"cpu": "100m", "memory": "10Mi"}
    objs = [
        b.node("dest", pods=100), b.node("src", pods=5),
        b.pod("e-prio10", "src", cpu="100m", priority=10),
        b.pod("b-prio5-guaranteed", "src", cpu="100m", memory="10Mi", priority=5, limits=guaranteed),
        b.pod("d-prio5-burstable", "src", cpu="100m", priority=5),
        b.pod("c-prio5-besteffort", "src", cpu="", priority=5),
        b.pod("z-no-priority", "src", cpu="100m"),
    ]
    plan = plan_for(objs, {"thresholds": {"pods": 5}, "targetThresholds": {"pods": 10}})
    assert [p.qos for p in (pod(plan, "b-prio5-guaranteed"), pod(plan, "c-prio5-besteffort"))] == [
        "Guaranteed", "BestEffort"]
    assert evicted(plan) == ["z-no-priority", "c-prio5-besteffort", "d-prio5-burstable", "b-prio5-guaranteed",
                             "e-prio10"]


def test_prefer_no_eviction_pods_go_last_among_equals_whatever_the_policy() -> None:
    prefer = {"descheduler.alpha.kubernetes.io/prefer-no-eviction": ""}
    objs = [b.node("dest", pods=100), b.node("src", pods=4),
            b.pod("a-annotated", "src", cpu="100m", annotations=prefer),
            b.pod("b-plain", "src", cpu="100m"), b.pod("c-plain", "src", cpu="100m")]
    plan = plan_for(objs, {"thresholds": {"pods": 5}, "targetThresholds": {"pods": 50}})
    assert evicted(plan) == ["b-plain"]  # 3 of 4 pods is 75%; one eviction brings src to 50%


def test_busiest_source_goes_first() -> None:
    objs = [b.node("empty"), *_busy_node("a", count=3), *_busy_node("b", count=4)]
    plan = plan_for(objs, limits={"maxNoOfPodsToEvictTotal": 1})
    assert evicted(plan) == ["b-p0"]


@pytest.mark.parametrize(
    ("limits", "expected", "note"),
    [
        ({"maxNoOfPodsToEvictPerNode": 1}, ["a-p0", "b-p2"], "maxNoOfPodsToEvictPerNode (1) reached on a"),
        ({"maxNoOfPodsToEvictTotal": 3}, ["a-p0", "a-p1", "b-p2"], "maxNoOfPodsToEvictTotal (3) reached"),
        ({"maxNoOfPodsToEvictPerNamespace": 1}, ["a-p0", "a-p2"], "maxNoOfPodsToEvictPerNamespace (1) reached in x"),
        ({"maxNoOfPodsToEvictTotal": 0}, [], "maxNoOfPodsToEvictTotal (0) reached"),
        ({"maxNoOfPodsToEvictPerNode": 0}, [], "maxNoOfPodsToEvictPerNode (0) reached on a"),
        ({"maxNoOfPodsToEvictPerNamespace": 0}, [], "maxNoOfPodsToEvictPerNamespace (0) reached in x"),
    ],
)
def test_global_limits(limits: dict[str, int], expected: list[str], note: str) -> None:
    # two equally busy sources (a goes first by name), each needing two moves; on a, p0 and p1 are in
    # namespace x; on b, p2 and p3 are (and go first: pods are taken in namespace/name order)
    objs = [b.node("e1"), b.node("e2")]
    for node in ("a", "b"):
        objs.append(b.node(node, cpu="4"))
        objs += [b.pod(f"{node}-p{i}", node, cpu="1", namespace="x" if (i < 2) == (node == "a") else "y")
                 for i in range(4)]
    plan = plan_for(objs, limits=limits)
    assert evicted(plan) == expected
    notes = [text for texts in plan.notes.values() for _plugin, text in texts]
    assert any(note in text for text in notes), notes


def test_limits_without_limits_evict_from_both() -> None:
    objs = [b.node("e1"), b.node("e2"), *_busy_node("a"), *_busy_node("b")]
    assert evicted(plan_for(objs)) == ["a-p0", "a-p1", "b-p0", "b-p1"]


# --- scope -------------------------------------------------------------------------------------------------------


def _two_namespaces() -> list[dict[str, Any]]:
    return [b.node("empty"), b.node("n1", cpu="4"),
            b.pod("a0", "n1", cpu="1", namespace="a", labels={"app": "web"}),
            b.pod("a1", "n1", cpu="1", namespace="a", labels={"app": "db"}),
            b.pod("b0", "n1", cpu="1", namespace="b", labels={"app": "web"}),
            b.pod("b1", "n1", cpu="1", namespace="b", labels={"app": "web"})]


def test_scope_namespaces_keep_other_pods_out_but_counted() -> None:
    plan = plan_for(_two_namespaces(), scope=Scope(namespaces={"b"}))
    assert evicted(plan) == ["b0", "b1"]
    assert plan.node_reports["n1"][0].detail.startswith("cpu 100%")  # namespace a's pods still count
    assert verdict(plan, "a0", "a") == ("keep", "protected: namespace a not in scope (-n b)")


def test_scope_namespaces_limit_what_can_move() -> None:
    plan = plan_for(_two_namespaces(), scope=Scope(namespaces={"a"}, excluded_namespaces=set()))
    assert evicted(plan) == ["a0", "a1"]
    plan = plan_for(_two_namespaces(), {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 30}},
                    scope=Scope(namespaces={"a"}))
    assert evicted(plan) == ["a0", "a1"]  # would need three moves; only two pods are in scope


def test_scope_excluded_namespaces() -> None:
    plan = plan_for(_two_namespaces(), scope=Scope(excluded_namespaces={"a"}))
    assert evicted(plan) == ["b0", "b1"]
    assert verdict(plan, "a1", "a") == ("keep", "protected: namespace a excluded (--exclude-namespace)")


def test_scope_pod_selector() -> None:
    scope = Scope(pod_selector=parse_selector("app=web"), pod_selector_text="app=web")
    plan = plan_for(_two_namespaces(), scope=scope)
    assert evicted(plan) == ["a0", "b0"]
    assert verdict(plan, "a1", "a") == ("keep", "protected: labels do not match -l app=web")


def test_scope_nodes() -> None:
    objs = [b.node("empty"), b.node("other-empty"), *_busy_node()]
    scope = Scope(node_names={"n1", "empty"})
    raw = policy_from_plugins([(LNU, "balance", CPU_ARGS)], {}, {})
    policy = as_upstream(decode_policy(raw, in_tree_registry(), "flags"))
    state = _state(objs)
    assert [n.name for n in considered_nodes(state, policy, scope)] == ["empty", "n1"]
    plan = run(policy, state, scope)
    assert set(plan.node_reports) == {"empty", "n1"}
    assert evicted(plan) == ["n1-p0", "n1-p1"]
    # without the busy node in scope there is nothing to move
    plan = plan_for(objs, scope=Scope(node_names={"empty", "other-empty"}))
    assert evicted(plan) == []
    assert plan.messages == [(LNU, "all nodes are under-utilized")]


def test_scope_node_selector() -> None:
    objs = [b.node("empty", labels={"pool": "x"}), b.node("n1", cpu="4", labels={"pool": "y"}),
            *(b.pod(f"p{i}", "n1", cpu="1") for i in range(4))]
    plan = plan_for(objs, scope=Scope(node_selector=parse_selector("pool=x")))
    assert evicted(plan) == []
    assert set(plan.node_reports) == {"empty"}


# --- PDB warnings and explain --------------------------------------------------------------------------------------


def test_pdb_refusal_keeps_the_pod_and_the_plugin_takes_the_next() -> None:
    """As upstream's real run: the 429 for p1 does not count, LowNodeUtilization goes on to p2."""
    objs = [b.node("empty"), b.node("n1", cpu="4"), b.pdb("guard", {"app": "guarded"}, allowed=0),
            *(b.pod(f"n1-p{i}", "n1", cpu="1", labels={"app": "guarded" if i == 1 else "web"}) for i in range(4))]
    plan = plan_for(objs)
    assert evicted(plan) == ["n1-p0", "n1-p2"]
    assert all(c.warnings == [] and c.pdb_refusals == [] for c in plan.candidates)
    kind, why = verdict(plan, "n1-p1")
    assert kind == "keep" and "but kept: PodDisruptionBudget guard allows no disruption, the API would refuse" in why
    assert evicted(plan_for(objs, respect_pdbs=False)) == ["n1-p0", "n1-p1"]  # upstream's dry run


def test_pdb_budget_is_spent_by_the_candidates_planned_before() -> None:
    objs = [b.node("empty"), *_busy_node(labels={"app": "web"}), b.pdb("web", {"app": "web"}, allowed=1)]
    plan = plan_for(objs)
    assert evicted(plan) == ["n1-p0"]  # the budget of 1 is spent: p1, p2 and p3 would be refused
    # the budget as the controller reports it, and that this plan's own earlier pod took it
    assert "PodDisruptionBudget web allows 1 disruption(s), all taken by the 1 pod(s) planned before it, the API " \
        "would refuse" in verdict(plan, "n1-p3")[1]


def test_max_per_workload_caps_one_controller() -> None:
    objs = [b.node("empty"), b.node("n1", cpu="4"),
            *(b.pod(f"n1-p{i}", "n1", cpu="1", owner_name="web" if i < 3 else "api") for i in range(4))]
    plan = plan_for(objs, per_workload=1)
    assert evicted(plan) == ["n1-p0", "n1-p3"]
    assert "--max-per-workload (1) reached for ReplicaSet default/web" in verdict(plan, "n1-p1")[1]


def test_pdb_without_budget_warns_on_the_candidate() -> None:
    objs = [b.node("empty"), *_busy_node(labels={"app": "web"}), b.pdb("web", {"app": "web"}, allowed=1)]
    plan = plan_for(objs, respect_pdbs=False)
    assert evicted(plan) == ["n1-p0", "n1-p1"]
    assert plan.candidates[0].warnings == []
    warning = ("PodDisruptionBudget web allows 1 disruption(s), all taken by the 1 pod(s) planned before it, "
               "eviction will be refused")
    assert plan.candidates[1].warnings == [warning]
    kind, why = verdict(plan, "n1-p1")
    assert kind == "evict" and why.endswith(f" [warning: {warning}]")


def test_pdb_not_yet_observed_warns() -> None:
    budget = b.pdb("web", {"app": "web"}, allowed=5)
    budget["metadata"]["generation"] = 2
    objs = [b.node("empty"), *_busy_node(labels={"app": "web"}), budget]
    assert evicted(plan_for(objs)) == []  # the API refuses while the budget's status is not observed
    plan = plan_for(objs, respect_pdbs=False)
    assert plan.candidates[0].warnings == [
        "PodDisruptionBudget web: status not yet observed, eviction will be refused"]


def test_explain_node_document_and_text() -> None:
    objs = [b.node("empty"), *_busy_node(count=3), b.pod("ds", "n1", cpu="1", owner="DaemonSet"),
            b.pod("done", "n1", cpu="1", phase="Succeeded")]
    plan = plan_for(objs)
    node = plan.state.nodes["n1"]
    doc = explain_node_doc(plan, node, considered=True)
    assert doc["node"] == "n1"
    assert doc["status"] == "Ready; schedulable"
    assert doc["plugins"] == [{"plugin": LNU, "class": "over-utilized",
                               "detail": "cpu 100% (under <= cpu 20%; over > cpu 50%)"}]
    rows = {p["pod"]: (p["verdict"], p["why"]) for p in doc["pods"]}
    assert rows["ds"] == ("keep", "protected: DaemonSet pod")
    assert rows["n1-p0"][0] == "evict" and rows["n1-p1"][0] == "evict"
    assert rows["n1-p2"] == ("keep", "LowNodeUtilization: not moved: node is back under the target thresholds")
    assert rows["done"][0] == "keep"
    assert rows["done"][1].startswith("phase Succeeded: already finished, no enabled plugin selects it")
    text = explain_node_text(doc)
    assert text.splitlines()[0] == "Node n1: Ready; schedulable"
    assert "LowNodeUtilization: over-utilized: cpu 100%" in text
    assert any(line.split()[:3] == ["default", "ds", "KEEP"] for line in text.splitlines())


def test_explain_node_not_considered() -> None:
    objs = [b.node("cordoned", unschedulable=True, taints=[{"key": "k", "effect": "NoSchedule"}]), b.node("empty")]
    plan = plan_for(objs, scope=Scope(node_names={"empty"}))
    doc = explain_node_doc(plan, plan.state.nodes["cordoned"], considered=False)
    assert doc["status"] == ("Ready; unschedulable; taints k:NoSchedule; not considered (not Ready or outside "
                             "the node selection)")
    assert "no plugin classified this node" in explain_node_text(doc)
    assert "No pods on this node." in explain_node_text(doc)


# --- profiles ------------------------------------------------------------------------------------------------------


def _two_profile_policy(second_target: int) -> dict[str, Any]:
    def profile(name: str, target: int) -> dict[str, Any]:
        args = {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": target}}
        return {"name": name, "pluginConfig": [{"name": LNU, "args": args}], "plugins": {"balance": {"enabled": [LNU]}}}
    return {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy",
            "profiles": [profile("first", 50), profile("second", second_target)]}


def test_evictions_of_one_profile_are_seen_by_the_next() -> None:
    objs = [b.node("empty"), *_busy_node()]
    policy = as_upstream(decode_policy(_two_profile_policy(50), in_tree_registry(), "two.yaml"))
    plan = run(policy, _state(objs), Scope())
    assert evicted(plan) == ["n1-p0", "n1-p1"]  # not four: the second profile sees n1 at 50%
    assert {c.profile for c in plan.candidates} == {"first"}
    second_report = plan.node_reports["n1"][1]
    assert (second_report.klass, second_report.detail.split(" (")[0]) == ("appropriately utilized", "cpu 50%")


def test_second_profile_moves_other_pods() -> None:
    objs = [b.node("empty"), *_busy_node()]
    policy = as_upstream(decode_policy(_two_profile_policy(25), in_tree_registry(), "two.yaml"))
    plan = run(policy, _state(objs), Scope())
    assert [(c.pod.name, c.profile) for c in plan.candidates] == [("n1-p0", "first"), ("n1-p1", "first"),
                                                                   ("n1-p2", "second")]
    assert len({id(c.pod) for c in plan.candidates}) == 3



# --- whole workloads ------------------------------------------------------------------------------------------------


def _replicas(ready_count: int, total: int = 4, **kw: Any) -> list[dict[str, Any]]:
    """n1 at 100% cpu with `total` pods of ReplicaSet web (the first `ready_count` Ready); LowNodeUtilization
    takes two of them (100% -> 50%)."""
    return [b.node("empty"), b.node("n1", cpu="4"),
            *(b.ready(b.pod(f"n1-p{i}", "n1", cpu="1", owner_name="web", labels={"app": "web"}, **kw),
                      i < ready_count) for i in range(total))]


def test_losing_more_than_half_of_a_workloads_ready_pods_warns() -> None:
    plan = plan_for(_replicas(3))  # p0 and p1 are planned, both ready: 2 of 3 ready pods
    assert evicted(plan) == ["n1-p0", "n1-p1"]
    text = ("ReplicaSet default/web would lose 2 of its 3 ready pods and no PodDisruptionBudget guards it: "
            "consider --wait-ready or --max-per-workload")
    assert [c.warnings for c in plan.candidates] == [[text], [text]]


def test_half_or_less_or_a_pdb_is_no_warning() -> None:
    assert all(c.warnings == [] for c in plan_for(_replicas(4)).candidates)  # 2 of 4: half, not more
    guarded = plan_for([*_replicas(3), b.pdb("web", {"app": "web"}, allowed=5)])
    assert evicted(guarded) == ["n1-p0", "n1-p1"] and all(c.warnings == [] for c in guarded.candidates)
    capped = plan_for(_replicas(3), per_workload=1)  # the suggested cap: one pod of the three
    assert evicted(capped) == ["n1-p0"] and capped.candidates[0].warnings == []


# --- terminating pods -----------------------------------------------------------------------------------------------


def test_a_node_over_only_because_of_terminating_pods_is_named() -> None:
    """Right after an eviction its pods are terminating and still counted: the re-run says so, per node."""
    objs = [b.node("empty"), b.node("n1", cpu="4"), *(b.pod(f"n1-p{i}", "n1", cpu="1") for i in range(2)),
            *(b.terminating(b.pod(f"n1-old{i}", "n1", cpu="1")) for i in range(2))]
    plan = plan_for(objs)
    assert ("LowNodeUtilization", "node n1 is over-utilized only because of its 2 terminating pod(s), counted until "
            "they are gone as upstream counts them; without them cpu 50%") in plan.messages
    assert verdict(plan, "n1-old0") == ("keep", "terminating: already being deleted "
                                                "(still counted on its node until it is gone)")
    rows = {r["name"]: r for r in node_rows(plan, list(plan.state.nodes.values()))}
    assert rows["n1"]["terminating"] == 2 and rows["empty"]["terminating"] == 0
    table, _hidden = nodes_table(list(rows.values()), Painter(False))
    assert table.splitlines()[0].split()[-1] == "TERMINATING"
    over = plan_for([b.node("empty"), *_busy_node(count=4), b.terminating(b.pod("old", "n1", cpu="1"))])
    assert not any("terminating" in m for _p, m in over.messages)  # over target with or without it: no note


def test_one_warning_for_many_candidates_is_listed_once() -> None:
    plan = plan_for(_replicas(3))
    text = candidates_table(plan)
    assert text.count("would lose 2 of its 3 ready pods") == 1
    assert "[1] default/n1-p0, default/n1-p1: ReplicaSet default/web would lose" in text
