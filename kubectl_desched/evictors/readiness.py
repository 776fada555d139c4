"""--wait-ready: the workload a pod belongs to and whether it is back to its ready replica count.

A pod's controller is resolved to the object a human would watch: a ReplicaSet's owning Deployment, else the
ReplicaSet, a StatefulSet or a ReplicationController. Readiness is status.readyReplicas against spec.replicas."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubectl_desched.kube.access import Permission
from kubectl_desched.kube.apierrors import api_exception
from kubectl_desched.kube.live import bounded_timeout, request_json
from kubectl_desched.model.objects import Pod

if TYPE_CHECKING:
    from kubectl_desched.kube.config import Connection  # it imports the kubernetes client

_PATHS = {
    "Deployment": ("apps", "deployments"),
    "ReplicaSet": ("apps", "replicasets"),
    "StatefulSet": ("apps", "statefulsets"),
    "ReplicationController": ("", "replicationcontrollers"),
}


@dataclass(frozen=True)
class Workload:
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"

    @property
    def path(self) -> str:
        group, plural = _PATHS[self.kind]
        base = f"/apis/{group}/v1" if group else "/api/v1"
        return f"{base}/namespaces/{self.namespace}/{plural}/{self.name}"


@dataclass(frozen=True)
class Readiness:
    ready: int
    desired: int
    version: str  # metadata.resourceVersion: tells whether the status moved since the eviction

    @property
    def complete(self) -> bool:
        return self.ready >= self.desired

    def __str__(self) -> str:
        return f"{self.ready}/{self.desired} ready"


def owner_permissions(pods: list[Pod]) -> list[Permission]:
    """What --wait-ready reads for these pods' owners (a ReplicaSet's Deployment too)."""
    kinds = {o.kind for p in pods if (o := p.controller) and o.kind in _PATHS}
    if "ReplicaSet" in kinds:
        kinds.add("Deployment")
    return [Permission("get", _PATHS[k][1], _PATHS[k][0]) for k in sorted(kinds)]


def readiness_of(obj: dict[str, Any]) -> Readiness:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    desired = spec.get("replicas")
    return Readiness(int(status.get("readyReplicas") or 0), 1 if desired is None else int(desired),
                     str((obj.get("metadata") or {}).get("resourceVersion") or ""))


class WorkloadReader:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.timeout = bounded_timeout(conn)
        self._resolved: dict[tuple[str, str, str], Workload | None] = {}

    def workload(self, pod: Pod) -> Workload | None:
        """None for a pod --wait-ready cannot follow (bare, DaemonSet, Job, ...)."""
        owner = pod.controller
        if owner is None or owner.kind not in _PATHS:
            return None
        key = (pod.namespace, owner.kind, owner.name)
        if key not in self._resolved:
            w = Workload(owner.kind, pod.namespace, owner.name)
            if owner.kind == "ReplicaSet":
                w = self._deployment_of(w)
            self._resolved[key] = w
        return self._resolved[key]

    def _deployment_of(self, rs: Workload) -> Workload:
        try:
            obj = request_json(self.conn, "GET", rs.path, timeout=self.timeout)
        except api_exception() as e:
            if e.status == 404:
                return rs
            raise
        for o in (obj.get("metadata") or {}).get("ownerReferences") or []:
            if o.get("controller") and o.get("kind") == "Deployment":
                return Workload("Deployment", rs.namespace, o.get("name", ""))
        return rs

    def readiness(self, w: Workload) -> Readiness:
        return readiness_of(request_json(self.conn, "GET", w.path, timeout=self.timeout))
