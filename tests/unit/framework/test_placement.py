"""The placement estimate against hand-computed cases: each filter, the two default scores, ties, order."""

from __future__ import annotations

import math
from typing import Any

from kubectl_desched.framework import placement
from kubectl_desched.framework.placement import estimate
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.model.objects import node_from_json, pod_from_json
from kubectl_desched.model.state import ClusterState
from tests import builders as b


def setup(objs: list[dict[str, Any]], moving: list[str]) -> tuple[ClusterState, list[Candidate]]:
    nodes = [node_from_json(o) for o in objs if o["kind"] == "Node"]
    pods = [pod_from_json(o) for o in objs if o["kind"] == "Pod"]
    state = ClusterState(nodes, pods)
    by_name = {p.name: p for p in pods}
    return state, [Candidate(by_name[n], "LowNodeUtilization", "test", "p") for n in moving]


def where(objs: list[dict[str, Any]], moving: list[str]) -> list[tuple[str | None, tuple[str, ...]]]:
    state, cands = setup(objs, moving)
    placed = estimate(state, cands)
    return [(placed.of(c).node, placed.of(c).tied) for c in cands]  # type: ignore[union-attr]


def pod(name: str, node: str, cpu: str = "1", memory: str = "1Gi", **kw: Any) -> dict[str, Any]:
    return b.pod(name, node, cpu=cpu, memory=memory, **kw)


def test_the_scores_prefer_the_emptier_better_balanced_node() -> None:
    # b after landing: LeastAllocated cpu (4-2)*100/4=50, memory (8-2)*100/8=75 -> 62; Balanced |0.5-0.25|/2
    # -> 87: 149. a: cpu 25, memory 62 -> 43; |0.75-0.375|/2 -> 81: 124. The source node src is full.
    objs = [b.node("a"), b.node("b"), b.node("src", cpu="2"),
            pod("a1", "a"), pod("a2", "a"), pod("b1", "b"), pod("mover", "src", cpu="1"), pod("stay", "src", cpu="1")]
    assert where(objs, ["mover"]) == [("b", ("b",))]


def test_a_pod_count_of_a_fraction_fits_as_the_scheduler_adds_it() -> None:
    """A snapshot may hold a pod that requests `pods` (the API refuses it): the node's count then has a fraction,
    and the fit test is the scheduler's own, count + 1 against allocatable, which a rounding-free rewrite must
    keep (1.05 + 1 <= 2.05 fits)."""
    resident = pod("res", "dst", cpu="100m")
    resident["spec"]["containers"][0]["resources"]["requests"]["pods"] = "50m"
    objs = [b.node("dst", pods="2050m"), b.node("src", cpu="1", unschedulable=True), resident,
            pod("mover", "src", cpu="100m")]
    assert where(objs, ["mover"]) == [("dst", ("dst",))]


def test_equal_nodes_tie_and_the_first_by_name_is_shown() -> None:
    objs = [b.node("x2"), b.node("x1"), b.node("src", cpu="1"), pod("mover", "src", cpu="1")]
    assert where(objs, ["mover"]) == [("x1", ("x1", "x2"))]  # src, free again, scores 0 on cpu: 1 of 1 used


def test_each_replacement_counts_the_ones_placed_before() -> None:
    objs = [b.node("a", cpu="3"), b.node("b", cpu="3"), b.node("src", cpu="4", labels={"role": "busy"}),
            pod("m1", "src", cpu="2"), pod("m2", "src", cpu="2"),
            *(pod(f"pin{i}", "src", cpu="0", memory="7Gi") for i in range(1))]  # src's memory is taken
    first, second = where(objs, ["m1", "m2"])
    assert first[0] == "a" and second[0] == "b"  # a has 1 cpu left after m1


def test_replacements_of_each_node_pool_see_the_landings_before_them(monkeypatch: Any) -> None:
    """Each pool (node selector) keeps its own emptiest-first order: a landing, whichever pool's pod made it,
    moves the node in every order that holds it. With one node scored per replacement, a stale order shows."""
    monkeypatch.setattr(placement, "SCORE_LIMIT", 1)
    pool = {"pool": "p"}
    objs = [b.node("p1", cpu="4", labels=pool), b.node("p2", cpu="4", labels=pool), b.node("q1", cpu="4"),
            b.node("src", cpu="8", memory="64Gi", unschedulable=True), pod("resident", "p2", cpu="1"),
            pod("huge", "src", cpu="100", nodeSelector=pool), pod("any", "src", cpu="3"),
            pod("m1", "src", cpu="1", nodeSelector=pool)]
    # huge fits nowhere, but the pool's order is made for it: p1 (empty), then p2. `any` may go anywhere: p1
    # (equal to q1, first by name), which leaves p1 fuller than p2: m1 must now go to p2.
    assert [node for node, _tied in where(objs, ["huge", "any", "m1"])] == [None, "p1", "p2"]


