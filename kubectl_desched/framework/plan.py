"""Planning: the evictor plugins talk to while they run. It applies the scope and the profile's filters,
enforces the global limits, and records candidates instead of evicting; a planned pod disappears from
the state so later plugins do not count or pick it again (upstream's dry-run behaviour)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from kubectl_desched.framework.overlay import PlannedState
from kubectl_desched.framework.placement import (
    LARGE_PLAN,
    Destination,
    Estimator,
    Placement,
    over_targets,
    workload_of,
)
from kubectl_desched.framework.surge import Target, surge_target
from kubectl_desched.framework.types import EvictOptions, EvictorPlugin, EvictOutcome, EvictStatus, Plugin
from kubectl_desched.model.objects import Pod, PodDisruptionBudget
from kubectl_desched.model.state import ClusterState

ScopeCheck = Callable[[Pod], str | None]
# After this many futile moves in a row from one node, a plugin is told to leave that node (as when its eviction
# limit is reached): at 150,000 pods an over-utilized node's pods all land on the same wrong node, and trying each
# doubled the plan's time.
FUTILE_STREAK = 8
# Past LARGE_PLAN tried moves (a cluster-wide reshuffle, where the estimate already scores fewer nodes) half as many:
# at 150,000 pods the futile tries were a third of the plan's time.
LARGE_PLAN_FUTILE_STREAK = 4


@dataclass
class Limits:
    """What stops one more eviction: maxNoOfPodsToEvictPerNode / PerNamespace / Total (None is unlimited, 0 forbids
    evictions), this tool's --max-per-workload, and whether a PodDisruptionBudget's remaining budget does."""

    per_node: int | None = None
    per_namespace: int | None = None
    total: int | None = None
    per_workload: int | None = None  # pods of one controller (e.g. one ReplicaSet); not a policy field upstream
    # True: a pod its PDB would refuse is kept and the plugin goes on, as upstream's real run does after a 429.
    # False: PDBs are ignored as upstream's dry run ignores them (a warning on the candidate instead).
    respect_pdbs: bool = True
    # False: a pod whose replacement the placement estimate lands where the move changes nothing is kept and the
    # plugin goes on (futility below). True plans it anyway, as upstream does, with the reason as a warning.
    keep_futile: bool = False
    # --cordon: the nodes a plugin empties (Plugin.empties) are cordoned before the first eviction, so the estimate
    # lands no replacement on them. --surge: a Deployment's pod its PDB refuses, or its workload's only pod,
    # moves replacement first (framework/surge.py) instead of being kept.
    cordon: bool = False
    surge: bool = False


@dataclass(slots=True)
class Candidate:
    pod: Pod
    plugin: str
    reason: str
    profile: str
    warnings: list[str] = field(default_factory=list)
    # The warnings that say a PodDisruptionBudget will refuse it, counting the candidates planned before it: a
    # server dry run, which uses up no budget, must not call such a pod "would evict".
    pdb_refusals: list[str] = field(default_factory=list)
    # Why the move would change nothing, planned anyway with --keep-futile (else such a pod is kept).
    futile: str | None = None
    method: str = "evict"  # or "surge": scaled up by one, the pod removed once its replacement is Ready
    why_surge: str = ""  # what makes an eviction unsafe for it (the PDB, its single replica)


@dataclass
class NodeReport:
    plugin: str
    klass: str
    detail: str


@dataclass
class UsageReport:
    """A node's utilization as a plugin measured it (e.g. actual usage), in percent of allocatable."""

    plugin: str
    basis: str  # what the numbers are, e.g. "load from NodeMetric"
    now: dict[str, float]
    after: dict[str, float]


@dataclass
class MetricReport:
    """What a metrics source measured for a node: a Prometheus query's sample (in [0, 1]), or None for none."""

    plugin: str
    source: str  # "Prometheus"
    query: str
    value: float | None


