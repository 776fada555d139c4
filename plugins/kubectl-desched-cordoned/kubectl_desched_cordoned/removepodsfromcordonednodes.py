"""RemovePodsFromCordonedNodes: drain the nodes someone has cordoned (spec.unschedulable), or marked for removal
with a taint named in drainTaints (for example the cluster autoscaler's ToBeDeletedByClusterAutoscaler).

`kubectl drain` evicts a node's pods all at once. This plugin plans the same evictions through kubectl-desched, so
they get DefaultEvictor's protections (DaemonSet, mirror, critical, local storage... pods stay), the global limits
pace the drain (maxNoOfPodsToEvictPerNode, ...Total), PodDisruptionBudgets are honoured, and the user sees and
confirms the plan first. A pod that tolerates the mark (the node.kubernetes.io/unschedulable taint a cordon implies,
or the drain taint) was meant to stay there and is kept, unless includeTolerating is set; so is a pod younger than
minPodAgeSeconds. On each node the pods go in priority order, lowest first, then by namespace and name, so a limit
keeps the pods that matter most.

It imports only kubectl_desched.framework, the plugin author's face; its tests use kubectl_desched.testing too."""

from __future__ import annotations

from dataclasses import dataclass, field

from kubectl_desched.framework import (
    CliSurface,
    ConfigError,
    DeschedulePlugin,
    EvictOptions,
    Flag,
    Handle,
    LabelSelectorArg,
    Names,
    Namespaces,
    Node,
    PluginArgs,
    Pod,
    Seconds,
    Taint,
    Text,
    label_key_problem,
    pod_age,
    pod_tolerates_taint,
    taint_problem,
)

# What the node lifecycle controller adds to a cordoned node; DaemonSet pods tolerate it by default.
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


@dataclass
class RemovePodsFromCordonedNodesArgs(PluginArgs):
    namespaces: Namespaces | None = None
    label_selector: LabelSelectorArg | None = None
    # Taints, as "key" or "key=value" (any effect), that mark a node for draining like a cordon does.
    drain_taints: list[str] = field(default_factory=list)
    # A node label key (any value) that marks a node for draining, e.g. node.example.com/retiring.
    drain_label: str = ""
    include_tolerating: bool = False
    min_pod_age_seconds: int = 0  # younger pods stay: a drain leaves a pod that just started alone

    def validate(self, path: str) -> None:
        p = f"{path}." if path else ""
        for i, text in enumerate(self.drain_taints):
            problem = taint_problem(text)
            if problem:
                raise ConfigError(f"{p}drainTaints[{i}]", f"{text!r} is not a taint key or key=value: {problem}")
        problem = label_key_problem(self.drain_label) if self.drain_label else None
        if problem:
            raise ConfigError(f"{p}drainLabel", f"{self.drain_label!r} is not a label key: {problem}")
        if self.min_pod_age_seconds < 0:
            raise ConfigError(f"{p}minPodAgeSeconds", f"must not be negative, not {self.min_pod_age_seconds}")


def _named(taint: Taint, names: frozenset[str]) -> bool:
    return taint.key in names or (taint.value != "" and f"{taint.key}={taint.value}" in names)


def _eviction_order(pod: Pod) -> tuple[int, str, str]:
    return pod.priority or 0, pod.namespace, pod.name


class RemovePodsFromCordonedNodes(DeschedulePlugin):
    """Drains cordoned nodes (or nodes with a drainTaints taint) within the eviction limits."""

    name = "RemovePodsFromCordonedNodes"
    args_type = RemovePodsFromCordonedNodesArgs
    # Its flags, which `deschedule` and `explain` offer once the plugin is installed (it is a Deschedule plugin).
    # --help shows each flag's default from the args above; nothing is repeated here.
    cli = CliSurface(flags=(
        Flag("--drain-taints", "drainTaints", "also drain nodes with these taints, as KEY or KEY=VALUE",
             Names(metavar="KEY[=VALUE],...")),
        Flag("--drain-label", "drainLabel", "also drain nodes with this label",
             Text(metavar="KEY", check=label_key_problem)),
        Flag("--include-tolerating", "includeTolerating", "also evict pods that tolerate the mark"),
        Flag("--drain-min-pod-age", "minPodAgeSeconds", "keep pods younger than this", Seconds()),
    ))

    def __init__(self, args: RemovePodsFromCordonedNodesArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.namespaces = args.namespaces or Namespaces()
        self.selector = args.label_selector.matcher() if args.label_selector else None
        self.drain_taints = frozenset(args.drain_taints)

    def mark(self, node: Node) -> tuple[str, Taint | None] | None:
        """Why the node is being drained, and the taint a pod would tolerate to stay (None for a label, which no
        pod tolerates); None when it is not."""
        if node.unschedulable:
            return "node is cordoned (spec.unschedulable)", UNSCHEDULABLE_TAINT
        for taint in node.taints:
            if _named(taint, self.drain_taints):
                return f"node has drain taint {taint}", taint
        if self.args.drain_label and self.args.drain_label in node.labels:
            return f"node has drain label {self.args.drain_label}", None
        return None

    def out_of_scope(self, pod: Pod) -> str | None:
        if not self.namespaces.allows(pod.namespace):
            where = "not in namespaces.include" if self.namespaces.include else "in namespaces.exclude"
            return f"namespace {pod.namespace} is {where}"
        if self.selector is not None and not self.selector(pod.labels):
            return "labels do not match labelSelector"
        # The run's clock, not the wall clock: --now moves it for a snapshot, and tests fix it.
        age = pod_age(pod, self.handle.state.now)
        if age is not None and age < self.args.min_pod_age_seconds:
            return f"it is {int(age)}s old, younger than minPodAgeSeconds {self.args.min_pod_age_seconds}"
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
                if taint is not None and pod_tolerates_taint(pod, taint):
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
