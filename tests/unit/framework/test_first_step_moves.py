"""The moves that need a step before the eviction (issue 37): --cordon (the nodes HighNodeUtilization empties are
cordoned first, so the estimate lands nothing back on them) and --surge (a pod its PodDisruptionBudget refuses, or
its workload's only pod, moves replacement first), as the plan decides them."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_desched.framework.plan import holds_node
from kubectl_desched.framework.policy_decoder import decode_policy, policy_from_plugins
from kubectl_desched.framework.runner import Scope, run
from kubectl_desched.framework.surge import Target, surge_target
from kubectl_desched.model.objects import pod_from_json
from kubectl_desched.model.state import ClusterState
from kubectl_desched.plugins import full_registry
from kubectl_desched.ui.emptying import emptying_docs, emptying_lines, node_note
from kubectl_desched.ui.explain import explain_pod_doc
from tests.builders import node, pdb, pod


def _plan(plugin: str, objs: list[dict[str, Any]], *, cordon: bool = False, surge: bool = False,
          args: dict[str, Any] | None = None) -> Any:
    reg = full_registry()
    low = {"cpu": 20, "memory": 20, "pods": 20}
    defaults = {"HighNodeUtilization": {"thresholds": low},
                "LowNodeUtilization": {"thresholds": low, "targetThresholds": {"cpu": 50, "memory": 50, "pods": 50}}}
    raw = policy_from_plugins([(plugin, "balance", dict(args or defaults[plugin]))], {}, {})
    policy = decode_policy(raw, reg, "flags")
    policy.limits.cordon, policy.limits.surge = cordon, surge
    nodes = [o for o in objs if o["kind"] == "Node"]
    pods = [o for o in objs if o["kind"] == "Pod"]
    pdbs = [o for o in objs if o["kind"] == "PodDisruptionBudget"]
    extra: dict[str, list[Any]] = {}
    for o in objs:
        if o["kind"] not in ("Node", "Pod", "PodDisruptionBudget"):
            extra.setdefault(o["kind"], []).append(o)
    from kubectl_desched.model.objects import node_from_json, pdb_from_json
    state = ClusterState([node_from_json(n) for n in nodes], [pod_from_json(p) for p in pods],
                         [pdb_from_json(b) for b in pdbs], extra=extra)
    return run(policy, state, Scope())


def _consolidation() -> list[dict[str, Any]]:
    """Two light nodes and two busier ones: LeastAllocated sends a replacement to the emptiest, a light node."""
    return [node("busy-1"), node("busy-2"), node("light-1"), node("light-2"),
            pod("fill-1", "busy-1", cpu="2", owner_name="fill", labels={"app": "fill"}),
            pod("fill-2", "busy-2", cpu="2", owner_name="fill", labels={"app": "fill"}),
            pod("web-1", "light-1", cpu="200m", owner_name="web", labels={"app": "web"}),
            pod("api-1", "light-2", cpu="300m", owner_name="api", labels={"app": "api"}),
            pod("agent-1", "light-1", cpu="50m", owner="DaemonSet", owner_name="agent")]


def test_without_cordon_every_move_off_a_light_node_would_land_back_on_one() -> None:
    plan = _plan("HighNodeUtilization", _consolidation())
    assert plan.candidates == []
    assert plan.kept_futile, "LeastAllocated puts each replacement on the other light node"
    assert plan.emptying == {}


def test_cordon_cordons_the_light_nodes_and_lands_nothing_there() -> None:
    plan = _plan("HighNodeUtilization", _consolidation(), cordon=True)
    assert sorted(c.pod.name for c in plan.candidates) == ["api-1", "web-1"]
    assert plan.emptying == {"light-1": "HighNodeUtilization", "light-2": "HighNodeUtilization"}
    for c in plan.candidates:
        d = plan.placement.of(c)
        assert d is not None and d.node in ("busy-1", "busy-2"), d
    docs = {d["node"]: d for d in emptying_docs(plan)}
    assert docs["light-1"]["empty"] and docs["light-1"]["moved"] == 1  # the DaemonSet pod does not hold it
    assert docs["light-1"]["frees"] == {"cpu": "4", "memory": "8Gi"}
    assert docs["light-2"]["empty"]
    assert "light-1: ends empty after 1 move(s), removable (frees 4 cpu, 8Gi memory); stays cordoned" in \
        "\n".join(emptying_lines(list(docs.values())))


def test_a_node_that_cannot_be_emptied_says_which_pods_stay_and_why() -> None:
    objs = [*_consolidation(), pod("solo", "light-2", cpu="100m", owner=None)]  # a bare pod: protected
    plan = _plan("HighNodeUtilization", objs, cordon=True)
    docs = {d["node"]: d for d in emptying_docs(plan)}
    assert not docs["light-2"]["empty"] and docs["light-2"]["frees"] is None
    assert [s["pod"] for s in docs["light-2"]["staying"]] == ["solo"]
    assert docs["light-2"]["staying"][0]["why"].startswith("protected: ")
    text = "\n".join(emptying_lines(list(docs.values())))
    assert "light-2: 1 pod(s) stay, so it is uncordoned after the moves:" in text


def test_a_node_already_cordoned_is_not_ours_to_cordon() -> None:
    objs = _consolidation()
    objs[3] = node("light-2", unschedulable=True)
    plan = _plan("HighNodeUtilization", objs, cordon=True)
    assert "light-2" not in plan.emptying and "light-1" in plan.emptying
    # explain node does not tell to pass the --cordon given: the node is left as it is, and says so
    assert node_note(plan, "light-2") == ("HighNodeUtilization empties under-utilized nodes: it is already "
                                          "unschedulable, so no replacement lands on it (--cordon leaves it as it is)")


def test_explain_node_says_what_cordon_does_where_the_plugin_moves_nothing() -> None:
    assert "with --cordon it is cordoned first" in str(node_note(_plan("HighNodeUtilization", _consolidation()),
                                                                 "light-1"))
    plan = _plan("HighNodeUtilization", _consolidation(), cordon=True)
    plan_none = _plan("HighNodeUtilization", _consolidation()[:4], cordon=True)  # no pod to move: nothing cordoned
    assert str(node_note(plan, "light-1")).startswith("removable after the plan (--cordon)")
    assert plan_none.emptying == {}
    assert node_note(plan_none, "light-1") == ("HighNodeUtilization empties under-utilized nodes, but planned no "
                                               "move: --cordon cordons nothing")


def test_holds_node_leaves_out_daemonsets_mirrors_finished_and_terminating_pods() -> None:
    assert holds_node(pod_from_json(pod("a", "n")))
    assert not holds_node(pod_from_json(pod("ds", "n", owner="DaemonSet")))
    assert not holds_node(pod_from_json(pod("m", "n", owner="Node", annotations={"kubernetes.io/config.mirror": "x"})))
    assert not holds_node(pod_from_json(pod("done", "n", phase="Succeeded")))


# ---------------------------------------------------------------------- --surge: who can move replacement first


def _deployment(name: str, *, replicas: int = 1, paused: bool = False, strategy: dict[str, Any] | None = None,
                generation: int = 1, observed: int = 1, updated: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": replicas, "selector": {"matchLabels": {"app": name}}}
    if paused:
        spec["paused"] = True
    if strategy is not None:
        spec["strategy"] = strategy
    return {"kind": "Deployment", "metadata": {"name": name, "namespace": "default", "uid": f"d-{name}",
                                               "generation": generation},
            "spec": spec, "status": {"observedGeneration": observed, "replicas": replicas,
                                     "updatedReplicas": replicas if updated is None else updated,
                                     "readyReplicas": replicas}}


def _replicaset(name: str, deployment: str | None, replicas: int = 1) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"rs-{name}"}
    if deployment:
        meta["ownerReferences"] = [{"kind": "Deployment", "name": deployment, "uid": f"d-{deployment}",
                                    "controller": True}]
    return {"kind": "ReplicaSet", "metadata": meta, "spec": {"replicas": replicas}}


def _hpa(name: str, target: str) -> dict[str, Any]:
    return {"kind": "HorizontalPodAutoscaler", "metadata": {"name": name, "namespace": "default"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": target}}}


def _ready(obj: dict[str, Any]) -> dict[str, Any]:
    obj["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return obj


def _extra(*objs: dict[str, Any]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {"ReplicaSet": [], "Deployment": [], "HorizontalPodAutoscaler": []}
    for o in objs:
        out[o["kind"]].append(o)
    return out


CHECKOUT = pod_from_json(pod("checkout-x", "n1", owner_name="checkout-rs"))


@pytest.mark.parametrize(("extra", "why"), [
    (_extra(_replicaset("checkout-rs", "checkout"), _deployment("checkout"), _hpa("scaler", "checkout")),
     "HorizontalPodAutoscaler scaler scales Deployment checkout: it would undo the surge"),
    (_extra(_replicaset("checkout-rs", "checkout"), _deployment("checkout", paused=True)),
     "Deployment checkout is paused"),
    (_extra(_replicaset("checkout-rs", "checkout"), _deployment("checkout", strategy={"type": "Recreate"})),
     "Deployment checkout uses the Recreate strategy: its old and new pods never run together"),
    (_extra(_replicaset("checkout-rs", "checkout"),
            _deployment("checkout", strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "0%"}})),
     "Deployment checkout has maxSurge 0: it never runs more pods than its replicas"),
    (_extra(_replicaset("checkout-rs", "checkout"), _deployment("checkout", generation=2)),
     "Deployment checkout is mid-rollout (its controller has not yet seen its latest change)"),
    (_extra(_replicaset("checkout-rs", "checkout"), _replicaset("checkout-old", "checkout"), _deployment("checkout")),
     "Deployment checkout is mid-rollout (2 of its ReplicaSets have replicas)"),
    (_extra(_replicaset("checkout-rs", None)), "ReplicaSet checkout-rs has no Deployment: eviction only"),
    ({}, "its ReplicaSet and Deployment were not read (a snapshot needs them: kubectl get "
         "nodes,pods,pdb,replicasets,deployments,hpa -A -o yaml)"),
])
def test_surge_refuses_where_it_cannot_be_safe(extra: dict[str, list[Any]], why: str) -> None:
    assert surge_target(CHECKOUT, extra) == why


def test_surge_refuses_a_statefulset_pod_and_finds_a_deployment() -> None:
    ledger = pod_from_json(pod("ledger-0", "n1", owner="StatefulSet", owner_name="ledger"))
    assert surge_target(ledger, {}) == "StatefulSet ledger keeps each pod's identity: eviction only"
    found = surge_target(CHECKOUT, _extra(_replicaset("checkout-rs", "checkout"), _deployment("checkout", replicas=2)))
    assert found == Target("default", "checkout", "checkout-rs", 2)


def _over_utilized(*extra_objs: dict[str, Any]) -> list[dict[str, Any]]:
    """n1 over LowNodeUtilization's targets with checkout's two pods (a PDB allows none), n2 and n3 empty."""
    return [node("n1"), node("n2"), node("n3"),
            _ready(pod("checkout-a", "n1", cpu="1500m", owner_name="checkout-rs", labels={"app": "checkout"})),
            _ready(pod("checkout-b", "n1", cpu="1500m", owner_name="checkout-rs", labels={"app": "checkout"})),
            pdb("checkout", {"app": "checkout"}, allowed=0, healthy=(2, 2)),
            _replicaset("checkout-rs", "checkout", 2), _deployment("checkout", replicas=2), *extra_objs]


def test_without_surge_the_budget_keeps_both_pods() -> None:
    plan = _plan("LowNodeUtilization", _over_utilized())
    assert plan.candidates == [] and len(plan.kept_by_pdb) == 2


def test_surge_moves_a_pod_its_budget_refuses_and_spends_no_budget() -> None:
    plan = _plan("LowNodeUtilization", _over_utilized(), surge=True)
    assert [c.method for c in plan.candidates] == ["surge"]  # one move brings n1 within its targets
    c = plan.candidates[0]
    assert c.pdb_refusals == [] and "allows no disruption" in c.why_surge
    d = plan.placement.of(c)
    assert d is not None and d.node in ("n2", "n3")


def test_surge_keeps_a_pod_with_one_clear_line_where_it_cannot_surge() -> None:
    plan = _plan("LowNodeUtilization", _over_utilized(_hpa("scaler", "checkout")), surge=True)
    assert plan.candidates == []
    whys = [why for _pod, _plugin, why in plan.kept_by_pdb.values()]
    assert all("--surge cannot move it: HorizontalPodAutoscaler scaler scales Deployment checkout" in w for w in whys)


def test_surge_moves_a_workloads_only_ready_pod_without_a_budget() -> None:
    objs = [node("n1"), node("n2"),
            _ready(pod("solo-a", "n1", cpu="1500m", owner_name="solo-rs", labels={"app": "solo"})),
            pod("anchor", "n1", cpu="1", owner=None),  # a bare pod: never moved, keeps n1 over its targets
            _replicaset("solo-rs", "solo"), _deployment("solo")]
    plain = _plan("LowNodeUtilization", objs)
    assert [c.method for c in plain.candidates] == ["evict"]
    surged = _plan("LowNodeUtilization", objs, surge=True)
    assert [(c.method, c.why_surge) for c in surged.candidates] == [("surge", "its workload's only pod")]
    # explain pod, without --surge, says the eviction it plans could be a surge (the plan's state hides the pod)
    solo = plain.candidates[0].pod
    assert explain_pod_doc(plain, solo, ["LowNodeUtilization"])["surge"] == (
        "movable with --surge: Deployment solo scaled 1 -> 2 until its new pod is Ready, then back, so its ready "
        "pods never drop below the start")


def test_a_surge_is_placed_with_the_old_pod_still_holding_its_requests() -> None:
    """The pod fits nowhere else, and back on n1 only once it is gone: an eviction would land back, a surge has
    no room at all."""
    objs = [node("n1"), node("n2", cpu="1"),
            _ready(pod("solo-a", "n1", cpu="1500m", owner_name="solo-rs", labels={"app": "solo"})),
            pod("anchor", "n1", cpu="2", owner=None),
            _replicaset("solo-rs", "solo"), _deployment("solo")]
    evicted = _plan("LowNodeUtilization", objs)  # an eviction's replacement lands on n1 again once the pod is gone
    assert evicted.candidates == [] and evicted.kept_futile
    surged = _plan("LowNodeUtilization", objs, surge=True)
    assert surged.candidates == []
    (why,) = [w for _p, _plugin, w in surged.kept_by_pdb.values()]
    assert why.startswith("its workload's only pod; --surge cannot move it: no node has room for the extra pod")


def test_the_selector_and_the_line_prompt_show_a_surge_as_such() -> None:
    from kubectl_desched.ui.picker_state import Selection, details

    plan = _plan("LowNodeUtilization", _over_utilized(), surge=True)
    (c,) = plan.candidates
    row = Selection([c]).rows[0]
    assert Selection([c])._row_text(row).endswith("LowNodeUtilization  (surge)")
    assert any(line.startswith("method     surge: replacement first, as PodDisruptionBudget checkout")
               for line in details(c))


def test_explain_refuses_a_surge_the_plan_would_refuse() -> None:
    """One rule for the plan, apply and explain: with an unready pod in its ReplicaSet, scaling back would remove
    that pod, so explain must not call the kept one movable."""
    objs = _over_utilized()
    objs[4] = pod("checkout-b", "n1", cpu="1500m", owner_name="checkout-rs", labels={"app": "checkout"})  # unready
    plain = _plan("LowNodeUtilization", objs)
    kept = next(p for p, _plugin, _why in plain.kept_by_pdb.values() if p.name == "checkout-a")
    assert explain_pod_doc(plain, kept, ["LowNodeUtilization"])["surge"] == (
        "not movable with --surge: 1 other pod(s) of ReplicaSet checkout-rs are not Ready, and scaling back would "
        "remove one of them instead")
    surged = _plan("LowNodeUtilization", objs, surge=True)
    assert surged.candidates == []
