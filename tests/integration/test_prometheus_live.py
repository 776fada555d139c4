"""A real Prometheus in the simulated cluster (tests/cluster/build-prometheus): it scrapes the kubelet metrics
kwok emulates from the pods' kwok.x-k8s.io/usage-* annotations, and a recording rule makes the per-node ratio
that LowNodeUtilization's `metricsUtilization.source: Prometheus` queries, reached by its URL."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from desched import as_json, desched
from simcluster import PROMETHEUS_QUERY, SimCluster, deployment, wait_until

from tests.gobuilds import built
from tests.oracle.upstream import in_service_account_root, run_upstream

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
    query = ["--node-selector", f"sim-test={ns}", "-n", ns, "--prometheus-query", PROMETHEUS_QUERY,
             "--target-thresholds", "MetricResource=40"]
    scope = [*query, "--prometheus-url", sim.prometheus_url]
    plan = as_json(desched(kc, "balance", *scope, "--dry-run=client", "-o", "json"))
    nodes: dict[str, Any] = {n["name"]: n for n in plan["nodes"]}
    assert nodes[hot]["class"] == {"LowNodeUtilization": "over-utilized"}, nodes[hot]
    assert nodes[cool]["class"] == {"LowNodeUtilization": "under-utilized"}, nodes[cool]
    assert [c["node"] for c in plan["candidates"]] == [hot]  # upstream measures no pod: one a node
    assert plan["measurements"], plan.get("measurements")

    # Through the apiserver's service proxy, with nothing but the kubeconfig's credentials: the same plan.
    if sim.prometheus_host != "127.0.0.1":  # the apiserver proxies to no loopback address
        again = as_json(desched(kc, "balance", *query, "--prometheus-url", "service/monitoring/prometheus:web",
                                "--dry-run=client", "-o", "json"))
        assert [c["pod"] for c in again["candidates"]] == [c["pod"] for c in plan["candidates"]]
        assert {n["name"]: n.get("measured") for n in again["nodes"]}.keys() == nodes.keys()

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


def test_the_upstream_descheduler_picks_the_same_pods_by_the_same_prometheus(
        prometheus_sim: SimCluster, sim_namespace: str, upstream_descheduler: Path, tmp_path: Path) -> None:
    sim, ns = prometheus_sim, sim_namespace
    wrapper = in_service_account_root(sim.ca_file, tmp_path)
    if isinstance(wrapper, str):
        pytest.skip(wrapper)
    pin = {"sim-test": ns}
    hot = sim.add_nodes([f"{ns}-a", f"{ns}-b"], labels=pin)
    sim.apply(deployment(ns, "busy", 6, cpu="100m", memory="64Mi", usage=("500m", "64Mi"), node_selector=pin))
    sim.wait_workloads_ready(ns)
    (cool,) = sim.add_nodes([f"{ns}-cool"], labels=pin)
    sim.wait_workloads_ready(ns)
    wait_until(lambda: all(sim.prometheus_values().get(n, 0.0) > 0.3 for n in hot)
               and cool in sim.prometheus_values(), 90, f"{PROMETHEUS_QUERY} of the new nodes")
    # upstream out of a cluster reaches Prometheus only with a token Secret; this Prometheus ignores the token
    sim.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "prom-token", "namespace": ns},
               "stringData": {"prometheusAuthToken": "not-checked"}})
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"""apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
metricsProviders:
  - source: Prometheus
    prometheus:
      url: {sim.prometheus_url}
      authToken: {{secretReference: {{namespace: {ns}, name: prom-token}}}}
profiles:
  - name: by-prometheus
    pluginConfig:
      - name: DefaultEvictor
      - name: LowNodeUtilization
        args:
          thresholds: {{MetricResource: 10}}
          targetThresholds: {{MetricResource: 30}}
          evictionLimits: {{node: 2}}
          metricsUtilization: {{source: Prometheus, prometheus: {{query: "{PROMETHEUS_QUERY}"}}}}
    plugins:
      balance: {{enabled: [LowNodeUtilization]}}
""")
    theirs = run_upstream(upstream_descheduler, sim.kubeconfig, policy, timeout=120, wrapper=wrapper,
                          compared=3)
    upstream_ours = {key for key in theirs.evicted if key.startswith(f"{ns}/")}
    # --keep-futile: upstream does not ask where the replacements land (by requests these nodes are light)
    plan = as_json(desched(sim.kubeconfig_for(), "run", "--policy", str(policy), "--keep-futile", "--dry-run=client",
                           "-o", "json"))
    ours = {f"{c['namespace']}/{c['pod']}" for c in plan["candidates"] if c["namespace"] == ns}
    # The replicas are equal in priority, QoS and age: which of a node's upstream takes is the order its informer
    # lists them in. The same number from the same nodes is the same plan.
    where = sim.placements(ns)
    per_node = [Counter(where[key.split("/", 1)[1]] for key in picked) for picked in (ours, upstream_ours)]
    assert per_node[0] == per_node[1] == {hot[0]: 2, hot[1]: 2}, (per_node, theirs.evicted)
