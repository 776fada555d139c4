"""LowNodeLoad (Koordinator) through the real runner. The scenarios restate the behaviours koord-descheduler's
own tests pin (counts of evicted pods for the same nodes, pods and thresholds), in our fixtures: node usage is
the NodeMetric's system usage plus its pods' usage, and here each pod's usage equals its requests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kubectl_desched.errors import ConfigError, DeschedError
from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.framework.policy_decoder import decode_policy, policy_from_plugins
from kubectl_desched.framework.runner import Scope, run
from kubectl_desched.model.objects import node_from_json, pod_from_json
from kubectl_desched.model.state import ClusterState
from kubectl_desched.plugins import in_tree_registry
from kubectl_desched.plugins.koordinator.classes import priority_class, qos_class, raw_allocatable
from kubectl_desched.ui.explain import Verdicts
from tests import builders as b
from tests.builders import as_upstream

LNL = "LowNodeLoad"
NOW = datetime(2026, 1, 1, 0, 1, tzinfo=UTC)  # NodeMetrics below were reported 60 s earlier
CRITICAL = 2_000_000_000
MIRROR = {"kubernetes.io/config.mirror": "mirror"}


def node(name: str, pods: int = 9, *, cpu: str = "4", memory: str = "3000", **kw: Any) -> dict[str, Any]:
    return b.node(name, cpu=cpu, memory=memory, pods=pods, **kw)


def usage_of(pod: dict[str, Any]) -> dict[str, str]:
    return dict(pod["spec"]["containers"][0]["resources"].get("requests") or {})


def metrics_for(objs: list[dict[str, Any]], *, updated: str | None = "2026-01-01T00:00:00Z",
                usage: dict[str, dict[str, str]] | None = None, system: dict[str, dict[str, str]] | None = None,
                skip: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """One NodeMetric per node, each pod's usage its requests unless `usage` names it."""
    out = []
    for n in (o for o in objs if o["kind"] == "Node"):
        name = n["metadata"]["name"]
        if name in skip:
            continue
        pods = [(p["metadata"]["namespace"], p["metadata"]["name"],
                 (usage or {}).get(p["metadata"]["name"], usage_of(p)))
                for p in objs if p["kind"] == "Pod" and p["spec"]["nodeName"] == name]
        out.append(b.koord_node_metric(name, system=(system or {}).get(name), pods=pods, updated=updated))
    return out


def plan_for(objs: list[dict[str, Any]], args: dict[str, Any], *, metrics: list[dict[str, Any]] | None = None,
             evictor_args: dict[str, Any] | None = None, limits: dict[str, int | None] | None = None,
             now: datetime = NOW) -> EvictionPlan:
    state = b.state(objs, extra={"NodeMetric": metrics_for(objs) if metrics is None else metrics}, now=now)
    return b.plan(state, [(LNL, "balance", args)], evictor_args=evictor_args, limits=limits)


def evicted(plan: EvictionPlan) -> list[str]:
    return [c.pod.name for c in plan.candidates]


def protected_pods(node_name: str = "n1") -> list[dict[str, Any]]:
    """A DaemonSet pod, a mirror pod with local storage, a system-critical pod: the DefaultEvictor keeps them."""
    return [
        b.pod("p6", node_name, "400m", owner="DaemonSet"),
        b.pod("p7", node_name, "400m", annotations=MIRROR, volumes=[{"name": "sample", "hostPath": {"path": "x"}}]),
        b.pod("p8", node_name, "400m", namespace="kube-system", priority=CRITICAL),
    ]


def standard(*movable: dict[str, Any], n2_pods: int = 10, n3: bool = True) -> list[dict[str, Any]]:
    """n1 (9 pods max) holds five movable pods and three protected ones; n2 one pod; n3 empty, unschedulable."""
    objs = [node("n1"), node("n2", n2_pods)]
    if n3:
        objs.append(node("n3", 10, unschedulable=True))
    pods = list(movable) or [b.pod(f"p{i}", "n1", "400m") for i in range(1, 6)]
    return objs + pods + protected_pods() + [b.pod("p9", "n2", "400m")]


