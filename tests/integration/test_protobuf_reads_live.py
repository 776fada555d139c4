"""With --protobuf, pods and nodes are asked for as protobuf, and the real kube-apiserver answers in protobuf; the
same LIST read as JSON (the default) gives the same model, object by object, for objects that set every field the
model reads (affinity of each kind, spread constraints with every option, tolerations with and without seconds,
each volume kind, init containers and a sidecar, pod-level resources, claims, a terminating pod, a condition without
its time, taints with a time, a node with capacity only), and the same plan byte for byte (`-o json` but for
madeAt)."""

from __future__ import annotations

import json
import time
from typing import Any

import msgspec
import pytest
from desched import as_json, desched
from localcluster import LocalCluster

from kubectl_desched.kube.config import Connection, KubeOptions, connect
from kubectl_desched.kube.live import read_cluster
from kubectl_desched.kube.overrides import ConnectionFlags

pytestmark = pytest.mark.integration

NOW = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
SELECTOR = {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In",
                                                                 "values": ["b", "a"]}]}


def _rich_pod(node: str, claim: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "rich", "labels": {"zz": "1", "app": "web", "tier": "a", "mm": "2"},
        "annotations": {"b": "2", "a": "1"}, "finalizers": ["kubectl-desched.test/keep"],
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1",
             "uid": "4b1b9d5e-0000-4000-8000-000000000001", "controller": True, "blockOwnerDeletion": True},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "other",
             "uid": "4b1b9d5e-0000-4000-8000-000000000002"}]},
        "spec": {
            "nodeName": node, "priorityClassName": "", "schedulerName": "custom-scheduler",
            "nodeSelector": {"zone": "b", "disk": "ssd"},
            "resources": {"requests": {"cpu": "300m", "memory": "256Mi"}, "limits": {"cpu": "1"}},
            "initContainers": [
                {"name": "init", "image": "busybox:1", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
                {"name": "sidecar", "image": "proxy:2", "restartPolicy": "Always",
                 "resources": {"requests": {"cpu": "50m"}}}],
            "containers": [
                {"name": "main", "image": "web:1", "resources": {"requests": {"cpu": "100m", "memory": "128Mi",
                                                                              "ephemeral-storage": "1Gi"},
                                                                 "limits": {"memory": "256Mi"}}},
                {"name": "second", "image": "web:2"}],
            "volumes": [
                {"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
                {"name": "plain", "emptyDir": {}},
                {"name": "host", "hostPath": {"path": "/var/log"}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}},
                {"name": "config", "configMap": {"name": "cfg"}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
            "tolerations": [
                {"operator": "Exists"},
                {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                 "tolerationSeconds": 0},
                {"key": "gone", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b", "a"]},
                                              {"key": "gpu", "operator": "DoesNotExist"}]},
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]},
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 7, "preference": {"matchExpressions": [
                            {"key": "cores", "operator": "Gt", "values": ["4"]}]}}]},
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": SELECTOR, "topologyKey": "zone", "namespaces": ["a", "b"]}]},
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists"}]},
                        "topologyKey": "kubernetes.io/hostname", "matchLabelKeys": ["pod-template-hash"]}}]}},
            "topologySpreadConstraints": [
                {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": SELECTOR,
                 "minDomains": 3, "nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor",
                 "matchLabelKeys": ["pod-template-hash"]},
                {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}]}}


def _rich_status(pod: dict[str, Any]) -> dict[str, Any]:
    status = dict(pod.get("status") or {})
    status.update(phase="Running", reason="Because", startTime=NOW, conditions=[
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": NOW},
        {"type": "Ready", "status": "False", "reason": "ContainersNotReady", "lastTransitionTime": NOW},
        {"type": "Custom", "status": "Unknown"}],  # no time: JSON writes null, protobuf Go's zero time
        initContainerStatuses=[
            {"name": "init", "image": "busybox:1", "imageID": "", "ready": False, "restartCount": 2,
             "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": NOW, "finishedAt": NOW}}},
            {"name": "sidecar", "image": "proxy:2", "imageID": "", "ready": True, "restartCount": 0,
             "state": {"running": {"startedAt": NOW}}}],
        containerStatuses=[
            {"name": "main", "image": "web:1", "imageID": "", "ready": False, "restartCount": 7,
             "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
            {"name": "second", "image": "web:2", "imageID": "", "ready": False, "restartCount": 1,
             "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": NOW,
                                      "finishedAt": NOW}}}])
    return status


