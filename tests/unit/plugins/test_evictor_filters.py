"""DefaultEvictor and MigrationController: which pods may be evicted (filter) and whether now (pre-eviction)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kubectl_desched.framework.args import decode_args
from kubectl_desched.framework.plan import EvictionPlan, Limits, PluginHandle, ProfileEvictor
from kubectl_desched.model.state import ClusterState
from kubectl_desched.plugins.koordinator.migrationcontroller import MigrationController, MigrationControllerArgs
from kubectl_desched.plugins.upstream.defaultevictor import DefaultEvictor, DefaultEvictorArgs
from tests import builders as b

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
EVICT = {"descheduler.alpha.kubernetes.io/evict": "true"}
PREFER_NO = {"descheduler.alpha.kubernetes.io/prefer-no-eviction": ""}


def _state(objs: list[dict[str, Any]], extra: dict[str, list[Any]] | None = None) -> ClusterState:
    return b.state(objs, extra=extra, now=NOW)


def _handle(state: ClusterState, name: str) -> PluginHandle:
    plan = EvictionPlan(state, Limits())
    return PluginHandle(plan, ProfileEvictor(plan, "p", lambda _p: None), name)


def default_evictor(args: dict[str, Any] | None = None, objs: list[dict[str, Any]] | None = None,
                    extra: dict[str, list[Any]] | None = None) -> tuple[DefaultEvictor, ClusterState]:
    state = _state([b.node("n1"), b.node("n2"), *(objs or [])], extra)
    evictor = DefaultEvictor(decode_args(DefaultEvictorArgs, args or {}, ""), _handle(state, "DefaultEvictor"))
    return evictor, state


def _verdict(args: dict[str, Any], raw_pod: dict[str, Any], *others: dict[str, Any],
             extra: dict[str, list[Any]] | None = None) -> str | None:
    evictor, state = default_evictor(args, [raw_pod, *others], extra)
    pod = state.find_pod(raw_pod["metadata"]["namespace"], raw_pod["metadata"]["name"])
    assert pod is not None
    return evictor.filter(pod)


def _terminating(**kw: Any) -> dict[str, Any]:
    raw = b.pod("p", "n1", **kw)
    raw["metadata"]["deletionTimestamp"] = "2026-03-01T11:59:00Z"
    return raw


def _failed_bare() -> dict[str, Any]:
    return b.pod("p", "n1", owner=None, phase="Failed")


CASES: list[tuple[str, dict[str, Any], dict[str, Any], str | None]] = [
    ("plain ReplicaSet pod", {}, b.pod("p", "n1"), None),
    ("mirror", {}, b.pod("p", "n1", annotations={"kubernetes.io/config.mirror": "abc"}), "mirror pod"),
    ("static", {}, b.pod("p", "n1", annotations={"kubernetes.io/config.source": "file"}), "static pod"),
    ("config source api", {}, b.pod("p", "n1", annotations={"kubernetes.io/config.source": "api"}), None),
    ("terminating", {}, _terminating(), "terminating"),
    ("system critical", {}, b.pod("p", "n1", priority=2_000_000_000), "system critical (priority 2000000000)"),
    ("system node critical", {}, b.pod("p", "n1", priority=2_000_001_000), "system critical (priority 2000001000)"),
    ("high but not critical", {}, b.pod("p", "n1", priority=1_999_999_999), None),
    ("critical allowed", {"evictSystemCriticalPods": True}, b.pod("p", "n1", priority=2_000_000_000), None),
    ("critical allowed via podProtections", {"podProtections": {"defaultDisabled": ["SystemCriticalPods"]}},
     b.pod("p", "n1", priority=2_000_000_000), None),
    ("priorityThreshold value", {"priorityThreshold": {"value": 1000}}, b.pod("p", "n1", priority=1000),
     "priority 1000 at or above the threshold 1000"),
    ("below priorityThreshold value", {"priorityThreshold": {"value": 1000}}, b.pod("p", "n1", priority=999), None),
    ("no priority with a threshold", {"priorityThreshold": {"value": 0}}, b.pod("p", "n1"), None),
    ("priorityThreshold ignored when critical pods may go",
     {"evictSystemCriticalPods": True, "priorityThreshold": {"value": 10}}, b.pod("p", "n1", priority=50), None),
    ("bare pod", {}, b.pod("p", "n1", owner=None), "bare pod (no owner)"),
    ("failed bare pod protected by default", {}, _failed_bare(), "bare pod (no owner)"),
    ("failed bare pod with evictFailedBarePods", {"evictFailedBarePods": True}, _failed_bare(), None),
    ("failed bare pod with FailedBarePods disabled", {"podProtections": {"defaultDisabled": ["FailedBarePods"]}},
     _failed_bare(), None),
    ("running bare pod with evictFailedBarePods", {"evictFailedBarePods": True}, b.pod("p", "n1", owner=None),
     "bare pod (no owner)"),
    ("emptyDir", {}, b.pod("p", "n1", volumes=[{"name": "cache", "emptyDir": {}}]), "local storage (emptyDir cache)"),
    ("hostPath", {}, b.pod("p", "n1", volumes=[{"name": "logs", "hostPath": {"path": "/x"}}]),
     "local storage (hostPath logs)"),
    ("local storage allowed", {"evictLocalStoragePods": True},
     b.pod("p", "n1", volumes=[{"name": "cache", "emptyDir": {}}]), None),
    ("local storage allowed via podProtections", {"podProtections": {"defaultDisabled": ["PodsWithLocalStorage"]}},
     b.pod("p", "n1", volumes=[{"name": "cache", "emptyDir": {}}]), None),
    ("DaemonSet", {}, b.pod("p", "n1", owner="DaemonSet"), "DaemonSet pod"),
    ("DaemonSet allowed", {"evictDaemonSetPods": True}, b.pod("p", "n1", owner="DaemonSet"), None),
    ("DaemonSet allowed via podProtections", {"podProtections": {"defaultDisabled": ["DaemonSetPods"]}},
     b.pod("p", "n1", owner="DaemonSet"), None),
    ("PVC not protected by default", {},
     b.pod("p", "n1", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]), None),
    ("PVC with ignorePvcPods", {"ignorePvcPods": True},
     b.pod("p", "n1", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]),
     "uses a PersistentVolumeClaim (data)"),
    ("PVC with extraEnabled", {"podProtections": {"extraEnabled": ["PodsWithPVC"]}},
     b.pod("p", "n1", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]),
     "uses a PersistentVolumeClaim (data)"),
    ("PodsWithoutPDB", {"ignorePodsWithoutPDB": True}, b.pod("p", "n1"), "no PodDisruptionBudget covers it"),
    ("PodsWithoutPDB via podProtections", {"podProtections": {"extraEnabled": ["PodsWithoutPDB"]}},
     b.pod("p", "n1"), "no PodDisruptionBudget covers it"),
    ("ResourceClaims not protected by default", {}, b.pod("p", "n1", resourceClaims=[{"name": "gpu"}]), None),
    ("ResourceClaims", {"podProtections": {"extraEnabled": ["PodsWithResourceClaims"]}},
     b.pod("p", "n1", resourceClaims=[{"name": "gpu"}]), "uses ResourceClaims"),
    ("labelSelector mismatch", {"labelSelector": {"matchLabels": {"app": "web"}}},
     b.pod("p", "n1", labels={"app": "db"}), "labels do not match the DefaultEvictor labelSelector"),
    ("labelSelector match", {"labelSelector": {"matchLabels": {"app": "web"}}},
     b.pod("p", "n1", labels={"app": "web"}), None),
    ("minPodAge too young", {"minPodAge": "1h"}, b.pod("p", "n1", started="2026-03-01T11:30:00Z"),
     "younger than minPodAge 1h"),
    ("minPodAge old enough", {"minPodAge": "1h"}, b.pod("p", "n1", started="2026-03-01T10:30:00Z"), None),
    ("minPodAge in seconds", {"minPodAge": 600}, b.pod("p", "n1", started="2026-03-01T11:55:00Z"),
     "younger than minPodAge 600s"),
    ("noEvictionPolicy Mandatory", {"noEvictionPolicy": "Mandatory"}, b.pod("p", "n1", annotations=PREFER_NO),
     "has the prefer-no-eviction annotation (noEvictionPolicy Mandatory)"),
    ("noEvictionPolicy Preferred", {"noEvictionPolicy": "Preferred"}, b.pod("p", "n1", annotations=PREFER_NO), None),
    ("no annotation with Mandatory", {"noEvictionPolicy": "Mandatory"}, b.pod("p", "n1"), None),
    ("several reasons", {}, b.pod("p", "n1", owner="DaemonSet", priority=2_000_000_000,
                                  volumes=[{"name": "c", "emptyDir": {}}]),
     "system critical (priority 2000000000); local storage (emptyDir c); DaemonSet pod"),
]


@pytest.mark.parametrize(("args", "raw_pod", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_default_evictor_filter(args: dict[str, Any], raw_pod: dict[str, Any], expected: str | None) -> None:
    assert _verdict(args, raw_pod) == expected


def test_pod_without_start_time_is_too_young() -> None:
    raw = b.pod("p", "n1")
    del raw["status"]["startTime"]
    assert _verdict({"minPodAge": "1m"}, raw) == "younger than minPodAge 1m"


@pytest.mark.parametrize(
    "raw_pod",
    [
        b.pod("p", "n1", annotations={**EVICT, "kubernetes.io/config.mirror": "x"}),
        b.pod("p", "n1", annotations={**EVICT, "kubernetes.io/config.source": "file"}),
        _terminating(annotations=EVICT),
        b.pod("p", "n1", owner=None, annotations=EVICT, priority=2_000_000_000),
        b.pod("p", "n1", owner="DaemonSet", annotations=EVICT, volumes=[{"name": "c", "emptyDir": {}}]),
        b.pod("p", "n1", annotations={**EVICT, **PREFER_NO}, labels={"app": "db"}),
    ],
    ids=["mirror", "static", "terminating", "bare critical", "daemonset local storage", "mandatory, labels"],
)
def test_evict_annotation_overrides_everything(raw_pod: dict[str, Any]) -> None:
    args = {"noEvictionPolicy": "Mandatory", "labelSelector": {"matchLabels": {"app": "web"}}, "minReplicas": 5,
            "minPodAge": "24h", "ignorePodsWithoutPDB": True}
    assert _verdict(args, raw_pod) is None
    assert _verdict({}, raw_pod) is None


def test_priority_threshold_by_priority_class_name() -> None:
    classes = [b.priority_class("gold", 5000), b.priority_class("silver", 100)]
    args = {"priorityThreshold": {"name": "gold"}}
    assert DefaultEvictor.required_kinds(decode_args(DefaultEvictorArgs, args, "")) == {"PriorityClass"}
    extra = {"PriorityClass": classes}
    assert _verdict(args, b.pod("p", "n1", priority=5000), extra=extra) == \
        "priority 5000 at or above the threshold 5000"
    assert _verdict(args, b.pod("p", "n1", priority=4999), extra=extra) is None


def test_pods_without_pdb_kept_only_without_a_covering_budget() -> None:
    args = {"podProtections": {"extraEnabled": ["PodsWithoutPDB"]}}
    covered = b.pod("p", "n1", labels={"app": "web"})
    assert _verdict(args, covered, b.pdb("web", {"app": "web"})) is None
    assert _verdict(args, covered, b.pdb("web", {"app": "web"}, namespace="elsewhere")) == \
        "no PodDisruptionBudget covers it"


def test_protected_storage_classes() -> None:
    args = {"podProtections": {"extraEnabled": ["PodsWithPVC"], "config": {"PodsWithPVC": {
        "protectedStorageClasses": [{"name": "local-ssd"}]}}}}
    assert DefaultEvictor.required_kinds(decode_args(DefaultEvictorArgs, args, "")) == {"PersistentVolumeClaim"}
    extra = {"PersistentVolumeClaim": [b.pvc("fast", "local-ssd"), b.pvc("slow", "network"),
                                       b.pvc("fast-elsewhere", "local-ssd", namespace="other")]}

    def with_claims(*claims: str) -> dict[str, Any]:
        return b.pod("p", "n1", volumes=[{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims])

    assert _verdict(args, with_claims("fast"), extra=extra) == "uses protected storage class local-ssd (fast)"
    assert _verdict(args, with_claims("slow", "fast"), extra=extra) == "uses protected storage class local-ssd (fast)"
    assert _verdict(args, with_claims("slow"), extra=extra) is None
    # Upstream cannot resolve the class of a claim it cannot find (here: it is in another namespace) or that has
    # none, and protects the pod rather than guess.
    unknown = "PersistentVolumeClaim {} not found, so its storage class is unknown"
    assert _verdict(args, with_claims("fast-elsewhere"), extra=extra) == unknown.format("fast-elsewhere")
    assert _verdict(args, with_claims("slow", "unknown"), extra=extra) == unknown.format("unknown")
    classless = {"PersistentVolumeClaim": [*extra["PersistentVolumeClaim"], b.pvc("bare", "")]}
    assert _verdict(args, with_claims("bare"), extra=classless) == "PersistentVolumeClaim bare has no storage class"
    del classless["PersistentVolumeClaim"][-1]["spec"]["storageClassName"]
    assert _verdict(args, with_claims("slow", "bare"), extra=classless) == \
        "PersistentVolumeClaim bare has no storage class"


def test_min_replicas_counts_pods_of_the_same_owner() -> None:
    pods = [b.pod(f"web-{i}", "n1", owner_name="web") for i in range(3)] + [b.pod("db-0", "n1", owner_name="db")]
    evictor, state = default_evictor({"minReplicas": 3}, pods)
    web0, db0 = state.find_pod("default", "web-0"), state.find_pod("default", "db-0")
    assert web0 is not None and db0 is not None
    assert evictor.filter(web0) is None
    assert evictor.filter(db0) == "owner has 1 pods, fewer than minReplicas 3"
    evictor.handle.state.plan(web0)  # a planned eviction leaves fewer replicas for the next decision
    web1 = state.find_pod("default", "web-1")
    assert web1 is not None
    assert evictor.filter(web1) == "owner has 2 pods, fewer than minReplicas 3"


def test_min_replicas_skips_pods_with_several_owners_and_counts_every_reference() -> None:
    web = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs-web", "controller": True}
    extra_owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "cm-1"}
    two_owners = b.pod("web-0", "n1", owner=None)
    two_owners["metadata"]["ownerReferences"] = [web, extra_owner]
    single = b.pod("web-1", "n1", owner=None)
    single["metadata"]["ownerReferences"] = [web]
    evictor, state = default_evictor({"minReplicas": 3}, [two_owners, single])
    both, one = state.find_pod("default", "web-0"), state.find_pod("default", "web-1")
    assert both is not None and one is not None
    assert evictor.filter(both) is None  # upstream does not check a pod with more than one owner reference
    # web-0 names rs-web too, so it counts among web-1's replicas: 2 of 3
    assert evictor.filter(one) == "owner has 2 pods, fewer than minReplicas 3"


def test_min_replicas_does_not_apply_to_pods_without_owners() -> None:
    args = {"minReplicas": 2, "evictFailedBarePods": True}
    assert _verdict(args, _failed_bare()) is None
    assert _verdict(args, b.pod("p", "n1", owner=None)) == "bare pod (no owner)"


def test_min_replicas_of_one_is_no_constraint() -> None:
    assert _verdict({"minReplicas": 1}, b.pod("p", "n1")) is None


def test_legacy_and_pod_protections_give_the_same_protections() -> None:
    legacy = decode_args(DefaultEvictorArgs, {"evictLocalStoragePods": True, "evictDaemonSetPods": True,
                                              "ignorePvcPods": True, "ignorePodsWithoutPDB": True}, "")
    modern = decode_args(DefaultEvictorArgs, {"podProtections": {
        "defaultDisabled": ["PodsWithLocalStorage", "DaemonSetPods"],
        "extraEnabled": ["PodsWithPVC", "PodsWithoutPDB"]}}, "")
    assert legacy.protections() == modern.protections() == {"SystemCriticalPods", "FailedBarePods", "PodsWithPVC",
                                                            "PodsWithoutPDB"}
    assert DefaultEvictorArgs().protections() == {"PodsWithLocalStorage", "DaemonSetPods", "SystemCriticalPods",
                                                  "FailedBarePods"}


# --- pre-eviction: nodeFit and namespaceLabelSelector -------------------------------------------------------------


def _fit(other_node: dict[str, Any], raw_pod: dict[str, Any] | None = None, *others: dict[str, Any],
         args: dict[str, Any] | None = None) -> str | None:
    raw_pod = raw_pod or b.pod("p", "n1", cpu="500m")
    state = _state([b.node("n1"), other_node, raw_pod, *others])
    evictor = DefaultEvictor(decode_args(DefaultEvictorArgs, {"nodeFit": True, **(args or {})}, ""),
                             _handle(state, "DefaultEvictor"))
    pod = state.find_pod("default", "p")
    assert pod is not None
    return evictor.pre_eviction_filter(pod)


NO_FIT = "fits no other node (nodeFit)"
ZONE_B = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}}}


@pytest.mark.parametrize(
    ("other_node", "raw_pod", "expected"),
    [
        (b.node("n2"), None, None),
        (b.node("n2", taints=[{"key": "gpu", "effect": "NoSchedule"}]), None, NO_FIT),
        (b.node("n2", taints=[{"key": "gpu", "effect": "NoExecute"}]), None, NO_FIT),
        (b.node("n2", taints=[{"key": "gpu", "effect": "PreferNoSchedule"}]), None, None),
        (b.node("n2", taints=[{"key": "gpu", "effect": "NoSchedule"}]),
         b.pod("p", "n1", tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]), None),
        (b.node("n2"), b.pod("p", "n1", nodeSelector={"disk": "ssd"}), NO_FIT),
        (b.node("n2", labels={"disk": "ssd"}), b.pod("p", "n1", nodeSelector={"disk": "ssd"}), None),
        (b.node("n2", labels={"zone": "a"}), b.pod("p", "n1", affinity=ZONE_B), NO_FIT),
        (b.node("n2", labels={"zone": "b"}), b.pod("p", "n1", affinity=ZONE_B), None),
        (b.node("n2", cpu="400m"), None, NO_FIT),  # insufficient cpu
        (b.node("n2", cpu="500m"), None, None),  # exactly fits
        (b.node("n2", memory="1Gi"), b.pod("p", "n1", memory="2Gi"), NO_FIT),
        (b.node("n2", unschedulable=True), None, NO_FIT),
        (b.node("n2", ready=False), None, NO_FIT),
    ],
    ids=["fits", "NoSchedule taint", "NoExecute taint", "PreferNoSchedule ignored", "tolerated", "nodeSelector",
         "nodeSelector match", "affinity", "affinity match", "insufficient cpu", "exact cpu", "insufficient memory",
         "unschedulable", "not ready"],
)
def test_node_fit(other_node: dict[str, Any], raw_pod: dict[str, Any] | None, expected: str | None) -> None:
    assert _fit(other_node, raw_pod) == expected


def test_node_fit_counts_requests_already_on_the_node() -> None:
    busy = b.pod("busy", "n2", cpu="3600m")
    assert _fit(b.node("n2", cpu="4"), None, busy) == NO_FIT
    assert _fit(b.node("n2", cpu="4"), None, b.pod("busy", "n2", cpu="3500m")) is None
    assert _fit(b.node("n2", cpu="4"), None, b.pod("busy", "n2", cpu="3600m", phase="Succeeded")) is None


def test_node_fit_needs_a_free_pod_slot() -> None:
    assert _fit(b.node("n2", pods=1), None, b.pod("other", "n2")) == NO_FIT
    assert _fit(b.node("n2", pods=2), None, b.pod("other", "n2")) is None


def test_node_fit_respects_the_evictor_node_selector() -> None:
    assert _fit(b.node("n2"), args={"nodeSelector": "pool=spare"}) == NO_FIT
    assert _fit(b.node("n2", labels={"pool": "spare"}), args={"nodeSelector": "pool=spare"}) is None


def test_node_fit_never_counts_the_pods_own_node() -> None:
    state = _state([b.node("n1", cpu="64"), b.pod("p", "n1")])
    evictor = DefaultEvictor(decode_args(DefaultEvictorArgs, {"nodeFit": True}, ""), _handle(state, "x"))
    pod = state.find_pod("default", "p")
    assert pod is not None
    assert evictor.pre_eviction_filter(pod) == NO_FIT


def test_without_node_fit_pre_eviction_passes() -> None:
    evictor, state = default_evictor({}, [b.pod("p", "n1", nodeSelector={"nowhere": "x"})])
    pod = state.find_pod("default", "p")
    assert pod is not None
    assert evictor.pre_eviction_filter(pod) is None


def test_namespace_label_selector() -> None:
    args = {"namespaceLabelSelector": {"matchLabels": {"env": "prod"}}}
    assert DefaultEvictor.required_kinds(decode_args(DefaultEvictorArgs, args, "")) == {"Namespace"}
    objs = [b.pod("a", "n1", namespace="shop"), b.pod("b", "n1", namespace="dev"), b.pod("c", "n1", namespace="new")]
    extra = {"Namespace": [b.namespace("shop", {"env": "prod"}), b.namespace("dev", {"env": "dev"})]}
    evictor, state = default_evictor(args, objs, extra)
    verdicts = {}
    for ns, name in (("shop", "a"), ("dev", "b"), ("new", "c")):
        pod = state.find_pod(ns, name)
        assert pod is not None
        assert evictor.filter(pod) is None  # a pre-eviction check, not a filter
        verdicts[ns] = evictor.pre_eviction_filter(pod)
    assert verdicts == {"shop": None, "dev": "namespace does not match namespaceLabelSelector",
                        "new": "namespace does not match namespaceLabelSelector"}


@pytest.mark.parametrize("selector", [{}, {"matchLabels": {}}, {"matchExpressions": []}])
def test_namespace_label_selector_without_terms_is_ignored_as_upstream_does(selector: dict[str, Any]) -> None:
    args = {"namespaceLabelSelector": selector}
    assert DefaultEvictor.required_kinds(decode_args(DefaultEvictorArgs, args, "")) == set()
    evictor, state = default_evictor(args, [b.pod("a", "n1", namespace="shop")])  # no Namespace objects read
    pod = state.find_pod("shop", "a")
    assert pod is not None and evictor.pre_eviction_filter(pod) is None


def test_required_kinds_by_default_is_empty() -> None:
    assert DefaultEvictor.required_kinds(DefaultEvictorArgs()) == set()


# --- MigrationController ------------------------------------------------------------------------------------------


def _mc_verdict(args: dict[str, Any], raw_pod: dict[str, Any]) -> str | None:
    """EvictDirectly: in the default ReservationFirst mode only koord-scheduler's pods may go (tested apart)."""
    state = _state([b.node("n1"), b.node("n2"), raw_pod])
    args = {"defaultJobMode": "EvictDirectly", **args}
    mc = MigrationController(decode_args(MigrationControllerArgs, args, ""), _handle(state, "MigrationController"))
    pod = state.find_pod(raw_pod["metadata"]["namespace"], raw_pod["metadata"]["name"])
    assert pod is not None
    return mc.filter(pod)