CPU_PODS_30_50 = {"lowThresholds": {"cpu": 30, "pods": 30}, "highThresholds": {"cpu": 50, "pods": 50}}


# --- the behaviours koord-descheduler's tests pin --------------------------------------------------------------------


def test_nothing_moves_when_every_pod_on_the_hot_node_is_protected() -> None:
    objs = [node("n1"), node("n2", 10), node("n3", 10, unschedulable=True)]
    objs += [b.pod(f"p{i}", "n1", "400m", owner="DaemonSet") for i in range(1, 5)] + protected_pods()[1:]
    objs += [b.pod("p9", "n2", "400m")]
    assert evicted(plan_for(objs, CPU_PODS_30_50)) == []


def test_moves_until_the_destination_room_is_used_up() -> None:
    # n1: 8 x 400m = 80% cpu, 8/9 pods. n2 has 2000m - 400m of cpu and 5 - 1 pods of room: four pods.
    plan = plan_for(standard(), CPU_PODS_30_50)
    assert len(plan.candidates) == 4
    assert all(c.pod.node_name == "n1" for c in plan.candidates)


def test_excluded_namespace_pods_stay() -> None:
    movable = [b.pod(f"p{i}", "n1", "400m", namespace="namespace1") for i in range(1, 6)]
    args = {**CPU_PODS_30_50, "evictableNamespaces": {"exclude": ["namespace1"]}}
    plan = plan_for(standard(*movable), args)
    assert evicted(plan) == []
    p1 = plan.state.find_pod("namespace1", "p1")
    assert p1 is not None
    assert Verdicts(plan).of(p1)[1] == f"{LNL}: not moved: namespace namespace1 is not evictable (evictableNamespaces)"


def test_included_namespaces_only() -> None:
    movable = [b.pod("p1", "n1", "400m"), b.pod("p2", "n1", "400m")]
    movable += [b.pod(f"p{i}", "n1", "400m", namespace=f"namespace{i}") for i in (3, 4, 5)]
    args = {**CPU_PODS_30_50, "evictableNamespaces": {"include": ["default"]}}
    assert sorted(evicted(plan_for(standard(*movable), args))) == ["p1", "p2"]


def test_stops_when_the_destinations_run_out_of_memory() -> None:
    # Memory has no threshold, so it counts at 100%: n2 has 3000 - 2100 = 900 left, three 300-byte pods.
    movable = [b.pod(f"p{i}", "n1", "400m", memory="300") for i in range(1, 6)]
    objs = standard(*movable)
    objs[-1] = b.pod("p9", "n2", "400m", memory="2100")
    assert len(plan_for(objs, CPU_PODS_30_50).candidates) == 3


def test_lower_priority_goes_first() -> None:
    movable = [b.pod(f"p{i}", "n1", "400m", priority=10000) for i in range(1, 5)]
    movable.append(b.pod("p5", "n1", "400m", priority=0))
    # With 70% n1 is back under after one pod; every pod would fit n2, and the low-priority one goes.
    plan = plan_for(standard(*movable), {"lowThresholds": {"cpu": 30}, "highThresholds": {"cpu": 70}})
    assert evicted(plan) == ["p5"]


def test_the_fit_check_reserves_room_in_pod_order() -> None:
    """Like Koordinator, each pod that fits a destination keeps its usage counted there, before the pods are
    ordered: with room for four, the fifth pod listed stays even when it would go first."""
    movable = [b.pod(f"p{i}", "n1", "400m", priority=10000) for i in range(1, 5)]
    movable.append(b.pod("p5", "n1", "400m", priority=0))
    plan = plan_for(standard(*movable), CPU_PODS_30_50)
    assert evicted(plan) == ["p1", "p2", "p3", "p4"]