def _node(name: str, *, allocatable: bool) -> dict[str, Any]:
    resources = {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    status: dict[str, Any] = {"capacity": resources, "nodeInfo": {
        "machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "", "osImage": "",
        "containerRuntimeVersion": "", "kubeletVersion": "v1.36.3", "kubeProxyVersion": "", "operatingSystem": "linux",
        "architecture": "amd64"}, "conditions": [
        {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": NOW, "lastTransitionTime": NOW},
        {"type": "Ready", "status": "True", "lastHeartbeatTime": NOW, "lastTransitionTime": NOW}]}
    if allocatable:
        status["allocatable"] = {**resources, "cpu": "7500m"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"zone": "b", "disk": "ssd"}},
            "spec": {"unschedulable": not allocatable, "taints": [
                {"key": "dedicated", "value": "web", "effect": "NoSchedule"},
                {"key": "gone", "effect": "NoExecute", "timeAdded": NOW}]}, "status": status}


def _must(cluster: LocalCluster, method: str, path: str, body: Any) -> dict[str, Any]:
    r = cluster.request(method, path, body)
    assert r.ok, f"{method} {path} -> {r.status}: {r.body}"
    return r.body  # type: ignore[no-any-return]


def _objects(cluster: LocalCluster, namespace: str) -> list[str]:
    """The rich objects, created through the API (which fills in its defaults) with the status a kubelet reports."""
    nodes = [f"{namespace}-a", f"{namespace}-b"]
    for name, allocatable in zip(nodes, (True, False), strict=True):
        node = _must(cluster, "POST", "/api/v1/nodes", _node(name, allocatable=allocatable))
        node["status"] = _node(name, allocatable=allocatable)["status"]
        _must(cluster, "PUT", f"/api/v1/nodes/{name}/status", node)
    base = f"/api/v1/namespaces/{namespace}/pods"
    pod = _must(cluster, "POST", base, _rich_pod(nodes[0], "claim-0"))
    pod["status"] = _rich_status(pod)
    _must(cluster, "PUT", f"{base}/rich/status", pod)
    _must(cluster, "DELETE", f"{base}/rich", None)  # its finalizer keeps it, terminating: deletionTimestamp set
    cluster.create_pod(namespace, "plain", nodes[1], owner_kind=None, phase="Pending")
    for i in range(3):
        cluster.create_pod(namespace, f"replica-{i}", nodes[i % 2], labels={"app": "web", "tier": "b"},
                           owner_name="web-1", priority=1000)
    return nodes


def _read(conn: Connection, namespace: str, nodes: list[str]) -> tuple[list[Any], list[Any], list[tuple[str, ...]]]:
    """The namespace's pods and the test's nodes as the model, and what each LIST asked for and got."""
    seen: list[tuple[str, ...]] = []
    call_api = conn.api.call_api

    def spy(method: str, url: str, header_params: dict[str, str] | None = None, **kw: Any) -> Any:
        resp = call_api(method, url, header_params=header_params, **kw)
        seen.append((url.split("?")[0], (header_params or {}).get("Accept", ""), resp.getheader("Content-Type")))
        return resp

    conn.api.call_api = spy  # type: ignore[method-assign]
    state = read_cluster(conn)
    pods = [p for p in state.pods if p.namespace == namespace]
    return pods, [n for name, n in state.nodes.items() if name in nodes], seen


