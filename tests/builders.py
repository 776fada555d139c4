"""Raw API objects for tests, shaped as the API server returns them, so the parsers are exercised too."""

from __future__ import annotations

import itertools
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubectl_desched.framework import Registry
    from kubectl_desched.framework.plan import EvictionPlan
    from kubectl_desched.framework.policy_decoder import Policy
    from kubectl_desched.framework.runner import Scope
    from kubectl_desched.model.state import ClusterState

_uid = itertools.count(1)


def node(name: str, cpu: str | int = "4", memory: str = "8Gi", pods: str | int = "110", *, labels: dict | None = None,
         taints: list[dict] | None = None, unschedulable: bool = False, ready: bool = True,
         kubelet: str | None = None) -> dict[str, Any]:
    """kubelet: status.nodeInfo.kubeletVersion, which tells a snapshot's Kubernetes version (without: current)."""
    alloc = {"cpu": str(cpu), "memory": memory, "pods": str(pods)}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    status: dict[str, Any] = {"capacity": dict(alloc), "allocatable": alloc,
                              "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if kubelet:
        status["nodeInfo"] = {"kubeletVersion": kubelet}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": status,
    }


def pod(name: str, node_name: str, cpu: str = "100m", memory: str | None = None, *, namespace: str = "default",
        owner: str | None = "ReplicaSet", owner_name: str | None = None, priority: int | None = None,
        labels: dict | None = None, annotations: dict | None = None, volumes: list[dict] | None = None,
        tolerations: list[dict] | None = None, phase: str = "Running", uid: str | None = None,
        limits: dict | None = None, started: str = "2026-01-01T00:00:00Z", **spec_extra: Any) -> dict[str, Any]:
    requests: dict[str, str] = {}
    if cpu:
        requests["cpu"] = cpu
    if memory:
        requests["memory"] = memory
    resources: dict[str, Any] = {"requests": requests} if requests else {}
    if limits:
        resources["limits"] = limits
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"uid-{next(_uid)}",
                            "labels": labels or {}, "creationTimestamp": started}
    if annotations:
        meta["annotations"] = annotations
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner, "name": owner_name or f"{name}-owner",
                                    "uid": f"owner-{owner_name or name}", "controller": True}]
    spec: dict[str, Any] = {"nodeName": node_name,
                            "containers": [{"name": "main", "image": "app:1", "resources": resources}]}
    if priority is not None:
        spec["priority"] = priority
    if volumes:
        spec["volumes"] = volumes
    if tolerations:
        spec["tolerations"] = tolerations
    spec.update(spec_extra)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
            "status": {"phase": phase, "startTime": started}}


def pdb(name: str, match_labels: dict, *, namespace: str = "default", allowed: int = 0,
        healthy: tuple[int, int] | None = None) -> dict[str, Any]:
    """healthy: (currentHealthy, desiredHealthy) in its status, which the disruption controller writes."""
    status: dict[str, Any] = {"disruptionsAllowed": allowed, "observedGeneration": 1}
    if healthy is not None:
        status["currentHealthy"], status["desiredHealthy"] = healthy
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace, "generation": 1},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": match_labels}}, "status": status}


def cluster(*objects: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": list(objects)}


def namespace(name: str, labels: dict | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}


def pvc(name: str, storage_class: str, *, namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"storageClassName": storage_class, "accessModes": ["ReadWriteOnce"]}}


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value}


# --- pod status, for the pod-status plugins (PodLifeTime, RemoveFailedPods, RemovePodsHavingTooManyRestarts) --------


def container_status(name: str = "main", *, restarts: int = 0, waiting: str | None = None,
                     terminated: str | None = None, exit_code: int | None = None) -> dict[str, Any]:
    """A containerStatuses entry: waiting with a reason, terminated (reason and/or exit code) or running."""
    state: dict[str, Any]
    if waiting is not None:
        state = {"waiting": {"reason": waiting}}
    elif terminated is not None or exit_code is not None:
        term: dict[str, Any] = {"exitCode": exit_code or 0}
        if terminated:
            term["reason"] = terminated
        state = {"terminated": term}
    else:
        state = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
    return {"name": name, "image": "app:1", "ready": "running" in state, "restartCount": restarts, "state": state}


def condition(type_: str, status: str = "True", reason: str = "", since: str | None = None) -> dict[str, Any]:
    """A status.conditions entry; `since` is its lastTransitionTime."""
    out = {"type": type_, "status": status}
    if reason:
        out["reason"] = reason
    if since:
        out["lastTransitionTime"] = since
    return out


