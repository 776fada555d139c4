"""Pod objects built from their plans: spec, containers, volumes and a status true to the phase."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from clustergen.managed import managed
from clustergen.plans import Container, Ctx, NodePlan, PodPlan
from clustergen.units import DAY, image_digest, image_id, image_ref, ts

_DEFAULT_TOLERATIONS = (
    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
    {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300},
)
_DAEMON_TOLERATIONS = (
    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists"},
    {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/disk-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/memory-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/pid-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable", "operator": "Exists"},
)
_NETWORK_TOLERATION = {"effect": "NoSchedule", "key": "node.kubernetes.io/network-unavailable", "operator": "Exists"}
_OWNER_API = {"Deployment": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1", "Job": "batch/v1"}
_OWNER_KIND = {"Deployment": "ReplicaSet", "StatefulSet": "StatefulSet", "DaemonSet": "DaemonSet", "Job": "Job"}
SA_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def _clone(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _clone(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clone(x) for x in v]
    return v


def _container(
    c: Container, sa_volume: str, pvc_mounts: Sequence[tuple[str, str]], trim: bool = False
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if c.limits:
        resources["limits"] = dict(c.limits)
    if c.requests:
        resources["requests"] = dict(c.requests)
    out: dict[str, Any] = {
        "image": c.image,
        "imagePullPolicy": "Always" if c.image.endswith(":latest") else "IfNotPresent",
        "name": c.name,
        "resources": resources,
    }
    if not trim:
        out["terminationMessagePath"] = "/dev/termination-log"
        out["terminationMessagePolicy"] = "File"
    if c.command:
        out["command"] = list(c.command)
    if c.args:
        out["args"] = list(c.args)
    if c.env:
        env = []
        for k, v in c.env:
            if v.startswith("fieldRef:"):
                env.append({"name": k, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": v[9:]}}})
            else:
                env.append({"name": k, "value": v})
        out["env"] = env
    if c.ports:
        out["ports"] = [{"containerPort": p, "name": pn, "protocol": "TCP"} for pn, p in c.ports]
    if c.probes and c.ports and not trim:
        port = c.ports[0][0]
        out["livenessProbe"] = {
            "failureThreshold": 3,
            "httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"},
            "initialDelaySeconds": 10,
            "periodSeconds": 10,
            "successThreshold": 1,
            "timeoutSeconds": 1,
        }
        out["readinessProbe"] = {
            "failureThreshold": 3,
            "httpGet": {"path": "/ready", "port": port, "scheme": "HTTP"},
            "periodSeconds": 5,
            "successThreshold": 1,
            "timeoutSeconds": 1,
        }
    if c.restart_policy:
        out["restartPolicy"] = c.restart_policy
    if c.privileged:
        out["securityContext"] = {"privileged": True}
    mounts = [{"mountPath": path, "name": vol} for vol, path in c.mounts]
    mounts += [{"mountPath": path, "name": vol} for vol, path in pvc_mounts]
    if sa_volume:
        mounts.append({"mountPath": SA_MOUNT, "name": sa_volume, "readOnly": True})
    if mounts:
        out["volumeMounts"] = mounts
    return out


def _sa_volume(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                {
                    "downwardAPI": {
                        "items": [
                            {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}
                        ]
                    }
                },
            ],
        },
    }


def _cond(typ: str, status: str, when: int, reason: str = "", message: str = "") -> dict[str, Any]:
    c: dict[str, Any] = {"lastProbeTime": None, "lastTransitionTime": ts(when), "status": status, "type": typ}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


def build_pod(p: PodPlan, ctx: Ctx) -> dict[str, Any]:
    rng, w, node = ctx.rng, p.w, p.node
    now = ctx.now
    # creation: after the controller and the node existed, a little before now
    floor = max(w.created, node.created if node is not None else 0)
    if w.kind in ("Job", "Static"):
        created = max(floor + rng.randint(30, 300), w.created + rng.randint(1, 5))
    else:
        created = floor + int((now - 300 - floor) * rng.random() ** 1.6) if now - 300 > floor else floor
    start = created + rng.randint(1, 4)

    labels = dict(w.labels)
    if w.kind == "StatefulSet":
        labels["apps.kubernetes.io/pod-index"] = str(p.ordinal)
        labels["statefulset.kubernetes.io/pod-name"] = p.name
    meta: dict[str, Any] = {
        "creationTimestamp": ts(created),
        "labels": labels,
        "name": p.name,
        "namespace": w.namespace,
    }
    annotations = dict(w.annotations)
    if w.kind in ("Deployment", "DaemonSet", "Job"):
        meta["generateName"] = (w.owner_name if w.kind != "DaemonSet" else w.name) + "-"
    elif w.kind == "StatefulSet":
        meta["generateName"] = w.name + "-"
    owner: dict[str, Any] | None = None
    if w.kind in _OWNER_KIND:
        owner = {
            "apiVersion": _OWNER_API[w.kind],
            "blockOwnerDeletion": True,
            "controller": True,
            "kind": _OWNER_KIND[w.kind],
            "name": w.owner_name,
            "uid": w.uid,
        }
    elif w.kind == "Static" and node is not None:
        config_hash = image_digest(p.name + node.name)[:32]
        annotations["kubernetes.io/config.hash"] = config_hash
        annotations["kubernetes.io/config.mirror"] = config_hash
        annotations["kubernetes.io/config.seen"] = (
            time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(node.created + 3)) + f".{rng.randrange(10**9):09d}Z"
        )
        annotations["kubernetes.io/config.source"] = "file"
        owner = {"apiVersion": "v1", "controller": True, "kind": "Node", "name": node.name, "uid": node.uid}
    if annotations:
        meta["annotations"] = annotations
    if owner is not None:
        meta["ownerReferences"] = [owner]
    if w.kind == "Job" and p.phase in ("Running", "Pending"):
        meta["finalizers"] = ["batch.kubernetes.io/job-tracking"]
    meta["resourceVersion"] = ctx.rv()
    meta["uid"] = ctx.uid()

    # spec
    sa_volume = "" if w.kind == "Static" or not w.service_account or ctx.trim else f"kube-api-access-{ctx.suffix()}"
    pvc_mounts = [(t, f"/var/lib/{w.name}") for t in w.claim_templates]
    spec: dict[str, Any] = {}
    if w.kind == "DaemonSet" and node is not None:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node.name]}]}
                    ]
                }
            }
        }
    spec["containers"] = [
        _container(c, sa_volume, pvc_mounts if i == 0 else (), ctx.trim) for i, c in enumerate(w.containers)
    ]
    spec["dnsPolicy"] = "ClusterFirstWithHostNet" if w.host_network and w.kind == "DaemonSet" else "ClusterFirst"
    spec["enableServiceLinks"] = True
    if w.host_network:
        spec["hostNetwork"] = True
    if w.kind == "StatefulSet":
        spec["hostname"] = p.name
        spec["subdomain"] = w.service or w.name
    if w.init_containers:
        spec["initContainers"] = [_container(c, sa_volume, (), ctx.trim) for c in w.init_containers]
    if node is not None:
        spec["nodeName"] = node.name
    if w.node_selector:
        spec["nodeSelector"] = dict(w.node_selector)
    spec["preemptionPolicy"] = "PreemptLowerPriority"
    spec["priority"] = w.priority
    if w.priority_class:
        spec["priorityClassName"] = w.priority_class
    spec["restartPolicy"] = w.restart_policy
    spec["schedulerName"] = "default-scheduler"
    spec["securityContext"] = _clone(w.security_context)
    if w.service_account:
        spec["serviceAccount"] = w.service_account
        spec["serviceAccountName"] = w.service_account
    spec["terminationGracePeriodSeconds"] = w.grace
    for k, v in w.extra_spec.items():
        spec[k] = _clone(v)
    tolerations = [_clone(t) for t in w.tolerations]
    if w.kind == "DaemonSet":
        have = {(t.get("key"), t.get("effect")) for t in tolerations}
        extra = list(_DAEMON_TOLERATIONS) + ([_NETWORK_TOLERATION] if w.host_network else [])
        tolerations += [dict(t) for t in extra if (t["key"], t["effect"]) not in have]
    elif w.kind == "Static":
        tolerations = tolerations or [{"effect": "NoExecute", "operator": "Exists"}]
    else:
        have_keys = {t.get("key") for t in tolerations}
        tolerations += [dict(t) for t in _DEFAULT_TOLERATIONS if t["key"] not in have_keys]
    spec["tolerations"] = tolerations
    volumes = [_clone(v) for v in w.volumes]
    volumes += [{"name": t, "persistentVolumeClaim": {"claimName": f"{t}-{p.name}"}} for t in w.claim_templates]
    if sa_volume:
        volumes.append(_sa_volume(sa_volume))
    if volumes:
        spec["volumes"] = volumes

    # status
    status: dict[str, Any] = {}
    if node is None:
        scheduled_at = created + rng.randint(0, 2)
        status["conditions"] = [_cond("PodScheduled", "False", scheduled_at, "Unschedulable", p.message)]
        status["phase"] = "Pending"
        status["qosClass"] = w.qos
    else:
        status = _running_status(p, ctx, node, created, start)
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}
    if ctx.managed_fields:
        meta_fields = {
            k: meta[k] for k in ("annotations", "finalizers", "generateName", "labels", "ownerReferences") if k in meta
        }
        spec_fields = {k: v for k, v in spec.items() if k != "nodeName"}
        manager = {"Static": "kubelet", "Bare": "kubectl-run"}.get(w.kind, w.manager)
        mf = [managed(manager, created, {"metadata": meta_fields, "spec": spec_fields})]
        if node is None:
            mf.append(
                managed(
                    "kube-scheduler",
                    created + 1,
                    {"status": {"conditions": status["conditions"]}},
                    subresource="status",
                )
            )
        else:
            status_fields = {k: v for k, v in status.items() if k != "qosClass"}
            last = max(start + 30, ctx.now - rng.randint(60, 6 * 3600)) if p.restarts else start + rng.randint(8, 40)
            mf.append(managed("kubelet", min(last, ctx.now), {"status": status_fields}, subresource="status"))
        meta["managedFields"] = mf
    return obj


def _running_status(p: PodPlan, ctx: Ctx, node: NodePlan, created: int, start: int) -> dict[str, Any]:
    rng, w, now = ctx.rng, p.w, ctx.now
    host_ip = node.ip
    pod_ip = host_ip if w.host_network else node.pod_ip()
    terminal = p.phase in ("Succeeded", "Failed")
    init_statuses = []
    t = start + rng.randint(1, 3)
    for c in w.init_containers:
        started = t + rng.randint(1, 5)
        if c.restart_policy == "Always":
            state: dict[str, Any] = {"running": {"startedAt": ts(started)}}
            init_statuses.append(_cstatus(c, ctx, state, ready=True, started=True))
            t = started + 1
        else:
            t = started + rng.randint(2, 30)
            state = {
                "terminated": {
                    "containerID": f"containerd://{ctx.hexid()}",
                    "exitCode": 0,
                    "finishedAt": ts(t),
                    "reason": "Completed",
                    "startedAt": ts(started),
                }
            }
            init_statuses.append(_cstatus(c, ctx, state, ready=True, started=False))
    initialized = t
    statuses = []
    ready_at = initialized + rng.randint(3, 40)
    finished = min(now - 30, ready_at + rng.randint(20, 3600))
    for i, c in enumerate(w.containers):
        started = initialized + rng.randint(1, 4)
        if terminal:
            code = 0 if p.phase == "Succeeded" else (1 if i == 0 else 0)
            state = {
                "terminated": {
                    "containerID": f"containerd://{ctx.hexid()}",
                    "exitCode": code,
                    "finishedAt": ts(finished),
                    "reason": "Completed" if code == 0 else "Error",
                    "startedAt": ts(started),
                }
            }
            statuses.append(_cstatus(c, ctx, state, ready=False, started=False))
        elif p.crashloop and i == 0:
            died = now - rng.randint(30, 280)
            state = {
                "waiting": {
                    "message": f"back-off 5m0s restarting failed container={c.name} pod={p.name}_{w.namespace}"
                    f"({ctx.uid()})",
                    "reason": "CrashLoopBackOff",
                }
            }
            last = {
                "terminated": {
                    "containerID": f"containerd://{ctx.hexid()}",
                    "exitCode": rng.choice((1, 1, 2, 137, 139)),
                    "finishedAt": ts(died),
                    "reason": "Error",
                    "startedAt": ts(died - rng.randint(2, 40)),
                }
            }
            statuses.append(_cstatus(c, ctx, state, ready=False, started=False, restarts=p.restarts, last=last))
        else:
            restarts = p.restarts if i == 0 else 0
            last = {}
            run_since = started
            if restarts:
                run_since = max(started + 60, now - rng.randint(600, 10 * DAY))
                last = {
                    "terminated": {
                        "containerID": f"containerd://{ctx.hexid()}",
                        "exitCode": rng.choice((1, 137, 143)),
                        "finishedAt": ts(run_since - 1),
                        "reason": "OOMKilled" if rng.random() < 0.3 else "Error",
                        "startedAt": ts(max(started, run_since - rng.randint(300, 5 * DAY))),
                    }
                }
            state = {"running": {"startedAt": ts(min(run_since, now - 5))}}
            statuses.append(_cstatus(c, ctx, state, ready=True, started=True, restarts=restarts, last=last))
    if terminal:
        reason = "PodCompleted"
        conditions = [
            _cond("PodReadyToStartContainers", "False", finished + 1),
            _cond("Initialized", "True", initialized, reason),
            _cond("Ready", "False", finished, reason),
            _cond("ContainersReady", "False", finished, reason),
            _cond("PodScheduled", "True", created),
        ]
    elif p.crashloop:
        unready = f"containers with unready status: [{w.containers[0].name}]"
        since = now - rng.randint(600, 3 * DAY)
        conditions = [
            _cond("PodReadyToStartContainers", "True", start + 2),
            _cond("Initialized", "True", initialized),
            _cond("Ready", "False", since, "ContainersNotReady", unready),
            _cond("ContainersReady", "False", since, "ContainersNotReady", unready),
            _cond("PodScheduled", "True", created),
        ]
    else:
        conditions = [
            _cond("PodReadyToStartContainers", "True", start + 2),
            _cond("Initialized", "True", initialized),
            _cond("Ready", "True", ready_at),
            _cond("ContainersReady", "True", ready_at),
            _cond("PodScheduled", "True", created),
        ]
    status: dict[str, Any] = {
        "conditions": conditions,
        "containerStatuses": statuses,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
    }
    if init_statuses:
        status["initContainerStatuses"] = init_statuses
    status["phase"] = p.phase
    status["podIP"] = pod_ip
    status["podIPs"] = [{"ip": pod_ip}]
    status["qosClass"] = w.qos
    status["startTime"] = ts(start)
    return status


def _cstatus(
    c: Container,
    ctx: Ctx,
    state: dict[str, Any],
    *,
    ready: bool,
    started: bool,
    restarts: int = 0,
    last: dict[str, Any] | None = None,
) -> dict[str, Any]:
    out = {
        "image": image_ref(c.image),
        "imageID": image_id(c.image),
        "lastState": last or {},
        "name": c.name,
        "ready": ready,
        "restartCount": restarts,
        "started": started,
        "state": state,
    }
    # the current container's id; a container waiting to restart still reports its last one
    term = state.get("terminated") or (None if "running" in state else (last or {}).get("terminated"))
    out["containerID"] = term["containerID"] if term else f"containerd://{ctx.hexid()}"
    return out


