"""RemovePodsFromCordonedNodes: which pods it picks and why, its args and their validation, through kubectl-desched's
policy decoding and runner (DefaultEvictor and the global limits included)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from cordoned_fixtures import PLUGIN, plan_for
from kubectl_desched_cordoned import RemovePodsFromCordonedNodes, RemovePodsFromCordonedNodesArgs

from kubectl_desched.framework import ConfigError, decode_args
from kubectl_desched.testing import NOW, ago, node, pdb, picked, pod, policy, state, toleration, verdict

CORDONED = "node is cordoned (spec.unschedulable)"
TOLERATE_CORDON = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
CA_TAINT = {"key": "ToBeDeletedByClusterAutoscaler", "value": "1762160000", "effect": "NoSchedule"}


CASES: list[tuple[str, list[dict[str, Any]], dict[str, Any], dict[str, str]]] = [
    ("a cordoned node's pods go; a schedulable node's stay",
     [node("c", cordoned=True), node("s"), pod("a", "c"), pod("b", "c"), pod("x", "s")], {},
     {"a": CORDONED, "b": CORDONED}),
    ("a cordoned node that is not Ready is not considered: its pods could not terminate",
     [node("c", cordoned=True, ready=False), pod("a", "c")], {}, {}),
    ("DaemonSet, bare and terminal pods: DefaultEvictor protects the first two, the last uses nothing",
     [node("c", cordoned=True), pod("ds", "c", owner="DaemonSet"), pod("bare", "c", owner=None),
      pod("done", "c", phase="Succeeded"), pod("web", "c")], {}, {"web": CORDONED}),
    ("a pod tolerating the cordon taint was meant to stay",
     [node("c", cordoned=True), pod("tol", "c", tolerations=[TOLERATE_CORDON]), pod("web", "c")], {},
     {"web": CORDONED}),
    ("a pod tolerating every taint stays too",
     [node("c", cordoned=True), pod("all", "c", tolerations=[{"operator": "Exists"}])], {}, {}),
    ("a NoExecute-only toleration does not tolerate the NoSchedule cordon taint",
     [node("c", cordoned=True),
      pod("ne", "c", tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                   "effect": "NoExecute"}])], {},
     {"ne": CORDONED}),
    ("includeTolerating takes tolerating pods as well, and says so",
     [node("c", cordoned=True), pod("tol", "c", tolerations=[TOLERATE_CORDON])], {"includeTolerating": True},
     {"tol": f"{CORDONED}; the pod tolerates node.kubernetes.io/unschedulable:NoSchedule, includeTolerating is set"}),
    ("a drain taint by key marks a node that is not cordoned",
     [node("t", taints=[CA_TAINT]), node("s"), pod("a", "t"), pod("b", "s")],
     {"drainTaints": ["ToBeDeletedByClusterAutoscaler"]},
     {"a": "node has drain taint ToBeDeletedByClusterAutoscaler=1762160000:NoSchedule"}),
    ("a drain taint given as key=value needs that value",
     [node("t", taints=[CA_TAINT]), pod("a", "t")], {"drainTaints": ["ToBeDeletedByClusterAutoscaler=other"]}, {}),
    ("a drain taint given as key=value with the node's value matches",
     [node("t", taints=[{"key": "maintenance", "value": "kernel", "effect": "PreferNoSchedule"}]), pod("a", "t")],
     {"drainTaints": ["maintenance=kernel"]}, {"a": "node has drain taint maintenance=kernel:PreferNoSchedule"}),
    ("without drainTaints a taint alone is not a cordon",
     [node("t", taints=[CA_TAINT]), pod("a", "t")], {}, {}),
    ("a pod tolerating the drain taint stays",
     [node("t", taints=[CA_TAINT]),
      pod("tol", "t", tolerations=[{"key": "ToBeDeletedByClusterAutoscaler", "operator": "Exists"}])],
     {"drainTaints": ["ToBeDeletedByClusterAutoscaler"]}, {}),
    ("namespaces.include limits the pods",
     [node("c", cordoned=True), pod("a", "c", namespace="team-a"), pod("b", "c", namespace="team-b")],
     {"namespaces": {"include": ["team-a"]}}, {"a": CORDONED}),
    ("namespaces.exclude too",
     [node("c", cordoned=True), pod("a", "c", namespace="team-a"), pod("b", "c", namespace="team-b")],
     {"namespaces": {"exclude": ["team-a"]}}, {"b": CORDONED}),
    ("labelSelector limits the pods",
     [node("c", cordoned=True), pod("a", "c", labels={"drain": "yes"}), pod("b", "c", labels={"drain": "no"})],
     {"labelSelector": {"matchLabels": {"drain": "yes"}}}, {"a": CORDONED}),
    ("a drain label marks a node whatever its value; no pod tolerates a label",
     [node("r", labels={"node.example.com/retiring": "2026-02"}), node("s"),
      pod("a", "r", tolerations=[toleration()]), pod("b", "s")], {"drainLabel": "node.example.com/retiring"},
     {"a": "node has drain label node.example.com/retiring"}),
    ("minPodAgeSeconds keeps pods younger than it, on the run's fixed clock",
     [node("c", cordoned=True), pod("old", "c", created=ago("2h")), pod("new", "c", created=ago("10m"))],
     {"minPodAgeSeconds": 3600}, {"old": CORDONED}),
]


@pytest.mark.parametrize(("objs", "args", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_picks(objs: list[dict[str, Any]], args: dict[str, Any], expected: dict[str, str]) -> None:
    assert picked(plan_for(objs, args)) == expected


def test_explain_says_why_pods_stay() -> None:
    objs = [node("c", cordoned=True), pod("tol", "c", tolerations=[TOLERATE_CORDON]),
            pod("other", "c", namespace="kept"), pod("ds", "c", owner="DaemonSet"), pod("web", "c")]
    plan = plan_for(objs, {"namespaces": {"exclude": ["kept"]}})
    assert verdict(plan, "web") == ("evict", f"{PLUGIN}: {CORDONED}")
    assert verdict(plan, "tol") == ("keep", f"{PLUGIN}: not picked: {CORDONED}, but the pod tolerates "
                                            "node.kubernetes.io/unschedulable:NoSchedule (includeTolerating is false)")
    assert verdict(plan, "other", "kept") == ("keep", f"{PLUGIN}: not picked: {CORDONED}, but namespace kept is "
                                                      "in namespaces.exclude")
    assert verdict(plan, "ds") == ("keep", "protected: DaemonSet pod")
    assert [(r.plugin, r.klass, r.detail) for r in plan.node_reports["c"]] == [
        (PLUGIN, "draining", f"{CORDONED}: 1 pod(s) to move")]


def test_per_node_limit_keeps_the_highest_priority_pods() -> None:
    # spare: somewhere for the replacements to go, else each move is futile (Pending) and kept
    objs = [node("c1", cordoned=True), node("c2", cordoned=True), node("spare"),
            pod("high", "c1", priority=1000), pod("low", "c1", priority=-5), pod("mid", "c1"),
            pod("top", "c1", priority=2000), pod("b", "c2"), pod("a", "c2")]
    plan = plan_for(objs, limits={"maxNoOfPodsToEvictPerNode": 2})
    assert [c.pod.name for c in plan.candidates] == ["low", "mid", "a", "b"]  # lowest priority, then by name
    assert verdict(plan, "high")[1] == (f"{PLUGIN}: selected ({CORDONED}) but maxNoOfPodsToEvictPerNode (2) "
                                        "reached on c1")
    assert verdict(plan, "top")[1] == (f"{PLUGIN}: selected ({CORDONED}) but not tried: the eviction limit of "
                                       "node c1 was reached")


def test_total_limit_stops_the_drain() -> None:
    objs = [node("c1", cordoned=True), node("c2", cordoned=True), node("spare"), pod("a", "c1"), pod("b", "c1"),
            pod("c", "c2")]
    plan = plan_for(objs, limits={"maxNoOfPodsToEvictTotal": 1})
    assert [c.pod.name for c in plan.candidates] == ["a"]
    assert (PLUGIN, "stopped: the total eviction limit was reached") in plan.messages


def test_default_evictor_args_apply() -> None:
    objs = [node("c", cordoned=True), node("s"), pod("high", "c", priority=5000), pod("low", "c")]
    plan = plan_for(objs, evictor_args={"priorityThreshold": {"value": 1000}})
    assert list(picked(plan)) == ["low"]


def test_node_fit_keeps_pods_with_nowhere_to_go() -> None:
    objs = [node("c", cordoned=True), node("s2", cordoned=True), pod("a", "c")]
    assert picked(plan_for(objs, evictor_args={"nodeFit": True})) == {}
    assert list(picked(plan_for([*objs, node("free")], evictor_args={"nodeFit": True}))) == ["a"]


def test_pdb_without_budget_keeps_the_pod_or_warns_with_no_respect_pdbs() -> None:
    objs = [node("c", cordoned=True), pod("db", "c", labels={"app": "db"}), pdb("db", {"app": "db"}, allowed=0)]
    assert plan_for(objs).candidates == []  # the framework keeps what the PDB would refuse, for any plugin
    (cand,) = plan_for(objs, respect_pdbs=False).candidates
    assert cand.warnings == ["PodDisruptionBudget db allows no disruption, eviction will be refused"]


# --- args -----------------------------------------------------------------------------------------------------------


def test_defaults() -> None:
    args = decode_args(RemovePodsFromCordonedNodesArgs, {}, "")
    assert (args.namespaces, args.label_selector, args.drain_taints, args.include_tolerating) == (None, None, [], False)
    assert RemovePodsFromCordonedNodes.args_type is RemovePodsFromCordonedNodesArgs


@pytest.mark.parametrize(("raw", "path", "message"), [
    ({"drainTaints": ["ok", "two words"]}, "drainTaints[1]", "'two words' is not a taint key or key=value"),
    ({"drainTaints": [""]}, "drainTaints[0]", "'' is not a taint key or key=value"),
    ({"drainTaints": ["=v"]}, "drainTaints[0]", "is not a taint key"),
    ({"drainTaints": ["Bad.Prefix/name"]}, "drainTaints[0]", "is not a taint key"),
    ({"drainTaints": ["k=a b"]}, "drainTaints[0]", "'k=a b' is not a taint key or key=value: invalid value: must be"),
    ({"drainTaints": ["k=" + "v" * 64]}, "drainTaints[0]", "invalid value: must be at most 63 characters"),
    ({"drainLabel": "a/b/c"}, "drainLabel", "'a/b/c' is not a label key: a label key has at most one '/'"),
    ({"minPodAgeSeconds": -1}, "minPodAgeSeconds", "must not be negative, not -1"),
    ({"drainTaints": "ToBeDeleted"}, "drainTaints", "must be a list"),
    ({"includeTolerating": "yes"}, "includeTolerating", "must be a boolean"),
    ({"namespaces": {"include": ["a"], "exclude": ["b"]}}, "namespaces", "only one of include and exclude"),
    ({"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}, "labelSelector", ""),
])
def test_invalid_args_name_the_field(raw: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        decode_args(RemovePodsFromCordonedNodesArgs, raw, "")
    assert err.value.path == path
    assert message in err.value.message


def test_valid_taint_keys() -> None:
    keys = ["ToBeDeletedByClusterAutoscaler", "karpenter.sh/disrupted", "node.kubernetes.io/unschedulable",
            "example.com/maintenance=kernel-6.8", "k="]
    assert decode_args(RemovePodsFromCordonedNodesArgs, {"drainTaints": keys}, "").drain_taints == keys


def test_policy_errors_give_the_whole_path_and_unknown_fields_are_refused() -> None:
    raw: dict[str, Any] = {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", "profiles": [{
        "name": "drain", "plugins": {"deschedule": {"enabled": [PLUGIN]}},
        "pluginConfig": [{"name": PLUGIN, "args": {"drainTaints": ["bad key"]}}]}]}
    with pytest.raises(ConfigError) as err:
        policy(raw, "policy.yaml")
    assert str(err.value) == ("policy.yaml: profiles[0].pluginConfig[0].args.drainTaints[0]: "
                              "'bad key' is not a taint key or key=value: invalid key: the name part must be letters, "
                              "digits, '-', '_' and '.', starting and ending with a letter or digit")
    raw["profiles"][0]["pluginConfig"][0]["args"] = {"drainTaint": ["typo"]}  # strict, as upstream's framework
    with pytest.raises(ConfigError) as err:
        policy(raw, "policy.yaml")
    assert str(err.value) == ("policy.yaml: profiles[0].pluginConfig[0].args.drainTaint: unknown field "
                              "(did you mean drainTaints?)")


def test_pod_age_follows_the_clock_the_state_is_read_at() -> None:
    """The plugin asks pod_age(pod, handle.state.now), never the wall clock: a state read a day later (as
    `--now` sets it for a snapshot) sees the same pod as old enough."""
    objs = [node("c", cordoned=True), node("s"), pod("p", "c", created=ago("10m"))]
    args = {"minPodAgeSeconds": 3600}
    assert picked(plan_for(objs, args)) == {}
    plan = plan_for(state(objs, now=NOW + timedelta(days=1)), args)
    assert picked(plan) == {"p": CORDONED}
    assert verdict(plan_for(objs, args), "p") == (
        "keep", f"{PLUGIN}: not picked: {CORDONED}, but it is 600s old, younger than minPodAgeSeconds 3600")
