"""The system workloads every cluster runs: node-local DNS, CoreDNS, metrics-server and friends."""

from __future__ import annotations

import math
import random

from clustergen.plans import Container, Workload
from clustergen.workloads import new_workload


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