def _cleanup(cluster: LocalCluster, namespace: str, nodes: list[str]) -> None:
    path = f"/api/v1/namespaces/{namespace}/pods/rich"
    cluster.request("PATCH", path, {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")
    for name in nodes:
        cluster.request("DELETE", f"/api/v1/nodes/{name}")


def test_pods_and_nodes_read_as_protobuf_are_the_model_json_gives(cluster: LocalCluster, namespace: str) -> None:
    nodes = _objects(cluster, namespace)
    try:
        kubeconfig = str(cluster.kubeconfig_for())
        pb_pods, pb_nodes, pb_seen = _read(connect(KubeOptions(kubeconfig=kubeconfig,
                                                               flags=ConnectionFlags(protobuf=True))),
                                           namespace, nodes)
        js_pods, js_nodes, js_seen = _read(connect(KubeOptions(kubeconfig=kubeconfig)), namespace, nodes)
    finally:
        _cleanup(cluster, namespace, nodes)
    for path in ("/api/v1/pods", "/api/v1/nodes"):  # a page or more (the shared cluster holds other tests' pods)
        # every page asked for and answered as protobuf: none read again as JSON
        assert {s[1:] for s in pb_seen if s[0].endswith(path)} == {
            ("application/vnd.kubernetes.protobuf, application/json", "application/vnd.kubernetes.protobuf")}
        assert {s[1:] for s in js_seen if s[0].endswith(path)} == {("application/json", "application/json")}
    assert sorted(p.name for p in pb_pods) == ["plain", "replica-0", "replica-1", "replica-2", "rich"]
    rich = next(p for p in pb_pods if p.name == "rich")
    assert rich.terminating and rich.affinity and len(rich.spread_constraints) == 2 and rich.has_resource_claims
    assert list(rich.labels) == ["app", "mm", "tier", "zz"]  # in the key order Go's JSON writes
    assert rich.local_volumes == ("emptyDir scratch", "emptyDir plain", "hostPath host")
    assert rich.pvc_claims == ("data-0",)
    assert len(pb_nodes) == 2 and {n.unschedulable for n in pb_nodes} == {True, False}
    to = msgspec.to_builtins
    for ours, theirs in ((pb_pods, js_pods), (pb_nodes, js_nodes)):
        for a, b in zip(ours, theirs, strict=True):
            assert to(a) == to(b)
        assert [json.dumps(to(o)) for o in ours] == [json.dumps(to(o)) for o in theirs]  # and in the same order


def test_a_plan_made_of_protobuf_is_the_plan_made_of_json(cluster: LocalCluster, namespace: str) -> None:
    nodes = _objects(cluster, namespace)
    try:
        kubeconfig = cluster.kubeconfig_for()
        args = ["balance", "-n", namespace, "--nodes", ",".join(nodes), "--dry-run=client", "-o", "json",
                "--thresholds", "cpu=20,memory=20,pods=20", "--target-thresholds", "cpu=50,memory=50,pods=50"]
        plans = [as_json(desched(kubeconfig, *args, *extra)) for extra in (["--protobuf"], [])]
    finally:
        _cleanup(cluster, namespace, nodes)
    for plan in plans:
        plan["identity"].pop("madeAt")
    plans[0]["identity"]["arguments"].remove("--protobuf")
    assert len(plans[0]["nodes"]) == 2
    assert json.dumps(plans[0]) == json.dumps(plans[1])


def test_a_refusal_written_as_protobuf_says_what_the_server_said(cluster: LocalCluster, namespace: str) -> None:
    """The apiserver writes its error Status in the read's encoding: --protobuf gets it as protobuf, and the line
    says the same as the JSON read's."""
    limited = cluster.kubeconfig_for("limited")  # no RBAC binding: every list is refused
    refused = [desched(limited, "balance", "-n", namespace, "--dry-run=client", *extra) for extra in (["--protobuf"],
                                                                                                     [])]
    assert [p.returncode for p in refused] == [1, 1]
    assert refused[0].stderr == refused[1].stderr
    assert refused[0].stderr.count("\n") == 1, refused[0].stderr
    assert 'forbidden (403): nodes is forbidden: User "limited" cannot list resource "nodes"' in refused[0].stderr
