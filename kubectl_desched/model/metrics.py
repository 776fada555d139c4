"""Actual usage, read from objects the cluster source already fetched: metrics.k8s.io NodeMetrics and
PodMetrics (what metrics-server serves, upstream's KubernetesMetrics source) and Koordinator's NodeMetric
(slo.koordinator.sh/v1alpha1, written by koordlet). Plugins never call the API; they ask for these kinds
through `required_kinds` and read them here, as the model the source made of them (quantities already parsed
and checked when read)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubectl_desched.errors import DeschedError
from kubectl_desched.model.durations import parse_time
from kubectl_desched.model.objects import NodeMetric, NodeMetrics, PodMetrics
from kubectl_desched.model.state import ClusterState

NODE_METRICS = "NodeMetrics"  # metrics.k8s.io/v1beta1, one per node
POD_METRICS = "PodMetrics"  # metrics.k8s.io/v1beta1, one per pod
KOORD_NODE_METRIC = "NodeMetric"  # slo.koordinator.sh/v1alpha1, one per node
PROMETHEUS = "Prometheus"  # instant queries' answers, one PrometheusReading per query (not an API kind)
# Upstream's name for the one resource a Prometheus query measures: thresholds name it alone.
METRIC_RESOURCE = "MetricResource"

# How a snapshot user adds each kind, for the error when it is missing.
SNAPSHOT_HINTS = {
    NODE_METRICS: "kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes",
    POD_METRICS: "kubectl get --raw /apis/metrics.k8s.io/v1beta1/pods",
    KOORD_NODE_METRIC: "kubectl get nodemetrics.slo.koordinator.sh -o yaml",
    PROMETHEUS: "a snapshot has no Prometheus answer: give --prometheus-url to query one",
}


def require(state: ClusterState, kind: str, plugin: str) -> list[Any]:
    """The objects of `kind`, or a clear stop: a plugin configured for actual usage never falls back to
    requests. A live source has already failed on an unserved API; this catches snapshots without them."""
    if kind not in state.extra:
        raise DeschedError(f"{plugin} needs {kind} objects and {state.source or 'the cluster state'} has none; "
                           f"add them to the snapshot ({SNAPSHOT_HINTS[kind]})")
    return state.extra[kind]


class KubernetesMetrics:
    """metrics-server's view: node cpu/memory usage, and each pod's usage summed over its containers."""

    def __init__(self, state: ClusterState, plugin: str) -> None:
        node_metrics: list[NodeMetrics] = require(state, NODE_METRICS, plugin)
        self.nodes: dict[str, dict[str, float]] = {m.name: dict(m.usage) for m in node_metrics}
        pod_metrics: list[PodMetrics] = require(state, POD_METRICS, plugin)
        self._pods: dict[str, PodMetrics] = {m.key: m for m in pod_metrics}

    def pod(self, key: str) -> dict[str, float] | None:
        """A pod's usage summed over its containers; None without PodMetrics."""
        found = self._pods.get(key)
        return dict(found.usage) if found is not None else None


@dataclass
class NodeMetricView:
    """One Koordinator NodeMetric: when koordlet last reported, system usage and per-pod usage."""

    update_time: datetime | None
    has_node_metric: bool
    system: dict[str, float] = field(default_factory=dict)
    pods: dict[str, dict[str, float]] = field(default_factory=dict)  # "ns/name" -> usage


def koordinator_node_metrics(state: ClusterState, plugin: str) -> dict[str, NodeMetricView]:
    out: dict[str, NodeMetricView] = {}
    metrics: list[NodeMetric] = require(state, KOORD_NODE_METRIC, plugin)
    for m in metrics:
        try:
            updated = parse_time(m.update_time) if m.update_time else None
        except ValueError:  # a day past its month's end passes the timestamp's pattern
            raise DeschedError(f"NodeMetric {m.name}: bad status.updateTime {m.update_time!r}") from None
        out[m.name] = NodeMetricView(updated, m.has_node_metric, dict(m.system),
                                     {key: dict(usage) for key, usage in m.pods.items()})
    return out


@dataclass(frozen=True)
class PrometheusReading:
    """One instant query's answer, as kube/prometheus.py read and checked it: each sample's value (in [0, 1], the
    share of the node upstream's Prometheus source expects) by its `instance` label, which names the node."""

    query: str
    endpoint: str  # where it was asked, as shown (credentials masked): a URL, or the service through the API server
    evaluated_at: datetime  # the `time` the query was evaluated at (the tool's clock when it asked)
    values: dict[str, float] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()  # what Prometheus said beside the answer, made printable


def prometheus_reading(state: ClusterState, query: str, plugin: str) -> PrometheusReading:
    """The answer to `query`; the loader evaluated every query the policy's plugins name before they run."""
    readings: list[PrometheusReading] = require(state, PROMETHEUS, plugin)
    for r in readings:
        if r.query == query:
            return r
    raise DeschedError(f"{plugin}: the Prometheus query {query!r} was not evaluated")
