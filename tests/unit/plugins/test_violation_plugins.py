"""RemovePodsViolatingNodeAffinity, RemovePodsViolatingNodeTaints and RemovePodsViolatingInterPodAntiAffinity
through the real runner (policy_from_plugins -> decode_policy -> run). The tables restate the behaviours of
upstream's tests with our own fixtures, plus the edge cases upstream's code decides."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kubectl_desched.errors import ConfigError
from kubectl_desched.framework import PluginSpec, Registry
from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.framework.policy_decoder import decode_policy, policy_from_plugins
from kubectl_desched.framework.predicates import (
    anti_affinity_matcher,
    anti_affinity_namespaces,
    describe_label_selector,
    required_anti_affinity_terms,
    same_topology,
    toleration_tolerates,
)
from kubectl_desched.framework.runner import Scope, run
from kubectl_desched.model.objects import Taint, Toleration
from kubectl_desched.model.state import ClusterState
from kubectl_desched.plugins import in_tree_registry
from kubectl_desched.plugins.upstream.podorder import eviction_order
from kubectl_desched.plugins.upstream.removepodsviolatinginterpodantiaffinity import (
    RemovePodsViolatingInterPodAntiAffinity,
)
from kubectl_desched.plugins.upstream.removepodsviolatingnodeaffinity import RemovePodsViolatingNodeAffinity
from kubectl_desched.plugins.upstream.removepodsviolatingnodetaints import RemovePodsViolatingNodeTaints
from kubectl_desched.ui.explain import Verdicts
from tests import builders as b
from tests.builders import as_upstream
from tests.scaling import assert_grows_linearly, cpu_seconds

NA = "RemovePodsViolatingNodeAffinity"
NT = "RemovePodsViolatingNodeTaints"
IPA = "RemovePodsViolatingInterPodAntiAffinity"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
CRITICAL = 2_000_000_000


def registry() -> Registry:
    reg = in_tree_registry()
    for plugin in (RemovePodsViolatingNodeAffinity, RemovePodsViolatingNodeTaints,
                   RemovePodsViolatingInterPodAntiAffinity):
        if plugin.name not in reg:
            reg.register(PluginSpec.of(plugin))
    return reg


def _state(objs: list[dict[str, Any]]) -> ClusterState:
    return b.state(objs, spare_node=True)


def plan_for(objs: list[dict[str, Any]], plugin: str, args: dict[str, Any] | None = None, *,
             evictor_args: dict[str, Any] | None = None, limits: dict[str, int | None] | None = None,
             more: list[tuple[str, str, dict[str, Any]]] | None = None, scope: Scope | None = None) -> EvictionPlan:
    return b.plan(_state(objs), [*(more or []), (plugin, "deschedule", args or {})], evictor_args=evictor_args,
                  limits=limits, scope=scope, registry=registry())


def evicted(plan: EvictionPlan) -> list[str]:
    return [c.pod.name for c in plan.candidates]


def verdict(plan: EvictionPlan, name: str, namespace: str = "default") -> tuple[str, str]:
    pod = plan.state.find_pod(namespace, name)
    assert pod is not None
    return Verdicts(plan).of(pod)


def config_error(plugin: str, args: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        plan_for([b.node("n1")], plugin, args)
    return str(info.value)


ARGS_PATH = "flags: profiles[0].pluginConfig[1].args"


def test_plugins_register_under_upstream_names() -> None:
    reg = registry()
    for name in (NA, NT, IPA):
        assert reg.get(name).points == ("deschedule",)


# === RemovePodsViolatingNodeAffinity ==============================================================================

DESIRED = {"kubernetes.io/desiredNode": "yes"}
WANTS_DESIRED = [b.label_in("kubernetes.io/desiredNode", "yes")]


def _affinity(kind: str) -> dict[str, Any]:
    if kind == REQUIRED:
        return b.required_node_affinity(WANTS_DESIRED)
    if kind == PREFERRED:
        return b.preferred_node_affinity((10, WANTS_DESIRED))
    return {"nodeAffinity": {}}


def _pods_on(node: str, kind: str, *, deleting: bool = False) -> list[dict[str, Any]]:
    """The pod with node affinity and two plain pods, all owned by a ReplicaSet (upstream's fixture, re-made)."""
    pods = [b.pod("picky", node, affinity=_affinity(kind)), b.pod("plain-1", node), b.pod("plain-2", node)]
    return [b.terminating(p) for p in pods] if deleting else pods


def _plain_and_desired() -> list[dict[str, Any]]:
    return [b.node("plain"), b.node("desired", labels=DESIRED)]


@pytest.mark.parametrize("kind", [REQUIRED, PREFERRED])
@pytest.mark.parametrize(
    ("case", "nodes", "on", "limits", "evictor", "deleting", "expected"),
    [
        ("already on a matching node", lambda: [b.node("desired", labels=DESIRED)], "desired", {}, {}, False, []),
        ("another matching node exists", _plain_and_desired, "plain", {}, {}, False, ["picky"]),
        ("per-node limit 1", _plain_and_desired, "plain", {"maxNoOfPodsToEvictPerNode": 1}, {}, False, ["picky"]),
        ("per-node limit 0", _plain_and_desired, "plain", {"maxNoOfPodsToEvictPerNode": 0}, {}, False, []),
        ("terminating pods are never evicted", _plain_and_desired, "plain", {"maxNoOfPodsToEvictPerNode": 1}, {},
         True, []),
        ("per-namespace limit 1", _plain_and_desired, "plain", {"maxNoOfPodsToEvictPerNamespace": 1}, {}, False,
         ["picky"]),
        ("per-namespace limit 0", _plain_and_desired, "plain", {"maxNoOfPodsToEvictPerNamespace": 0}, {}, False, []),
        ("total limit 0", _plain_and_desired, "plain",
         {"maxNoOfPodsToEvictPerNamespace": 1, "maxNoOfPodsToEvictTotal": 0}, {}, False, []),
        ("nodeFit: the only matching node is cordoned",
         lambda: [b.node("plain"), b.node("cordoned", labels=DESIRED, unschedulable=True)], "plain", {},
         {"nodeFit": True}, False, []),
        ("the pod's node is not Ready, so not considered",
         lambda: [b.node("plain", ready=False), b.node("desired", labels=DESIRED),
                  b.node("cordoned", labels=DESIRED, unschedulable=True)], "plain",
         {"maxNoOfPodsToEvictPerNode": 1}, {"nodeFit": True}, False, []),
    ],
)
def test_node_affinity_upstream_table(kind: str, case: str, nodes: Any, on: str, limits: dict[str, int],
                                      evictor: dict[str, Any], deleting: bool, expected: list[str]) -> None:
    plan = plan_for([*nodes(), *_pods_on(on, kind, deleting=deleting)], NA, {"nodeAffinityType": [kind]},
                    evictor_args=evictor, limits=limits)
    assert evicted(plan) == expected, case
    assert plan.errors == []


def test_node_affinity_unknown_type_evicts_nothing_and_says_so() -> None:
    kind = "requiredDuringSchedulingRequiredDuringExecution"
    plan = plan_for([*_plain_and_desired(), *_pods_on("plain", kind)], NA, {"nodeAffinityType": [kind]})
    assert evicted(plan) == []
    assert plan.messages == [(NA, f"nodeAffinityType {kind!r} is not supported, skipped (supported: {REQUIRED}, "
                                  f"{PREFERRED})")]


def test_node_affinity_reasons_and_verdicts() -> None:
    objs = [b.node("worker-1"), b.node("worker-2", cpu="0"), b.node("worker-3", labels=DESIRED),
            b.pod("req", "worker-1", affinity=_affinity(REQUIRED)),
            b.pod("pref", "worker-1", affinity=_affinity(PREFERRED)), b.pod("plain", "worker-1")]
    plan = plan_for(objs, NA, {"nodeAffinityType": [REQUIRED, PREFERRED]})
    assert [(c.pod.name, c.reason) for c in plan.candidates] == [
        ("req", "node worker-1 no longer matches required node affinity; fits worker-3"),
        ("pref", "preferred node affinity weight 0 on node worker-1, 10 on worker-3"),
    ]
    assert verdict(plan, "req") == ("evict", f"{NA}: node worker-1 no longer matches required node affinity; "
                                             "fits worker-3")
    assert verdict(plan, "plain") == ("keep", "no enabled plugin selects it")


def test_required_needs_a_node_the_pod_fits() -> None:
    objs = [b.node("plain"), b.node("desired", cpu="100m", labels=DESIRED), b.pod("hog", "desired", cpu="100m"),
            b.pod("picky", "plain", cpu="200m", affinity=_affinity(REQUIRED))]
    plan = plan_for(objs, NA, {"nodeAffinityType": [REQUIRED]})
    assert evicted(plan) == []
    assert verdict(plan, "picky") == ("keep", f"{NA}: node plain no longer matches required node affinity, but the "
                                              "pod fits no node")


@pytest.mark.parametrize(
    ("desired_node", "expected"),
    [
        (b.node("desired", labels=DESIRED, taints=[b.taint("dedicated", "gpu")]), []),
        (b.node("desired", labels=DESIRED, taints=[b.taint("dedicated", "gpu", "NoExecute")]), []),
        (b.node("desired", labels=DESIRED, taints=[b.taint("dedicated", "gpu", "PreferNoSchedule")]), ["picky"]),
        (b.node("desired", labels=DESIRED, pods=1), ["picky"]),  # empty, one pod slot: fits
        (b.node("desired", labels=DESIRED, pods=0), []),
        (b.node("desired", labels=DESIRED, unschedulable=True), []),
    ],
)
def test_required_fit_uses_upstream_node_fit(desired_node: dict[str, Any], expected: list[str]) -> None:
    objs = [b.node("plain"), desired_node, b.pod("picky", "plain", affinity=_affinity(REQUIRED))]
    assert evicted(plan_for(objs, NA, {"nodeAffinityType": [REQUIRED]})) == expected


def test_required_fit_checks_the_pods_anti_affinity_on_the_target() -> None:
    affinity = {**_affinity(REQUIRED), **b.pod_anti_affinity({"app": "db"})}
    objs = [b.node("plain"), b.node("desired", labels=DESIRED), b.pod("db-0", "desired", labels={"app": "db"}),
            b.pod("db-1", "plain", labels={"app": "db"}, affinity=affinity)]
    plan = plan_for(objs, NA, {"nodeAffinityType": [REQUIRED]})
    assert evicted(plan) == []
    assert verdict(plan, "db-1")[1].endswith("but the pod fits no node")


def test_required_also_enforces_node_selector_when_affinity_is_set() -> None:
    objs = [b.node("plain", labels={"disk": "hdd", **DESIRED}), b.node("fast", labels={"disk": "ssd", **DESIRED}),
            b.pod("both", "plain", affinity=_affinity(REQUIRED), nodeSelector={"disk": "ssd"}),
            b.pod("selector-only", "plain", nodeSelector={"disk": "ssd"})]
    plan = plan_for(objs, NA, {"nodeAffinityType": [REQUIRED]})
    assert [(c.pod.name, c.reason) for c in plan.candidates] == [
        ("both", "node plain no longer matches nodeSelector disk=ssd; fits fast")]
    assert verdict(plan, "selector-only") == ("keep", "no enabled plugin selects it")  # no node affinity at all


def test_required_match_fields_and_ored_terms() -> None:
    by_name = {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["elsewhere"]}]},
        {"matchExpressions": [b.label_in("zone", "b")]}]}}}
    objs = [b.node("home", labels={"zone": "a"}), b.node("elsewhere"), b.node("zone-b", labels={"zone": "b"}),
            b.pod("moved", "home", affinity=by_name), b.pod("stays", "zone-b", affinity=by_name)]
    plan = plan_for(objs, NA, {"nodeAffinityType": [REQUIRED]})
    assert [(c.pod.name, c.reason) for c in plan.candidates] == [
        ("moved", "node home no longer matches required node affinity; fits elsewhere")]


