"""Pin the API behaviours of the local control plane that the product's integration tests rely on."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from localcluster import LIMITED_USER, LocalCluster

pytestmark = pytest.mark.integration


def condition(obj: dict[str, Any], kind: str) -> str | None:
    for c in obj.get("status", {}).get("conditions", []):
        if c["type"] == kind:
            return str(c["status"])
    return None


def assert_untouched(cluster: LocalCluster, pod: dict[str, Any]) -> None:
    meta = pod["metadata"]
    now = cluster.get_pod(meta["namespace"], meta["name"])
    assert now is not None, "pod was deleted"
    assert "deletionTimestamp" not in now["metadata"]
    assert now["metadata"]["uid"] == meta["uid"]
    assert now["metadata"]["resourceVersion"] == meta["resourceVersion"]


@pytest.fixture
def node(cluster: LocalCluster, namespace: str) -> str:
    name = f"{namespace}-node"
    cluster.create_node(name)
    return name


def test_node_is_ready_with_allocatable(cluster: LocalCluster, namespace: str) -> None:
    name = f"{namespace}-n1"
    cluster.create_node(name, cpu="8", memory="16Gi", labels={"zone": "a"})
    got = cluster.request("GET", f"/api/v1/nodes/{name}").body
    assert got["status"]["allocatable"] == {"cpu": "8", "memory": "16Gi", "pods": "110"}
    assert got["status"]["capacity"] == {"cpu": "8", "memory": "16Gi", "pods": "110"}
    assert condition(got, "Ready") == "True"
    assert got["metadata"]["labels"]["zone"] == "a"
    assert got["metadata"]["labels"]["kubernetes.io/hostname"] == name
    # TaintNodesByCondition is disabled: no node.kubernetes.io/not-ready taint appears by itself.
    assert not got["spec"].get("taints")
    assert not got["spec"].get("unschedulable")


def test_node_options(cluster: LocalCluster, namespace: str) -> None:
    name = f"{namespace}-n2"
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    cluster.create_node(name, taints=[taint], unschedulable=True, ready=False)
    got = cluster.request("GET", f"/api/v1/nodes/{name}").body
    assert got["spec"]["taints"] == [taint]
    assert got["spec"]["unschedulable"] is True
    assert condition(got, "Ready") == "False"


def test_pod_is_running_on_its_node(cluster: LocalCluster, namespace: str, node: str) -> None:
    cluster.create_pod(namespace, "web-1", node, labels={"app": "web"}, owner_name="web-abc")
    pod = cluster.get_pod(namespace, "web-1")
    assert pod is not None
    assert pod["spec"]["nodeName"] == node
    assert pod["status"]["phase"] == "Running"
    assert pod["status"]["startTime"]
    assert pod["status"]["qosClass"] == "Burstable"
    assert condition(pod, "Ready") == "True"
    assert pod["status"]["containerStatuses"][0]["ready"] is True
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "100m", "memory": "128Mi"}
    (owner,) = pod["metadata"]["ownerReferences"]
    assert (owner["apiVersion"], owner["kind"], owner["name"], owner["controller"]) == (
        "apps/v1",
        "ReplicaSet",
        "web-abc",
        True,
    )
    assert cluster.get_pod(namespace, "does-not-exist") is None


def test_pod_options(cluster: LocalCluster, namespace: str, node: str) -> None:
    toleration = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    cluster.create_pod(
        namespace,
        "bare",
        node,
        owner_kind=None,
        volumes=[{"name": "scratch", "emptyDir": {}}],
        priority=1000,
        annotations={"note": "x"},
        tolerations=[toleration],
    )
    pod = cluster.get_pod(namespace, "bare")
    assert pod is not None
    assert "ownerReferences" not in pod["metadata"]
    assert pod["spec"]["volumes"] == [{"name": "scratch", "emptyDir": {}}]
    assert pod["spec"]["priority"] == 1000
    assert pod["metadata"]["annotations"] == {"note": "x"}
    assert toleration in pod["spec"]["tolerations"]
    cluster.create_pod(namespace, "ds-pod", node, owner_kind="DaemonSet", owner_name="agent")
    cluster.create_pod(namespace, "done", node, phase="Succeeded")
    ds = cluster.get_pod(namespace, "ds-pod")
    done = cluster.get_pod(namespace, "done")
    assert ds is not None and done is not None
    assert ds["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
    assert done["status"]["phase"] == "Succeeded"
    assert condition(done, "Ready") == "False"


def test_pdb_status_is_what_the_eviction_api_reads(cluster: LocalCluster, namespace: str, node: str) -> None:
    cluster.create_pod(namespace, "web-1", node, labels={"app": "web"})
    cluster.create_pod(namespace, "web-2", node, labels={"app": "web"})
    pdb = cluster.create_pdb(namespace, "web", {"app": "web"}, min_available=2)
    assert pdb["status"]["observedGeneration"] == pdb["metadata"]["generation"] == 1
    assert pdb["status"]["disruptionsAllowed"] == 0
    assert pdb["status"]["currentHealthy"] == 2
    assert pdb["status"]["expectedPods"] == 2


def test_eviction_blocked_by_pdb_returns_429(cluster: LocalCluster, namespace: str, node: str) -> None:
    pod = cluster.create_pod(namespace, "web-1", node, labels={"app": "web"})
    cluster.create_pdb(namespace, "web", {"app": "web"}, min_available=1, disruptions_allowed=0)
    r = cluster.evict(namespace, "web-1", uid=pod["metadata"]["uid"])
    assert r.status == 429, r.body
    assert r.body["reason"] == "TooManyRequests"
    assert "disruption budget" in r.body["message"]
    assert_untouched(cluster, pod)


def test_pdb_without_status_blocks_eviction(cluster: LocalCluster, namespace: str, node: str) -> None:
    """No disruption controller: a budget whose status was never written is "still being processed"."""
    pod = cluster.create_pod(namespace, "web-1", node, labels={"app": "web"})
    r = cluster.request(
        "POST",
        f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"maxUnavailable": 5, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    assert r.status == 201, r.body
    assert r.body["status"].get("observedGeneration", 0) == 0
    r = cluster.evict(namespace, "web-1")
    assert r.status == 429, r.body
    assert "still being processed" in str(r.body["details"]["causes"])
    assert_untouched(cluster, pod)


def test_eviction_allowed_by_pdb_consumes_a_disruption(cluster: LocalCluster, namespace: str, node: str) -> None:
    pod = cluster.create_pod(namespace, "web-1", node, labels={"app": "web"})
    cluster.create_pod(namespace, "web-2", node, labels={"app": "web"})
    cluster.create_pdb(namespace, "web", {"app": "web"}, min_available=1, disruptions_allowed=1)
    r = cluster.evict(namespace, "web-1", uid=pod["metadata"]["uid"])
    assert r.status == 201, r.body
    pdb = cluster.request("GET", f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/web").body
    assert pdb["status"]["disruptionsAllowed"] == 0
    assert "web-1" in pdb["status"]["disruptedPods"]
    r = cluster.evict(namespace, "web-2")
    assert r.status == 429, r.body


def test_eviction_with_wrong_uid_returns_409(cluster: LocalCluster, namespace: str, node: str) -> None:
    pod = cluster.create_pod(namespace, "solo", node)
    r = cluster.evict(namespace, "solo", uid="00000000-0000-0000-0000-000000000000")
    assert r.status == 409, r.body
    assert r.body["reason"] == "Conflict"
    assert "the UID in the precondition" in r.body["message"]
    assert_untouched(cluster, pod)


def test_pdb_is_checked_before_the_uid_precondition(cluster: LocalCluster, namespace: str, node: str) -> None:
    """A wrong UID on a pod whose budget allows no disruption yields 429, not 409."""
    pod = cluster.create_pod(namespace, "web-1", node, labels={"app": "web"})
    cluster.create_pdb(namespace, "web", {"app": "web"})
    r = cluster.evict(namespace, "web-1", uid="00000000-0000-0000-0000-000000000000")
    assert r.status == 429, r.body
    assert_untouched(cluster, pod)


def test_unready_pod_is_evictable_when_budget_is_healthy(cluster: LocalCluster, namespace: str, node: str) -> None:
    """Default unhealthyPodEvictionPolicy (IfHealthyBudget): disruptionsAllowed=0 does not protect an unready pod
    while currentHealthy >= desiredHealthy."""
    cluster.create_pod(namespace, "web-1", node, labels={"app": "web"})
    cluster.create_pod(namespace, "web-2", node, labels={"app": "web"})
    pod = cluster.get_pod(namespace, "web-2")
    assert pod is not None
    for c in pod["status"]["conditions"]:
        if c["type"] in ("Ready", "ContainersReady"):
            c["status"] = "False"
    assert cluster.request("PUT", f"/api/v1/namespaces/{namespace}/pods/web-2/status", pod).ok
    pdb = cluster.create_pdb(namespace, "web", {"app": "web"}, min_available=1, disruptions_allowed=0)
    assert (pdb["status"]["currentHealthy"], pdb["status"]["desiredHealthy"]) == (1, 1)
    assert cluster.evict(namespace, "web-1").status == 429
    assert cluster.evict(namespace, "web-2").status == 201


def test_eviction_with_right_uid_terminates_the_pod(cluster: LocalCluster, namespace: str, node: str) -> None:
    pod = cluster.create_pod(namespace, "solo", node)
    r = cluster.evict(namespace, "solo", uid=pod["metadata"]["uid"])
    assert r.status == 201, r.body
    assert r.body["status"] == "Success"
    after = cluster.get_pod(namespace, "solo")
    # A bound, running pod is deleted gracefully: with no kubelet to confirm, it stays terminating.
    assert after is not None
    assert after["metadata"]["deletionTimestamp"]
    assert after["metadata"]["deletionGracePeriodSeconds"] == 30
    assert condition(after, "DisruptionTarget") == "True"
    # Evicting it again is accepted too: a terminating pod bypasses PDB checks.
    assert cluster.evict(namespace, "solo").status == 201


def test_eviction_of_unbound_pod_deletes_it(cluster: LocalCluster, namespace: str) -> None:
    pod = cluster.create_pod(namespace, "pending", None, phase="Pending")
    r = cluster.evict(namespace, "pending", uid=pod["metadata"]["uid"])
    assert r.status == 201, r.body
    assert cluster.get_pod(namespace, "pending") is None


def test_eviction_dry_run_leaves_the_pod_alone(cluster: LocalCluster, namespace: str, node: str) -> None:
    pod = cluster.create_pod(namespace, "solo", node)
    r = cluster.evict(namespace, "solo", uid=pod["metadata"]["uid"], dry_run=True)
    assert r.status == 201, r.body
    assert_untouched(cluster, pod)


def test_eviction_dry_run_still_checks_pdb(cluster: LocalCluster, namespace: str, node: str) -> None:
    pod = cluster.create_pod(namespace, "web-1", node, labels={"app": "web"})
    cluster.create_pdb(namespace, "web", {"app": "web"})
    r = cluster.evict(namespace, "web-1", dry_run=True)
    assert r.status == 429, r.body
    assert_untouched(cluster, pod)


def test_limited_user_is_forbidden_to_evict(cluster: LocalCluster, namespace: str, node: str) -> None:
    pod = cluster.create_pod(namespace, "solo", node)
    r = cluster.evict(namespace, "solo", uid=pod["metadata"]["uid"], user=LIMITED_USER)
    assert r.status == 403, r.body
    assert r.body["reason"] == "Forbidden"
    assert 'User "limited" cannot create resource "pods/eviction"' in r.body["message"]
    assert_untouched(cluster, pod)


def test_kubectl_get_all_kinds(cluster: LocalCluster, namespace: str, node: str) -> None:
    cluster.create_pod(namespace, "web-1", node, labels={"app": "web"})
    cluster.create_pdb(namespace, "web", {"app": "web"})
    proc = cluster.kubectl("get", "nodes,pods,pdb", "-A", "-o", "yaml")
    assert proc.returncode == 0, proc.stderr
    items = yaml.safe_load(proc.stdout)["items"]
    found = {(i["kind"], i["metadata"]["name"]) for i in items}
    assert {("Node", node), ("Pod", "web-1"), ("PodDisruptionBudget", "web")} <= found
    denied = cluster.kubectl("get", "pods", "-n", namespace, user=LIMITED_USER)
    assert denied.returncode != 0
    assert "Forbidden" in denied.stderr


def test_kubeconfig_works_with_the_python_client(cluster: LocalCluster, namespace: str, node: str) -> None:
    from kubernetes import client

    api = client.CoreV1Api(cluster.api_client())
    assert cluster.api_client().configuration.verify_ssl is True
    names = [n.metadata.name for n in api.list_node().items]
    assert node in names
    limited = client.CoreV1Api(cluster.api_client(LIMITED_USER))
    with pytest.raises(client.ApiException) as err:
        limited.list_namespaced_pod(namespace)
    assert err.value.status == 403
