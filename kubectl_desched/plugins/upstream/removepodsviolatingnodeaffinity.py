"""RemovePodsViolatingNodeAffinity: evict pods whose node no longer satisfies their required node affinity
(or nodeSelector), or that would score higher on another node by their preferred node affinity.

As upstream: `required` evicts a pod whose node fails its nodeSelector or required affinity when the pod fits
some considered node; `preferred` evicts a pod when some considered node has a higher preferred-affinity
weight than its own and the pod fits some considered node (its own included). The better node itself need
not be one the pod fits; DefaultEvictor's nodeFit is what asks for a different node the pod fits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kubectl_desched.errors import ConfigError
from kubectl_desched.framework import DeschedulePlugin, EvictOptions, Handle, LandingView, PluginArgs
from kubectl_desched.framework.args import LabelSelectorArg, Namespaces
from kubectl_desched.framework.flags import CliSurface
from kubectl_desched.framework.predicates import (
    first_fitting_node,
    has_required_node_affinity,
    node_selector_mismatch,
    preferred_node_affinity_terms,
    preferred_node_affinity_weight,
)
from kubectl_desched.model.objects import Node, Pod

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

# A rule looks at one pod on its node: None when it does not apply, else (evict?, the reason or a note for explain).
Rule = Callable[[Pod, Node, list[Node]], tuple[bool, str] | None]


@dataclass
class RemovePodsViolatingNodeAffinityArgs(PluginArgs):
    namespaces: Namespaces | None = None
    label_selector: LabelSelectorArg | None = None
    node_affinity_type: list[str] = field(default_factory=list)

    def validate(self, path: str) -> None:
        if not self.node_affinity_type:
            p = f"{path}." if path else ""
            raise ConfigError(f"{p}nodeAffinityType", f"at least one type is required ({REQUIRED} and/or "
                                                      f"{PREFERRED})")


class RemovePodsViolatingNodeAffinity(DeschedulePlugin):
    """Evicts pods whose node no longer matches their node affinity, or whose preferred affinity favours
    another node."""

    name = "RemovePodsViolatingNodeAffinity"
    relocates = True  # a pod its node no longer matches (or matches less well) belongs on another
    args_type = RemovePodsViolatingNodeAffinityArgs
    cli = CliSurface(defaults={"nodeAffinityType": [REQUIRED]}, by_default=True, explain=True)

    def __init__(self, args: RemovePodsViolatingNodeAffinityArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        ns = args.namespaces or Namespaces()
        selector = args.label_selector.matcher() if args.label_selector else None
        self.in_scope: Callable[[Pod], bool] = lambda p: ns.allows(p.namespace) and (
            selector is None or selector(p.labels))
        self._best: dict[str, tuple[int, Node | None]] = {}  # preferred terms (repr) -> best weight, node

    def deschedule(self, nodes: list[Node]) -> None:
        for kind in self.args.node_affinity_type:
            if kind == REQUIRED:
                stop = self._process(nodes, _has_required, self._required)
            elif kind == PREFERRED:
                self._best.clear()
                stop = self._process(nodes, _has_preferred, self._preferred)
            else:
                self.handle.info(f"nodeAffinityType {kind!r} is not supported, skipped (supported: {REQUIRED}, "
                                 f"{PREFERRED})")
                continue
            if stop:
                return

    def _process(self, nodes: list[Node], applies: Callable[[Pod], bool], rule: Rule) -> bool:
        """One pass over the nodes; True when the total eviction limit stops the plugin."""
        handle, evictor = self.handle, self.handle.evictor
        for node in nodes:
            # Select every violating pod of the node first, then evict them, as upstream lists then evicts.
            selected: list[tuple[Pod, str]] = []
            for pod in handle.state.pods_on_node(node.name):
                if pod.is_terminal or not self.in_scope(pod) or not applies(pod) or not evictor.filter(pod):
                    continue
                verdict = rule(pod, node, nodes)
                if verdict is None:
                    continue
                evict, text = verdict
                if not evict:
                    handle.note(pod, text)
                elif evictor.pre_eviction_filter(pod):
                    selected.append((pod, text))
            for pod, reason in selected:
                got = evictor.evict(pod, EvictOptions(self.name, reason))
                if got:
                    continue
                if got.total_reached:
                    return True
                if got.node_reached:
                    break
        return False

    def _required(self, pod: Pod, node: Node, nodes: list[Node]) -> tuple[bool, str] | None:
        mismatch = node_selector_mismatch(pod, node)
        if mismatch is None:
            return None
        fits = first_fitting_node(pod, nodes, self.handle.state)
        if fits is None:
            return False, f"node {node.name} no longer matches {mismatch}, but the pod fits no node"
        return True, f"node {node.name} no longer matches {mismatch}; fits {fits.name}"

    def landing_problem(self, pod: Pod, node: Node, view: LandingView) -> str | None:
        """Required affinity is a filter the estimate applies; a preferred-weight move must reach a node the
        pod prefers more than its own."""
        own = self.handle.state.nodes.get(pod.node_name)
        if PREFERRED not in self.args.node_affinity_type or own is None or not preferred_node_affinity_terms(pod):
            return None
        here, there = preferred_node_affinity_weight(pod, own), preferred_node_affinity_weight(pod, node)
        if there <= here:
            return f"would land on {node.name}, which it prefers no more than {own.name} (weight {there} <= {here})"
        return None

    def _preferred(self, pod: Pod, node: Node, nodes: list[Node]) -> tuple[bool, str] | None:
        here = preferred_node_affinity_weight(pod, node)
        best, best_node = self._best_weight(pod, nodes)
        if best <= here or best_node is None:
            return None
        if first_fitting_node(pod, nodes, self.handle.state) is None:
            return False, (f"node {best_node.name} has a higher preferred node affinity weight ({best} > {here}), "
                    f"but the pod fits no node")
        return True, f"preferred node affinity weight {here} on node {node.name}, {best} on {best_node.name}"

    def _best_weight(self, pod: Pod, nodes: list[Node]) -> tuple[int, Node | None]:
        """The highest weight over all the nodes (fit or not, as upstream), cached per distinct set of terms
        since the replicas of a workload share them."""
        key = repr(preferred_node_affinity_terms(pod))
        cached = self._best.get(key)
        if cached is None:
            best, best_node = 0, None
            for n in nodes:
                w = preferred_node_affinity_weight(pod, n)
                if w > best:
                    best, best_node = w, n
            cached = self._best[key] = (best, best_node)
        return cached


def _has_required(pod: Pod) -> bool:
    return has_required_node_affinity(pod)


def _has_preferred(pod: Pod) -> bool:
    return bool(preferred_node_affinity_terms(pod))