class EvictionPlan:
    """Everything a run decided: candidates, notes on pods looked at but kept, node classes."""

    def __init__(self, state: ClusterState, limits: Limits) -> None:
        self.cluster = state  # as read: never written
        self.state = PlannedState(state)  # as this plan leaves it: what plugins and the readers after them see
        self.limits = limits
        self.candidates: list[Candidate] = []
        self.notes: dict[int, tuple[tuple[str, str], ...]] = defaultdict(tuple)  # id(pod) -> (plugin, text)s
        self._last_note = ("", "")
        self.node_reports: dict[str, list[NodeReport]] = defaultdict(list)
        self.usage_reports: dict[str, UsageReport] = {}  # the first plugin to measure a node wins
        self.metric_reports: dict[str, MetricReport] = {}  # likewise
        # Percent-of-allocatable request limits a Balance plugin moves pods under (LowNodeUtilization's target
        # thresholds), so the placement estimate can say when a destination would end up over them.
        self.targets: dict[str, dict[str, float]] = {}
        self.messages: list[tuple[str, str]] = []  # (plugin, text)
        self.errors: list[str] = []
        self.traces: dict[str, str] = {}  # error line -> a failing plugin's traceback, shown at -v 6 and above
        self.evictors: list[ProfileEvictor] = []
        # A run on one node (explain's quick read): plugins that need the other nodes were not run; some
        # estimated from the node alone, with the pods that could move (id(pod) -> (plugin, why)).
        self.one_node = False
        self.not_evaluated: list[str] = []
        self.estimated: list[str] = []
        self.maybe: dict[int, list[tuple[str, str]]] = defaultdict(list)
        self._per_node: Counter[str] = Counter()
        self._per_ns: Counter[str] = Counter()
        self._pdb_used: Counter[tuple[str, str]] = Counter()
        self._per_workload: Counter[tuple[str, str, str]] = Counter()
        # id(pod) -> (pod, plugin, why): selected, but kept because its PDB would refuse it, or because the move
        # would change nothing
        self.kept_by_pdb: dict[int, tuple[Pod, str, str]] = {}
        self.kept_futile: dict[int, tuple[Pod, str, str]] = {}
        self._leaving: dict[tuple[str, str, str], set[str]] = defaultdict(set)  # workload -> nodes it is evicted from
        self.futile_streak: Counter[tuple[str, str]] = Counter()  # (plugin, node) -> futile moves in a row
        self.futile_stops: dict[str, list[str]] = defaultdict(list)  # plugin -> nodes it was told to leave
        self.futile_stop_streak: dict[str, int] = {}  # plugin -> the streak that made it leave the last one
        self._estimator: Estimator | None = None
        self.emptying: dict[str, str] = {}  # --cordon: node -> the plugin emptying it, cordoned before evicting
        self._emptying_started: set[str] = set()

    @property
    def estimator(self) -> Estimator:
        """The placement estimate, move by move in eviction order; made at the first move (a plan with none
        builds nothing)."""
        if self._estimator is None:
            self._estimator = Estimator(self.cluster)
        return self._estimator

    @property
    def placement(self) -> Placement | None:
        """Each candidate's estimated destination; None on explain's quick read of one node, which cannot place."""
        return self._estimator.placement if self._estimator is not None else None

    def note(self, pod: Pod, plugin: str, text: str) -> None:
        """Why a pod looked at is kept. A plugin stopping on a node notes its remaining pods with equal texts, in a
        row: they share the first one's entry (the new text is dropped), which at 150,000 pods is megabytes
        (tuples, not lists, for the same reason)."""
        last = self._last_note
        entry = last if last[1] == text and last[0] == plugin else (plugin, text)
        self._last_note = entry
        self.notes[id(pod)] += (entry,)

    def limit_hit(self, pod: Pod) -> str | None:
        """Which global limit stops one more eviction of this pod; checked total, node, namespace."""
        hit = self.limit_status(pod)
        return hit[1] if hit else None

    def limit_status(self, pod: Pod) -> tuple[EvictStatus, str] | None:
        lim = self.limits
        if lim.total is not None and len(self.candidates) >= lim.total:
            return EvictStatus.TOTAL_LIMIT, f"maxNoOfPodsToEvictTotal ({lim.total}) reached"
        if lim.per_node is not None and self._per_node[pod.node_name] >= lim.per_node:
            return EvictStatus.NODE_LIMIT, f"maxNoOfPodsToEvictPerNode ({lim.per_node}) reached on {pod.node_name}"
        if lim.per_namespace is not None and self._per_ns[pod.namespace] >= lim.per_namespace:
            return (EvictStatus.NAMESPACE_LIMIT,
                    f"maxNoOfPodsToEvictPerNamespace ({lim.per_namespace}) reached in {pod.namespace}")
        w = workload_of(pod)
        if lim.per_workload is not None and w is not None and self._per_workload[w] >= lim.per_workload:
            return (EvictStatus.WORKLOAD_LIMIT,
                    f"--max-per-workload ({lim.per_workload}) reached for {w[1]} {w[0]}/{w[2]}")
        return None

    def total_reached(self) -> bool:
        return self.limits.total is not None and len(self.candidates) >= self.limits.total

    def node_reached(self, node: str) -> bool:
        return self.limits.per_node is not None and self._per_node[node] >= self.limits.per_node

    def add(self, pod: Pod, options: EvictOptions, profile: str, futile: str | None = None,
            surge: str = "") -> Candidate:
        refusals = [] if surge else self._pdb_refusals(pod)  # a surge sends no eviction: no budget is spent
        cand = Candidate(pod, options.plugin, options.reason, profile, list(refusals), refusals, futile,
                         "surge" if surge else "evict", surge)
        if futile:
            cand.warnings.append(f"{futile}: the move may change nothing (--keep-futile)")
        self.candidates.append(cand)
        self._per_node[pod.node_name] += 1
        self._per_ns[pod.namespace] += 1
        w = workload_of(pod)
        if w is not None:
            self._per_workload[w] += 1
            self._leaving[w].add(pod.node_name)
        self.state.plan(pod)
        return cand

    def futility(self, pod: Pod, dest: Destination, plugin: Plugin | None) -> str | None:
        """Why evicting the pod would change nothing, its replacement landing at `dest`: it stays Pending; or,
        for a plugin that wants the pod elsewhere, any node the scheduler may pick (ties included) is its own
        node, a node its workload is being evicted from (a swap), a node the plugin puts in the source node's
        class, a node the landing puts over the plugin's targets, or one the plugin's own rule refuses."""
        if dest.node is None:
            return f"its replacement would stay Pending ({dest.why})" if dest.recreated else None
        if plugin is None or not plugin.relocates:
            return None
        w = workload_of(pod)
        leaving = self._leaving.get(w, ()) if w is not None else ()
        source = self._klass(pod.node_name, plugin.name)
        for name in dict.fromkeys((dest.node, *dest.tied)):
            if name == pod.node_name:
                return f"would land back on {name}" + ("" if name == dest.node else f", tied with {dest.node}")
            where = f"would land on {name}" + ("" if name == dest.node else f", tied with {dest.node}")
            if name in leaving and w is not None:
                return f"{where}, which another pod of {w[1]} {w[0]}/{w[2]} is leaving"
            klass = self._klass(name, plugin.name)
            if source and klass == source and klass != "appropriately utilized":
                return f"{where}, also {klass}"
            over = self._over_targets(pod, name, plugin.name)
            if over:
                return f"{where}, putting it over {plugin.name}'s targets ({over})"
            node = self.cluster.nodes.get(name)
            problem = plugin.landing_problem(pod, node, self.estimator) if node is not None else None
            if problem:
                return problem + ("" if name == dest.node else f" (tied with {dest.node})")
        return None

    def start_emptying(self, plugin: Plugin) -> None:
        """--cordon, at the plugin's first move: every node it reported in its emptying class (and not already
        unschedulable) is cordoned before any eviction, so no replacement is placed on one."""
        if plugin.empties is None or plugin.name in self._emptying_started:
            return
        self._emptying_started.add(plugin.name)
        names = [name for name, reports in self.node_reports.items()
                 if any(r.plugin == plugin.name and r.klass == plugin.empties for r in reports)
                 and name not in self.emptying and (n := self.cluster.nodes.get(name)) is not None
                 and not n.unschedulable]
        for name in names:
            self.emptying[name] = plugin.name
        self.estimator.cordon(names)

    def surge_reason(self, pod: Pod, refused: str | None) -> str:
        """With --surge, what makes an eviction unsafe for this pod, "" when nothing does: its PDB refuses it, or
        it is its workload's only pod."""
        return refused or self.only_pod(pod, self.state.owner_pods(pod))

    def only_pod(self, pod: Pod, siblings: list[Pod]) -> str:
        """"its workload's only pod" when it is the only one of `siblings` (its ReplicaSet's pods, those the plan
        evicts before it left out), a single replica, else "". With more pods a surge needs them all Ready
        (surge_blocker), and an eviction leaves the others serving."""
        if not pod.ready or pod.controller is None or pod.controller.kind != "ReplicaSet":
            return ""
        live = [p for p in siblings if not p.terminating]
        return "its workload's only pod" if live == [pod] else ""

    def surge_target(self, pod: Pod) -> Target | str:
        """The Deployment a surge of this pod scales, or why it cannot (framework/surge.py's rules on the objects
        read), also when a ReplicaSet scaling back would remove another pod: it removes an unready pod before any
        ready one, whatever its deletion cost. The plan, apply's re-check and explain all ask this."""
        target = surge_target(pod, self.cluster.extra)
        if isinstance(target, str):
            return target
        unready = [p for p in self.state.owner_pods(pod) if not p.terminating and not p.ready]
        if unready:
            return (f"{len(unready)} other pod(s) of ReplicaSet {target.replicaset} are not Ready, and scaling "
                    "back would remove one of them instead")
        return target

    def _klass(self, node: str, plugin: str) -> str | None:
        return next((r.klass for r in self.node_reports.get(node, ()) if r.plugin == plugin), None)

    def _over_targets(self, pod: Pod, name: str, plugin: str) -> str:
        limits = self.targets.get(plugin)
        node = self.cluster.nodes.get(name)
        if not limits or node is None:
            return ""
        used = self.estimator.placement.used.get(name, {})
        landed = {r: used.get(r, 0.0) + (1.0 if r == "pods" else pod.requests.get(r, 0.0)) for r in limits}
        return ", ".join(over_targets(landed, node, limits))

    def pdb_refusal(self, pod: Pod) -> str | None:
        """Why the API would refuse this pod's eviction (429), counting the candidates planned before it; None
        when every PodDisruptionBudget covering it has budget left. Spends nothing."""
        for pdb in self.state.pdbs_for(pod):
            if not pdb.fresh:
                return f"PodDisruptionBudget {pdb.name}: status not yet observed, the API would refuse the eviction"
            used = self._pdb_used[(pdb.namespace, pdb.name)]
            if pdb.disruptions_allowed - used <= 0:
                return f"{budget_spent(pdb, used)}, the API would refuse the eviction"
        return None

    def _pdb_refusals(self, pod: Pod) -> list[str]:
        """Evictions that the API will refuse (429) because a PDB has no budget left for them."""
        out = []
        for pdb in self.state.pdbs_for(pod):
            key = (pdb.namespace, pdb.name)
            left = pdb.disruptions_allowed - self._pdb_used[key]
            self._pdb_used[key] += 1
            if not pdb.fresh:
                out.append(f"PodDisruptionBudget {pdb.name}: status not yet observed, eviction will be refused")
            elif left <= 0:
                out.append(f"{budget_spent(pdb, self._pdb_used[key] - 1)}, eviction will be refused")
        return out