def test_replacements_with_other_tolerations_but_the_same_nodes_see_each_others_landings(monkeypatch: Any) -> None:
    """Two scheduling keys (one tolerates a taint no node has) allow the same nodes and share one order: a landing
    of either moves the node for both. With one node scored per replacement, a stale order shows."""
    monkeypatch.setattr(placement, "SCORE_LIMIT", 1)
    tolerant = [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]
    objs = [b.node("a", cpu="4"), b.node("b", cpu="4"), b.node("src", cpu="8", memory="64Gi", unschedulable=True),
            pod("t1", "src", cpu="1", tolerations=tolerant), pod("plain", "src", cpu="3"),
            pod("t2", "src", cpu="1", tolerations=tolerant)]
    # t1 goes to a (equal to b, first by name); plain to b, the emptier; t2, of t1's key, must see plain's landing:
    # a (1 of 4 cpu) is now emptier than b (3 of 4).
    assert [node for node, _tied in where(objs, ["t1", "plain", "t2"])] == ["a", "b", "a"]


def test_filters_taints_selector_unschedulable_readiness_and_room() -> None:
    objs = [b.node("tainted", taints=[b.taint("gpu")]), b.node("cordoned", unschedulable=True),
            b.node("down", ready=False), b.node("small", cpu="1"), b.node("zone-b", labels={"zone": "b"}),
            b.node("good", labels={"zone": "a"}), b.node("src", cpu="2"),
            pod("mover", "src", cpu="2", nodeSelector={"zone": "a"})]
    assert where(objs, ["mover"])[0][0] == "good"
    state, cands = setup([*objs[:-2], b.node("src", cpu="2"), pod("mover", "src", cpu="2")], ["mover"])
    dest = estimate(state, cands).of(cands[0])
    assert dest is not None and dest.node is not None
    assert dest.node not in ("tainted", "cordoned", "down", "small")


def test_no_node_fits_is_pending_with_the_reasons_counted() -> None:
    objs = [b.node("full", cpu="1"), b.node("src", cpu="8"), pod("filler", "full", cpu="1"),
            pod("mover", "src", cpu="8"), pod("other", "src", cpu="0", memory="7680Mi")]
    state, cands = setup(objs, ["mover"])
    dest = estimate(state, cands).of(cands[0])
    assert dest is not None and dest.node is None and dest.text == "Pending"
    assert dest.why == "no node fits (insufficient cpu: 1, insufficient memory: 1)"


def test_bare_and_daemonset_pods_are_not_recreated() -> None:
    objs = [b.node("a"), b.node("src"), pod("bare", "src", owner=None), pod("ds", "src", owner="DaemonSet")]
    state, cands = setup(objs, ["bare", "ds"])
    placed = estimate(state, cands)
    bare, ds = (placed.of(c) for c in cands)
    assert bare is not None and (bare.node, bare.recreated, bare.text) == (None, False, "not recreated")
    assert ds is not None and ds.why == "its DaemonSet recreates it on its own node"


def test_required_anti_affinity_both_ways_and_affinity() -> None:
    anti = b.pod_anti_affinity({"app": "web"})
    objs = [b.node("a"), b.node("b"), b.node("src", cpu="1"), pod("web-a", "a", cpu="0", labels={"app": "web"}),
            pod("mover", "src", labels={"app": "web"}, affinity=anti)]
    assert where(objs, ["mover"])[0][0] == "b"  # a has a web pod
    guard = pod("guard", "b", cpu="0", labels={"app": "db"}, affinity=b.pod_anti_affinity({"app": "web"}))
    objs = [b.node("a"), b.node("b"), b.node("src", cpu="1"), guard, pod("mover", "src", labels={"app": "web"})]
    assert where(objs, ["mover"])[0][0] in ("a", "src")  # b's guard refuses web pods next to it
    with_db = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    objs = [b.node("a"), b.node("b"), b.node("src", cpu="1"), pod("db", "b", cpu="0", labels={"app": "db"}),
            pod("mover", "src", affinity=with_db)]
    assert where(objs, ["mover"])[0][0] == "b"


