"""RemovePodsViolatingTopologySpreadConstraint: where the pods a topologySpreadConstraint selects are spread over
its topology domains with a skew above maxSkew, evict pods from the fuller domains so the scheduler can place
them in the emptier ones.

Upstream's algorithm, step by step:
- pods are listed from the considered nodes: not Succeeded/Failed, in the namespaces arg, matching the
  labelSelector arg, and passing the evictor's Filter; only these are counted and only these can move;
- per namespace, the constraints are collected from those pods (only whenUnsatisfiable values named in the
  constraints arg) and de-duplicated. A constraint carries the defining pod's nodeSelector and required affinity
  when nodeAffinityPolicy is Honor (the default) and its tolerations when nodeTaintsPolicy is Honor (default
  Ignore), so pods pinned differently give different constraints; matchLabelKeys add the pod's own values to the
  selector; a constraint without a labelSelector selects nothing; minDomains plays no part;
- the domains are the topology values of the considered nodes that pass those inclusion policies, plus any
  value a counted pod's node has; a domain holds the selected, non-terminating pods;
- a constraint whose largest and smallest domain differ by at most maxSkew is left alone. Otherwise the
  domains are sorted by size and a pointer walks up from the smallest while another walks down from the
  largest; each step moves min(ceil(large - average), ceil(average - small), ceil((skew - maxSkew) / 2)) pods;
- inside a domain pods are ordered: pods with a nodeSelector or node affinity first, then by priority
  ascending (no priority lowest), and before taking from a domain the pods that fit a node of a below-average
  domain are moved to the end; pods are taken from the end. With topologyBalanceNodeFit (default true) a
  taken pod that fits no such node stays, but still counts as moved;
- the pods chosen for all constraints are then evicted, each after the evictor's PreEvictionFilter.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from kubectl_desched.framework import BalancePlugin, EvictOptions, Handle, LandingView, PluginArgs
from kubectl_desched.framework.args import LabelSelectorArg, Namespaces
from kubectl_desched.framework.flags import CliSurface
from kubectl_desched.framework.predicates import node_selector_mismatch, why_not_node_fit
from kubectl_desched.model.label_selectors import Matcher, label_selector
from kubectl_desched.model.objects import Node, Pod
from kubectl_desched.plugins.upstream.removeduplicates import by_name, freeze, node_pinning, tolerates_node

HONOR, IGNORE = "Honor", "Ignore"
SHOWN_DOMAINS = 6  # a reason lists every domain up to this many, else the pod's and the smallest


@dataclass
class RemovePodsViolatingTopologySpreadConstraintArgs(PluginArgs):
    namespaces: Namespaces | None = None
    label_selector: LabelSelectorArg | None = None
    constraints: list[Literal["DoNotSchedule", "ScheduleAnyway"]] = field(default_factory=lambda: ["DoNotSchedule"])
    topology_balance_node_fit: bool = True


@dataclass
class Constraint:
    """One de-duplicated topologySpreadConstraint of a namespace, with its selector compiled."""

    max_skew: int
    topology_key: str
    selects: Matcher | None  # None: no labelSelector, selects nothing
    equal: tuple[tuple[str, str], ...]  # label pairs the selector requires, to pick candidates from the index
    one_of: tuple[tuple[str, frozenset[str]], ...]  # In requirements
    present: tuple[str, ...]  # Exists requirements
    affinity_honored: bool
    taints_honored: bool
    definer: Pod  # whose nodeSelector, affinity and tolerations the inclusion policies read


@dataclass
class Domain:
    value: str
    pods: list[Pod]


@dataclass
class Inclusion:
    """What the inclusion policies admit for one (topology key, pinning, tolerations): the domain values, the
    admitted nodes by value, and the fit checks against each set of below-average domains. Constraints of a
    cluster mostly share one, so each is worked out once per run instead of once per constraint."""

    values: list[str]
    by_value: dict[str, list[Node]]
    fit_checks: dict[tuple[str, ...], FitCheck] = field(default_factory=dict)


class LabelIndex:
    """A namespace's listed pods by label pair and by label key, built once, so a constraint only looks at the
    pods its selector can match."""

    def __init__(self, pods: list[Pod]) -> None:
        self.pods = pods
        self.by_pair: dict[tuple[str, str], list[int]] = defaultdict(list)
        self.by_key: dict[str, list[int]] = defaultdict(list)
        for i, pod in enumerate(pods):
            for k, v in pod.labels.items():
                self.by_pair[(k, v)].append(i)
                self.by_key[k].append(i)

    def candidates(self, c: Constraint) -> list[Pod]:
        if c.selects is None:
            return []
        best: list[int] | None = None
        for pair in c.equal:
            found = self.by_pair.get(pair, [])
            if best is None or len(found) < len(best):
                best = found
        for key in c.present:
            found = self.by_key.get(key, [])
            if best is None or len(found) < len(best):
                best = found
        for key, values in c.one_of:
            found = sorted(i for v in values for i in self.by_pair.get((key, v), ()))
            if best is None or len(found) < len(best):
                best = found
        if best is None:
            return self.pods
        return [self.pods[i] for i in best]


def has_selector_or_affinity(pod: Pod) -> bool:
    return bool(pod.node_selector) or (pod.affinity or {}).get("nodeAffinity") is not None


def domain_order(pod: Pod) -> tuple[int, bool, int]:
    """Upstream's order inside a domain; pods are taken from the end. Pods pinned by a nodeSelector or node
    affinity come first, then priority ascending with no priority lowest: so among equally pinned pods the
    highest priority is taken first, as upstream's comparator orders them (its own comment says the reverse)."""
    return (0 if has_selector_or_affinity(pod) else 1, pod.priority is not None, pod.priority or 0)


