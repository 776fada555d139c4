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

__all__ = ["NOW", "ClusterState", "EvictionPlan", "Obj", "Policy", "ago", "condition", "container_status", "desched",
           "node", "owner_ref", "pdb", "picked", "pod", "policy", "registry", "run_plugin", "run_policy", "snapshot",
           "state", "taint", "timestamp", "toleration", "verdict", "volume"]

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
         annotations: Mapping[str, str] | None = None, taints: Sequence[Obj] = (), cordoned: bool = False,
         ready: bool = True, allocatable: Mapping[str, str] | None = None, kubelet_version: str = "") -> Obj:
    """A Node with `cpu`, `memory` and `pods` allocatable, plus any other resource in `allocatable`
    ({"nvidia.com/gpu": "2"}); `cordoned` sets spec.unschedulable, `kubelet_version` status.nodeInfo."""
    alloc = {"cpu": cpu, "memory": memory, "pods": str(pods), **(allocatable or {})}
    status: Obj = {"allocatable": alloc, "capacity": dict(alloc),
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if kubelet_version:
        status["nodeInfo"] = {"kubeletVersion": kubelet_version}
    meta: Obj = {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta,
            "spec": {"unschedulable": cordoned, "taints": list(taints)}, "status": status}


def owner_ref(kind: str, name: str, *, controller: bool = True, uid: str | None = None,
              api_version: str = "apps/v1") -> Obj:
    """One metadata.ownerReferences entry, for pod(owners=[...])."""
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid or f"owner-{name}",
            "controller": controller}


def volume(name: str, *, host_path: str | None = None, claim: str | None = None) -> Obj:
    """An emptyDir volume; a hostPath one with `host_path`; one of a PersistentVolumeClaim with `claim`."""
    if claim is not None:
        return {"name": name, "persistentVolumeClaim": {"claimName": claim}}
    if host_path is not None:
        return {"name": name, "hostPath": {"path": host_path}}
    return {"name": name, "emptyDir": {}}


def container_status(name: str = "main", *, image: str = "app:1", restarts: int = 0, ready: bool = True,
                     waiting: str | None = None, terminated: str | None = None, exit_code: int = 0) -> Obj:
    """One container's status: running, unless `waiting` (a reason such as CrashLoopBackOff) or `terminated`
    (a reason such as OOMKilled, with `exit_code`) says otherwise."""
    state: Obj = {"running": {"startedAt": ago(3600)}}
    if waiting is not None:
        state = {"waiting": {"reason": waiting}}
    elif terminated is not None:
        state = {"terminated": {"reason": terminated, "exitCode": exit_code}}
    return {"name": name, "image": image, "ready": ready and waiting is None and terminated is None,
            "restartCount": restarts, "state": state}


def condition(type_: str, status: str = "True", *, reason: str = "", since: str | None = None) -> Obj:
    """One status.conditions entry; `since` (see ago) is its lastTransitionTime."""
    cond: Obj = {"type": type_, "status": status}
    if reason:
        cond["reason"] = reason
    if since is not None:
        cond["lastTransitionTime"] = since
    return cond


def pod(name: str, node_name: str, *, namespace: str = "default", uid: str | None = None,
        owner: str | None = "ReplicaSet", owners: Sequence[Obj] | None = None, priority: int | None = None,
        priority_class: str = "", labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None, phase: str = "Running", reason: str = "",
        qos: str | None = None, tolerations: Sequence[Obj] = (), node_selector: Mapping[str, str] | None = None,
        affinity: Obj | None = None, spread_constraints: Sequence[Obj] = (), cpu: str | None = "100m",
        memory: str | None = "64Mi", requests: Mapping[str, str] | None = None, images: Sequence[str] = ("app:1",),
        volumes: Sequence[Obj] = (), resource_claims: Sequence[str] = (), created: str | None = None,
        started: str | None = None, terminating: bool = False, restarts: int = 0,
        statuses: Sequence[Obj] | None = None, init_statuses: Sequence[Obj] = (),
        ephemeral_statuses: Sequence[Obj] = (), conditions: Sequence[Obj] = (), scheduler_name: str = "",
        resource_version: str = "") -> Obj:
    """A pod bound to `node_name`, owned by a controller of kind `owner` (None: a bare pod; `owners`, built with
    owner_ref, gives the references themselves), created an hour before NOW unless `created` (see ago) says when,
    and started then unless `started` says otherwise ("" for not started). Every field of the model's Pod can be
    set: `images` are its containers' (the first, "main", has the `cpu`/`memory` and other `requests`);
    `statuses` (container_status) replace the one running status per container, with `restarts` for the first;
    `qos` is status.qosClass as the API server writes it (unset: the model works it out from the requests)."""
    when = created or ago(3600)
    meta: Obj = {"name": name, "namespace": namespace, "uid": uid or f"uid-{next(_uid)}", "labels": dict(labels or {}),
                 "creationTimestamp": when}
    if annotations:
        meta["annotations"] = dict(annotations)
    if owners is not None:
        meta["ownerReferences"] = list(owners)
    elif owner:
        meta["ownerReferences"] = [owner_ref(owner, f"{name}-owner", uid=f"owner-{name}")]
    if terminating:
        meta["deletionTimestamp"] = timestamp(NOW)
    if resource_version:
        meta["resourceVersion"] = resource_version
    wanted = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None} | dict(requests or {})
    containers: list[Obj] = [{"name": "main" if i == 0 else f"c{i}", "image": image} for i, image in enumerate(images)]
    if wanted and containers:
        containers[0]["resources"] = {"requests": wanted}
    spec: Obj = {"nodeName": node_name, "tolerations": list(tolerations), "containers": containers}
    optional: dict[str, Any] = {"priority": priority, "priorityClassName": priority_class or None,
                                "nodeSelector": dict(node_selector) if node_selector else None, "affinity": affinity,
                                "topologySpreadConstraints": list(spread_constraints) or None,
                                "volumes": list(volumes) or None, "schedulerName": scheduler_name or None,
                                "resourceClaims": [{"name": c, "resourceClaimName": c} for c in resource_claims]
                                or None}
    spec.update({k: v for k, v in optional.items() if v is not None})
    if statuses is None:
        statuses = [container_status(c["name"], image=c["image"], restarts=restarts if i == 0 else 0,
                                     ready=phase == "Running") for i, c in enumerate(containers)]
    status: Obj = {"phase": phase, "containerStatuses": list(statuses)}
    if started != "":
        status["startTime"] = started or when
    for key, value in (("reason", reason), ("qosClass", qos), ("conditions", list(conditions)),
                       ("initContainerStatuses", list(init_statuses)),
                       ("ephemeralContainerStatuses", list(ephemeral_statuses))):
        if value:
            status[key] = value
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def pdb(name: str, match_labels: Mapping[str, str], *, namespace: str = "default", allowed: int = 0,
        fresh: bool = True, current_healthy: int | None = None, desired_healthy: int | None = None) -> Obj:
    """A PodDisruptionBudget whose status allows `allowed` disruptions; `fresh=False` leaves its status behind
    its spec (observedGeneration < generation), as just after an edit."""
    status: Obj = {"disruptionsAllowed": allowed, "observedGeneration": 1 if fresh else 0}
    status.update({k: v for k, v in (("currentHealthy", current_healthy), ("desiredHealthy", desired_healthy))
                   if v is not None})
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace, "generation": 1},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": dict(match_labels)}}, "status": status}


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
    field path (an unknown field in args is one, as upstream's strict decoding makes it), `.warnings` holds the
    rest (unknown top-level and profile fields of a DeschedulerPolicy, deprecated args)."""
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
