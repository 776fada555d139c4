"""Node objects built from their plans, and the node plan of an instance type."""

from __future__ import annotations

import json
import random
from typing import Any

from clustergen.managed import managed
from clustergen.plans import Ctx, NodePlan, new_uid
from clustergen.units import DAY, KUBE_VERSION, REGION, image_id, ts

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