def test_preferred_compares_summed_weights() -> None:
    affinity = b.preferred_node_affinity((10, [b.label_in("zone", "a")]), (5, [b.label_in("disk", "ssd")]))
    objs = [b.node("zone-a", labels={"zone": "a"}), b.node("ssd", labels={"disk": "ssd"}),
            b.pod("happy", "zone-a", affinity=affinity), b.pod("unhappy", "ssd", affinity=affinity)]
    plan = plan_for(objs, NA, {"nodeAffinityType": [PREFERRED]})
    assert [(c.pod.name, c.reason) for c in plan.candidates] == [
        ("unhappy", "preferred node affinity weight 5 on node ssd, 10 on zone-a")]
    objs.append(b.node("both", labels={"zone": "a", "disk": "ssd"}))
    plan = plan_for(objs, NA, {"nodeAffinityType": [PREFERRED]})
    assert [(c.pod.name, c.reason) for c in plan.candidates] == [
        ("unhappy", "preferred node affinity weight 5 on node ssd, 15 on both"),
        ("happy", "preferred node affinity weight 10 on node zone-a, 15 on both")]


def test_preferred_better_node_need_not_fit_without_node_fit() -> None:
    """Upstream takes the best weight over every node and only asks that the pod fit some node, its own
    included; DefaultEvictor's nodeFit is what asks for another node it fits."""
    objs = [b.node("plain"), b.node("cordoned", labels=DESIRED, unschedulable=True),
            b.pod("picky", "plain", affinity=_affinity(PREFERRED))]
    plan = plan_for(objs, NA, {"nodeAffinityType": [PREFERRED]})
    assert [(c.pod.name, c.reason) for c in plan.candidates] == [
        ("picky", "preferred node affinity weight 0 on node plain, 10 on cordoned")]
    plan = plan_for(objs, NA, {"nodeAffinityType": [PREFERRED]}, evictor_args={"nodeFit": True})
    assert evicted(plan) == []
    assert verdict(plan, "picky") == ("keep", "preEvictionFilter: fits no other node (nodeFit)")