def test_best_effort_pods_go_first() -> None:
    movable = [b.pod(f"p{i}", "n1", None) for i in (1, 2)] + [b.pod("p3", "n1", "400m")]
    movable += [b.pod(f"p{i}", "n1", None) for i in (4, 5)]
    # n1 is over on pods (8/9) only; best-effort pods use nothing, so four go before n1 is back at 4/9.
    assert evicted(plan_for(standard(*movable), CPU_PODS_30_50)) == ["p1", "p2", "p4", "p5"]


def test_extended_resource_thresholds() -> None:
    gpu = "example.com/gpu"
    objs = [node("n1"), node("n2", 10), node("n3", 10, unschedulable=True)]
    for o in objs[:2]:
        o["status"]["allocatable"][gpu] = "8"
    for i in range(1, 10):
        p = b.pod(f"p{i}", "n1" if i < 9 else "n2", None, owner=None if i in (6, 7, 8) else "ReplicaSet")
        p["spec"]["containers"][0]["resources"] = {"requests": {gpu: "1"}}
        objs.append(p)
    args = {"lowThresholds": {"pods": 30, gpu: 30}, "highThresholds": {"pods": 50, gpu: 50}}
    # n2 may take three more gpus before it passes 50% of 8.
    assert len(plan_for(objs, args).candidates) == 3


def test_extended_resource_missing_on_some_nodes_means_nothing_is_high() -> None:
    gpu = "example.com/gpu"
    objs = [node("n1"), node("n2", 10), node("n3", 10, unschedulable=True)]
    objs[0]["status"]["allocatable"][gpu] = "8"
    p1 = b.pod("p1", "n1", None)
    p1["spec"]["containers"][0]["resources"] = {"requests": {gpu: "1"}}
    objs += [p1, b.pod("p9", "n2", None)]
    args = {"lowThresholds": {"pods": 30, gpu: 30}, "highThresholds": {"pods": 50, gpu: 50}}
    plan = plan_for(objs, args)
    assert evicted(plan) == []
    assert any("no node is above its high thresholds" in text for _p, text in plan.messages)


def test_no_destination_when_the_only_other_node_is_unschedulable() -> None:
    objs = [node("n1"), node("n2", 10, unschedulable=True)]
    objs += [b.pod(f"p{i}", "n1", "400m") for i in range(1, 6)] + protected_pods()
    plan = plan_for(objs, CPU_PODS_30_50)
    assert evicted(plan) == []
    assert any("no node is under its low thresholds" in text for _p, text in plan.messages)


@pytest.mark.parametrize("how", ["nodeSelector", "affinity"])
def test_pods_the_destination_does_not_match_stay(how: str) -> None:
    pinned: dict[str, Any]
    if how == "nodeSelector":
        pinned = {"nodeSelector": {"datacenter": "west"}}
    else:
        term = {"matchExpressions": [{"key": "datacenter", "operator": "In", "values": ["west"]}]}
        pinned = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term]}}}}
    movable = [b.pod(f"p{i}", "n1", "400m") for i in (1, 2, 3)]
    movable += [b.pod(f"p{i}", "n1", "400m", **pinned) for i in (4, 5)]
    objs = [node("n1"), node("n2", 10, labels={"datacenter": "east"}), *movable, *protected_pods()]
    objs.append(b.pod("p9", "n2", None))
    plan = plan_for(objs, CPU_PODS_30_50)
    assert sorted(evicted(plan)) == ["p1", "p2", "p3"]
    p4 = plan.state.find_pod("default", "p4")
    assert p4 is not None
    assert "no node under the low thresholds fits it" in Verdicts(plan).of(p4)[1]


def test_deviation_thresholds_are_relative_to_the_average() -> None:
    # Averages over n1..n3: cpu (80 + 10 + 0) / 3 = 30%, pods 33%; +-5 points. n2 takes two pods.
    args = {"useDeviationThresholds": True, "lowThresholds": {"cpu": 5, "pods": 5},
            "highThresholds": {"cpu": 5, "pods": 5}}
    plan = plan_for(standard(), args)
    assert len(plan.candidates) == 2
    assert plan.candidates[0].reason.startswith("node load above high threshold: cpu 80% > 35%")


