"""Replacement first (--surge): whether a pod can be moved by starting its replacement before it goes, and the
words for why not. The move itself (mark the pod with the lowest pod-deletion-cost, scale its Deployment up by
one, wait for the new pod to be Ready, scale back) is evictors/surge.py's; this module only judges, from the
objects as read (the plan's state, or a fresh live read just before acting), so both say the same thing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_desched.model.objects import Pod

# The kinds a surge's checks read: the pod's ReplicaSet, its Deployment and the autoscalers that may target it.
SURGE_KINDS = frozenset({"ReplicaSet", "Deployment", "HorizontalPodAutoscaler"})


@dataclass(frozen=True)
class Target:
    """The Deployment a surge scales, as found: its name, and the ReplicaSet whose pod moves."""

    namespace: str
    deployment: str
    replicaset: str
    replicas: int


def _meta(o: Mapping[str, Any]) -> Mapping[str, Any]:
    return o.get("metadata") or {}


def _controller(o: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return next((r for r in _meta(o).get("ownerReferences") or () if r.get("controller")), None)


def _find(objs: Iterable[Mapping[str, Any]], namespace: str, name: str) -> Mapping[str, Any] | None:
    return next((o for o in objs if _meta(o).get("namespace") == namespace and _meta(o).get("name") == name), None)


def max_surge_zero(strategy: Mapping[str, Any]) -> bool:
    """RollingUpdate's maxSurge written as 0 or 0%: the owner asked never to run more pods than replicas."""
    surge = (strategy.get("rollingUpdate") or {}).get("maxSurge", "25%")
    return str(surge).strip() in ("0", "0%")


def rollout_in_progress(d: Mapping[str, Any], replicasets: Iterable[Mapping[str, Any]]) -> str | None:
    """Why the Deployment is between two versions, or None when its controller has settled on one."""
    meta, spec, status = _meta(d), d.get("spec") or {}, d.get("status") or {}
    replicas = spec.get("replicas", 1)
    if (status.get("observedGeneration") or 0) < (meta.get("generation") or 0):
        return "its controller has not yet seen its latest change"
    if status.get("updatedReplicas", 0) != replicas or status.get("replicas", 0) != replicas:
        return (f"{status.get('updatedReplicas', 0)} of {replicas} replicas updated, "
                f"{status.get('replicas', 0)} running")
    uid = meta.get("uid")
    live = [rs for rs in replicasets if (c := _controller(rs)) is not None and c.get("uid") == uid
            and ((rs.get("spec") or {}).get("replicas") or 0) > 0]
    if len(live) > 1:
        return f"{len(live)} of its ReplicaSets have replicas"
    return None


def surge_target(pod: Pod, extra: Mapping[str, list[Any]]) -> Target | str:
    """The Deployment a surge of this pod would scale, or why a surge cannot move it (one phrase)."""
    ref = pod.controller
    if ref is None:
        return "no controller would start its replacement"
    if ref.kind == "StatefulSet":
        return f"StatefulSet {ref.name} keeps each pod's identity: eviction only"
    if ref.kind != "ReplicaSet":
        return f"its {ref.kind} is not a Deployment: eviction only"
    if "ReplicaSet" not in extra or "Deployment" not in extra:
        return ("its ReplicaSet and Deployment were not read (a snapshot needs them: kubectl get "
                "nodes,pods,pdb,replicasets,deployments,hpa -A -o yaml)")
    replicasets = [o for o in extra["ReplicaSet"] if _meta(o).get("namespace") == pod.namespace]
    rs = _find(replicasets, pod.namespace, ref.name)
    owner = _controller(rs) if rs is not None else None
    if rs is None or owner is None or owner.get("kind") != "Deployment":
        return f"ReplicaSet {ref.name} has no Deployment: eviction only"
    name = str(owner.get("name"))
    d = _find(extra["Deployment"], pod.namespace, name)
    if d is None:
        return f"Deployment {name} was not found"
    for hpa in extra.get("HorizontalPodAutoscaler") or ():
        target = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
        if _meta(hpa).get("namespace") == pod.namespace and target.get("kind") == "Deployment" \
                and target.get("name") == name:
            return (f"HorizontalPodAutoscaler {_meta(hpa).get('name')} scales Deployment {name}: it would undo "
                    "the surge")
    spec = d.get("spec") or {}
    if spec.get("paused"):
        return f"Deployment {name} is paused"
    strategy = spec.get("strategy") or {}
    if strategy.get("type") == "Recreate":
        return f"Deployment {name} uses the Recreate strategy: its old and new pods never run together"
    if max_surge_zero(strategy):
        return f"Deployment {name} has maxSurge 0: it never runs more pods than its replicas"
    mid = rollout_in_progress(d, replicasets)
    if mid:
        return f"Deployment {name} is mid-rollout ({mid})"
    return Target(pod.namespace, name, ref.name, int(spec.get("replicas", 1)))
