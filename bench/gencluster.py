#!/usr/bin/env python3
"""Generate a realistic, deterministic Kubernetes cluster snapshot for benchmarks and tests.

The output looks like ``kubectl get nodes,pods,pdb -A -o json`` (or ``-o yaml``): a v1 ``List`` of
Node, Pod and policy/v1 PodDisruptionBudget objects, with the fields a real cluster fills in
(labels, taints, capacity/allocatable, conditions, owner references, managed fields, pod status).

Placement bin-packs pods by their requests and leaves the cluster imbalanced on purpose: about 30%
of the schedulable workers are heavily loaded (cpu requests 70-95% of allocatable), about 25% are
nearly empty (below 15% of cpu, memory and pods), the rest sit in between. No node ever gets more
requests than its allocatable cpu, memory, pods or GPUs, counting terminal pods too.

Usage::

    python bench/gencluster.py --nodes 5000 --pods 150000 [--seed 1] [-o json|yaml] [--out FILE]

or from Python: ``generate(nodes, pods, seed=1, zones=3)`` returns the List as a dict. The CLI
plans the cluster once (small records, 1-2 KB per pod) and streams the objects one by
one, so memory stays flat however large the output is. The same seed gives the same bytes.
At 5,000 nodes and 150,000 pods that takes about a minute and 250 MB of memory and writes 3.5 GB
of kubectl-style indented JSON (1.1 GB with --indent 0, 0.7 GB adding --no-managed-fields).

The builders (``NodePlan``, ``Workload``, ``PodPlan``, ``PdbPlan``, ``build_*``, ``write_list``)
are reusable: ``examples/make-demo-cluster`` hand-places a small cluster with them.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import itertools
import json
import math
import os
import random
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from json.encoder import encode_basestring_ascii as _esc
from typing import Any, TextIO

import yaml

# The snapshot's "now": every timestamp is before it, so output never depends on the wall clock.
NOW = int(datetime(2025, 11, 3, 10, 0, tzinfo=UTC).timestamp())
KUBE_VERSION = "v1.34.1"
REGION = "eu-west-1"
REGISTRY = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
DAY = 86400

# kube's rand.SafeEncodeString alphabet: pod-template-hash and generated-name suffixes use it.
SAFE = "bcdfghjklmnpqrstvwxz2456789"
SYSTEM_NODE_CRITICAL = 2_000_001_000
SYSTEM_CLUSTER_CRITICAL = 2_000_000_000
PRIORITY_CLASSES = {
    "system-node-critical": SYSTEM_NODE_CRITICAL,
    "system-cluster-critical": SYSTEM_CLUSTER_CRITICAL,
    "business-critical": 1_000_000,
    "high-priority": 10_000,
    "low-priority": -10,
}

MI = 1 << 20
GI = 1 << 30

# ---------------------------------------------------------------------------------------------
# quantities


def fmt_cpu(millis: int) -> str:
    """Canonical cpu quantity, as the API server prints it: 2000 -> "2", 250 -> "250m"."""
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def fmt_mem(n: int, decimal: bool = False) -> str:
    """Canonical memory quantity: the largest suffix that keeps an integer (1536Mi, 2Gi, 500M)."""
    if decimal:
        for suffix, size in (("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3)):
            if n % size == 0:
                return f"{n // size}{suffix}"
        return str(n)
    for suffix, size in (("Ti", 1 << 40), ("Gi", GI), ("Mi", MI), ("Ki", 1 << 10)):
        if n % size == 0:
            return f"{n // size}{suffix}"
    return str(n)


_SUFFIX = {"Ki": 1 << 10, "Mi": MI, "Gi": GI, "Ti": 1 << 40, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def parse_cpu(q: str) -> int:
    """Millicores of the quantities this module writes ("250m", "2", "1.5")."""
    return int(q[:-1]) if q.endswith("m") else round(float(q) * 1000)


def parse_mem(q: str) -> int:
    """Bytes of the quantities this module writes ("256Mi", "500M", "31946220Ki", "93478772582")."""
    for suffix in ("Ki", "Mi", "Gi", "Ti"):
        if q.endswith(suffix):
            return int(q[:-2]) * _SUFFIX[suffix]
    if q[-1:] in ("k", "M", "G", "T"):
        return int(q[:-1]) * _SUFFIX[q[-1]]
    return int(q)


def ts(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


@lru_cache(maxsize=65536)
def image_digest(image: str) -> str:
    return hashlib.sha256(image.encode()).hexdigest()


def image_ref(image: str) -> str:
    """The fully qualified name the runtime reports in containerStatuses[].image."""
    first = image.split("/", 1)[0]
    if "/" not in image:
        return f"docker.io/library/{image}"
    if "." not in first and ":" not in first and first != "localhost":
        return f"docker.io/{image}"
    return image


def image_id(image: str) -> str:
    return f"{image_ref(image).rsplit(':', 1)[0]}@sha256:{image_digest(image)}"


# ---------------------------------------------------------------------------------------------
# plans: small records the object builders turn into API objects


@dataclass(slots=True, eq=False)
class NodePlan:
    name: str
    uid: str
    zone: str
    instance_type: str
    ip: str
    pod_cidr: str
    created: int
    capacity: dict[str, str]
    allocatable: dict[str, str]
    role: str = "worker"  # worker | control-plane | gpu
    pool: str = ""
    taints: list[dict[str, str]] = field(default_factory=list)
    unschedulable: bool = False
    labels: dict[str, str] = field(default_factory=dict)  # extra labels
    provider_id: str = ""
    kernel: str = "6.1.112-124.190.amzn2023.x86_64"
    os_image: str = "Amazon Linux 2023.6.20241031"
    runtime: str = "containerd://1.7.23"
    tier: str = ""  # placement band: heavy | medium | light | cordoned | control-plane | gpu
    # placement bookkeeping (all pods, and non-terminal pods against the band's targets)
    alloc_cpu: int = 0
    alloc_mem: int = 0
    alloc_pods: int = 0
    alloc_gpu: int = 0
    used_cpu: int = 0
    used_mem: int = 0
    used_pods: int = 0
    used_gpu: int = 0
    band_cpu: int = 0
    band_mem: int = 0
    band_pods: int = 0
    t_cpu: int = 0
    t_mem: int = 0
    t_pods: int = 0
    fails: int = 0
    next_ip: int = 0
    max_ratio: float = math.inf  # bytes of memory per millicore a pod may bring (keeps heavy nodes cpu-bound)

    def __post_init__(self) -> None:
        self.alloc_cpu = parse_cpu(self.allocatable["cpu"])
        self.alloc_mem = parse_mem(self.allocatable["memory"])
        self.alloc_pods = int(self.allocatable["pods"])
        self.alloc_gpu = int(self.allocatable.get("nvidia.com/gpu", "0"))
        self.t_cpu, self.t_mem, self.t_pods = self.alloc_cpu, self.alloc_mem, self.alloc_pods

    def pod_ip(self) -> str:
        """The next address of the node's pod CIDR (/24, .1 is the gateway)."""
        base = _ip_int(self.pod_cidr.split("/", 1)[0])
        self.next_ip += 1
        return _ip_str(base + 1 + (self.next_ip % 253))

    def remove(self, cpu: int, mem: int, gpu: int) -> None:
        """Take a non-terminal pod's requests off the node."""
        self.used_cpu -= cpu
        self.used_mem -= mem
        self.used_pods -= 1
        self.used_gpu -= gpu
        self.band_cpu -= cpu
        self.band_mem -= mem
        self.band_pods -= 1

    def add(self, cpu: int, mem: int, gpu: int, terminal: bool = False) -> None:
        self.used_cpu += cpu
        self.used_mem += mem
        self.used_pods += 1
        self.used_gpu += gpu
        if not terminal:
            self.band_cpu += cpu
            self.band_mem += mem
            self.band_pods += 1


@dataclass(slots=True)
class Container:
    name: str
    image: str
    requests: dict[str, str] = field(default_factory=dict)
    limits: dict[str, str] = field(default_factory=dict)
    ports: tuple[tuple[str, int], ...] = ()  # (name, containerPort)
    args: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # (name, value); "fieldRef:<path>" values use the downward API
    mounts: tuple[tuple[str, str], ...] = ()  # (volume name, mountPath)
    probes: bool = False
    restart_policy: str = ""  # "Always" on an init container makes it a native sidecar
    privileged: bool = False


@dataclass(slots=True, eq=False)
class Workload:
    """What the pods of one controller share: the pod template and the owner."""

    kind: str  # Deployment | StatefulSet | DaemonSet | Job | Static | Bare
    namespace: str
    name: str  # the Deployment/StatefulSet/DaemonSet/Job name (the pod name for Bare and Static)
    uid: str = ""  # uid of the controlling owner (the ReplicaSet for Deployments)
    created: int = 0
    template_hash: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    containers: list[Container] = field(default_factory=list)
    init_containers: list[Container] = field(default_factory=list)
    volumes: list[dict[str, Any]] = field(default_factory=list)  # cloned for each pod
    claim_templates: tuple[str, ...] = ()  # StatefulSet volumeClaimTemplates: claim "<t>-<pod>"
    priority_class: str = ""
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    node_selector: dict[str, str] = field(default_factory=dict)
    host_network: bool = False
    service_account: str = "default"
    restart_policy: str = "Always"
    grace: int = 30
    security_context: dict[str, Any] = field(default_factory=dict)
    extra_spec: dict[str, Any] = field(default_factory=dict)  # affinity, topologySpreadConstraints, ...
    replicas: int = 1
    manager: str = "kube-controller-manager"
    service: str = ""  # StatefulSet serviceName
    # effective requests of one pod, filled by finish()
    cpu: int = 0
    mem: int = 0
    gpu: int = 0
    qos: str = "BestEffort"

    @property
    def priority(self) -> int:
        return PRIORITY_CLASSES.get(self.priority_class, 0) if self.priority_class else 0

    @property
    def owner_name(self) -> str:
        return f"{self.name}-{self.template_hash}" if self.kind == "Deployment" else self.name

    def finish(self) -> Workload:
        """Compute the effective requests and the QoS class from the containers, as the scheduler
        and the kubelet do (native sidecars add up, other init containers only raise the peak)."""
        cpu = sum(parse_cpu(c.requests["cpu"]) for c in self.containers if "cpu" in c.requests)
        mem = sum(parse_mem(c.requests["memory"]) for c in self.containers if "memory" in c.requests)
        gpu = sum(int(c.requests.get("nvidia.com/gpu", "0")) for c in self.containers)
        side_cpu = side_mem = peak_cpu = peak_mem = 0
        for c in self.init_containers:
            ccpu = parse_cpu(c.requests["cpu"]) if "cpu" in c.requests else 0
            cmem = parse_mem(c.requests["memory"]) if "memory" in c.requests else 0
            if c.restart_policy == "Always":
                side_cpu += ccpu
                side_mem += cmem
                peak_cpu, peak_mem = max(peak_cpu, side_cpu), max(peak_mem, side_mem)
            else:
                peak_cpu, peak_mem = max(peak_cpu, side_cpu + ccpu), max(peak_mem, side_mem + cmem)
        self.cpu, self.mem, self.gpu = max(cpu + side_cpu, peak_cpu), max(mem + side_mem, peak_mem), gpu
        self.qos = qos_class(self.containers + self.init_containers)
        return self


