"""Where the evicted pods' replacements would land: an estimate of kube-scheduler's default profile, worked out move
by move while the plan is made (Estimator), so the planning evictor can keep a pod whose move would change nothing.
A replacement (the same pod spec, unbound) is placed while the pod it replaces is still terminating: that pod still
holds its requests and its required anti-affinity on its node, as the scheduler's cache keeps it until it is gone,
but no longer counts for topology spreading, which skips terminating pods. Once its replacement is placed it counts
as gone for the ones after it. Filters: node readiness and unschedulable, nodeSelector and required node affinity,
NoSchedule/NoExecute taints, requests against what is free, pod count, required inter-pod affinity and
anti-affinity (both ways) and topology spread with DoNotSchedule. Scores, weighted as the default profile weighs
them: NodeResourcesFit's LeastAllocated and NodeResourcesBalancedAllocation over cpu and memory (1 each; the latter as
the cluster's version computes it, state.server_minor), NodeAffinity's
preferred terms (2), PodTopologySpread (2) over the pod's ScheduleAnyway constraints or, when it has none, the system
default spreading, TaintToleration (3): the PreferNoSchedule taints the pod does not tolerate, fewer is better, and
InterPodAffinity (2): the pod's preferred (anti-)affinity terms against the pods in each node's domains, and the
existing pods' preferred terms and required affinity terms (weight 1) that select the pod. The other scoring plugins
are not modelled (docs/guide/placement.md)."""

from __future__ import annotations

import bisect
import json
import math
import operator
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from kubectl_desched.framework.predicates import (
    pod_matches_node_selector,
    preferred_node_affinity_terms,
    preferred_node_affinity_weight,
    required_anti_affinity_terms,
)
from kubectl_desched.model.label_selectors import Matcher, label_selector
from kubectl_desched.model.objects import Node, Pod, Taint
from kubectl_desched.model.state import ClusterState


class Moved(Protocol):
    """A planned eviction as the estimate reads it (framework/plan.py's Candidate, which imports this module)."""

    @property
    def pod(self) -> Pod: ...


Workload = tuple[str, str, str]


def workload_of(pod: Pod) -> Workload | None:
    """The pod's controller as (namespace, kind, name): what --max-per-workload counts and warnings name."""
    ref = pod.controller
    return (pod.namespace, ref.kind, ref.name) if ref is not None else None

MAX_SCORE = 100
HALF_SCORE = MAX_SCORE // 2
BALANCE_GAIN_MINOR = 36  # the first kube-scheduler minor whose BalancedAllocation scores a pod's change to the balance
# Feasible nodes scored per replacement, the emptiest by requests first. kube-scheduler too scores a sample of a
# large cluster (percentageOfNodesToScore: 10% of 5,000 nodes, never under 100).
SCORE_LIMIT = 100
# A plan this large is a cluster-wide reshuffle: fewer nodes scored per replacement keep the estimate to seconds.
LARGE_PLAN, LARGE_PLAN_SCORE_LIMIT = 2000, 10
# What the scheduler's scoring counts for a container that requests no cpu or memory (schedutil defaults).
NONZERO_CPU = 0.1
NONZERO_MEMORY = 200 * 1024 * 1024
SCORED = ("cpu", "memory")
TAINT_WEIGHT = 3  # TaintToleration's weight in the default profile
AFFINITY_WEIGHT = 2  # InterPodAffinity's weight in the default profile
HARD_AFFINITY_WEIGHT = 1  # InterPodAffinity's hardPodAffinityWeight: an existing pod's required affinity term
UNSCHEDULABLE = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")  # what NodeUnschedulable checks


@dataclass(frozen=True, slots=True)
class Destination:
    """A replacement's estimated node; node None with `why` when none (not recreated, or no node fits)."""

    node: str | None
    why: str = ""
    tied: tuple[str, ...] = ()  # nodes with the same best score: kube-scheduler picks one of them at random
    recreated: bool = True

    @property
    def text(self) -> str:
        if self.node is not None:
            return self.node
        return "not recreated" if not self.recreated else "Pending"


@dataclass
class Placement:
    destinations: dict[int, Destination] = field(default_factory=dict)  # id(evicted pod) -> where
    used: dict[str, dict[str, float]] = field(default_factory=dict)  # node -> requests after evictions and landings

    def of(self, c: Moved) -> Destination | None:
        return self.destinations.get(id(c.pod))


_Term = tuple[Matcher, str, tuple[str, ...], int]  # selector, topology key, namespaces, signed weight
_OwnTerm = tuple[Mapping[str, Any], str, tuple[str, ...], int]  # the same with the selector as written


@dataclass(slots=True)
class _Resident:
    """A pod as the estimate sees it: where it is (or would land) and what selects it."""

    namespace: str
    labels: Mapping[str, str]
    node: str
    terminating: bool = False
    anti: tuple[tuple[Matcher, str, tuple[str, ...]], ...] = ()  # its required anti-affinity: selector, key, ns
    gone: bool = False  # evicted, its replacement placed
    scoring: tuple[_Term, ...] = ()  # its terms that score an incoming pod they select (InterPodAffinity)


def _matcher(raw: Mapping[str, Any] | None) -> Matcher | None:
    if raw is None:
        return None
    try:
        return label_selector(raw)
    except ValueError:
        return None  # an invalid selector selects nothing, as the API server would not have admitted it anyway


