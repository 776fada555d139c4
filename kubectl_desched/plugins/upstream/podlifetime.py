"""PodLifeTime: evict pods by age (from creationTimestamp), by state (phase, pod reason, container waiting or
terminated reason), by status condition, by container exit code and by owner kind. Every configured criterion
must hold; within one criterion any listed value will do. Picked pods go oldest first, as upstream sorts them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubectl_desched.errors import ConfigError
from kubectl_desched.framework import DeschedulePlugin, Handle, PluginArgs
from kubectl_desched.framework.args import IncludeExclude, LabelSelectorArg, Namespaces
from kubectl_desched.framework.flags import CliSurface, Flag, Seconds
from kubectl_desched.model.durations import parse_time
from kubectl_desched.model.objects import Node, Pod, PodCondition
from kubectl_desched.plugins.upstream.podstatus import (
    ArgsScope,
    Check,
    by_name,
    container_label,
    containers,
    evict_in_order,
    human_duration,
    screen,
    seconds_since,
    seconds_text,
    validate_exit_codes,
    validate_seconds,
)

# --- PodLifeTime ---------------------------------------------------------------------------------------------------

POD_PHASES = ("Running", "Pending", "Succeeded", "Failed", "Unknown")
POD_REASONS = ("NodeAffinity", "NodeLost", "Shutdown", "UnexpectedAdmissionError")
WAITING_REASONS = ("PodInitializing", "ContainerCreating", "ImagePullBackOff", "CrashLoopBackOff",
                   "CreateContainerConfigError", "ErrImagePull", "CreateContainerError", "InvalidImageName")
TERMINATED_REASONS = ("OOMKilled", "Error", "Completed", "DeadlineExceeded", "Evicted", "ContainerCannotRun",
                      "StartError")
ALLOWED_STATES = frozenset(POD_PHASES + POD_REASONS + WAITING_REASONS + TERMINATED_REASONS)


class OwnerKinds(IncludeExclude):
    """PodLifeTime's `ownerKinds` arg."""


@dataclass
class PodConditionFilter:
    """Matches one status.conditions entry: every field that is set must hold."""

    type: str = ""
    status: str = ""
    reason: str = ""
    min_time_since_last_transition_seconds: int | None = None

    def is_empty(self) -> bool:
        return not (self.type or self.status or self.reason) and self.min_time_since_last_transition_seconds is None


@dataclass
class PodLifeTimeArgs(PluginArgs):
    namespaces: Namespaces | None = None
    label_selector: LabelSelectorArg | None = None
    owner_kinds: OwnerKinds | None = None
    max_pod_life_time_seconds: int | None = None
    states: list[str] = field(default_factory=list)
    conditions: list[PodConditionFilter] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)
    including_init_containers: bool = False
    including_ephemeral_containers: bool = False

    def validate(self, path: str) -> None:
        p = f"{path}." if path else ""
        validate_seconds(self.max_pod_life_time_seconds, f"{p}maxPodLifeTimeSeconds")
        for i, s in enumerate(self.states):
            if s not in ALLOWED_STATES:
                raise ConfigError(f"{p}states[{i}]",
                                  f"invalid state {s!r}; must be one of {', '.join(sorted(ALLOWED_STATES))}")
        for i, c in enumerate(self.conditions):
            if c.is_empty():
                raise ConfigError(f"{p}conditions[{i}]", "at least one of type, status, reason or "
                                                         "minTimeSinceLastTransitionSeconds must be set")
            validate_seconds(c.min_time_since_last_transition_seconds,
                             f"{p}conditions[{i}].minTimeSinceLastTransitionSeconds")
        validate_exit_codes(self.exit_codes, f"{p}exitCodes")
        if (self.max_pod_life_time_seconds is None and not self.states and not self.conditions
                and not self.exit_codes):
            raise ConfigError(path, "at least one of maxPodLifeTimeSeconds, states, conditions or exitCodes "
                                    "must be set")


