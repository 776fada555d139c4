"""Raw API objects for tests, shaped as the API server returns them, so the parsers are exercised too."""

from __future__ import annotations

import itertools
from typing import Any

_uid = itertools.count(1)


def node(name: str, cpu: str | int = "4", memory: str = "8Gi", pods: str | int = "110", *, labels: dict | None = None,
         taints: list[dict] | None = None, unschedulable: bool = False, ready: bool = True) -> dict[str, Any]:
    alloc = {"cpu": str(cpu), "memory": memory, "pods": str(pods)}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"capacity": dict(alloc), "allocatable": alloc,
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
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


def pdb(name: str, match_labels: dict, *, namespace: str = "default", allowed: int = 0) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace, "generation": 1},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": match_labels}},
            "status": {"disruptionsAllowed": allowed, "observedGeneration": 1}}


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
