"""RemoveDuplicates: pods that share their owners and their container images are duplicates; where a node holds
more of one such group than an even spread over the nodes the group could run on allows, the extra pods go.

Built as upstream builds it:
- only pods that pass the namespaces arg and the evictor's Filter and PreEvictionFilter are looked at, and
  pods without owners or with an owner of an excluded kind are skipped;
- a group is (namespace, owner kind, owner name, the pod's images sorted and joined); a pod with two owners
  belongs to two groups;
- on each node the first pod with a given set of (owner, image) pairs is the original, the next ones are its
  duplicates;
- per group, the feasible nodes are the union, over the distinct placement rules (tolerations, nodeSelector,
  required node affinity) of its duplicates, of the nodes that rule admits when it admits two or more
  (cordoned nodes included, as upstream does); fewer than two feasible nodes and the group is left alone;
- the cap is ceil(pods in the group / feasible nodes); a node holding more keeps the original and the first
  cap-1 duplicates, in listing order, and the rest are evicted.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubectl_desched.framework import BalancePlugin, EvictOptions, Handle, LandingView, PluginArgs
from kubectl_desched.framework.args import Namespaces
from kubectl_desched.framework.flags import CliSurface
from kubectl_desched.framework.predicates import node_selector_mismatch, pod_tolerates_taint
from kubectl_desched.model.objects import Node, Pod

# (namespace, owner kind, owner name, images sorted and joined with "#")
GroupKey = tuple[str, str, str, str]


@dataclass
class RemoveDuplicatesArgs(PluginArgs):
    namespaces: Namespaces | None = None
    exclude_owner_kinds: list[str] = field(default_factory=list)


def freeze(value: Any) -> Any:
    """A hashable, order-insensitive-for-maps copy of a JSON value, to use as a dict key."""
    if not value:
        return value if value is None or isinstance(value, str | int | float | bool) else ()
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


def node_pinning(pod: Pod) -> tuple[Any, ...]:
    """The pod's nodeSelector and required node affinity, hashable: equal values admit the same nodes."""
    required = ((pod.affinity or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    return (freeze(pod.node_selector), freeze(required))


def placement_key(pod: Pod) -> tuple[Any, ...]:
    """Pods with equal keys are admitted by the same nodes (tolerations, nodeSelector, required affinity)."""
    return (frozenset(pod.tolerations), *node_pinning(pod))


def tolerates_node(pod: Pod, node: Node) -> bool:
    """The pod tolerates every NoSchedule and NoExecute taint of the node."""
    return all(pod_tolerates_taint(pod, t) for t in node.taints if t.effect in ("NoSchedule", "NoExecute"))


def admits(pod: Pod, node: Node) -> bool:
    """The node passes the pod's taints check and its nodeSelector and required node affinity."""
    return tolerates_node(pod, node) and node_selector_mismatch(pod, node) is None


def by_name(pods: list[Pod]) -> list[Pod]:
    return sorted(pods, key=lambda p: (p.namespace, p.name))


class RemoveDuplicates(BalancePlugin):
    """Evicts pods of one owner and image set beyond an even spread over the nodes they could run on."""

    name = "RemoveDuplicates"
    args_type = RemoveDuplicatesArgs
    cli = CliSurface(explain=True)

    def __init__(self, args: RemoveDuplicatesArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.namespaces = args.namespaces or Namespaces()
        self.excluded_kinds = frozenset(args.exclude_owner_kinds)
        self._caps: dict[int, tuple[int, str]] = {}  # id(pod) -> the pods per node its group may hold, and who

    def landing_problem(self, pod: Pod, node: Node, view: LandingView) -> str | None:
        cap, who = self._caps.get(id(pod), (0, ""))
        held = view.owned(pod, node.name) + 1
        if cap and held > cap:
            return f"would be a duplicate again on {node.name}: {held} pods of {who}, more than the {cap} per node"
        return None

    def _listed(self, node: Node) -> Iterator[Pod]:
        """The node's pods upstream's list call returns: running or pending, in the namespaces, evictable now."""
        evictor = self.handle.evictor
        for pod in by_name(self.handle.state.pods_on_node(node.name)):
            if pod.is_terminal or not self.namespaces.allows(pod.namespace):
                continue
            if evictor.filter(pod) and evictor.pre_eviction_filter(pod):
                yield pod

    def balance(self, nodes: list[Node]) -> None:
        occurrences: dict[GroupKey, int] = {}
        duplicates: dict[GroupKey, dict[str, list[Pod]]] = {}
        for node in nodes:
            originals: set[tuple[str, ...]] = set()
            for pod in self._listed(node):
                owners = pod.owners
                if not owners or any(o.kind in self.excluded_kinds for o in owners):
                    continue
                images = sorted(pod.images)
                joined = "#".join(images)
                groups = [(pod.namespace, o.kind, o.name, joined) for o in owners]
                for g in groups:
                    occurrences[g] = occurrences.get(g, 0) + 1
                identity = tuple(sorted(f"{pod.namespace}/{o.kind}/{o.name}/{image}"
                                        for o in owners for image in images))
                if identity not in originals:
                    originals.add(identity)
                    continue
                for g in groups:
                    duplicates.setdefault(g, {}).setdefault(node.name, []).append(pod)

        admitted: dict[tuple[Any, ...], tuple[str, ...]] = {}
        for group, per_node in duplicates.items():
            if not self._spread(group, per_node, occurrences[group], nodes, admitted):
                return

    def _feasible(self, per_node: dict[str, list[Pod]], nodes: list[Node],
                  admitted: dict[tuple[Any, ...], tuple[str, ...]]) -> set[str]:
        feasible: set[str] = set()
        seen: set[tuple[Any, ...]] = set()
        for pods in per_node.values():
            for pod in pods:
                key = placement_key(pod)
                if key in seen:
                    continue
                seen.add(key)
                names = admitted.get(key)
                if names is None:
                    names = admitted[key] = tuple(n.name for n in nodes if admits(pod, n))
                if len(names) > 1:
                    feasible.update(names)
        return feasible

    def _spread(self, group: GroupKey, per_node: dict[str, list[Pod]], total: int, nodes: list[Node],
                admitted: dict[tuple[Any, ...], tuple[str, ...]]) -> bool:
        """Evict one group's extra duplicates; False once the global total limit stops the plugin."""
        handle, evictor = self.handle, self.handle.evictor
        namespace, kind, owner, _ = group
        who = f"{kind} {namespace}/{owner}"
        feasible = self._feasible(per_node, nodes, admitted)
        if len(feasible) < 2:
            why = f"not moved: {who} has {len(feasible)} feasible node(s), fewer than two to spread over"
            for pods in per_node.values():
                for pod in pods:
                    handle.note(pod, why)
            return True
        cap = -(-total // len(feasible))
        for node_name, pods in per_node.items():
            held = len(pods) + 1  # the original is not in the list
            if held <= cap:
                for pod in pods:
                    handle.note(pod, f"not moved: {held} pods of {who} on {node_name}, within the {cap} per "
                                     f"feasible node")
                continue
            for pod in pods[:cap - 1]:
                handle.note(pod, f"not moved: {node_name} keeps {cap} pods of {who} ({cap} per feasible node)")
            reason = f"{held} pods of {who} on {node_name}, more than the {cap} per feasible node"
            for pod in pods[cap - 1:]:
                self._caps[id(pod)] = (cap, who)
                got = evictor.evict(pod, EvictOptions(self.name, reason))
                if got:
                    continue
                if got.total_reached:
                    return False
                if got.node_reached:
                    break
        return True
