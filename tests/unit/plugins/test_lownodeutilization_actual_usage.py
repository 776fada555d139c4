"""LowNodeUtilization with metricsUtilization (upstream's KubernetesMetrics source): node usage from
metrics.k8s.io NodeMetrics, each moved pod's usage from its PodMetrics, never a silent fall back to requests."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubectl_desched.errors import ConfigError, DeschedError
from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.framework.policy_decoder import decode_policy, policy_from_plugins
from kubectl_desched.kube.snapshot import load_snapshot
from kubectl_desched.model.state import ClusterState
from kubectl_desched.plugins import in_tree_registry
from kubectl_desched.ui.explain import Verdicts
from tests import builders as b
from tests.builders import as_upstream

LNU = "LowNodeUtilization"
ARGS = {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50},
        "metricsUtilization": {"source": "KubernetesMetrics"}}


def _state(objs: list[dict[str, Any]], *, metrics: bool = True) -> ClusterState:
    extra: dict[str, list[Any]] = {}
    if metrics:
        extra = {"NodeMetrics": [o for o in objs if o["kind"] == "NodeMetrics"],
                 "PodMetrics": [o for o in objs if o["kind"] == "PodMetrics"]}
    return b.state(objs, extra=extra)


def plan_for(objs: list[dict[str, Any]], args: dict[str, Any] | None = None, *, metrics: bool = True) -> EvictionPlan:
    return b.plan(_state(objs, metrics=metrics), [(LNU, "balance", args or ARGS)])


def busy_by_usage() -> list[dict[str, Any]]:
    """By requests every node looks alike (4 x 100m on 4 cores = 10%); by usage n1 is at 80%, n2 at 5%."""
    objs: list[dict[str, Any]] = [b.node("n1"), b.node("n2"), b.node("n3")]
    objs += [b.node_metrics("n1", "3200m"), b.node_metrics("n2", "200m"), b.node_metrics("n3", "1200m")]
    for node in ("n1", "n2", "n3"):
        for i in range(4):
            objs.append(b.pod(f"{node}-p{i}", node))
    objs += [b.pod_metrics(f"n1-p{i}", "700m", containers=2) for i in range(4)]
    return objs


def test_required_kinds_follow_the_source() -> None:
    registry = in_tree_registry()
    with_metrics = as_upstream(decode_policy(policy_from_plugins([(LNU, "balance", ARGS)], {}, {}), registry, "flags"))
    plain = {k: v for k, v in ARGS.items() if k != "metricsUtilization"}
    by_requests = as_upstream(decode_policy(policy_from_plugins([(LNU, "balance", plain)], {}, {}), registry, "flags"))
    assert with_metrics.required_kinds() == {"NodeMetrics", "PodMetrics"}
    assert by_requests.required_kinds() == set()


def test_usage_not_requests_decides_the_classes_and_the_moves() -> None:
    plan = plan_for(busy_by_usage())
    classes = {n: plan.node_reports[n][0].klass for n in ("n1", "n2", "n3")}
    assert classes == {"n1": "over-utilized", "n2": "under-utilized", "n3": "appropriately utilized"}
    assert plan.node_reports["n1"][0].detail.startswith("actual usage cpu 80%")
    # 3200m - 700m = 2500m is not above 50% of 4000m: two pods move (upstream stops when back under target).
    assert [c.pod.name for c in plan.candidates] == ["n1-p0", "n1-p1"]
    assert plan.candidates[0].reason == "node over target: the node's cpu 80% > 50%"
    assert plan.candidates[1].reason == "node over target: the node's cpu 62.5% > 50%"


def test_by_requests_the_same_cluster_needs_nothing() -> None:
    plain = {k: v for k, v in ARGS.items() if k != "metricsUtilization"}
    assert plan_for(busy_by_usage(), plain).candidates == []


def test_metrics_server_flag_is_the_deprecated_spelling() -> None:
    args = {**ARGS, "metricsUtilization": {"metricsServer": True}}
    assert [c.pod.name for c in plan_for(busy_by_usage(), args).candidates] == ["n1-p0", "n1-p1"]


def test_pod_without_pod_metrics_is_skipped_with_a_note() -> None:
    objs = [o for o in busy_by_usage() if not (o["kind"] == "PodMetrics" and o["metadata"]["name"] == "n1-p0")]
    plan = plan_for(objs)
    assert [c.pod.name for c in plan.candidates] == ["n1-p1", "n1-p2"]
    p0 = plan.state.find_pod("default", "n1-p0")
    assert p0 is not None
    assert Verdicts(plan).of(p0) == ("keep", f"{LNU}: not moved: no PodMetrics for the pod, so its usage is unknown")


def test_node_without_node_metrics_stops_the_plugin_as_upstream_does() -> None:
    objs = [o for o in busy_by_usage() if not (o["kind"] == "NodeMetrics" and o["metadata"]["name"] == "n3")]
    plan = plan_for(objs)
    assert plan.candidates == []
    assert any("no NodeMetrics for node n3" in text for _plugin, text in plan.messages)


def test_missing_metrics_objects_stop_with_one_line() -> None:
    with pytest.raises(DeschedError, match="LowNodeUtilization needs NodeMetrics objects"):
        plan_for(busy_by_usage(), metrics=False)


@pytest.mark.parametrize("metrics, path, message", [
    ({"source": "Prometheus", "prometheus": {"query": "up"}}, "thresholds", "name MetricResource alone"),
    ({"source": "Prometheus"}, "metricsUtilization.prometheus.query", "required when source is Prometheus"),
    ({"source": "Graphite"}, "metricsUtilization.source", "must be KubernetesMetrics or Prometheus"),
    ({"source": "KubernetesMetrics", "metricsServer": True}, "metricsUtilization", "either"),
    ({"source": "KubernetesMetrics", "prometheus": {"query": "up"}}, "metricsUtilization.prometheus", "not allowed"),
    ({}, "metricsUtilization", "names no source"),  # upstream would fail the plugin on every run
    ({"prometheus": {"query": "up"}}, "metricsUtilization", "names no source"),
])
def test_bad_metrics_args_name_the_field(metrics: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        plan_for(busy_by_usage(), {**ARGS, "metricsUtilization": metrics})
    assert f"args.{path}: " in str(info.value) and message in str(info.value)


def test_extended_resources_cannot_be_measured() -> None:
    gpu = "nvidia.com/gpu"
    args = {**ARGS, "thresholds": {"cpu": 20, gpu: 10}, "targetThresholds": {"cpu": 50, gpu: 50}}
    with pytest.raises(ConfigError, match=r"thresholds\.nvidia\.com/gpu: metrics\.k8s\.io measures only"):
        plan_for(busy_by_usage(), args)


def test_snapshot_of_kubectl_get_raw_lists(tmp_path: Any) -> None:
    """`kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes` lists carry no kind on their items."""
    objs = busy_by_usage()
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps(b.cluster(*[o for o in objs if o["kind"] in ("Node", "Pod")])))
    raw_nodes = tmp_path / "nodes.json"
    raw_nodes.write_text(json.dumps({"kind": "NodeMetricsList", "apiVersion": "metrics.k8s.io/v1beta1",
                                     "items": [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")}
                                               for o in objs if o["kind"] == "NodeMetrics"]}))
    raw_pods = tmp_path / "pods.json"
    raw_pods.write_text(json.dumps({"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1",
                                    "items": [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")}
                                              for o in objs if o["kind"] == "PodMetrics"]}))
    state = load_snapshot([str(cluster), str(raw_nodes), str(raw_pods)])
    assert len(state.extra["NodeMetrics"]) == 3 and len(state.extra["PodMetrics"]) == 4
