"""RemovePodsFromCordonedNodes: drain the nodes someone has cordoned (spec.unschedulable), or marked for removal
with a taint named in drainTaints (for example the cluster autoscaler's ToBeDeletedByClusterAutoscaler).

`kubectl drain` evicts a node's pods all at once. This plugin plans the same evictions through kubectl-desched, so
they get DefaultEvictor's protections (DaemonSet, mirror, critical, local storage... pods stay), the global limits
pace the drain (maxNoOfPodsToEvictPerNode, ...Total), PodDisruptionBudgets are honoured, and the user sees and
confirms the plan first. A pod that tolerates the mark (the node.kubernetes.io/unschedulable taint a cordon implies,
or the drain taint) was meant to stay there and is kept, unless includeTolerating is set. On each node the pods go in
priority order, lowest first, then by namespace and name, so a limit keeps the pods that matter most."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kubectl_desched.errors import ConfigError
from kubectl_desched.framework import DeschedulePlugin, EvictOptions, Handle, PluginArgs
from kubectl_desched.framework.args import LabelSelectorArg, Namespaces
from kubectl_desched.framework.flags import CliSurface, Flag, Names
from kubectl_desched.framework.predicates import pod_tolerates_taint
from kubectl_desched.model.objects import Node, Pod, Taint

# What the node lifecycle controller adds to a cordoned node; DaemonSet pods tolerate it by default.
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_TAINT_KEY = re.compile(rf"({_PREFIX}/)?{_NAME}")
_TAINT_VALUE = re.compile(rf"({_NAME})?")


@dataclass
class RemovePodsFromCordonedNodesArgs(PluginArgs):
    namespaces: Namespaces | None = None
    label_selector: LabelSelectorArg | None = None
    # Taints, as "key" or "key=value" (any effect), that mark a node for draining like a cordon does.
    drain_taints: list[str] = field(default_factory=list)
    include_tolerating: bool = False

    def validate(self, path: str) -> None:
        p = f"{path}." if path else ""
        for i, text in enumerate(self.drain_taints):
            key, _, value = text.partition("=")
            if len(key) > 316 or not _TAINT_KEY.fullmatch(key) or ("/" in key and len(key.split("/")[0]) > 253):
                raise ConfigError(f"{p}drainTaints[{i}]", f"{text!r} is not a taint key or key=value")
            if not _TAINT_VALUE.fullmatch(value):
                raise ConfigError(f"{p}drainTaints[{i}]", f"{value!r} is not a valid taint value")


def _named(taint: Taint, names: frozenset[str]) -> bool:
    return taint.key in names or (taint.value != "" and f"{taint.key}={taint.value}" in names)


def _eviction_order(pod: Pod) -> tuple[int, str, str]:
    return pod.priority or 0, pod.namespace, pod.name


class RemovePodsFromCordonedNodes(DeschedulePlugin):
    """Drains cordoned nodes (or nodes with a drainTaints taint) within the eviction limits."""

    name = "RemovePodsFromCordonedNodes"
    args_type = RemovePodsFromCordonedNodesArgs
    # Its flags, which `deschedule` and `explain` offer once the plugin is installed (it is a Deschedule plugin).
    cli = CliSurface(flags=(
        Flag("--drain-taints", "drainTaints", "also drain nodes with these taints, as KEY or KEY=VALUE",
             Names(metavar="KEY[=VALUE],...")),
        Flag("--include-tolerating", "includeTolerating", "also evict pods that tolerate the mark"),
    ))

    def __init__(self, args: RemovePodsFromCordonedNodesArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.namespaces = args.namespaces or Namespaces()
        self.selector = args.label_selector.matcher() if args.label_selector else None
        self.drain_taints = frozenset(args.drain_taints)

    def mark(self, node: Node) -> tuple[str, Taint] | None:
        """Why the node is being drained, and the taint a pod would tolerate to stay; None when it is not."""
        if node.unschedulable:
            return "node is cordoned (spec.unschedulable)", UNSCHEDULABLE_TAINT
        for taint in node.taints:
            if _named(taint, self.drain_taints):
                return f"node has drain taint {taint}", taint
        return None

    def out_of_scope(self, pod: Pod) -> str | None:
        if not self.namespaces.allows(pod.namespace):
            where = "not in namespaces.include" if self.namespaces.include else "in namespaces.exclude"
            return f"namespace {pod.namespace} is {where}"
        if self.selector is not None and not self.selector(pod.labels):
            return "labels do not match labelSelector"
        return None

    def deschedule(self, nodes: list[Node]) -> None:
        handle, evictor = self.handle, self.handle.evictor
        for node in nodes:
            marked = self.mark(node)
            if marked is None:
                continue
            why, taint = marked
            picked: list[tuple[Pod, str]] = []
            for pod in sorted(handle.state.pods_on_node(node.name), key=_eviction_order):
                if pod.is_terminal:
                    continue  # uses nothing and blocks no drain; RemoveFailedPods deals with Failed pods
                out = self.out_of_scope(pod)
                if out is not None:
                    handle.note(pod, f"not picked: {why}, but {out}")
                    continue
                if not evictor.filter(pod):
                    continue  # explain shows the protection itself
                reason = why
                if pod_tolerates_taint(pod, taint):
                    if not self.args.include_tolerating:
                        handle.note(pod, f"not picked: {why}, but the pod tolerates {taint} "
                                         "(includeTolerating is false)")
                        continue
                    reason += f"; the pod tolerates {taint}, includeTolerating is set"
                if evictor.pre_eviction_filter(pod):
                    picked.append((pod, reason))
            handle.report_node(node.name, "draining", f"{why}: {len(picked)} pod(s) to move")
            for i, (pod, reason) in enumerate(picked):
                got = evictor.evict(pod, EvictOptions(self.name, reason))
                if got:
                    continue
                if got.total_reached:
                    handle.info("stopped: the total eviction limit was reached")
                    return
                if got.node_reached:
                    for rest, its_reason in picked[i + 1:]:
                        handle.note(rest, f"selected ({its_reason}) but not tried: the eviction limit of node "
                                          f"{node.name} was reached")
                    break
