"""A real Prometheus in the simulated cluster (tests/cluster/build-prometheus): it scrapes the kubelet metrics
kwok emulates from the pods' kwok.x-k8s.io/usage-* annotations, and a recording rule makes the per-node ratio
that LowNodeUtilization's `metricsUtilization.source: Prometheus` queries, reached by its URL."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from desched import as_json, desched
from simcluster import PROMETHEUS_QUERY, SimCluster, deployment, wait_until

from tests.gobuilds import built

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def prometheus_sim(sim: SimCluster) -> Iterator[SimCluster]:
    sim.start_prometheus(built("build-prometheus", "prometheus"))
    yield sim


def test_the_recording_rule_is_each_node_s_usage_over_its_allocatable(prometheus_sim: SimCluster,
                                                                      sim_namespace: str) -> None:
    sim, ns = prometheus_sim, sim_namespace
    pin = {"sim-test": ns}
    (hot,) = sim.add_nodes([f"{ns}-hot"], labels=pin)  # 4 cores
    sim.apply(deployment(ns, "busy", 4, cpu="100m", memory="64Mi", usage=("500m", "64Mi"), node_selector=pin))
    sim.wait_workloads_ready(ns)
    wait_until(lambda: sim.prometheus_values().get(hot, 0.0) > 0.45, 90, f"{PROMETHEUS_QUERY} of {hot} near 0.5")
    assert sim.prometheus_values()[hot] == pytest.approx(0.5, abs=0.05)  # 4 x 500m of 4 cores

    cool = sim.add_nodes([f"{ns}-cool"], labels=pin)[0]
    sim.apply(deployment(ns, "calm", 1, cpu="100m", memory="64Mi", usage=("200m", "64Mi"),
                         node_selector={"kubernetes.io/hostname": cool}))
    sim.wait_workloads_ready(ns)
    wait_until(lambda: sim.prometheus_values().get(cool, 0.0) > 0.0, 90, f"{PROMETHEUS_QUERY} of {cool}")

    # By requests both nodes are light; by the query hot is at 50% and cool at 5%: the default thresholds
    # (MetricResource 20/50) make hot over-utilized once its value is over 50%, so the target is 40% here.
    kc = sim.kubeconfig_for()
    scope = ["--node-selector", f"sim-test={ns}", "-n", ns, "--prometheus-url", sim.prometheus_url,
             "--prometheus-query", PROMETHEUS_QUERY, "--target-thresholds", "MetricResource=40"]
    plan = as_json(desched(kc, "balance", *scope, "--dry-run=client", "-o", "json"))
    nodes: dict[str, Any] = {n["name"]: n for n in plan["nodes"]}
    assert nodes[hot]["class"] == {"LowNodeUtilization": "over-utilized"}, nodes[hot]
    assert nodes[cool]["class"] == {"LowNodeUtilization": "under-utilized"}, nodes[cool]
    assert [c["node"] for c in plan["candidates"]] == [hot]  # upstream measures no pod: one a node
    assert plan["measurements"], plan.get("measurements")

    # Prometheus gone: one line, exit 1, nothing evicted.
    before = sim.placements(ns)
    sim._stop_components("prometheus")
    try:
        done = desched(kc, "balance", *scope, "--yes")
        assert done.returncode == 1, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "error:" in done.stderr, done.stderr
        assert sim.placements(ns) == before
    finally:
        sim.start_prometheus(built("build-prometheus", "prometheus"))
