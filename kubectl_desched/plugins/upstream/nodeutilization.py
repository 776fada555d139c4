"""Helpers shared by the node-utilization plugins: usage as percentages of allocatable, thresholds
(static or relative to the average), and the pod order upstream evicts in."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubectl_desched.framework.flags import Flag, Integer, Percentages
from kubectl_desched.framework.predicates import pod_tolerates_taint
from kubectl_desched.framework.types import EvictOptions
from kubectl_desched.model.objects import Node, Pod
from kubectl_desched.model.quantity import fmt_pct
from kubectl_desched.model.state import ClusterState
from kubectl_desched.plugins.upstream.podorder import eviction_order

BASIC_RESOURCES = ("cpu", "memory", "pods")

# Flags the node-utilization plugins share; each declares them for its own args.
NUMBER_OF_NODES = Flag("--number-of-nodes", "numberOfNodes", "act only when more than N nodes are under-utilized.",
                       Integer())
DEVIATION = Flag("--use-deviation-thresholds", "useDeviationThresholds",
                 "thresholds are deviations from the average node usage.")


def threshold_flags(low_key: str, high_key: str, low_help: str, high_help: str) -> tuple[Flag, Flag]:
    return (Flag("--thresholds", low_key, low_help, Percentages()),
            Flag("--target-thresholds", high_key, high_help, Percentages()))


def paired_thresholds(low_key: str, high_key: str, low_default: Mapping[str, float],
                      high_default: Mapping[str, float]) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """Upstream requires both thresholds; from flags, one given alone defaults the other for the same resources
    (20% low and 50% high for a resource our defaults do not name)."""
    def defaults(from_flags: Mapping[str, Any]) -> dict[str, Any]:
        low, high = from_flags.get(low_key), from_flags.get(high_key)
        if low is None:
            low = {r: low_default.get(r, 20.0) for r in high} if high else dict(low_default)
        if high is None:
            high = {r: high_default.get(r, 50.0) for r in low}
        return {low_key: low, high_key: high}
    return defaults


def usage(state: ClusterState, node: Node, resources: Iterable[str]) -> dict[str, float]:
    requested = state.requested(node.name)
    return {r: requested.get(r, 0.0) for r in resources}


def without_terminating(state: ClusterState, node: Node, used: Mapping[str, float]) -> tuple[int, dict[str, float]]:
    """How many of the node's pods are terminating, and the usage without their requests. Upstream counts a
    terminating pod until it is gone, so a re-run right after an eviction still sees the evicted pods."""
    going = [p for p in state.pods_on_node(node.name) if p.terminating and not p.is_terminal]
    out = dict(used)
    for p in going:
        for r in out:
            out[r] -= 1.0 if r == "pods" else p.requests.get(r, 0.0)
    return len(going), out


def percentages(used: Mapping[str, float], node: Node) -> dict[str, float]:
    out = {}
    for r, v in used.items():
        cap = node.allocatable.get(r, 0.0)
        out[r] = v / cap * 100.0 if cap > 0 else 0.0
    return out


def average(percents: Mapping[str, Mapping[str, float]], nodes: Iterable[Node],
            resources: Iterable[str]) -> dict[str, float]:
    """Each resource's mean over the nodes that have it (a GPU average leaves CPU-only nodes out); a resource
    no node has gets no entry, so it sets no threshold."""
    out = {}
    for r in resources:
        values = [percents[n.name].get(r, 0.0) for n in nodes if r in n.allocatable]
        if values:
            out[r] = sum(values) / len(values)
    return out


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


def could_move(handle: Any, node: Node, excluded: set[str], why: str,
               pod_filter: Callable[[Pod], bool] | None = None) -> list[tuple[Pod, str]]:
    """The pods SourceEviction would try on this node, in its order, for an estimate that has only this node."""
    evictor = handle.evictor
    return [(p, why) for p in eviction_order([p for p in handle.state.pods_on_node(node.name) if not p.is_terminal])
            if p.namespace not in excluded and evictor.filter(p) and (pod_filter is None or pod_filter(p))]


def describe(pct: Mapping[str, float], resources: Iterable[str]) -> str:
    return ", ".join(f"{r} {fmt_pct(pct.get(r, 0.0))}" for r in resources)


def nothing_to_do(under: list[Node], nodes: list[Node], number_of_nodes: int) -> str:
    """Upstream's checks, common to both node-utilization plugins, before any pod moves."""
    if not under:
        return "no node is under-utilized"
    if len(under) <= number_of_nodes:
        return f"{len(under)} under-utilized node(s), not more than numberOfNodes {number_of_nodes}"
    if len(under) == len(nodes):
        return "all nodes are under-utilized"
    return ""


