"""Actual usage against a real kube-apiserver: Koordinator's NodeMetric (LowNodeLoad) and metrics.k8s.io
(LowNodeUtilization --use-metrics). Koordinator's own CRD is installed (from its Go module when it can be had);
metrics-server cannot run without kubelets, so its API's paths and shapes are served by CRDs
(tests/cluster/crds/metrics-k8s-io.yaml). Before they are installed, both commands must stop with one line naming
what is missing."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from desched import as_json, desched
from koordinator import crd_manifest
from localcluster import now_rfc3339

pytestmark = pytest.mark.integration

CRDS = Path(__file__).resolve().parents[1] / "cluster" / "crds"
NODEMETRICS = "/apis/slo.koordinator.sh/v1alpha1/nodemetrics"
METRICS_NODES = "/apis/metrics.k8s.io/v1beta1/nodes"
METRICS_PODS = "/apis/metrics.k8s.io/v1beta1/pods"
CRD_NAMES = ("nodemetrics.slo.koordinator.sh", "nodes.metrics.k8s.io", "pods.metrics.k8s.io")


def _wait(cluster: Any, paths: tuple[str, ...], served: bool, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(cluster.request("GET", p).ok == served for p in paths):
            return
        time.sleep(0.2)
    raise AssertionError(f"{paths} still {'not ' if served else ''}served after {timeout}s")


@pytest.fixture(scope="module")
def before_and_after(cluster: Any) -> dict[str, subprocess.CompletedProcess[str]]:
    """The commands' answers while the APIs are absent; then the CRDs are installed and served."""
    for name in CRD_NAMES:
        cluster.request("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
    _wait(cluster, (NODEMETRICS, METRICS_NODES, METRICS_PODS), served=False)
    kc = cluster.kubeconfig_for()
    answers = {
        "LowNodeLoad": desched(kc, "balance", "--plugin", "LowNodeLoad", "-A", "--dry-run=client"),
        "use-metrics": desched(kc, "balance", "--use-metrics", "-A", "--dry-run=client"),
    }
    for manifest in (crd_manifest("slo.koordinator.sh_nodemetrics.yaml"), CRDS / "metrics-k8s-io.yaml"):
        applied = cluster.kubectl("apply", "--server-side", "-f", str(manifest))
        assert applied.returncode == 0, applied.stderr
    _wait(cluster, (NODEMETRICS, METRICS_NODES, METRICS_PODS), served=True)
    return answers


def test_missing_apis_stop_with_one_line_naming_the_add_on(before_and_after: dict[str, Any]) -> None:
    for key, add_on in (("LowNodeLoad", "install Koordinator"), ("use-metrics", "install metrics-server")):
        proc = before_and_after[key]
        assert proc.returncode == 1
        (line,) = proc.stderr.strip().splitlines()
        assert line.startswith("error: ") and add_on in line and "Traceback" not in proc.stderr


def _hot_and_cool(cluster: Any, ns: str) -> list[str]:
    """By requests both nodes are light (hot: 6 x 200m of 4 cores); by actual usage the hot one is at 87.5%."""
    labels = {"metrics-test": ns}
    for node in ("hot", "cool"):
        cluster.create_node(f"{ns}-{node}", labels=labels)
    for i in range(6):
        cluster.create_pod(ns, f"busy-{i}", f"{ns}-hot", cpu="200m", memory="64Mi", owner_name="busy-rs")
    cluster.create_pod(ns, "calm", f"{ns}-cool", cpu="200m", memory="64Mi", owner_name="calm-rs")
    usage = {f"busy-{i}": "500m" for i in range(6)} | {"calm": "100m"}
    system = {"hot": "500m", "cool": "200m"}
    stamp = now_rfc3339()
    for node in ("hot", "cool"):
        name = f"{ns}-{node}"
        mine = [p for p in usage if p.startswith("busy") == (node == "hot")]
        cluster._must("POST", NODEMETRICS, {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
                                            "metadata": {"name": name}, "spec": {}})
        obj = cluster._must("GET", f"{NODEMETRICS}/{name}")
        obj["status"] = {
            "updateTime": stamp,
            "nodeMetric": {"systemUsage": {"resources": {"cpu": system[node], "memory": "500Mi"}}},
            "podsMetric": [{"namespace": ns, "name": p, "podUsage": {"resources": {"cpu": usage[p], "memory": "64Mi"}}}
                           for p in mine],
        }
        cluster._must("PUT", f"{NODEMETRICS}/{name}/status", obj)
        total = sum(int(usage[p][:-1]) for p in mine) + int(system[node][:-1])  # millicores
        cluster._must("POST", METRICS_NODES, {"apiVersion": "metrics.k8s.io/v1beta1", "kind": "NodeMetrics",
                                              "metadata": {"name": name}, "timestamp": stamp, "window": "20s",
                                              "usage": {"cpu": f"{total}m", "memory": "1Gi"}})
        for p in mine:
            cluster._must("POST", f"/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods",
                          {"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics",
                           "metadata": {"name": p, "namespace": ns}, "timestamp": stamp, "window": "20s",
                           "containers": [{"name": "main", "usage": {"cpu": usage[p], "memory": "64Mi"}}]})
    return ["--node-selector", f"metrics-test={ns}", "-n", ns]


def test_low_node_load_moves_pods_off_the_node_hot_by_load(before_and_after: Any, cluster: Any, namespace: str,
                                                          tmp_path: Path) -> None:
    scope = _hot_and_cool(cluster, namespace)
    kc = cluster.kubeconfig_for()
    by_requests = as_json(desched(kc, "balance", *scope, "--dry-run=client", "-o", "json"))
    assert by_requests["candidates"] == []

    live = desched(kc, "balance", "--plugin", "LowNodeLoad", *scope, "--dry-run=client", "-o", "json")
    assert live.returncode == 0, live.stderr
    doc = as_json(live)
    # 3500m of 4000m; one 500m pod brings it to 3000m, which is not above 75%. (Of equal pods Koordinator takes
    # the newest, so which one depends on creation seconds.)
    chosen = [c["pod"] for c in doc["candidates"]]
    assert len(chosen) == 1 and chosen[0].startswith("busy-")
    assert doc["candidates"][0]["reason"] == "node load above high threshold: cpu 87.5% > 75%"
    hot = next(n for n in doc["nodes"] if n["name"] == f"{namespace}-hot")
    assert (hot["basis"], hot["now"]["cpu"], hot["after"]["cpu"]) == ("load from NodeMetric", 87.5, 75.0)

    # The same decisions from a snapshot taken with the real kubectl.
    snap = tmp_path / "snap.yaml"
    objs = cluster.kubectl("get", "nodes,pods,nodemetrics.slo.koordinator.sh", "-A", "-o", "yaml")
    assert objs.returncode == 0, objs.stderr
    snap.write_text(objs.stdout)
    offline = as_json(desched(kc, "balance", "--plugin", "LowNodeLoad", "--from-file", str(snap),
                              "--node-selector", f"metrics-test={namespace}", "-n", namespace, "-o", "json"))
    assert [c["pod"] for c in offline["candidates"]] == chosen

    evicted = desched(kc, "balance", "--plugin", "LowNodeLoad", *scope, "--yes", "-o", "json")
    assert evicted.returncode == 0, evicted.stderr
    assert [(e["pod"], e["result"]) for e in as_json(evicted)["evictions"]] == [(chosen[0], "evicted")]
    for i in range(6):
        pod = cluster.get_pod(namespace, f"busy-{i}")
        terminating = pod is None or bool(pod["metadata"].get("deletionTimestamp"))
        assert terminating == (f"busy-{i}" == chosen[0])


def test_low_node_utilization_by_metrics_server_usage(before_and_after: Any, cluster: Any, namespace: str) -> None:
    scope = _hot_and_cool(cluster, namespace)
    proc = desched(cluster.kubeconfig_for(), "balance", "--use-metrics", *scope, "--dry-run=client", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    doc = as_json(proc)
    # Default targets 50%: 3500m -> each 500m pod moved; back to 2000m (50%) after three.
    assert [c["pod"] for c in doc["candidates"]] == ["busy-0", "busy-1", "busy-2"]
    hot = next(n for n in doc["nodes"] if n["name"] == f"{namespace}-hot")
    assert hot["basis"] == "usage from metrics.k8s.io" and hot["now"]["cpu"] == 87.5
