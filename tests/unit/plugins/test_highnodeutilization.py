"""HighNodeUtilization through the real runner: the upstream behaviours, in our own fixtures."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_desched.errors import ConfigError
from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.framework.policy_decoder import decode_policy, policy_from_plugins
from kubectl_desched.plugins import in_tree_registry
from tests import builders as b

CPU_PODS_30 = {"thresholds": {"cpu": 30, "pods": 30}}


def plan_for(objs: list[dict[str, Any]], args: dict[str, Any] | None = None) -> EvictionPlan:
    return b.plan(b.state(objs), [("HighNodeUtilization", "balance", args or CPU_PODS_30)])


def evicted(plan: EvictionPlan) -> list[str]:
    return [c.pod.name for c in plan.candidates]


def _nodes(cpu: int = 4, third_unschedulable: bool = True) -> list[dict[str, Any]]:
    return [b.node("n1", cpu, "3000", 10), b.node("n2", cpu, "3000", 10),
            b.node("n3", cpu, "3000", 10, unschedulable=third_unschedulable)]


def test_empties_under_utilized_nodes_including_cordoned_ones() -> None:
    objs = [*_nodes(),
            b.pod("p1", "n1", "400m", "0"),
            b.pod("p2", "n1", "400m", "0", namespace="kube-system", priority=2000000000),
            *[b.pod(f"p{i}", "n2", "400m", "0") for i in range(3, 7)],
            b.pod("p7", "n3", "400m", "0")]
    plan = plan_for(objs)
    assert sorted(evicted(plan)) == ["p1", "p7"]  # n2 (40%) is the destination; the critical pod stays
    assert {r.klass for r in plan.node_reports["n3"]} == {"under-utilized"}
    assert plan.candidates[0].reason.startswith("node under-utilized: cpu 10%, pods 10%")


def test_stops_when_the_destinations_are_full() -> None:
    objs = [*_nodes(cpu=2), b.pod("p1", "n1", "400m", "0"),
            *[b.pod(f"p{i}", "n2", "400m", "0") for i in range(2, 6)], b.pod("p6", "n3", "400m", "0")]
    plan = plan_for(objs)
    assert evicted(plan) == ["p1"]  # n2 has 400m left: one pod fits, then cpu runs out
    note = plan.notes[id(next(p for p in plan.state.pods if p.name == "p6"))]
    assert note == (("HighNodeUtilization", "not moved: the other schedulable nodes have no cpu left"),)


def test_on_a_node_the_lowest_priority_goes_first() -> None:
    # n2 has 200m left, so only one of n1's pods can go: the lower-priority one.
    objs = [*_nodes(cpu=2), b.pod("a-high", "n1", "300m", "0", priority=100),
            b.pod("b-low", "n1", "300m", "0", priority=10), *[b.pod(f"p{i}", "n2", "600m", "0") for i in range(3)]]
    assert evicted(plan_for(objs)) == ["b-low"]


def test_nothing_to_do_cases() -> None:
    busy = [*_nodes(third_unschedulable=False), *[b.pod(f"p{i}{n}", n, "1600m", "0")
                                                 for n in ("n1", "n2", "n3") for i in range(1)]]
    plan = plan_for(busy)
    assert evicted(plan) == [] and plan.messages == [("HighNodeUtilization", "no node is under-utilized")]
    empty = plan_for(_nodes(third_unschedulable=False))
    assert empty.messages == [("HighNodeUtilization", "all nodes are under-utilized")]
    objs = [*_nodes(), b.pod("p1", "n1", "400m", "0"), *[b.pod(f"p{i}", "n2", "400m", "0") for i in range(2, 6)]]
    assert evicted(plan_for(objs, {**CPU_PODS_30, "numberOfNodes": 2})) == []


def test_only_thresholding_resources_mode_skips_pods_without_those_requests() -> None:
    objs = [*_nodes(), b.pod("besteffort", "n1", cpu="", memory=None), b.pod("p1", "n1", "400m", "0"),
            *[b.pod(f"p{i}", "n2", "400m", "0") for i in range(2, 6)]]
    plain = plan_for(objs)
    assert "besteffort" in evicted(plain)
    only = plan_for(objs, {**CPU_PODS_30, "evictionModes": ["OnlyThresholdingResources"]})
    assert "besteffort" not in evicted(only) and "p1" in evicted(only)


def test_pods_move_only_if_some_destination_tolerates_them() -> None:
    taint = [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]
    objs = [b.node("n1", 4, "3000", 10), b.node("n2", 4, "3000", 10, taints=taint),
            b.pod("plain", "n1", "400m", "0"),
            b.pod("tolerant", "n1", "400m", "0",
                  tolerations=[{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}]),
            *[b.pod(f"p{i}", "n2", "400m", "0", tolerations=[{"operator": "Exists"}]) for i in range(2, 6)]]
    plan = plan_for(objs)
    assert evicted(plan) == ["tolerant"]
    note = plan.notes[id(next(p for p in plan.state.pods if p.name == "plain"))]
    assert note == (("HighNodeUtilization", "not moved: no schedulable node tolerates its taints"),)


@pytest.mark.parametrize(("args", "path", "message"), [
    ({"thresholds": {}}, "thresholds", "no resource threshold is configured"),
    ({"thresholds": {"cpu": 120}}, "thresholds.cpu", "must be between 0 and 100"),
    ({**CPU_PODS_30, "evictableNamespaces": {"include": ["a"]}}, "evictableNamespaces.include", "only exclude"),
    ({**CPU_PODS_30, "evictionModes": ["Everything"]}, "evictionModes[0]", "must be one of OnlyThresholdingResources"),
    ({**CPU_PODS_30, "numberOfNodes": -1}, "numberOfNodes", "must not be negative"),
])
def test_args_are_validated_with_field_paths(args: dict[str, Any], path: str, message: str) -> None:
    raw = policy_from_plugins([("HighNodeUtilization", "balance", args)], {}, {})
    with pytest.raises(ConfigError) as err:
        decode_policy(raw, in_tree_registry(), "p.yaml")
    assert err.value.path == f"profiles[0].pluginConfig[1].args.{path}"
    assert message in err.value.message
