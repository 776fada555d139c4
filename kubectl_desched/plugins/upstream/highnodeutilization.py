"""HighNodeUtilization: empty under-utilized nodes so the cluster can scale down; pods move onto the other
schedulable nodes. A scheduler that spreads (the default LeastAllocated) sends them back to the emptiest nodes, the
ones being emptied, unless --cordon cordons those first (or the scheduler packs, e.g. MostAllocated scoring). Usage
is pods' requests."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Literal

from kubectl_desched.errors import ConfigError
from kubectl_desched.framework import BalancePlugin, Handle, PluginArgs
from kubectl_desched.framework.args import Namespaces, percent_map
from kubectl_desched.framework.flags import CliSurface, Flag, Percentages
from kubectl_desched.model.objects import Node, Pod
from kubectl_desched.plugins.upstream import nodeutilization as nu


@dataclass
class HighNodeUtilizationArgs(PluginArgs):
    thresholds: dict[str, float] = field(default_factory=dict)
    number_of_nodes: int = 0
    evictable_namespaces: Namespaces | None = None
    eviction_modes: list[Literal["OnlyThresholdingResources"]] = field(default_factory=list)

    def validate(self, path: str) -> None:
        p = f"{path}." if path else ""
        if self.evictable_namespaces and self.evictable_namespaces.include:
            raise ConfigError(f"{p}evictableNamespaces.include", "only exclude can be set, inclusion is not supported")
        if not self.thresholds:
            raise ConfigError(f"{p}thresholds", "no resource threshold is configured")
        percent_map(self.thresholds, f"{p}thresholds")
        if self.number_of_nodes < 0:
            raise ConfigError(f"{p}numberOfNodes", "must not be negative")


class HighNodeUtilization(BalancePlugin):
    """Evicts pods from under-utilized nodes while the schedulable nodes have room for them."""

    name = "HighNodeUtilization"
    args_type = HighNodeUtilizationArgs
    empties = "under-utilized"  # --cordon: these nodes are cordoned first, so no replacement lands back on them
    # Upstream has no default thresholds; from flags, the same as LowNodeUtilization's.
    cli = CliSurface(flags=(Flag("--thresholds", "thresholds", "under-utilization thresholds", Percentages()),
                            nu.NUMBER_OF_NODES),
                     defaults={"thresholds": {"cpu": 20.0, "memory": 20.0, "pods": 20.0}})

    def __init__(self, args: HighNodeUtilizationArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.named = list(args.thresholds)
        self.tracked = list(dict.fromkeys([*self.named, *nu.BASIC_RESOURCES]))
        self.only_thresholding = "OnlyThresholdingResources" in args.eviction_modes

    def _requests_thresholding(self, pod: Pod) -> bool:
        return any(r in pod.requests for r in self.named)

    def balance(self, nodes: list[Node]) -> None:
        args, handle, state = self.args, self.handle, self.handle.state
        used = {n.name: nu.usage(state, n, self.tracked) for n in nodes}
        pct = {n.name: nu.percentages(used[n.name], n) for n in nodes}
        limits = f"under <= {nu.describe(args.thresholds, self.named)}"
        under: list[Node] = []
        targets: list[Node] = []
        for n in nodes:
            klass = self._classify(n, pct[n.name])
            if klass == "under-utilized":
                under.append(n)
            elif klass == "appropriately utilized":
                targets.append(n)

        why_not = self._nothing_to_do(under, targets, nodes)
        if why_not:
            handle.info(why_not)
            for n in under:
                for pod in state.pods_on_node(n.name):
                    handle.note(pod, f"not moved: {why_not}")
            return
        full = {r: 100.0 for r in self.named}
        pool = {r: sum(nu.capped_capacity(n, full, self.tracked)[r] - used[n.name][r] for n in targets)
                for r in self.tracked}
        excluded = set(args.evictable_namespaces.exclude) if args.evictable_namespaces else set()
        loop = nu.SourceEviction(handle, self.name, self.tracked, pool, targets, excluded, "schedulable",
                                 self._requests_thresholding if self.only_thresholding else None)

        def stop() -> str:
            res = nu.exhausted(pool, self.tracked)
            return f"the other schedulable nodes have no {res} left" if res else ""

        for n in sorted(under, key=lambda n: (sum(used[n.name].values()), n.name)):
            reason = f"node under-utilized: {nu.describe(pct[n.name], self.named)} ({limits}); packing elsewhere"
            if not loop.run(n, used[n.name], stop, functools.partial(str, reason)):
                return

    def _classify(self, n: Node, p: dict[str, float]) -> str:
        if nu.below(p, self.args.thresholds):  # unschedulable nodes are sources too: they should empty
            klass = "under-utilized"
        elif n.unschedulable:
            klass = "unschedulable"
        else:
            klass = "appropriately utilized"
        limits = f"under <= {nu.describe(self.args.thresholds, self.named)}"
        self.handle.report_node(n.name, klass, f"{nu.describe(p, self.named)} ({limits})")
        return klass

    def estimate_node(self, node: Node) -> list[tuple[Pod, str]] | None:
        """The node's class from its own usage; on an under-utilized node, the pods that could move."""
        pct = nu.percentages(nu.usage(self.handle.state, node, self.tracked), node)
        if self._classify(node, pct) != "under-utilized":
            return []
        args = self.args
        excluded = set(args.evictable_namespaces.exclude) if args.evictable_namespaces else set()
        return nu.could_move(self.handle, node, excluded, "the node is under-utilized; whether it moves depends on "
                                                         "the room on the other nodes",
                             self._requests_thresholding if self.only_thresholding else None)

    def _nothing_to_do(self, under: list[Node], targets: list[Node], nodes: list[Node]) -> str:
        why = nu.nothing_to_do(under, nodes, self.args.number_of_nodes)
        if not why and not targets:
            why = "no schedulable node to move pods to"
        return why
