"""RemovePodsViolatingInterPodAntiAffinity: evict pods whose required pod anti-affinity is broken by another
pod in the same topology domain.

Upstream's rules: only the candidate's own requiredDuringScheduling terms count; a term looks in its
`namespaces` (else the pod's namespace; a namespaceSelector is not evaluated); two pods share a domain when
they are on the same node, or their nodes carry the term's topologyKey with equal values. Only pods on the
considered nodes that pass the plugin's namespaces/labelSelector take part, as candidates and as the pods
they conflict with. Nodes are taken in order, each node's pods from lowest priority (then BestEffort,
Burstable, Guaranteed); a pod evicted stops counting against the pods looked at after it.

Cost stays near linear: pods are indexed once per topology key by (domain, namespace), and within that by
label pair and label key, so a check reads only the pods its selector can match in the candidate's domain."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_desched.framework import DeschedulePlugin, EvictOptions, Handle, PluginArgs
from kubectl_desched.framework.args import LabelSelectorArg, Namespaces
from kubectl_desched.model import Node, Pod
from kubectl_desched.plugins.defaultevictor import PREFER_NO_EVICTION_ANNOTATION
from kubectl_desched.scheduling import (
    anti_affinity_matcher,
    anti_affinity_namespaces,
    describe_label_selector,
    required_anti_affinity_terms,
)

_QOS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}
_NONE: dict[int, Pod] = {}


@dataclass
class RemovePodsViolatingInterPodAntiAffinityArgs(PluginArgs):
    namespaces: Namespaces | None = None
    label_selector: LabelSelectorArg | None = None


def eviction_order(pods: Iterable[Pod]) -> list[Pod]:
    """Lowest priority first (none before any), then BestEffort < Burstable < Guaranteed, then pods without
    the prefer-no-eviction annotation; namespace/name break the remaining ties so runs are repeatable."""
    return sorted(pods, key=lambda p: (p.priority is not None, p.priority or 0, _QOS_RANK.get(p.qos, 2),
                                       PREFER_NO_EVICTION_ANNOTATION in p.annotations, p.namespace, p.name))


class _Group:
    """The pods of one namespace in one topology domain: all, by label pair and by label key (insertion-ordered
    dicts keyed by id, so removing an evicted pod is O(labels))."""

    __slots__ = ("all", "by_key", "by_pair")

    def __init__(self) -> None:
        self.all: dict[int, Pod] = {}
        self.by_pair: dict[tuple[str, str], dict[int, Pod]] = {}
        self.by_key: dict[str, dict[int, Pod]] = {}

    def add(self, pod: Pod) -> None:
        i = id(pod)
        self.all[i] = pod
        for k, v in pod.labels.items():
            self.by_pair.setdefault((k, v), {})[i] = pod
            self.by_key.setdefault(k, {})[i] = pod

    def discard(self, pod: Pod) -> None:
        i = id(pod)
        self.all.pop(i, None)
        for k, v in pod.labels.items():
            self.by_pair.get((k, v), _NONE).pop(i, None)
            self.by_key.get(k, _NONE).pop(i, None)

    def pools(self, selector: Mapping[str, Any]) -> list[dict[int, Pod]]:
        """The smallest set of buckets holding every pod the selector can match: one positive requirement
        (a matchLabels pair, an In or an Exists expression) narrows the search; the full selector decides."""
        options: list[list[dict[int, Pod]]] = []
        for k, v in (selector.get("matchLabels") or {}).items():
            options.append([self.by_pair.get((str(k), str(v)), _NONE)])
        for e in selector.get("matchExpressions") or ():
            key, op = str(e.get("key", "")), e.get("operator")
            if op == "In":
                options.append([self.by_pair.get((key, str(v)), _NONE) for v in e.get("values") or ()])
            elif op == "Exists":
                options.append([self.by_key.get(key, _NONE)])
        if not options:
            return [self.all]
        return min(options, key=lambda pools: sum(len(p) for p in pools))


class _TopologyIndex:
    """Pods grouped by (domain of one topology key, namespace). A node without the key is a domain of its own:
    upstream counts pods on the same node as sharing every domain."""

    def __init__(self, key: str, nodes: Mapping[str, Node], pods: Iterable[Pod]) -> None:
        self.domain: dict[str, Hashable] = {}
        for name, node in nodes.items():
            value = node.labels.get(key)
            self.domain[name] = ("value", value) if value is not None else ("node", name)
        self.groups: dict[tuple[Hashable, str], _Group] = {}
        for p in pods:
            self.groups.setdefault((self.domain[p.node_name], p.namespace), _Group()).add(p)

    def group(self, node: str, namespace: str) -> _Group | None:
        return self.groups.get((self.domain[node], namespace))

    def discard(self, pod: Pod) -> None:
        g = self.groups.get((self.domain[pod.node_name], pod.namespace))
        if g is not None:
            g.discard(pod)


class RemovePodsViolatingInterPodAntiAffinity(DeschedulePlugin):
    """Evicts pods that share a topology domain with a pod their required anti-affinity excludes."""

    name = "RemovePodsViolatingInterPodAntiAffinity"
    args_type = RemovePodsViolatingInterPodAntiAffinityArgs

    def __init__(self, args: RemovePodsViolatingInterPodAntiAffinityArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        ns = args.namespaces or Namespaces()
        selector = args.label_selector.matcher() if args.label_selector else None
        self.in_scope: Callable[[Pod], bool] = lambda p: ns.allows(p.namespace) and (
            selector is None or selector(p.labels))
        self._nodes: dict[str, Node] = {}
        self._live: dict[int, Pod] = {}
        self._indexes: dict[str, _TopologyIndex] = {}

    def deschedule(self, nodes: list[Node]) -> None:
        handle, evictor = self.handle, self.handle.evictor
        self._nodes = {n.name: n for n in nodes}
        by_node = {n.name: [p for p in handle.state.pods_on_node(n.name) if not p.is_terminal and self.in_scope(p)]
                   for n in nodes}
        self._live = {id(p): p for pods in by_node.values() for p in pods}
        self._indexes = {}
        for node in nodes:
            for pod in eviction_order(by_node[node.name]):
                terms = required_anti_affinity_terms(pod)
                if not terms or not evictor.filter(pod):
                    continue
                reason = self._violation(pod, node, terms)
                if reason is None:
                    handle.note(pod, "no pod in its anti-affinity domains matches its required anti-affinity")
                    continue
                if not evictor.pre_eviction_filter(pod):
                    continue
                if evictor.evict(pod, EvictOptions(self.name, reason)):
                    self._forget(pod)  # it no longer counts against the pods after it
                    continue
                if evictor.total_limit_reached():
                    return
                if evictor.node_limit_reached(node.name):
                    break

    def _index(self, key: str) -> _TopologyIndex:
        idx = self._indexes.get(key)
        if idx is None:
            idx = self._indexes[key] = _TopologyIndex(key, self._nodes, self._live.values())
        return idx

    def _forget(self, pod: Pod) -> None:
        self._live.pop(id(pod), None)
        for idx in self._indexes.values():
            idx.discard(pod)

    def _violation(self, pod: Pod, node: Node, terms: list[Mapping[str, Any]]) -> str | None:
        for term in terms:
            try:
                matcher = anti_affinity_matcher(term)
            except ValueError:
                return None  # upstream gives up on the pod at a selector it cannot compile
            if matcher is None:
                continue
            key = term.get("topologyKey", "") or ""
            selector = term["labelSelector"]
            idx = self._index(key)
            for ns in anti_affinity_namespaces(pod, term):
                group = idx.group(node.name, ns)
                if group is None:
                    continue
                for pool in group.pools(selector):
                    for other in pool.values():
                        # upstream skips every pod with the candidate's name, whatever its namespace
                        if other.name != pod.name and matcher(other.labels):
                            return self._reason(node, key, selector, other)
        return None

    @staticmethod
    def _reason(node: Node, key: str, selector: Mapping[str, Any], other: Pod) -> str:
        where = ("on the same node" if other.node_name == node.name
                 else f"on node {other.node_name} (same {key}={node.labels.get(key, '')})")
        return (f"violates required anti-affinity ({describe_label_selector(selector)}, topologyKey {key}) "
                f"with {other.key} {where}")
