"""Helpers shared by the node-utilization plugins: usage as percentages of allocatable, thresholds
(static or relative to the average), and the pod order upstream evicts in."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kubectl_desched.model import Node, Pod
from kubectl_desched.state import ClusterState

BASIC_RESOURCES = ("cpu", "memory", "pods")
_QOS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}


def usage(state: ClusterState, node: Node, resources: Iterable[str]) -> dict[str, float]:
    requested = state.requested(node.name)
    return {r: requested.get(r, 0.0) for r in resources}


def percentages(used: Mapping[str, float], node: Node) -> dict[str, float]:
    out = {}
    for r, v in used.items():
        cap = node.allocatable.get(r, 0.0)
        out[r] = v / cap * 100.0 if cap > 0 else 0.0
    return out


def average(percents: Iterable[Mapping[str, float]], resources: Iterable[str]) -> dict[str, float]:
    rows = list(percents)
    names = list(resources)
    if not rows:
        return {r: 0.0 for r in names}
    return {r: sum(p.get(r, 0.0) for p in rows) / len(rows) for r in names}


def clamp(value: float) -> float:
    return min(100.0, max(0.0, value))


def below(pct: Mapping[str, float], limits: Mapping[str, float]) -> bool:
    return all(pct.get(r, 0.0) <= v for r, v in limits.items())


def above(pct: Mapping[str, float], limits: Mapping[str, float]) -> bool:
    return any(pct.get(r, 0.0) > v for r, v in limits.items())


def capped_capacity(node: Node, limits: Mapping[str, float], resources: Iterable[str]) -> dict[str, float]:
    """How much of each resource the node may hold: threshold percent of allocatable for named resources,
    all of it for the others, nothing for a resource the node lacks (cpu in whole millicores, others whole
    units, as upstream truncates)."""
    out = {}
    for r in resources:
        cap = node.allocatable.get(r)
        if cap is None:
            out[r] = 0.0
        elif r not in limits:
            out[r] = cap
        else:
            out[r] = float(int(limits[r] * 0.01 * cap))
    return out


def eviction_order(pods: list[Pod]) -> list[Pod]:
    """Lowest priority first (no priority before any), then BestEffort < Burstable < Guaranteed; ties keep
    namespace/name order so live and snapshot runs agree."""
    return sorted(
        pods,
        key=lambda p: (p.priority is not None, p.priority or 0, _QOS_RANK.get(p.qos, 2), p.namespace, p.name),
    )


def fmt_pct(v: float) -> str:
    return f"{v:.1f}%".replace(".0%", "%")


def describe(pct: Mapping[str, float], resources: Iterable[str]) -> str:
    return ", ".join(f"{r} {fmt_pct(pct.get(r, 0.0))}" for r in resources)
