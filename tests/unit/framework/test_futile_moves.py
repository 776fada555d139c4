"""The default plan keeps a pod whose move would change nothing (framework/plan.py, EvictionPlan.futility), and the
plugin goes on to its next pod; --keep-futile plans it as upstream does, with why as a warning and as data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubectl_desched.cli.main import cli
from kubectl_desched.framework.placement import Destination
from kubectl_desched.framework.plan import EvictionPlan, Limits
from kubectl_desched.framework.policy_decoder import decode_policy, policy_from_plugins
from kubectl_desched.framework.runner import Scope, run
from kubectl_desched.plugins import in_tree_registry
from tests import builders as b

LNU = "LowNodeUtilization"
CPU = {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}}
ZONE = "topology.kubernetes.io/zone"


def plan_of(objs: list[dict[str, Any]], plugins: list[tuple[str, str, dict[str, Any]]], *,
            keep_futile: bool = False) -> EvictionPlan:
    policy = decode_policy(policy_from_plugins(plugins, {}, {}), in_tree_registry(), "flags")
    policy.limits.keep_futile = keep_futile
    return run(policy, b.state(objs), Scope())


def kept(plan: EvictionPlan) -> dict[str, str]:
    return {pod.name: why for pod, _plugin, why in plan.kept_futile.values()}


def pinned_cluster() -> list[dict[str, Any]]:
    """hot (zone a) is over target; cold (zone b) nearly empty. `pinned` may only run in zone a, so its
    replacement can only come back to hot; `loose` can go anywhere."""
    return [b.node("hot", labels={ZONE: "a"}), b.node("cold", labels={ZONE: "b"}),
            b.pod("pinned", "hot", cpu="1", priority=0, nodeSelector={ZONE: "a"}),
            b.pod("loose", "hot", cpu="1", priority=10), b.pod("big", "hot", cpu="1", priority=20),
            b.pod("small", "cold", cpu="100m")]


def test_a_pod_that_would_land_back_is_kept_and_the_plugin_moves_on() -> None:
    plan = plan_of(pinned_cluster(), [(LNU, "balance", CPU)])
    # pinned goes first (lowest priority) but can only come back to hot: kept; loose takes its place
    assert kept(plan) == {"pinned": "would land back on hot"}
    assert [c.pod.name for c in plan.candidates] == ["loose"]
    dest = plan.placement.of(plan.candidates[0]) if plan.placement else None
    assert dest is not None and (dest.node, dest.tied) == ("cold", ("cold",))
    pinned = plan.state.find_pod("default", "pinned")
    assert pinned is not None
    assert plan.notes[id(pinned)][-1] == (LNU, "selected (node over target: the node's cpu 75% > 50%) but kept: the "
                                               "move would change nothing: would land back on hot")


def test_keep_futile_plans_it_as_upstream_with_the_reason_as_a_warning() -> None:
    plan = plan_of(pinned_cluster(), [(LNU, "balance", CPU)], keep_futile=True)
    assert [c.pod.name for c in plan.candidates] == ["pinned"]  # hot is back under 50% after one move
    c = plan.candidates[0]
    assert c.futile == "would land back on hot" and plan.kept_futile == {}
    assert "would land back on hot: the move may change nothing (--keep-futile)" in c.warnings


def test_a_landing_over_the_targets_is_futile_and_a_smaller_pod_goes_instead() -> None:
    objs = [b.node("hot"), b.node("cold"),
            b.pod("large", "hot", cpu="2", priority=0), b.pod("medium", "hot", cpu="1", priority=5),
            b.pod("rest", "hot", cpu="500m", priority=10), b.pod("here", "cold", cpu="500m")]
    plan = plan_of(objs, [(LNU, "balance", CPU)])
    assert kept(plan) == {"large": "would land on cold, putting it over LowNodeUtilization's targets (cpu 62.5% > 50%)"}
    assert [c.pod.name for c in plan.candidates] == ["medium", "rest"]  # hot: 87.5% -> 50%, cold: 12.5% -> 50%


def test_a_landing_in_the_source_class_is_futile() -> None:
    """Two zone-a nodes both over target: a zone-a pod can only go from one to the other."""
    objs = [b.node("hot1", labels={ZONE: "a"}), b.node("hot2", labels={ZONE: "a"}), b.node("cold", labels={ZONE: "b"}),
            b.pod("z1", "hot1", cpu="1", priority=0, nodeSelector={ZONE: "a"}),
            b.pod("free", "hot1", cpu="2", priority=10), b.pod("z2", "hot2", cpu="2500m", priority=10)]
    plan = plan_of(objs, [(LNU, "balance", CPU)])
    assert kept(plan) == {"z1": "would land on hot2, also over-utilized"}
    assert [c.pod.name for c in plan.candidates] == ["free"]  # cold has room up to its target for free only


def test_a_replacement_no_node_can_take_is_futile_for_every_plugin() -> None:
    """PodLifeTime only wants a new pod, wherever it lands; none anywhere is still a useless disruption."""
    lifetime = [("PodLifeTime", "deschedule", {"maxPodLifeTimeSeconds": 60})]
    old = {"started": "2020-01-01T00:00:00Z"}
    plan = plan_of([b.node("n1"), b.node("n2"), b.pod("old", "n1", nodeSelector={"disk": "ssd"}, **old)], lifetime)
    assert kept(plan) == {"old": "its replacement would stay Pending (no node fits (node selector or affinity: 2))"}
    # landing back on its own node is fine for PodLifeTime: it relocates nothing
    young = {"started": "2099-01-01T00:00:00Z"}
    again = plan_of([b.node("n1"), b.node("full", cpu="1"), b.pod("filler", "full", cpu="1", **young),
                     b.pod("old", "n1", **old)], lifetime)
    assert kept(again) == {} and [c.pod.name for c in again.candidates] == ["old"]


def test_a_swap_and_ties_decide_as_the_scheduler_could_pick() -> None:
    objs = [b.node("n1"), b.node("n2"), b.node("n3"),
            b.pod("a", "n1", owner_name="web"), b.pod("b", "n2", owner_name="web")]
    plan = EvictionPlan(b.state(objs), Limits())
    lnu = in_tree_registry().get(LNU).factory  # relocates, as every Balance plugin
    plugin: Any = lnu.__new__(lnu)
    pods = {p.name: p for p in plan.cluster.pods}
    from kubectl_desched.framework.types import EvictOptions

    plan.add(pods["b"], EvictOptions(LNU, "test"), "p")  # a pod of web leaves n2
    assert plan.futility(pods["a"], Destination("n2", tied=("n2",)), plugin) == \
        "would land on n2, which another pod of ReplicaSet default/web is leaving"
    assert plan.futility(pods["a"], Destination("n3", tied=("n3", "n1")), plugin) == \
        "would land back on n1, tied with n3"
    assert plan.futility(pods["a"], Destination("n3", tied=("n3",)), plugin) is None


def test_removeduplicates_does_not_move_a_pod_where_it_is_a_duplicate_again() -> None:
    """Six replicas on three nodes, two per node at most: n1's third must go to n2, but n2 is busy with
    another workload. A 1.35 scheduler's LeastAllocated and BalancedAllocation send the replacement to n3, where it
    would be a third again (upstream moves it every round); from 1.36 on BalancedAllocation scores the change the
    pod makes to a node's balance, the same on both, and spreading sends it to n2."""
    web = [("w1", "n1"), ("w2", "n1"), ("w3", "n1"), ("w4", "n2"), ("w5", "n3"), ("w6", "n3")]

    def cluster(kubelet: str) -> list[dict[str, Any]]:
        return [b.node(n, kubelet=kubelet) for n in ("n1", "n2", "n3")] + [
            b.pod("hog", "n2", cpu="3", owner_name="batch")] + [
            b.pod(name, node, owner_name="web") for name, node in web]

    plan = plan_of(cluster("v1.35.2"), [("RemoveDuplicates", "balance", {})])
    assert plan.candidates == []
    assert kept(plan) == {"w3": "would be a duplicate again on n3: 3 pods of ReplicaSet default/web, more than the 2 "
                                "per node"}
    upstream = plan_of(cluster("v1.35.2"), [("RemoveDuplicates", "balance", {})], keep_futile=True)
    assert [c.pod.name for c in upstream.candidates] == ["w3"]
    now = plan_of(cluster("v1.36.3"), [("RemoveDuplicates", "balance", {})])
    assert [(c.pod.name, now.placement.of(c).node) for c in now.candidates] == [("w3", "n2")]  # type: ignore[union-attr]