def test_preferred_needs_the_pod_to_fit_somewhere() -> None:
    objs = [b.node("plain", taints=[b.taint("maintenance")]), b.node("cordoned", labels=DESIRED, unschedulable=True),
            b.pod("picky", "plain", affinity=_affinity(PREFERRED))]
    plan = plan_for(objs, NA, {"nodeAffinityType": [PREFERRED]})
    assert evicted(plan) == []
    assert verdict(plan, "picky") == ("keep", f"{NA}: node cordoned has a higher preferred node affinity weight "
                                              "(10 > 0), but the pod fits no node")


def test_both_types_run_in_order_and_a_pod_goes_once() -> None:
    affinity = {"nodeAffinity": {**_affinity(REQUIRED)["nodeAffinity"], **_affinity(PREFERRED)["nodeAffinity"]}}
    objs = [*_plain_and_desired(), b.pod("picky", "plain", affinity=affinity)]
    plan = plan_for(objs, NA, {"nodeAffinityType": [PREFERRED, REQUIRED]})
    assert [(c.pod.name, c.reason) for c in plan.candidates] == [
        ("picky", "preferred node affinity weight 0 on node plain, 10 on desired")]


def test_node_affinity_namespaces_and_label_selector_args() -> None:
    objs = [*_plain_and_desired()]
    for ns in ("a", "b"):
        for app in ("web", "db"):
            objs.append(b.pod(f"{app}-{ns}", "plain", namespace=ns, labels={"app": app}, affinity=_affinity(REQUIRED)))
    args = {"nodeAffinityType": [REQUIRED], "namespaces": {"include": ["a"]}}
    assert evicted(plan_for(objs, NA, args)) == ["web-a", "db-a"]
    args = {"nodeAffinityType": [REQUIRED], "namespaces": {"exclude": ["a"]}, "labelSelector": {
        "matchLabels": {"app": "db"}}}
    assert evicted(plan_for(objs, NA, args)) == ["db-b"]


def test_node_affinity_default_evictor_protections_apply() -> None:
    aff = _affinity(REQUIRED)
    objs = [*_plain_and_desired(), b.pod("ds", "plain", owner="DaemonSet", affinity=aff),
            b.pod("critical", "plain", priority=CRITICAL, affinity=aff),
            b.pod("scratch", "plain", volumes=[{"name": "tmp", "emptyDir": {}}], affinity=aff),
            b.pod("bare", "plain", owner=None, affinity=aff), b.pod("normal", "plain", affinity=aff)]
    plan = plan_for(objs, NA, {"nodeAffinityType": [REQUIRED]})
    assert evicted(plan) == ["normal"]
    assert verdict(plan, "ds") == ("keep", "protected: DaemonSet pod")
    assert verdict(plan, "critical") == ("keep", "protected: system critical (priority 2000000000)")
    assert verdict(plan, "scratch") == ("keep", "protected: local storage (emptyDir tmp)")
    assert verdict(plan, "bare") == ("keep", "protected: bare pod (no owner)")
    plan = plan_for(objs, NA, {"nodeAffinityType": [REQUIRED]}, evictor_args={"evictLocalStoragePods": True})
    assert evicted(plan) == ["scratch", "normal"]


def test_node_affinity_stops_at_the_total_limit_and_moves_on_at_the_node_limit() -> None:
    aff = _affinity(REQUIRED)
    objs = [b.node("a"), b.node("b"), b.node("desired", labels=DESIRED),
            *(b.pod(f"a-{i}", "a", affinity=aff) for i in range(3)), *(b.pod(f"b-{i}", "b", affinity=aff)
                                                                       for i in range(3))]
    args = {"nodeAffinityType": [REQUIRED]}
    assert evicted(plan_for(objs, NA, args, limits={"maxNoOfPodsToEvictPerNode": 2})) == ["a-0", "a-1", "b-0", "b-1"]
    plan = plan_for(objs, NA, args, limits={"maxNoOfPodsToEvictTotal": 2})
    assert evicted(plan) == ["a-0", "a-1"]
    assert verdict(plan, "a-2")[1].endswith("but maxNoOfPodsToEvictTotal (2) reached")
    assert verdict(plan, "b-0") == ("keep", "no enabled plugin selects it")  # the plugin stopped