PROD_ARGS = {"lowThresholds": {"cpu": 30, "pods": 30}, "highThresholds": {"cpu": 90, "pods": 90},
             "prodLowThresholds": {"cpu": 20, "pods": 20}, "prodHighThresholds": {"cpu": 40, "pods": 40}}


def test_prod_usage_over_its_thresholds_moves_prod_pods() -> None:
    batch = {"koordinator.sh/priority-class": "koord-batch"}
    movable = [b.pod("p1", "n1", "400m"), b.pod("p2", "n1", "400m")]
    movable += [b.pod(f"p{i}", "n1", "400m", labels=batch) for i in (3, 4, 5)]
    plan = plan_for(standard(*movable), PROD_ARGS)
    # n1 is under 90% but its prod pods use 5 x 400m = 50% > 40%: only prod pods move, two of them.
    assert sorted(evicted(plan)) == ["p1", "p2"]
    assert plan.candidates[0].reason.startswith("node prod usage above high threshold")
    assert plan.node_reports["n1"][0].klass == "prod over-utilized"


def test_node_over_its_thresholds_is_balanced_before_prod() -> None:
    batch = {"koordinator.sh/priority-class": "koord-batch"}
    movable = [b.pod(f"p{i}", "n1", "400m") for i in (1, 2, 3)]
    movable += [b.pod(f"p{i}", "n1", "400m", labels=batch) for i in (4, 5)]
    args = {**PROD_ARGS, "highThresholds": {"cpu": 70, "pods": 80}}
    plan = plan_for(standard(*movable), args)
    assert len(plan.candidates) == 1
    assert plan.candidates[0].reason.startswith("node load above high threshold")


def test_prod_only_rebalancing() -> None:
    args = {"lowThresholds": {"cpu": 0, "pods": 0}, "highThresholds": {"cpu": 100, "pods": 100},
            "prodLowThresholds": {"cpu": 30, "pods": 30}, "prodHighThresholds": {"cpu": 50, "pods": 50}}
    assert len(plan_for(standard(), args).candidates) == 4


def test_room_shared_between_node_and_prod_balancing() -> None:
    objs = [node("n1", 20), node("n2", 20), node("n3", 20)]
    objs += [b.pod(f"p{i}", "n1", "400m") for i in (1, 2, 3, 4, 5, 16, 17)] + protected_pods()
    objs += [b.pod("p9", "n2", "400m")] + [b.pod(f"p{i}", "n3", "400m") for i in range(10, 16)]
    args = {"lowThresholds": {"cpu": 30, "pods": 50}, "highThresholds": {"cpu": 60, "pods": 80},
            "prodLowThresholds": {"cpu": 20, "pods": 30}, "prodHighThresholds": {"cpu": 30, "pods": 50}}
    assert len(plan_for(objs, args).candidates) == 5


def test_prod_deviation_rebalancing() -> None:
    objs = [node("n1", 20), node("n2", 20), node("n3", 20)]
    objs += [b.pod(f"p{i}", "n1", "400m") for i in range(1, 6)] + protected_pods()
    objs += [b.pod("p9", "n2", "400m"), b.pod("p10", "n3", "400m"), b.pod("p11", "n3", "400m")]
    args = {"useDeviationThresholds": True, "lowThresholds": {"cpu": 0, "pods": 0},
            "highThresholds": {"cpu": 100, "pods": 100},
            "prodLowThresholds": {"cpu": 10, "pods": 10}, "prodHighThresholds": {"cpu": 10, "pods": 10}}
    assert len(plan_for(objs, args).candidates) == 3