def exhausted(pool: Mapping[str, float], resources: Iterable[str]) -> str | None:
    """The first resource the destinations have no room left for, if any."""
    return next((r for r in resources if pool[r] <= 0), None)


def tolerates_every_taint(pod: Pod, node: Node) -> bool:
    """Upstream's destination check: every taint counts, PreferNoSchedule too, and a node with more taints
    than the pod has tolerations is refused before any matching (one wildcard cannot cover two taints)."""
    if len(pod.tolerations) < len(node.taints):
        return False
    return all(pod_tolerates_taint(pod, t) for t in node.taints)


class SourceEviction:
    """Upstream's loop over one source node: its evictable pods in eviction order, each moved only if some
    destination tolerates it, until `stop()` gives a reason, a limit is hit or the pods run out. Each move takes
    the pod's requests (and one pod) off the node's usage and off the destinations' pool."""

    def __init__(self, handle: Any, plugin: str, tracked: list[str], pool: dict[str, float],
                 destinations: list[Node], excluded: set[str], dest_label: str,
                 pod_filter: Callable[[Pod], bool] | None = None,
                 pod_usage: Callable[[Pod], Mapping[str, float] | None] | None = None,
                 pods_unmeasured: bool = False) -> None:
        self.handle, self.plugin, self.tracked, self.pool = handle, plugin, tracked, pool
        self.destinations, self.excluded, self.dest_label = destinations, excluded, dest_label
        self.pod_filter = pod_filter
        self.pod_usage = pod_usage  # actual usage; requests when None
        # The usage source measures nodes only (a Prometheus query): upstream takes nothing off the node for a
        # moved pod, and moves one pod per node unless evictionLimits.node allows more.
        self.pods_unmeasured = pods_unmeasured

    def run(self, node: Node, used: dict[str, float], stop: Callable[[], str], reason: Callable[[], str],
            node_limit: int | None = None) -> bool:
        """False when the global total limit is reached and the plugin must stop."""
        handle, evictor = self.handle, self.handle.evictor
        pods = [p for p in handle.state.pods_on_node(node.name) if not p.is_terminal]
        removable = eviction_order(
            [p for p in pods if evictor.filter(p) and (self.pod_filter is None or self.pod_filter(p))])
        evicted = 0
        why_stop = stop()
        for i, pod in enumerate(removable):
            if not why_stop and node_limit is not None and evicted >= node_limit:
                why_stop = f"evictionLimits.node ({node_limit}) reached"
            if why_stop:
                for rest in removable[i:]:
                    handle.note(rest, f"not moved: {why_stop}")
                return True
            if not any(tolerates_every_taint(pod, d) for d in self.destinations):
                handle.note(pod, f"not moved: no {self.dest_label} node tolerates its taints")
                continue
            if pod.namespace in self.excluded:
                handle.note(pod, f"not moved: namespace {pod.namespace} is in evictableNamespaces.exclude")
                continue
            if not evictor.pre_eviction_filter(pod):
                continue
            moved = pod.requests if self.pod_usage is None else self.pod_usage(pod)
            if moved is None and not self.pods_unmeasured:  # upstream skips a pod whose usage it cannot read
                handle.note(pod, "not moved: no PodMetrics for the pod, so its usage is unknown")
                continue
            got = evictor.evict(pod, EvictOptions(self.plugin, reason()))
            if not got:
                if got.total_reached:
                    return False
                if got.node_reached:
                    return True
                continue
            evicted += 1
            if self.pods_unmeasured:
                if node_limit is None:
                    for rest in removable[i + 1:]:
                        handle.note(rest, "not moved: the query measures nodes, not pods, so upstream moves one pod "
                                          "per node (evictionLimits.node allows more)")
                    return True
                continue
            assert moved is not None
            for r in self.tracked:
                delta = 1.0 if r == "pods" else moved.get(r, 0.0)
                used[r] -= delta
                self.pool[r] -= delta
            why_stop = stop()
        return True