@pytest.mark.parametrize(
    ("args", "path", "message"),
    [
        ({}, "nodeAffinityType", f"at least one type is required ({REQUIRED} and/or {PREFERRED})"),
        ({"nodeAffinityType": []}, "nodeAffinityType", f"at least one type is required ({REQUIRED} and/or "
                                                       f"{PREFERRED})"),
        ({"nodeAffinityType": [REQUIRED], "namespaces": {"include": ["default"], "exclude": ["kube-system"]}},
         "namespaces", "only one of include and exclude can be set"),
        ({"nodeAffinityType": [REQUIRED], "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
         "labelSelector", "matchExpressions[0]: operator In needs values"),
        ({"nodeAffinityType": REQUIRED}, "nodeAffinityType", f"must be a list, not {REQUIRED!r}"),
    ],
)
def test_node_affinity_args_validation(args: dict[str, Any], path: str, message: str) -> None:
    assert config_error(NA, args) == f"{ARGS_PATH}.{path}: {message}"


def test_node_affinity_plugin_config_is_required() -> None:
    raw = policy_from_plugins([(NA, "deschedule", {"nodeAffinityType": [REQUIRED]})], {}, {})
    del raw["profiles"][0]["pluginConfig"][1]
    with pytest.raises(ConfigError, match="has no pluginConfig entry"):
        decode_policy(raw, registry(), "flags")


# === RemovePodsViolatingNodeTaints ================================================================================

TAINT1 = b.taint("testTaint1", "test1")
TOLERATE1 = [b.toleration("testTaint1", "test1", "NoSchedule")]
TOLERATE_X = [b.toleration("testTaintX1", "testX1", "NoSchedule")]


def _rs(name: str, node: str, **kw: Any) -> dict[str, Any]:
    return b.pod(name, node, **kw)


def _critical(name: str, node: str) -> dict[str, Any]:
    return b.pod(name, node, namespace="kube-system", priority=CRITICAL)


def _protected_on(node: str) -> list[dict[str, Any]]:
    return [_critical("p7", node), b.pod("p8", node, owner="DaemonSet"),
            b.pod("p9", node, volumes=[{"name": "logs", "hostPath": {"path": "/var/log"}},
                                       {"name": "tmp", "emptyDir": {}}]),
            b.pod("p10", node, annotations={"kubernetes.io/config.mirror": "m"})]


@pytest.mark.parametrize(
    ("case", "objs", "args", "evictor", "limits", "expected"),
    [
        ("a pod without the toleration goes",
         [b.node("n1", taints=[TAINT1]), _rs("p1", "n1", tolerations=TOLERATE1), _rs("p2", "n1"),
          _rs("p3", "n1", tolerations=TOLERATE1)], {}, {}, {}, ["p2"]),
        ("a toleration for another taint does not help",
         [b.node("n1", taints=[TAINT1]), _rs("p1", "n1", tolerations=TOLERATE1),
          _rs("p3", "n1", tolerations=TOLERATE1), _rs("p4", "n1", tolerations=TOLERATE_X)], {}, {}, {}, ["p4"]),
        ("total limit",
         [b.node("n1", taints=[TAINT1]), _rs("p1", "n1", tolerations=TOLERATE1), _rs("p5", "n1"), _rs("p6", "n1")],
         {}, {}, {"maxNoOfPodsToEvictPerNode": 2, "maxNoOfPodsToEvictTotal": 1}, ["p5"]),
        ("per-node limit",
         [b.node("n1", taints=[TAINT1]), _rs("p1", "n1", tolerations=TOLERATE1), _rs("p5", "n1"), _rs("p6", "n1")],
         {}, {}, {"maxNoOfPodsToEvictPerNode": 1}, ["p5"]),
        ("per-namespace limit",
         [b.node("n1", taints=[TAINT1]), _rs("p1", "n1", tolerations=TOLERATE1), _rs("p5", "n1"), _rs("p6", "n1")],
         {}, {}, {"maxNoOfPodsToEvictPerNamespace": 1}, ["p5"]),
        ("critical, DaemonSet, local-storage and mirror pods stay",
         [b.node("n2", taints=[b.taint("testingTaint1", "testing1")]), *_protected_on("n2")], {}, {}, {}, []),
        ("evictLocalStoragePods lets the local-storage pod go",
         [b.node("n2", taints=[b.taint("testingTaint1", "testing1")]), *_protected_on("n2")], {},
         {"evictLocalStoragePods": True}, {}, ["p9"]),
        ("evictSystemCriticalPods lets critical pods go",
         [b.node("n1", taints=[TAINT1]), b.node("n2", taints=[b.taint("testingTaint1", "testing1")]),
          _rs("p2", "n1"), _critical("p7", "n2"), *_protected_on("n2")[2:]], {},
         {"evictSystemCriticalPods": True}, {}, ["p2", "p7"]),
        ("nodeFit: the other node's taint is not tolerated either",
         [b.node("n1", taints=[TAINT1]), b.node("n2", taints=[b.taint("testingTaint1", "testing1")]),
          _rs("p1", "n1", tolerations=TOLERATE1), _rs("p2", "n1")], {}, {"nodeFit": True}, {}, []),
        ("nodeFit: the other node does not match the pod's nodeSelector",
         [b.node("n1", taints=[TAINT1]), b.node("n3", labels={"datacenter": "east"}),
          _rs("p11", "n1", nodeSelector={"datacenter": "west"})], {}, {"nodeFit": True}, {}, []),
        ("nodeFit: the other node is cordoned",
         [b.node("n1", taints=[TAINT1]), b.node("n4", unschedulable=True), _rs("p2", "n1")], {}, {"nodeFit": True},
         {}, []),
        ("nodeFit: the other node has no room",
         [b.node("n1", taints=[TAINT1]), b.node("n6", cpu="1m", memory="1", pods=1,
                                                taints=[b.taint("testTaint1", "test1", "PreferNoSchedule")]),
          _rs("p2", "n1")], {}, {"nodeFit": True}, {}, []),
        ("PreferNoSchedule is ignored by default",
         [b.node("n5", taints=[b.taint("testTaint1", "test1", "PreferNoSchedule")]),
          _rs("p13", "n5", tolerations=[b.toleration("testTaint0", "test0", "PreferNoSchedule")])], {}, {}, {}, []),
        ("includePreferNoSchedule enforces it",
         [b.node("n5", taints=[b.taint("testTaint1", "test1", "PreferNoSchedule")]),
          _rs("p13", "n5", tolerations=[b.toleration("testTaint0", "test0", "PreferNoSchedule")])],
         {"includePreferNoSchedule": True}, {}, {}, ["p13"]),
        ("excludedTaints by key",
         [b.node("n1", taints=[TAINT1]), _rs("p2", "n1")], {"excludedTaints": ["excludedTaint1", "testTaint1"]},
         {}, {}, []),
        ("excludedTaints by key=value",
         [b.node("n1", taints=[TAINT1]), _rs("p2", "n1")], {"excludedTaints": ["testTaint1=test1"]}, {}, {}, []),
        ("excludedTaints with the right key and another value",
         [b.node("n1", taints=[TAINT1]), _rs("p2", "n1")], {"excludedTaints": ["testTaint1=test2"]}, {}, {}, ["p2"]),
        ("includedTaints: the included taint is tolerated, the other is not looked at",
         [b.node("n7", taints=[TAINT1, b.taint("testingTaint1", "testing1")]),
          _rs("p1", "n7", tolerations=TOLERATE1)], {"includedTaints": ["testTaint1=test1"]}, {}, {}, []),
        ("includedTaints naming a taint the node lacks",
         [b.node("n1", taints=[TAINT1]), _rs("p1", "n1", tolerations=TOLERATE1), _rs("p2", "n1"),
          _rs("p4", "n1", tolerations=TOLERATE_X)], {"includedTaints": ["testTaint2=test2"]}, {}, {}, []),
        ("includedTaints naming the node's taint",
         [b.node("n1", taints=[TAINT1]), _rs("p1", "n1", tolerations=TOLERATE1), _rs("p2", "n1"),
          _rs("p3", "n1", tolerations=TOLERATE1)], {"includedTaints": ["testTaint1=test1"]}, {}, {}, ["p2"]),
        ("without includedTaints every taint counts",
         [b.node("n7", taints=[TAINT1, b.taint("testingTaint1", "testing1")]),
          _rs("p14", "n7", tolerations=TOLERATE1),
          _rs("p15", "n7", tolerations=[*TOLERATE1, b.toleration("testingTaint1", "testing1", "NoSchedule")])],
         {}, {}, {}, ["p14"]),
    ],
)
def test_node_taints_upstream_table(case: str, objs: list[dict[str, Any]], args: dict[str, Any],
                                    evictor: dict[str, Any], limits: dict[str, int], expected: list[str]) -> None:
    plan = plan_for(objs, NT, args, evictor_args=evictor, limits=limits)
    assert evicted(plan) == expected, case
    assert plan.errors == []


def test_node_taints_reason_and_verdicts() -> None:
    objs = [b.node("gpu-1", taints=[b.taint("dedicated", "gpu")]), b.node("spare"),
            b.pod("train", "gpu-1", tolerations=[b.toleration("dedicated", "gpu")]), b.pod("web", "gpu-1")]
    plan = plan_for(objs, NT)
    assert [(c.pod.name, c.reason) for c in plan.candidates] == [("web", "does not tolerate taint dedicated=gpu:"
                                                                         "NoSchedule")]
    assert verdict(plan, "web") == ("evict", f"{NT}: does not tolerate taint dedicated=gpu:NoSchedule")
    assert verdict(plan, "train") == ("keep", "no enabled plugin selects it")


def test_node_taints_leave_no_execute_to_the_kubelet() -> None:
    objs = [b.node("n1", taints=[b.taint("evicting", effect="NoExecute")]), b.pod("p", "n1")]
    assert evicted(plan_for(objs, NT)) == []
    assert evicted(plan_for(objs, NT, {"includePreferNoSchedule": True})) == []


def test_empty_included_taints_list_includes_nothing() -> None:
    """As upstream: an unset includedTaints includes every taint, an explicitly empty list none."""
    objs = [b.node("n1", taints=[TAINT1]), b.pod("p", "n1")]
    assert evicted(plan_for(objs, NT, {"includedTaints": []})) == []
    assert evicted(plan_for(objs, NT, {"includedTaints": None})) == ["p"]
    assert evicted(plan_for(objs, NT, {"excludedTaints": []})) == ["p"]


def test_key_only_names_match_any_value_and_value_less_taints() -> None:
    objs = [b.node("n1", taints=[b.taint("bare-key")]), b.node("n2", taints=[b.taint("k", "v")]),
            b.pod("a", "n1"), b.pod("b", "n2")]
    assert evicted(plan_for(objs, NT, {"includedTaints": ["bare-key"]})) == ["a"]
    assert evicted(plan_for(objs, NT, {"includedTaints": ["k"]})) == ["b"]
    assert evicted(plan_for(objs, NT, {"excludedTaints": ["bare-key="]})) == ["a", "b"]  # "key=" names nothing


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        (b.toleration("", operator="Exists"), []),  # tolerates everything
        (b.toleration("dedicated", operator="Exists"), []),
        (b.toleration("dedicated", "gpu"), []),  # empty effect: every effect
        (b.toleration("dedicated", "cpu"), ["p"]),
        (b.toleration("dedicated", "gpu", "NoExecute"), ["p"]),
    ],
)
def test_node_taints_toleration_forms(toleration: dict[str, Any], expected: list[str]) -> None:
    objs = [b.node("n1", taints=[b.taint("dedicated", "gpu")]), b.pod("p", "n1", tolerations=[toleration])]
    assert evicted(plan_for(objs, NT)) == expected