def test_prod_eviction_stops_when_the_node_is_back_to_normal() -> None:
    objs = [node("n1", 20), node("n2", 20)]
    objs += [b.pod(f"p{i}", "n1", "400m") for i in range(1, 6)] + protected_pods() + [b.pod("p9", "n2", "400m")]
    args = {"lowThresholds": {"cpu": 0, "pods": 0}, "highThresholds": {"cpu": 100, "pods": 100},
            "prodLowThresholds": {"cpu": 60, "pods": 60}, "prodHighThresholds": {"cpu": 70, "pods": 70}}
    plan = plan_for(objs, args)
    assert len(plan.candidates) == 1
    kept = [p for p in plan.state.pods if p.name in ("p1", "p2", "p3", "p4", "p5") and p.name not in evicted(plan)]
    back = f"{LNL}: not moved: node is back under its prod high thresholds"
    assert [Verdicts(plan).of(p)[1] for p in kept] == [back] * 4


def test_total_limit_applies() -> None:
    assert len(plan_for(standard(), CPU_PODS_30_50, limits={"maxNoOfPodsToEvictTotal": 1}).candidates) == 1


# --- what a one-shot run adds: metric freshness, anomalyCondition, pools, selectors --------------------------------


def test_stale_or_missing_node_metrics_leave_the_node_out() -> None:
    objs = standard()
    fresh = metrics_for(objs, skip=("n1",))
    old = metrics_for([o for o in objs if o["kind"] != "Node" or o["metadata"]["name"] == "n1"],
                      updated="2025-12-31T23:00:00Z")
    plan = plan_for(objs, CPU_PODS_30_50, metrics=fresh + old)
    assert evicted(plan) == []
    (report,) = plan.node_reports["n1"]
    assert (report.klass, report.detail) == (
        "no load data", "its NodeMetric is 3660s old (nodeMetricExpirationSeconds 180)")
    plan = plan_for(objs, CPU_PODS_30_50, metrics=fresh)
    assert plan.node_reports["n1"][0].detail == "no NodeMetric for the node"
    plan = plan_for(objs, {**CPU_PODS_30_50, "nodeMetricExpirationSeconds": 7200}, metrics=fresh + old)
    assert len(plan.candidates) == 4


def test_system_usage_counts_towards_the_load() -> None:
    objs = [node("n1"), node("n2", 10)] + [b.pod(f"p{i}", "n1", "100m") for i in range(1, 4)] + \
        [b.pod("p9", "n2", "100m")]
    quiet = plan_for(objs, {"lowThresholds": {"cpu": 30}, "highThresholds": {"cpu": 50}})
    assert quiet.candidates == []
    busy = plan_for(objs, {"lowThresholds": {"cpu": 30}, "highThresholds": {"cpu": 50}},
                    metrics=metrics_for(objs, system={"n1": {"cpu": "2500m"}}))
    # 2500m of system usage keeps n1 over 50% whatever moves: every pod goes.
    assert evicted(busy) == ["p1", "p2", "p3"]
    assert busy.candidates[0].reason == "node load above high threshold: cpu 70% > 50%"


def test_a_run_is_one_observation_and_says_so() -> None:
    plan = plan_for(standard(), CPU_PODS_30_50)
    assert len(plan.candidates) == 4  # the default consecutiveAbnormalities 5 does not hold a one-shot run back
    assert any("consecutiveAbnormalities 5" in text and "one observation" in text for _p, text in plan.messages)
    once = plan_for(standard(), {**CPU_PODS_30_50, "anomalyCondition": {"consecutiveAbnormalities": 1}})
    assert not any("consecutiveAbnormalities" in text for _p, text in once.messages)


def test_paused_does_nothing() -> None:
    plan = plan_for(standard(), {**CPU_PODS_30_50, "paused": True})
    assert evicted(plan) == [] and (LNL, "paused: LowNodeLoad does nothing") in plan.messages


