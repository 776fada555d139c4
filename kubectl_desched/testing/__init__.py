"""The face of a plugin's tests: API objects shaped as the API server returns them, a fixed clock, and a run of
plugins through the same registry (entry points included), policy decoding and runner as `kubectl desched`.

    objs = [node("n1", cordoned=True), node("n2"), pod("web", "n1", created=ago("192h"))]
    plan = run_plugin("MyPlugin", objs, {"maxAge": "168h"})
    assert picked(plan) == {"web": "..."}

Nothing in kubectl_desched imports this module; a plugin's own code imports kubectl_desched.framework only."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.framework.policy import Policy
from kubectl_desched.framework.policy_decoder import decode_policy, policy_from_plugins
from kubectl_desched.framework.registry import Registry
from kubectl_desched.framework.runner import Scope, run
from kubectl_desched.model.durations import days_hint, duration_seconds
from kubectl_desched.model.objects import node_from_json, pdb_from_json, pod_from_json
from kubectl_desched.model.state import ClusterState
from kubectl_desched.plugins import full_registry
from kubectl_desched.ui.explain import Verdicts

__all__ = ["NOW", "ClusterState", "EvictionPlan", "Obj", "Policy", "ago", "desched", "node", "pdb", "picked", "pod",
           "policy", "registry", "run_plugin", "run_policy", "snapshot", "state", "taint", "timestamp", "toleration",
           "verdict"]

Obj = dict[str, Any]  # one API object as parsed JSON
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)  # the fixed clock: state() and ago() use it unless told otherwise
_uid = itertools.count(1)


def timestamp(t: datetime) -> str:
    """RFC 3339 in UTC, as the API writes creationTimestamp."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def ago(duration: str | float, now: datetime = NOW) -> str:
    """The timestamp `duration` (seconds, or 90s, 5m, 192h) before `now`: pod(created=ago("192h")). The
    durations are the ones flags and policies take, Go's, which have no `d`."""
    seconds = duration if isinstance(duration, int | float) else _seconds(duration)
    return timestamp(now - timedelta(seconds=seconds))


def _seconds(text: str) -> float:
    try:
        return duration_seconds(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a duration{days_hint(text)}: give seconds or a duration such as 90s, "
                         "5m, 192h") from None


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> Obj:
    return {"key": key, "value": value, "effect": effect} if value else {"key": key, "effect": effect}


def toleration(key: str | None = None, *, value: str | None = None, effect: str | None = None) -> Obj:
    """Tolerates the key (any value unless `value`), or every taint without a key; any effect unless `effect`."""
    tol: Obj = {"operator": "Equal" if value is not None else "Exists"}
    tol.update({k: v for k, v in (("key", key), ("value", value), ("effect", effect)) if v is not None})
    return tol


