"""RemovePodsHavingTooManyRestarts: evict pods whose containers restarted podRestartThreshold times or more in
total (init containers counted when includingInitContainers), optionally only in some states. The pods of a
node go most restarts first."""

from __future__ import annotations

from dataclasses import dataclass, field

from kubectl_desched.errors import ConfigError
from kubectl_desched.framework import DeschedulePlugin, Handle, PluginArgs
from kubectl_desched.framework.args import LabelSelectorArg, Namespaces
from kubectl_desched.framework.flags import CliSurface, Flag, Integer
from kubectl_desched.model.objects import Node, Pod
from kubectl_desched.plugins.upstream.podstatus import (
    ArgsScope,
    Check,
    by_name,
    container_label,
    containers,
    evict_in_order,
    screen,
)

# Running is compared with the pod's phase, CrashLoopBackOff with container waiting reasons.
ALLOWED_STATES = ("CrashLoopBackOff", "Running")


@dataclass
class RemovePodsHavingTooManyRestartsArgs(PluginArgs):
    namespaces: Namespaces | None = None
    label_selector: LabelSelectorArg | None = None
    pod_restart_threshold: int = 0
    including_init_containers: bool = False
    states: list[str] = field(default_factory=list)

    def validate(self, path: str) -> None:
        p = f"{path}." if path else ""
        if self.pod_restart_threshold < 1:
            raise ConfigError(f"{p}podRestartThreshold", f"must be at least 1, not {self.pod_restart_threshold}")
        for i, s in enumerate(self.states):
            if s not in ALLOWED_STATES:
                raise ConfigError(f"{p}states[{i}]", f"invalid state {s!r}; must be one of {', '.join(ALLOWED_STATES)}")


class RemovePodsHavingTooManyRestarts(DeschedulePlugin):
    """Evicts pods whose containers restarted at least podRestartThreshold times."""

    name = "RemovePodsHavingTooManyRestarts"
    args_type = RemovePodsHavingTooManyRestartsArgs
    # Upstream requires a threshold; from flags, a conservative one.
    cli = CliSurface(flags=(Flag("--pod-restart-threshold", "podRestartThreshold", "podRestartThreshold",
                                 Integer(1)),),
                     defaults={"podRestartThreshold": 100}, by_default=True, explain=True)

    def __init__(self, args: RemovePodsHavingTooManyRestartsArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.scope = ArgsScope(args.namespaces, args.label_selector)
        self.states = frozenset(args.states)

    def restarts(self, pod: Pod) -> int:
        return sum(cs.restarts for cs in containers(pod, self.args.including_init_containers))

    @classmethod
    def reads_one_node(cls, args: object) -> bool:
        return True  # each pod is judged on its own node

    def deschedule(self, nodes: list[Node]) -> None:
        state = self.handle.state
        for node in nodes:
            counted = []
            for pod in sorted(state.pods_on_node(node.name), key=by_name):
                reason = screen(self, self.scope, pod, self._check)
                if reason is not None:
                    counted.append((self.restarts(pod), pod, reason))
            counted.sort(key=lambda item: -item[0])  # stable: ties keep namespace/name order
            if not evict_in_order(self, [(pod, reason) for _, pod, reason in counted]):
                return

    def _check(self, pod: Pod) -> Check:
        args = self.args
        n = self.restarts(pod)
        counted = f"restarts {n}" + (" (init containers included)" if args.including_init_containers else "")
        if n < args.pod_restart_threshold:
            return None, (f"{counted} < {args.pod_restart_threshold}" if n else None)
        text = f"{counted} >= {args.pod_restart_threshold}"
        if not self.states:
            return text, None
        matched = self._state(pod)
        if matched is None:
            return None, f"{text}, but not in states {', '.join(args.states)} (phase {pod.phase})"
        return f"{text}; {matched}", None

    def _state(self, pod: Pod) -> str | None:
        """Upstream compares the phase and container waiting reasons only (not terminated ones, not the pod's
        status.reason); init containers' waiting reasons count when includingInitContainers."""
        if pod.phase in self.states:
            return f"phase {pod.phase}"
        for cs in containers(pod, self.args.including_init_containers):
            if cs.waiting_reason in self.states:
                return f"{container_label(cs)} waiting in {cs.waiting_reason}"
        return None