def test_preferred_node_affinity_moves_only_towards_a_preferred_node() -> None:
    prefer = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}
    # fast has room for one of the two pods on slow: the second replacement would come back to slow
    objs = [b.node("fast", cpu="2", labels={"disk": "ssd"}), b.node("slow"),
            b.pod("filler", "fast", cpu="1"),
            b.pod("p1", "slow", cpu="1", owner_name="app", affinity=prefer),
            b.pod("p2", "slow", cpu="1", owner_name="app", affinity=prefer)]
    args = {"nodeAffinityType": ["preferredDuringSchedulingIgnoredDuringExecution"]}
    plan = plan_of(objs, [("RemovePodsViolatingNodeAffinity", "deschedule", args)])
    assert [c.pod.name for c in plan.candidates] == ["p1"]
    assert kept(plan) == {"p2": "would land back on slow"}


def test_prefer_no_schedule_taints_count_where_the_plugin_counts_them() -> None:
    soft = {"key": "dedicated", "value": "gpu", "effect": "PreferNoSchedule"}
    objs = [b.node("gpu1", taints=[soft]), b.node("gpu2", taints=[soft]),
            b.pod("cpu-job", "gpu1", cpu="1", owner_name="jobs")]
    args = {"includePreferNoSchedule": True}
    plan = plan_of(objs, [("RemovePodsViolatingNodeTaints", "deschedule", args)])
    assert kept(plan) == {"cpu-job": "would land on gpu2, whose taint dedicated=gpu:PreferNoSchedule it does not "
                                     "tolerate either"}