def node(name: str, *, cpu: str = "4", memory: str = "8Gi", pods: int = 110, labels: Mapping[str, str] | None = None,
         taints: Sequence[Obj] = (), cordoned: bool = False, ready: bool = True) -> Obj:
    alloc = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {"unschedulable": cordoned, "taints": list(taints)},
            "status": {"allocatable": alloc, "capacity": dict(alloc),
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def pod(name: str, node_name: str, *, namespace: str = "default", owner: str | None = "ReplicaSet",
        priority: int | None = None, labels: Mapping[str, str] | None = None, phase: str = "Running",
        tolerations: Sequence[Obj] = (), cpu: str = "100m", memory: str = "64Mi", created: str | None = None,
        restarts: int = 0) -> Obj:
    """A pod bound to `node_name`, owned by a controller of kind `owner` (None: a bare pod), created an hour
    before NOW unless `created` (see ago) says when."""
    when = created or ago(3600)
    meta: Obj = {"name": name, "namespace": namespace, "uid": f"uid-{next(_uid)}", "labels": dict(labels or {}),
                 "creationTimestamp": when}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner, "name": f"{name}-owner",
                                    "uid": f"owner-{name}", "controller": True}]
    spec: Obj = {"nodeName": node_name, "tolerations": list(tolerations),
                 "containers": [{"name": "main", "image": "app:1",
                                 "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if priority is not None:
        spec["priority"] = priority
    status: Obj = {"phase": phase, "startTime": when,
                   "containerStatuses": [{"name": "main", "image": "app:1", "ready": phase == "Running",
                                          "restartCount": restarts, "state": {"running": {"startedAt": when}}}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def pdb(name: str, match_labels: Mapping[str, str], *, namespace: str = "default", allowed: int = 0) -> Obj:
    """A PodDisruptionBudget whose status allows `allowed` disruptions."""
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace, "generation": 1},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": dict(match_labels)}},
            "status": {"disruptionsAllowed": allowed, "observedGeneration": 1}}


def snapshot(objs: Sequence[Obj]) -> Obj:
    """The objects as `kubectl get ... -o yaml` lists them: write it to a file for `--from-file`."""
    return {"apiVersion": "v1", "kind": "List", "items": list(objs)}


def state(objs: Sequence[Obj], now: datetime = NOW) -> ClusterState:
    """The cluster state a plugin reads (handle.state), on the fixed clock unless `now` says otherwise."""
    extra: dict[str, list[Any]] = {}
    for o in objs:
        if o["kind"] not in ("Node", "Pod", "PodDisruptionBudget"):
            extra.setdefault(o["kind"], []).append(o)
    return ClusterState([node_from_json(o) for o in objs if o["kind"] == "Node"],
                        [pod_from_json(o) for o in objs if o["kind"] == "Pod"],
                        [pdb_from_json(o) for o in objs if o["kind"] == "PodDisruptionBudget"], extra=extra, now=now)


def registry() -> Registry:
    """Every plugin `kubectl desched` would find: in-tree, and out-of-tree through their entry points."""
    return full_registry()


def policy(raw: Mapping[str, Any], source: str = "policy.yaml") -> Policy:
    """A DeschedulerPolicy or DeschedulerConfiguration decoded as `--policy` does: a ConfigError names the
    field path, `.warnings` holds the unknown fields."""
    return decode_policy(dict(raw), registry(), source)


def run_policy(raw: Mapping[str, Any] | Policy, objs: Sequence[Obj] | ClusterState) -> EvictionPlan:
    """The plan a policy makes on these objects (or this state)."""
    decoded = raw if isinstance(raw, Policy) else policy(raw)
    return run(decoded, objs if isinstance(objs, ClusterState) else state(objs), Scope())


def run_plugin(plugin: str, objs: Sequence[Obj] | ClusterState, args: Mapping[str, Any] | None = None, *,
               point: str | None = None, evictor_args: Mapping[str, Any] | None = None,
               limits: Mapping[str, int] | None = None, respect_pdbs: bool = True) -> EvictionPlan:
    """The plan of one plugin with these args in a one-profile policy, as `--plugin` builds it (DefaultEvictor
    with `evictor_args`, `limits` such as {"maxNoOfPodsToEvictPerNode": 2}). `point`: the plugin's first
    extension point unless given."""
    spec = registry().get(plugin)
    use = point or next(p for p in spec.points if p in ("deschedule", "balance"))
    raw = policy_from_plugins([(plugin, use, dict(args or {}))], dict(evictor_args or {}), dict(limits or {}))
    decoded = decode_policy(raw, registry(), "flags")
    decoded.limits.respect_pdbs = respect_pdbs
    return run_policy(decoded, objs)


def picked(plan: EvictionPlan) -> dict[str, str]:
    """Pod name -> the reason its plugin gave, in plan order."""
    return {c.pod.name: c.reason for c in plan.candidates}


def verdict(plan: EvictionPlan, name: str, namespace: str = "default") -> tuple[str, str]:
    """("evict" | "keep" | "maybe", why) for one pod, as `explain` says it."""
    found = plan.state.find_pod(namespace, name)
    if found is None:
        raise LookupError(f"no pod {namespace}/{name} in the plan's state")
    return Verdicts(plan).of(found)


def desched(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess (`kubectl desched ARGS`), with no kubeconfig and no colour."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NO_COLOR": "1", "KUBECONFIG": os.devnull}
    return subprocess.run([sys.executable, "-m", "kubectl_desched", *args], capture_output=True, text=True,
                          timeout=120, check=False, input=stdin, stdin=None if stdin is not None else
                          subprocess.DEVNULL, env=env)