def test_node_taints_namespaces_label_selector_and_scope() -> None:
    objs = [b.node("n1", taints=[TAINT1]), b.pod("a-web", "n1", namespace="a", labels={"app": "web"}),
            b.pod("a-db", "n1", namespace="a", labels={"app": "db"}), b.pod("b-web", "n1", namespace="b",
                                                                           labels={"app": "web"})]
    assert evicted(plan_for(objs, NT, {"namespaces": {"exclude": ["a"]}})) == ["b-web"]
    assert evicted(plan_for(objs, NT, {"labelSelector": {"matchLabels": {"app": "web"}}})) == ["a-web", "b-web"]
    plan = plan_for(objs, NT, scope=Scope(namespaces={"a"}))
    assert evicted(plan) == ["a-web", "a-db"]
    assert verdict(plan, "b-web", "b") == ("keep", "protected: namespace b not in scope (-n a)")


@pytest.mark.parametrize(
    ("args", "path", "message"),
    [
        ({"excludedTaints": ["do-not-evict"], "includedTaints": ["testTaint1=test1"]}, "includedTaints",
         "cannot be combined with excludedTaints; set only one of them"),
        ({"namespaces": {"include": ["default"], "exclude": ["kube-system"]}}, "namespaces",
         "only one of include and exclude can be set"),
        ({"labelSelector": {"matchExpressions": [{"operator": "In"}]}}, "labelSelector",
         "matchExpressions[0] needs key and operator"),
        ({"includePreferNoSchedule": "yes"}, "includePreferNoSchedule", "must be a boolean, not 'yes'"),
        ({"excludedTaints": "a=b"}, "excludedTaints", "must be a list, not 'a=b'"),
    ],
)
def test_node_taints_args_validation(args: dict[str, Any], path: str, message: str) -> None:
    assert config_error(NT, args) == f"{ARGS_PATH}.{path}: {message}"


def test_node_taints_args_each_change_the_plan() -> None:
    """Each kind of arg loads and does what it says on one tainted node with three pods."""
    objs = [b.node("n1", taints=[b.taint("testTaint1", "test1")]), b.node("spare"),
            b.pod("a", "n1", namespace="default", labels={"role": ""}), b.pod("b", "n1", namespace="default"),
            b.pod("c", "n1", namespace="other", labels={"role": ""})]

    def names(args: dict[str, Any]) -> list[str]:
        return sorted(c.pod.name for c in plan_for(objs, NT, args).candidates)

    assert names({}) == ["a", "b", "c"]
    assert names({"namespaces": {"include": ["default"]}}) == ["a", "b"]
    assert names({"labelSelector": {"matchLabels": {"role": ""}}}) == ["a", "c"]
    assert names({"excludedTaints": ["testTaint1=test1"]}) == []
    assert names({"excludedTaints": ["testTaint1=other"]}) == ["a", "b", "c"]


def _tol(key: str = "", operator: str = "Equal", value: str = "", effect: str = "") -> Toleration:
    return Toleration(key, operator, value, effect)


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        (_tol("foo", "Exists", effect="NoSchedule"), Taint("foo", "", "NoSchedule"), True),
        (_tol("foo", "Exists", effect="NoSchedule"), Taint("foo", "bar", "NoSchedule"), True),
        (_tol("", "Exists", effect="NoSchedule"), Taint("foo", "bar", "NoSchedule"), True),
        (_tol("foo", "Equal", "bar", "NoSchedule"), Taint("foo", "bar", "NoSchedule"), True),
        (_tol("foo", "Equal", "value1", "NoSchedule"), Taint("foo", "value2", "NoSchedule"), False),
        (_tol("foo", "Equal", "bar", "NoSchedule"), Taint("foo", "bar", "NoExecute"), False),
        (_tol("foo", "", "bar"), Taint("foo", "bar", "PreferNoSchedule"), True),  # empty operator is Equal
        (_tol("foo", "Gt", "5"), Taint("foo", "7", "NoSchedule"), True),
        (_tol("foo", "Gt", "5"), Taint("foo", "5", "NoSchedule"), False),
        (_tol("foo", "Lt", "5"), Taint("foo", "-3", "NoSchedule"), True),
        (_tol("foo", "Lt", "5"), Taint("foo", "05", "NoSchedule"), False),  # not a canonical integer
        (_tol("foo", "Lt", "x"), Taint("foo", "1", "NoSchedule"), False),
        (_tol("foo", "Sometimes", "bar"), Taint("foo", "bar", "NoSchedule"), False),
    ],
)
def test_toleration_matching(toleration: Toleration, taint: Taint, expected: bool) -> None:
    assert toleration_tolerates(toleration, taint) is expected