def test_pod_selectors_pick_the_movable_pods() -> None:
    movable = [b.pod(f"p{i}", "n1", "400m", labels={"app": "web" if i % 2 else "db"}) for i in range(1, 6)]
    args = {**CPU_PODS_30_50, "podSelectors": [{"name": "web", "selector": {"matchLabels": {"app": "web"}}}]}
    plan = plan_for(standard(*movable), args)
    assert sorted(evicted(plan)) == ["p1", "p3", "p5"]
    p2 = plan.state.find_pod("default", "p2")
    assert p2 is not None and Verdicts(plan).of(p2)[1] == f"{LNL}: not moved: not selected by podSelectors"


def test_without_node_fit_pods_move_without_a_destination_check() -> None:
    movable = [b.pod(f"p{i}", "n1", "400m", nodeSelector={"zone": "nowhere"}) for i in range(1, 6)]
    assert evicted(plan_for(standard(*movable), CPU_PODS_30_50)) == []
    assert len(plan_for(standard(*movable), {**CPU_PODS_30_50, "nodeFit": False}).candidates) == 4


def test_number_of_nodes() -> None:
    assert plan_for(standard(), {**CPU_PODS_30_50, "numberOfNodes": 1}).candidates == []


def test_node_pools_have_their_own_thresholds_and_take_each_node_once() -> None:
    objs = [node("a1", labels={"pool": "a"}), node("a2", 10, labels={"pool": "a"}),
            node("b1", labels={"pool": "b"}), node("b2", 10, labels={"pool": "b"})]
    for n in ("a1", "b1"):
        objs += [b.pod(f"{n}-p{i}", n, "400m") for i in range(1, 7)]  # 2400m = 60%
    objs += [b.pod("a2-p", "a2", "400m"), b.pod("b2-p", "b2", "400m")]
    args = {"lowThresholds": {"cpu": 30}, "highThresholds": {"cpu": 80},  # the first pool: every node, 80%
            "nodePools": [{"name": "strict-b", "nodeSelector": {"matchLabels": {"pool": "b"}},
                           "highThresholds": {"cpu": 50}}]}
    plan = plan_for(objs, args)
    assert {c.pod.node_name for c in plan.candidates} == {"b1"}
    assert plan.candidates[0].reason == "node load above high threshold (pool strict-b): cpu 60% > 50%"
    assert len(plan.candidates) == 1  # 2000m is 50%, not above


def test_a_node_balanced_by_one_pool_is_left_out_of_the_later_pools() -> None:
    objs = [node("a1", labels={"pool": "a"}), node("a2", 10, labels={"pool": "a"}), node("c1", 10)]
    objs += [b.pod(f"a1-p{i}", "a1", "400m") for i in range(1, 10)]  # 3600m = 90%, over the first pool's 80%
    objs += [b.pod("a2-p", "a2", "400m")]
    args = {"lowThresholds": {"cpu": 30}, "highThresholds": {"cpu": 80},
            "nodePools": [{"name": "strict-a", "nodeSelector": {"matchLabels": {"pool": "a"}},
                           "lowThresholds": {"cpu": 5}, "highThresholds": {"cpu": 50}}]}
    plan = plan_for(objs, args)
    assert {c.reason.split(":")[0] for c in plan.candidates} == {"node load above high threshold"}
    assert [r.detail for r in plan.node_reports["a2"]] == [
        "pool default: load cpu 10% (low-high cpu 30%-80%)",
        "pool strict-a: load cpu 10% (low-high cpu 5%-50%)"]
    assert len(plan.node_reports["a1"]) == 1  # not classified again by strict-a


def test_missing_node_metric_objects_stop_with_one_line() -> None:
    raw = policy_from_plugins([(LNL, "balance", CPU_PODS_30_50)], {}, {})
    policy = as_upstream(decode_policy(raw, in_tree_registry(), "flags"))
    assert policy.required_kinds() == {"NodeMetric"}
    objs = standard()
    state = ClusterState([node_from_json(o) for o in objs if o["kind"] == "Node"],
                         [pod_from_json(o) for o in objs if o["kind"] == "Pod"], now=NOW)
    with pytest.raises(DeschedError, match="LowNodeLoad needs NodeMetric objects"):
        run(policy, state, Scope())