class RemovePodsViolatingTopologySpreadConstraint(BalancePlugin):
    """Evicts pods from topology domains that hold more than maxSkew above the emptiest domain."""

    name = "RemovePodsViolatingTopologySpreadConstraint"
    args_type = RemovePodsViolatingTopologySpreadConstraintArgs
    cli = CliSurface(explain=True)

    def __init__(self, args: RemovePodsViolatingTopologySpreadConstraintArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self._aims: dict[int, tuple[str, tuple[str, ...]]] = {}  # id(pod) -> topology key, the domains it is for
        self.namespaces = args.namespaces or Namespaces()
        self.selects = args.label_selector.matcher() if args.label_selector is not None else None
        self.allowed = frozenset(args.constraints or ("DoNotSchedule",))
        self.node_map: dict[str, Node] = {}
        self.inclusion: dict[tuple[Any, ...], Inclusion] = {}  # per run, see _included

    def _listed(self, pod: Pod) -> bool:
        if pod.is_terminal or not self.namespaces.allows(pod.namespace):
            return False
        if self.selects is not None and not self.selects(pod.labels):
            return False
        return self.handle.evictor.filter(pod)

    def landing_problem(self, pod: Pod, node: Node, view: LandingView) -> str | None:
        key, below = self._aims.get(id(pod), ("", ()))
        value = node.labels.get(key) if key else None
        if key and value not in below:
            return f"would land in {key}={value or '(none)'}, not in a domain below the average ({', '.join(below)})"
        return None

    def balance(self, nodes: list[Node]) -> None:
        state, evictor = self.handle.state, self.handle.evictor
        self.node_map = {n.name: n for n in nodes}
        self.inclusion = {}
        by_namespace: dict[str, list[Pod]] = defaultdict(list)
        for node in nodes:
            for pod in by_name(state.pods_on_node(node.name)):
                if self._listed(pod):
                    by_namespace[pod.namespace].append(pod)

        chosen: dict[int, tuple[Pod, str]] = {}
        for namespace in sorted(by_namespace):
            pods = by_namespace[namespace]
            constraints = self._constraints(namespace, pods)
            if not constraints:
                continue
            index = LabelIndex(pods)
            for c in constraints:
                self._balance_constraint(c, index, nodes, chosen)

        node_limited: set[str] = set()
        for pod, reason in chosen.values():
            if pod.node_name in node_limited or not self._listed(pod):
                continue
            if not evictor.pre_eviction_filter(pod):
                continue
            got = evictor.evict(pod, EvictOptions(self.name, reason))
            if got:
                continue
            if got.total_reached:
                return
            if got.node_reached:
                node_limited.add(pod.node_name)

    # --- constraints -----------------------------------------------------------------------------------------

    def _constraints(self, namespace: str, pods: list[Pod]) -> list[Constraint]:
        """The namespace's distinct constraints, in the order pods first show them; one whose labelSelector
        cannot be read is skipped (said once)."""
        found: dict[tuple[Any, ...], Constraint | None] = {}
        for pod in pods:
            for raw in pod.spread_constraints:
                if raw.get("whenUnsatisfiable") not in self.allowed:
                    continue
                key, extra = self._constraint_key(pod, raw)
                if key in found:
                    continue
                try:
                    found[key] = self._build(pod, raw, extra)
                except ValueError as e:
                    found[key] = None
                    self.handle.info(f"pod {pod.key}: topologySpreadConstraint skipped: {e}")
        return [c for c in found.values() if c is not None]

    @staticmethod
    def _constraint_key(pod: Pod, raw: Mapping[str, Any]) -> tuple[tuple[Any, ...], dict[str, str]]:
        """The constraint's identity (what upstream compares when it drops duplicates), and the label pairs its
        matchLabelKeys take from the pod."""
        extra: dict[str, str] = {}
        if pod.labels:
            for k in raw.get("matchLabelKeys") or ():
                if k in pod.labels:
                    extra[k] = pod.labels[k]
        affinity_honored = (raw.get("nodeAffinityPolicy") or HONOR) == HONOR
        taints_honored = (raw.get("nodeTaintsPolicy") or IGNORE) == HONOR
        key = (raw.get("maxSkew"), raw.get("topologyKey"), freeze(raw.get("labelSelector")),
               tuple(sorted(extra.items())), affinity_honored, taints_honored,
               node_pinning(pod) if affinity_honored else None,
               tuple(pod.tolerations) if taints_honored else None)
        return key, extra

    @staticmethod
    def _build(pod: Pod, raw: Mapping[str, Any], extra: dict[str, str]) -> Constraint:
        raw_selector = raw.get("labelSelector")
        selects: Matcher | None = None
        equal: list[tuple[str, str]] = []
        one_of: list[tuple[str, frozenset[str]]] = []
        present: list[str] = []
        if raw_selector is not None:  # without one the constraint selects nothing
            base = label_selector(raw_selector)  # ValueError when unreadable
            selects = base
            if extra:
                selects = lambda lb: all(lb.get(k) == v for k, v in extra.items()) and base(lb)  # noqa: E731
            equal += [(str(k), str(v)) for k, v in (raw_selector.get("matchLabels") or {}).items()]
            equal += list(extra.items())
            for e in raw_selector.get("matchExpressions") or ():
                if e.get("operator") == "In":
                    one_of.append((str(e["key"]), frozenset(str(v) for v in e.get("values") or ())))
                elif e.get("operator") == "Exists":
                    present.append(str(e["key"]))
        return Constraint(int(raw.get("maxSkew") or 0), str(raw.get("topologyKey") or ""), selects, tuple(equal),
                          tuple(one_of), tuple(present),
                          (raw.get("nodeAffinityPolicy") or HONOR) == HONOR,
                          (raw.get("nodeTaintsPolicy") or IGNORE) == HONOR, pod)

    def _included(self, c: Constraint, nodes: list[Node]) -> Inclusion:
        """The domain values the constraint starts from and the nodes its inclusion policies admit (cached: most
        constraints of a cluster share a topology key and have no node affinity)."""
        key = (c.topology_key, node_pinning(c.definer) if c.affinity_honored else None,
               tuple(c.definer.tolerations) if c.taints_honored else None)
        cached = self.inclusion.get(key)
        if cached is None:
            by_value: dict[str, list[Node]] = {}
            for n in nodes:
                if ((not c.affinity_honored or node_selector_mismatch(c.definer, n) is None)
                        and (not c.taints_honored or tolerates_node(c.definer, n)) and c.topology_key in n.labels):
                    by_value.setdefault(n.labels[c.topology_key], []).append(n)
            cached = self.inclusion[key] = Inclusion(list(by_value), by_value)
        return cached

    # --- balancing ---------------------------------------------------------------------------------------------

    def _balance_constraint(self, c: Constraint, index: LabelIndex, nodes: list[Node],
                            chosen: dict[int, tuple[Pod, str]]) -> None:
        inclusion = self._included(c, nodes)
        domains: dict[str, list[Pod]] = {v: [] for v in inclusion.values}
        total = 0
        for pod in index.candidates(c):
            if pod.terminating or c.selects is None or not c.selects(pod.labels):
                continue
            node = self.node_map.get(pod.node_name)
            value = node.labels.get(c.topology_key) if node is not None else None
            if value is None:
                continue
            domains.setdefault(value, []).append(pod)
            total += 1
        if not domains:
            return
        sizes = {v: len(p) for v, p in domains.items()}
        if max(sizes.values()) - min(sizes.values()) <= c.max_skew:
            return
        self._move(c, domains, sizes, total, inclusion, chosen)

    def _move(self, c: Constraint, domains: dict[str, list[Pod]], sizes: dict[str, int], total: int,
              inclusion: Inclusion, chosen: dict[int, tuple[Pod, str]]) -> None:
        average = total / len(domains)
        ordered = [Domain(v, domains[v]) for v in sorted(domains, key=lambda v: (sizes[v], v))]
        smallest = ordered[0].value
        below = tuple(d.value for d in ordered if len(d.pods) < average)
        fits = inclusion.fit_checks.get(below)
        if fits is None:  # nothing is evicted until every constraint is balanced, so the answers keep
            nodes = [n for v in below for n in inclusion.by_value.get(v, ())]
            fits = inclusion.fit_checks[below] = FitCheck(self.handle, nodes)
        node_fit = self.args.topology_balance_node_fit
        giving: dict[int, str] = {}  # domains pods were taken from, with the reason they give
        i, j = 0, len(ordered) - 1
        while i < j:
            if len(ordered[j].pods) <= average:
                j -= 1
            small, large = ordered[i], ordered[j]
            skew = len(large.pods) - len(small.pods)
            if skew <= c.max_skew:
                i += 1
                continue
            move = min(math.ceil(len(large.pods) - average), math.ceil(average - len(small.pods)),
                       math.ceil((skew - c.max_skew) / 2))
            if move <= 0:
                i += 1
                continue
            reason = giving.get(j)
            if reason is None:  # the domain's order, then (stable) the pods that fit a below-average node last
                large.pods.sort(key=domain_order)
                large.pods.sort(key=fits)
                reason = giving[j] = self._reason(c, sizes, large.value, smallest)
            taken = large.pods[-move:]
            for pod in taken:
                if node_fit and not fits(pod):
                    self.handle.note(pod, f"not moved: {reason}, but it fits no node of a below-average domain "
                                          f"(topologyBalanceNodeFit)")
                    continue
                chosen.setdefault(id(pod), (pod, reason))
                self._aims.setdefault(id(pod), (c.topology_key, below))
            del large.pods[-move:]
            small.pods.extend(taken)

    @staticmethod
    def _reason(c: Constraint, sizes: dict[str, int], own: str, smallest: str) -> str:
        head = f"violates topology spread {c.topology_key} maxSkew {c.max_skew}: "
        if len(sizes) <= SHOWN_DOMAINS:
            return head + ", ".join(f"{v} {sizes[v]}" for v in sorted(sizes))
        return head + f"{own} {sizes[own]}, smallest {smallest} {sizes[smallest]} ({len(sizes)} domains)"


class FitCheck:
    """Whether a pod fits some node of a below-average domain other than its own (upstream's NodeFit: cordon,
    nodeSelector and required affinity, NoSchedule/NoExecute taints, inter-pod anti-affinity, free requests and
    a pod slot). Pods without anti-affinity that schedule alike share one answer."""

    def __init__(self, handle: Handle, nodes: list[Node]) -> None:
        self.handle = handle
        self.nodes = nodes
        self.by_pod: dict[int, bool] = {}
        self.by_shape: dict[tuple[Any, ...], list[str]] = {}

    def __call__(self, pod: Pod) -> bool:
        known = self.by_pod.get(id(pod))
        if known is None:
            known = self.by_pod[id(pod)] = self._check(pod)
        return known

    def _fits(self, pod: Pod, node: Node) -> bool:
        return why_not_node_fit(pod, node, self.handle.state) is None

    def _check(self, pod: Pod) -> bool:
        if (pod.affinity or {}).get("podAntiAffinity"):
            return any(n.name != pod.node_name and self._fits(pod, n) for n in self.nodes)
        shape = (tuple(sorted(pod.requests.items())), frozenset(pod.tolerations), *node_pinning(pod))
        first_two = self.by_shape.get(shape)
        if first_two is None:
            # Two fitting nodes are enough: at most one is the pod's own. (A pod's own node is never below
            # average anyway: pods are only taken from domains above it.)
            first_two = []
            for n in self.nodes:
                if self._fits(pod, n):
                    first_two.append(n.name)
                    if len(first_two) == 2:
                        break
            self.by_shape[shape] = first_two
        return any(name != pod.node_name for name in first_two)