def test_affinity_terms_first_read_after_landings_see_them() -> None:
    """The pods per namespace are gathered only when a term first needs them: a replacement landed before that
    (the first mover has no terms) must be counted as much as the pods that were there."""
    with_web = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    objs = [b.node("a"), b.node("b"), b.node("z-src", cpu="2"),
            pod("first", "z-src", labels={"app": "web"}, owner_name="web"),
            pod("second", "z-src", labels={"app": "api"}, affinity=with_web, owner_name="api")]
    assert where(objs, ["first", "second"]) == [("a", ("a", "b")), ("a", ("a",))]  # the only web pod is on a
    # the control: without the term, the emptier b takes it
    objs[-1] = pod("second", "z-src", labels={"app": "api"}, owner_name="api")
    assert where(objs, ["first", "second"])[1][0] == "b"


def test_topology_spread_do_not_schedule() -> None:
    zone = "topology.kubernetes.io/zone"
    objs = [b.node("a1", cpu="16", labels={zone: "a"}), b.node("b1", labels={zone: "b"}),
            b.node("src", cpu="1", labels={zone: "c"}),
            pod("w1", "b1", cpu="0", labels={"app": "w"}), pod("w2", "b1", cpu="0", labels={"app": "w"}),
            pod("w3", "a1", cpu="0", labels={"app": "w"}),
            pod("mover", "src", labels={"app": "w"}, topologySpreadConstraints=[b.spread(1, zone, {"app": "w"})])]
    # Zones after the eviction: a 1, b 2, c 0. Landing in b gives skew 3-0 = 3, in a 2-0 = 2: only c (src) fits.
    assert where(objs, ["mover"])[0][0] == "src"


def test_default_spreading_keeps_replicas_apart() -> None:
    """kube-scheduler's system default spreading (weight 2): x1 holds two replicas of the mover's ReplicaSet
    (hostname raw 2*ln(4)+2 = 5 against x2's 2: normalized 40 and 100), which outweighs x1's lighter load."""
    def objs(owner: str) -> list[dict[str, Any]]:
        return [b.node("x1"), b.node("x2"), b.node("src", cpu="1"),
                pod("r1", "x1", cpu="100m", memory="128Mi", owner_name=owner),
                pod("r2", "x1", cpu="100m", memory="128Mi", owner_name=owner),
                pod("other", "x2", cpu="300m", memory="128Mi", owner_name="other"),
                pod("mover", "src", cpu="1", memory="128Mi", owner_name="web")]
    assert where(objs("web"), ["mover"])[0][0] == "x2"
    assert where(objs("unrelated"), ["mover"])[0][0] == "x1"  # the control: resources alone prefer x1


def test_preferred_node_affinity_counts() -> None:
    prefer = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}
    objs = [b.node("a"), b.node("b", labels={"disk": "ssd"}), b.node("src", cpu="1"),
            pod("busy", "b", cpu="1"), pod("mover", "src", affinity=prefer)]
    assert where(objs, ["mover"])[0][0] == "b"  # 2 x 100 for the preference beats a's emptier cpu