def with_status(obj: dict[str, Any], *, phase: str | None = None, reason: str | None = None,
                containers: list[dict] | None = None, init: list[dict] | None = None,
                ephemeral: list[dict] | None = None, conditions: list[dict] | None = None,
                created: str | None = None, deleting: bool = False) -> dict[str, Any]:
    """Set status fields (and creationTimestamp / deletionTimestamp) on a pod() in place; returns it."""
    status = obj["status"]
    if phase is not None:
        status["phase"] = phase
    if reason is not None:
        status["reason"] = reason
    for key, value in (("containerStatuses", containers), ("initContainerStatuses", init),
                       ("ephemeralContainerStatuses", ephemeral), ("conditions", conditions)):
        if value is not None:
            status[key] = value
    if created is not None:
        obj["metadata"]["creationTimestamp"] = created
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return obj


def spread(max_skew: int, topology_key: str, match_labels: dict | None, *, when: str = "DoNotSchedule",
           **extra: Any) -> dict[str, Any]:
    """One topologySpreadConstraint; match_labels None leaves the labelSelector out (it then selects nothing)."""
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": topology_key, "whenUnsatisfiable": when, **extra}
    if match_labels is not None:
        c["labelSelector"] = {"matchLabels": match_labels}
    return c


def with_images(obj: dict[str, Any], *images: str) -> dict[str, Any]:
    """The pod with one container per image (the first keeps the original container's resources)."""
    first = obj["spec"]["containers"][0]
    obj["spec"]["containers"] = [{**first, "name": f"c{i}", "image": image} if i == 0 else
                                 {"name": f"c{i}", "image": image} for i, image in enumerate(images)]
    return obj


def with_owners(obj: dict[str, Any], *owners: tuple[str, str]) -> dict[str, Any]:
    """The pod owned by each (kind, name), the first as controller."""
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": f"owner-{kind}-{name}", "controller": i == 0}
        for i, (kind, name) in enumerate(owners)]
    return obj


# --- scheduling constraints (taints, tolerations, node and pod affinity) for the violation plugins' tests ---


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> dict[str, Any]:
    out = {"key": key, "effect": effect}
    if value:
        out["value"] = value
    return out


def toleration(key: str, value: str = "", effect: str = "", operator: str = "Equal") -> dict[str, Any]:
    out = {"key": key, "operator": operator}
    if value:
        out["value"] = value
    if effect:
        out["effect"] = effect
    return out


def required_node_affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    """spec.affinity with required node affinity; each term is a list of matchExpressions (ORed terms)."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": exprs} for exprs in terms]}}}


def preferred_node_affinity(*terms: tuple[int, list[dict[str, Any]]]) -> dict[str, Any]:
    """spec.affinity with preferred node affinity: (weight, matchExpressions) per term."""
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": w, "preference": {"matchExpressions": exprs}} for w, exprs in terms]}}


def label_in(key: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(values)}


def pod_anti_affinity(match_labels: dict[str, str] | None = None, topology_key: str = "kubernetes.io/hostname", *,
                      expressions: list[dict[str, Any]] | None = None, namespaces: list[str] | None = None,
                      **term_extra: Any) -> dict[str, Any]:
    """spec.affinity with one required pod anti-affinity term."""
    selector: dict[str, Any] = {}
    if match_labels:
        selector["matchLabels"] = match_labels
    if expressions:
        selector["matchExpressions"] = expressions
    term: dict[str, Any] = {"labelSelector": selector, "topologyKey": topology_key, **term_extra}
    if namespaces:
        term["namespaces"] = namespaces
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def terminating(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    return obj


# --- actual usage: metrics.k8s.io and Koordinator NodeMetric ---------------------------------------------------------


def node_metrics(node: str, cpu: str, memory: str = "0") -> dict[str, Any]:
    """A metrics.k8s.io NodeMetrics as metrics-server serves it."""
    return {"apiVersion": "metrics.k8s.io/v1beta1", "kind": "NodeMetrics", "metadata": {"name": node},
            "timestamp": "2026-01-01T00:00:00Z", "window": "10s", "usage": {"cpu": cpu, "memory": memory}}


def pod_metrics(name: str, cpu: str, memory: str = "0", *, namespace: str = "default",
                containers: int = 1) -> dict[str, Any]:
    """A metrics.k8s.io PodMetrics; the usage is split evenly over `containers` containers."""
    from kubectl_desched.model.quantity import parse_quantity
    each_cpu = f"{parse_quantity(cpu) * 1000 / containers:g}m"
    each_mem = f"{parse_quantity(memory) / containers:g}"
    return {"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics",
            "metadata": {"name": name, "namespace": namespace}, "timestamp": "2026-01-01T00:00:00Z", "window": "10s",
            "containers": [{"name": f"c{i}", "usage": {"cpu": each_cpu, "memory": each_mem}}
                           for i in range(containers)]}


def koord_node_metric(node: str, *, system: dict[str, str] | None = None,
                      pods: list[tuple[str, str, dict[str, str]]] | None = None,
                      updated: str | None = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    """A Koordinator NodeMetric: system usage plus (namespace, name, usage) per pod."""
    status: dict[str, Any] = {
        "nodeMetric": {"nodeUsage": {"resources": {}}, "systemUsage": {"resources": dict(system or {})}},
        "podsMetric": [{"namespace": ns, "name": name, "podUsage": {"resources": dict(usage)}}
                       for ns, name, usage in pods or ()],
    }
    if updated is not None:
        status["updateTime"] = updated
    return {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": node},
            "spec": {}, "status": status}


def with_spare_node(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects plus a cordoned, unlabelled, empty node when fewer than two Ready nodes are there.

    Like the descheduler, a run does nothing with fewer than two Ready nodes; plugin tables about one node add this
    node to make up the count. Being cordoned it takes no pod (nodeFit, node affinity) and it matches no label.
    """
    ready = [o for o in objs if o["kind"] == "Node"
             and all(c["status"] == "True" for c in o["status"]["conditions"] if c["type"] == "Ready")]
    return objs if len(ready) >= 2 else [*objs, node("spare-cordoned", unschedulable=True)]