@pytest.mark.parametrize("args, path, message", [
    ({"numberOfNodes": -1}, "numberOfNodes", "must be greater than or equal to 0"),
    ({"nodeMetricExpirationSeconds": 0}, "nodeMetricExpirationSeconds", "must be a positive"),
    ({"evictableNamespaces": {"include": ["a"], "exclude": ["b"]}}, "evictableNamespaces", "only one of"),
    ({"lowThresholds": {"cpu": -1}}, "lowThresholds.cpu", "must be greater than or equal to 0"),
    ({"lowThresholds": {"cpu": 60}, "highThresholds": {"cpu": 50}}, "lowThresholds.cpu", "greater than highThr"),
    ({"highThresholds": {"cpu": 50}, "prodHighThresholds": {"cpu": 60}}, "prodHighThresholds.cpu", "greater than"),
    ({"prodHighThresholds": {"cpu": 50}, "prodLowThresholds": {"cpu": 60}}, "prodLowThresholds.cpu", "greater"),
    ({"nodePools": [{"name": "x", "lowThresholds": {"memory": 90}, "highThresholds": {"memory": 10}}]},
     "nodePools[0].lowThresholds.memory", "greater than highThresholds"),
    ({"nodePools": [{"nodeSelector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}}]},
     "nodePools[0].nodeSelector", ""),
    ({"podSelectors": [{"name": "x", "selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}]},
     "podSelectors[0].selector", ""),
    ({"anomalyCondition": {"consecutiveAbnormalities": -1}}, "anomalyCondition.consecutiveAbnormalities", "greater"),
    ({"nodeFit": "yes"}, "nodeFit", "must be a boolean"),
])
def test_bad_args_name_the_field(args: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        plan_for(standard(), args)
    assert f"args.{path}: " in str(info.value) and message in str(info.value)


def test_weights_and_top_level_defaults_reach_the_pools() -> None:
    from kubectl_desched.framework.args import decode_args
    from kubectl_desched.plugins.koordinator.lownodeload import LowNodeLoadArgs
    args = decode_args(LowNodeLoadArgs, {"highThresholds": {"cpu": 70}, "lowThresholds": {"cpu": 20},
                                         "resourceWeights": {"cpu": 3, "memory": 0},
                                         "nodePools": [{"name": "gpu", "highThresholds": {"cpu": 90}}]}, "")
    first, gpu = args.pools()
    assert first.resource_weights == {"cpu": 3, "memory": 1}
    assert (gpu.high_thresholds, gpu.low_thresholds, gpu.resource_weights) == ({"cpu": 90}, {"cpu": 20},
                                                                               {"cpu": 3, "memory": 1})
    assert gpu.anomaly_condition is not None and gpu.anomaly_condition.consecutive_abnormalities == 5


# --- Koordinator's pod classes and node allocatable -------------------------------------------------------------


@pytest.mark.parametrize("labels, priority, cpu, limits, want_class, want_qos", [
    ({}, None, "100m", None, "koord-prod", "LS"),  # Burstable -> LS -> prod
    ({}, None, None, None, "koord-batch", "BE"),  # BestEffort -> BE -> batch
    ({}, None, "100m", {"cpu": "100m", "memory": "1Mi"}, "koord-prod", "LSR"),  # Guaranteed -> LSR
    ({}, 7500, "100m", None, "koord-mid", "LS"),  # the priority band wins over QoS
    ({}, 3500, "100m", None, "koord-free", "LS"),
    ({"koordinator.sh/priority-class": "koord-batch"}, 9500, "100m", None, "koord-batch", "LS"),
    ({"koordinator.sh/priority-class": "bogus"}, 9500, None, None, "koord-batch", "BE"),  # a bad label: QoS decides
    ({"koordinator.sh/qosClass": "BE"}, None, "100m", None, "koord-batch", "BE"),
])
def test_koordinator_classes(labels: dict[str, str], priority: int | None, cpu: str | None,
                             limits: dict[str, str] | None, want_class: str, want_qos: str) -> None:
    p = b.pod("p", "n1", cpu, memory="1Mi" if limits else None, labels=labels, priority=priority, limits=limits)
    pod = pod_from_json(p)
    assert (priority_class(pod), qos_class(pod)) == (want_class, want_qos)


def test_raw_allocatable_annotation_wins_and_bad_json_falls_back() -> None:
    n = b.node("n1", cpu="4")
    n["metadata"]["annotations"] = {"node.koordinator.sh/raw-allocatable": '{"cpu": "2", "memory": "1Gi"}'}
    assert raw_allocatable(node_from_json(n))["cpu"] == 2000
    n["metadata"]["annotations"] = {"node.koordinator.sh/raw-allocatable": "{not json"}
    assert raw_allocatable(node_from_json(n))["cpu"] == 4000


def test_pods_closest_to_the_excess_go_first() -> None:
    # n1 is 600m over 50%: of equal priority, the 600m pod matches the excess best, then the 1000m one.
    objs = [node("n1"), node("n2", 10)]
    objs += [b.pod("small", "n1", "200m"), b.pod("exact", "n1", "600m"), b.pod("big", "n1", "1000m"),
             b.pod("rest", "n1", "800m", owner="DaemonSet"), b.pod("p9", "n2", "100m")]
    plan = plan_for(objs, {"lowThresholds": {"cpu": 30}, "highThresholds": {"cpu": 50}})
    assert evicted(plan) == ["exact"]


def test_first_fit_finds_what_a_scan_of_every_destination_finds() -> None:
    """The pruned search must pick the same destination as Koordinator's scan, reservations included."""
    import random

    from kubectl_desched.plugins.koordinator.lownodeload import _FirstFit
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 40)
        rooms = [{"cpu": float(rng.randint(-200, 2000)), "memory": float(rng.randint(0, 5000))} for _ in range(n)]
        refused = {i for i in range(n) if rng.random() < 0.2}  # the fit check says no
        tree, scan = _FirstFit([dict(r) for r in rooms], ["cpu", "memory"]), [dict(r) for r in rooms]
        for _ in range(30):
            need = {"cpu": float(rng.randint(0, 600)), "memory": float(rng.randint(0, 1500))}
            want = next((i for i in range(n) if i not in refused and all(need[r] <= scan[i][r] for r in need)), None)
            got = tree.first(need, lambda i, no=refused: i not in no)
            assert got == want
            if got is not None:
                tree.take(got, need)
                for r in need:
                    scan[got][r] -= need[r]


def test_which_pods_fit_short_room_does_not_depend_on_the_order_of_the_source() -> None:
    """Pods that fit a destination keep their usage there, so with room for two pods the order pods are looked at
    decides which may move. Ours is namespace/name, the order the API lists them: a snapshot listing them otherwise
    gives the same candidates as the live cluster."""
    hot = [b.pod(f"p{i}", "n1", "400m", priority=i) for i in (1, 2, 3, 4)]
    objs = [node("n1"), node("n2", 10), *hot, b.pod("p9", "n2", "400m")]
    metrics = metrics_for(objs, system={"n1": {"cpu": "1800m"}, "n2": {"cpu": "600m"}})
    args = {"lowThresholds": {"cpu": 30}, "highThresholds": {"cpu": 45}, "anomalyCondition": {
        "consecutiveAbnormalities": 1}}
    # n1: 1800m + 1600m = 85%; n2: 1000m of its 1800m limit: room for two 400m pods.
    listed = evicted(plan_for(objs, args, metrics=metrics))
    reversed_ = evicted(plan_for([*objs[:2], *reversed(objs[2:])], args, metrics=metrics))
    assert listed == reversed_ == ["p1", "p2"]