def test_the_plan_shows_destinations_landings_and_warnings(tmp_path: Any, monkeypatch: Any) -> None:
    import json
    from pathlib import Path

    from click.testing import CliRunner

    from kubectl_desched.cli.main import cli

    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    demo = str(Path(__file__).resolve().parents[3] / "examples" / "demo-cluster.yaml")
    args = ["balance", "--from-file", demo, "-A", "--keep-futile"]
    doc = json.loads(CliRunner().invoke(cli, [*args, "-o", "json"]).stdout)
    dests = {c["pod"]: c["destination"] for c in doc["candidates"]}
    nodes = {n["name"]: n for n in doc["nodes"]}
    assert all(d["estimate"] and d["node"] in nodes for d in dests.values())
    assert sum(n["landing"] for n in nodes.values()) == len(dests)
    assert nodes["worker-b2"]["after"]["cpu"] > nodes["worker-b2"]["now"]["cpu"]  # landings count in "after"
    # Default spreading: the second cart replica goes where the first left (worker-a2), and ledger-0's landing
    # puts worker-b1 over the target: with --keep-futile both are planned, each with why as data.
    futile = {c["pod"]: c["futile"] for c in doc["candidates"] if c["futile"]}
    assert futile == {
        "cart-6b4bjvt22f-kspwp": "would land on worker-a2, which another pod of ReplicaSet shop/cart-6b4bjvt22f is "
                                 "leaving",
        "ledger-0": "would land on worker-b1, putting it over LowNodeUtilization's targets (cpu 55% > 50%)"}
    assert dests["cart-6b4bjvt22f-kspwp"]["node"] == "worker-a2"
    assert doc["keepFutile"] is True and doc["kept"] == [k for k in doc["kept"] if k["kind"] == "pdb"]
    assert nodes["worker-b1"]["warnings"] == [
        "node worker-b1 would be over LowNodeUtilization's targets after 3 replacement(s) land there: cpu 55% > 50%"]
    text = CliRunner().invoke(cli, [*args, "-o", "wide", "--no-pager"]).stdout
    assert "DESTINATION" in text and "LAND" in text
    assert "warning: node worker-b1 would be over LowNodeUtilization's targets after 3 replacement(s)" in text
    assert "shop/cart-6b4bjvt22f-kspwp: would land on worker-a2, which another pod of ReplicaSet " in text
    assert "warning: node worker-a2 would be over LowNodeUtilization's targets after 1 replacement(s)" in text
    # The summary counts every warning the text prints: 5 listed under the candidates, 2 of nodes.
    assert text.splitlines()[0].endswith("; 7 warnings")
    assert text.count("\n  [") == 5 and text.count("\nwarning: node ") == 2


def test_a_pod_no_node_can_take_is_futile() -> None:
    from kubectl_desched.framework.plan import EvictionPlan, Limits

    objs = [b.node("full", cpu="1"), b.node("src", cpu="8"), pod("filler", "full", cpu="1"),
            pod("mover", "src", cpu="8"), pod("other", "src", cpu="0", memory="7680Mi")]
    state, cands = setup(objs, ["mover"])
    plan = EvictionPlan(state, Limits())
    dest = plan.estimator.move(cands[0].pod)
    assert plan.futility(cands[0].pod, dest, None) == \
        "its replacement would stay Pending (no node fits (insufficient cpu: 1, insufficient memory: 1))"