def test_the_json_plan_records_kept_pods_futile_warnings_and_the_setting(tmp_path: Path,
                                                                         monkeypatch: Any) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": pinned_cluster()}))
    args = ["balance", "--from-file", str(snapshot), "-A", "--thresholds", "cpu=20", "--target-thresholds", "cpu=50"]
    result = CliRunner().invoke(cli, [*args, "-o", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["keepFutile"] is False
    assert [(k["pod"], k["kind"], k["why"], k["plugin"]) for k in doc["kept"]] == [
        ("pinned", "futile", "would land back on hot", LNU)]
    assert [(c["pod"], c["futile"]) for c in doc["candidates"]] == [("loose", None)]
    text = CliRunner().invoke(cli, [*args, "--no-pager"]).stdout
    assert text.splitlines()[0] == "Plan: 1 pod to evict from 1 node; 1 kept: the move would change nothing"
    loose = json.loads(CliRunner().invoke(cli, [*args, "-o", "json", "--keep-futile"]).stdout)
    assert loose["keepFutile"] is True and loose["kept"] == []
    assert [(c["pod"], c["futile"]) for c in loose["candidates"]] == [("pinned", "would land back on hot")]
    assert "would land back on hot: the move may change nothing (--keep-futile)" in loose["candidates"][0]["warnings"]


def test_when_nodes_stay_over_target_the_plan_says_which_thresholds_would_help(tmp_path: Path,
                                                                             monkeypatch: Any) -> None:
    """No node is under 20% (the others sit at 30%), so the default plan moves nothing; tried in memory,
    --thresholds at 30 makes them destinations and brings hot back within its targets."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    objs = [b.node("hot"), b.node("w1"), b.node("w2"),
            *[b.pod(f"h{i}", "hot", cpu="800m", memory="1Gi", owner_name=f"h{i}") for i in range(4)],
            b.pod("x1", "w1", cpu="1200m", memory="2Gi"), b.pod("x2", "w2", cpu="1200m", memory="2Gi")]
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objs}))
    args = ["balance", "--from-file", str(snapshot), "-A"]
    doc = json.loads(CliRunner().invoke(cli, [*args, "-o", "json"]).stdout)
    assert doc["candidates"] == []
    (advice,) = doc["advice"]
    wider = "--thresholds cpu=30,memory=30,pods=30"
    assert advice["overAfter"] == ["hot"] and advice["suggestion"]["flags"] == wider
    assert advice["suggestion"]["overAfter"] == [] and advice["suggestion"]["moves"] >= 1
    text = CliRunner().invoke(cli, [*args, "--no-pager"]).stdout
    assert "What would help:\n  hot stays over LowNodeUtilization's targets (cpu 50%, memory 50%, pods 50%) after " \
           f"this plan: {wider} would move" in text
    # the suggestion is what the tool then does
    again = json.loads(CliRunner().invoke(cli, [*args, "-o", "json", *wider.split()]).stdout)
    assert len(again["candidates"]) == advice["suggestion"]["moves"] and again["advice"] == []


def test_a_plugin_leaves_a_node_whose_moves_keep_being_futile() -> None:
    """Every pod of hot is pinned to zone a, where only hot is: after FUTILE_STREAK futile moves in a row the
    plugin is told to leave the node, and the plan says so once."""
    from kubectl_desched.framework.plan import FUTILE_STREAK

    objs = [b.node("hot", labels={ZONE: "a"}), b.node("cold", labels={ZONE: "b"}),
            *[b.pod(f"p{i:02d}", "hot", cpu="300m", owner_name=f"p{i:02d}", nodeSelector={ZONE: "a"})
              for i in range(12)]]
    plan = plan_of(objs, [(LNU, "balance", CPU)])
    assert plan.candidates == [] and len(plan.kept_futile) == FUTILE_STREAK
    assert (LNU, f"left 1 node(s) (e.g. hot) after {FUTILE_STREAK} moves in a row from each would change nothing; "
                 "explain node says why") in plan.messages


def test_past_a_large_plans_tries_a_plugin_leaves_a_node_after_fewer_futile_moves() -> None:
    """280 hot nodes in zone a, each with 9 pods that may only run in zone a: every move is futile. The first
    LARGE_PLAN tries leave each node after FUTILE_STREAK; past them, after LARGE_PLAN_FUTILE_STREAK."""
    from kubectl_desched.framework.placement import LARGE_PLAN
    from kubectl_desched.framework.plan import FUTILE_STREAK, LARGE_PLAN_FUTILE_STREAK

    hot = [f"hot{i:03d}" for i in range(280)]
    objs = [b.node("cold", labels={ZONE: "b"}), *[b.node(n, labels={ZONE: "a"}) for n in hot],
            *[b.pod(f"{n}-p{j}", n, cpu="300m", owner_name=f"{n}-p{j}", nodeSelector={ZONE: "a"})
              for n in hot for j in range(9)]]
    plan = plan_of(objs, [(LNU, "balance", CPU)])
    assert plan.candidates == []
    per_node = {n: 0 for n in hot}
    for pod, _plugin, _why in plan.kept_futile.values():
        per_node[pod.node_name] += 1
    early = LARGE_PLAN // FUTILE_STREAK  # nodes left before the plan grew large
    counts = sorted(per_node.values(), reverse=True)
    assert counts[:early] == [FUTILE_STREAK] * early
    assert counts[early + 1:] == [LARGE_PLAN_FUTILE_STREAK] * (len(hot) - early - 1)
    assert (LNU, f"left 280 node(s) (e.g. {plan.futile_stops[LNU][0]}) after {LARGE_PLAN_FUTILE_STREAK} moves in a "
                 "row from each would change nothing; explain node says why") in plan.messages