def state(objs: list[dict[str, Any]], *, extra: dict[str, list[Any]] | None = None, now: datetime | None = None,
          spare_node: bool = False) -> ClusterState:
    """A ClusterState parsed from raw objects (nodes, pods, PDBs), as the loader builds it from the API's answers.

    spare_node adds with_spare_node's cordoned node, for tables about one node; now pins the clock for age checks.
    """
    from kubectl_desched.model.objects import node_from_json, pdb_from_json, pod_from_json
    from kubectl_desched.model.state import ClusterState

    objs = with_spare_node(objs) if spare_node else objs
    return ClusterState([node_from_json(o) for o in objs if o["kind"] == "Node"],
                        [pod_from_json(o) for o in objs if o["kind"] == "Pod"],
                        [pdb_from_json(o) for o in objs if o["kind"] == "PodDisruptionBudget"],
                        extra=extra, now=now)


def plan(state: ClusterState, plugins: list[tuple[str, str, dict[str, Any]]], *,
         evictor_args: dict[str, Any] | None = None, limits: dict[str, Any] | None = None,
         scope: Scope | None = None, registry: Registry | None = None) -> EvictionPlan:
    """The plan a run makes with these (plugin, extension point, args) entries, decoded as the flags are."""
    from kubectl_desched.framework.policy_decoder import decode_policy, policy_from_plugins
    from kubectl_desched.framework.runner import Scope, run
    from kubectl_desched.plugins import in_tree_registry

    raw = policy_from_plugins(plugins, evictor_args or {}, limits or {})
    return run(as_upstream(decode_policy(raw, registry or in_tree_registry(), "flags")), state, scope or Scope())


def as_upstream(policy: Policy) -> Policy:
    """The policy planned as upstream plans it: a move the placement estimate calls futile is planned too
    (--keep-futile). Tests of a plugin's own semantics use it; tests/unit/framework/test_futile_moves.py tests
    the default."""
    policy.limits.keep_futile = True
    return policy


# --- Koordinator's MigrationController checks: owners with replicas, PodMigrationJobs, readiness ---------------------


def workload(kind: str, name: str, replicas: int | None = 3, *, namespace: str = "default", uid: str | None = None,
             owner: tuple[str, str, str] | None = None, labels: dict | None = None,
             selector: dict | None = None) -> dict[str, Any]:
    """A ReplicaSet, Deployment, StatefulSet or ReplicationController; its uid defaults to the one pod() gives
    owner references (owner-<name>); `owner` is its own controller (kind, name, uid)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"owner-{name}",
                            "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "uid": owner[2],
                                    "controller": True}]
    spec: dict[str, Any] = {"selector": selector or {"matchLabels": labels or {}}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "v1" if kind == "ReplicationController" else "apps/v1", "kind": kind, "metadata": meta,
            "spec": spec}


def migration_job(name: str, pod_obj: dict[str, Any] | None = None, *, phase: str | None = "Running",
                  namespace: str = "default", pod_name: str = "", pod_uid: str = "") -> dict[str, Any]:
    """A PodMigrationJob for a pod() (or for namespace/pod_name/pod_uid), in a phase (None: not yet looked at)."""
    meta = pod_obj["metadata"] if pod_obj else {"namespace": namespace, "name": pod_name, "uid": pod_uid}
    job: dict[str, Any] = {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "PodMigrationJob",
        "metadata": {"name": name, "uid": f"job-{name}", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"podRef": {"namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"]},
                 "mode": "EvictDirectly"}}
    if phase is not None:
        job["status"] = {"phase": phase}
    return job


def ready(obj: dict[str, Any], is_ready: bool = True) -> dict[str, Any]:
    """The pod with a Ready condition (True or False), as a kubelet reports it."""
    obj["status"]["conditions"] = [condition("Ready", "True" if is_ready else "False")]
    return obj


def isolate_from_the_user(tmp_path: Any, monkeypatch: Any) -> None:
    """A CLI test must not read the developer's kubeconfig, in-cluster settings or colours: an empty HOME, a missing
    KUBECONFIG, no service host, no colour, and the temporary directory as the working directory."""
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(tmp_path)