def qos_class(containers: Iterable[Container]) -> str:
    any_set, guaranteed = False, True
    for c in containers:
        req = {k: v for k, v in c.requests.items() if k in ("cpu", "memory")}
        lim = {k: v for k, v in c.limits.items() if k in ("cpu", "memory")}
        any_set = any_set or bool(req or lim)
        for r in ("cpu", "memory"):
            if r not in lim or (r in req and req[r] != lim[r]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


@dataclass(slots=True, eq=False)
class PodPlan:
    w: Workload
    name: str
    node: NodePlan | None
    phase: str = "Running"  # Running | Pending | Succeeded | Failed
    ordinal: int = -1  # StatefulSet pod index
    restarts: int = 0
    crashloop: bool = False
    message: str = ""  # the scheduler's message for an unschedulable Pending pod

    @property
    def healthy(self) -> bool:
        return self.phase == "Running" and not self.crashloop and self.node is not None


@dataclass(slots=True, eq=False)
class PdbPlan:
    namespace: str
    name: str
    match_labels: dict[str, str]
    created: int
    expected: int
    healthy: int
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    helm_release: str = ""

    def desired_healthy(self) -> int:
        """The disruption controller's arithmetic (percentages round up)."""
        if self.min_available is not None:
            return _scaled(self.min_available, self.expected)
        if self.max_unavailable is not None:
            return max(0, self.expected - _scaled(self.max_unavailable, self.expected))
        return self.expected

    def disruptions_allowed(self) -> int:
        return max(0, self.healthy - self.desired_healthy())


def _scaled(v: int | str, total: int) -> int:
    if isinstance(v, str) and v.endswith("%"):
        return math.ceil(int(v[:-1]) * total / 100)
    return int(v)


class Ctx:
    """The state object builders share: a random stream, the resourceVersion counter, options."""

    def __init__(self, seed: int | str, managed_fields: bool = True, now: int = NOW, trim: bool = False) -> None:
        self.rng = random.Random(seed)
        self.managed_fields = managed_fields
        # trim: leave out what only adds bulk for a human reader (service-account token volumes,
        # probes, termination-message defaults, node images, deprecated beta labels)
        self.trim = trim
        self.now = now
        self._rv = 48_213_000

    def rv(self) -> str:
        self._rv += self.rng.randint(1, 40)
        return str(self._rv)

    def uid(self) -> str:
        return new_uid(self.rng)

    def suffix(self, n: int = 5) -> str:
        return "".join(self.rng.choices(SAFE, k=n))

    def hexid(self, bits: int = 256) -> str:
        return f"{self.rng.getrandbits(bits):0{bits // 4}x}"


def new_uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _ip_int(ip: str) -> int:
    a, b, c, d = (int(x) for x in ip.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def _ip_str(n: int) -> str:
    return f"{n >> 24 & 255}.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"


# ---------------------------------------------------------------------------------------------
# managed fields


_LIST_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "volumes": ("name",),
    "env": ("name",),
    "ports": ("containerPort", "protocol"),
    "volumeMounts": ("mountPath",),
    "conditions": ("type",),
    "ownerReferences": ("uid",),
    "podIPs": ("ip",),
    "hostIPs": ("ip",),
    "addresses": ("type",),
}


def fields_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """The FieldsV1 set of a (partial) object: f:<field> for fields, k:{...} for keyed list items."""
    out: dict[str, Any] = {}
    for k, v in obj.items():
        if type(v) is dict:  # metadata, spec, status: no "." entry of their own
            if v:
                out["f:" + k] = {"f:" + k2: _fv(k2, v2) for k2, v2 in v.items()}
        else:
            out["f:" + k] = _fv(k, v)
    return out


def _fv(key: str, v: Any) -> dict[str, Any]:
    t = type(v)
    if t is dict:
        if not v:
            return {}
        out: dict[str, Any] = {".": {}}
        for k, x in v.items():
            tx = type(x)
            out["f:" + k] = _fv(k, x) if tx is dict or tx is list else {}
        return out
    if t is list and v:
        keys = _LIST_KEYS.get(key)
        if keys:
            out = {}
            for el in v:
                item: dict[str, Any] = {".": {}}
                for f, x in el.items():
                    if f not in keys:
                        tx = type(x)
                        item["f:" + f] = _fv(f, x) if tx is dict or tx is list else {}
                out["k:{" + ",".join(f'"{kf}":{_json_scalar(el.get(kf))}' for kf in keys) + "}"] = item
            return out
    return {}


def _json_scalar(v: Any) -> str:
    if type(v) is str and '"' not in v and "\\" not in v:
        return '"' + v + '"'
    return json.dumps(v)


def managed(manager: str, when: int, fields: dict[str, Any], subresource: str = "", api: str = "v1") -> dict[str, Any]:
    entry = {
        "apiVersion": api,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields_v1(fields),
        "manager": manager,
        "operation": "Update",
        "time": ts(when),
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


# ---------------------------------------------------------------------------------------------
# Node


_NODE_IMAGES = (
    ("registry.k8s.io/kube-proxy:" + KUBE_VERSION, 30_571_254),
    ("registry.k8s.io/dns/k8s-dns-node-cache:1.23.1", 39_112_480),
    ("registry.k8s.io/pause:3.10", 320_368),
)


def build_node(n: NodePlan, ctx: Ctx) -> dict[str, Any]:
    rng = ctx.rng
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": n.instance_type,
        "beta.kubernetes.io/os": "linux",
        "failure-domain.beta.kubernetes.io/region": REGION,
        "failure-domain.beta.kubernetes.io/zone": n.zone,
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": n.name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": n.instance_type,
        "topology.kubernetes.io/region": REGION,
        "topology.kubernetes.io/zone": n.zone,
    }
    labels.update(n.labels)
    if ctx.trim:
        labels = {k: v for k, v in labels.items() if not k.startswith(("beta.", "failure-domain."))}
    annotations = {
        "alpha.kubernetes.io/provided-node-ip": n.ip,
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    }
    if n.provider_id and not ctx.trim:
        annotations["csi.volume.kubernetes.io/nodeid"] = json.dumps(
            {"ebs.csi.aws.com": n.provider_id.rsplit("/", 1)[-1]}, separators=(",", ":")
        )
    meta: dict[str, Any] = {
        "annotations": annotations,
        "creationTimestamp": ts(n.created),
        "labels": labels,
        "name": n.name,
        "resourceVersion": ctx.rv(),
        "uid": n.uid,
    }
    spec: dict[str, Any] = {"podCIDR": n.pod_cidr, "podCIDRs": [n.pod_cidr]}
    if n.provider_id:
        spec["providerID"] = n.provider_id
    if n.taints:
        spec["taints"] = [dict(t) for t in n.taints]
    if n.unschedulable:
        spec["unschedulable"] = True
    ready_since = n.created + rng.randint(20, 90)
    heartbeat = ctx.now - rng.randint(5, 280)

    def cond(typ: str, status: str, reason: str, message: str) -> dict[str, Any]:
        return {
            "lastHeartbeatTime": ts(heartbeat),
            "lastTransitionTime": ts(ready_since if typ == "Ready" else n.created + 5),
            "message": message,
            "reason": reason,
            "status": status,
            "type": typ,
        }

    images = [{"names": [f"{image_id(i)}", i], "sizeBytes": size} for i, size in _NODE_IMAGES]
    status: dict[str, Any] = {
        "addresses": [
            {"address": n.ip, "type": "InternalIP"},
            {"address": n.name, "type": "InternalDNS"},
            {"address": n.name, "type": "Hostname"},
        ],
        "allocatable": dict(n.allocatable),
        "capacity": dict(n.capacity),
        "conditions": [
            cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "images": images,
        "nodeInfo": {
            "architecture": "amd64",
            "bootID": ctx.uid(),
            "containerRuntimeVersion": n.runtime,
            "kernelVersion": n.kernel,
            "kubeProxyVersion": KUBE_VERSION,
            "kubeletVersion": KUBE_VERSION,
            "machineID": ctx.hexid(128),
            "operatingSystem": "linux",
            "osImage": n.os_image,
            "systemUUID": "ec2" + ctx.uid()[3:],
        },
        "runtimeHandlers": [
            {"features": {"recursiveReadOnlyMounts": True, "userNamespaces": True}, "name": "runc"},
            {"features": {"recursiveReadOnlyMounts": True, "userNamespaces": True}, "name": ""},
        ],
    }
    if ctx.trim:
        for k in ("daemonEndpoints", "images", "runtimeHandlers"):
            del status[k]
    obj = {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": status}
    if ctx.managed_fields:
        kubelet_labels = {k: v for k, v in labels.items() if not k.startswith(("node-role.", "dedicated"))}
        mf = [
            managed(
                "kubelet",
                n.created,
                {
                    "metadata": {
                        "annotations": {k: v for k, v in annotations.items() if k != "node.alpha.kubernetes.io/ttl"},
                        "labels": kubelet_labels,
                    },
                    "spec": {"providerID": n.provider_id} if n.provider_id else {},
                },
            ),
            managed(
                "kube-controller-manager",
                n.created + 2,
                {
                    "metadata": {"annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
                    "spec": {"podCIDR": n.pod_cidr, "podCIDRs": [n.pod_cidr]},
                },
            ),
        ]
        if n.taints or n.unschedulable or len(kubelet_labels) != len(labels):
            extra: dict[str, Any] = {}
            if len(kubelet_labels) != len(labels):
                extra["metadata"] = {"labels": {k: v for k, v in labels.items() if k not in kubelet_labels}}
            spec_fields: dict[str, Any] = {}
            if n.taints:
                spec_fields["taints"] = spec["taints"]
            if n.unschedulable:
                spec_fields["unschedulable"] = True
            if spec_fields:
                extra["spec"] = spec_fields
            manager = "kubectl-cordon" if n.unschedulable else "kops-controller"
            mf.append(managed(manager, n.created + rng.randint(60, 3 * DAY), extra))
        mf.append(managed("kubelet", heartbeat, {"status": status}, subresource="status"))
        meta["managedFields"] = mf
    return obj


def node_plan(
    rng: random.Random,
    name: str,
    zone: str,
    instance_type: str,
    ip: str,
    pod_cidr: str,
    created: int,
    capacity: dict[str, str],
    allocatable: dict[str, str],
    **kw: Any,
) -> NodePlan:
    return NodePlan(
        name=name,
        uid=new_uid(rng),
        zone=zone,
        instance_type=instance_type,
        ip=ip,
        pod_cidr=pod_cidr,
        created=created,
        capacity=capacity,
        allocatable=allocatable,
        **kw,
    )


# ---------------------------------------------------------------------------------------------
# Pod

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


# ---------------------------------------------------------------------------------------------
# PodDisruptionBudget


def build_pdb(b: PdbPlan, ctx: Ctx) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": dict(b.match_labels)}}
    if b.min_available is not None:
        spec["minAvailable"] = b.min_available
    if b.max_unavailable is not None:
        spec["maxUnavailable"] = b.max_unavailable
    desired, allowed = b.desired_healthy(), b.disruptions_allowed()
    changed = max(b.created + 30, ctx.now - ctx.rng.randint(60, 20 * DAY))
    status = {
        "conditions": [
            {
                "lastTransitionTime": ts(changed),
                "message": "",
                "observedGeneration": 1,
                "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
                "status": "True" if allowed > 0 else "False",
                "type": "DisruptionAllowed",
            }
        ],
        "currentHealthy": b.healthy,
        "desiredHealthy": desired,
        "disruptionsAllowed": allowed,
        "expectedPods": b.expected,
        "observedGeneration": 1,
    }
    meta: dict[str, Any] = {
        "creationTimestamp": ts(b.created),
        "generation": 1,
        "name": b.name,
        "namespace": b.namespace,
        "resourceVersion": ctx.rv(),
        "uid": ctx.uid(),
    }
    if b.helm_release:
        meta["annotations"] = {
            "meta.helm.sh/release-name": b.helm_release,
            "meta.helm.sh/release-namespace": b.namespace,
        }
        meta["labels"] = {"app.kubernetes.io/managed-by": "Helm", **b.match_labels}
    obj = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta, "spec": spec, "status": status}
    if ctx.managed_fields:
        meta_fields = {k: meta[k] for k in ("annotations", "labels") if k in meta}
        meta["managedFields"] = [
            managed(
                "helm" if b.helm_release else "kubectl-client-side-apply",
                b.created,
                {"metadata": meta_fields, "spec": spec},
                api="policy/v1",
            ),
            managed("kube-controller-manager", changed, {"status": status}, subresource="status", api="policy/v1"),
        ]
    return obj


# ---------------------------------------------------------------------------------------------
# output


def list_object(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dumps_indented(obj: Any, pad: str = "    ", newline: str = "\n") -> str:
    """json.dumps(obj, indent=len(pad), sort_keys=True), byte for byte, about 3x faster: the
    standard library falls back to its pure-Python generator encoder whenever indent is set.
    `newline` is the line break plus the indentation the object itself sits at."""
    parts: list[str] = []
    _enc(obj, newline, pad, parts.append)
    return "".join(parts)


def _scalar(v: Any) -> str:
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    return repr(v) if type(v) is int else json.dumps(v)


def _enc(o: Any, nl: str, pad: str, put: Callable[[str], None]) -> None:
    t = type(o)
    if t is dict:
        if not o:
            put("{}")
            return
        nl2 = nl + pad
        sep = nl2
        put("{")
        for k in sorted(o):
            put(sep + _esc(k) + ": ")
            sep = "," + nl2
            v = o[k]
            tv = type(v)
            if tv is str:
                put(_esc(v))
            elif tv is dict or tv is list:
                _enc(v, nl2, pad, put)
            else:
                put(_scalar(v))
        put(nl + "}")
    elif t is list:
        if not o:
            put("[]")
            return
        nl2 = nl + pad
        sep = nl2
        put("[")
        for v in o:
            put(sep)
            sep = "," + nl2
            _enc(v, nl2, pad, put)
        put(nl + "]")
    elif t is str:
        put(_esc(o))
    else:
        put(_scalar(o))


class KubectlDumper(yaml.SafeDumper):
    """Quotes like kubectl (go-yaml): "double" quotes for strings that would read back as another
    type ("0", "true", "", timestamps), 'single' ones for strings plain style cannot carry (JSON).
    Pure Python, so meant for small files; big ones go through libyaml, which single-quotes both."""

    def choose_scalar_style(self) -> str:
        style = super().choose_scalar_style()
        if style == "'" and self.event is not None and not self.event.implicit[0]:
            return '"'
        return style


def write_list(
    items: Iterable[dict[str, Any]], out: TextIO, fmt: str = "json", indent: int = 4, kubectl_quotes: bool = False
) -> int:
    """Stream a kubectl-style List, one item at a time; returns the number of items written.

    json: keys sorted and 4-space indented like kubectl (indent=0 writes compact JSON, ~3x smaller and faster).
    yaml: block style with keys sorted, like kubectl -o yaml; kubectl_quotes picks KubectlDumper."""
    n = 0
    if fmt == "yaml":
        dumper = KubectlDumper if kubectl_quotes else _Dumper
        for item in items:
            if n == 0:
                out.write("apiVersion: v1\nitems:\n")
            out.write(yaml.dump([item], Dumper=dumper, default_flow_style=False, sort_keys=True, width=1 << 30))
            n += 1
        if n == 0:
            out.write("apiVersion: v1\nitems: []\n")
        out.write('kind: List\nmetadata:\n  resourceVersion: ""\n')
        return n
    if fmt != "json":
        raise ValueError(f"unknown format {fmt!r}")
    if not indent:
        out.write('{"apiVersion":"v1","items":[')
        for item in items:
            out.write(("," if n else "") + json.dumps(item, sort_keys=True, separators=(",", ":")))
            n += 1
        out.write('],"kind":"List","metadata":{"resourceVersion":""}}\n')
        return n
    pad = " " * indent
    inner = "\n" + pad * 2
    out.write(f'{{\n{pad}"apiVersion": "v1",\n{pad}"items": [')
    for item in items:
        out.write(("," if n else "") + inner + dumps_indented(item, pad, inner))
        n += 1
    out.write(f"\n{pad}],\n" if n else "],\n")
    out.write(f'{pad}"kind": "List",\n{pad}"metadata": {{\n{pad}{pad}"resourceVersion": ""\n{pad}}}\n}}\n')
    return n


# ---------------------------------------------------------------------------------------------
# workload helpers (shared with examples/make-demo-cluster)

_OWNED = ("Deployment", "StatefulSet", "DaemonSet", "Job")


def new_workload(
    rng: random.Random,
    kind: str,
    namespace: str,
    name: str,
    created: int,
    labels: dict[str, str] | None = None,
    **kw: Any,
) -> Workload:
    """A Workload with its owner uid, template hash and the labels its controller puts on pods."""
    uid = new_uid(rng) if kind in _OWNED else ""
    h = "".join(rng.choices(SAFE, k=10))
    extra = dict(labels or {})
    if kind == "Deployment":
        extra = {"app": name, **extra, "pod-template-hash": h}
    elif kind == "StatefulSet":
        extra = {"app": name, **extra, "controller-revision-hash": f"{name}-{h}"}
    elif kind == "DaemonSet":
        extra = {**extra, "controller-revision-hash": h, "pod-template-generation": "1"}
    elif kind == "Job":
        extra = {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": name,
            "controller-uid": uid,
            "job-name": name,
            **extra,
        }
    return Workload(
        kind=kind, namespace=namespace, name=name, uid=uid, created=created, template_hash=h, labels=extra, **kw
    )


def pod_name(w: Workload, rng: random.Random, ordinal: int = 0, taken: set[tuple[str, str]] | None = None) -> str:
    """The name the controller gives a pod; with `taken`, a generated suffix is redrawn until the name
    is unique in its namespace (5 random characters do collide among 5,000 daemon pods)."""
    while True:
        sfx = "".join(rng.choices(SAFE, k=5))
        if w.kind == "Deployment":
            name = f"{w.name}-{w.template_hash}-{sfx}"
        elif w.kind in ("DaemonSet", "Job"):
            name = f"{w.name}-{sfx}"
        else:
            name = f"{w.name}-{ordinal}" if w.kind == "StatefulSet" else w.name
            if taken is not None:
                taken.add((w.namespace, name))
            return name
        if taken is None or (w.namespace, name) not in taken:
            if taken is not None:
                taken.add((w.namespace, name))
            return name


def kube_proxy(rng: random.Random, created: int) -> Workload:
    return new_workload(
        rng,
        "DaemonSet",
        "kube-system",
        "kube-proxy",
        created,
        {"k8s-app": "kube-proxy"},
        containers=[
            Container(
                "kube-proxy",
                f"registry.k8s.io/kube-proxy:{KUBE_VERSION}",
                {"cpu": "100m"},
                command=(
                    "kube-proxy",
                    "--v=2",
                    "--config=/var/lib/kube-proxy-config/config",
                    "--hostname-override=$(NODE_NAME)",
                ),
                env=(("NODE_NAME", "fieldRef:spec.nodeName"),),
                mounts=(
                    ("xtables-lock", "/run/xtables.lock"),
                    ("lib-modules", "/lib/modules"),
                    ("config", "/var/lib/kube-proxy-config/"),
                ),
                privileged=True,
            )
        ],
        volumes=[
            {"hostPath": {"path": "/run/xtables.lock", "type": "FileOrCreate"}, "name": "xtables-lock"},
            {"hostPath": {"path": "/lib/modules", "type": ""}, "name": "lib-modules"},
            {"configMap": {"defaultMode": 420, "name": "kube-proxy-config"}, "name": "config"},
        ],
        priority_class="system-node-critical",
        tolerations=[{"operator": "Exists"}],
        host_network=True,
        service_account="kube-proxy",
        grace=30,
    ).finish()


def static_pod(rng: random.Random, component: str, node: NodePlan, requests: dict[str, str]) -> Workload:
    """A kubeadm-style control-plane static pod, seen through its mirror pod."""
    image = "registry.k8s.io/etcd:3.6.4-0" if component == "etcd" else f"registry.k8s.io/{component}:{KUBE_VERSION}"
    cmd = {
        "etcd": (
            "etcd",
            f"--advertise-client-urls=https://{node.ip}:2379",
            "--data-dir=/var/lib/etcd",
            f"--name={node.name}",
        ),
        "kube-apiserver": (
            "kube-apiserver",
            f"--advertise-address={node.ip}",
            "--secure-port=6443",
            "--etcd-servers=https://127.0.0.1:2379",
        ),
        "kube-controller-manager": (
            "kube-controller-manager",
            "--leader-elect=true",
            "--kubeconfig=/etc/kubernetes/controller-manager.conf",
        ),
        "kube-scheduler": ("kube-scheduler", "--leader-elect=true", "--kubeconfig=/etc/kubernetes/scheduler.conf"),
    }[component]
    vol = ("etcd-data", "/var/lib/etcd") if component == "etcd" else ("k8s-certs", "/etc/kubernetes/pki")
    return Workload(
        kind="Static",
        namespace="kube-system",
        name=f"{component}-{node.name}",
        created=node.created + 40,
        labels={"component": component, "tier": "control-plane"},
        annotations=(
            {"kubeadm.kubernetes.io/etcd.advertise-client-urls": f"https://{node.ip}:2379"}
            if component == "etcd"
            else {"kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint": f"{node.ip}:6443"}
            if component == "kube-apiserver"
            else {}
        ),
        containers=[Container(component, image, dict(requests), command=cmd, mounts=(vol,))],
        volumes=[{"hostPath": {"path": vol[1], "type": "DirectoryOrCreate"}, "name": vol[0]}],
        priority_class="system-node-critical",
        host_network=True,
        service_account="",
        manager="kubelet",
        security_context={"seccompProfile": {"type": "RuntimeDefault"}},
    ).finish()


def node_resources(rng: random.Random, instance_type: str, style: str = "eks") -> tuple[dict[str, str], dict[str, str]]:
    """Capacity and allocatable as the kubelet reports them. style: eks (kube-reserved by the EKS
    formula: cpu "7910m", memory in Ki), control-plane (no cpu reservation), round ("8", "30Gi")."""
    cores, gib, gpus, mem_ki = _INSTANCE[instance_type]
    mem_ki += rng.randrange(0, 48) * 4
    pods = 234 if cores >= 16 else 110
    eph_ki = 104_845_292 - rng.randrange(0, 4096) * 4
    capacity = {
        "cpu": str(cores),
        "ephemeral-storage": f"{eph_ki}Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{mem_ki}Ki",
        "pods": str(pods),
    }
    allocatable = dict(capacity)
    allocatable["ephemeral-storage"] = str(int(eph_ki * 1024 * 0.9) - GI)
    if style == "round":
        capacity["memory"] = f"{gib}Gi"
        allocatable["cpu"] = fmt_cpu(cores * 1000 - 500)
        allocatable["memory"] = f"{gib - 2}Gi"
    elif style == "control-plane":
        allocatable["memory"] = f"{mem_ki - 102_400}Ki"
    else:
        reserved = 60 + 10 * (cores >= 2) + 5 * min(max(cores - 2, 0), 2) + int(2.5 * max(cores - 4, 0))
        allocatable["cpu"] = fmt_cpu(cores * 1000 - reserved)
        allocatable["memory"] = f"{mem_ki - (255 + 11 * pods + 100) * 1024}Ki"
    if gpus:
        capacity["nvidia.com/gpu"] = allocatable["nvidia.com/gpu"] = str(gpus)
    return capacity, allocatable


# cores, GiB, GPUs, memory capacity in Ki as the kernel reports it
_INSTANCE = {
    "m5.xlarge": (4, 16, 0, 15_896_988),
    "m5.2xlarge": (8, 32, 0, 32_386_560),
    "m5.4xlarge": (16, 64, 0, 65_049_140),
    "c5.2xlarge": (8, 16, 0, 15_896_996),
    "r5.2xlarge": (8, 64, 0, 65_049_164),
    "g4dn.xlarge": (4, 16, 1, 16_086_028),
    "g4dn.2xlarge": (8, 32, 1, 32_386_592),
}
FILL = 0.95  # running pods request this share of the bands' free targets
_WORKER_TYPES = ("m5.xlarge", "m5.2xlarge", "m5.4xlarge", "c5.2xlarge", "r5.2xlarge")
_WORKER_WEIGHTS = (30, 35, 10, 15, 10)
_POOL = {"m5": "nodes", "c5": "cpu-optimized", "r5": "memory-optimized", "g4": "gpu"}

# ---------------------------------------------------------------------------------------------
# the generated cluster


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_TEAMS = _words(
    "payments checkout search catalog identity growth data ml platform messaging billing logistics fraud ads "
    "media support analytics inventory pricing notifications reviews loyalty partners risk compliance marketing "
    "mobile web recs content maps booking orders shipping warehouse accounts ledger tax crm"
)
_SUBS = _words("api web batch workers jobs svc core edge internal events stream etl ui gw")
_NOUNS = _words(
    "cart checkout order invoice ledger account user profile session auth token search index catalog product price "
    "offer coupon promo review rating media image video thumbnail notification email sms push webhook event audit "
    "report export import sync feed recommendation ranking feature model geo address shipment tracking inventory "
    "stock warehouse payment refund fraud risk config gateway graphql frontend admin dashboard"
)
_ROLES = _words(
    "api service worker consumer web backend frontend processor scheduler indexer cache proxy sync exporter "
    "listener handler engine manager writer reader"
)
_STATEFUL = (
    ("postgres", "docker.io/library/postgres:16.4", 5432),
    ("redis", "docker.io/library/redis:7.4.1", 6379),
    ("kafka", "docker.io/bitnami/kafka:3.8.0", 9092),
    ("zookeeper", "docker.io/bitnami/zookeeper:3.9.2", 2181),
    ("elasticsearch", "docker.elastic.co/elasticsearch/elasticsearch:8.15.3", 9200),
    ("rabbitmq", "docker.io/library/rabbitmq:3.13-management", 5672),
    ("mongodb", "docker.io/library/mongo:7.0.14", 27017),
    ("nats", "docker.io/library/nats:2.10.22", 4222),
    ("clickhouse", "docker.io/clickhouse/clickhouse-server:24.8", 8123),
    ("minio", "quay.io/minio/minio:RELEASE.2024-10-13T13-34-11Z", 9000),
)
_SIDECARS = (
    ("istio-proxy", "docker.io/istio/proxyv2:1.23.2", 15090),
    ("log-shipper", "cr.fluentbit.io/fluent/fluent-bit:3.1.9", 2020),
    ("envoy", "docker.io/envoyproxy/envoy:v1.31.2", 9901),
    ("oauth2-proxy", "quay.io/oauth2-proxy/oauth2-proxy:v7.7.1", 4180),
    ("statsd-exporter", "docker.io/prom/statsd-exporter:v0.27.1", 9102),
)
_JOBWORDS = _words("nightly hourly cleanup backup report reindex sync export compaction rollup")
_BARE = (
    ("debug", "docker.io/nicolaka/netshoot:v0.13"),
    ("tmp-shell", "docker.io/library/busybox:1.37"),
    ("dnsutils", "registry.k8s.io/e2e-test-images/jessie-dnsutils:1.7"),
    ("psql-client", "docker.io/library/postgres:16.4"),
    ("curl-test", "docker.io/curlimages/curl:8.10.1"),
)
_CPU_LADDER = (
    5,
    10,
    20,
    25,
    50,
    75,
    100,
    150,
    200,
    250,
    300,
    400,
    500,
    600,
    750,
    1000,
    1200,
    1500,
    2000,
    2500,
    3000,
    4000,
)
_MEM_LADDER = tuple(
    x * MI
    for x in (16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384)
)
_MEM_DECIMAL = tuple(x * 10**6 for x in (50, 100, 128, 200, 256, 500, 1000, 2000, 4000, 8000))


def _snap(value: float, ladder: Sequence[int]) -> int:
    """The ladder value nearest on a log scale: request sizes people actually write."""
    if value <= ladder[0]:
        return ladder[0]
    best = ladder[-1]
    for a, b in itertools.pairwise(ladder):
        if value <= b:
            best = a if value * value < a * b else b
            break
    return best


@dataclass(slots=True, eq=False)
class Cluster:
    nodes: list[NodePlan]
    pods: list[PodPlan]
    pdbs: list[PdbPlan]
    seed: int

    def items(self, managed_fields: bool = True) -> Iterator[dict[str, Any]]:
        """The API objects in kubectl's order (nodes, pods, PDBs, each sorted), built one at a time."""
        ctx = Ctx(f"items-{self.seed}", managed_fields=managed_fields)
        for n in self.nodes:
            yield build_node(n, ctx)
        for p in self.pods:
            yield build_pod(p, ctx)
        for b in self.pdbs:
            yield build_pdb(b, ctx)


@dataclass(slots=True, eq=False)
class _Draft:
    """A workload whose container sizes wait for the cluster-wide scale: `u` is its relative size."""

    w: Workload
    u: float
    qos: str
    ratio: int  # MiB of memory per core requested
    decimal: bool
    sidecars: tuple[tuple[str, str, int], ...]
    init: str
    main: Container


class _Tier:
    __slots__ = ("boost", "name", "nodes", "open", "remaining")

    def __init__(self, name: str, boost: float) -> None:
        self.name, self.boost = name, boost
        self.nodes: list[NodePlan] = []
        self.open: list[NodePlan] = []
        self.remaining = 0

    def reopen(self) -> None:
        self.open = [n for n in self.nodes if n.t_cpu > n.band_cpu and n.band_pods < n.t_pods]
        self.remaining = sum(n.t_cpu - n.band_cpu for n in self.open)


def _fits(n: NodePlan, cpu: int, mem: int, gpu: int) -> bool:
    return (
        mem <= cpu * n.max_ratio
        and n.band_cpu + cpu <= n.t_cpu
        and n.band_mem + mem <= n.t_mem
        and n.band_pods < n.t_pods
        and n.used_cpu + cpu <= n.alloc_cpu
        and n.used_mem + mem <= n.alloc_mem
        and n.used_pods < n.alloc_pods
        and n.used_gpu + gpu <= n.alloc_gpu
    )


def _fits_alloc(n: NodePlan, cpu: int, mem: int, gpu: int) -> bool:
    return (
        n.used_cpu + cpu <= n.alloc_cpu
        and n.used_mem + mem <= n.alloc_mem
        and n.used_pods < n.alloc_pods
        and n.used_gpu + gpu <= n.alloc_gpu
    )


class _Packer:
    """Random-probe bin packing into per-node targets, with a first-fit scan as the fallback."""

    TRIES = 8

    def __init__(self, rng: random.Random, tiers: dict[str, _Tier]) -> None:
        self.rng, self.tiers = rng, tiers
        for t in tiers.values():
            t.reopen()
        self.fallbacks = 0

    def _close(self, t: _Tier, i: int) -> None:
        n = t.open[i]
        t.remaining -= max(0, n.t_cpu - n.band_cpu)
        t.open[i] = t.open[-1]
        t.open.pop()

    def _probe(self, t: _Tier, cpu: int, mem: int, gpu: int) -> NodePlan | None:
        rng, open_ = self.rng, t.open
        for _ in range(self.TRIES):
            if not open_:
                return None
            i = rng.randrange(len(open_))
            n = open_[i]
            if _fits(n, cpu, mem, gpu):
                n.add(cpu, mem, gpu)
                n.fails = 0
                t.remaining -= cpu
                if n.t_cpu - n.band_cpu < 5 or n.band_pods >= n.t_pods or n.used_pods >= n.alloc_pods:
                    self._close(t, i)
                return n
            n.fails += 1
            if n.fails > 200:
                self._close(t, i)
        return None

    def place(
        self, cpu: int, mem: int, gpu: int, allowed: Sequence[str], relax: Sequence[tuple[str, float]]
    ) -> NodePlan | None:
        tiers = [self.tiers[a] for a in allowed if self.tiers[a].open]
        while tiers:
            weights = [max(t.remaining, 1) * t.boost for t in tiers]
            t = self.rng.choices(tiers, weights)[0]
            n = self._probe(t, cpu, mem, gpu)
            if n is not None:
                return n
            tiers.remove(t)
        # every probe failed: first fit over whole tiers, letting some bands stretch up to a cap
        self.fallbacks += 1
        for name, cap in relax:
            for n in self.tiers[name].nodes:
                if (
                    n.band_cpu + cpu <= n.alloc_cpu * cap
                    and _fits_alloc(n, cpu, mem, gpu)
                    and (name != "light" or _fits(n, cpu, mem, gpu))
                ):
                    n.add(cpu, mem, gpu)
                    return n
        return None


def plan_cluster(nodes: int, pods: int, seed: int = 1, zones: int = 3) -> Cluster:
    """Plan a cluster of `nodes` nodes and exactly `pods` pods (fewer daemon pods if `pods` cannot
    even hold one per node), deterministically for `seed`."""
    if nodes < 1:
        raise ValueError("nodes must be at least 1")
    if pods < 0:
        raise ValueError("pods must not be negative")
    if not 1 <= zones <= 26:
        raise ValueError("zones must be between 1 and 26")
    rng = random.Random(seed)
    zone_names = [f"{REGION}{chr(97 + i)}" for i in range(zones)]

    # --- nodes
    n_cp = 3 if nodes >= 20 else (1 if nodes >= 4 else 0)
    n_gpu = max(1, round(nodes * 0.03)) if nodes >= 8 else 0
    n_workers = nodes - n_cp - n_gpu
    n_cordon = max(1, round(n_workers * 0.02)) if nodes >= 8 else 0
    n_sched = n_workers - n_cordon
    n_heavy, n_light = round(n_sched * 0.30), round(n_sched * 0.25)
    if n_sched >= 3:
        n_heavy, n_light = max(n_heavy, 1), max(n_light, 1)
    tiers_of = (
        ["control-plane"] * n_cp
        + ["gpu"] * n_gpu
        + ["cordoned"] * n_cordon
        + ["heavy"] * n_heavy
        + ["light"] * n_light
        + ["medium"] * (n_sched - n_heavy - n_light)
    )
    zone_of = [i % zones for i in range(nodes)]
    rng.shuffle(zone_of)
    per_zone = [zone_of.count(z) for z in range(zones)]
    hosts = [rng.sample(range(254, 254 * 256), k) for k in per_zone]
    node_plans: list[NodePlan] = []
    for i, tier in enumerate(tiers_of):
        z = zone_of[i]
        h = hosts[z].pop()
        ip = f"10.{20 + z}.{h // 254}.{h % 254 + 1}"
        zone = zone_names[z]
        name = f"ip-{ip.replace('.', '-')}.{REGION}.compute.internal"
        style = "eks"
        labels: dict[str, str] = {}
        taints: list[dict[str, str]] = []
        if tier == "control-plane":
            itype, style = "m5.xlarge", "control-plane"
            created = NOW - rng.randint(90, 400) * DAY + rng.randrange(DAY)
            labels = {
                "node-role.kubernetes.io/control-plane": "",
                "node.kubernetes.io/exclude-from-external-load-balancers": "",
            }
            taints = [{"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"}]
            pool = f"control-plane-{zone}"
        else:
            if tier == "gpu":
                itype = rng.choice(("g4dn.xlarge", "g4dn.2xlarge"))
                labels = {"dedicated": "gpu", "nvidia.com/gpu.present": "true"}
                taints = [{"effect": "NoSchedule", "key": "dedicated", "value": "gpu"}]
            else:
                itype = rng.choices(_WORKER_TYPES, _WORKER_WEIGHTS)[0]
                labels = {"node-role.kubernetes.io/node": ""}
            created = NOW - min(int(rng.expovariate(1 / (18 * DAY))), 200 * DAY) - 3600 - rng.randrange(3600)
            pool = f"{_POOL[itype[:2]]}-{zone}"
            if tier != "gpu" and itype in ("m5.2xlarge", "m5.4xlarge") and rng.random() < 0.25:
                style, pool = "round", f"legacy-{zone}"
        labels["kops.k8s.io/instancegroup"] = pool
        capacity, allocatable = node_resources(rng, itype, style)
        base = (100 << 24 | 64 << 16) + 256 * i
        n = node_plan(
            rng,
            name,
            zone,
            itype,
            ip,
            f"{_ip_str(base)}/24",
            created,
            capacity,
            allocatable,
            role=tier if tier in ("control-plane", "gpu") else "worker",
            pool=pool,
            taints=taints,
            labels=labels,
            provider_id=f"aws:///{zone}/i-0{rng.getrandbits(64):016x}",
            tier=tier,
        )
        if tier == "cordoned":
            n.unschedulable = True
            n.taints = [
                {
                    "effect": "NoSchedule",
                    "key": "node.kubernetes.io/unschedulable",
                    "timeAdded": ts(NOW - rng.randint(3600, 5 * DAY)),
                }
            ]
        lo, hi, mem_f, pods_f = {
            "heavy": (0.74, 0.93, 0.95, 1.0),
            "medium": (0.34, 0.62, 0.90, 1.0),
            "light": (0.035, 0.11, 0.11, 0.12),
            "cordoned": (0.12, 0.45, 0.90, 1.0),
            "control-plane": (0.25, 0.45, 0.90, 1.0),
            "gpu": (1.0, 1.0, 1.0, 1.0),
        }[tier]
        n.t_cpu = int(n.alloc_cpu * rng.uniform(lo, hi))
        n.t_mem = int(n.alloc_mem * mem_f)
        n.t_pods = max(3, int(n.alloc_pods * pods_f))
        if tier == "heavy":
            n.max_ratio = 1.1 * n.alloc_mem / n.alloc_cpu
        node_plans.append(n)

    tiers = {
        name: _Tier(name, boost)
        for name, boost in (
            ("heavy", 2.5),
            ("medium", 1.0),
            ("light", 1.0),
            ("cordoned", 0.8),
            ("control-plane", 1.0),
            ("gpu", 1.0),
        )
    }
    for n in node_plans:
        tiers[n.tier].nodes.append(n)
    cps = tiers["control-plane"].nodes

    # --- system pods: mirror pods, daemon sets, kube-system deployments (truncated to `pods`)
    plans: list[PodPlan] = []
    taken: set[tuple[str, str]] = set()  # (namespace, pod name)
    budget = pods

    def add_fixed(w: Workload, node: NodePlan | None, name: str) -> bool:
        nonlocal budget
        if budget <= 0:
            return False
        budget -= 1
        plans.append(PodPlan(w, name, node))
        if node is not None:
            node.add(w.cpu, w.mem, w.gpu)
        return True

    for node in cps:
        for comp, req in (
            ("etcd", {"cpu": "100m", "memory": "100Mi"}),
            ("kube-apiserver", {"cpu": "250m"}),
            ("kube-controller-manager", {"cpu": "200m"}),
            ("kube-scheduler", {"cpu": "100m"}),
        ):
            w = static_pod(rng, comp, node, req)
            add_fixed(w, node, pod_name(w, rng, taken=taken))
    cluster_born = min(n.created for n in node_plans)
    dss = [kube_proxy(rng, cluster_born + 600), _node_local_dns(rng, cluster_born + 900)]
    for w in dss:
        for node in node_plans:
            add_fixed(w, node, pod_name(w, rng, taken=taken))

    namespaces: list[str] = []
    used_names: set[tuple[str, str]] = set()
    drafts: list[_Draft] = []
    regular: list[PodPlan] = []  # running pods placed by the packer
    system = _system_deployments(rng, nodes, cluster_born)
    for w in system:
        for _ in range(w.replicas):
            if budget <= 0:
                break
            budget -= 1
            regular.append(PodPlan(w, pod_name(w, rng, taken=taken), None))

    # --- workloads
    work = budget
    n_pending = work // 5000 + (1 if work >= 200 else 0)
    n_bare = max(1, work // 1000) if work >= 50 else 0
    n_gpu_pods = min(round(n_gpu * 0.6), max(0, work - n_pending - n_bare))
    n_jobs = round(work * 0.03)
    n_sts = round(work * 0.06)
    n_deploy = work - n_pending - n_bare - n_gpu_pods - n_jobs - n_sts
    if n_deploy < 0:  # tiny clusters: deployments only
        n_pending = n_bare = n_gpu_pods = n_jobs = n_sts = 0
        n_deploy = work

    def new_namespace() -> str:
        for _ in range(50):
            ns = f"{rng.choice(_TEAMS)}-{rng.choice(_SUBS)}"
            if ns not in namespaces:
                break
        else:
            ns = f"{rng.choice(_TEAMS)}-{rng.choice(_SUBS)}-{len(namespaces)}"
        namespaces.append(ns)
        return ns

    def unique(ns: str, name: str) -> str:
        base, k = name, 2
        while (ns, name) in used_names:
            name, k = f"{base}-{k}", k + 1
        used_names.add((ns, name))
        return name

    deployments: list[Workload] = []
    ns, left = "", 0
    remaining = n_deploy
    while remaining > 0:
        if left <= 0:
            ns, left = new_namespace(), rng.randint(30, 70)
        replicas = min(remaining, _replicas(rng))
        name = unique(ns, f"{rng.choice(_NOUNS)}-{rng.choice(_ROLES)}")
        d = _deployment_draft(rng, ns, name, replicas)
        drafts.append(d)
        deployments.append(d.w)
        for _ in range(replicas):
            regular.append(_pod_plan(rng, d.w, taken))
        remaining -= replicas
        left -= 1
    if not namespaces:
        namespaces.append(new_namespace())

    remaining = n_sts
    stateful: list[Workload] = []
    while remaining > 0:
        ns = rng.choice(namespaces)
        base, image, port = rng.choice(_STATEFUL)
        replicas = min(remaining, rng.choice((1, 1, 2, 3, 3, 3, 5)))
        name = unique(ns, base if rng.random() < 0.5 else f"{base}-{rng.choice(_NOUNS)}")
        d = _stateful_draft(rng, ns, name, base, image, port, replicas)
        drafts.append(d)
        stateful.append(d.w)
        for i in range(replicas):
            regular.append(_pod_plan(rng, d.w, taken, ordinal=i))
        remaining -= replicas

    terminal: list[PodPlan] = []
    for _ in range(n_jobs):
        ns = rng.choice(namespaces)
        cron = f"{rng.choice(_NOUNS)}-{rng.choice(_JOBWORDS)}"
        period = 3600 if "hourly" in cron else DAY
        runs_ago = rng.randint(0, 3)
        scheduled = (NOW - runs_ago * period - rng.randrange(min(period, 6 * 3600))) // 60 * 60
        name = unique(ns, f"{cron}-{scheduled // 60}")
        d = _job_draft(rng, ns, name, cron, scheduled)
        drafts.append(d)
        r = rng.random()
        phase = "Succeeded" if r < 0.65 else "Failed" if r < 0.75 else "Running"
        p = PodPlan(d.w, pod_name(d.w, rng, taken=taken), None, phase=phase)
        (regular if phase == "Running" else terminal).append(p)

    for _ in range(n_bare):
        ns = "default" if rng.random() < 0.5 else rng.choice(namespaces)
        base, image = rng.choice(_BARE)
        name = unique(ns, f"{base}-{''.join(rng.choices(SAFE, k=5))}")
        d = _bare_draft(rng, ns, name, image, NOW - rng.randint(600, 40 * DAY))
        drafts.append(d)
        taken.add((ns, name))
        regular.append(PodPlan(d.w, name, None))

    gpu_pods: list[PodPlan] = []
    remaining = n_gpu_pods
    while remaining > 0:
        ns = rng.choice(namespaces)
        replicas = min(remaining, rng.choice((1, 1, 2)))
        name = unique(ns, f"{rng.choice(('inference', 'embedding', 'training', 'vision'))}-{rng.choice(_ROLES)}")
        w = _gpu_deployment(rng, ns, name, replicas)
        deployments.append(w)
        gpu_pods += [PodPlan(w, pod_name(w, rng, taken=taken), None) for _ in range(replicas)]
        remaining -= replicas

    pending: list[PodPlan] = []
    remaining = n_pending
    while remaining > 0:
        ns = rng.choice(namespaces)
        replicas = min(remaining, rng.choice((1, 1, 2, 3)))
        name = unique(ns, f"{rng.choice(_NOUNS)}-{rng.choice(('trainer', 'batch', 'etl', 'compactor'))}")
        w = _huge_deployment(rng, ns, name, replicas)
        deployments.append(w)
        pending += [PodPlan(w, pod_name(w, rng, taken=taken), None, phase="Pending") for _ in range(replicas)]
        remaining -= replicas

    # --- sizes: scale the drafts so running pods ask for FILL of the bands' free targets
    band_tiers = ("heavy", "medium", "light", "cordoned")
    free = sum(n.t_cpu - n.band_cpu for t in band_tiers for n in tiers[t].nodes)
    free -= sum(p.w.cpu for p in regular if p.w in system)
    units = {id(d.w): 0 for d in drafts}
    for p in regular:
        if id(p.w) in units:
            units[id(p.w)] += 1
    total_units = sum(d.u * units[id(d.w)] for d in drafts) or 1.0
    scale = FILL * max(free, 0) / total_units
    for _ in range(3):
        for d in drafts:
            _realize(d, scale)
        demand = sum(p.w.cpu for p in regular if id(p.w) in units)
        if demand <= 0:
            break
        scale *= min(1.5, max(0.5, FILL * max(free, 0) / demand))
    for d in drafts:
        _realize(d, scale)

    # --- placement
    packer = _Packer(rng, tiers)
    regular.sort(key=lambda p: (p.w not in system, -p.w.cpu, -p.w.mem))
    normal = ("heavy", "medium", "light", "cordoned")
    relax_normal = (("medium", 0.68), ("cordoned", 0.6), ("heavy", 0.95), ("light", 0.15))
    unschedulable: list[PodPlan] = []
    for p in regular:
        w = p.w
        on_cp = any(t.get("key") == "node-role.kubernetes.io/control-plane" for t in w.tolerations)
        allowed = (*normal, "control-plane") if on_cp else normal
        relax = (*relax_normal, ("control-plane", 0.5)) if on_cp else relax_normal
        p.node = packer.place(w.cpu, w.mem, w.gpu, allowed, relax)
        if p.node is None:
            unschedulable.append(p)
    _top_up(
        rng,
        tiers["heavy"].nodes,
        [p for p in regular if p.node is not None and p.node.tier == "medium" and p.w not in system],
    )
    for p in gpu_pods:
        free_gpu = [n for n in tiers["gpu"].nodes if _fits_alloc(n, p.w.cpu, p.w.mem, p.w.gpu)]
        if free_gpu:
            p.node = rng.choice(free_gpu)
            p.node.add(p.w.cpu, p.w.mem, p.w.gpu)
        else:
            unschedulable.append(p)
    hosts_for_done = tiers["heavy"].nodes + tiers["medium"].nodes
    for p in terminal:
        w = p.w
        for _ in range(20):
            n = rng.choice(hosts_for_done) if hosts_for_done else None
            if n is not None and n.created < w.created - 300 and _fits_alloc(n, w.cpu, w.mem, w.gpu):
                n.add(w.cpu, w.mem, w.gpu, terminal=True)
                p.node = n
                break
        else:
            p.node = next((n for n in node_plans if n.tier in normal and _fits_alloc(n, w.cpu, w.mem, w.gpu)), None)
            if p.node is not None:
                p.node.add(w.cpu, w.mem, w.gpu, terminal=True)
            else:
                unschedulable.append(p)
    for p in unschedulable + pending:
        p.phase = "Pending"
        p.message = _unschedulable_message(p.w, node_plans, tiers)

    all_pods = plans + regular + gpu_pods + terminal + pending
    # crash loops and restarts on running controller pods
    for p in all_pods:
        if p.phase != "Running" or p.node is None:
            continue
        r = rng.random()
        if p.w.kind in ("Deployment", "StatefulSet") and r < 0.01:
            p.crashloop, p.restarts = True, rng.randint(12, 900)
        elif r < 0.12:
            p.restarts = rng.choice((1, 1, 1, 2, 3, 5, 8))
    all_pods.sort(key=lambda p: (p.w.namespace, p.name))
    node_plans.sort(key=lambda n: n.name)

    # --- PDBs: about a third of the deployments, a few stateful sets, coredns
    # PDB status counts the pods its selector matches (by the app / k8s-app label)
    count: dict[tuple[str, str, str], int] = {}
    healthy: dict[tuple[str, str, str], int] = {}
    for p in all_pods:
        for k in ("app", "k8s-app"):
            v = p.w.labels.get(k)
            if v is not None:
                key = (p.w.namespace, k, v)
                count[key] = count.get(key, 0) + 1
                if p.healthy:
                    healthy[key] = healthy.get(key, 0) + 1
    pdbs: list[PdbPlan] = []
    dns = ("kube-system", "k8s-app", "kube-dns")
    for w in system:
        if w.name == "coredns" and count.get(dns):
            pdbs.append(
                PdbPlan(
                    "kube-system",
                    "coredns",
                    {"k8s-app": "kube-dns"},
                    w.created,
                    count[dns],
                    healthy.get(dns, 0),
                    max_unavailable=1,
                )
            )
    for w in deployments + stateful:
        key = (w.namespace, "app", w.name)
        if not count.get(key) or rng.random() >= (0.33 if w.kind == "Deployment" else 0.3):
            continue
        r = rng.random()
        mn: int | str | None = None
        mx: int | str | None = None
        if r < 0.35:
            mn = rng.choice((1, max(1, w.replicas - 1), w.replicas))
        elif r < 0.5:
            mn = rng.choice(("50%", "60%", "80%"))
        elif r < 0.85:
            mx = 1
        else:
            mx = rng.choice(("25%", "33%", "50%"))
        helm = w.name if rng.random() < 0.5 else ""
        name = w.name if rng.random() < 0.5 else f"{w.name}-pdb"
        created = w.created + rng.randint(0, 600)
        pdbs.append(PdbPlan(w.namespace, name, {"app": w.name}, created, count[key], healthy.get(key, 0), mn, mx, helm))
    pdbs.sort(key=lambda b: (b.namespace, b.name))
    return Cluster(node_plans, all_pods, pdbs, seed)


def _top_up(rng: random.Random, heavy: Sequence[NodePlan], donors: list[PodPlan], floor: float = 0.72) -> None:
    """Move pods from medium nodes (keeping them above 30%) onto heavy nodes the packer left below
    `floor` of their allocatable cpu, typically nodes where memory ran out before cpu did."""
    short = [n for n in heavy if n.band_cpu < floor * n.alloc_cpu]
    if not short:
        return
    rng.shuffle(donors)
    donors.sort(key=lambda p: p.w.mem / max(p.w.cpu, 1))  # cpu-heavy pods first
    for h in short:
        for p in donors:
            if h.band_cpu >= floor * h.alloc_cpu:
                break
            src, w = p.node, p.w
            if src is None or src.tier != "medium" or not w.cpu or src.band_cpu - w.cpu < 0.30 * src.alloc_cpu:
                continue
            if _fits(h, w.cpu, w.mem, w.gpu):
                src.remove(w.cpu, w.mem, w.gpu)
                h.add(w.cpu, w.mem, w.gpu)
                p.node = h


def _replicas(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.22:
        return 1
    if r < 0.52:
        return 2
    if r < 0.77:
        return 3
    if r < 0.92:
        return rng.randint(4, 6)
    if r < 0.98:
        return rng.randint(7, 12)
    return rng.randint(13, 40)


def _pod_plan(rng: random.Random, w: Workload, taken: set[tuple[str, str]], ordinal: int = 0) -> PodPlan:
    return PodPlan(w, pod_name(w, rng, ordinal, taken), None, ordinal=ordinal if w.kind == "StatefulSet" else -1)


def _node_local_dns(rng: random.Random, created: int) -> Workload:
    return new_workload(
        rng,
        "DaemonSet",
        "kube-system",
        "node-local-dns",
        created,
        {"k8s-app": "node-local-dns"},
        containers=[
            Container(
                "node-cache",
                "registry.k8s.io/dns/k8s-dns-node-cache:1.23.1",
                {"cpu": "25m", "memory": "5Mi"},
                {"memory": "128Mi"},
                ports=(("dns", 53), ("metrics", 9253)),
                args=("-localip", "169.254.20.10", "-conf", "/etc/Corefile", "-upstreamsvc", "kube-dns-upstream"),
                mounts=(("xtables-lock", "/run/xtables.lock"), ("config-volume", "/etc/coredns")),
                privileged=True,
            )
        ],
        volumes=[
            {"hostPath": {"path": "/run/xtables.lock", "type": "FileOrCreate"}, "name": "xtables-lock"},
            {
                "configMap": {
                    "defaultMode": 420,
                    "items": [{"key": "Corefile", "path": "Corefile.base"}],
                    "name": "node-local-dns",
                },
                "name": "config-volume",
            },
        ],
        priority_class="system-node-critical",
        host_network=True,
        service_account="node-local-dns",
        tolerations=[
            {"key": "CriticalAddonsOnly", "operator": "Exists"},
            {"effect": "NoExecute", "operator": "Exists"},
            {"effect": "NoSchedule", "operator": "Exists"},
        ],
    ).finish()


def coredns(rng: random.Random, created: int, replicas: int = 2) -> Workload:
    """kube-system/coredns: system-cluster-critical, tolerates the control-plane taint."""
    w = new_workload(
        rng,
        "Deployment",
        "kube-system",
        "coredns",
        created,
        {"k8s-app": "kube-dns"},
        containers=[
            Container(
                "coredns",
                "registry.k8s.io/coredns/coredns:v1.11.3",
                {"cpu": "100m", "memory": "70Mi"},
                {"memory": "170Mi"},
                ports=(("dns", 53), ("metrics", 9153)),
                args=("-conf", "/etc/coredns/Corefile"),
                mounts=(("config-volume", "/etc/coredns"),),
                probes=True,
            )
        ],
        volumes=[
            {
                "configMap": {
                    "defaultMode": 420,
                    "items": [{"key": "Corefile", "path": "Corefile"}],
                    "name": "coredns",
                },
                "name": "config-volume",
            }
        ],
        priority_class="system-cluster-critical",
        tolerations=[
            {"key": "CriticalAddonsOnly", "operator": "Exists"},
            {"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"},
        ],
        service_account="coredns",
        node_selector={"kubernetes.io/os": "linux"},
        replicas=replicas,
    )
    w.labels.pop("app")
    return w.finish()


def metrics_server(rng: random.Random, created: int) -> Workload:
    """kube-system/metrics-server: system-cluster-critical, with an emptyDir for its certificates."""
    w = new_workload(
        rng,
        "Deployment",
        "kube-system",
        "metrics-server",
        created,
        {"k8s-app": "metrics-server"},
        containers=[
            Container(
                "metrics-server",
                "registry.k8s.io/metrics-server/metrics-server:v0.7.2",
                {"cpu": "100m", "memory": "200Mi"},
                ports=(("https", 10250),),
                args=("--cert-dir=/tmp", "--secure-port=10250", "--kubelet-use-node-status-port"),
                mounts=(("tmp-dir", "/tmp"),),
                probes=True,
            )
        ],
        volumes=[{"emptyDir": {}, "name": "tmp-dir"}],
        priority_class="system-cluster-critical",
        service_account="metrics-server",
        node_selector={"kubernetes.io/os": "linux"},
    )
    w.labels.pop("app")
    return w.finish()


def _system_deployments(rng: random.Random, nodes: int, born: int) -> list[Workload]:
    dns = coredns(rng, born + 700, max(2, math.ceil(nodes / 256)))
    metrics = metrics_server(rng, born + 800)
    autoscaler = new_workload(
        rng,
        "Deployment",
        "kube-system",
        "cluster-autoscaler",
        born + 900,
        {"app.kubernetes.io/name": "aws-cluster-autoscaler"},
        containers=[
            Container(
                "aws-cluster-autoscaler",
                "registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.0",
                {"cpu": "100m", "memory": "600Mi"},
                {"cpu": "100m", "memory": "600Mi"},
                ports=(("http", 8085),),
                command=("./cluster-autoscaler", "--cloud-provider=aws", "--expander=least-waste"),
            )
        ],
        priority_class="system-cluster-critical",
        service_account="cluster-autoscaler",
        annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"},
    )
    ebs = new_workload(
        rng,
        "Deployment",
        "kube-system",
        "ebs-csi-controller",
        born + 1000,
        {"app.kubernetes.io/name": "aws-ebs-csi-driver"},
        containers=[
            Container(
                "ebs-plugin",
                "public.ecr.aws/ebs-csi-driver/aws-ebs-csi-driver:v1.36.0",
                {"cpu": "10m", "memory": "40Mi"},
                {"memory": "256Mi"},
                ports=(("healthz", 9808),),
                mounts=(("socket-dir", "/var/lib/csi/sockets/pluginproxy/"),),
            ),
            Container(
                "csi-provisioner",
                "public.ecr.aws/eks-distro/kubernetes-csi/external-provisioner:v5.1.0",
                {"cpu": "10m", "memory": "40Mi"},
                {"memory": "256Mi"},
                mounts=(("socket-dir", "/var/lib/csi/sockets/pluginproxy/"),),
            ),
            Container(
                "csi-attacher",
                "public.ecr.aws/eks-distro/kubernetes-csi/external-attacher:v4.7.0",
                {"cpu": "10m", "memory": "40Mi"},
                {"memory": "256Mi"},
                mounts=(("socket-dir", "/var/lib/csi/sockets/pluginproxy/"),),
            ),
        ],
        volumes=[{"emptyDir": {}, "name": "socket-dir"}],
        priority_class="system-cluster-critical",
        service_account="ebs-csi-controller-sa",
        replicas=2,
    )
    return [dns, metrics, autoscaler.finish(), ebs.finish()]


def _deployment_draft(rng: random.Random, ns: str, name: str, replicas: int) -> _Draft:
    team = ns.split("-", 1)[0]
    created = NOW - min(int(rng.expovariate(1 / (60 * DAY))), 700 * DAY) - rng.randrange(DAY)
    annotations: dict[str, str] = {}
    r = rng.random()
    if r < 0.3:
        annotations = {"prometheus.io/port": "9090", "prometheus.io/scrape": "true"}
    if rng.random() < 0.1:
        annotations["kubectl.kubernetes.io/restartedAt"] = ts(created + rng.randint(0, NOW - created))
    if rng.random() < 0.03:
        annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"] = rng.choice(("true", "false"))
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": ns, "team": team}
    volumes: list[dict[str, Any]] = []
    mounts: list[tuple[str, str]] = []
    if rng.random() < 0.4:
        volumes.append({"configMap": {"defaultMode": 420, "name": f"{name}-config"}, "name": "config"})
        mounts.append(("config", "/etc/app"))
    if rng.random() < 0.2:
        volumes.append({"name": "credentials", "secret": {"defaultMode": 420, "secretName": f"{name}-credentials"}})
        mounts.append(("credentials", "/var/run/secrets/app"))
    if rng.random() < 0.15:
        ed = rng.choice(({}, {"sizeLimit": "1Gi"}, {"medium": "Memory", "sizeLimit": "256Mi"}))
        vname = rng.choice(("tmp", "cache", "scratch"))
        volumes.append({"emptyDir": ed, "name": vname})
        mounts.append((vname, f"/{vname}"))
    extra: dict[str, Any] = {}
    if replicas > 1 and rng.random() < 0.15:
        extra["topologySpreadConstraints"] = [
            {
                "labelSelector": {"matchLabels": {"app": name}},
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
            }
        ]
    elif replicas > 1 and rng.random() < 0.1:
        extra["affinity"] = {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": name}},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                        "weight": 100,
                    }
                ]
            }
        }
    pc = rng.choices(("", "high-priority", "business-critical", "low-priority"), (70, 15, 5, 10))[0]
    w = new_workload(
        rng,
        "Deployment",
        ns,
        name,
        created,
        labels,
        annotations=annotations,
        volumes=volumes,
        priority_class=pc,
        replicas=replicas,
        extra_spec=extra,
        node_selector={"kubernetes.io/os": "linux"} if rng.random() < 0.3 else {},
        service_account=name if rng.random() < 0.4 else "default",
        security_context=rng.choice(({}, {}, {"fsGroup": 2000, "runAsNonRoot": True, "runAsUser": 1000})),
    )
    main = Container(
        "app" if rng.random() < 0.3 else name.rsplit("-", 1)[0],
        f"{REGISTRY}/{team}/{name}:{rng.randint(1, 4)}.{rng.randint(0, 40)}.{rng.randint(0, 20)}",
        ports=(("http", rng.choice((8080, 8000, 3000, 9000, 5000))),),
        env=(("POD_NAME", "fieldRef:metadata.name"), ("LOG_LEVEL", rng.choice(("info", "warn", "debug")))),
        mounts=tuple(mounts),
        probes=rng.random() < 0.7,
    )
    sidecars = tuple(rng.sample(_SIDECARS, rng.choices((0, 1, 2), (80, 16, 4))[0]))
    init = rng.choices(("", "wait-for-deps", "migrate", "native-sidecar"), (80, 10, 7, 3))[0]
    return _Draft(
        w, rng.lognormvariate(0, 0.9), _qos_choice(rng), _mem_ratio(rng), rng.random() < 0.1, sidecars, init, main
    )


def _stateful_draft(rng: random.Random, ns: str, name: str, base: str, image: str, port: int, replicas: int) -> _Draft:
    created = NOW - min(int(rng.expovariate(1 / (120 * DAY))), 700 * DAY) - rng.randrange(DAY)
    w = new_workload(
        rng,
        "StatefulSet",
        ns,
        name,
        created,
        {"app.kubernetes.io/name": base, "app.kubernetes.io/instance": name},
        claim_templates=("data",),
        replicas=replicas,
        service=f"{name}-headless",
        priority_class=rng.choices(("", "high-priority", "business-critical"), (50, 35, 15))[0],
        security_context={"fsGroup": 1001, "runAsUser": 1001},
        grace=rng.choice((30, 60, 120)),
    )
    main = Container(base, image, ports=((base[:15], port),), env=(("POD_NAME", "fieldRef:metadata.name"),))
    return _Draft(
        w,
        2.5 * rng.lognormvariate(0, 0.7),
        rng.choice(("Burstable", "Burstable", "Guaranteed")),
        rng.choice((2048, 4096, 4096, 8192)),
        False,
        (),
        "",
        main,
    )


def _job_draft(rng: random.Random, ns: str, name: str, cron: str, scheduled: int) -> _Draft:
    team = ns.split("-", 1)[0]
    w = new_workload(
        rng,
        "Job",
        ns,
        name,
        scheduled,
        restart_policy=rng.choice(("Never", "OnFailure")),
        priority_class=rng.choices(("", "low-priority"), (40, 60))[0],
    )
    main = Container(
        "job",
        f"{REGISTRY}/{team}/{cron}:{rng.randint(1, 9)}.{rng.randint(0, 30)}.0",
        args=("--run", cron.rsplit("-", 1)[-1]),
    )
    return _Draft(
        w,
        rng.lognormvariate(0, 0.8),
        rng.choice(("Burstable", "Burstable", "BestEffort")),
        _mem_ratio(rng),
        False,
        (),
        "",
        main,
    )


def _bare_draft(rng: random.Random, ns: str, name: str, image: str, created: int) -> _Draft:
    w = new_workload(rng, "Bare", ns, name, created, {"run": name})
    main = Container(name, image, command=("sleep", "infinity"))
    return _Draft(w, 0.3, rng.choice(("BestEffort", "BestEffort", "Burstable")), 1024, False, (), "", main)


def _gpu_deployment(rng: random.Random, ns: str, name: str, replicas: int) -> Workload:
    team = ns.split("-", 1)[0]
    cpu, mem = rng.choice((("1500m", "6Gi"), ("2", "8Gi"), ("2500m", "10Gi")))
    w = new_workload(
        rng,
        "Deployment",
        ns,
        name,
        NOW - rng.randint(2, 90) * DAY,
        {"team": team},
        replicas=replicas,
        containers=[
            Container(
                "model-server",
                f"{REGISTRY}/{team}/{name}:{rng.randint(1, 3)}.{rng.randint(0, 9)}.0",
                {"cpu": cpu, "memory": mem, "nvidia.com/gpu": "1"},
                {"memory": mem, "nvidia.com/gpu": "1"},
                ports=(("grpc", 8001), ("http", 8000)),
                probes=True,
            )
        ],
        volumes=[{"emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}, "name": "dshm"}],
        node_selector={"nvidia.com/gpu.present": "true"},
        tolerations=[
            {"effect": "NoSchedule", "key": "dedicated", "operator": "Equal", "value": "gpu"},
            {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"},
        ],
        priority_class="high-priority",
    )
    w.containers[0].mounts = (("dshm", "/dev/shm"),)
    return w.finish()


def _huge_deployment(rng: random.Random, ns: str, name: str, replicas: int) -> Workload:
    team = ns.split("-", 1)[0]
    cpu, mem = rng.choice((("24", "96Gi"), ("32", "64Gi"), ("20", "160Gi")))
    return new_workload(
        rng,
        "Deployment",
        ns,
        name,
        NOW - rng.randint(600, 3 * DAY),
        {"team": team},
        replicas=replicas,
        containers=[
            Container(
                "worker",
                f"{REGISTRY}/{team}/{name}:0.{rng.randint(1, 9)}.0",
                {"cpu": cpu, "memory": mem},
                {"memory": mem},
            )
        ],
    ).finish()


def _unschedulable_message(w: Workload, nodes: Sequence[NodePlan], tiers: dict[str, _Tier]) -> str:
    total = len(nodes)
    parts: list[str] = []
    n_cp, n_gpu, n_cordon = (len(tiers[t].nodes) for t in ("control-plane", "gpu", "cordoned"))
    rest = total - n_cordon
    if n_cp and w.namespace != "kube-system":
        parts.append(f"{n_cp} node(s) had untolerated taint {{node-role.kubernetes.io/control-plane: }}")
        rest -= n_cp
    if n_gpu and not w.gpu:
        parts.append(f"{n_gpu} node(s) had untolerated taint {{dedicated: gpu}}")
        rest -= n_gpu
    if n_cordon:
        parts.append(f"{n_cordon} node(s) were unschedulable")
    if rest > 0:
        parts.append(f"{rest} Insufficient cpu")
    return (
        f"0/{total} nodes are available: {', '.join(parts)}. preemption: 0/{total} nodes are available: "
        f"{max(rest, 0)} No preemption victims found for incoming pod, {total - max(rest, 0)} Preemption is not "
        "helpful for scheduling."
    )


def _qos_choice(rng: random.Random) -> str:
    return rng.choices(("Burstable", "Guaranteed", "BestEffort"), (79, 15, 6))[0]


def _mem_ratio(rng: random.Random) -> int:
    return rng.choices((256, 512, 1024, 2048, 3072, 4096), (8, 20, 30, 25, 12, 5))[0]


def _realize(d: _Draft, scale: float) -> None:
    """Turn a draft's relative size into containers with requests/limits people write."""
    w, main = d.w, d.main
    total = d.u * scale
    side_cpu = _snap(max(5.0, 0.2 * total / len(d.sidecars)), _CPU_LADDER) if d.sidecars else 0
    cpu = min(_snap(max(5.0, total - side_cpu * len(d.sidecars)), _CPU_LADDER), 4000)
    mem_ladder = _MEM_DECIMAL if d.decimal else _MEM_LADDER
    mem = _snap(max(32 * MI, cpu / 1000 * d.ratio * MI), mem_ladder)

    def res(c: int, m: int, mult_c: float | None, mult_m: float) -> tuple[dict[str, str], dict[str, str]]:
        if d.qos == "BestEffort":
            return {}, {}
        req = {"cpu": fmt_cpu(c), "memory": fmt_mem(m, d.decimal)}
        if d.qos == "Guaranteed":
            return req, dict(req)
        lim = {"memory": fmt_mem(_snap(m * mult_m, mem_ladder), d.decimal)}
        if mult_c:
            lim["cpu"] = fmt_cpu(_snap(c * mult_c, (*_CPU_LADDER, 6000, 8000)))
        return req, lim

    mult_c = (None, None, 2.0, 4.0)[int(d.u * 1000) % 4]
    mult_m = (1.0, 1.5, 2.0)[int(d.u * 10000) % 3]
    main.requests, main.limits = res(cpu, mem, mult_c, mult_m)
    w.containers = [main]
    for sname, simage, sport in d.sidecars:
        smem = _snap(max(32 * MI, side_cpu / 1000 * 1024 * MI), _MEM_LADDER)
        sreq, slim = res(side_cpu, smem, 2.0 if mult_c else None, 2.0)
        if d.decimal and sreq:  # sidecars come from their own charts: binary units
            sreq["memory"] = fmt_mem(smem)
            slim = {**slim, "memory": fmt_mem(smem if d.qos == "Guaranteed" else smem * 2)}
        w.containers.append(Container(sname, simage, sreq, slim, ports=(("metrics", sport),)))
    w.init_containers = []
    if d.init:
        icpu, imem = min(cpu, 50), min(mem, _snap(64 * MI, mem_ladder))  # on the ladder: limit >= request
        ireq, ilim = res(icpu, imem, 1.0 if mult_c else None, 1.0)
        if d.init == "native-sidecar":
            w.init_containers.append(
                Container(
                    "cloud-sql-proxy",
                    "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.13.0",
                    ireq,
                    ilim,
                    restart_policy="Always",
                )
            )
        elif d.init == "migrate":
            w.init_containers.append(Container("migrate", main.image, ireq, ilim, args=("migrate", "--up")))
        else:
            w.init_containers.append(
                Container(
                    "wait-for-deps",
                    "docker.io/library/busybox:1.37",
                    ireq,
                    ilim,
                    command=("sh", "-c", "until nc -z db 5432; do sleep 2; done"),
                )
            )
    w.finish()


def generate(nodes: int, pods: int, seed: int = 1, zones: int = 3) -> dict[str, Any]:
    """The whole List as one dict (for tests and small clusters; the CLI streams instead)."""
    with _no_gc():
        return list_object(list(plan_cluster(nodes, pods, seed, zones).items()))


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """The builders make millions of acyclic dicts: the cycle collector only costs time (~2x)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def summarize(cluster: Cluster) -> str:
    """Per band: node count and the spread of cpu/memory/pods requests (non-terminal pods) in %."""
    by: dict[str, list[tuple[float, float, float]]] = {}
    for n in cluster.nodes:
        by.setdefault(n.tier, []).append(
            (100 * n.band_cpu / n.alloc_cpu, 100 * n.band_mem / n.alloc_mem, 100 * n.band_pods / n.alloc_pods)
        )
    lines = [f"{'band':<14}{'nodes':>6}  {'cpu% min/avg/max':>18}  {'mem% min/avg/max':>18}  {'pods% min/avg/max':>18}"]
    for tier in ("heavy", "medium", "light", "cordoned", "control-plane", "gpu"):
        rows = by.get(tier)
        if not rows:
            continue
        cols = []
        for k in range(3):
            vals = [r[k] for r in rows]
            cols.append(f"{min(vals):5.1f}/{sum(vals) / len(vals):5.1f}/{max(vals):5.1f}")
        lines.append(f"{tier:<14}{len(rows):>6}  {cols[0]:>18}  {cols[1]:>18}  {cols[2]:>18}")
    phases: dict[str, int] = {}
    for p in cluster.pods:
        phases[p.phase] = phases.get(p.phase, 0) + 1
    lines.append(
        f"pods: {len(cluster.pods)} ({', '.join(f'{k} {v}' for k, v in sorted(phases.items()))}), "
        f"pdbs: {len(cluster.pdbs)}"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--pods", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--zones", type=int, default=3)
    ap.add_argument("-o", "--output", choices=("json", "yaml"), default="json")
    ap.add_argument("--out", metavar="FILE", help="write here instead of standard output")
    ap.add_argument("--indent", type=int, default=4, help="json indent like kubectl (0: compact, ~5x faster)")
    ap.add_argument("--no-managed-fields", action="store_true", help="leave metadata.managedFields out")
    ap.add_argument("--summary", action="store_true", help="print the per-band utilization to stderr")
    args = ap.parse_args(argv)
    with _no_gc():
        try:
            cluster = plan_cluster(args.nodes, args.pods, args.seed, args.zones)
        except ValueError as e:
            ap.error(str(e))
        if args.summary:
            print(summarize(cluster), file=sys.stderr)
        pending = sum(1 for p in cluster.pods if p.node is None)
        if pending > max(10, len(cluster.pods) // 100):
            print(
                f"warning: {pending} pods did not fit and are Pending; the nodes are too few for --pods",
                file=sys.stderr,
            )
        items = cluster.items(managed_fields=not args.no_managed_fields)
        if args.out:
            with open(args.out, "w", encoding="utf-8", buffering=1 << 20) as f:
                write_list(items, f, args.output, args.indent)
        else:
            try:
                write_list(items, sys.stdout, args.output, args.indent)
                sys.stdout.flush()
            except BrokenPipeError:  # e.g. piped into head: stop quietly, like kubectl
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
