"""The planned cluster's small records (nodes, workloads, pods, PDBs) and the build context."""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from clustergen.units import NOW, PRIORITY_CLASSES, SAFE, parse_cpu, parse_mem


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