class PodLifeTime(DeschedulePlugin):
    """Evicts pods older than maxPodLifeTimeSeconds and/or in the given states, conditions or exit codes."""

    name = "PodLifeTime"
    args_type = PodLifeTimeArgs
    # Upstream requires a criterion; from flags, a conservative one. Criteria combine, so ours only stand alone.
    cli = CliSurface(
        flags=(Flag("--max-pod-lifetime", "maxPodLifeTimeSeconds", "evict pods older than this, e.g. 168h",
                    Seconds(), default_help="Pending pods older than 24h"),),
        defaults={"maxPodLifeTimeSeconds": 86400, "states": ["Pending"]},
        replaced_by=frozenset({"maxPodLifeTimeSeconds", "states", "conditions", "exitCodes"}),
        by_default=True, explain=True)

    def __init__(self, args: PodLifeTimeArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.scope = ArgsScope(args.namespaces, args.label_selector)
        self.states = frozenset(args.states)
        self.exit_codes = frozenset(args.exit_codes)

    @classmethod
    def reads_one_node(cls, args: object) -> bool:
        return True  # each pod is judged on its own node

    def deschedule(self, nodes: list[Node]) -> None:
        state = self.handle.state
        picked: list[tuple[Pod, str]] = []
        for node in nodes:
            for pod in sorted(state.pods_on_node(node.name), key=by_name):
                reason = screen(self, self.scope, pod, self._check)
                if reason is not None:
                    picked.append((pod, reason))
        # Oldest first, over all nodes, so limits and budgets spare the younger pods. A pod without a readable
        # creationTimestamp sorts first, as upstream's zero time does.
        created = {id(pod): parse_time(pod.created) for pod, _ in picked}

        def oldest_first(item: tuple[Pod, str]) -> tuple[Any, ...]:
            t = created[id(item[0])]
            return (t is not None, t or 0, *by_name(item[0]))

        picked.sort(key=oldest_first)
        evict_in_order(self, picked)

    def _check(self, pod: Pod) -> Check:
        """Each configured criterion in upstream's order: age, states, ownerKinds, conditions, exitCodes."""
        why: list[str] = []
        for criterion in (self._age, self._state, self._owner, self._condition, self._exit_code):
            matched, text = criterion(pod)
            if not matched:
                return None, text
            if text:
                why.append(text)
        return "; ".join(why), None

    def _age(self, pod: Pod) -> tuple[bool, str]:
        limit = self.args.max_pod_life_time_seconds
        if limit is None:
            return True, ""
        age = seconds_since(self.handle.state.now, pod.created)
        if age is None:
            return False, "no creationTimestamp, its age is unknown"
        if age < 0:
            return False, "creationTimestamp is in the future"
        if int(age) > limit:
            return True, f"age {human_duration(age)}, longer than {seconds_text('maxPodLifeTimeSeconds', limit)}"
        return False, f"age {human_duration(age)}, not longer than {seconds_text('maxPodLifeTimeSeconds', limit)}"

    def _state(self, pod: Pod) -> tuple[bool, str]:
        states = self.states
        if not states:
            return True, ""
        if pod.phase in states:
            return True, f"phase {pod.phase}"
        if pod.reason in states:
            return True, f"pod status reason {pod.reason}"
        args = self.args
        groups = [(containers(pod, args.including_init_containers), False)]
        if args.including_ephemeral_containers:
            groups.append((pod.ephemeral_statuses, True))
        for statuses, ephemeral in groups:
            for cs in statuses:
                if cs.waiting_reason in states:
                    return True, f"{container_label(cs, ephemeral)} waiting in {cs.waiting_reason}"
                if cs.terminated_reason in states:
                    return True, f"{container_label(cs, ephemeral)} terminated with {cs.terminated_reason}"
        return False, f"not in states {', '.join(args.states)} (phase {pod.phase})"

    def _owner(self, pod: Pod) -> tuple[bool, str]:
        kinds = self.args.owner_kinds
        if kinds is None:
            return True, ""
        if kinds.include:
            for o in pod.owners:
                if o.kind in kinds.include:
                    return True, f"owned by a {o.kind}"
            return False, f"no owner of a kind in ownerKinds.include ({', '.join(kinds.include)})"
        for o in pod.owners:
            if o.kind in kinds.exclude:
                return False, f"owned by a {o.kind}, in ownerKinds.exclude"
        return True, ""

    def _condition(self, pod: Pod) -> tuple[bool, str]:
        filters = self.args.conditions
        if not filters:
            return True, ""
        now = self.handle.state.now
        for f in filters:
            for c in pod.conditions:
                if not _condition_fields_match(c, f):
                    continue
                text = f"condition {c.type}={c.status}" + (f" ({c.reason})" if c.reason else "")
                need = f.min_time_since_last_transition_seconds
                if need is not None:
                    idle = seconds_since(now, c.last_transition)
                    if idle is None or idle < 0 or int(idle) < need:
                        continue
                    least = seconds_text("minTimeSinceLastTransitionSeconds", need)
                    text += f" for {human_duration(idle)}, at least {least}"
                return True, text
        return False, "no status condition matches conditions"

    def _exit_code(self, pod: Pod) -> tuple[bool, str]:
        codes = self.exit_codes
        if not codes:
            return True, ""
        for cs in containers(pod, self.args.including_init_containers):
            if cs.exit_code is not None and cs.exit_code in codes:
                return True, f"{container_label(cs)} exited with code {cs.exit_code}"
        listed = ", ".join(map(str, self.args.exit_codes))
        return False, f"no container terminated with an exit code in exitCodes ({listed})"


def _condition_fields_match(c: PodCondition, f: PodConditionFilter) -> bool:
    return ((not f.type or c.type == f.type) and (not f.status or c.status == f.status)
            and (not f.reason or c.reason == f.reason))
