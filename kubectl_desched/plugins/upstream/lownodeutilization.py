"""LowNodeUtilization: move pods off nodes above the target thresholds so the scheduler can place them on
under-utilized nodes. Usage is the sum of the pods' requests, as upstream computes it, or with
metricsUtilization the actual usage metrics-server reports, or one Prometheus query's share of each node."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kubectl_desched.errors import ConfigError, UsageError
from kubectl_desched.framework import BalancePlugin, Handle, PluginArgs
from kubectl_desched.framework.args import Namespaces, percent_map
from kubectl_desched.framework.flags import CliSurface, Flag, Integer, Switch
from kubectl_desched.model.metrics import (
    METRIC_RESOURCE,
    NODE_METRICS,
    POD_METRICS,
    PROMETHEUS,
    KubernetesMetrics,
    prometheus_reading,
)
from kubectl_desched.model.objects import Node, Pod
from kubectl_desched.model.quantity import fmt_pct
from kubectl_desched.plugins.upstream import nodeutilization as nu

# Upstream has no default thresholds; from flags, these (shown in --help).
DEFAULT_THRESHOLDS = {"cpu": 20.0, "memory": 20.0, "pods": 20.0}
DEFAULT_TARGETS = {"cpu": 50.0, "memory": 50.0, "pods": 50.0}
# With a Prometheus query the thresholds name upstream's one measured resource alone.
METRIC_THRESHOLDS, METRIC_TARGETS = {METRIC_RESOURCE: 20.0}, {METRIC_RESOURCE: 50.0}


@dataclass(frozen=True)
class PrometheusQueryFlag:
    """--prometheus-query QUERY: metricsUtilization with source Prometheus and that query."""

    metavar: str = "QUERY"

    def parse(self, value: Any, flag: str) -> dict[str, Any]:
        if not str(value).strip():
            raise UsageError(f"{flag}: the query must not be empty")
        return {"source": "Prometheus", "prometheus": {"query": str(value)}}

    def show(self, raw: Any) -> str:
        return str(((raw or {}).get("prometheus") or {}).get("query", "")) if isinstance(raw, Mapping) else ""


def _defaults(from_flags: Mapping[str, Any]) -> dict[str, Any]:
    metrics = from_flags.get("metricsUtilization")
    if isinstance(metrics, Mapping) and metrics.get("source") == "Prometheus":
        return nu.paired_thresholds("thresholds", "targetThresholds", METRIC_THRESHOLDS, METRIC_TARGETS)(from_flags)
    return nu.paired_thresholds("thresholds", "targetThresholds", DEFAULT_THRESHOLDS, DEFAULT_TARGETS)(from_flags)


CLI = CliSurface(
    flags=(*nu.threshold_flags("thresholds", "targetThresholds", "under-utilization thresholds",
                               "target thresholds"),
           nu.DEVIATION, nu.NUMBER_OF_NODES,
           Flag("--node-eviction-limit", "evictionLimits.node", "evictionLimits.node", Integer()),
           Flag("--use-metrics", "metricsUtilization.source",
                "balance actual usage from metrics.k8s.io (metrics-server), not requests",
                Switch("KubernetesMetrics")),
           Flag("--prometheus-query", "metricsUtilization",
                "balance by this Prometheus query (one sample per node in [0, 1], labelled instance=NODE), "
                "thresholds in MetricResource percent (default MetricResource=20 and 50); where: --prometheus-url",
                PrometheusQueryFlag())),
    defaults=_defaults, by_default=True, explain=True)


@dataclass
class EvictionLimits:
    node: int | None = None


@dataclass
class PrometheusQuery:
    query: str = ""


@dataclass
class MetricsUtilization:
    metrics_server: bool = False
    source: str = ""
    prometheus: PrometheusQuery | None = None


@dataclass
class LowNodeUtilizationArgs(PluginArgs):
    thresholds: dict[str, float] = field(default_factory=dict)
    target_thresholds: dict[str, float] = field(default_factory=dict)
    use_deviation_thresholds: bool = False
    number_of_nodes: int = 0
    evictable_namespaces: Namespaces | None = None
    eviction_limits: EvictionLimits | None = None
    metrics_utilization: MetricsUtilization | None = None

    def validate(self, path: str) -> None:
        p = f"{path}." if path else ""
        if self.evictable_namespaces and self.evictable_namespaces.include:
            raise ConfigError(f"{p}evictableNamespaces.include", "only exclude can be set, inclusion is not supported")
        for key, values in (("thresholds", self.thresholds), ("targetThresholds", self.target_thresholds)):
            if not values:
                raise ConfigError(f"{p}{key}", "no resource threshold is configured")
            percent_map(values, f"{p}{key}")
        if set(self.thresholds) != set(self.target_thresholds):
            raise ConfigError(f"{p}targetThresholds", "thresholds and targetThresholds configured different resources")
        if not self.use_deviation_thresholds:
            for r, v in self.thresholds.items():
                if v > self.target_thresholds[r]:
                    raise ConfigError(f"{p}thresholds.{r}",
                                      f"{v:g} is greater than targetThresholds.{r} {self.target_thresholds[r]:g}")
        if self.number_of_nodes < 0:
            raise ConfigError(f"{p}numberOfNodes", "must not be negative")
        if self.eviction_limits and self.eviction_limits.node is not None and self.eviction_limits.node < 0:
            raise ConfigError(f"{p}evictionLimits.node", "must not be negative")
        m = self.metrics_utilization
        if m:
            if m.source not in ("", "KubernetesMetrics", "Prometheus"):
                raise ConfigError(f"{p}metricsUtilization.source", "must be KubernetesMetrics or Prometheus")
            if m.source == "KubernetesMetrics" and m.metrics_server:
                raise ConfigError(f"{p}metricsUtilization", "set either source KubernetesMetrics or metricsServer")
            if m.source == "Prometheus" and m.metrics_server:
                # Upstream then reads metrics-server and ignores the query: refused, as it cannot be meant.
                raise ConfigError(f"{p}metricsUtilization.metricsServer",
                                  "set either source Prometheus or metricsServer, not both")
            if m.source == "KubernetesMetrics" and m.prometheus is not None:
                raise ConfigError(f"{p}metricsUtilization.prometheus", "not allowed with source KubernetesMetrics")
            if not m.source and not m.metrics_server:
                # Upstream loads this and then fails the plugin on every run ("metrics source is empty")
                raise ConfigError(f"{p}metricsUtilization", "names no source: set source: KubernetesMetrics "
                                                             "(or remove metricsUtilization to balance requests)")
            if m.source == "Prometheus" and not (m.prometheus and m.prometheus.query):
                raise ConfigError(f"{p}metricsUtilization.prometheus.query", "required when source is Prometheus")
            if m.source == "Prometheus":
                # upstream refuses these when the plugin is built, before its first run
                for key, values in (("thresholds", self.thresholds), ("targetThresholds", self.target_thresholds)):
                    if set(values) != {METRIC_RESOURCE}:
                        raise ConfigError(f"{p}{key}", f"with source Prometheus, {key} name {METRIC_RESOURCE} "
                                                       f"alone (the query's share of each node), not "
                                                       f"{', '.join(sorted(values))}")
            if self.actual_usage:
                unmeasured = sorted(set(self.thresholds) - set(nu.BASIC_RESOURCES))
                if unmeasured:
                    raise ConfigError(f"{p}thresholds.{unmeasured[0]}",
                                      "metrics.k8s.io measures only cpu and memory (and pods are counted)")

    @property
    def actual_usage(self) -> bool:
        """metrics.k8s.io usage (KubernetesMetrics, or the deprecated metricsServer)."""
        m = self.metrics_utilization
        return bool(m and (m.source == "KubernetesMetrics" or m.metrics_server))

    @property
    def prometheus_query(self) -> str:
        """The Prometheus query the nodes are measured by; "" when they are not."""
        m = self.metrics_utilization
        return m.prometheus.query if m and m.source == "Prometheus" and m.prometheus else ""

    @property
    def measured(self) -> bool:
        return self.actual_usage or bool(self.prometheus_query)


class LowNodeUtilization(BalancePlugin):
    """Evicts pods from over-utilized nodes while under-utilized nodes have room for them."""

    name = "LowNodeUtilization"
    args_type = LowNodeUtilizationArgs
    cli = CLI

    def __init__(self, args: LowNodeUtilizationArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.named = list(args.thresholds)
        # upstream tracks cpu, memory and pods beside the named resources, but only the query's with Prometheus
        self.tracked = self.named if args.prometheus_query else list(dict.fromkeys([*self.named,
                                                                                   *nu.BASIC_RESOURCES]))
        self.metrics: KubernetesMetrics | None = None

    @staticmethod
    def required_kinds(args: LowNodeUtilizationArgs) -> set[str]:
        if args.prometheus_query:
            return {PROMETHEUS}
        return {NODE_METRICS, POD_METRICS} if args.actual_usage else set()

    @staticmethod
    def prometheus_queries(args: LowNodeUtilizationArgs) -> list[str]:
        return [args.prometheus_query] if args.prometheus_query else []

    def _usage(self, nodes: list[Node]) -> dict[str, dict[str, float]] | None:
        """Requests, or with metricsUtilization one metrics-server reading: upstream smooths readings taken
        every 5 s; a one-shot run has a single one."""
        state = self.handle.state
        if self.args.prometheus_query:
            return self._prometheus_usage(nodes)
        if not self.args.actual_usage:
            return {n.name: nu.usage(state, n, self.tracked) for n in nodes}
        self.metrics = KubernetesMetrics(state, self.name)
        missing = [n.name for n in nodes if n.name not in self.metrics.nodes]
        if missing:
            # Upstream gives up on the whole run when any node lacks metrics.
            self.handle.info(f"no NodeMetrics for node {', '.join(missing[:3])}"
                             f"{' and others' if len(missing) > 3 else ''}: nothing is balanced by actual usage")
            return None
        return {n.name: {**{r: self.metrics.nodes[n.name].get(r, 0.0) for r in ("cpu", "memory")},
                         "pods": state.requested(n.name)["pods"]} for n in nodes}

    def _prometheus_usage(self, nodes: list[Node]) -> dict[str, dict[str, float]] | None:
        """Each node's sample as upstream counts it: a whole percent of a capacity of 100, the fraction cut off."""
        query = self.args.prometheus_query
        reading = prometheus_reading(self.handle.state, query, self.name)
        for n in nodes:
            self.handle.report_metric(n.name, "Prometheus", query, reading.values.get(n.name))
        missing = [n.name for n in nodes if n.name not in reading.values]
        if missing:
            # Upstream fails the plugin's run when any node has no sample ("unable to find metric entry").
            self.handle.info(f"the Prometheus query has no sample with instance={missing[0]}"
                             f"{f' (nor for {len(missing) - 1} other node(s))' if len(missing) > 1 else ''}: "
                             "nothing is balanced by it")
            return None
        return {n.name: {METRIC_RESOURCE: float(int(reading.values[n.name] * 100))} for n in nodes}

    def _capacity(self, n: Node) -> Mapping[str, float]:
        """Allocatable; with Prometheus, upstream's capacity of 100 for the query's share."""
        return {METRIC_RESOURCE: 100.0} if self.args.prometheus_query else n.allocatable

    def _percentages(self, used: Mapping[str, float], n: Node) -> dict[str, float]:
        if self.args.prometheus_query:
            return dict(used)  # percent of 100
        return nu.percentages(used, n)

    def _pod_usage(self, pod: Pod) -> Mapping[str, float] | None:
        return self.metrics.pod(pod.key) if self.metrics is not None else pod.requests

    def balance(self, nodes: list[Node]) -> None:
        args, handle = self.args, self.handle
        used = self._usage(nodes)
        if used is None:
            return
        observed = {n.name: self._percentages(used[n.name], n) for n in nodes}
        try:
            self._balance(nodes, used)
        finally:
            if args.actual_usage:
                for n in nodes:  # the loop below takes moved pods' usage off `used`
                    handle.report_usage(n.name, "usage from metrics.k8s.io", observed[n.name],
                                        nu.percentages(used[n.name], n))

    def _balance(self, nodes: list[Node], used: dict[str, dict[str, float]]) -> None:
        args, handle, state = self.args, self.handle, self.handle.state
        pct = {n.name: self._percentages(used[n.name], n) for n in nodes}
        if args.use_deviation_thresholds:
            avg = nu.average(pct, nodes, self.named) if not args.prometheus_query else \
                {r: sum(pct[n.name][r] for n in nodes) / len(nodes) for r in self.named} if nodes else {}
            low = {r: nu.clamp(avg[r] - args.thresholds[r]) for r in avg}
            high = {r: nu.clamp(avg[r] + args.target_thresholds[r]) for r in avg}
        else:
            low, high = dict(args.thresholds), dict(args.target_thresholds)
        if not args.measured:  # requests: the basis the placement estimate works in
            handle.report_targets(high)

        under: list[Node] = []
        over: list[Node] = []
        for n in nodes:
            klass = self._classify(n, pct[n.name], low, high)
            if klass == "under-utilized":
                under.append(n)
            elif klass == "over-utilized":
                over.append(n)

        why_not = self._nothing_to_do(under, over, nodes)
        if why_not:
            handle.info(why_not)
            for n in over:
                for pod in state.pods_on_node(n.name):
                    handle.note(pod, f"not moved: {why_not}")
            return

        capped = {n.name: self._capped(n, high) for n in under + over}
        pool = {r: sum(capped[n.name][r] - used[n.name][r] for n in under) for r in self.tracked}
        over.sort(key=lambda n: (-sum(used[n.name].values()), n.name))
        node_limit = args.eviction_limits.node if args.eviction_limits else None
        excluded = set(args.evictable_namespaces.exclude) if args.evictable_namespaces else set()
        loop = nu.SourceEviction(handle, self.name, self.tracked, pool, under, excluded, "under-utilized",
                                 pod_usage=self._pod_usage if args.actual_usage else None,
                                 pods_unmeasured=bool(args.prometheus_query))
        for n in over:
            u, cap = used[n.name], capped[n.name]

            def stop(u: dict[str, float] = u, cap: dict[str, float] = cap) -> str:
                if not any(u[r] > cap[r] for r in self.tracked):
                    return "node is back under the target thresholds"
                full = nu.exhausted(pool, self.tracked)
                return f"under-utilized nodes have no {full} left below their targets" if full else ""

            def reason(n: Node = n, u: dict[str, float] = u, cap: dict[str, float] = cap) -> str:
                return "node over target: the node's " + ", ".join(
                    f"{r} {fmt_pct(self._pct(u, n, r))} > {fmt_pct(high.get(r, 100.0))}"
                    for r in self.tracked if u[r] > cap[r])

            if not loop.run(n, u, stop, reason, node_limit):
                return

    def _capped(self, n: Node, high: dict[str, float]) -> dict[str, float]:
        if self.args.prometheus_query:
            return {r: float(int(high[r] * 0.01 * 100.0)) if r in high else 100.0 for r in self.tracked}
        return nu.capped_capacity(n, high, self.tracked)

    @classmethod
    def nearby_args(cls, args: LowNodeUtilizationArgs) -> list[tuple[str, LowNodeUtilizationArgs]]:
        """Nodes stay over target when no node counts as under-utilized, or too few have room below their
        targets: raise the under-utilization thresholds towards the targets, 5 points at a time."""
        if args.use_deviation_thresholds or args.measured:
            return []
        out: list[tuple[str, LowNodeUtilizationArgs]] = []
        low = dict(args.thresholds)
        while True:
            raised = {r: max(v, min(v + 5.0, args.target_thresholds.get(r, 100.0) - 5.0)) for r, v in low.items()}
            if raised == low:
                return out
            low = raised
            out.append((f"--thresholds {','.join(f'{r}={v:g}' for r, v in low.items())}",
                        replace(args, thresholds=dict(low))))

    def _classify(self, n: Node, p: dict[str, float], low: dict[str, float], high: dict[str, float]) -> str:
        limits = f"under <= {nu.describe(low, self.named)}; over > {nu.describe(high, self.named)}"
        if nu.below(p, low) and not n.unschedulable:
            klass = "under-utilized"
        elif nu.above(p, high):
            klass = "over-utilized"
            self._terminating_note(n, high)
        else:
            klass = "unschedulable" if n.unschedulable and nu.below(p, low) else "appropriately utilized"
        basis = "actual usage " if self.args.actual_usage else "Prometheus " if self.args.prometheus_query else ""
        self.handle.report_node(n.name, klass, f"{basis}{nu.describe(p, self.named)} ({limits})")
        return klass

    def _terminating_note(self, n: Node, high: dict[str, float]) -> None:
        """Say so when only pods already on their way out keep the node over its targets: re-running right after
        an eviction would otherwise plan more evictions from a node that is already being relieved."""
        if self.args.measured:
            return  # metrics already drop what a terminated container stops using
        count, rest = nu.without_terminating(self.handle.state, n, nu.usage(self.handle.state, n, self.tracked))
        if count and not nu.above(nu.percentages(rest, n), high):
            self.handle.info(f"node {n.name} is over-utilized only because of its {count} terminating pod(s), "
                             f"counted until they are gone as upstream counts them; without them "
                             f"{nu.describe(nu.percentages(rest, n), self.named)}")

    def estimate_node(self, node: Node) -> list[tuple[Pod, str]] | None:
        """The node's class from its own usage; on an over-utilized node, the pods that could move."""
        args = self.args
        if args.use_deviation_thresholds or args.measured:
            return None  # the thresholds follow the average of every node; metrics are not read for one node
        pct = nu.percentages(nu.usage(self.handle.state, node, self.tracked), node)
        if self._classify(node, pct, dict(args.thresholds), dict(args.target_thresholds)) != "over-utilized":
            return []
        excluded = set(args.evictable_namespaces.exclude) if args.evictable_namespaces else set()
        return nu.could_move(self.handle, node, excluded, "the node is over-utilized; whether it moves depends on "
                                                         "the room on under-utilized nodes")

    def _nothing_to_do(self, under: list[Node], over: list[Node], nodes: list[Node]) -> str:
        why = nu.nothing_to_do(under, nodes, self.args.number_of_nodes)
        if not why and not over:
            why = "no node is above the target thresholds"
        return why

    def _pct(self, used: dict[str, float], node: Node, r: str) -> float:
        cap = self._capacity(node).get(r, 0.0)
        return used[r] / cap * 100 if cap else 0.0
