"""RemovePodsViolatingInterPodAntiAffinity: evict pods whose required pod anti-affinity is broken by another
pod in the same topology domain.

Upstream's rules: only the candidate's own requiredDuringScheduling terms count; a term looks in its
`namespaces` (else the pod's namespace; a namespaceSelector is not evaluated); two pods share a domain when
they are on the same node, or their nodes carry the term's topologyKey with equal values. Only pods on the
considered nodes that pass the plugin's namespaces/labelSelector take part, as candidates and as the pods
they conflict with. Nodes are taken in order, each node's pods from lowest priority (then BestEffort,
Burstable, Guaranteed); a pod evicted stops counting against the pods looked at after it.

Cost stays near linear: pods are bucketed by (namespace, node) once; the pods of one namespace in one topology
domain are indexed by label pair and label key when a check first needs them, so a check reads only the pods its
selector can match in the candidate's domain, and pods no term can see are never indexed."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_desched.framework import DeschedulePlugin, EvictOptions, Handle, PluginArgs
from kubectl_desched.framework.args import LabelSelectorArg, Namespaces
from kubectl_desched.framework.flags import CliSurface
from kubectl_desched.framework.predicates import (
    anti_affinity_matcher,
    anti_affinity_namespaces,
    describe_label_selector,
    required_anti_affinity_terms,
)
from kubectl_desched.model.objects import Node, Pod
from kubectl_desched.plugins.upstream.podorder import eviction_order

_NONE: dict[int, Pod] = {}


@dataclass
class RemovePodsViolatingInterPodAntiAffinityArgs(PluginArgs):
    namespaces: Namespaces | None = None
    label_selector: LabelSelectorArg | None = None


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


class RemovePodsViolatingInterPodAntiAffinity(DeschedulePlugin):
    """Evicts pods that share a topology domain with a pod their required anti-affinity excludes."""

    name = "RemovePodsViolatingInterPodAntiAffinity"
    relocates = True  # the estimate keeps replacements off the domains required anti-affinity refuses
    args_type = RemovePodsViolatingInterPodAntiAffinityArgs
    cli = CliSurface(by_default=True, explain=True)

    def __init__(self, args: RemovePodsViolatingInterPodAntiAffinityArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        ns = args.namespaces or Namespaces()
        selector = args.label_selector.matcher() if args.label_selector else None
        self.in_scope: Callable[[Pod], bool] = lambda p: ns.allows(p.namespace) and (
            selector is None or selector(p.labels))
        self._nodes: dict[str, Node] = {}
        self._live: dict[tuple[str, str], dict[int, Pod]] = {}  # (namespace, node) -> pods that still count
        # topology key -> node -> domain, and domain -> its nodes. A node without the key is a domain of its
        # own: upstream counts pods on the same node as sharing every domain.
        self._domain: dict[str, dict[str, Hashable]] = {}
        self._members: dict[str, dict[Hashable, list[str]]] = {}
        self._groups: dict[tuple[str, str, Hashable], _Group] = {}  # (topology key, namespace, domain)

    def deschedule(self, nodes: list[Node]) -> None:
        handle, evictor = self.handle, self.handle.evictor
        self._nodes = {n.name: n for n in nodes}
        by_node = {n.name: [p for p in handle.state.pods_on_node(n.name) if not p.is_terminal and self.in_scope(p)]
                   for n in nodes}
        self._live, self._domain, self._members, self._groups = {}, {}, {}, {}
        for pods in by_node.values():
            for p in pods:
                self._live.setdefault((p.namespace, p.node_name), {})[id(p)] = p
        for node in nodes:
            # only pods with terms can be candidates; sorting just those keeps the order among them
            for pod in eviction_order(p for p in by_node[node.name] if required_anti_affinity_terms(p)):
                terms = required_anti_affinity_terms(pod)
                if not evictor.filter(pod):
                    continue
                reason = self._violation(pod, node, terms)
                if reason is None:
                    handle.note(pod, "no pod in its anti-affinity domains matches its required anti-affinity")
                    continue
                if not evictor.pre_eviction_filter(pod):
                    continue
                got = evictor.evict(pod, EvictOptions(self.name, reason))
                if got:
                    self._forget(pod)  # it no longer counts against the pods after it
                    continue
                if got.total_reached:
                    return
                if got.node_reached:
                    break

    def _group(self, key: str, namespace: str, node: str) -> _Group:
        """The namespace's pods in the node's domain of the key, indexed on first use: a check only ever reads
        the candidate's own domain, so most pods are never indexed."""
        domain = self._domain.get(key)
        if domain is None:
            domain = self._domain[key] = {name: ("value", n.labels[key]) if key in n.labels else ("node", name)
                                          for name, n in self._nodes.items()}
            members: dict[Hashable, list[str]] = {}
            for name, d in domain.items():
                members.setdefault(d, []).append(name)
            self._members[key] = members
        where = domain[node]
        group = self._groups.get((key, namespace, where))
        if group is None:
            group = self._groups[(key, namespace, where)] = _Group()
            for member in self._members[key][where]:
                for pod in self._live.get((namespace, member), _NONE).values():
                    group.add(pod)
        return group

    def _forget(self, pod: Pod) -> None:
        self._live.get((pod.namespace, pod.node_name), _NONE).pop(id(pod), None)
        for key, domain in self._domain.items():
            group = self._groups.get((key, pod.namespace, domain[pod.node_name]))
            if group is not None:
                group.discard(pod)

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
            for ns in anti_affinity_namespaces(pod, term):
                group = self._group(key, ns, node.name)
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
