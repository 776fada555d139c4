"""Raw API objects and a runner for this plugin's tests: the objects are shaped as the API server returns them and
go through kubectl-desched's own parsers, policy decoding and runner, as they would in `kubectl desched`."""

from __future__ import annotations

import itertools
from typing import Any

from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.framework.policy_decoder import decode_policy, policy_from_plugins
from kubectl_desched.framework.runner import Scope, run
from kubectl_desched.model.objects import node_from_json, pdb_from_json, pod_from_json
from kubectl_desched.model.state import ClusterState
from kubectl_desched.plugins import full_registry

PLUGIN = "RemovePodsFromCordonedNodes"
_uid = itertools.count(1)


def node(name: str, *, cordoned: bool = False, ready: bool = True, taints: list[dict[str, str]] | None = None,
         labels: dict[str, str] | None = None) -> dict[str, Any]:
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {"unschedulable": cordoned, "taints": taints or []},
            "status": {"allocatable": alloc, "capacity": alloc,
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def pod(name: str, node_name: str, *, namespace: str = "default", owner: str | None = "ReplicaSet",
        priority: int | None = None, labels: dict[str, str] | None = None, phase: str = "Running",
        tolerations: list[dict[str, str]] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{next(_uid)}",
                            "labels": labels or {}, "creationTimestamp": "2025-01-01T00:00:00Z"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner, "name": f"{name}-owner",
                                    "uid": f"owner-{name}", "controller": True}]
    spec: dict[str, Any] = {"nodeName": node_name, "tolerations": tolerations or [],
                            "containers": [{"name": "main", "image": "app:1",
                                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
            "status": {"phase": phase, "startTime": "2025-01-01T00:00:00Z"}}


def pdb(name: str, match_labels: dict[str, str], *, namespace: str = "default", allowed: int = 0) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace, "generation": 1},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": match_labels}},
            "status": {"disruptionsAllowed": allowed, "observedGeneration": 1}}


def state(objs: list[dict[str, Any]]) -> ClusterState:
    """The objects' state. A descheduling run needs two Ready nodes, so a one-node case gets an empty spare."""
    ready = [o for o in objs if o["kind"] == "Node" and o["status"]["conditions"][0]["status"] == "True"]
    if len(ready) < 2:
        objs = [*objs, node("spare")]
    return ClusterState([node_from_json(o) for o in objs if o["kind"] == "Node"],
                        [pod_from_json(o) for o in objs if o["kind"] == "Pod"],
                        [pdb_from_json(o) for o in objs if o["kind"] == "PodDisruptionBudget"])


def plan_for(objs: list[dict[str, Any]], args: dict[str, Any] | None = None, *,
             evictor_args: dict[str, Any] | None = None, limits: dict[str, int] | None = None,
             respect_pdbs: bool = True) -> EvictionPlan:
    """The plugin found through its entry point (full_registry), in a one-profile policy like `--plugin` builds."""
    raw = policy_from_plugins([(PLUGIN, "deschedule", args or {})], evictor_args or {}, limits or {})
    policy = decode_policy(raw, full_registry(), "flags")
    policy.limits.respect_pdbs = respect_pdbs
    return run(policy, state(objs), Scope())
