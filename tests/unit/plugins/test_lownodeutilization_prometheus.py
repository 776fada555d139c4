"""LowNodeUtilization with metricsUtilization source Prometheus, as upstream v0.36.0 balances by it: each node's
sample a whole percent of MetricResource (capacity 100, the fraction cut off), thresholds naming MetricResource
alone, and, since a query measures nodes and not pods, one pod per over-utilized node unless evictionLimits.node
allows more. The scenarios are those of upstream's TestLowNodeUtilizationWithPrometheusMetrics (same nodes, pods,
samples and expected counts); the answers are given to the state as the loader would put them there."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kubectl_desched.errors import ConfigError
from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.framework.policy_decoder import decode_policy, policy_from_plugins
from kubectl_desched.model.metrics import PROMETHEUS, PrometheusReading
from kubectl_desched.plugins import in_tree_registry
from kubectl_desched.ui.plan_view import node_rows
from tests import builders as b

LNU = "LowNodeUtilization"
QUERY = "instance:node_cpu:rate:sum"
UPSTREAM_SAMPLES = {"n1": 0.5695757575757561, "n2": 0.4245454545454522, "n3": 0.20381818181818104}


def args(low: float = 30, high: float = 50, **more: Any) -> dict[str, Any]:
    return {"thresholds": {"MetricResource": low}, "targetThresholds": {"MetricResource": high},
            "metricsUtilization": {"source": "Prometheus", "prometheus": {"query": QUERY}}, **more}


def upstream_cluster() -> list[dict[str, Any]]:
    """Upstream's test cluster: five evictable pods on n1 beside a DaemonSet's, a local-storage and a critical pod."""
    objs: list[dict[str, Any]] = [b.node("n1", 4, "3000", 9), b.node("n2", 4, "3000", 10), b.node("n3", 4, "3000", 10)]
    objs += [b.pod(f"p{i}", "n1", "400m") for i in range(1, 6)]
    objs += [b.pod("p6", "n1", "400m", owner="DaemonSet"),
             b.pod("p7", "n1", "400m", volumes=[{"name": "scratch", "emptyDir": {}}]),
             b.pod("p8", "n1", "400m", priority=2000000000, priorityClassName="system-cluster-critical"),
             b.pod("p9", "n2", "400m")]
    return objs


def plan_with(samples: dict[str, float], plugin_args: dict[str, Any],
              objs: list[dict[str, Any]] | None = None) -> EvictionPlan:
    reading = PrometheusReading(QUERY, "Prometheus at http://prom:9090", datetime(2026, 1, 1, tzinfo=UTC), samples)
    return b.plan(b.state(objs or upstream_cluster(), extra={PROMETHEUS: [reading]}), [(LNU, "balance", plugin_args)])


@pytest.mark.parametrize("samples, plugin_args, evicted", [
    (UPSTREAM_SAMPLES, args(), 1),  # no node limit: one pod per node, its usage unknown
    (UPSTREAM_SAMPLES, args(evictionLimits={"node": 3}), 3),
    (UPSTREAM_SAMPLES, args(5, 5, useDeviationThresholds=True, evictionLimits={"node": 2}), 2),
    ({"n1": 1.0, "n2": 0.5, "n3": 0.0}, args(10, 10, useDeviationThresholds=True), 1),
], ids=["one-per-node", "node-limit", "deviation-limit", "deviation"])
def test_upstream_scenarios(samples: dict[str, float], plugin_args: dict[str, Any], evicted: int) -> None:
    plan = plan_with(samples, plugin_args)
    assert len(plan.candidates) == evicted
    assert {c.pod.node_name for c in plan.candidates} == {"n1"}
    assert {c.pod.name for c in plan.candidates} <= {f"p{i}" for i in range(1, 6)}


def test_the_percent_is_cut_to_a_whole_one_as_upstream_counts_it() -> None:
    """0.5099 is 50 as upstream counts it (int64(v*100)): not above a target of 50."""
    plan = plan_with({"n1": 0.5099, "n2": 0.1, "n3": 0.6}, args())
    klass = {n: r[0].klass for n, r in plan.node_reports.items()}
    assert klass == {"n1": "appropriately utilized", "n2": "under-utilized", "n3": "over-utilized"}
    assert "MetricResource 50%" in plan.node_reports["n1"][0].detail


def test_a_node_missing_from_the_answer_stops_the_plugin_and_is_named() -> None:
    plan = plan_with({"n1": 0.9, "n2": 0.1}, args())
    assert not plan.candidates
    assert any("no sample with instance=n3" in m for _p, m in plan.messages)
    rows = {r["name"]: r for r in node_rows(plan, list(plan.cluster.nodes.values()))}
    assert rows["n3"]["measured"]["value"] is None and rows["n1"]["measured"]["percent"] == 90


def test_samples_of_other_instances_are_ignored() -> None:
    plan = plan_with({**UPSTREAM_SAMPLES, "10.0.0.7:9100": 1.0}, args())
    assert len(plan.candidates) == 1


def test_rows_keep_requests_and_carry_the_measured_share() -> None:
    plan = plan_with(UPSTREAM_SAMPLES, args())
    rows = {r["name"]: r for r in node_rows(plan, list(plan.cluster.nodes.values()))}
    assert rows["n1"]["basis"] == "requests"
    assert rows["n1"]["measured"] == {"source": "Prometheus", "query": QUERY, "plugin": LNU,
                                      "value": UPSTREAM_SAMPLES["n1"], "percent": 56}


@pytest.mark.parametrize("bad, path, message", [
    ({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}}, "thresholds", "name MetricResource alone"),
    ({"thresholds": {"MetricResource": 20, "cpu": 20}, "targetThresholds": {"MetricResource": 50, "cpu": 50}},
     "thresholds", "not MetricResource, cpu"),
    ({"metricsUtilization": {"source": "Prometheus"}}, "metricsUtilization.prometheus.query", "required"),
    ({"metricsUtilization": {"source": "Prometheus", "prometheus": {"query": ""}}},
     "metricsUtilization.prometheus.query", "required"),
])
def test_what_upstream_refuses_is_refused_when_the_policy_loads(bad: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        plan_with(UPSTREAM_SAMPLES, {**args(), **bad})
    assert f"args.{path}: " in str(info.value) and message in str(info.value)


def test_the_policy_asks_for_the_query_and_no_metrics_api() -> None:
    policy = decode_policy(policy_from_plugins([(LNU, "balance", args())], {}, {}), in_tree_registry(), "flags")
    assert policy.required_kinds() == {PROMETHEUS}
    assert policy.prometheus_queries() == [QUERY]


PROVIDERS = [
    ([{"source": "Prometheus", "prometheus": {"url": "https://prom.example:9091",
                                              "authToken": {"secretReference": {"namespace": "d", "name": "s"}}}}],
     None),
    ([{"source": "Prometheus"}], "metricsProviders[0].prometheus: required"),
    ([{"source": "Prometheus", "prometheus": {}}], "metricsProviders[0].prometheus.url: required"),
    ([{"source": "Prometheus", "prometheus": {"url": "http://p", "authToken": {}}}],
     "authToken.secretReference: required when authToken is set"),
    ([{"source": "Prometheus", "prometheus": {"url": "http://p", "authToken": {"secretReference": {"name": "s"}}}}],
     "must set both namespace and name"),
    ([{"source": "Prometheus", "prometheus": {"url": "http://p"}}, {"source": "Prometheus",
                                                                    "prometheus": {"url": "http://q"}}],
     "metricsProviders[1].source: metrics provider 'Prometheus' is already configured"),
    ("Prometheus", "metricsProviders: must be a list"),
]


@pytest.mark.parametrize("providers, error", PROVIDERS)
def test_metrics_providers_are_checked_as_upstream_checks_them(providers: Any, error: str | None) -> None:
    raw = {**policy_from_plugins([(LNU, "balance", args())], {}, {}), "metricsProviders": providers}
    if error is None:
        policy = decode_policy(raw, in_tree_registry(), "policy.yaml")
        assert policy.prometheus is not None
        assert (policy.prometheus.url, policy.prometheus.secret_namespace, policy.prometheus.secret_name) == (
            "https://prom.example:9091", "d", "s")
        return
    with pytest.raises(ConfigError) as info:
        decode_policy(raw, in_tree_registry(), "policy.yaml")
    assert error in str(info.value)


def test_kubernetes_metrics_provider_beside_an_enabled_collector_is_refused() -> None:
    raw = {**policy_from_plugins([(LNU, "balance", args())], {}, {}), "metricsCollector": {"enabled": True},
           "metricsProviders": [{"source": "KubernetesMetrics"}]}
    with pytest.raises(ConfigError, match=r"may not be combined with metricsCollector\.enabled"):
        decode_policy(raw, in_tree_registry(), "policy.yaml")
