"""LowNodeUtilization --use-metrics against the real metrics-server, on the simulated cluster: kwok emulates each
kubelet's /metrics/resource from the pods' kwok.x-k8s.io/usage-* annotations, metrics-server scrapes it and serves
metrics.k8s.io through the apiserver's aggregation layer. (test_metrics_live.py serves the same API's shapes from
CRDs on the fast cluster, where no Go build beyond the apiserver is needed.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from desched import as_json, desched
from simcluster import SimCluster, deployment, wait_until

from tests.gobuilds import built

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def metrics_sim(sim: SimCluster) -> Iterator[SimCluster]:
    sim.start_metrics_server(built("build-metrics-server", "metrics-server"))
    yield sim


def _millicores(text: str) -> float:
    if text.endswith("n"):
        return float(text[:-1]) / 1e6
    if text.endswith("u"):
        return float(text[:-1]) / 1e3
    if text.endswith("m"):
        return float(text[:-1])
    return float(text) * 1000


def _node_cpu(sim: SimCluster, node: str) -> float:
    r = sim.request("GET", f"/apis/metrics.k8s.io/v1beta1/nodes/{node}")
    return _millicores(r.body["usage"]["cpu"]) if r.ok else -1.0


def _pods_measured(sim: SimCluster, ns: str) -> set[str]:
    r = sim.request("GET", f"/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods")
    return {p["metadata"]["name"] for p in r.body["items"]} if r.ok else set()


def test_use_metrics_reads_the_real_metrics_server_and_the_cluster_cools_down(metrics_sim: SimCluster,
                                                                              sim_namespace: str) -> None:
    sim, ns = metrics_sim, sim_namespace
    pin = {"sim-test": ns}
    (hot,) = sim.add_nodes([f"{ns}-hot"], labels=pin)
    # By requests both nodes are light (hot: 6 x 200m of 4 cores = 30%); by usage hot is at 67.5%. The busy pods
    # are on hot because it was the only node when they came; their replacements may go anywhere.
    sim.apply(deployment(ns, "busy", 6, cpu="200m", memory="64Mi", usage=("450m", "64Mi"), node_selector=pin))
    sim.wait_workloads_ready(ns)
    (cool,) = sim.add_nodes([f"{ns}-cool"], labels=pin)
    sim.apply(deployment(ns, "calm", 1, cpu="200m", memory="64Mi", usage=("100m", "64Mi"),
                         node_selector={"kubernetes.io/hostname": cool}))
    sim.wait_workloads_ready(ns)
    pods = set(sim.placements(ns))
    wait_until(lambda: _pods_measured(sim, ns) >= pods and _node_cpu(sim, hot) >= 2650, 90,
               "metrics-server reporting every pod and the hot node's usage")
    assert _node_cpu(sim, hot) == pytest.approx(2700, abs=50)  # the sum of its pods' annotations
    assert _node_cpu(sim, cool) == pytest.approx(100, abs=20)

    kc, scope = sim.kubeconfig_for(), ["--node-selector", f"sim-test={ns}", "-n", ns]
    by_requests = as_json(desched(kc, "balance", *scope, "--dry-run=client", "-o", "json"))
    assert by_requests["candidates"] == []
    plan = as_json(desched(kc, "balance", "--use-metrics", *scope, "--dry-run=client", "-o", "json"))
    nodes: dict[str, Any] = {n["name"]: n for n in plan["nodes"]}
    assert nodes[hot]["basis"] == "usage from metrics.k8s.io"
    assert nodes[hot]["now"]["cpu"] == pytest.approx(67.5, abs=1.5)
    assert nodes[hot]["class"] == {"LowNodeUtilization": "over-utilized"}
    assert nodes[cool]["class"] == {"LowNodeUtilization": "under-utilized"}
    # 2700m -> 2250m -> 1800m: two 450m pods bring it under the 50% target (rates measured from kwok's counters
    # come out a little above the annotations, so no step lands on 50% exactly)
    planned = [c["pod"] for c in plan["candidates"]]
    assert len(planned) == 2 and {c["node"] for c in plan["candidates"]} == {hot}

    done = desched(kc, "balance", "--use-metrics", *scope, "--yes", "-o", "json", "--timeout", "1m")
    assert done.returncode == 0, done.stderr
    assert {e["pod"]: e["result"] for e in as_json(done)["evictions"]} == dict.fromkeys(planned, "evicted")
    sim.wait_workloads_ready(ns)
    assert list(sim.placements(ns).values()).count(hot) == 4  # the scheduler sent both replacements to cool
    # metrics-server sees the move within a scrape or two; then nothing is over the target by usage either
    wait_until(lambda: 0 <= _node_cpu(sim, hot) <= 1850 and _pods_measured(sim, ns) >= set(sim.placements(ns)),
               90, "metrics-server reporting the hot node cooled down")
    again = as_json(desched(kc, "balance", "--use-metrics", *scope, "--dry-run=client", "-o", "json"))
    assert again["candidates"] == []
    assert {n["name"]: n["now"]["cpu"] for n in again["nodes"]} == pytest.approx({hot: 45.0, cool: 25.0}, abs=1.5)