def holds_node(pod: Pod) -> bool:
    """Whether the pod keeps its node from being removed: anything but a DaemonSet's, a mirror or a finished pod,
    or one already being deleted."""
    ref = pod.controller
    return not (pod.is_terminal or pod.terminating or (ref is not None and ref.kind == "DaemonSet")
                or "kubernetes.io/config.mirror" in pod.annotations)


def budget_spent(pdb: PodDisruptionBudget, used: int) -> str:
    """Why a budget has no disruption left: as the disruption controller reports it, or spent by the pods this plan
    evicts before (said only where that is so)."""
    if pdb.disruptions_allowed <= 0:
        counts = f" ({pdb.current_healthy} healthy, {pdb.desired_healthy} required)" \
            if pdb.current_healthy is not None and pdb.desired_healthy is not None else ""
        return f"PodDisruptionBudget {pdb.name} allows no disruption{counts}"
    return (f"PodDisruptionBudget {pdb.name} allows {pdb.disruptions_allowed} disruption(s), all taken by the "
            f"{used} pod(s) planned before it")


class ProfileEvictor:
    """The Evictor a profile's plugins get: scope, then the profile's filter plugins, then limits, budgets and
    whether the move would change anything."""

    def __init__(self, plan: EvictionPlan, profile: str, scope: ScopeCheck) -> None:
        self.plan = plan
        self.profile = profile
        self.scope = scope
        self.filters: list[EvictorPlugin] = []
        self.pre_filters: list[EvictorPlugin] = []
        self.plugins: dict[str, Plugin] = {}  # the profile's plugins by name, to judge their landings

    def why_kept(self, pod: Pod) -> str | None:
        """The first reason this pod may not be evicted at all, in explain's words."""
        reason = self.scope(pod)
        if reason:
            return reason
        for f in self.filters:
            reason = f.filter(pod)
            if reason:
                return reason
        return None

    def why_not_now(self, pod: Pod) -> str | None:
        for f in self.pre_filters:
            reason = f.pre_eviction_filter(pod)
            if reason:
                return reason
        return None

    def filter(self, pod: Pod) -> bool:
        return self.why_kept(pod) is None

    def pre_eviction_filter(self, pod: Pod) -> bool:
        reason = self.why_not_now(pod)
        if reason:
            self.plan.note(pod, "preEvictionFilter", reason)
        return reason is None

    def evict(self, pod: Pod, options: EvictOptions) -> EvictOutcome:
        if self.plan.state.is_planned(pod):
            return self._outcome(pod, EvictStatus.FILTERED)
        hit = self.plan.limit_status(pod)
        if hit:
            self.plan.note(pod, options.plugin, f"selected ({options.reason}) but {hit[1]}")
            return self._outcome(pod, hit[0])
        limits = self.plan.limits
        refused = self.plan.pdb_refusal(pod) if limits.respect_pdbs else None
        surge = self.plan.surge_reason(pod, refused) if limits.surge else ""
        if surge:
            target = self.plan.surge_target(pod)
            if isinstance(target, str):
                surge = ""
                if refused:
                    refused = f"{refused}; --surge cannot move it: {target}"
                else:
                    self.plan.note(pod, options.plugin, f"--surge cannot move it ({target}): evicted instead")
            else:
                refused = None
        if refused:  # kept, and the plugin goes on to its next pod as upstream's real run does after a 429
            self.plan.kept_by_pdb[id(pod)] = (pod, options.plugin, refused)
            self.plan.note(pod, options.plugin, f"selected ({options.reason}) but kept: {refused}")
            return self._outcome(pod, EvictStatus.KEPT_BY_PDB)
        futile = None
        plugin = self.plugins.get(options.plugin)
        if limits.cordon and plugin is not None and not self.plan.one_node:
            self.plan.start_emptying(plugin)
        if not self.plan.one_node:  # one node alone cannot say where a replacement lands
            estimator = self.plan.estimator
            dest = estimator.move(pod, surge=bool(surge))
            if surge and dest.node is None and dest.recreated:
                estimator.undo()
                why = f"{surge}; --surge cannot move it: no node has room for the extra pod ({dest.why})"
                self.plan.kept_by_pdb[id(pod)] = (pod, options.plugin, why)
                self.plan.note(pod, options.plugin, f"selected ({options.reason}) but kept: {why}")
                return self._outcome(pod, EvictStatus.KEPT_BY_PDB)
            futile = self.plan.futility(pod, dest, plugin)
            streak = (options.plugin, pod.node_name)
            if futile and not self.plan.limits.keep_futile:
                estimator.undo()
                self.plan.kept_futile[id(pod)] = (pod, options.plugin, futile)
                self.plan.note(pod, options.plugin, f"selected ({options.reason}) but kept: the move would "
                                                    f"change nothing: {futile}")
                self.plan.futile_streak[streak] += 1
                limit = FUTILE_STREAK if estimator.moves <= LARGE_PLAN else LARGE_PLAN_FUTILE_STREAK
                leave = self.plan.futile_streak[streak] >= limit
                if leave:
                    self.plan.futile_stops[options.plugin].append(pod.node_name)
                    self.plan.futile_stop_streak[options.plugin] = limit
                return self._outcome(pod, EvictStatus.FUTILE, leave)
            self.plan.futile_streak.pop(streak, None)
            estimator.keep()
        self.plan.add(pod, options, self.profile, futile, surge)
        return self._outcome(pod, EvictStatus.EVICTED)

    def _outcome(self, pod: Pod, status: EvictStatus, leave_node: bool = False) -> EvictOutcome:
        """The limits are read after this call's effect, whatever stopped this pod: a plugin stops (total) or
        leaves the node (node) as soon as either is reached, or when its moves from the node keep being futile."""
        return EvictOutcome(status, self.plan.total_reached(), leave_node or self.plan.node_reached(pod.node_name))


class PluginHandle:
    """The Handle one plugin instance gets."""

    def __init__(self, plan: EvictionPlan, evictor: ProfileEvictor, plugin: str) -> None:
        self._plan = plan
        self._evictor = evictor
        self._plugin = plugin

    @property
    def state(self) -> ClusterState:
        return self._plan.state

    @property
    def evictor(self) -> ProfileEvictor:
        return self._evictor

    def note(self, pod: Pod, text: str) -> None:
        self._plan.note(pod, self._plugin, text)

    def report_node(self, node: str, klass: str, detail: str) -> None:
        self._plan.node_reports[node].append(NodeReport(self._plugin, klass, detail))

    def report_usage(self, node: str, basis: str, now: dict[str, float], after: dict[str, float]) -> None:
        self._plan.usage_reports.setdefault(node, UsageReport(self._plugin, basis, now, after))

    def report_metric(self, node: str, source: str, query: str, value: float | None) -> None:
        self._plan.metric_reports.setdefault(node, MetricReport(self._plugin, source, query, value))

    def report_targets(self, percent: dict[str, float]) -> None:
        self._plan.targets[self._plugin] = dict(percent)

    def info(self, text: str) -> None:
        self._plan.messages.append((self._plugin, text))