MAX_COST = {"scheduling.koordinator.sh/eviction-cost": "2147483647"}

MC_CASES: list[tuple[str, dict[str, Any], dict[str, Any], str | None]] = [
    ("plain", {}, b.pod("p", "n1"), None),
    ("bare", {}, b.pod("p", "n1", owner=None), "bare pod (no owner)"),
    ("evictAllBarePods", {"evictAllBarePods": True}, b.pod("p", "n1", owner=None), None),
    ("evictAllBarePods failed", {"evictAllBarePods": True}, _failed_bare(), None),
    ("evictFailedBarePods failed", {"evictFailedBarePods": True}, _failed_bare(), None),
    ("evictFailedBarePods running", {"evictFailedBarePods": True}, b.pod("p", "n1", owner=None),
     "bare pod (no owner)"),
    ("evictAllBarePods keeps other protections", {"evictAllBarePods": True},
     b.pod("p", "n1", owner=None, volumes=[{"name": "c", "emptyDir": {}}]), "local storage (emptyDir c)"),
    ("namespace included", {"namespaces": {"include": ["shop"]}}, b.pod("p", "n1", namespace="shop"), None),
    ("namespace not included", {"namespaces": {"include": ["shop"]}}, b.pod("p", "n1", namespace="dev"),
     "namespace dev is outside MigrationController namespaces"),
    ("namespace excluded", {"namespaces": {"exclude": ["dev"]}}, b.pod("p", "n1", namespace="dev"),
     "namespace dev is outside MigrationController namespaces"),
    ("namespace not excluded", {"namespaces": {"exclude": ["dev"]}}, b.pod("p", "n1", namespace="shop"), None),
    ("max eviction cost", {}, b.pod("p", "n1", annotations=MAX_COST),
     "scheduling.koordinator.sh/eviction-cost is the maximum"),
    ("lower eviction cost", {}, b.pod("p", "n1", annotations={"scheduling.koordinator.sh/eviction-cost": "100"}),
     None),
    ("local storage allowed", {"evictLocalStoragePods": True},
     b.pod("p", "n1", volumes=[{"name": "c", "emptyDir": {}}]), None),
    ("critical", {}, b.pod("p", "n1", priority=2_000_000_000), "system critical (priority 2000000000)"),
    ("priorityThreshold", {"priorityThreshold": {"value": 100}}, b.pod("p", "n1", priority=100),
     "priority 100 at or above the threshold 100"),
    ("ignorePvcPods", {"ignorePvcPods": True},
     b.pod("p", "n1", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "x"}}]),
     "uses a PersistentVolumeClaim (x)"),
    ("labelSelector", {"labelSelector": {"matchLabels": {"app": "web"}}}, b.pod("p", "n1"),
     "labels do not match the DefaultEvictor labelSelector"),
    ("evict annotation on a bare pod", {}, b.pod("p", "n1", owner=None, annotations=EVICT), None),
]


@pytest.mark.parametrize(("args", "raw_pod", "expected"), [c[1:] for c in MC_CASES], ids=[c[0] for c in MC_CASES])
def test_migration_controller_filter(args: dict[str, Any], raw_pod: dict[str, Any], expected: str | None) -> None:
    assert _mc_verdict(args, raw_pod) == expected


def test_migration_controller_node_fit() -> None:
    raw = b.pod("p", "n1", nodeSelector={"disk": "ssd"})
    state = _state([b.node("n1"), b.node("n2"), raw])
    mc = MigrationController(decode_args(MigrationControllerArgs, {"nodeFit": True}, ""), _handle(state, "mc"))
    pod = state.find_pod("default", "p")
    assert pod is not None
    assert mc.pre_eviction_filter(pod) == NO_FIT