def test_schedule_anyway_spread_is_scored_as_the_scheduler_does() -> None:
    """A ScheduleAnyway zone constraint (weight 2) outweighs the resources' small difference: zone a already has
    two web pods, zone b none, so the replacement goes to b although a2 is a little emptier. Without the
    constraint, resources and the default spreading pick a2."""
    zone = "topology.kubernetes.io/zone"
    soft = {**b.spread(1, zone, {"app": "web"}), "whenUnsatisfiable": "ScheduleAnyway"}

    def objs(constraints: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [b.node("a1", labels={zone: "a"}), b.node("a2", labels={zone: "a"}), b.node("b1", labels={zone: "b"}),
                b.node("src", cpu="1", labels={zone: "c"}),
                pod("w1", "a1", cpu="100m", labels={"app": "web"}, owner_name="other-web"),
                pod("w2", "a1", cpu="100m", labels={"app": "web"}, owner_name="other-web"),
                pod("busy", "b1", cpu="1"),
                pod("mover", "src", cpu="1", labels={"app": "web"}, topologySpreadConstraints=constraints)]
    assert where(objs([soft]), ["mover"])[0][0] == "b1"
    assert where(objs([]), ["mover"])[0][0] == "a2"


def test_an_undone_move_leaves_the_estimate_as_it_was() -> None:
    """A pod alone in its group with required affinity to itself: first nothing fits while it terminates, so it
    is placed as if gone (which builds the per-namespace index without it); the move is undone. The estimate must
    then see it again, and the same move must come out the same."""
    from kubectl_desched.framework.placement import Estimator

    self_affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "solo"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    objs = [b.node("full", cpu="1"), b.node("small", cpu="1"), pod("filler", "full", cpu="1"),
            pod("solo", "small", cpu="1", labels={"app": "solo"}, affinity=self_affinity),
            pod("other", "small", cpu="0", memory="0", labels={"app": "x"})]
    state, cands = setup(objs, ["solo"])
    est = Estimator(state)
    first = est.move(cands[0].pod)
    est.undo()
    again = est.move(cands[0].pod)
    assert first == again and first.node == "small"  # the first of its group again, back on its node
    est.undo()
    assert est.cl.used["small"]["cpu"] == 1000.0 and est.cl.used["small"]["pods"] == 2.0  # cpu in millicores
    assert [node for labels, node, _t in est.cl.in_ns("default") if labels.get("app") == "solo"] == ["small"]


def test_a_shape_s_known_fits_and_scores_follow_each_landing_and_leaving() -> None:
    # Equal replacements share what they found of each node (fit, base score) until the node's requests change:
    # the first two land on b and c (room for one each; src is full while they terminate), the third finds
    # neither has room any more, and src, which has lost the first two, has.
    objs = [b.node("b", cpu="2"), b.node("c", cpu="2"), b.node("src", cpu="4"),
            pod("b1", "b"), pod("c1", "c"), *(pod(f"m{i}", "src", cpu="1") for i in range(4))]
    placed = where(objs, ["m0", "m1", "m2"])
    assert sorted(node for node, _tied in placed[:2]) == ["b", "c"]
    assert placed[2][0] == "src"
    state, cands = setup(objs, ["m0"])
    est = placement.Estimator(state)
    cl = est.cl
    est.move(cands[0].pod)
    known = cl.by_shape(cands[0].pod)
    assert {name: (v, why) for name, (v, why, _base) in known.items()} == \
        {"b": (cl.version["b"], None), "c": (cl.version["c"], None), "src": (cl.version["src"], "insufficient cpu")}
    dest = est.keep()
    assert known[dest.node or ""][0] != cl.version[dest.node or ""]  # stale: read again by the next replacement


def _spread_by_formula(counts: list[tuple[int, int]], hosts: int, zones: int) -> list[int]:
    """kube-scheduler's default spreading for nodes holding (pods on its host, pods in its zone) of the workload:
    count x ln(domains + 2) + maxSkew - 1 per key (hostname skew 3, zone 5), rounded, then normalized."""
    raw = [round(h * math.log(hosts + 2) + 2 + z * math.log(zones + 2) + 4) for h, z in counts]
    hi, lo = max(raw), min(raw)
    return [100 * (hi + lo - r) // hi if hi else 100 for r in raw]


def test_default_spreading_on_labelled_nodes_follows_the_formula() -> None:
    """Nodes labelled with a hostname and a zone take the quick sum; with two nodes under one hostname (not
    as kubelets label them) the hostnames are counted, not the nodes. Both give the scheduler's scores."""
    from kubectl_desched.framework.placement import _Cluster, _default_spread, workload_of

    def cluster(shared_host: bool) -> tuple[_Cluster, Any, list[Any]]:
        zone = "topology.kubernetes.io/zone"
        names = ["a1", "a2", "b1", "b2", "c1"]
        host = {n: ("a1" if shared_host and n == "a2" else n) for n in names}
        nodes = [b.node(n, labels={"kubernetes.io/hostname": host[n], zone: n[0]}) for n in names]
        pods = [pod("r1", "a1", owner_name="web"), pod("r2", "a1", owner_name="web"), pod("r3", "b1", owner_name="web"),
                pod("mover", "c1", owner_name="web")]
        state, _ = setup([*nodes, *pods], [])
        cl = _Cluster(state)
        mover = next(p for p in state.pods if p.name == "mover")
        cl.track(mover)
        return cl, mover, [cl.nodes_by_name[n] for n in names]

    cl, mover, feasible = cluster(shared_host=False)
    assert cl.hostnames_unique and workload_of(mover) is not None
    # on host / in zone: a1 2/2, a2 0/2, b1 1/1, b2 0/1, c1 1/1 (the mover itself, still running)
    want = _spread_by_formula([(2, 2), (0, 2), (1, 1), (0, 1), (1, 1)], hosts=5, zones=3)
    assert _default_spread(mover, feasible, cl) == want
    cl, mover, feasible = cluster(shared_host=True)
    assert not cl.hostnames_unique
    want = _spread_by_formula([(2, 2), (2, 2), (1, 1), (0, 1), (1, 1)], hosts=4, zones=3)  # a2 is host a1 too
    assert _default_spread(mover, feasible, cl) == want
