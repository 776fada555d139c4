"""RemovePodsViolatingNodeTaints: evict pods that do not tolerate a NoSchedule taint of their node (and
PreferNoSchedule ones with includePreferNoSchedule). NoExecute taints are left alone, as upstream leaves
them to the kubelet's taint manager, which evicts those pods by itself."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kubectl_desched.errors import ConfigError
from kubectl_desched.framework import DeschedulePlugin, EvictOptions, Handle, LandingView, PluginArgs
from kubectl_desched.framework.args import LabelSelectorArg, Namespaces
from kubectl_desched.framework.flags import CliSurface
from kubectl_desched.framework.predicates import pod_tolerates_taint
from kubectl_desched.model.objects import Node, Pod, Taint


@dataclass
class RemovePodsViolatingNodeTaintsArgs(PluginArgs):
    namespaces: Namespaces | None = None
    label_selector: LabelSelectorArg | None = None
    include_prefer_no_schedule: bool = False
    # None and [] differ for includedTaints, as upstream: unset includes every taint, an empty list none.
    excluded_taints: list[str] | None = None
    included_taints: list[str] | None = None

    def validate(self, path: str) -> None:
        if self.excluded_taints and self.included_taints:
            p = f"{path}." if path else ""
            raise ConfigError(f"{p}includedTaints", "cannot be combined with excludedTaints; set only one of them")


def _named(taint: Taint, names: set[str]) -> bool:
    """A taint is named by its key, or by key=value when it has a value."""
    return taint.key in names or (taint.value != "" and f"{taint.key}={taint.value}" in names)


class RemovePodsViolatingNodeTaints(DeschedulePlugin):
    """Evicts pods that do not tolerate their node's NoSchedule taints."""

    name = "RemovePodsViolatingNodeTaints"
    relocates = True  # a pod that does not tolerate its node belongs on another
    args_type = RemovePodsViolatingNodeTaintsArgs
    cli = CliSurface(by_default=True, explain=True)

    def __init__(self, args: RemovePodsViolatingNodeTaintsArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        ns = args.namespaces or Namespaces()
        selector = args.label_selector.matcher() if args.label_selector else None
        self.in_scope: Callable[[Pod], bool] = lambda p: ns.allows(p.namespace) and (
            selector is None or selector(p.labels))
        self.effects = ("NoSchedule", "PreferNoSchedule") if args.include_prefer_no_schedule else ("NoSchedule",)
        self.excluded = set(args.excluded_taints or ())
        self.included = None if args.included_taints is None else set(args.included_taints)

    def counts(self, taint: Taint) -> bool:
        """Whether the plugin enforces this taint: its effect, then excludedTaints / includedTaints."""
        if taint.effect not in self.effects or _named(taint, self.excluded):
            return False
        return self.included is None or _named(taint, self.included)

    @classmethod
    def reads_one_node(cls, args: object) -> bool:
        return True  # each pod is judged on its own node

    def landing_problem(self, pod: Pod, node: Node, view: LandingView) -> str | None:
        """The estimate already keeps replacements off NoSchedule taints; a PreferNoSchedule one
        (includePreferNoSchedule) would make the next run evict it again."""
        untolerated = next((t for t in node.taints if self.counts(t) and not pod_tolerates_taint(pod, t)), None)
        return f"would land on {node.name}, whose taint {untolerated} it does not tolerate either" \
            if untolerated is not None else None

    def deschedule(self, nodes: list[Node]) -> None:
        handle, evictor = self.handle, self.handle.evictor
        for node in nodes:
            taints = [t for t in node.taints if self.counts(t)]
            if not taints:
                continue
            selected: list[tuple[Pod, str]] = []
            for pod in handle.state.pods_on_node(node.name):
                if pod.is_terminal or not self.in_scope(pod) or not evictor.filter(pod):
                    continue
                untolerated = next((t for t in taints if not pod_tolerates_taint(pod, t)), None)
                if untolerated is None:
                    continue
                if evictor.pre_eviction_filter(pod):
                    selected.append((pod, f"does not tolerate taint {untolerated}"))
            for pod, reason in selected:
                got = evictor.evict(pod, EvictOptions(self.name, reason))
                if got:
                    continue
                if got.total_reached:
                    return
                if got.node_reached:
                    break