def _term_namespaces(pod: Pod, term: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(term.get("namespaces") or ()) or (pod.namespace,)


def _static_key(pod: Pod) -> str:
    """Pods with equal scheduling constraints share their statically feasible nodes (replicas of a workload)."""
    na = (pod.affinity or {}).get("nodeAffinity")
    tolerations = [(t.key, t.operator, t.value, t.effect) for t in pod.tolerations]
    return json.dumps([sorted(pod.node_selector.items()), na, tolerations], sort_keys=True, default=str)


class _Cluster:
    def __init__(self, state: ClusterState) -> None:
        self.state = state
        # BalancedAllocation scores the balance a pod leaves from Kubernetes 1.36 on, the change it makes to it;
        # a cluster of unknown version (a snapshot) is taken to be current.
        minor = state.server_minor
        self.balance_gain = minor is None or minor >= BALANCE_GAIN_MINOR
        self.nodes = [n for n in sorted(state.nodes.values(), key=lambda n: n.name)]
        self.nodes_by_name = {n.name: n for n in self.nodes}
        self.gone: set[int] = set()  # the evicted pods whose replacements were placed
        self.cordoned: set[str] = set()  # --cordon: nodes being emptied, which no replacement may land on
        self.moving: set[int] = set()  # evicted, their replacement being placed: terminating
        self.used: dict[str, dict[str, float]] = {n.name: {"pods": 0.0} for n in self.nodes}
        self.nonzero: dict[str, dict[str, float]] = {n.name: dict.fromkeys(SCORED, 0.0) for n in self.nodes}
        # Bumped whenever a node's requests change. A move changes two nodes: what a replacement of one request
        # shape found of the others (fit, base score) is still true, and _by_shape keeps it per shape.
        self.version: dict[str, int] = dict.fromkeys(self.used, 0)
        self._by_shape: dict[tuple[Any, ...], dict[str, tuple[int, str | None, int]]] = {}
        self._stats: dict[str, _NodeStat] = {}  # what scoring reads of a node, at its version then
        # Every pod per namespace, for inter-pod terms (in_ns): grouped when first asked for, as most plans have
        # none to check; the replacements landed so far, by namespace.
        self._pods_by_ns: dict[str, list[Pod]] | None = None
        # The same per namespace, grouped by their (pooled) label set: a selector is matched once per group.
        self._by_labels: dict[str, dict[int, tuple[Mapping[str, str], list[Pod]]]] | None = None
        self._landed: dict[str, list[tuple[Pod, str]]] = defaultdict(list)
        self.with_anti: list[_Resident] = []
        self.anti_in: dict[str, list[_Resident]] = defaultdict(list)  # namespace -> anti-affinity looking there
        # InterPodAffinity's scoring: each affinity's terms, read once per (id(affinity), namespace), so replicas
        # share them; and the pods whose terms score incoming pods, by the namespace they look in, grouped by those
        # shared terms: a pod no term of a group selects skips the group's pods. Which terms select a label set
        # (labels are pooled, and the pods keep them alive) is kept per namespace and id(labels), with the number of
        # groups it was worked out over; most select none, kept as that number alone (no object a label set).
        self._terms: dict[tuple[int, str], tuple[tuple[_OwnTerm, ...], tuple[_Term, ...]]] = {}
        self.scoring_in: dict[str, dict[int, tuple[tuple[_Term, ...], list[_Resident]]]] = defaultdict(dict)
        self._selects_none: dict[str, dict[int, int]] = defaultdict(dict)
        self._selecting: dict[str, dict[int, tuple[int, list[tuple[str, int, list[_Resident]]]]]] = defaultdict(dict)
        self._resident_of: dict[int, _Resident] = {}  # id(pod) -> its _Resident, where one was made
        # (namespace, id(labels)) -> (labels, (key, value) -> how many pods there refuse such a pod by their
        # required anti-affinity): built once per label set, kept current as such pods land and leave.
        self._others: dict[tuple[str, int], tuple[Mapping[str, str], Counter[tuple[str, str]]]] = {}
        # Running pods per controller per node, for the controllers of the evicted pods only (their replacements
        # are the only pods scored): what the default topology spread scoring counts. A controller is added at
        # its first eviction (track).
        self._spread: set[Workload] = set()
        self.owned: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
        # Each node's values of the default spreading's keys (None where unlabelled), which never change.
        self.spread_values = {n.name: tuple(n.labels.get(key) for key, _skew in DEFAULT_SPREAD) for n in self.nodes}
        # Every node labelled with a hostname of its own (as kubelets label them): any set of nodes has as many
        # hostnames as nodes, none missing, which the default spreading then need not count.
        hostnames = [v[0] for v in self.spread_values.values()]
        self.hostnames_unique = None not in hostnames and len(set(hostnames)) == len(hostnames)
        # The workload's pods per value of the default spreading's key i: built on first use, then kept current.
        self._owned_in: dict[tuple[tuple[str, str, str], int], dict[str, int]] = {}
        self._residents = [p for p in state.pods if not p.is_terminal and p.node_name and p.node_name in self.used]
        for p in self._residents:
            self._add(p, p.node_name)
        self._static: dict[str, tuple[list[Node], Counter[str], set[str]]] = {}
        self._domains: dict[tuple[Any, ...], tuple[Matcher | None, Counter[str]]] = {}
        # By namespace: (key, selector, counts, running only), each kept current as pods land and leave.
        self._domains_in: dict[str, list[tuple[str, Matcher, Counter[str], bool]]] = defaultdict(list)
        self._domain_values: dict[tuple[int, str], set[str]] = {}
        self._eligible: dict[str, list[Node]] = {}
        # What scoring reads of a node and never changes: its cpu and memory allocatable, and the PreferNoSchedule
        # taints of the few nodes that have any.
        self.caps = {n.name: (n.allocatable.get("cpu", 0.0), n.allocatable.get("memory", 0.0)) for n in self.nodes}
        self.prefer_no_schedule = {n.name: found for n in self.nodes
                                   if (found := tuple(t for t in n.taints if t.effect == "PreferNoSchedule"))}
        self._room = {n.name: self._free(n) for n in self.nodes}
        # The nodes each static key allows (pools, taints), emptiest first, as (-room, name): a replacement walks
        # only the nodes it may use. Keys with the same nodes share one order (replicas share their key, and most
        # keys allow the same nodes), each kept current as replacements land.
        self._orders: dict[str, list[tuple[float, str]]] = {}
        self._shared_orders: list[tuple[set[str], list[tuple[float, str]]]] = []
        self._static_keys: dict[tuple[int, int, int], tuple[str, Pod]] = {}

    def _free(self, n: Node) -> float:
        """How empty the node is for LeastAllocated: its free cpu and memory fractions, summed."""
        total = 0.0
        for r in SCORED:
            cap = n.allocatable.get(r, 0.0)
            total += (cap - self.nonzero[n.name][r]) / cap if cap > 0 else 0.0
        return total

    def emptiest(self, key: str, allowed: set[str]) -> list[tuple[float, str]]:
        """The allowed nodes, emptiest first (the list is the cluster's: read it, do not keep it)."""
        found = self._orders.get(key)
        if found is None:
            found = next((order for nodes, order in self._shared_orders if nodes == allowed), None)
            if found is None:
                found = sorted((-self._room[name], name) for name in allowed)
                self._shared_orders.append((allowed, found))
            self._orders[key] = found
        return found

    def by_shape(self, pod: Pod) -> dict[str, tuple[int, str | None, int]]:
        """What replacements requesting what this pod requests found of each node they looked at: the node's
        version then, why it did not fit (None: it did) and its _base_score."""
        return self._by_shape.setdefault(tuple(pod.requests.items()), {})

    def fit_and_base(self, want: _Want, name: str) -> tuple[int, str | None, int]:
        """The node's version, why the request shape does not fit it (None: it does) and its _base_score."""
        stat = self._stats.get(name)
        version = self.version[name]
        if stat is None or stat.version != version:
            stat = self._stats[name] = _NodeStat(self, name)
        free = stat.free
        for k, v in want.items:
            if v and v > free.get(k, 0.0):
                return version, f"insufficient {k}", 0
        if stat.pods_used + 1 > stat.pods_cap:
            return version, "too many pods", 0
        return version, None, _base_score(want, stat, self.balance_gain)

    def land(self, pod: Pod, node: str) -> None:
        """A replacement lands: the node's usage and its place in the emptiest-first order change."""
        self._landed[pod.namespace].append((pod, node))
        self._add(pod, node, replacement=True)
        self._count_domains(pod, node, 1, running=None)
        self._reorder(node)

    def _count_domains(self, pod: Pod, node: str, step: int, running: bool | None) -> None:
        """Add step to the kept domain counts that match the pod (running: only the running-only ones, or only
        the others; None: all)."""
        labels = self.nodes_by_name[node].labels
        for key, m, counts, running_only in self._domains_in.get(pod.namespace, ()):
            if running is not None and running_only is not running:
                continue
            value = labels.get(key)
            if value is not None and m(pod.labels):
                counts[value] += step

    def track(self, pod: Pod) -> None:
        """Before a pod's first move: count its controller's running pods per node, for the default spreading."""
        w = workload_of(pod)
        if w is None or w in self._spread:
            return
        self._spread.add(w)
        siblings = self.state.owner_pods(pod) if len(pod.owners) == 1 else \
            [p for p in self._residents if workload_of(p) == w]  # rare: the index keys pods by a lone owner
        owned = self.owned[w]
        for p in siblings:
            if id(p) not in self.gone and not p.is_terminal and not p.terminating and p.node_name in self.used \
                    and workload_of(p) == w:
                owned[p.node_name] = owned.get(p.node_name, 0) + 1

    def terminate(self, pod: Pod, step: int = -1) -> None:
        """The pod is evicted (step -1, or back with +1): it stops counting for topology spreading only."""
        if pod.terminating:
            return  # never counted there
        if step < 0:
            self.moving.add(id(pod))
        else:
            self.moving.discard(id(pod))
        r = self._resident_of.get(id(pod))
        if r is not None:
            r.terminating = step < 0
        self._count_owned(pod, pod.node_name, step)
        self._count_domains(pod, pod.node_name, step, running=True)

    def remove(self, pod: Pod, step: int = -1) -> None:
        """The pod is gone (step -1, or back with +1): its requests, count and anti-affinity leave its node."""
        node = pod.node_name
        if step < 0:
            self.gone.add(id(pod))
        else:
            self.gone.discard(id(pod))
        used, requests = self.used[node], pod.requests
        self.version[node] += 1
        used["pods"] += step
        for k, v in requests.items():
            used[k] = used.get(k, 0.0) + step * v
        nonzero = self.nonzero[node]
        nonzero["cpu"] += step * (requests.get("cpu") or NONZERO_CPU)
        nonzero["memory"] += step * (requests.get("memory") or NONZERO_MEMORY)
        self._count_domains(pod, node, step, running=False)
        r = self._resident_of.get(id(pod))
        if r is not None:
            r.gone = step < 0  # readers of with_anti, anti_in and scoring_in skip it
            if r.anti:
                self._count_others(r, step)
        self._reorder(node)

    def _count_others(self, r: _Resident, step: int) -> None:
        """Keep others_anti's counts current as a pod with required anti-affinity lands or leaves."""
        for (ns, _id), (labels, counts) in self._others.items():
            for m, key, namespaces in r.anti:
                if ns in namespaces and (value := self.nodes_by_name[r.node].labels.get(key)) is not None \
                        and m(labels):
                    counts[(key, value)] += step

    def _reorder(self, node: str) -> None:
        old = (-self._room[node], node)
        self._room[node] = self._free(self.nodes_by_name[node])
        new = (-self._room[node], node)
        for allowed, order in self._shared_orders:
            if node not in allowed:
                continue
            del order[bisect.bisect_left(order, old)]
            bisect.insort(order, new)

    def _add(self, pod: Pod, node: str, replacement: bool = False) -> None:
        used, requests = self.used[node], pod.requests
        self.version[node] += 1
        used["pods"] += 1
        for k, v in requests.items():
            used[k] = used.get(k, 0.0) + v
        nonzero = self.nonzero[node]
        nonzero["cpu"] += requests.get("cpu") or NONZERO_CPU
        nonzero["memory"] += requests.get("memory") or NONZERO_MEMORY
        anti: tuple[tuple[Matcher, str, tuple[str, ...]], ...] = ()
        scoring: tuple[_Term, ...] = ()
        if pod.affinity is not None:  # run once per resident: most pods have none
            anti = _own_anti(pod)
            scoring = self.affinity_terms(pod)[1]
        if not pod.terminating or replacement:
            self._count_owned(pod, node, 1)
        if not anti and not scoring:
            return
        r = _Resident(pod.namespace, pod.labels, node, pod.terminating and not replacement, anti, scoring=scoring)
        if not replacement:
            self._resident_of[id(pod)] = r
        if anti:
            self.with_anti.append(r)
            for ns in {ns for _m, _k, namespaces in anti for ns in namespaces}:
                self.anti_in[ns].append(r)
            self._count_others(r, 1)
        if scoring:
            for ns in {ns for _m, _k, namespaces, _w in scoring for ns in namespaces}:
                self.scoring_in[ns].setdefault(id(scoring), (scoring, []))[1].append(r)

    def _count_owned(self, pod: Pod, node: str, step: int) -> None:
        w = workload_of(pod)
        if w is None or w not in self._spread:
            return
        owned = self.owned[w]
        owned[node] = owned.get(node, 0) + step
        for i, domain in enumerate(self.spread_values[node]):
            counts = self._owned_in.get((w, i))
            if counts is not None and domain is not None:
                counts[domain] = counts.get(domain, 0) + step

    def in_ns(self, namespace: str) -> Iterator[tuple[Mapping[str, str], str, bool]]:
        """Every pod of the namespace as the estimate sees it now, as (labels, node, terminating): the residents
        not gone, then the replacements landed. Worked out from the pods when asked, not kept per pod: an object a
        pod was 20 MiB at 150,000 pods."""
        if self._pods_by_ns is None:
            self._pods_by_ns = defaultdict(list)
            for pod in self._residents:
                self._pods_by_ns[pod.namespace].append(pod)
        gone, moving = self.gone, self.moving
        for pod in self._pods_by_ns.get(namespace, ()):
            if id(pod) not in gone:
                yield pod.labels, pod.node_name, pod.terminating or id(pod) in moving
        for pod, node in self._landed.get(namespace, ()):
            yield pod.labels, node, False

    def owned_in(self, w: tuple[str, str, str], i: int) -> dict[str, int]:
        """The workload's running pods per value of the default spreading's key i (DEFAULT_SPREAD)."""
        counts = self._owned_in.get((w, i))
        if counts is None:
            counts = {}
            for node, k in self.owned.get(w, {}).items():  # nodes of this cluster: residents' and landings'
                domain = self.spread_values[node][i]
                if domain is not None:
                    counts[domain] = counts.get(domain, 0) + k
            self._owned_in[(w, i)] = counts
        return counts

    def domain_counts(self, raw: Mapping[str, Any], key: str, namespaces: tuple[str, ...],
                      running_only: bool) -> Counter[str]:
        """Pods matching a label selector in these namespaces, counted per value of the node label `key`: built
        once per distinct term and kept current as replacements land (replicas share their terms)."""
        ident = (json.dumps(raw, sort_keys=True, default=str), key, namespaces, running_only)
        found = self._domains.get(ident)
        if found is None:
            m = _matcher(raw)
            counts: Counter[str] = Counter()
            if m is not None:
                for ns in namespaces:
                    self._count_matching(m, key, ns, running_only, counts)
            found = self._domains[ident] = (m, counts)
            if m is not None:
                for ns in namespaces:
                    self._domains_in[ns].append((key, m, counts, running_only))
        return found[1]

    def _count_matching(self, m: Matcher, key: str, namespace: str, running_only: bool,
                        counts: Counter[str]) -> None:
        """What in_ns gives of the namespace, counted per value of `key` where m selects the pod's labels: asked
        once per label set, as replicas share theirs (pooled), not once per pod."""
        if self._by_labels is None:
            self._by_labels = defaultdict(dict)
            for pod in self._residents:
                group = self._by_labels[pod.namespace].setdefault(id(pod.labels), (pod.labels, []))
                group[1].append(pod)
        gone, moving, nodes = self.gone, self.moving, self.nodes_by_name
        for labels, pods in self._by_labels.get(namespace, {}).values():
            if not m(labels):
                continue
            for pod in pods:
                if id(pod) in gone or (running_only and (pod.terminating or id(pod) in moving)):
                    continue
                value = nodes[pod.node_name].labels.get(key)
                if value is not None:
                    counts[value] += 1
        for pod, node in self._landed.get(namespace, ()):
            value = nodes[node].labels.get(key)
            if value is not None and m(pod.labels):
                counts[value] += 1

    def others_anti(self, pod: Pod) -> list[tuple[str, str]]:
        """(key, value) domains where a pod already there refuses this one by its required anti-affinity."""
        nearby = self.anti_in.get(pod.namespace, ())
        if not nearby:
            return []
        ident = (pod.namespace, id(pod.labels))  # labels are pooled, and the entry keeps them alive
        found = self._others.get(ident)
        if found is None or found[0] is not pod.labels:
            counts: Counter[tuple[str, str]] = Counter()
            for r in nearby:
                if r.gone:
                    continue
                for m, key, namespaces in r.anti:
                    if pod.namespace in namespaces and (value := self.nodes_by_name[r.node].labels.get(key)) \
                            is not None and m(pod.labels):
                        counts[(key, value)] += 1
            found = self._others[ident] = (pod.labels, counts)
        return [kv for kv, k in found[1].items() if k > 0]

    def affinity_terms(self, pod: Pod) -> tuple[tuple[_OwnTerm, ...], tuple[_Term, ...]]:
        """The pod's InterPodAffinity scoring terms: its own preferred ones, which score the nodes for it, and those
        which score the nodes for an incoming pod they select (its preferred ones and its required affinity)."""
        aff = pod.affinity
        if not aff or not (aff.get("podAffinity") or aff.get("podAntiAffinity")):
            return _NO_TERMS  # most pods, DaemonSet pods among them (their node affinity is their own)
        ident = (id(aff), pod.namespace)  # affinities are pooled, and the pods keep them alive
        found = self._terms.get(ident)
        if found is None:
            found = self._terms[ident] = _affinity_terms(pod)
        return found

    def scored_by(self, pod: Pod) -> dict[tuple[str, str], int]:
        """Per (key, value) domain, the summed signed weights of the other pods' terms there that select this pod,
        as the moves so far leave them (the pods that left skipped, the replacements that landed counted)."""
        ns, ident = pod.namespace, id(pod.labels)
        groups = self.scoring_in.get(ns, {})
        if self._selects_none[ns].get(ident) == len(groups):
            return {}
        found = self._selecting[ns].get(ident)
        if found is None or found[0] != len(groups):
            selecting = [(key, weight, residents) for terms, residents in groups.values()
                         for m, key, namespaces, weight in terms if ns in namespaces and m(pod.labels)]
            if not selecting:
                self._selects_none[ns][ident] = len(groups)
                return {}
            found = self._selecting[ns][ident] = (len(groups), selecting)
        sums: dict[tuple[str, str], int] = {}
        for key, weight, residents in found[1]:
            for r in residents:
                if not r.gone and (value := self.nodes_by_name[r.node].labels.get(key)) is not None:
                    sums[(key, value)] = sums.get((key, value), 0) + weight
        return sums

    def allowed_by_affinity(self, pod: Pod) -> list[Node]:
        """The nodes the pod's nodeSelector and required node affinity allow (what topology spread counts over)."""
        ident = json.dumps([sorted(pod.node_selector.items()), (pod.affinity or {}).get("nodeAffinity")],
                           sort_keys=True, default=str)
        found = self._eligible.get(ident)
        if found is None:
            found = self._eligible[ident] = [n for n in self.nodes if pod_matches_node_selector(pod, n)]
        return found

    def domain_values(self, nodes: list[Node], key: str) -> set[str]:
        """The values of a node label over a (cached, so long-lived) list of nodes."""
        ident = (id(nodes), key)
        found = self._domain_values.get(ident)
        if found is None:
            found = self._domain_values[ident] = {d for d in (n.labels.get(key) for n in nodes) if d is not None}
        return found

    def static_key(self, pod: Pod) -> str:
        """_static_key, once per combination of the pooled values it reads (the pod is kept, so the ids stay its)."""
        ids = (id(pod.node_selector), id(pod.affinity), id(pod.tolerations))
        found = self._static_keys.get(ids)
        if found is None:
            found = self._static_keys[ids] = (_static_key(pod), pod)
        return found[0]

    def static_nodes(self, pod: Pod, key: str) -> tuple[list[Node], Counter[str], set[str]]:
        """The nodes that pass the filters that depend on the node alone, and why the others do not."""
        found = self._static.get(key)
        if found is None:
            fit, refused = [], Counter[str]()
            for n in self.nodes:
                why = _static_refusal(pod, n)
                if why is None:
                    fit.append(n)
                else:
                    refused[why] += 1
            found = self._static[key] = (fit, refused, {n.name for n in fit})
        return found


def _static_refusal(pod: Pod, n: Node) -> str | None:
    if not n.ready:
        return "not ready"
    if n.unschedulable and not pod.tolerates(UNSCHEDULABLE):
        return "unschedulable"
    if not pod_matches_node_selector(pod, n):
        return "node selector or affinity"
    for t in n.taints:
        if t.effect in ("NoSchedule", "NoExecute") and not pod.tolerates(t):
            return f"taint {t.key}"
    return None


class _Want:
    """What a replacement requests, as fit and the base score read it: worked out once per replacement, not per
    node."""

    __slots__ = ("cpu", "cpu_nonzero", "items", "memory", "memory_nonzero")

    def __init__(self, pod: Pod) -> None:
        want = pod.requests
        self.items = tuple(want.items())
        self.cpu, self.memory = want.get("cpu", 0.0), want.get("memory", 0.0)
        self.cpu_nonzero, self.memory_nonzero = self.cpu or NONZERO_CPU, self.memory or NONZERO_MEMORY


class _NodeStat:
    """A node's allocatable less its requests, per resource (fit), and what _base_score reads of it, at one
    version of the node: shared by every request shape until a move changes the node."""

    __slots__ = (
        "balance_before",
        "cpu_cap",
        "cpu_nonzero",
        "cpu_used",
        "free",
        "memory_cap",
        "memory_nonzero",
        "memory_used",
        "pods_cap",
        "pods_used",
        "version",
    )

    def __init__(self, cl: _Cluster, name: str) -> None:
        alloc, used, nonzero = cl.nodes_by_name[name].allocatable, cl.used[name], cl.nonzero[name]
        self.version = cl.version[name]
        self.free = {k: alloc.get(k, 0.0) - used.get(k, 0.0) for k in {*alloc, *used}}
        self.pods_used, self.pods_cap = used.get("pods", 0.0), alloc.get("pods", 0.0)
        self.cpu_cap, self.memory_cap = cl.caps[name]
        self.cpu_nonzero, self.memory_nonzero = nonzero["cpu"], nonzero["memory"]
        self.cpu_used, self.memory_used = used.get("cpu", 0.0), used.get("memory", 0.0)
        cpu_cap, mem_cap = self.cpu_cap, self.memory_cap
        cpu_f = min(self.cpu_used / cpu_cap, 1.0) if cpu_cap > 0 else 1.0
        mem_f = min(self.memory_used / mem_cap, 1.0) if mem_cap > 0 else 1.0
        self.balance_before = int((1 - abs(cpu_f - mem_f) / 2) * MAX_SCORE)  # the node's balance as it is


class _AffinityCheck:
    """Required inter-pod affinity and anti-affinity for one pod as topology domains (key, value), from the
    cluster's kept counts: each node is then a few set lookups."""

    def __init__(self, pod: Pod, cl: _Cluster) -> None:
        aff = pod.affinity or {}
        self.needed: list[tuple[str, set[str] | None]] = []  # key, the domains it may go to (None: anywhere)
        for term in (aff.get("podAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or ():
            raw, key = term.get("labelSelector"), str(term.get("topologyKey", ""))
            m = _matcher(raw)
            if m is None or raw is None:
                self.needed.append((key, set()))
                continue
            counts = cl.domain_counts(raw, key, _term_namespaces(pod, term), running_only=False)
            found = {d for d, k in counts.items() if k}
            # The first pod of a group that matches its own term may go anywhere the key exists.
            first = not found and m(pod.labels) and not any(
                m(labels) for ns in _term_namespaces(pod, term) for labels, _node, _t in cl.in_ns(ns))
            self.needed.append((key, None if first else found))
        self.avoid: list[tuple[str, set[str], str]] = []  # key, domains refused, why
        for term in required_anti_affinity_terms(pod):
            raw, key = term.get("labelSelector"), str(term.get("topologyKey") or "")
            if raw is None or not key:
                continue
            counts = cl.domain_counts(raw, key, _term_namespaces(pod, term), running_only=False)
            self.avoid.append((key, {d for d, k in counts.items() if k}, "pod anti-affinity"))
        for key, value in cl.others_anti(pod):
            self.avoid.append((key, {value}, "another pod's anti-affinity"))

    def refusal(self, n: Node) -> str | None:
        for key, allowed in self.needed:
            value = n.labels.get(key)
            if value is None or (allowed is not None and value not in allowed):
                return "pod affinity"
        for key, refused, why in self.avoid:
            if n.labels.get(key) in refused:
                return why
        return None


_NO_TERMS: tuple[tuple[_OwnTerm, ...], tuple[_Term, ...]] = ((), ())


def _affinity_terms(pod: Pod) -> tuple[tuple[_OwnTerm, ...], tuple[_Term, ...]]:
    """See _Cluster.affinity_terms. A term without a selector or a topology key selects nothing, as upstream."""
    aff = pod.affinity or {}
    pa, paa = aff.get("podAffinity") or {}, aff.get("podAntiAffinity") or {}
    own: list[_OwnTerm] = []
    weighted = [(t.get("podAffinityTerm") or {}, int(t.get("weight") or 0), sign)
                for sign, terms in ((1, pa), (-1, paa))
                for t in terms.get("preferredDuringSchedulingIgnoredDuringExecution") or ()]
    for term, weight, sign in weighted:
        raw, key = term.get("labelSelector"), str(term.get("topologyKey") or "")
        if raw is not None and key and weight:
            own.append((raw, key, _term_namespaces(pod, term), sign * weight))
    required = [(term, HARD_AFFINITY_WEIGHT, 1) for term in pa.get("requiredDuringSchedulingIgnoredDuringExecution")
                or ()]
    scoring: list[_Term] = []
    for term, weight, sign in [*required, *weighted]:
        m, key = _matcher(term.get("labelSelector")), str(term.get("topologyKey") or "")
        if m is not None and key and weight:
            scoring.append((m, key, _term_namespaces(pod, term), sign * weight))
    return tuple(own), tuple(scoring)


def _own_anti(pod: Pod) -> tuple[tuple[Matcher, str, tuple[str, ...]], ...]:
    out = []
    for term in required_anti_affinity_terms(pod):
        m = _matcher(term.get("labelSelector"))
        if m is not None and term.get("topologyKey"):
            out.append((m, str(term["topologyKey"]), _term_namespaces(pod, term)))
    return tuple(out)


class _SpreadCheck:
    """Topology spread constraints with DoNotSchedule for one pod: domains over the nodes its node affinity allows
    (the default nodeAffinityPolicy Honor; taints ignored, nodeTaintsPolicy Ignore), running matching pods per
    domain from the cluster's kept counts; then each node is a lookup."""

    def __init__(self, pod: Pod, cl: _Cluster) -> None:
        eligible = cl.allowed_by_affinity(pod)
        # key, maxSkew, counts, the pod itself (0/1), the least count over the domains
        self.rules: list[tuple[str, int, dict[str, int], int, int]] = []
        for c in pod.spread_constraints:
            if c.get("whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule":
                continue
            key = str(c.get("topologyKey", ""))
            raw = _spread_selector(pod, c)
            domains = cl.domain_values(eligible, key)
            if c.get("labelSelector") is None:
                counts = dict.fromkeys(domains, 0)
                own = 0
            else:
                kept = cl.domain_counts(raw, key, (pod.namespace,), running_only=True)
                counts = {d: kept[d] for d in domains}
                m = _matcher(raw)
                own = 1 if m is not None and m(pod.labels) else 0
            self.rules.append((key, int(c.get("maxSkew") or 1), counts, own, min(counts.values(), default=0)))

    def refusal(self, n: Node) -> str | None:
        for key, max_skew, counts, own, least in self.rules:
            domain = n.labels.get(key)
            if domain is None:
                return f"topology spread ({key} missing)"
            skew = counts.get(domain, 0) + own - least
            if skew > max_skew:
                return f"topology spread {key} (skew {skew} > {max_skew})"
        return None


def _base_score(want: _Want, node: _NodeStat, balance_gain: bool) -> int:
    """What the node scores before the terms that depend on other pods: NodeResourcesFit's LeastAllocated (requests
    with the scheduler's defaults for unset ones) and BalancedAllocation (the requests as set), each 0-100 in
    integers as kube-scheduler computes them, weight 1 each, and TaintToleration's best (3 x 100; _taint_scores
    takes off what the few tainted nodes lose)."""
    cpu_want, mem_want = want.cpu, want.memory
    cpu_cap, mem_cap = node.cpu_cap, node.memory_cap
    cpu_nz, mem_nz = node.cpu_nonzero + want.cpu_nonzero, node.memory_nonzero + want.memory_nonzero
    least = (int((cpu_cap - cpu_nz) * MAX_SCORE / cpu_cap) if cpu_cap > 0 and cpu_nz <= cpu_cap else 0) + \
        (int((mem_cap - mem_nz) * MAX_SCORE / mem_cap) if mem_cap > 0 and mem_nz <= mem_cap else 0)
    # BalancedAllocation: 100 less half the gap between the cpu and memory fractions (each at most 1)
    cpu_f = min((node.cpu_used + cpu_want) / cpu_cap, 1.0) if cpu_cap > 0 else 1.0
    mem_f = min((node.memory_used + mem_want) / mem_cap, 1.0) if mem_cap > 0 else 1.0
    balanced = int((1 - abs(cpu_f - mem_f) / 2) * MAX_SCORE)
    if balance_gain:  # 1.36 on: the change the pod makes to the node's balance, from 50 (worse) to 100 (better)
        balanced = HALF_SCORE + (HALF_SCORE + balanced - node.balance_before) // 2
    return least // 2 + balanced + TAINT_WEIGHT * MAX_SCORE


def _scores(pod: Pod, feasible: list[Node], cl: _Cluster, bases: Sequence[int]) -> list[int]:
    """The modelled default score plugins summed with their weights, per feasible node in their order: each one's
    _base_score (bases, in the same order), NodeAffinity's preferred terms (2), PodTopologySpread's system default
    constraints (2), TaintToleration (3) and InterPodAffinity (2)."""
    out = list(bases)
    if cl.prefer_no_schedule:
        lost = _taint_scores(pod, feasible, cl.prefer_no_schedule)
        if lost:
            out = [v - TAINT_WEIGHT * lost.get(n.name, 0) for v, n in zip(out, feasible, strict=True)]
    if pod.affinity is not None and preferred_node_affinity_terms(pod):
        preferred = [preferred_node_affinity_weight(pod, n) for n in feasible]
        top = max(preferred, default=0)
        if top > 0:  # the framework's default normalization: highest 100
            out = [v + 2 * (p * MAX_SCORE // top) for v, p in zip(out, preferred, strict=True)]
    # PodTopologySpread (weight 2) scores the pod's own ScheduleAnyway constraints, or the system default ones
    # when it has none at all; DoNotSchedule constraints only filter.
    spread = _soft_spread(pod, feasible, cl) if pod.spread_constraints else _default_spread(pod, feasible, cl)
    if spread:  # empty: not scored
        out = [v + 2 * x for v, x in zip(out, spread, strict=True)]
    # InterPodAffinity: only where the pod has such terms or other pods' terms look into its namespace.
    own = cl.affinity_terms(pod)[0] if pod.affinity is not None else ()
    if own or cl.scoring_in.get(pod.namespace):
        scored = cl.scored_by(pod)
        if own or any(scored.values()):  # most pods: no other pod's term selects them
            affinity = _pod_affinity_scores(own, scored, feasible, cl)
            if affinity:
                out = [v + AFFINITY_WEIGHT * x for v, x in zip(out, affinity, strict=True)]
    return out


def _pod_affinity_scores(own: tuple[_OwnTerm, ...], scored: dict[tuple[str, str], int], feasible: list[Node],
                         cl: _Cluster) -> list[int]:
    """InterPodAffinity's normalized score of each feasible node, in their order (empty: 0 everywhere). Per (key,
    value) domain: the weight of each of the pod's preferred terms (negative for anti-affinity) times the pods
    there it selects, terminating ones included, plus the weights of the other pods' terms there that select the
    pod (scored: _Cluster.scored_by); a node sums the domains it is in. Normalized from the lowest (0) to the
    highest (100) over the feasible nodes; all equal: 0."""
    domains: dict[str, dict[str, int]] = defaultdict(dict)
    for (key, value), weight in scored.items():
        if weight:
            domains[key][value] = weight
    for raw, key, namespaces, weight in own:
        counts = cl.domain_counts(raw, key, namespaces, running_only=False)
        values = domains[key]
        for value, k in counts.items():
            if k:
                values[value] = values.get(value, 0) + weight * k
    if not any(domains.values()):
        return []
    raw_scores = [sum(values.get(v, 0) for key, values in domains.items() if (v := n.labels.get(key)) is not None)
                  for n in feasible]
    lo, hi = min(raw_scores, default=0), max(raw_scores, default=0)
    if hi == lo:
        return []
    return [int(MAX_SCORE * ((v - lo) / (hi - lo))) for v in raw_scores]


def _taint_scores(pod: Pod, feasible: list[Node], tainted: Mapping[str, tuple[Taint, ...]]) -> dict[str, int]:
    """TaintToleration's score as what each feasible node loses from the best (100): its PreferNoSchedule taints the
    pod does not tolerate, normalized as the framework does in reverse (the most such taints lose 100)."""
    counts = {}
    for n in feasible:
        taints = tainted.get(n.name)
        if taints is not None and (k := sum(1 for t in taints if not pod.tolerates(t))):
            counts[n.name] = k
    top = max(counts.values(), default=0)
    return {name: MAX_SCORE * k // top for name, k in counts.items()}


def _spread_selector(pod: Pod, c: Mapping[str, Any]) -> dict[str, Any]:
    """The constraint's label selector, narrowed by matchLabelKeys to the incoming pod's values (as the scheduler
    does)."""
    raw = dict(c.get("labelSelector") or {})
    keys = c.get("matchLabelKeys") or ()
    if keys:
        labels = dict(raw.get("matchLabels") or {})
        labels.update({k: pod.labels[k] for k in keys if k in pod.labels})
        raw["matchLabels"] = labels
    return raw


def _soft_spread(pod: Pod, feasible: list[Node], cl: _Cluster) -> list[int]:
    """The pod's ScheduleAnyway constraints scored as kube-scheduler does: per node, the matching running pods in
    its domain times log(domains + 2), plus maxSkew - 1, summed over the constraints; fewer is better."""
    soft = [c for c in pod.spread_constraints if c.get("whenUnsatisfiable") == "ScheduleAnyway"
            and c.get("labelSelector") is not None]
    if not soft or not feasible:
        return []
    raw: list[float | None] = [0.0] * len(feasible)
    for c in soft:
        key = str(c.get("topologyKey", ""))
        values = [n.labels.get(key) for n in feasible]
        domains = {v for v in values if v is not None}
        if not domains:
            continue
        weight = math.log(len(domains) + 2)
        counts = cl.domain_counts(_spread_selector(pod, c), key, (pod.namespace,), running_only=True)
        skew = int(c.get("maxSkew") or 1)
        for j, v in enumerate(values):
            current = raw[j]
            if v is None or current is None:
                raw[j] = None  # a node without the key scores 0
            else:
                raw[j] = current + counts.get(v, 0) * weight + (skew - 1)
    return _normalized(raw)


def _normalized(raw: list[float | None]) -> list[int]:
    """PodTopologySpread's normalization: the least crowded node 100, the others in proportion; None scores 0."""
    rounded = [round(v) for v in raw if v is not None]
    if not rounded:
        return []
    hi, lo = max(rounded), min(rounded)
    if hi == 0:
        return [MAX_SCORE if v is not None else 0 for v in raw]
    return [0 if v is None else MAX_SCORE * (hi + lo - round(v)) // hi for v in raw]


# kube-scheduler's system default spreading: ScheduleAnyway over hostname (maxSkew 3) and zone (maxSkew 5), counting
# the pods its Service or controller selects; approximated here by the pods of the same controller.
DEFAULT_SPREAD = (("kubernetes.io/hostname", 3), ("topology.kubernetes.io/zone", 5))


_host_of, _zone_of = operator.itemgetter(0), operator.itemgetter(1)  # of a node's spread_values


def _labelled_count(values: set[str | None]) -> int:
    """How many values, 0 when one is None (a node without the label)."""
    return 0 if None in values else len(values)


def _default_spread(pod: Pod, feasible: list[Node], cl: _Cluster) -> list[int]:
    """The default spreading's normalized score of each feasible node, in their order (empty: not scored)."""
    w = workload_of(pod)
    if w is None or not feasible:
        return []
    spread_values = cl.spread_values
    values = [spread_values[n.name] for n in feasible]
    (_host_key, host_skew), (_zone_key, zone_skew) = DEFAULT_SPREAD
    zones = set(map(_zone_of, values))
    hosts = len(values) if cl.hostnames_unique else _labelled_count(set(map(_host_of, values)))
    if hosts and None not in zones:  # nodes labelled as kubelets and clouds label them: one sum each
        host_weight, zone_weight = math.log(hosts + 2), math.log(len(zones) + 2)
        on_host, in_zone = cl.owned_in(w, 0).get, cl.owned_in(w, 1).get
        host_add, zone_add = host_skew - 1, zone_skew - 1
        # Most nodes hold none of the workload's pods: their sum is their zone's, worked out once per zone by the
        # same expression (the same float, so the same rounding).
        alone = {z: round(0 * host_weight + host_add + in_zone(z, 0) * zone_weight + zone_add)
                 for z in cast(set[str], zones)}
        rounded = [alone[z] if (k := on_host(h)) is None else
                   round(k * host_weight + host_add + in_zone(z, 0) * zone_weight + zone_add)
                   for h, z in cast(list[tuple[str, str]], values)]
        hi, lo = max(rounded), min(rounded)  # as _normalized, with no node left out
        if hi == 0:
            return [MAX_SCORE] * len(rounded)
        return [MAX_SCORE * (hi + lo - r) // hi for r in rounded]
    raw: list[float | None] = [None] * len(feasible)  # None: the node has none of the keys
    for i, (_key, skew) in enumerate(DEFAULT_SPREAD):
        domains = {v[i] for v in values}
        domains.discard(None)
        if not domains:
            continue
        weight = math.log(len(domains) + 2)
        count = cl.owned_in(w, i).get
        for j, v in enumerate(values):
            if (domain := v[i]) is not None:
                raw[j] = (raw[j] or 0.0) + count(domain, 0) * weight + (skew - 1)
    return _normalized(raw)


class Estimator:
    """The placement estimate as a plan is made: move() evicts a pod and places its replacement, then keep()
    makes the move count for the ones after it, or undo() takes it back (the pod stays where it is)."""

    def __init__(self, state: ClusterState) -> None:
        self.cl = _Cluster(getattr(state, "base", state))  # a plan's overlay hides planned pods: read under it
        self.placement = Placement(used=self.cl.used)
        self._shared: dict[Any, Any] = {}
        self._moving: tuple[Pod, Destination, bool] | None = None
        self.moves = 0  # tried, kept or not: what the scoring limit counts

    def cordon(self, names: Sequence[str]) -> None:
        """These nodes are cordoned from now on: the scheduler's NodeUnschedulable filter refuses them."""
        self.cl.cordoned.update(names)

    def move(self, pod: Pod, surge: bool = False) -> Destination:
        """Where the pod's replacement would land, the pod still terminating on its node; where nothing fits
        then, where it lands once that pod is gone (deleting it re-queues a replacement that did not fit).
        A surge's replacement is placed with the pod still running in full (it goes only once the new one is
        Ready), and does not wait for it to go."""
        assert self._moving is None, "keep() or undo() the last move first"
        cl = self.cl
        self.moves += 1
        cl.track(pod)
        if not surge:
            cl.terminate(pod)
        dest = self._place(pod)
        if dest.node is None and dest.recreated and not surge:
            cl.remove(pod)
            dest = self._place(pod)
        self._moving = (pod, dest, surge)
        return dest

    def keep(self) -> Destination:
        assert self._moving is not None
        pod, dest, surge = self._moving
        self._moving = None
        if surge:
            self.cl.terminate(pod)
        self.cl.moving.discard(id(pod))
        if id(pod) not in self.cl.gone:
            self.cl.remove(pod)
        if dest.node is not None:
            self.cl.land(pod, dest.node)
        self.placement.destinations[id(pod)] = dest
        return dest

    def undo(self) -> None:
        assert self._moving is not None
        pod, _dest, surge = self._moving
        self._moving = None
        if surge:
            return  # nothing of the pod was taken away
        if id(pod) in self.cl.gone:
            self.cl.remove(pod, +1)
        self.cl.terminate(pod, +1)

    def _place(self, pod: Pod) -> Destination:
        cl = self.cl
        owner = pod.controller
        if owner is None or owner.kind == "DaemonSet":
            why = "no controller recreates it" if owner is None else "its DaemonSet recreates it on its own node"
            return Destination(None, why, recreated=False)
        # A plan this large is a cluster-wide reshuffle: fewer nodes scored per replacement keep it to seconds.
        limit = SCORE_LIMIT if self.moves <= LARGE_PLAN else LARGE_PLAN_SCORE_LIMIT
        by_name = cl.nodes_by_name
        key = cl.static_key(pod)
        _fit, static_refused, allowed = cl.static_nodes(pod, key)
        refused: Counter[str] | None = None  # made at the first refusal: most replacements meet none
        # Most replacements have no inter-pod affinity and no pod nearby refuses them: no check to build.
        affinity = _AffinityCheck(pod, cl) if pod.affinity is not None or cl.anti_in.get(pod.namespace) else None
        spread = _SpreadCheck(pod, cl) if pod.spread_constraints else None
        cordoned = cl.cordoned
        known, version, want = cl.by_shape(pod), cl.version, _Want(pod)
        feasible: list[Node] = []
        bases: list[int] = []
        order = cl.emptiest(key, allowed)
        if affinity is None and spread is None and not cordoned:  # most replacements: fit alone decides
            for _room, name in order:
                seen = known.get(name)
                if seen is None or seen[0] != version[name]:  # the node's requests changed since
                    seen = known[name] = cl.fit_and_base(want, name)
                if seen[1]:
                    refused = refused or Counter()
                    refused[seen[1]] += 1
                    continue
                feasible.append(by_name[name])
                bases.append(seen[2])
                if len(feasible) >= limit:
                    break
        else:
            for _room, name in order:  # past SCORE_LIMIT feasible nodes the rest cannot matter much
                n = by_name[name]
                base = 0
                if cordoned and name in cordoned and not pod.tolerates(UNSCHEDULABLE):
                    refusal: str | None = "unschedulable"  # the emptiest first, under --cordon: nothing to work out
                else:
                    seen = known.get(name)
                    if seen is None or seen[0] != version[name]:  # the node's requests changed since
                        seen = known[name] = cl.fit_and_base(want, name)
                    _version, refusal, base = seen
                    refusal = refusal or (affinity.refusal(n) if affinity else None) or \
                        (spread.refusal(n) if spread else None)
                if refusal:
                    refused = refused or Counter()
                    refused[refusal] += 1
                    continue
                feasible.append(n)
                bases.append(base)
                if len(feasible) >= limit:
                    break
        scores = _scores(pod, feasible, cl, bases)
        top = max(scores, default=-1)
        best = [n.name for n, s in zip(feasible, scores, strict=True) if s == top]
        if not best:
            refused = static_refused + (refused or Counter())
            detail = ", ".join(f"{k}: {v}" for k, v in sorted(refused.items(), key=lambda kv: (-kv[1], kv[0])) if v)
            return Destination(None, f"no node fits ({detail or 'no nodes'})")
        tied = tuple(best)
        # Equal texts and ties are shared: a plan of 30,000 moves repeats a few hundred scores and nodes.
        why = self._shared.setdefault(top, f"score {top}")
        return Destination(best[0], why, self._shared.setdefault(tied, tied))  # the scheduler picks a tie at random

    def owned(self, pod: Pod, node: str) -> int:
        """Running pods of the pod's controller on the node, as the moves so far leave it (0 untracked)."""
        w = workload_of(pod)
        owned = self.cl.owned.get(w) if w is not None else None
        return owned.get(node, 0) if owned is not None else 0


def estimate(state: ClusterState, candidates: Sequence[Moved]) -> Placement:
    """Each candidate's destination in eviction order, and every node's requests once all have landed: the
    estimate of a plan made before (tests and bench/placement.py; a run works it out as it plans)."""
    est = Estimator(state)
    for c in candidates:
        est.move(c.pod)
        est.keep()
    return est.placement


def node_warnings(placement: Placement, candidates: Sequence[Moved], nodes: Mapping[str, Node],
                  targets: Mapping[str, Mapping[str, float]]) -> dict[str, list[str]]:
    """Per node: destinations that would end up over a plugin's target thresholds once every replacement has
    landed (the next run would move pods off them again). Only --keep-futile plans such landings."""
    out: dict[str, list[str]] = {}
    landed: dict[str, int] = Counter()
    for c in candidates:
        d = placement.of(c)
        if d is not None and d.node is not None:
            landed[d.node] += 1
    for name in sorted(landed):
        node, used = nodes[name], placement.used.get(name, {})
        for plugin, limits in sorted(targets.items()):
            over = over_targets(used, node, limits)
            if over:
                out.setdefault(name, []).append(
                    f"node {name} would be over {plugin}'s targets after {landed[name]} replacement(s) land there: "
                    f"{', '.join(over)}")
    return out


def over_targets(used: Mapping[str, float], node: Node, limits: Mapping[str, float]) -> list[str]:
    """Each resource whose requests (`used`) are over its limit, in percent of the node's allocatable, as
    `cpu 55% > 50%`; a resource the node lacks counts as under."""
    out = []
    for r, limit in limits.items():
        cap = node.allocatable.get(r)
        if cap:
            pct = used.get(r, 0.0) / cap * 100
            if pct > limit:
                out.append(f"{r} {round(pct, 1):g}% > {limit:g}%")
    return out
