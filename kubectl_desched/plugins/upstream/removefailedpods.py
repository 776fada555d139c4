"""RemoveFailedPods: evict pods in phase Failed, optionally only for some reasons or exit codes, not for some
owner kinds, and only once they are minPodLifetimeSeconds old (counted from creationTimestamp, as upstream
does; 3600 when unset, the default upstream applies when it loads a policy)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kubectl_desched.framework import DeschedulePlugin, Handle, PluginArgs
from kubectl_desched.framework.args import LabelSelectorArg, Namespaces
from kubectl_desched.framework.flags import CliSurface
from kubectl_desched.model.objects import Node, Pod
from kubectl_desched.plugins.upstream.podstatus import (
    ArgsScope,
    Check,
    by_name,
    containers,
    evict_in_order,
    human_duration,
    screen,
    seconds_since,
    seconds_text,
    validate_exit_codes,
    validate_seconds,
)

DEFAULT_MIN_POD_LIFETIME_SECONDS = 3600


@dataclass
class RemoveFailedPodsArgs(PluginArgs):
    namespaces: Namespaces | None = None
    label_selector: LabelSelectorArg | None = None
    exclude_owner_kinds: list[str] = field(default_factory=list)
    min_pod_lifetime_seconds: int | None = DEFAULT_MIN_POD_LIFETIME_SECONDS
    reasons: list[str] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)
    including_init_containers: bool = False

    def __post_init__(self) -> None:
        if self.min_pod_lifetime_seconds is None:  # `minPodLifetimeSeconds: null` is unset: upstream defaults it
            self.min_pod_lifetime_seconds = DEFAULT_MIN_POD_LIFETIME_SECONDS

    def validate(self, path: str) -> None:
        p = f"{path}." if path else ""
        validate_seconds(self.min_pod_lifetime_seconds, f"{p}minPodLifetimeSeconds")
        validate_exit_codes(self.exit_codes, f"{p}exitCodes")


class RemoveFailedPods(DeschedulePlugin):
    """Evicts Failed pods, optionally filtered by reason, exit code, owner kind and age."""

    name = "RemoveFailedPods"
    args_type = RemoveFailedPodsArgs
    cli = CliSurface(by_default=True, explain=True)

    def __init__(self, args: RemoveFailedPodsArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.scope = ArgsScope(args.namespaces, args.label_selector)
        self.reasons = frozenset(args.reasons)
        self.exit_codes = frozenset(args.exit_codes)
        self.excluded_kinds = frozenset(args.exclude_owner_kinds)

    @classmethod
    def reads_one_node(cls, args: object) -> bool:
        return True  # each pod is judged on its own node

    def deschedule(self, nodes: list[Node]) -> None:
        state = self.handle.state
        for node in nodes:
            picked = []
            for pod in sorted(state.pods_on_node(node.name), key=by_name):
                reason = screen(self, self.scope, pod, self._check)
                if reason is not None:
                    picked.append((pod, reason))
            if not evict_in_order(self, picked):
                return

    def _observed(self, pod: Pod) -> tuple[list[str], list[int]]:
        """The reasons and exit codes upstream compares: container waiting and terminated reasons, the pod's
        status.reason, terminated exit codes; init containers too when includingInitContainers."""
        init = self.args.including_init_containers
        reasons = [pod.reason] if pod.reason else []
        codes = []
        for cs in containers(pod, init):
            reasons += [r for r in (cs.waiting_reason, cs.terminated_reason) if r]
            if cs.exit_code is not None:
                codes.append(cs.exit_code)
        return list(dict.fromkeys(reasons)), list(dict.fromkeys(codes))

    def _check(self, pod: Pod) -> Check:
        if pod.phase != "Failed":
            return None, None  # not this plugin's business: no note
        args = self.args
        age = seconds_since(self.handle.state.now, pod.created)
        limit = args.min_pod_lifetime_seconds or 0
        if limit:
            if age is None:
                return None, "Failed, but it has no creationTimestamp: its age is unknown"
            if int(max(age, 0)) < limit:
                return None, (f"Failed, but age {human_duration(age)} is less than "
                              f"{seconds_text('minPodLifetimeSeconds', limit)}")
        for o in pod.owners:
            if o.kind in self.excluded_kinds:
                return None, f"Failed, but owned by a {o.kind}, in excludeOwnerKinds"
        reasons, codes = self._observed(pod)
        if self.reasons:
            reasons = [r for r in reasons if r in self.reasons]
            if not reasons:
                return None, f"Failed, but not for one of reasons {', '.join(args.reasons)}"
        if self.exit_codes:
            codes = [c for c in codes if c in self.exit_codes]
            if not codes:
                listed = ", ".join(map(str, args.exit_codes))
                return None, f"Failed, but no container exited with one of exitCodes {listed}"
        parts = []
        if reasons:
            parts.append(f"reason{'s' if len(reasons) > 1 else ''} {', '.join(reasons)}")
        if codes:
            parts.append(f"exit code{'s' if len(codes) > 1 else ''} {', '.join(map(str, codes))}")
        if age is not None:
            parts.append(f"age {human_duration(age)}")
        return "failed" + (" with " + ", ".join(parts) if parts else ""), None
