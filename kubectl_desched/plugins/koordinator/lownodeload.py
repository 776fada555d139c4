"""LowNodeLoad (Koordinator): move pods off nodes whose actual load, as koordlet reports it in NodeMetric
objects, is above the high thresholds, while nodes under the low thresholds have room. Node pools may set
their own thresholds; "prod" thresholds apply to the usage of koord-prod pods only.

One invocation is one observation. koord-descheduler acts on a node only after it was above its high
thresholds in more than anomalyCondition.consecutiveAbnormalities runs in a row; here a node above them now
counts as abnormal (as with consecutiveAbnormalities 1), and the run says so when the policy asks for more."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kubectl_desched.errors import ConfigError
from kubectl_desched.framework import BalancePlugin, Handle, PluginArgs
from kubectl_desched.framework.args import Duration, IncludeExclude, LabelSelectorArg
from kubectl_desched.framework.flags import CliSurface
from kubectl_desched.framework.predicates import pod_matches_node_selector, pod_tolerates_taint
from kubectl_desched.framework.types import EvictOptions
from kubectl_desched.model.durations import parse_time
from kubectl_desched.model.metrics import KOORD_NODE_METRIC, NodeMetricView, koordinator_node_metrics
from kubectl_desched.model.objects import Node, Pod
from kubectl_desched.model.quantity import fmt_pct
from kubectl_desched.plugins.koordinator import classes as koord
from kubectl_desched.plugins.upstream import nodeutilization as nu

Thresholds = dict[str, float]


@dataclass
class AnomalyCondition:
    timeout: Duration | None = None
    consecutive_abnormalities: int = 0
    consecutive_normalities: int = 0


@dataclass
class PodSelector:
    name: str = ""
    selector: LabelSelectorArg | None = None


@dataclass
class NodePool:
    name: str = ""
    node_selector: LabelSelectorArg | None = None
    use_deviation_thresholds: bool = False
    high_thresholds: Thresholds | None = None
    low_thresholds: Thresholds | None = None
    prod_high_thresholds: Thresholds | None = None
    prod_low_thresholds: Thresholds | None = None
    resource_weights: dict[str, int] | None = None
    anomaly_condition: AnomalyCondition | None = None


DEFAULT_POOL = "default"
DEFAULT_ABNORMALITIES, DEFAULT_NORMALITIES = 5, 3


@dataclass
class LowNodeLoadArgs(PluginArgs):
    paused: bool = False
    dry_run: bool = False  # koord-descheduler's own dry run; ours is --dry-run
    number_of_nodes: int = 0
    node_metric_expiration_seconds: int = 180
    evictable_namespaces: IncludeExclude | None = None
    node_selector: LabelSelectorArg | None = None
    pod_selectors: list[PodSelector] = field(default_factory=list)
    node_fit: bool = True
    use_deviation_thresholds: bool = False
    high_thresholds: Thresholds = field(default_factory=dict)
    low_thresholds: Thresholds = field(default_factory=dict)
    prod_high_thresholds: Thresholds = field(default_factory=dict)
    prod_low_thresholds: Thresholds = field(default_factory=dict)
    resource_weights: dict[str, int] = field(default_factory=lambda: {"cpu": 1, "memory": 1})
    anomaly_condition: AnomalyCondition | None = field(default_factory=lambda: AnomalyCondition(
        Duration(60.0, "1m"), DEFAULT_ABNORMALITIES, DEFAULT_NORMALITIES))
    detector_cache_timeout: Duration | None = field(default_factory=lambda: Duration(300.0, "5m"))
    node_pools: list[NodePool] = field(default_factory=list)

    def validate(self, path: str) -> None:
        p = f"{path}." if path else ""
        if self.number_of_nodes < 0:
            raise ConfigError(f"{p}numberOfNodes", "must be greater than or equal to 0")
        if self.node_metric_expiration_seconds <= 0:
            raise ConfigError(f"{p}nodeMetricExpirationSeconds", "must be a positive number of seconds")
        for i, pool in enumerate(self.pools()):
            where = p if i == 0 else f"{p}nodePools[{i - 1}]."
            _validate_pool(pool, where)

    def pools(self) -> list[NodePool]:
        """The top-level thresholds as the first pool, then the configured pools, each with the top-level
        values where it leaves one unset (Koordinator's defaulting and conversion)."""
        weights = {"cpu": 1, "memory": 1, **{r: 1 for r in (*self.low_thresholds, *self.high_thresholds)}}
        given = {r: w for r, w in self.resource_weights.items() if w > 0}
        weights = {**weights, **given}
        anomaly = _with_anomaly_defaults(self.anomaly_condition, DEFAULT_ABNORMALITIES, DEFAULT_NORMALITIES)
        first = NodePool(DEFAULT_POOL, self.node_selector, self.use_deviation_thresholds, self.high_thresholds,
                         self.low_thresholds, self.prod_high_thresholds, self.prod_low_thresholds, weights, anomaly)
        out = [first]
        for pool in self.node_pools:
            out.append(NodePool(
                pool.name, pool.node_selector, pool.use_deviation_thresholds,
                self.high_thresholds if pool.high_thresholds is None else pool.high_thresholds,
                self.low_thresholds if pool.low_thresholds is None else pool.low_thresholds,
                self.prod_high_thresholds if pool.prod_high_thresholds is None else pool.prod_high_thresholds,
                self.prod_low_thresholds if pool.prod_low_thresholds is None else pool.prod_low_thresholds,
                weights if pool.resource_weights is None else pool.resource_weights,
                _with_anomaly_defaults(pool.anomaly_condition, anomaly.consecutive_abnormalities,
                                       anomaly.consecutive_normalities),
            ))
        return out


def _with_anomaly_defaults(given: AnomalyCondition | None, abnormal: int, normal: int) -> AnomalyCondition:
    if given is None:
        return AnomalyCondition(Duration(60.0, "1m"), abnormal, normal)
    return AnomalyCondition(given.timeout or Duration(60.0, "1m"), given.consecutive_abnormalities or abnormal,
                            given.consecutive_normalities or normal)


def _validate_pool(pool: NodePool, p: str) -> None:
    high, low = pool.high_thresholds or {}, pool.low_thresholds or {}
    prod_high, prod_low = pool.prod_high_thresholds or {}, pool.prod_low_thresholds or {}
    for key, values in (("highThresholds", high), ("lowThresholds", low),
                        ("prodHighThresholds", prod_high), ("prodLowThresholds", prod_low)):
        for r, v in values.items():
            if v < 0:
                raise ConfigError(f"{p}{key}.{r}", f"must be greater than or equal to 0, not {v:g}")
    for r, v in low.items():
        if r in high and v > high[r]:
            raise ConfigError(f"{p}lowThresholds.{r}", f"{v:g} is greater than highThresholds.{r} {high[r]:g}")
    for r, v in prod_high.items():
        if r in high and v > high[r]:
            raise ConfigError(f"{p}prodHighThresholds.{r}", f"{v:g} is greater than highThresholds.{r} {high[r]:g}")
    for r, v in prod_low.items():
        if r in prod_high and v > prod_high[r]:
            raise ConfigError(f"{p}prodLowThresholds.{r}",
                              f"{v:g} is greater than prodHighThresholds.{r} {prod_high[r]:g}")
    a = pool.anomaly_condition
    if a is not None and (a.consecutive_abnormalities <= 0 or a.consecutive_normalities <= 0):
        bad = "consecutiveAbnormalities" if a.consecutive_abnormalities <= 0 else "consecutiveNormalities"
        raise ConfigError(f"{p}anomalyCondition.{bad}", "must be greater than 0")


@dataclass
class _Levels:
    """One pool's four threshold sets in percent, every resource filled in as Koordinator fills them."""

    low: Thresholds
    high: Thresholds
    prod_low: Thresholds
    prod_high: Thresholds
    resources: list[str]

    @classmethod
    def of(cls, pool: NodePool) -> _Levels:
        low, high = dict(pool.low_thresholds or {}), dict(pool.high_thresholds or {})
        prod_low, prod_high = dict(pool.prod_low_thresholds or {}), dict(pool.prod_high_thresholds or {})
        names = list(dict.fromkeys([*low, *high, *prod_low, *prod_high, "memory"]))
        unset = 0.0 if pool.use_deviation_thresholds else 100.0
        for r in names:
            # A resource without a low threshold is not limited, even if a high one was given.
            if r not in low:
                low[r] = high[r] = unset
            if r not in prod_low:
                prod_low[r] = prod_high[r] = unset
        return cls(low, high, prod_low, prod_high, list(low))


@dataclass
class _NodeLoad:
    """A node's load in one pool: usage (system plus pods) and prod pods' usage, both in resource units,
    and the absolute thresholds; both usages shrink as pods are planned away or grow as pods are placed."""

    node: Node
    allocatable: Mapping[str, float]
    pods: list[Pod]
    prod_pods: list[Pod]
    usage: dict[str, float]
    prod_usage: dict[str, float]
    pod_usage: dict[str, dict[str, float]]
    start: dict[str, float]  # cpu, memory, pods as observed, for the nodes table
    moved: dict[str, float] = field(default_factory=dict)  # usage of the pods planned away
    low: dict[str, float] = field(default_factory=dict)
    high: dict[str, float] = field(default_factory=dict)
    prod_low: dict[str, float] = field(default_factory=dict)
    prod_high: dict[str, float] = field(default_factory=dict)

    def used(self, prod: bool) -> dict[str, float]:
        return self.prod_usage if prod else self.usage

    def ceiling(self, prod: bool) -> dict[str, float]:
        return self.prod_high if prod else self.high

    def over(self, prod: bool) -> list[str]:
        used = self.used(prod)
        return sorted(r for r, t in self.ceiling(prod).items() if used.get(r, 0.0) > t)

    def under(self, prod: bool) -> bool:
        used, limits = (self.prod_usage, self.prod_low) if prod else (self.usage, self.low)
        return not self.node.unschedulable and all(used.get(r, 0.0) <= t for r, t in limits.items())

    def percent(self, r: str, prod: bool) -> float:
        cap = self.allocatable.get(r, 0.0)
        return self.used(prod).get(r, 0.0) / cap * 100.0 if cap else 0.0


def _absolute(pct: float, capacity: float) -> float:
    return float(int(pct * 0.01 * capacity))  # Koordinator truncates to whole millicores / units


def _usage_score(used: Mapping[str, float], allocatable: Mapping[str, float], weights: Mapping[str, int]) -> int:
    """Koordinator's weighted node score: per resource min(used, cap) * 1000 // cap, weighted average."""
    score = weight_sum = 0
    for r, v in used.items():
        w = weights.get(r, 0)
        cap = int(allocatable.get(r, 0.0))
        score += (min(int(v), cap) * 1000 // cap if cap > 0 else 0) * w
        weight_sum += w
    return score // weight_sum if weight_sum else 0


def _match_score(pod_usage: Mapping[str, float], excess: Mapping[str, float], weights: Mapping[str, int]) -> float:
    """How well a pod's usage matches what the node is over by: 2 for an exact match, falling towards 1 for
    pods larger than the excess and towards 0 for smaller ones."""
    score, weight_sum = 0.0, 0
    for r, v in pod_usage.items():
        w = weights.get(r, 0)
        cap = int(excess.get(r, 0.0))
        if cap == 0:
            s = 0.0
        else:
            ratio = int(v) / cap
            s = 1 / ratio + 1 if ratio >= 1 else ratio
        score += s * w
        weight_sum += w
    return score / weight_sum if weight_sum else 0.0


# Koordinator's five classes of a node (none of them: appropriately utilized), and how the nodes table names them.
_SHOWN_AS = {"high": "over-utilized", "prod_high": "prod over-utilized", "low": "under-utilized",
             "both_low": "under-utilized", "prod_low": "prod under-utilized", "none": "appropriately utilized"}


def _source_order(load: _NodeLoad, prod: bool, weights: Mapping[str, int]) -> tuple[float, str]:
    """The busiest source first by the pool's weighted usage score; by name among equals."""
    return -_usage_score(load.used(prod), load.allocatable, weights), load.node.name


def _group(load: _NodeLoad) -> str:
    """Koordinator's order: under the low thresholds first (then by prod usage), then over the high ones."""
    if load.under(False):
        if load.over(True):
            return "prod_high"
        return "both_low" if load.under(True) else "low"
    if load.over(False):
        return "high"
    if load.over(True):
        return "prod_high"
    return "prod_low" if load.under(True) else "none"


class LowNodeLoad(BalancePlugin):
    """Evicts pods from nodes whose actual load is above the high thresholds, towards nodes under the low."""

    name = "LowNodeLoad"
    args_type = LowNodeLoadArgs
    # From flags: actual load, cpu and memory only, with headroom for load spikes.
    cli = CliSurface(
        flags=(*nu.threshold_flags("lowThresholds", "highThresholds", "lowThresholds", "highThresholds"),
               nu.DEVIATION, nu.NUMBER_OF_NODES),
        defaults=nu.paired_thresholds("lowThresholds", "highThresholds", {"cpu": 45.0, "memory": 55.0},
                                      {"cpu": 75.0, "memory": 80.0}))

    def __init__(self, args: LowNodeLoadArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.selectors = [s.selector.matcher() for s in args.pod_selectors if s.selector is not None]
        self.metrics: dict[str, NodeMetricView] = {}
        self.observed = handle.state.now

    @staticmethod
    def required_kinds(args: LowNodeLoadArgs) -> set[str]:
        return {KOORD_NODE_METRIC}

    # --- filters -----------------------------------------------------------------------------------------------

    def _pod_filter(self, pod: Pod) -> str | None:
        """Why the pod may not move (evictor filter, podSelectors, evictableNamespaces), or None."""
        if self.selectors and not any(m(pod.labels) for m in self.selectors):
            return "not selected by podSelectors"
        ns = self.args.evictable_namespaces
        if ns is not None and not ns.allows(pod.namespace):
            return f"namespace {pod.namespace} is not evictable (evictableNamespaces)"
        if not self.handle.evictor.filter(pod):
            return "kept by the evictor's filters"
        return None

    def _fits(self, pod: Pod, node: Node) -> bool:
        """Koordinator's NodeFit: selector and required affinity, NoSchedule/NoExecute taints, requests
        against what the node's pods request, schedulable."""
        if node.unschedulable or not pod_matches_node_selector(pod, node):
            return False
        if any(t.effect in ("NoSchedule", "NoExecute") and not pod_tolerates_taint(pod, t) for t in node.taints):
            return False
        used = self.handle.state.requested(node.name)
        return all(want <= node.allocatable.get(r, 0.0) - used.get(r, 0.0)
                   for r, want in pod.requests.items() if r != "pods")

    # --- one pool ----------------------------------------------------------------------------------------------

    def balance(self, nodes: list[Node]) -> None:
        args, handle = self.args, self.handle
        if args.paused:
            handle.info("paused: LowNodeLoad does nothing")
            return
        self.metrics = koordinator_node_metrics(handle.state, self.name)
        self.observed = handle.state.now
        if handle.state.from_file:
            # A snapshot's time is unknown: measure the age of each report from the newest one in it.
            self.observed = max((v.update_time for v in self.metrics.values() if v.update_time), default=self.observed)
        pools = args.pools()
        asked = max(p.anomaly_condition.consecutive_abnormalities for p in pools if p.anomaly_condition)
        if asked > 1:
            handle.info(f"anomalyCondition.consecutiveAbnormalities {asked}: koord-descheduler waits until a node "
                        f"has been above its high thresholds in more than {asked} runs in a row; this run is one "
                        f"observation, so every node above them now counts as abnormal")
        processed: set[str] = set()
        for pool in pools:
            self._pool(pool, nodes, processed, named=len(pools) > 1)

    def _pool(self, pool: NodePool, nodes: list[Node], processed: set[str], *, named: bool) -> None:
        handle = self.handle
        label = f"pool {pool.name}: " if named else ""
        if pool.node_selector is not None:
            match = pool.node_selector.matcher()
            nodes = [n for n in nodes if n.name not in processed and match(n.labels)]
        if not nodes:
            handle.info(f"{label}no nodes")
            return
        levels = _Levels.of(pool)
        loads = self._loads(nodes, levels, pool, label)
        now = {ld.node.name: self._percents(ld, {}) for ld in loads}
        self._classify_and_move(loads, nodes, levels, pool, label, processed)
        for ld in loads:
            handle.report_usage(ld.node.name, "load from NodeMetric", now[ld.node.name],
                                self._percents(ld, ld.moved))

    @staticmethod
    def _percents(load: _NodeLoad, minus: Mapping[str, float]) -> dict[str, float]:
        """cpu, memory and pods as a percent of the node's allocatable, without `minus`."""
        out = {}
        for r in ("cpu", "memory", "pods"):
            cap = load.allocatable.get(r, 0.0)
            used = load.start.get(r, 0.0) - minus.get(r, 0.0)
            out[r] = used / cap * 100.0 if cap else 0.0
        return out

    def _classify_and_move(self, loads: list[_NodeLoad], nodes: list[Node], levels: _Levels, pool: NodePool,
                           label: str, processed: set[str]) -> None:
        handle = self.handle
        prod_set = bool(pool.prod_low_thresholds or pool.prod_high_thresholds)
        groups: dict[str, list[_NodeLoad]] = {g: [] for g in _SHOWN_AS}
        for load in loads:
            group = _group(load)
            groups[group].append(load)
            klass = _SHOWN_AS[group] if prod_set or group != "prod_low" else "appropriately utilized"
            self._report(load, klass, levels, pool, label, prod_set)
        low, high, prod_low, prod_high, both_low = (groups[g] for g in ("low", "high", "prod_low", "prod_high",
                                                                         "both_low"))

        why = ""
        all_low = len(low) + len(prod_low) + len(both_low)
        if not high and not prod_high:
            why = "no node is above its high thresholds"
        elif not all_low:
            why = "no node is under its low thresholds"
        elif all_low <= self.args.number_of_nodes:
            why = f"{all_low} node(s) under the low thresholds, not more than numberOfNodes {self.args.number_of_nodes}"
        elif all_low == len(nodes):
            why = "all nodes are under the low thresholds"
        if why:
            handle.info(label + why)
            for load in high + prod_high:
                for pod in load.pods:
                    handle.note(pod, f"not moved: {why}")
            return

        weights = pool.resource_weights or {}
        for loads, prod in ((high, False), (prod_high, True)):
            loads.sort(key=functools.partial(_source_order, prod=prod, weights=weights))
        self._move(high, low, prod_high, prod_low, both_low, levels, pool)
        processed.update(load.node.name for load in high)

    def _loads(self, nodes: list[Node], levels: _Levels, pool: NodePool, label: str) -> list[_NodeLoad]:
        """Usage from each node's NodeMetric; nodes without a fresh one are left out, as upstream does."""
        state, handle = self.handle.state, self.handle
        loads = []
        for n in nodes:
            view = self.metrics.get(n.name)
            stale = self._stale(view)
            if stale:
                handle.report_node(n.name, "no load data", label + stale)
                for pod in state.pods_on_node(n.name):
                    handle.note(pod, f"not moved: {stale}")
                continue
            assert view is not None
            pods = state.pods_on_node(n.name)
            prod_pods = [p for p in pods if koord.is_prod(p)]
            prod_keys = {p.key for p in prod_pods}
            total = dict(view.system)
            prod_total: dict[str, float] = {}
            for k, u in view.pods.items():
                for r, v in u.items():
                    total[r] = total.get(r, 0.0) + v
                if k in prod_keys:
                    for r, v in u.items():
                        prod_total[r] = prod_total.get(r, 0.0) + v
            usage = {r: total.get(r, 0.0) for r in levels.resources}
            prod_usage = {r: prod_total.get(r, 0.0) for r in levels.resources}
            usage["pods"], prod_usage["pods"] = float(len(pods)), float(len(prod_pods))
            start = {"cpu": total.get("cpu", 0.0), "memory": total.get("memory", 0.0), "pods": float(len(pods))}
            loads.append(_NodeLoad(n, koord.raw_allocatable(n), pods, prod_pods, usage, prod_usage, view.pods,
                                   start))
        self._set_thresholds(loads, levels, pool)
        return loads

    def _stale(self, view: NodeMetricView | None) -> str:
        if view is None:
            return "no NodeMetric for the node"
        if not view.has_node_metric or view.update_time is None:
            return "its NodeMetric has no report yet"
        age = (self.observed - view.update_time).total_seconds()
        limit = self.args.node_metric_expiration_seconds
        if age >= limit:
            return f"its NodeMetric is {int(age)}s old (nodeMetricExpirationSeconds {limit})"
        return ""

    @staticmethod
    def _set_thresholds(loads: list[_NodeLoad], levels: _Levels, pool: NodePool) -> None:
        avg: dict[str, float] = {}
        prod_avg: dict[str, float] = {}
        if pool.use_deviation_thresholds and loads:
            for target, prod in ((avg, False), (prod_avg, True)):
                for r in levels.resources:
                    target[r] = sum(ld.percent(r, prod) for ld in loads) / len(loads)
        for ld in loads:
            for r in levels.resources:
                cap = ld.allocatable.get(r, 0.0)
                for prod, lo, hi in ((False, levels.low, levels.high), (True, levels.prod_low, levels.prod_high)):
                    # A low threshold without a high one leaves the high at 0%, as in Koordinator.
                    if not pool.use_deviation_thresholds:
                        low_pct, high_pct = lo[r], hi.get(r, 0.0)
                    elif lo[r] == 0:  # an unset resource is not limited
                        low_pct = high_pct = 100.0
                    else:
                        mean = (prod_avg if prod else avg).get(r, 0.0)
                        low_pct = min(100.0, max(0.0, mean - lo[r]))
                        high_pct = min(100.0, max(0.0, mean + hi.get(r, 0.0)))
                    (ld.prod_low if prod else ld.low)[r] = _absolute(low_pct, cap)
                    (ld.prod_high if prod else ld.high)[r] = _absolute(high_pct, cap)

    def _report(self, load: _NodeLoad, klass: str, levels: _Levels, pool: NodePool, label: str,
                prod_set: bool) -> None:
        shown = [r for r in levels.resources if r in (pool.low_thresholds or {}) or r in (pool.high_thresholds or {})]
        shown = shown or levels.resources
        text = ", ".join(f"{r} {fmt_pct(load.percent(r, False))}" for r in shown)
        limits = ", ".join(f"{r} {fmt_pct(self._pct(load, r, load.low))}-{fmt_pct(self._pct(load, r, load.high))}"
                           for r in shown)
        detail = f"{label}load {text} (low-high {limits})"
        if prod_set:
            detail += "; prod " + ", ".join(f"{r} {fmt_pct(load.percent(r, True))}" for r in shown)
        self.handle.report_node(load.node.name, klass, detail)

    @staticmethod
    def _pct(load: _NodeLoad, r: str, absolute: Mapping[str, float]) -> float:
        cap = load.allocatable.get(r, 0.0)
        return absolute.get(r, 0.0) / cap * 100.0 if cap else 0.0

    # --- moving pods -------------------------------------------------------------------------------------------

    def _move(self, high: list[_NodeLoad], low: list[_NodeLoad], prod_high: list[_NodeLoad],
              prod_low: list[_NodeLoad], both_low: list[_NodeLoad], levels: _Levels, pool: NodePool) -> None:
        resources = levels.resources

        def room(dests: list[_NodeLoad], prod: bool) -> dict[str, float]:
            return {r: sum(d.ceiling(prod)[r] - d.used(prod)[r] for d in dests) for r in resources}

        only_low, prod_only, both, prod_both = room(low, False), room(prod_low, True), room(both_low, False), \
            room(both_low, True)
        pool_room = {r: only_low[r] + both[r] for r in resources}
        self._balance(high, low + both_low, pool_room, prod=False, pool=pool)
        # Room left on nodes under both thresholds is shared with prod balancing.
        both = {r: min(both[r], pool_room[r]) for r in resources}
        prod_room = {r: prod_only[r] + (both[r] if prod_both[r] > both[r] else prod_both[r]) for r in resources}
        self._balance(prod_high, prod_low + both_low, prod_room, prod=True, pool=pool)

    def _balance(self, sources: list[_NodeLoad], targets: list[_NodeLoad], room: dict[str, float], *,
                 prod: bool, pool: NodePool) -> None:
        handle = self.handle
        if not targets:
            for src in sources:
                for pod in src.prod_pods if prod else src.pods:
                    handle.note(pod, "not moved: no node is under the low thresholds to take it")
            return
        weights = pool.resource_weights or {}
        resources = [r for r in targets[0].ceiling(prod) if r in targets[0].used(prod)]
        space = _FirstFit([{r: d.ceiling(prod)[r] - d.used(prod)[r] for r in resources} for d in targets], resources)
        for src in sources:
            removable = []
            # Each pod that fits keeps its usage on its destination, so the order pods are looked at decides which
            # fit when room is short. Koordinator's is its informer's (varying); ours is the API's list order
            # (namespace, name), so a snapshot decides as the live cluster does, whatever order its file has.
            for pod in sorted(src.prod_pods if prod else src.pods, key=lambda p: (p.namespace, p.name)):
                why = self._pod_filter(pod) or (self._no_destination(pod, src, targets, space, prod)
                                                if self.args.node_fit else None)
                if why:
                    handle.note(pod, f"not moved: {why}")
                else:
                    removable.append(pod)
            removable.sort(key=self._order(src, prod, weights))
            self._evict(removable, src, room, prod, pool)

    def _no_destination(self, pod: Pod, src: _NodeLoad, targets: list[_NodeLoad], space: _FirstFit,
                        prod: bool) -> str | None:
        """None when some destination fits the pod and stays under its high thresholds with the pod's usage
        added; like Koordinator, that usage then stays counted on the first such destination."""
        usage = src.pod_usage.get(pod.key)
        if usage is None:
            return "its usage is not in the node's NodeMetric"
        i = space.first(usage, lambda i: self._fits(pod, targets[i].node))
        if i is None:
            return "no node under the low thresholds fits it with room under its high thresholds"
        used = targets[i].used(prod)
        for r in space.resources:
            used[r] += usage.get(r, 0.0)
        space.take(i, usage)
        return None

    @staticmethod
    def _order(src: _NodeLoad, prod: bool, weights: Mapping[str, int]) -> Callable[[Pod], tuple]:
        """Koordinator's eviction order: priority class, priority, QoS, deletion and eviction cost, then the pod
        whose usage best matches the excess (pods with no usage data last), then the newest."""
        used, ceiling = src.used(prod), src.ceiling(prod)
        over = src.over(prod)
        excess = {r: used[r] - ceiling[r] for r in over}
        over_weights = {r: weights.get(r, 0) for r in over}

        def key(pod: Pod) -> tuple:
            usage = src.pod_usage.get(pod.key)
            match = -_match_score(usage, excess, over_weights) if usage is not None else 0.0
            created = parse_time(pod.created)
            newest_first = -created.timestamp() if created else 0.0
            return (*koord.priority_key(pod), usage is None, match, newest_first, pod.key)

        return key

    def _evict(self, pods: list[Pod], src: _NodeLoad, room: dict[str, float], prod: bool, pool: NodePool) -> None:
        handle, evictor = self.handle, self.handle.evictor
        for i, pod in enumerate(pods):
            why_stop = self._stop(src, room, prod)
            if why_stop:
                for rest in pods[i:]:
                    handle.note(rest, f"not moved: {why_stop}")
                return
            if not evictor.pre_eviction_filter(pod):
                continue
            if not evictor.evict(pod, EvictOptions(self.name, self._reason(src, prod, pool))):
                continue
            usage = src.pod_usage.get(pod.key)
            src.moved["pods"] = src.moved.get("pods", 0.0) + 1
            if usage is None:
                continue
            for r in ("cpu", "memory"):
                src.moved[r] = src.moved.get(r, 0.0) + usage.get(r, 0.0)
            for r in room:
                delta = 1.0 if r == "pods" else usage.get(r, 0.0)
                room[r] -= delta
                if r in src.usage:
                    src.usage[r] -= delta
                if prod and r in src.prod_usage:
                    src.prod_usage[r] -= delta

    @staticmethod
    def _stop(src: _NodeLoad, room: Mapping[str, float], prod: bool) -> str:
        if not src.over(prod):
            return f"node is back under its {'prod ' if prod else ''}high thresholds"
        full = next((r for r, v in room.items() if v <= 0), None)
        return f"nodes under the low thresholds have no {full} left below their high thresholds" if full else ""

    def _reason(self, src: _NodeLoad, prod: bool, pool: NodePool) -> str:
        kind = "prod usage" if prod else "load"
        parts = []
        for r in src.over(prod):
            limit = self._pct(src, r, src.ceiling(prod))
            parts.append(f"{r} {fmt_pct(src.percent(r, prod))} > {fmt_pct(limit)}")
        where = f" (pool {pool.name})" if pool.name != DEFAULT_POOL else ""
        return f"node {kind} above high threshold{where}: " + ", ".join(parts)


class _FirstFit:
    """The destinations in order with their room (high threshold minus usage) per resource. Finds the first
    destination with room for a pod's usage that also passes a fit check, pruning whole ranges whose largest
    room is too small: Koordinator scans every destination for every pod, which is quadratic at scale."""

    def __init__(self, rooms: list[dict[str, float]], resources: list[str]) -> None:
        self.resources = resources
        size = 1
        while size < len(rooms):
            size *= 2
        self.size = size
        self.tree = {r: [-math.inf] * (2 * size) for r in resources}
        for r, t in self.tree.items():
            for i, room in enumerate(rooms):
                t[size + i] = room[r]
            for i in range(size - 1, 0, -1):
                t[i] = max(t[2 * i], t[2 * i + 1])

    def first(self, need: Mapping[str, float], accept: Callable[[int], bool]) -> int | None:
        wants = [(self.tree[r], need.get(r, 0.0)) for r in self.resources]
        stack = [1]
        while stack:
            node = stack.pop()
            if not all(t[node] >= want for t, want in wants):  # some resource has no room anywhere below
                continue
            if node >= self.size:
                if accept(node - self.size):
                    return node - self.size
                continue
            stack.append(2 * node + 1)
            stack.append(2 * node)
        return None

    def take(self, index: int, usage: Mapping[str, float]) -> None:
        for r, t in self.tree.items():
            if not usage.get(r):
                continue
            node = self.size + index
            t[node] -= usage.get(r, 0.0)
            node //= 2
            while node:
                t[node] = max(t[2 * node], t[2 * node + 1])
                node //= 2