# === RemovePodsViolatingInterPodAntiAffinity ======================================================================

REGION = {"region": "main-region"}


def _avoids(match: dict[str, str], key: str = "region") -> dict[str, Any]:
    return b.pod_anti_affinity(expressions=[b.label_in(k, v) for k, v in match.items()], topology_key=key)


def _avoider(name: str, node: str = "n1", **kw: Any) -> dict[str, Any]:
    return b.pod(name, node, affinity=_avoids({"foo": "bar"}), **kw)


def _four_on_n1() -> list[dict[str, Any]]:
    return [b.node("n1", labels=REGION), _avoider("p1"), b.pod("p2", "n1", labels={"foo": "bar"}), _avoider("p3"),
            _avoider("p4")]


@pytest.mark.parametrize(
    ("case", "objs", "evictor", "limits", "expected"),
    [
        ("no limits", _four_on_n1, {}, {}, ["p1", "p3", "p4"]),
        ("per-node limit 3", _four_on_n1, {}, {"maxNoOfPodsToEvictPerNode": 3}, ["p1", "p3", "p4"]),
        ("per-namespace limit 3", _four_on_n1, {}, {"maxNoOfPodsToEvictPerNamespace": 3}, ["p1", "p3", "p4"]),
        ("total limit 1", _four_on_n1, {}, {"maxNoOfPodsToEvictPerNamespace": 3, "maxNoOfPodsToEvictTotal": 1},
         ["p1"]),
        ("only the lowest priority of a conflicting group goes",
         lambda: [b.node("n1", labels=REGION),
                  b.pod("p5", "n1", labels={"foo": "bar"}, affinity=_avoids({"foo1": "bar1"}), priority=100),
                  b.pod("p6", "n1", labels={"foo": "bar"}, affinity=_avoids({"foo1": "bar1"}), priority=50),
                  b.pod("p7", "n1", labels={"foo1": "bar1"}, affinity=_avoids({"foo": "bar"}), priority=0)],
         {}, {}, ["p7"]),
        ("the pod conflicting with a critical pod goes, the critical pod stays",
         lambda: [b.node("n1", labels=REGION), _avoider("p1"),
                  b.pod("non-evict", "n1", owner=None, priority=CRITICAL, labels={"foo": "bar"})],
         {}, {"maxNoOfPodsToEvictPerNode": 1}, ["p1"]),
        ("nodeFit: the other node does not match the pod's nodeSelector",
         lambda: [b.node("n1", labels=REGION), b.node("n2", labels={"datacenter": "east"}),
                  _avoider("p8", nodeSelector={"datacenter": "west"}),
                  b.pod("non-evict", "n1", owner=None, priority=CRITICAL, labels={"foo": "bar"})],
         {"nodeFit": True}, {"maxNoOfPodsToEvictPerNode": 1}, []),
        ("nodeFit: the only other node is cordoned",
         lambda: [b.node("n1", labels=REGION), b.node("n3", unschedulable=True), _avoider("p8"),
                  b.pod("non-evict", "n1", owner=None, priority=CRITICAL, labels={"foo": "bar"})],
         {"nodeFit": True}, {"maxNoOfPodsToEvictPerNode": 1}, []),
        ("terminating pods stay",
         lambda: [b.node("n1", labels=REGION), b.terminating(_avoider("p9", labels={"foo": "bar"})),
                  b.terminating(_avoider("p10", labels={"foo": "bar"}))], {}, {}, []),
        ("nodeFit: the only other node has no room",
         lambda: [*_four_on_n1(), b.node("n4", cpu="2m", memory="2", pods=1)], {"nodeFit": True},
         {"maxNoOfPodsToEvictPerNode": 3}, []),
        ("a pod on another node of the same region counts",
         lambda: [b.node("n1", labels=REGION), b.node("n5", cpu="200m", labels=REGION), _avoider("p1"),
                  b.pod("p11", "n5", labels={"foo": "bar"})], {}, {}, ["p1"]),
    ],
)
def test_anti_affinity_upstream_table(case: str, objs: Any, evictor: dict[str, Any], limits: dict[str, int],
                                      expected: list[str]) -> None:
    plan = plan_for(objs(), IPA, evictor_args=evictor, limits=limits)
    assert evicted(plan) == expected, case
    assert plan.errors == []


def test_anti_affinity_reasons() -> None:
    objs = [b.node("n1", labels={"zone": "z1"}), b.node("n2", labels={"zone": "z1"}),
            b.pod("db-1", "n1", labels={"app": "db"}), b.pod("db-2", "n2", labels={"app": "db"}),
            b.pod("web", "n1", affinity=b.pod_anti_affinity({"app": "db"})),
            b.pod("api", "n2", affinity=b.pod_anti_affinity({"app": "db"}, "zone", namespaces=["default"]))]
    plan = plan_for(objs, IPA)
    assert [(c.pod.name, c.reason) for c in plan.candidates] == [
        ("web", "violates required anti-affinity (app=db, topologyKey kubernetes.io/hostname) with default/db-1 "
                "on the same node"),
        ("api", "violates required anti-affinity (app=db, topologyKey zone) with default/db-1 on node n1 "
                "(same zone=z1)"),
    ]
    assert verdict(plan, "db-1") == ("keep", "no enabled plugin selects it")


def test_anti_affinity_domains() -> None:
    objs = [b.node("n1", labels={"zone": "a"}), b.node("n2", labels={"zone": "b"}), b.node("n3"), b.node("n4"),
            b.pod("other-zone", "n1", affinity=b.pod_anti_affinity({"app": "db"}, "zone")),
            b.pod("db-b", "n2", labels={"app": "db"}),
            # n3 and n4 have no zone label: only pods on the same node share the domain (upstream's rule)
            b.pod("same-node", "n3", affinity=b.pod_anti_affinity({"app": "db"}, "zone")),
            b.pod("db-3", "n3", labels={"app": "db"}),
            b.pod("unlabelled-nodes", "n4", affinity=b.pod_anti_affinity({"app": "cache"}, "zone")),
            b.pod("cache", "n3", labels={"app": "cache"})]
    plan = plan_for(objs, IPA)
    assert evicted(plan) == ["same-node"]
    assert verdict(plan, "other-zone") == ("keep", f"{IPA}: no pod in its anti-affinity domains matches its "
                                                   "required anti-affinity")


