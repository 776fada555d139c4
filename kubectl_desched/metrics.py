"""Actual usage, read from objects the cluster source already fetched: metrics.k8s.io NodeMetrics and
PodMetrics (what metrics-server serves, upstream's KubernetesMetrics source) and Koordinator's NodeMetric
(slo.koordinator.sh/v1alpha1, written by koordlet). Plugins never call the API; they ask for these kinds
through `required_kinds` and read them here."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubectl_desched.durations import parse_time
from kubectl_desched.errors import DeschedError
from kubectl_desched.quantity import resource_value
from kubectl_desched.state import ClusterState

NODE_METRICS = "NodeMetrics"  # metrics.k8s.io/v1beta1, one per node
POD_METRICS = "PodMetrics"  # metrics.k8s.io/v1beta1, one per pod
KOORD_NODE_METRIC = "NodeMetric"  # slo.koordinator.sh/v1alpha1, one per node

# How a snapshot user adds each kind, for the error when it is missing.
SNAPSHOT_HINTS = {
    NODE_METRICS: "kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes",
    POD_METRICS: "kubectl get --raw /apis/metrics.k8s.io/v1beta1/pods",
    KOORD_NODE_METRIC: "kubectl get nodemetrics.slo.koordinator.sh -o yaml",
}


def require(state: ClusterState, kind: str, plugin: str) -> list[Any]:
    """The objects of `kind`, or a clear stop: a plugin configured for actual usage never falls back to
    requests. A live source has already failed on an unserved API; this catches snapshots without them."""
    if kind not in state.extra:
        raise DeschedError(f"{plugin} needs {kind} objects and {state.source or 'the cluster state'} has none; "
                           f"add them to the snapshot ({SNAPSHOT_HINTS[kind]})")
    return state.extra[kind]


@functools.lru_cache(maxsize=65536, typed=True)  # typed: False must not hit 0
def _value(name: str, text: str | int | float) -> float:
    return resource_value(name, text)  # metrics repeat the same few quantities across 100k pods


def _usage(raw: Mapping[str, Any] | None, where: str) -> dict[str, float]:
    try:
        return {str(k): _value(str(k), v) for k, v in (raw or {}).items()}
    except ValueError as e:
        raise DeschedError(f"{where}: bad quantity: {e}") from None
    except TypeError:  # unhashable: not a quantity at all
        raise DeschedError(f"{where}: bad quantity: {raw!r}") from None


def _name(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


class KubernetesMetrics:
    """metrics-server's view: node cpu/memory usage, and each pod's usage summed over its containers."""

    def __init__(self, state: ClusterState, plugin: str) -> None:
        self.nodes: dict[str, dict[str, float]] = {}
        for obj in require(state, NODE_METRICS, plugin):
            _, name = _name(obj)
            self.nodes[name] = _usage(obj.get("usage"), f"NodeMetrics {name}")
        # Only the pods that move need their usage: index the objects, parse on demand.
        self._pods: dict[str, Mapping[str, Any]] = {}
        for obj in require(state, POD_METRICS, plugin):
            ns, name = _name(obj)
            self._pods[f"{ns}/{name}"] = obj

    def pod(self, key: str) -> dict[str, float] | None:
        """A pod's usage summed over its containers; None without PodMetrics."""
        obj = self._pods.get(key)
        if obj is None:
            return None
        total: dict[str, float] = {}
        for c in obj.get("containers") or ():
            for r, v in _usage(c.get("usage"), f"PodMetrics {key}").items():
                total[r] = total.get(r, 0.0) + v
        return total


@dataclass
class NodeMetricView:
    """One Koordinator NodeMetric: when koordlet last reported, system usage and per-pod usage."""

    update_time: datetime | None
    has_node_metric: bool
    system: dict[str, float] = field(default_factory=dict)
    pods: dict[str, dict[str, float]] = field(default_factory=dict)  # "ns/name" -> usage


def koordinator_node_metrics(state: ClusterState, plugin: str) -> dict[str, NodeMetricView]:
    out: dict[str, NodeMetricView] = {}
    for obj in require(state, KOORD_NODE_METRIC, plugin):
        _, name = _name(obj)
        status = obj.get("status") or {}
        where = f"NodeMetric {name}"
        try:
            updated = parse_time(status["updateTime"]) if status.get("updateTime") else None
        except ValueError:
            raise DeschedError(f"{where}: bad status.updateTime {status.get('updateTime')!r}") from None
        node_metric = status.get("nodeMetric")
        view = NodeMetricView(updated, node_metric is not None)
        view.system = _usage(((node_metric or {}).get("systemUsage") or {}).get("resources"), where)
        for pm in status.get("podsMetric") or ():
            key = f"{pm.get('namespace') or ''}/{pm.get('name') or ''}"
            view.pods[key] = _usage((pm.get("podUsage") or {}).get("resources"), f"{where} pod {key}")
        out[name] = view
    return out
