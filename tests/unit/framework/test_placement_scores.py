"""The placement estimate's scores beyond resources and spreading, each in a case where it decides the landing:
TaintToleration (PreferNoSchedule taints) and InterPodAffinity (preferred terms, both ways)."""

from __future__ import annotations

from typing import Any

from kubectl_desched.framework.placement import estimate
from tests import builders as b
from tests.unit.framework.test_placement import pod, setup, where

AVOID = b.taint("spare", "yes", "PreferNoSchedule")


def spare_cluster(*taints: dict[str, Any], **mover: Any) -> list[dict[str, Any]]:
    """An empty node `spare` with the taints, a node `busy` with one pod on it, and the mover on a full node: by
    resources alone (174 against 149) the replacement goes to the spare."""
    return [b.node("spare", taints=list(taints)), b.node("busy"), b.node("src", cpu="1"),
            pod("resident", "busy"), pod("mover", "src", **mover)]


def test_a_prefer_no_schedule_taint_keeps_the_replacement_off_the_spare_node() -> None:
    # spare: 174 + 3 x 0 (its one untolerated taint is the most any node has); busy: 149 + 3 x 100. (Both get the
    # same 2 x 100 of default spreading: no other pod of the mover's ReplicaSet.)
    assert where(spare_cluster(AVOID), ["mover"]) == [("busy", ("busy",))]
    assert where(spare_cluster(), ["mover"]) == [("spare", ("spare",))]  # the control: untainted, it wins


def test_a_tolerated_or_other_effect_taint_costs_nothing() -> None:
    tolerates = [b.toleration("spare", "yes", "PreferNoSchedule")]
    assert where(spare_cluster(AVOID, tolerations=tolerates), ["mover"])[0][0] == "spare"
    exists = [b.toleration("spare", operator="Exists")]  # no effect: every effect of the key
    assert where(spare_cluster(AVOID, tolerations=exists), ["mover"])[0][0] == "spare"
    assert where(spare_cluster(b.taint("other", "x", "PreferNoSchedule"), tolerations=tolerates),
                 ["mover"])[0][0] == "busy"  # it tolerates another taint than the node has


def test_untolerated_taints_are_normalized_against_the_most_any_node_has() -> None:
    """The framework's reverse normalization: the node with the most untolerated taints (2) scores 0, one with 1
    scores 50, so of two tainted nodes the one with fewer wins by 150 even when it is fuller."""
    second = b.taint("old", "", "PreferNoSchedule")
    objs = [b.node("two", taints=[AVOID, second]), b.node("one", taints=[AVOID]), b.node("src", cpu="1"),
            pod("resident", "one"), pod("mover", "src")]
    state, cands = setup(objs, ["mover"])
    dest = estimate(state, cands).of(cands[0])
    # one: LeastAllocated 62 + BalancedAllocation 72 (1.36: the pod moves the node's balance from 93 to 87, so
    # 50 + (50 + 87 - 93) // 2) + 3 x 50 + 200 spreading; two: 87 + 87 + 0 + 200
    assert dest is not None and (dest.node, dest.why) == ("one", "score 484")


def test_balanced_allocation_follows_the_clusters_scheduler_version() -> None:
    """kube-scheduler 1.36 scores the change a pod makes to a node's balance, 1.35 the balance it leaves (seen on
    the sim cluster, the real scheduler's log at -v 10: worker-5 and worker-2 both 74 where the old way gave 91 and
    82, and the replacement went to worker-2). Here w2 is fuller but has fewer of the workload's pods: by 1.35's
    balance the emptier w5 wins, by 1.36's spreading decides. A snapshot tells the version by its kubelets."""
    def cluster(kubelet: str) -> list[dict[str, Any]]:
        objs = [b.node("w5", memory="16Gi", kubelet=kubelet), b.node("w2", memory="16Gi", kubelet=kubelet),
                b.node("src", cpu="300m", memory="512Mi", kubelet=kubelet),  # full: the mover's own node
                pod("a", "w5", cpu="400m", memory="384Mi", owner_name="other"),
                pod("b", "w2", cpu="1900m", memory="2688Mi", owner_name="other2"),
                pod("mover", "src", cpu="300m", memory="512Mi", owner_name="web")]
        return objs + [pod(f"web-{node}-{i}", node, cpu="1m", memory="1Mi", owner_name="web")
                       for node, count in (("w5", 3), ("w2", 2)) for i in range(count)]

    for kubelet, node, why in (("v1.35.2", "w5", "score 647"), ("v1.36.3", "w2", "score 636")):
        state, cands = setup(cluster(kubelet), ["mover"])
        dest = estimate(state, cands).of(cands[0])
        assert dest is not None and (dest.node, dest.why) == (node, why), kubelet
    state, _ = setup(cluster("kwok-0.7.0"), [])
    assert state.server_minor is None  # unknown: the estimate takes the current scheduler's way


def term(app: str, key: str = "kubernetes.io/hostname", **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key, **extra}


def preferred(kind: str, app: str, weight: int = 100, **extra: Any) -> dict[str, Any]:
    """spec.affinity with one preferred podAffinity or podAntiAffinity term."""
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": weight, "podAffinityTerm": term(app, **extra)}]}}


def two_nodes(near: dict[str, Any], mover: dict[str, Any]) -> list[dict[str, Any]]:
    """`near` (a small pod of another workload, so default spreading does not tell) on the emptier node x1, a
    larger pod on x2: by resources alone the mover goes to x1."""
    return [b.node("x1"), b.node("x2"), b.node("src", cpu="1"), near,
            pod("heavy", "x2", cpu="1500m", memory="2Gi", owner_name="heavy"), mover]


