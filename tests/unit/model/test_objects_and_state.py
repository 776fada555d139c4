"""Parsing raw API objects into the lean model, and the ClusterState indexes built on it."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_desched.framework.overlay import PlannedState
from kubectl_desched.model.objects import (
    ParseError,
    Taint,
    Toleration,
    node_from_json,
    pdb_from_json,
    pod_from_json,
    pod_requests,
)
from kubectl_desched.model.state import ClusterState
from tests import builders as b

MI = 2.0**20


def _container(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None,
               **extra: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "c", "image": "x", "resources": resources, **extra}


# --- effective requests ------------------------------------------------------------------------------------------


def test_requests_sum_containers() -> None:
    spec = {"containers": [_container({"cpu": "100m", "memory": "100Mi"}), _container({"cpu": "200m"})]}
    assert pod_requests(spec) == {"cpu": 300.0, "memory": 100 * MI}


def test_requests_take_the_largest_init_container_when_bigger() -> None:
    spec = {"containers": [_container({"cpu": "100m"})],
            "initContainers": [_container({"cpu": "1", "memory": "10Mi"}), _container({"cpu": "300m"})]}
    assert pod_requests(spec) == {"cpu": 1000.0, "memory": 10 * MI}


def test_requests_ignore_smaller_init_containers() -> None:
    spec = {"containers": [_container({"cpu": "2"})], "initContainers": [_container({"cpu": "1"})]}
    assert pod_requests(spec) == {"cpu": 2000.0}


def test_restartable_sidecars_add_to_containers_and_to_later_init_containers() -> None:
    spec = {
        "containers": [_container({"cpu": "100m", "memory": "100Mi"}), _container({"cpu": "200m"})],
        "initContainers": [
            _container({"cpu": "500m"}),  # runs alone: 500m
            _container({"cpu": "50m", "memory": "10Mi"}, restartPolicy="Always"),  # sidecar: keeps running
            _container({"cpu": "400m"}),  # runs next to the sidecar: 450m
        ],
        "overhead": {"cpu": "10m", "memory": "1Mi"},
    }
    # containers 300m + sidecar 50m = 350m < init peak 500m; memory 100Mi + 10Mi; overhead on top.
    assert pod_requests(spec) == {"cpu": 510.0, "memory": 111 * MI}


def test_late_init_container_next_to_sidecars_can_be_the_peak() -> None:
    spec = {"containers": [_container({"cpu": "100m"})],
            "initContainers": [_container({"cpu": "300m"}, restartPolicy="Always"), _container({"cpu": "600m"})]}
    # 300m sidecar + 600m init = 900m beats containers 100m + sidecar 300m = 400m
    assert pod_requests(spec) == {"cpu": 900.0}


def test_overhead_is_added() -> None:
    spec = {"containers": [_container({"cpu": "100m"})], "overhead": {"cpu": "250m", "memory": "120Mi"}}
    assert pod_requests(spec) == {"cpu": 350.0, "memory": 120 * MI}


def test_pod_without_requests_has_none() -> None:
    assert pod_requests({"containers": [_container()]}) == {}
    assert pod_from_json(b.pod("p", "n1", cpu="")).requests == {}


def test_bad_quantity_names_the_pod() -> None:
    raw = b.pod("p", "n1", cpu="lots", namespace="ns")
    with pytest.raises(ParseError, match=r"^Pod ns/p: spec\.containers\[0\]\.resources\.requests\[cpu\]: must be a "
                                         r"quantity such as 500m or 1Gi, not the string 'lots'$"):
        pod_from_json(raw)


# --- QoS ---------------------------------------------------------------------------------------------------------


def _qos_of(*containers: dict[str, Any], init: list[dict[str, Any]] | None = None,
            status_qos: str | None = None) -> str:
    raw = b.pod("p", "n1")
    raw["spec"]["containers"] = list(containers)
    if init:
        raw["spec"]["initContainers"] = init
    if status_qos:
        raw["status"]["qosClass"] = status_qos
    return pod_from_json(raw).qos


@pytest.mark.parametrize(
    ("containers", "init", "expected"),
    [
        ([_container()], None, "BestEffort"),
        ([_container({"cpu": "100m"})], None, "Burstable"),
        ([_container({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})], None, "Guaranteed"),
        ([_container(limits={"cpu": "1", "memory": "1Gi"})], None, "Guaranteed"),  # requests default to limits
        ([_container({"cpu": "500m", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})], None, "Burstable"),
        ([_container({"cpu": "1"}, {"cpu": "1"})], None, "Burstable"),  # no memory limit
        ([_container({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}), _container()], None, "Burstable"),
        ([_container({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})], [_container({"cpu": "1"})],
         "Burstable"),  # init containers count
        ([_container({"cpu": "1000m", "memory": "1024Mi"}, {"cpu": "1", "memory": "1Gi"})], None, "Guaranteed"),
        ([_container({"ephemeral-storage": "1Gi"})], None, "BestEffort"),  # only cpu and memory count
        ([_container({"cpu": "0"})], None, "BestEffort"),  # zero requests do not count
    ],
)
def test_qos_computed_when_status_has_none(containers: list[dict[str, Any]], init: list[dict[str, Any]] | None,
                                           expected: str) -> None:
    assert _qos_of(*containers, init=init) == expected


def test_status_qos_class_wins() -> None:
    assert _qos_of(_container(), status_qos="Guaranteed") == "Guaranteed"


# --- volumes, owners, phases, misc -------------------------------------------------------------------------------


def test_local_volumes_and_pvcs() -> None:
    raw = b.pod("p", "n1", volumes=[
        {"name": "cache", "emptyDir": {}},
        {"name": "logs", "hostPath": {"path": "/var/log"}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}},
        {"name": "cfg", "configMap": {"name": "cfg"}},
        {"name": "tok", "projected": {"sources": []}},
    ])
    p = pod_from_json(raw)
    assert p.local_volumes == ("emptyDir cache", "hostPath logs")
    assert p.pvc_claims == ("data-0",)


def test_no_local_storage_for_configmaps_and_secrets() -> None:
    raw = b.pod("p", "n1", volumes=[{"name": "cfg", "configMap": {"name": "x"}}, {"name": "s", "secret": {}}])
    p = pod_from_json(raw)
    assert p.local_volumes == ()
    assert p.pvc_claims == ()


def test_owners_and_controller() -> None:
    raw = b.pod("p", "n1", owner=None)
    raw["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u1"},
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u2", "controller": True},
    ]
    p = pod_from_json(raw)
    assert [o.kind for o in p.owners] == ["ConfigMap", "ReplicaSet"]
    assert p.controller is not None
    assert (p.controller.kind, p.controller.name, p.controller.uid) == ("ReplicaSet", "rs", "u2")


def test_controller_falls_back_to_first_owner() -> None:
    raw = b.pod("p", "n1", owner=None)
    raw["metadata"]["ownerReferences"] = [{"kind": "Job", "name": "j", "uid": "u"}]
    p = pod_from_json(raw)
    assert p.controller is not None and p.controller.kind == "Job"
    assert p.controller.controller is False


def test_bare_pod_has_no_controller() -> None:
    p = pod_from_json(b.pod("p", "n1", owner=None))
    assert p.owners == ()
    assert p.controller is None


@pytest.mark.parametrize(
    ("phase", "terminal"),
    [("Succeeded", True), ("Failed", True), ("Running", False), ("Pending", False), ("Unknown", False)],
)
def test_terminal_phases(phase: str, terminal: bool) -> None:
    assert pod_from_json(b.pod("p", "n1", phase=phase)).is_terminal is terminal


def test_missing_phase_is_pending_and_missing_namespace_is_default() -> None:
    raw = b.pod("p", "n1")
    del raw["status"]["phase"]
    del raw["metadata"]["namespace"]
    p = pod_from_json(raw)
    assert p.phase == "Pending"
    assert p.namespace == "default"
    assert p.key == "default/p"


def test_pod_fields() -> None:
    raw = b.pod("p", "n1", priority=100, annotations={
        "kubectl.kubernetes.io/last-applied-configuration": "{...}", "keep": "me"},
        tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        nodeSelector={"disk": "ssd"}, priorityClassName="high", resourceClaims=[{"name": "gpu"}])
    raw["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    p = pod_from_json(raw)
    assert p.annotations == {"keep": "me"}  # last-applied-configuration dropped
    assert p.priority == 100
    assert p.priority_class == "high"
    assert p.terminating
    assert p.has_resource_claims
    assert p.node_selector == {"disk": "ssd"}
    assert p.tolerations == (Toleration("k", "Exists", "", "NoSchedule"),)
    assert p.started == "2026-01-01T00:00:00Z"


def test_pod_without_name_is_an_error() -> None:
    raw = b.pod("p", "n1")
    del raw["metadata"]["name"]
    with pytest.raises(ParseError, match=r"without metadata\.name"):
        pod_from_json(raw)


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        (Toleration("k", "Equal", "v", "NoSchedule"), Taint("k", "v", "NoSchedule"), True),
        (Toleration("k", "Equal", "v", "NoSchedule"), Taint("k", "w", "NoSchedule"), False),
        (Toleration("k", "Equal", "v", "NoSchedule"), Taint("k", "v", "NoExecute"), False),
        (Toleration("k", "Equal", "v", ""), Taint("k", "v", "NoExecute"), True),  # empty effect: all effects
        (Toleration("k", "Exists", "", "NoSchedule"), Taint("k", "any", "NoSchedule"), True),
        (Toleration("", "Exists", "", ""), Taint("whatever", "x", "NoExecute"), True),  # tolerates everything
        (Toleration("other", "Exists", "", ""), Taint("k", "", "NoSchedule"), False),
    ],
)
def test_toleration_rules(toleration: Toleration, taint: Taint, tolerated: bool) -> None:
    assert toleration.tolerates(taint) is tolerated


# --- nodes -------------------------------------------------------------------------------------------------------


def test_node_parsing() -> None:
    raw = b.node("n1", cpu="4", memory="8Gi", pods=110, labels={"zone": "a"},
                 taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"},
                         {"key": "x", "effect": "NoExecute"}],
                 unschedulable=True)
    n = node_from_json(raw)
    assert n.allocatable == {"cpu": 4000.0, "memory": 8 * 2.0**30, "pods": 110.0}
    assert n.labels["zone"] == "a"
    assert [str(t) for t in n.taints] == ["dedicated=db:NoSchedule", "x:NoExecute"]
    assert n.unschedulable
    assert n.ready


@pytest.mark.parametrize(
    ("conditions", "ready"),
    [
        ([{"type": "Ready", "status": "True"}], True),
        ([{"type": "Ready", "status": "False"}], False),
        ([{"type": "Ready", "status": "Unknown"}], False),
        # Like upstream's IsReady (proven by the oracle case nodes-without-ready-condition): only a Ready condition
        # that is not True rules a node out.
        ([{"type": "MemoryPressure", "status": "True"}], True),
        ([], True),
    ],
)
def test_node_readiness(conditions: list[dict[str, str]], ready: bool) -> None:
    raw = b.node("n1")
    raw["status"]["conditions"] = conditions
    assert node_from_json(raw).ready is ready


def test_node_allocatable_falls_back_to_capacity() -> None:
    raw = b.node("n1")
    raw["status"]["allocatable"] = {}
    raw["status"]["capacity"] = {"cpu": "8", "pods": "30"}
    assert node_from_json(raw).allocatable == {"cpu": 8000.0, "pods": 30.0}
    del raw["status"]["allocatable"]
    assert node_from_json(raw).allocatable == {"cpu": 8000.0, "pods": 30.0}


def test_node_bad_quantity_and_missing_name() -> None:
    raw = b.node("n1", cpu="four")
    with pytest.raises(ParseError, match=r"^Node n1: status\.allocatable\[cpu\]: must be a quantity"):
        node_from_json(raw)
    with pytest.raises(ParseError, match=r"without metadata\.name"):
        node_from_json({"kind": "Node", "metadata": {}})


def test_node_tolerated_by_only_considers_hard_effects() -> None:
    n = node_from_json(b.node("n1", taints=[{"key": "soft", "effect": "PreferNoSchedule"}]))
    assert n.tolerated_by(pod_from_json(b.pod("p", "n1")))
    n = node_from_json(b.node("n1", taints=[{"key": "hard", "effect": "NoSchedule"}]))
    assert not n.tolerated_by(pod_from_json(b.pod("p", "n1")))
    assert n.tolerated_by(pod_from_json(b.pod("p", "n1", tolerations=[{"key": "hard", "operator": "Exists"}])))


# --- PDBs --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("generation", "observed", "fresh"),
    [(1, 1, True), (2, 1, False), (2, 3, True), (None, None, True), (3, None, False)],
)
def test_pdb_freshness(generation: int | None, observed: int | None, fresh: bool) -> None:
    raw = b.pdb("budget", {"app": "web"}, allowed=1)
    raw["metadata"].pop("generation")
    raw["status"].pop("observedGeneration")
    if generation is not None:
        raw["metadata"]["generation"] = generation
    if observed is not None:
        raw["status"]["observedGeneration"] = observed
    assert pdb_from_json(raw).fresh is fresh


def test_pdb_covers_by_namespace_and_selector() -> None:
    budget = pdb_from_json(b.pdb("budget", {"app": "web"}, namespace="shop", allowed=2))
    assert budget.disruptions_allowed == 2
    assert budget.covers(pod_from_json(b.pod("a", "n1", namespace="shop", labels={"app": "web"})))
    assert not budget.covers(pod_from_json(b.pod("b", "n1", namespace="other", labels={"app": "web"})))
    assert not budget.covers(pod_from_json(b.pod("c", "n1", namespace="shop", labels={"app": "db"})))


def test_pdb_with_empty_selector_covers_the_whole_namespace() -> None:
    raw = b.pdb("all", {}, namespace="shop")
    raw["spec"]["selector"] = {}
    budget = pdb_from_json(raw)
    assert budget.covers(pod_from_json(b.pod("a", "n1", namespace="shop")))


def test_pdb_bad_selector_is_a_parse_error() -> None:
    raw = b.pdb("bad", {})
    raw["spec"]["selector"] = {"matchExpressions": [{"key": "a", "operator": "Near", "values": ["x"]}]}
    with pytest.raises(ParseError, match=r"^PodDisruptionBudget default/bad: spec\.selector\.matchExpressions\[0\]"
                                         r"\.operator: must be one of In, NotIn, Exists, DoesNotExist, not the "
                                         r"string 'Near'$"):
        pdb_from_json(raw)


# --- ClusterState ------------------------------------------------------------------------------------------------


def _state(*objs: dict[str, Any]) -> ClusterState:
    return b.state(list(objs))


def test_pods_on_node_and_a_planned_overlay() -> None:
    state = _state(b.node("n1"), b.node("n2"), b.pod("a", "n1"), b.pod("b", "n1"), b.pod("c", "n2"),
                   b.pod("pending", ""))
    assert [p.name for p in state.pods_on_node("n1")] == ["a", "b"]
    assert state.pods_on_node("nowhere") == []
    a = state.find_pod("default", "a")
    assert a is not None
    planned = PlannedState(state)
    planned.plan(a)
    assert planned.is_planned(a)
    assert [p.name for p in planned.pods_on_node("n1")] == ["b"]
    assert [p.name for p in planned.all_pods_on_node("n1")] == ["a", "b"]
    assert [p.name for p in state.pods_on_node("n1")] == ["a", "b"]  # the state under it is never written
    assert [p.name for p in PlannedState(state).pods_on_node("n1")] == ["a", "b"]  # a new plan starts afresh
    assert state.find_pod("default", "missing") is None


def test_requested_is_cached_and_invalidated_by_planning() -> None:
    state = _state(b.node("n1"), b.pod("a", "n1", cpu="300m", memory="1Gi"), b.pod("b", "n1", cpu="200m"),
                   b.pod("done", "n1", cpu="5", phase="Succeeded"), b.pod("failed", "n1", cpu="5", phase="Failed"))
    assert state.requested("n1") == {"pods": 2.0, "cpu": 500.0, "memory": 2.0**30}
    assert state.requested("n1") is state.requested("n1")  # cached
    a = state.find_pod("default", "a")
    assert a is not None
    planned = PlannedState(state)
    assert planned.requested("n1") == {"pods": 2.0, "cpu": 500.0, "memory": 2.0**30}
    planned.plan(a)
    assert planned.requested("n1") == {"pods": 1.0, "cpu": 200.0}
    assert planned.requested_before("n1") == {"pods": 2.0, "cpu": 500.0, "memory": 2.0**30}
    assert state.requested("n1")["cpu"] == 500.0
    assert state.requested("empty") == {"pods": 0.0}


def test_owner_pods_share_the_controller_and_skip_removed() -> None:
    state = _state(
        b.node("n1"),
        b.pod("web-1", "n1", owner_name="web"), b.pod("web-2", "n1", owner_name="web"),
        b.pod("web-3", "n1", owner_name="web"), b.pod("db-1", "n1", owner_name="db"),
        b.pod("bare", "n1", owner=None),
    )
    web1 = state.find_pod("default", "web-1")
    assert web1 is not None
    assert sorted(p.name for p in state.owner_pods(web1)) == ["web-1", "web-2", "web-3"]
    web2 = state.find_pod("default", "web-2")
    assert web2 is not None
    planned = PlannedState(state)
    planned.plan(web2)
    assert sorted(p.name for p in planned.owner_pods(web1)) == ["web-1", "web-3"]
    assert len(state.owner_pods(web1)) == 3
    bare = state.find_pod("default", "bare")
    assert bare is not None and state.owner_pods(bare) == []


def test_owner_without_uid_is_keyed_by_namespace_kind_and_name() -> None:
    raws = []
    for name, ns in (("a", "x"), ("b", "x"), ("c", "y")):
        raw = b.pod(name, "n1", namespace=ns)
        raw["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "rs", "controller": True}]
        raws.append(raw)
    state = _state(b.node("n1"), *raws)
    a = state.find_pod("x", "a")
    assert a is not None
    assert sorted(p.name for p in state.owner_pods(a)) == ["a", "b"]


def test_pdbs_for() -> None:
    state = _state(
        b.node("n1"),
        b.pod("a", "n1", namespace="shop", labels={"app": "web"}),
        b.pod("b", "n1", namespace="shop", labels={"app": "db"}),
        b.pdb("web", {"app": "web"}, namespace="shop"),
        b.pdb("web-elsewhere", {"app": "web"}, namespace="other"),
        b.pdb("all-shop", {}, namespace="shop"),
    )
    a, bb = state.find_pod("shop", "a"), state.find_pod("shop", "b")
    assert a is not None and bb is not None
    assert sorted(x.name for x in state.pdbs_for(a)) == ["all-shop", "web"]
    assert [x.name for x in state.pdbs_for(bb)] == ["all-shop"]


def test_replicas_share_equal_values_and_pdbs_still_match_per_namespace() -> None:
    pods = [pod_from_json(b.pod(f"web-{i}", "n1", labels={"app": "web"}, namespace=ns, owner_name="web"))
            for i, ns in enumerate(["shop", "shop", "staging"])]
    assert pods[0].labels is pods[1].labels is pods[2].labels  # one labels map for equal labels
    assert pods[0].tolerations is pods[1].tolerations and pods[0].requests is pods[1].requests
    running = [pod_from_json(b.with_status(b.pod(f"api-{i}", "n1"), containers=[b.container_status(restarts=r)]))
               for i, r in enumerate((0, 0, 2))]
    assert running[0].statuses is running[1].statuses  # equal statuses: one tuple
    assert running[2].statuses[0].restarts == 2 and running[0].statuses[0].restarts == 0
    other = pod_from_json(b.pod("db-0", "n1", labels={"app": "db"}, namespace="shop"))
    assert other.labels == {"app": "db"}
    state = ClusterState([node_from_json(b.node("n1"))], [*pods, other],
                         [pdb_from_json(b.pdb("web", {"app": "web"}, namespace="shop")),
                          pdb_from_json(b.pdb("all", {}, namespace="staging"))])
    assert [x.name for x in state.pdbs_for(pods[0])] == ["web"]
    assert [x.name for x in state.pdbs_for(pods[1])] == ["web"]
    assert [x.name for x in state.pdbs_for(pods[2])] == ["all"]  # same labels, another namespace
    assert state.pdbs_for(other) == []


def test_a_pdb_without_a_selector_covers_no_pod_and_an_empty_one_every_pod() -> None:
    """policy/v1 (and upstream's PodsWithoutPDB): a missing selector selects nothing, {} the whole namespace."""
    pod = pod_from_json(b.pod("p", "n1", labels={"app": "web"}))
    missing = b.pdb("none", {})
    del missing["spec"]["selector"]
    empty = b.pdb("all", {})
    empty["spec"]["selector"] = {}
    assert not pdb_from_json(missing).covers(pod)
    assert pdb_from_json(empty).covers(pod)
    assert pdb_from_json(b.pdb("web", {"app": "web"})).covers(pod)
    assert not pdb_from_json(b.pdb("db", {"app": "db"})).covers(pod)


def test_pod_level_requests_replace_the_containers_for_cpu_memory_and_hugepages() -> None:
    raw = b.pod("p", "n1", cpu="100m", memory="64Mi")
    raw["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
    raw["spec"]["resources"] = {"requests": {"cpu": "1", "memory": "1Gi", "hugepages-2Mi": "4Mi"}}
    raw["spec"]["overhead"] = {"cpu": "50m"}
    req = pod_from_json(raw).requests
    assert req["cpu"] == 1050 and req["memory"] == 1024**3 and req["hugepages-2Mi"] == 4 * 1024**2
    assert req["nvidia.com/gpu"] == 1  # not a pod-level resource: the containers' request stays
    raw["spec"]["resources"] = {"requests": {"cpu": "lots"}}
    with pytest.raises(ParseError, match=r"spec\.resources\.requests\[cpu\]"):
        pod_from_json(raw)


@pytest.mark.parametrize(("field", "value"), [
    ("name", "web\x1b[2J\x1b[31mEVICTED"), ("name", "Web_1"), ("name", "x" * 254),
    ("namespace", "Bad_NS!"), ("namespace", "shop\nerror: forged"), ("nodeName", "n1\r"),
])
def test_names_the_api_server_would_refuse_are_refused_before_anything_prints_them(field: str, value: str) -> None:
    raw = b.pod("p", "n1")
    if field == "nodeName":
        raw["spec"]["nodeName"] = value
    else:
        raw["metadata"][field] = value
    path = "spec.nodeName" if field == "nodeName" else f"metadata.{field}"
    with pytest.raises(ParseError, match=rf": {path}: ") as info:
        pod_from_json(raw)
    assert "\x1b" not in str(info.value) and "\n" not in str(info.value)


def test_find_pod_by_namespace_and_name_also_through_a_plan() -> None:
    """The name index is made on the first lookup; a plan's overlay finds its planned pods too (explain pod
    explains the candidates), from the index of the state under it."""
    first, again = pod_from_json(b.pod("web", "n1")), pod_from_json(b.pod("web", "n2"))
    other = pod_from_json(b.pod("web", "n1", namespace="shop"))
    state = ClusterState([node_from_json(b.node("n1")), node_from_json(b.node("n2"))], [first, other, again])
    planned = PlannedState(state)
    planned.plan(again)
    assert planned.find_pod("default", "web") is again  # the last of a repeated name, as read in order
    assert state.find_pod("shop", "web") is other
    assert state.find_pod("shop", "api") is None and state.find_pod("nowhere", "web") is None