def test_anti_affinity_namespaces_of_the_term() -> None:
    term_ns = b.pod_anti_affinity({"app": "db"}, namespaces=["data"])
    all_ns = b.pod_anti_affinity({"app": "db"}, namespaceSelector={})
    objs = [b.node("n1"), b.pod("db", "n1", namespace="data", labels={"app": "db"}),
            b.pod("db-local", "n1", namespace="shop", labels={"app": "db"}, cpu="50m"),
            b.pod("listed", "n1", namespace="web", affinity=term_ns),
            b.pod("own-namespace", "n1", namespace="data", affinity=b.pod_anti_affinity({"app": "db"})),
            # a namespaceSelector is not evaluated, as upstream: only the pod's own namespace is searched
            b.pod("selector-ignored", "n1", namespace="web", affinity=all_ns)]
    plan = plan_for(objs, IPA)
    assert sorted(evicted(plan)) == ["listed", "own-namespace"]


def test_anti_affinity_selectors() -> None:
    objs = [b.node("n1"), b.pod("a", "n1", labels={"tier": "cache", "app": "redis"}),
            b.pod("exists", "n1", affinity=b.pod_anti_affinity(
                expressions=[{"key": "tier", "operator": "Exists"}])),
            b.pod("notin", "n1", affinity=b.pod_anti_affinity(
                expressions=[{"key": "tier", "operator": "NotIn", "values": ["cache"]}])),
            b.pod("in-two", "n1", affinity=b.pod_anti_affinity(
                {"app": "redis"}, expressions=[b.label_in("tier", "db", "cache")])),
            b.pod("mismatch", "n1", affinity=b.pod_anti_affinity(
                {"app": "redis"}, expressions=[b.label_in("tier", "db")])),
            b.pod("null", "n1", affinity={"podAntiAffinity": {REQUIRED: [{"topologyKey": "kubernetes.io/hostname"}]}}),
            b.pod("preferred-only", "n1", affinity={"podAntiAffinity": {PREFERRED: [
                {"weight": 1, "podAffinityTerm": {"labelSelector": {}, "topologyKey": "kubernetes.io/hostname"}}]}})]
    plan = plan_for(objs, IPA)
    # notin: the pods without a tier label match `tier notin (cache)`, and so do the other avoiders
    assert sorted(evicted(plan)) == ["exists", "in-two", "notin"]
    for kept in ("mismatch", "null"):
        assert verdict(plan, kept)[1].startswith(f"{IPA}: no pod")
    assert verdict(plan, "preferred-only") == ("keep", "no enabled plugin selects it")


def test_an_evicted_pod_stops_counting() -> None:
    mutual = b.pod_anti_affinity({"app": "x"})
    objs = [b.node("n1"), b.pod("x-high", "n1", labels={"app": "x"}, affinity=mutual, priority=10),
            b.pod("x-low", "n1", labels={"app": "x"}, affinity=mutual, priority=1),
            b.pod("x-none", "n1", labels={"app": "x"}, affinity=mutual)]
    plan = plan_for(objs, IPA)
    assert evicted(plan) == ["x-none", "x-low"]  # lowest priority first (no priority before any); x-high is alone
    plan = plan_for(objs, IPA, evictor_args={"labelSelector": {"matchLabels": {"never": "x"}}})
    assert evicted(plan) == []  # a pod that cannot be evicted still counts against the others


def test_a_pod_evicted_by_an_earlier_plugin_does_not_count() -> None:
    objs = [b.node("n1", taints=[b.taint("drain")]), b.node("n2"),
            b.pod("db", "n1", labels={"app": "db"}),
            b.pod("web", "n1", tolerations=[b.toleration("drain", operator="Exists")],
                  affinity=b.pod_anti_affinity({"app": "db"}))]
    plan = plan_for(objs, IPA, more=[(NT, "deschedule", {})])
    assert [(c.pod.name, c.plugin) for c in plan.candidates] == [("db", NT)]


def test_upstream_skips_pods_with_the_candidates_name() -> None:
    """Upstream compares names only when it skips the candidate itself, so a same-named pod in another
    namespace the term lists is skipped too; we keep that."""
    avoid = b.pod_anti_affinity({"app": "db"}, namespaces=["a", "b"])
    objs = [b.node("n1"), b.pod("twin", "n1", namespace="a", affinity=avoid),
            b.pod("twin", "n1", namespace="b", labels={"app": "db"})]
    assert evicted(plan_for(objs, IPA)) == []


def test_anti_affinity_args_limit_candidates_and_counted_pods() -> None:
    """Upstream lists the pods through the plugin's namespaces/labelSelector once: pods outside them are
    neither candidates nor counted against the others."""
    objs = [b.node("n1"), b.pod("db", "n1", namespace="data", labels={"app": "db"}),
            b.pod("web", "n1", namespace="shop", labels={"app": "web"},
                  affinity=b.pod_anti_affinity({"app": "db"}, namespaces=["data"]))]
    assert evicted(plan_for(objs, IPA)) == ["web"]
    assert evicted(plan_for(objs, IPA, {"namespaces": {"include": ["shop"]}})) == []
    assert evicted(plan_for(objs, IPA, {"namespaces": {"exclude": ["shop"]}})) == []
    assert evicted(plan_for(objs, IPA, {"labelSelector": {"matchLabels": {"app": "web"}}})) == []
    assert evicted(plan_for(objs, IPA, {"labelSelector": {"matchExpressions": [
        {"key": "app", "operator": "In", "values": ["web", "db"]}]}})) == ["web"]


def test_anti_affinity_ignores_pods_on_nodes_not_considered() -> None:
    objs = [b.node("n1", labels={"zone": "a"}), b.node("n2", labels={"zone": "a"}, ready=False),
            b.pod("db", "n2", labels={"app": "db"}), b.pod("web", "n1", affinity=b.pod_anti_affinity({"app": "db"},
                                                                                                     "zone"))]
    assert evicted(plan_for(objs, IPA)) == []


def test_anti_affinity_node_limit_moves_to_the_next_node() -> None:
    objs = [b.node("n1"), b.node("n2")]
    for node in ("n1", "n2"):
        objs.append(b.pod(f"{node}-db", node, labels={"app": "db"}))
        objs += [b.pod(f"{node}-web-{i}", node, affinity=b.pod_anti_affinity({"app": "db"})) for i in range(3)]
    plan = plan_for(objs, IPA, limits={"maxNoOfPodsToEvictPerNode": 1})
    assert evicted(plan) == ["n1-web-0", "n2-web-0"]
    assert verdict(plan, "n1-web-1")[1].endswith("but maxNoOfPodsToEvictPerNode (1) reached on n1")


