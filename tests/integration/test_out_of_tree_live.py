"""The out-of-tree RemovePodsFromCordonedNodes plugin (plugins/kubectl-desched-cordoned, installed by scripts/test)
against a real kube-apiserver: a node cordoned through the API is drained with confirmed Eviction API calls, within
the limits, with DefaultEvictor's protections and the PodDisruptionBudget honoured."""

from __future__ import annotations

from typing import Any

import pytest
from desched import as_json, desched

pytestmark = pytest.mark.integration
PLUGIN = "RemovePodsFromCordonedNodes"


def _terminating(cluster: Any, ns: str, name: str) -> bool:
    pod = cluster.get_pod(ns, name)
    return pod is None or bool(pod["metadata"].get("deletionTimestamp"))


def test_cordoned_node_is_drained_by_the_installed_plugin(cluster: Any, namespace: str) -> None:
    ns = namespace
    cordoned, healthy = f"{ns}-cordoned", f"{ns}-healthy"
    cluster.create_node(healthy, labels={"desched-test": ns})
    cluster.create_node(cordoned, labels={"desched-test": ns})
    for i in range(3):
        cluster.create_pod(ns, f"web-{i}", cordoned, labels={"app": "web"}, owner_name="web-rs")
    cluster.create_pod(ns, "db-0", cordoned, labels={"app": "db"}, owner_kind="StatefulSet", owner_name="db")
    cluster.create_pod(ns, "agent", cordoned, owner_kind="DaemonSet", owner_name="agent")
    cluster.create_pod(ns, "api-0", healthy, owner_name="api-rs")
    cluster.create_pdb(ns, "db", {"app": "db"}, min_available=1, disruptions_allowed=0)
    scope = ["--node-selector", f"desched-test={ns}", "-n", ns, "--plugin", PLUGIN]

    before = as_json(desched(cluster.kubeconfig_for(), "deschedule", *scope, "--dry-run=client", "-o", "json"))
    assert before["candidates"] == []  # not cordoned yet
    cordon = cluster.kubectl("cordon", cordoned)
    assert cordon.returncode == 0, cordon.stderr

    # db-0's budget is spent: the plan keeps it and takes the next pod, as upstream's real run goes on after a 429
    proc = desched(cluster.kubeconfig_for(), "deschedule", *scope, "--max-pods-per-node", "3", "--yes",
                   "--timeout", "0", "-o", "json")
    doc = as_json(proc)
    assert [(c["pod"], c["plugin"], c["reason"]) for c in doc["candidates"]] == [
        (name, PLUGIN, "node is cordoned (spec.unschedulable)") for name in ("web-0", "web-1", "web-2")]
    assert {e["pod"]: e["result"] for e in doc["evictions"]} == dict.fromkeys(("web-0", "web-1", "web-2"), "evicted")
    assert proc.returncode == 0, proc.stderr
    assert all(_terminating(cluster, ns, name) for name in ("web-0", "web-1", "web-2"))
    for name in ("db-0", "agent", "api-0"):  # the PDB, a DaemonSet pod, a healthy node
        assert not _terminating(cluster, ns, name)
