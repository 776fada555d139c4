"""Workloads and pod names, the per-node system pods, and instance types' resources."""

from __future__ import annotations

import random
from typing import Any

from clustergen.plans import Container, NodePlan, Workload, new_uid
from clustergen.units import GI, KUBE_VERSION, SAFE, fmt_cpu

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