def test_anti_affinity_default_evictor_protections_apply() -> None:
    avoid = b.pod_anti_affinity({"app": "db"})
    objs = [b.node("n1"), b.pod("db", "n1", labels={"app": "db"}),
            b.pod("ds", "n1", owner="DaemonSet", affinity=avoid),
            b.pod("mirror", "n1", annotations={"kubernetes.io/config.mirror": "x"}, affinity=avoid),
            b.pod("forced", "n1", owner=None, annotations={"descheduler.alpha.kubernetes.io/evict": ""},
                  affinity=avoid)]
    plan = plan_for(objs, IPA)
    assert evicted(plan) == ["forced"]
    assert verdict(plan, "ds") == ("keep", "protected: DaemonSet pod")
    assert verdict(plan, "mirror") == ("keep", "protected: mirror pod")


@pytest.mark.parametrize(
    ("args", "path", "message"),
    [
        ({"namespaces": {"include": ["default"], "exclude": ["kube-system"]}}, "namespaces",
         "only one of include and exclude can be set"),
        ({"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}},
         "labelSelector", "matchExpressions[0]: operator Exists takes no values"),
        ({"namespaces": ["default"]}, "namespaces", "must be an object, not ['default']"),
    ],
)
def test_anti_affinity_args_validation(args: dict[str, Any], path: str, message: str) -> None:
    assert config_error(IPA, args) == f"{ARGS_PATH}.{path}: {message}"


def test_describe_label_selector() -> None:
    assert describe_label_selector({"matchLabels": {"app": "db"}, "matchExpressions": [
        b.label_in("tier", "a", "b"), {"key": "x", "operator": "NotIn", "values": ["1"]},
        {"key": "y", "operator": "Exists"}, {"key": "z", "operator": "DoesNotExist"}]}) == \
        "app=db,tier in (a,b),x notin (1),y,!z"
    assert describe_label_selector({}) == "<all>"


def _anti_affinity_cluster(scale: int) -> ClusterState:
    """5,000 x scale pods on 250 x scale nodes in 3 zones; a quarter carry hostname or zone anti-affinity; every
    app's 40 replicas share one namespace."""
    zones = ("z1", "z2", "z3")
    n_nodes, n_apps = 250 * scale, 125 * scale
    objs: list[dict[str, Any]] = [b.node(f"node-{i:04d}", cpu="64", pods=200, labels={"zone": zones[i % 3]})
                                  for i in range(n_nodes)]
    for i in range(5_000 * scale):
        app = f"app-{i % n_apps}"
        kw: dict[str, Any] = {"namespace": f"ns-{i % 20}", "labels": {"app": app, "tier": ("web", "db")[i % 2]},
                              "owner_name": app}
        if i % 8 == 0:
            kw["affinity"] = b.pod_anti_affinity({"app": app})
        elif i % 8 == 4:
            kw["affinity"] = b.pod_anti_affinity({"tier": "db", "app": app}, "zone")
        objs.append(b.pod(f"pod-{i:05d}", f"node-{(i * 7) % n_nodes:04d}", **kw))
    return _state(objs)


def test_anti_affinity_scales_linearly() -> None:
    """Comparing every pod with every pod would grow 16x with 4x the pods; the indexes keep it near 4x."""
    policy = as_upstream(decode_policy(policy_from_plugins([(IPA, "deschedule", {})], {}, {}), registry(), "flags"))
    seconds = {}
    for scale in (1, 4):
        state = _anti_affinity_cluster(scale)
        plans = []
        seconds[scale] = cpu_seconds(lambda state=state, plans=plans: plans.append(run(policy, state, Scope())))
        plan = plans[0]
        assert plan.errors == []
        # the zone-level avoiders find their own app's db pods
        assert len(plan.candidates) > 0 and all(c.plugin == IPA for c in plan.candidates)
    assert_grows_linearly(seconds[1], seconds[4], IPA)


def _direct_anti_affinity(state: ClusterState, nodes: list[Any]) -> list[str]:
    """Upstream's loop written plainly, every candidate against every counted pod, for cross-checking the
    indexed plugin on small clusters (all pods here are evictable, none terminal)."""
    by_name = {n.name: n for n in nodes}
    live = [p for n in nodes for p in state.pods_on_node(n.name)]
    out = []
    for node in nodes:
        for pod in eviction_order(p for p in live if p.node_name == node.name):
            hit = False
            for term in required_anti_affinity_terms(pod):
                matcher = anti_affinity_matcher(term)
                if matcher is None:
                    continue
                namespaces = anti_affinity_namespaces(pod, term)
                hit = any(o.name != pod.name and o.namespace in namespaces and matcher(o.labels)
                          and same_topology(node, by_name[o.node_name], term.get("topologyKey", "")) for o in live)
                if hit:
                    break
            if hit:
                out.append(pod.key)
                live.remove(pod)
    return out


@pytest.mark.parametrize("seed", range(8))
def test_indexed_anti_affinity_agrees_with_a_direct_check(seed: int) -> None:
    rnd = random.Random(seed)
    objs: list[dict[str, Any]] = [b.node(f"n{i}", labels={k: v for k, v in (("zone", rnd.choice("ab")),
                                                                            ("rack", rnd.choice("xyz")))
                                                          if rnd.random() < 0.8}) for i in range(12)]
    for i in range(150):
        labels = {k: rnd.choice(vals) for k, vals in (("app", "abc"), ("tier", "wd")) if rnd.random() < 0.8}
        terms = []
        for _ in range(rnd.choice((0, 0, 1, 2))):
            selector: dict[str, Any] = rnd.choice([
                {"matchLabels": {"app": rnd.choice("abc")}},
                {"matchExpressions": [b.label_in("tier", *rnd.sample("wdq", 2))]},
                {"matchExpressions": [{"key": "tier", "operator": rnd.choice(("Exists", "DoesNotExist"))}]},
                {"matchLabels": {"app": rnd.choice("abc")},
                 "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["w"]}]},
                {},
            ])
            term = {"labelSelector": selector, "topologyKey": rnd.choice(("kubernetes.io/hostname", "zone", "rack"))}
            if rnd.random() < 0.3:
                term["namespaces"] = rnd.sample(["s1", "s2", "s3"], 2)
            terms.append(term)
        affinity = {"podAntiAffinity": {REQUIRED: terms}} if terms else None
        objs.append(b.pod(f"p{i}", f"n{rnd.randrange(12)}", namespace=rnd.choice(("s1", "s2", "s3")), labels=labels,
                          priority=rnd.choice((None, 1, 5)), affinity=affinity))
    plan = plan_for(objs, IPA)
    nodes = sorted(plan.state.nodes.values(), key=lambda n: n.name)
    assert [c.pod.key for c in plan.candidates] == _direct_anti_affinity(_state(objs), nodes)
    assert len(plan.candidates) > 5