def test_the_pods_preferred_anti_affinity_steers_it_away() -> None:
    near = pod("cache-0", "x1", cpu="100m", memory="128Mi", labels={"app": "cache"}, owner_name="other-cache")
    apart = preferred("podAntiAffinity", "cache")
    # x1: -100 (one cache pod there), x2: 0 -> normalized 0 and 100, weight 2: x2 by 200
    assert where(two_nodes(near, pod("mover", "src", labels={"app": "cache"}, affinity=apart)), ["mover"]) == \
        [("x2", ("x2",))]
    assert where(two_nodes(near, pod("mover", "src", labels={"app": "cache"})), ["mover"])[0][0] == "x1"


def test_the_pods_preferred_affinity_draws_it_near() -> None:
    near = pod("db-0", "x2", cpu="100m", memory="128Mi", labels={"app": "db"}, owner_name="db")
    objs = [b.node("x1"), b.node("x2"), b.node("src", cpu="1"), near,
            pod("heavy", "x2", cpu="1500m", memory="2Gi", owner_name="heavy")]
    assert where([*objs, pod("mover", "src", affinity=preferred("podAffinity", "db"))], ["mover"])[0][0] == "x2"
    assert where([*objs, pod("mover", "src")], ["mover"])[0][0] == "x1"
    # a term in another namespace than the db pod's selects nothing
    elsewhere = preferred("podAffinity", "db", namespaces=["other"])
    assert where([*objs, pod("mover", "src", affinity=elsewhere)], ["mover"])[0][0] == "x1"


def test_an_existing_pods_preferred_anti_affinity_keeps_the_pod_away_without_indexing_every_pod() -> None:
    from kubectl_desched.framework.placement import Estimator

    guard = pod("guard", "x1", cpu="100m", memory="128Mi", labels={"app": "db"}, owner_name="db",
                affinity=preferred("podAntiAffinity", "web", weight=10))
    mover = pod("mover", "src", labels={"app": "web"})
    state, cands = setup(two_nodes(guard, mover), ["mover"])
    est = Estimator(state)
    assert est.move(cands[0].pod).node == "x2"  # -10 on x1, 0 on x2: normalized 0 and 100, whatever the weight
    assert est.cl._pods_by_ns is None  # the guard's term is kept on its own: no namespace was read whole
    guard["spec"]["affinity"] = preferred("podAntiAffinity", "api")  # the control: it selects no web pod
    assert where(two_nodes(guard, mover), ["mover"])[0][0] == "x1"


def test_an_existing_pods_required_affinity_scores_with_the_hard_weight() -> None:
    """hardPodAffinityWeight 1: tiny before normalization, the whole 100 after it when nothing else differs."""
    needs_web = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("web")]}}
    sidecar = pod("sidecar", "x2", cpu="100m", memory="128Mi", labels={"app": "side"}, owner_name="side",
                  affinity=needs_web)
    near = pod("small", "x1", cpu="100m", memory="128Mi", owner_name="small")
    assert where([*two_nodes(near, pod("mover", "src", labels={"app": "web"})), sidecar], ["mover"])[0][0] == "x2"
    assert where([*two_nodes(near, pod("mover", "src", labels={"app": "api"})), sidecar], ["mover"])[0][0] == "x1"


def test_replacements_placed_before_count_both_ways() -> None:
    """Two cache pods of different workloads (so default spreading does not tell) with preferred anti-affinity to
    each other leave src: the first takes the big node, the second must see it there, by its own term and by the
    landed one's, and take the small node which resources alone would not pick."""
    def objs(first: dict[str, Any] | None, second: dict[str, Any] | None) -> list[dict[str, Any]]:
        return [b.node("big", cpu="16", memory="64Gi"), b.node("small"), b.node("src", cpu="2"),
                pod("c1", "src", labels={"app": "cache"}, owner_name="c1", **({"affinity": first} if first else {})),
                pod("c2", "src", labels={"app": "cache"}, owner_name="c2", **({"affinity": second} if second else {}))]
    apart = preferred("podAntiAffinity", "cache")
    assert [n for n, _tied in where(objs(apart, apart), ["c1", "c2"])] == ["big", "small"]
    assert [n for n, _tied in where(objs(None, None), ["c1", "c2"])] == ["big", "big"]
    # each way alone: the landed c1's term selects c2, or c2's own term selects the landed c1
    assert [n for n, _tied in where(objs(apart, None), ["c1", "c2"])] == ["big", "small"]
    assert [n for n, _tied in where(objs(None, apart), ["c1", "c2"])] == ["big", "small"]


def test_an_undone_move_puts_the_pods_terms_back() -> None:
    """c1 fits nowhere while it terminates, so it is placed as if gone (its term leaves src); undone, the term
    must count again for c2."""
    from kubectl_desched.framework.placement import Estimator

    objs = [b.node("src", cpu="2"), b.node("full", cpu="1"), pod("filler", "full", cpu="1"),
            pod("c1", "src", cpu="2", labels={"app": "cache"}, affinity=preferred("podAntiAffinity", "cache")),
            pod("c2", "full", cpu="0", labels={"app": "cache"})]
    state, cands = setup(objs, ["c1", "c2"])
    est = Estimator(state)
    c2 = cands[1].pod
    before = dict(est.cl.scored_by(c2))
    assert est.move(cands[0].pod).node == "src"
    during = dict(est.cl.scored_by(c2))
    est.undo()
    assert before == dict(est.cl.scored_by(c2)) == {("kubernetes.io/hostname", "src"): -100} != during
