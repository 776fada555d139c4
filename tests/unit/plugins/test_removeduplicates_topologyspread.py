"""RemoveDuplicates and RemovePodsViolatingTopologySpreadConstraint through the real runner: a policy from flags,
decoded against the in-tree registry plus these two plugins, run over a ClusterState built from API objects.
The cases restate upstream's test tables (same shapes and counts) in our fixtures."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_desched.errors import ConfigError
from kubectl_desched.framework import PluginSpec, Registry, decode_args
from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.framework.policy_decoder import decode_policy, policy_from_plugins
from kubectl_desched.framework.runner import Scope, run
from kubectl_desched.model.objects import Pod, node_from_json, pod_from_json
from kubectl_desched.model.state import ClusterState
from kubectl_desched.plugins import in_tree_registry
from kubectl_desched.plugins.upstream.removeduplicates import RemoveDuplicates
from kubectl_desched.plugins.upstream.removepodsviolatingtopologyspreadconstraint import (
    RemovePodsViolatingTopologySpreadConstraint,
    RemovePodsViolatingTopologySpreadConstraintArgs,
)
from kubectl_desched.ui.explain import Verdicts
from tests import builders as b
from tests.builders import as_upstream
from tests.scaling import assert_grows_linearly, cpu_seconds

RD = "RemoveDuplicates"
TSC = "RemovePodsViolatingTopologySpreadConstraint"
WEB = {"app": "web"}


def registry() -> Registry:
    reg = in_tree_registry()
    for plugin in (RemoveDuplicates, RemovePodsViolatingTopologySpreadConstraint):
        if plugin.name not in reg:
            reg.register(PluginSpec.of(plugin))
    return reg


def _state(objs: list[dict[str, Any]]) -> ClusterState:
    return b.state(objs)


def plan_for(objs: list[dict[str, Any]], plugin: str, args: dict[str, Any] | None = None, *,
             evictor_args: dict[str, Any] | None = None, limits: dict[str, int] | None = None,
             scope: Scope | None = None) -> EvictionPlan:
    return b.plan(_state(objs), [(plugin, "balance", args or {})], evictor_args=evictor_args, limits=limits,
                  scope=scope, registry=registry())


def evicted(plan: EvictionPlan) -> list[str]:
    assert plan.errors == []
    return [c.pod.name for c in plan.candidates]


def verdict(plan: EvictionPlan, name: str, namespace: str = "default") -> tuple[str, str]:
    p: Pod | None = plan.state.find_pod(namespace, name)
    assert p is not None
    return Verdicts(plan).of(p)


def config_error(plugin: str, args: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        plan_for([b.node("n1")], plugin, args)
    return str(info.value)


ARGS_AT = "flags: profiles[0].pluginConfig[1].args"


# === RemoveDuplicates ==============================================================================================


def node(name: str, **kw: Any) -> dict[str, Any]:
    return b.node(name, cpu="2", pods=10, **kw)


def rs(name: str, node_name: str, namespace: str = "default", owner: str = "web", **kw: Any) -> dict[str, Any]:
    """A ReplicaSet pod of 100m, image app:1."""
    return b.pod(name, node_name, namespace=namespace, owner_name=owner, **kw)


def rs_on(layout: dict[str, int], owner: str = "web", prefix: str = "p", start: int = 1,
          **kw: Any) -> list[dict[str, Any]]:
    """Pods of one ReplicaSet, numbered in node order: {"n1": 2, "n2": 1} -> p1, p2 on n1, p3 on n2."""
    out, i = [], start
    for node_name, count in layout.items():
        for _ in range(count):
            out.append(rs(f"{prefix}{i}", node_name, owner=owner, **kw))
            i += 1
    return out


def test_three_replicas_on_one_of_two_nodes() -> None:
    objs = [node("n1"), node("n2"), *(rs(f"p{i}", "n1", "dev") for i in (1, 2, 3))]
    plan = plan_for(objs, RD)
    assert evicted(plan) == ["p3"]
    assert plan.candidates[0].reason == "3 pods of ReplicaSet dev/web on n1, more than the 2 per feasible node"
    assert verdict(plan, "p2", "dev") == (
        "keep", "RemoveDuplicates: not moved: n1 keeps 2 pods of ReplicaSet dev/web (2 per feasible node)")
    assert verdict(plan, "p1", "dev") == ("keep", "no enabled plugin selects it")  # the original


@pytest.mark.parametrize(("args", "expected"), [
    ({}, ["p3", "p6"]),
    ({"excludeOwnerKinds": ["ReplicaSet"]}, []),
    ({"excludeOwnerKinds": ["Job"]}, ["p3", "p6"]),
    ({"namespaces": {"include": ["test"]}}, ["p6"]),
    ({"namespaces": {"exclude": ["test"]}}, ["p3"]),
])
def test_owner_kinds_and_namespaces(args: dict[str, Any], expected: list[str]) -> None:
    # the same ReplicaSet name in two namespaces: two groups
    objs = [node("n1"), node("n2"), *(rs(f"p{i}", "n1", "dev") for i in (1, 2, 3)),
            *(rs(f"p{i}", "n1", "test") for i in (4, 5, 6))]
    assert evicted(plan_for(objs, RD, args)) == expected


def test_protected_pods_are_not_duplicates() -> None:
    objs = [node("n1"), node("n2"), *(b.pod(f"ds{i}", "n1", owner="DaemonSet", owner_name="ds") for i in range(3))]
    objs += [rs(f"local{i}", "n1", owner="local", volumes=[{"name": "tmp", "emptyDir": {}}]) for i in range(3)]
    objs += [rs(f"mirror{i}", "n1", owner="mirror", annotations={"kubernetes.io/config.mirror": "x"})
             for i in range(3)]
    objs += [rs(f"critical{i}", "n1", owner="critical", priority=2_000_000_000) for i in range(3)]
    plan = plan_for(objs, RD)
    assert evicted(plan) == []


def test_images_decide_what_is_a_duplicate() -> None:
    objs = [node("n1"), node("n2"),
            b.with_images(rs("foo", "n1"), "foo"), b.with_images(rs("bar", "n1"), "bar"),  # same owner, other image
            b.with_images(rs("solo", "n1", owner="multi"), "a", "b"),  # two containers: not a duplicate of itself
            b.with_images(rs("subset1", "n1", owner="sub"), "x"),
            b.with_images(rs("subset2", "n1", owner="sub"), "x", "y")]  # shares one image only
    assert evicted(plan_for(objs, RD)) == []


def test_image_order_does_not_matter() -> None:
    objs = [node("n1"), node("n2"), *(b.with_images(rs(f"p{i}", "n1"), *imgs)
                                      for i, imgs in enumerate([("a", "b"), ("b", "a"), ("a", "b")]))]
    assert evicted(plan_for(objs, RD)) == ["p2"]


def test_only_real_duplicates_among_an_owners_pods() -> None:
    # p1 and p4 share images: a group of two over three nodes, cap 1 -> p4 goes; bar and baz are alone
    objs = [node("n1"), node("n2"), node("n3")]
    objs += [b.with_images(rs(name, "n1"), "base", image)
             for name, image in (("p1", "foo"), ("p2", "bar"), ("p3", "baz"), ("p4", "foo"))]
    plan = plan_for(objs, RD)
    assert evicted(plan) == ["p4"]
    assert plan.candidates[0].reason == "2 pods of ReplicaSet default/web on n1, more than the 1 per feasible node"


@pytest.mark.parametrize(("layout", "nodes", "expected"), [
    ({"n1": 5, "n2": 3, "n3": 1}, 3, ["p4", "p5"]),  # 9 over 3 nodes: cap 3
    ({"n1": 2}, 3, ["p2"]),  # 2 over 3 nodes: cap 1
    ({"n1": 1}, 3, []),
    ({"n1": 3, "n2": 3}, 2, []),
])
def test_uniform_spread(layout: dict[str, int], nodes: int, expected: list[str]) -> None:
    objs = [node(f"n{i}") for i in range(1, nodes + 1)] + rs_on(layout)
    assert evicted(plan_for(objs, RD)) == expected


def test_pods_on_nodes_outside_the_selection_do_not_count() -> None:
    # 8 pods on the two considered nodes: cap 4, n1 holds 5
    objs = [node("n1"), node("n2"), node("n3"), *rs_on({"n1": 5, "n2": 3, "n3": 1})]
    assert evicted(plan_for(objs, RD, scope=Scope(node_names={"n1", "n2"}))) == ["p5"]


def test_two_groups_counted_apart() -> None:
    objs = [node("n1"), node("n2"), node("n3"), *rs_on({"n1": 5, "n2": 3, "n3": 1}, owner="rs1"),
            *rs_on({"n1": 1, "n2": 3, "n3": 5}, owner="rs2", start=21)]
    assert evicted(plan_for(objs, RD)) == ["p4", "p5", "p28", "p29"]


def test_pods_with_two_owners_are_evicted_once() -> None:
    # every pod is in both groups; upstream calls evict twice for p4 and p5 (and counts 4), we plan each once
    objs = [node("n1"), node("n2"), node("n3")]
    objs += [b.with_owners(p, ("ReplicaSet", "rs1"), ("ReplicaSet", "rs2"))
             for p in rs_on({"n1": 5, "n2": 3, "n3": 1})]
    plan = plan_for(objs, RD)
    assert evicted(plan) == ["p4", "p5"]
    assert plan.candidates[0].reason == "5 pods of ReplicaSet default/rs1 on n1, more than the 3 per feasible node"


def _masters_and_workers(master_kw: dict[str, Any], worker_kw: dict[str, Any]) -> list[dict[str, Any]]:
    return ([node(f"worker{i}", **worker_kw) for i in (1, 2, 3)] +
            [node(f"master{i}", **master_kw) for i in (1, 2, 3)])


def _on_workers(pod_kw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    placed = ["worker1"] * 5 + ["worker2"] * 3 + ["worker3"]
    return [rs(f"p{i + 1}", n, **pod_kw[i % len(pod_kw)]) for i, n in enumerate(placed)]


def test_feasible_nodes_respect_taints() -> None:
    control_plane = {"taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]}
    tolerations = [[{"key": k, "operator": "Equal", "value": v, "effect": "NoSchedule"}] for k, v in
                   (("k1", "v1"), ("k2", "v2"))]
    objs = _masters_and_workers(control_plane, {}) + _on_workers([{"tolerations": t} for t in tolerations])
    assert evicted(plan_for(objs, RD)) == ["p4", "p5"]  # 9 pods over 3 feasible workers
    # without the taint, all six nodes are feasible: cap 2, so worker1 and worker2 give pods
    objs = _masters_and_workers({}, {}) + _on_workers([{"tolerations": t} for t in tolerations])
    assert evicted(plan_for(objs, RD)) == ["p3", "p4", "p5", "p8"]


def test_feasible_nodes_respect_required_node_affinity() -> None:
    def not_master(other: str) -> dict[str, Any]:
        exprs = [{"key": "node-role.kubernetes.io/control-plane", "operator": "DoesNotExist"},
                 {"key": other, "operator": "DoesNotExist"}]
        return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": exprs}]}}}}
    objs = (_masters_and_workers({"labels": {"node-role.kubernetes.io/control-plane": ""}}, {})
            + _on_workers([not_master("k1"), not_master("k2")]))
    assert evicted(plan_for(objs, RD)) == ["p4", "p5"]


def test_feasible_nodes_respect_node_selector() -> None:
    selectors = [{"nodeSelector": {"node-role.kubernetes.io/worker": v}} for v in ("k1", "k2")]
    objs = (_masters_and_workers({}, {"labels": {"node-role.kubernetes.io/worker": "k2"}})
            + _on_workers(selectors))
    plan = plan_for(objs, RD)
    # the k2 pods make the workers feasible; p5 (k1, fits no node) still goes, as upstream
    assert evicted(plan) == ["p4", "p5"]


def test_no_feasible_nodes_leaves_the_group_alone() -> None:
    selectors = [{"nodeSelector": {"node-role.kubernetes.io/worker": v}} for v in ("k1", "k2")]
    plan = plan_for(_masters_and_workers({}, {}) + _on_workers(selectors), RD)
    assert evicted(plan) == []
    assert verdict(plan, "p2") == ("keep", "RemoveDuplicates: not moved: ReplicaSet default/web has 0 feasible "
                                           "node(s), fewer than two to spread over")


def test_cordoned_node_counts_as_feasible_without_node_fit() -> None:
    objs = [node("n1"), node("n2", unschedulable=True), *rs_on({"n1": 3})]
    assert evicted(plan_for(objs, RD)) == ["p3"]  # as upstream: only taints and selectors narrow the nodes
    assert evicted(plan_for(objs, RD, evictor_args={"nodeFit": True})) == []


@pytest.mark.parametrize(("other", "pod_kw", "expected"), [
    (node("n2", taints=[{"key": "hardware", "value": "gpu", "effect": "NoSchedule"}]), {}, []),
    (node("n2", labels={"datacenter": "east"}), {"nodeSelector": {"datacenter": "west"}}, []),
    (node("n2", unschedulable=True), {}, []),
    (b.node("n2", cpu="200m", pods=10), {}, ["p3"]),  # 100m free after the other pod's 100m
    (b.node("n2", cpu="150m", pods=10), {}, []),
])
def test_node_fit_of_the_default_evictor(other: dict[str, Any], pod_kw: dict[str, Any],
                                         expected: list[str]) -> None:
    n1_labels = {"datacenter": "west"} if pod_kw else {}
    objs = [node("n1", labels=n1_labels), other, *rs_on({"n1": 3}, **pod_kw),
            b.pod("busy", "n2", cpu="100m", namespace="other", owner=None)]
    assert evicted(plan_for(objs, RD, evictor_args={"nodeFit": True})) == expected


@pytest.mark.parametrize(("limits", "expected"), [
    ({}, ["a3", "a4", "b3", "b4"]),
    ({"maxNoOfPodsToEvictPerNode": 1}, ["a3", "b3"]),
    ({"maxNoOfPodsToEvictTotal": 3}, ["a3", "a4", "b3"]),
    ({"maxNoOfPodsToEvictTotal": 0}, []),
])
def test_limits(limits: dict[str, int], expected: list[str]) -> None:
    # two groups of 4 over two nodes, a on n1 and b on n2: cap 2, each node gives two
    objs = [node("n1"), node("n2"), *rs_on({"n1": 4}, owner="a", prefix="a"), *rs_on({"n2": 4}, owner="b", prefix="b")]
    assert evicted(plan_for(objs, RD, limits=limits)) == expected


def test_within_the_cap_is_explained() -> None:
    objs = [node("n1"), node("n2"), *rs_on({"n1": 2, "n2": 2})]
    plan = plan_for(objs, RD)
    assert evicted(plan) == []
    assert verdict(plan, "p2") == ("keep", "RemoveDuplicates: not moved: 2 pods of ReplicaSet default/web on n1, "
                                           "within the 2 per feasible node")


def test_remove_duplicates_args_errors() -> None:
    assert config_error(RD, {"namespaces": {"include": ["a"], "exclude": ["b"]}}) == (
        f"{ARGS_AT}.namespaces: only one of include and exclude can be set")
    assert config_error(RD, {"excludeOwnerKinds": "Job"}) == f"{ARGS_AT}.excludeOwnerKinds: must be a list, not 'Job'"
    assert config_error(RD, {"excludeOwnerKinds": [3]}) == f"{ARGS_AT}.excludeOwnerKinds[0]: must be a string, not 3"


# === RemovePodsViolatingTopologySpreadConstraint =================================================================

NS = "ns1"


def zone_node(name: str, zone: str, cpu: str = "2", pods: int = 10, **kw: Any) -> dict[str, Any]:
    labels = {"zone": zone, **kw.pop("labels", {})}
    return b.node(name, cpu=cpu, pods=pods, labels=labels, **kw)


def zones(*names: str, **kw: Any) -> list[dict[str, Any]]:
    """Nodes n1, n2, ... one per zone."""
    return [zone_node(f"n{i}", z, **kw) for i, z in enumerate(names, 1)]


def zone_spread(max_skew: int = 1, **extra: Any) -> list[dict[str, Any]]:
    return [b.spread(max_skew, "zone", WEB, **extra)]


class Pods:
    """Numbered pods p000, p001, ... in creation order (so name order is creation order)."""

    def __init__(self) -> None:
        self.n = 0

    def on(self, node_name: str, count: int = 1, *, labels: dict | None = None,
           constraints: list[dict] | None = None, namespace: str = NS, **kw: Any) -> list[dict[str, Any]]:
        out = []
        for _ in range(count):
            spec = {"topologySpreadConstraints": constraints} if constraints is not None else {}
            out.append(b.pod(f"p{self.n:03d}", node_name, namespace=namespace, owner_name="web",
                             labels=dict(WEB if labels is None else labels), **spec, **kw))
            self.n += 1
        return out


def tsc(objs: list[dict[str, Any]], args: dict[str, Any] | None = None, **kw: Any) -> list[str]:
    return evicted(plan_for(objs, TSC, args, **kw))


def layout(sizes: dict[str, int], constraints: list[dict] | None = None, **kw: Any) -> list[dict[str, Any]]:
    """Every pod carries the constraint (default: zone, maxSkew 1)."""
    pods = Pods()
    return [p for n, count in sizes.items() for p in pods.on(n, count, constraints=constraints or zone_spread(),
                                                              **kw)]


@pytest.mark.parametrize(("sizes", "max_skew", "moved"), [
    ((2, 1), 1, 0),
    ((3, 1), 1, 1),
    ((5, 2), 1, 1),  # [4, 3]
    ((4, 0), 1, 2),  # [2, 2]
    ((2, 6), 2, 1),  # [3, 5]
    ((8, 7, 0), 1, 5),  # [5, 5, 5]
    ((5, 5, 5), 1, 0),
    ((0, 1, 100), 1, 66),  # [34, 33, 34]
    ((0, 1, 3, 5), 1, 3),  # [2, 2, 3, 2]
])
def test_domain_balancing(sizes: tuple[int, ...], max_skew: int, moved: int) -> None:
    names = [f"zone{chr(65 + i)}" for i in range(len(sizes))]
    objs = zones(*names, pods=200) + layout({f"n{i}": s for i, s in enumerate(sizes, 1)},
                                            zone_spread(max_skew))
    assert len(tsc(objs)) == moved


def test_which_pods_leave_the_fuller_domains() -> None:
    # [8, 7, 0]: three from zoneA and two from zoneB, taken from the end of each domain
    objs = zones("zoneA", "zoneB", "zoneC") + layout({"n1": 8, "n2": 7})
    plan = plan_for(objs, TSC)
    assert evicted(plan) == ["p005", "p006", "p007", "p013", "p014"]
    assert plan.candidates[0].reason == "violates topology spread zone maxSkew 1: zoneA 8, zoneB 7, zoneC 0"


def test_reason_for_many_domains_names_the_pods_domain_and_the_smallest() -> None:
    objs = [b.node(f"h{i}", pods=20) for i in range(8)]
    objs += Pods().on("h0", 4, constraints=[b.spread(1, "kubernetes.io/hostname", WEB)])
    plan = plan_for(objs, TSC)
    assert plan.candidates[0].reason == ("violates topology spread kubernetes.io/hostname maxSkew 1: h0 4, "
                                         "smallest h1 0 (8 domains)")


def test_pods_on_nodes_outside_the_run_are_not_counted() -> None:
    # n3 is NotReady: its three zoneB pods are not listed, so the spread is [3, 1], not [3, 4]
    objs = [*zones("zoneA", "zoneB"), zone_node("n3", "zoneB", ready=False), *layout({"n1": 3, "n2": 1, "n3": 3})]
    assert tsc(objs) == ["p002"]


def test_soft_constraints_only_when_asked() -> None:
    soft = zone_spread(when="ScheduleAnyway")
    objs = zones("zoneA", "zoneB") + layout({"n1": 3, "n2": 1}, soft)
    assert tsc(objs) == []
    assert tsc(objs, {"constraints": []}) == []  # an empty list means the default, DoNotSchedule
    assert tsc(objs, {"constraints": ["ScheduleAnyway"]}) == ["p002"]
    assert tsc(objs, {"constraints": ["DoNotSchedule", "ScheduleAnyway"]}) == ["p002"]


def test_constraint_on_one_pod_balances_all_it_selects() -> None:
    pods = Pods()
    objs = zones("zoneA", "zoneB") + pods.on("n1", constraints=zone_spread()) + pods.on("n1", 2) + pods.on("n2")
    assert tsc(objs) == ["p002"]


def test_bare_pods_are_neither_counted_nor_moved() -> None:
    objs = zones("zoneA", "zoneB") + layout({"n1": 3, "n2": 1}, owner=None)
    assert tsc(objs) == []


def test_namespaces_and_label_selector_args() -> None:
    objs = zones("zoneA", "zoneB") + layout({"n1": 2})
    assert tsc(objs, {"namespaces": {"exclude": ["kube-system"]}}) == ["p001"]
    assert tsc(objs, {"namespaces": {"exclude": [NS]}}) == []
    assert tsc(objs, {"namespaces": {"include": ["other"]}}) == []
    for op, values, moved in (("In", ["baz"], []), ("In", ["web"], ["p001"]), ("NotIn", ["baz"], ["p001"])):
        selector = {"matchExpressions": [{"key": "app", "operator": op, "values": values}]}
        assert tsc(objs, {"labelSelector": selector}) == moved


def test_pinned_pods_go_last() -> None:
    # [4, 0] needs two moves; three pods are pinned to zoneA (their pinning also makes their constraints
    # separate, single-domain ones), so the free pod goes and the pinned one taken with it cannot move
    pin_zone = {"nodeSelector": {"zone": "zoneA"}}
    pin_foo = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}]}}}}
    pods = Pods()
    objs = [*zones("zoneA", "zoneB"), *pods.on("n1", 2, constraints=zone_spread(), **pin_zone),
            *pods.on("n1", constraints=zone_spread(), **pin_foo), *pods.on("n1", constraints=zone_spread())]
    plan = plan_for(objs, TSC, evictor_args={"nodeFit": True})
    assert evicted(plan) == ["p003"]
    assert verdict(plan, "p002", NS)[1].endswith("but it fits no node of a below-average domain "
                                                 "(topologyBalanceNodeFit)")


def test_node_affinity_policy_honor_limits_the_domains() -> None:
    # the pods may only run on windows nodes: the linux nodes are no domains, so [3, 3, 2] is balanced
    win = {"nodeSelector": {"os": "windows"}}
    constraint = [b.spread(1, "node", WEB)]
    objs = [b.node(f"lin{i}", labels={"node": f"lin{i}", "os": "linux"}) for i in range(3)]
    objs += [b.node(f"win{i}", labels={"node": f"win{i}", "os": "windows"}) for i in range(3)]
    base = layout({"win0": 3, "win1": 3, "win2": 2}, constraint, **win)
    assert tsc(objs + base) == []
    # a fourth, empty windows node: [3, 3, 2, 0] -> two move
    assert len(tsc([*objs, b.node("win3", labels={"node": "win3", "os": "windows"}), *base])) == 2
    # [4, 3, 1]: one moves
    assert len(tsc(objs + layout({"win0": 4, "win1": 3, "win2": 1}, constraint, **win))) == 1


def test_pods_pinned_to_their_node_do_not_move() -> None:
    constraint = [b.spread(1, "node", WEB)]
    objs = [b.node(f"win{i}", labels={"node": f"win{i}", "os": "windows"}) for i in range(3)]
    pods = Pods()
    objs += pods.on("win0", 4, constraints=constraint, nodeSelector={"node": "win0"})
    objs += pods.on("win1", 3, constraints=constraint, nodeSelector={"os": "windows"})
    objs += pods.on("win2", 1, constraints=constraint, nodeSelector={"os": "windows"})
    assert tsc(objs, evictor_args={"nodeFit": True}) == []


def test_domain_outside_the_affinity_counts_when_it_holds_matching_pods() -> None:
    # upstream seeds the domains from the nodes the defining pod may use, then adds any domain a counted pod
    # sits in: zoneC joins with its four pods and gives two of them
    ab = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["zoneA", "zoneB"]}]}]}}}}
    pods = Pods()
    objs = zones("zoneA", "zoneB", "zoneC")
    objs += pods.on("n1", constraints=zone_spread(), **ab) + pods.on("n2", constraints=zone_spread(), **ab)
    objs += pods.on("n3", 4)
    assert tsc(objs) == ["p005", "p004"]


def test_node_affinity_policy_ignore_and_fit_order() -> None:
    # one constraint for all three pods; of zoneA's two, the one that fits the empty zoneC goes
    constraint = zone_spread(nodeAffinityPolicy="Ignore")
    arm = {"kubernetes.io/arch": "arm64"}
    objs = [zone_node("a1", "zoneA", labels=arm), zone_node("b1", "zoneB", labels=arm),
            zone_node("c1", "zoneC", labels=arm)]
    pods = Pods()
    objs += pods.on("a1", constraints=constraint, nodeSelector=arm)
    objs += pods.on("a1", constraints=constraint, nodeSelector={**arm, "zone": "zoneA"})
    objs += pods.on("b1", constraints=constraint, nodeSelector=arm)
    assert tsc(objs) == ["p000"]


@pytest.mark.parametrize(("policy", "moved"), [("Ignore", ["p001"]), ("Honor", [])])
def test_node_taints_policy(policy: str, moved: list[str]) -> None:
    objs = [zone_node("n1", "zoneA"),
            zone_node("n2", "zoneB", taints=[{"key": "t", "value": "v", "effect": "NoSchedule"}])]
    objs += layout({"n1": 2}, zone_spread(nodeTaintsPolicy=policy))
    assert tsc(objs, {"topologyBalanceNodeFit": False}) == moved


@pytest.mark.parametrize(("effect", "tolerate", "moved"), [
    ("NoSchedule", True, ["p000"]),
    ("NoSchedule", False, []),
    ("PreferNoSchedule", False, ["p000"]),
])
def test_taints_of_the_emptier_domain(effect: str, tolerate: bool, moved: list[str]) -> None:
    taint = {"key": "taint-test", "value": "test", "effect": effect}
    toleration = [{"key": "taint-test", "operator": "Equal", "value": "test", "effect": "NoSchedule"}]
    pods = Pods()
    objs = [zone_node("n1", "zoneA"), zone_node("n2", "zoneB", taints=[taint])]
    objs += pods.on("n1", constraints=zone_spread(), **({"tolerations": toleration} if tolerate else {}))
    objs += pods.on("n1", nodeSelector={"zone": "zoneA"})  # counted, pinned, so it sorts first
    assert tsc(objs) == moved
    assert tsc(objs, evictor_args={"nodeFit": True}) == moved


def test_selector_matches_both_zones() -> None:
    region = {"nodeSelector": {"region": "boston"}}
    objs = [zone_node(n, z, labels={"region": "boston"}) for n, z in (("n1", "zoneA"), ("n2", "zoneB"))]
    objs += layout({"n1": 4}, **region)
    assert len(tsc(objs)) == 2


@pytest.mark.parametrize(("cpu", "args", "moved"), [
    ("200m", {}, 0),  # zoneA full: nothing fits there
    ("300m", {}, 1),
    ("200m", {"topologyBalanceNodeFit": False}, 1),  # upstream's "force a scale-up"
])
def test_topology_balance_node_fit(cpu: str, args: dict[str, Any], moved: int) -> None:
    objs = [zone_node("n1", "zoneA", cpu=cpu), zone_node("n2", "zoneB"), *layout({"n1": 2, "n2": 6}, zone_spread(2))]
    assert len(tsc(objs, args)) == moved


def test_three_zones_not_enough_cpu_in_the_emptiest() -> None:
    objs = [zone_node("n1", "zoneA", cpu="250m"), zone_node("n2", "zoneB", cpu="1"), zone_node("n3", "zoneC", cpu="1")]
    objs += layout({"n1": 2, "n2": 3, "n3": 4})
    assert tsc(objs, evictor_args={"nodeFit": True}) == []
    assert len(tsc(objs, {"topologyBalanceNodeFit": False}, evictor_args={"nodeFit": True})) == 1


def test_below_average_nodes_only() -> None:
    # zoneA is below average but neither of its nodes has room; zoneB is not below average
    objs = [zone_node("a1", "zoneA", cpu="150m"), zone_node("b1", "zoneB"), zone_node("c1", "zoneC"),
            zone_node("a2", "zoneA", cpu="50m"), zone_node("b2", "zoneB"), zone_node("c2", "zoneC")]
    objs += layout({"a1": 1, "b1": 1, "b2": 1, "c1": 2, "c2": 1})
    assert tsc(objs, evictor_args={"nodeFit": True}) == []


def test_domains_of_several_nodes() -> None:
    objs = [zone_node("a1", "zoneA"), zone_node("a2", "zoneA"), zone_node("b1", "zoneB"), zone_node("b2", "zoneB")]
    objs += layout({"a1": 1, "a2": 4, "b1": 2, "b2": 1})
    assert tsc(objs, evictor_args={"nodeFit": True}) == ["p004"]


def test_multiple_constraints_per_pod() -> None:
    both = [b.spread(1, "topology.kubernetes.io/zone", WEB, when="ScheduleAnyway"),
            b.spread(1, "kubernetes.io/hostname", WEB)]
    objs = [b.node(f"n{i}", labels={"topology.kubernetes.io/zone": "zoneA" if i <= 3 else "zoneB"})
            for i in range(1, 7)]
    objs += layout({"n1": 1, "n2": 1, "n3": 1, "n4": 1}, both)
    assert tsc(objs, {"constraints": ["DoNotSchedule", "ScheduleAnyway"]}) == ["p002"]


@pytest.mark.parametrize(("hashes", "moved"), [(("a", "a"), ["p001"]), (("a", "b"), [])])
def test_match_label_keys(hashes: tuple[str, str], moved: list[str]) -> None:
    constraint = zone_spread(matchLabelKeys=["pod-template-hash"])
    pods = Pods()
    objs = zones("zoneA", "zoneB")
    for h in hashes:
        objs += pods.on("n1", labels={**WEB, "pod-template-hash": h}, constraints=constraint)
    assert tsc(objs, {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "NotIn",
                                                               "values": ["baz"]}]}}) == moved


def test_terminating_pods_are_not_counted() -> None:
    pods = Pods()
    objs = zones("zoneA", "zoneB") + pods.on("n1", 2, constraints=zone_spread()) + pods.on("n2", 2)
    terminating = pods.on("n1", 2, constraints=zone_spread())
    for p in terminating:
        p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert tsc(objs + terminating) == []


def test_tainted_nodes_outside_the_affinity_are_no_domains() -> None:
    app = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "app_service", "operator": "Exists"}]}]}}}}
    objs = [b.node("cp1", taints=[{"key": "node-role.kubernetes.io/controlplane", "value": "true",
                                   "effect": "NoSchedule"}]),
            b.node("infra1", labels={"infra_service": "true"}, taints=[{"key": "infra_service",
                                                                         "effect": "NoSchedule"}]),
            b.node("app1", labels={"app_service": "true"}), b.node("app2", labels={"app_service": "true"})]
    objs += layout({"app1": 2, "app2": 2}, [b.spread(1, "kubernetes.io/hostname", WEB)], **app)
    assert tsc(objs, evictor_args={"nodeFit": True}) == []


def test_order_inside_a_domain() -> None:
    # pinned pods first, then priority ascending with no priority lowest; pods leave from the end, so
    # upstream's comparator makes the highest-priority free pod leave first
    constraint = zone_spread(nodeAffinityPolicy="Ignore")
    ssd = {"nodeSelector": {"disk": "ssd"}}
    objs = [zone_node("n1", "zoneA", labels={"disk": "ssd"}), zone_node("n2", "zoneB", labels={"disk": "ssd"})]
    objs.append(b.pod("pinned-low", "n1", namespace=NS, owner_name="web", labels=WEB, priority=1,
                      topologySpreadConstraints=constraint, **ssd))
    for name, prio in (("free-none", None), ("free-high", 100), ("free-mid", 50), ("free-one", 1)):
        objs.append(b.pod(name, "n1", namespace=NS, owner_name="web", labels=WEB, priority=prio,
                          topologySpreadConstraints=constraint))
    # [5, 0]: average 2.5, moves min(3, 3, 2) = 2
    assert tsc(objs) == ["free-mid", "free-high"]


def test_constraint_without_label_selector_selects_nothing() -> None:
    objs = zones("zoneA", "zoneB") + layout({"n1": 4}, [b.spread(1, "zone", None)])
    assert tsc(objs) == []


def test_unreadable_constraint_selector_is_skipped_and_said() -> None:
    bad = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}]
    plan = plan_for(zones("zoneA", "zoneB") + layout({"n1": 4}, bad), TSC)
    assert evicted(plan) == []
    assert (TSC, "pod ns1/p000: topologySpreadConstraint skipped: matchExpressions[0]: operator In needs "
                 "values") in plan.messages


def test_min_domains_plays_no_part() -> None:
    # the scheduler would see a global minimum of 0 with minDomains 3 over two zones; upstream ignores it
    objs = zones("zoneA", "zoneB") + layout({"n1": 2, "n2": 1}, zone_spread(minDomains=3))
    assert tsc(objs) == []


def test_anti_affinity_on_the_emptier_node() -> None:
    # the only below-average node runs a pod the moving pods' anti-affinity rejects
    anti = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"role": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}}
    objs = zones("zoneA", "zoneB") + layout({"n1": 3}, **anti)
    assert len(tsc(objs)) == 1
    db = b.pod("db", "n2", namespace=NS, labels={"role": "db"}, owner=None)
    assert tsc([*objs, db]) == []


def test_spread_limits() -> None:
    objs = [zone_node("a1", "zoneA"), zone_node("a2", "zoneA"), zone_node("b1", "zoneB")]
    objs += layout({"a1": 3, "a2": 3})  # [6, 0]: three move, taken from a2's end
    assert tsc(objs) == ["p003", "p004", "p005"]
    plan = plan_for(objs, TSC, limits={"maxNoOfPodsToEvictPerNode": 1})
    assert evicted(plan) == ["p003"]
    assert tsc(objs, limits={"maxNoOfPodsToEvictTotal": 2}) == ["p003", "p004"]


def test_evictions_of_an_earlier_plugin_are_seen() -> None:
    # RemoveDuplicates (one profile, run first as listed) takes p002 off n1: zoneA 2, zoneB 0 is then a skew
    # of 2 and the spread plugin moves one more, not the two it would move from [3, 0]
    objs = zones("zoneA", "zoneB") + layout({"n1": 3})
    raw = policy_from_plugins([(RD, "balance", {}), (TSC, "balance", {})], {}, {})
    plan = run(as_upstream(decode_policy(raw, registry(), "flags")), _state(objs), Scope())
    assert [(c.plugin, c.pod.name) for c in plan.candidates] == [(RD, "p002"), (TSC, "p001")]


def test_spread_args_defaults() -> None:
    args = decode_args(RemovePodsViolatingTopologySpreadConstraintArgs, {}, "")
    assert (args.constraints, args.topology_balance_node_fit, args.namespaces, args.label_selector) == (
        ["DoNotSchedule"], True, None, None)


@pytest.mark.parametrize(("args", "message"), [
    ({"constraints": ["foo"]}, "constraints[0]: must be one of DoNotSchedule, ScheduleAnyway, not 'foo'"),
    ({"constraints": "DoNotSchedule"}, "constraints: must be a list, not 'DoNotSchedule'"),
    ({"labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
     "labelSelector: matchExpressions[0]: operator In needs values"),
    ({"labelSelector": {"matchExpressions": [{"operator": "In", "values": ["x"]}]}},
     "labelSelector: matchExpressions[0] needs key and operator"),
    ({"namespaces": {"include": ["a"], "exclude": ["b"]}}, "namespaces: only one of include and exclude can be set"),
    ({"topologyBalanceNodeFit": "yes"}, "topologyBalanceNodeFit: must be a boolean, not 'yes'"),
])
def test_spread_args_errors(args: dict[str, Any], message: str) -> None:
    assert config_error(TSC, args) == f"{ARGS_AT}.{message}"


# === scale ============================================================================================================


def _big_cluster(scale: int) -> ClusterState:
    """1,000 nodes in 10 zones; 50 x scale ReplicaSets of 100 pods in 10 namespaces, piled onto the first 600
    nodes, each pod with a hard zone and a hard hostname spread constraint. The nodes stay: every ReplicaSet's
    hostname constraint has one domain per node, so growing both would grow that work 16x by itself."""
    n_nodes, n_sets, piled = 1000, 50 * scale, 600
    nodes = [b.node(f"node-{i:04d}", cpu="64", memory="256Gi", pods=110, labels={"zone": f"zone-{i % 10}"})
             for i in range(n_nodes)]
    pods = []
    for rs_i in range(n_sets):
        labels = {"app": f"app-{rs_i}", "pod-template-hash": f"h{rs_i}"}
        constraints = [b.spread(1, "zone", {"app": f"app-{rs_i}"}, matchLabelKeys=["pod-template-hash"]),
                       b.spread(1, "kubernetes.io/hostname", {"app": f"app-{rs_i}"})]
        for k in range(100):
            node_i = (rs_i * 7 + k * k) % piled
            pods.append(b.pod(f"app-{rs_i}-{k}", f"node-{node_i:04d}", cpu="10m", namespace=f"ns-{rs_i % 10}",
                              owner_name=f"app-{rs_i}", labels=labels, topologySpreadConstraints=constraints))
    return ClusterState([node_from_json(n) for n in nodes], [pod_from_json(p) for p in pods])


@pytest.mark.parametrize("plugin", [RD, TSC])
def test_scales_linearly_to_20000_pods_on_1000_nodes(plugin: str) -> None:
    policy = as_upstream(decode_policy(policy_from_plugins([(plugin, "balance", {})], {}, {}), registry(), "flags"))
    seconds = {}
    for scale in (1, 4):
        state = _big_cluster(scale)
        assert (len(state.pods), len(state.nodes)) == (5_000 * scale, 1_000)
        plans = []
        seconds[scale] = cpu_seconds(lambda state=state, plans=plans: plans.append(run(policy, state, Scope())))
        assert plans[0].errors == [] and len(plans[0].candidates) > 250 * scale
    assert_grows_linearly(seconds[1], seconds[4], plugin)
