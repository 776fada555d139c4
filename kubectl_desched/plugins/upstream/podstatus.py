"""Helpers the pod-status plugins (PodLifeTime, RemoveFailedPods, RemovePodsHavingTooManyRestarts) share: the
args' namespaces/labelSelector scope, the per-pod check order, ages, container statuses and the eviction loop."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

from kubectl_desched.errors import ConfigError
from kubectl_desched.framework import EvictOptions, Plugin
from kubectl_desched.framework.args import LabelSelectorArg, Namespaces
from kubectl_desched.model.durations import parse_time
from kubectl_desched.model.label_selectors import Matcher
from kubectl_desched.model.objects import ContainerStatus, Pod

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

Check = tuple[str | None, str | None]  # a plugin rule's answer for one pod: (why picked, why not picked)


def seconds_since(now: datetime, text: str | None) -> float | None:
    """Seconds from the timestamp to `now` (negative when it lies in the future); None when unknown."""
    t = parse_time(text)
    return None if t is None else (now - t).total_seconds()


def human_duration(seconds: float) -> str:
    """A short age in at most two units, like kubectl's AGE column: 45s, 10m5s, 26h, 3d4h."""
    s = max(int(seconds), 0)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        big, small, units = s // 60, s % 60, ("m", "s")
    elif s < 48 * 3600:
        big, small, units = s // 3600, s % 3600 // 60, ("h", "m")
    else:
        big, small, units = s // 86400, s % 86400 // 3600, ("d", "h")
    return f"{big}{units[0]}{small}{units[1]}" if small else f"{big}{units[0]}"


def seconds_text(key: str, seconds: int) -> str:
    """`maxPodLifeTimeSeconds 86400 (24h)`: the arg as written and as a duration."""
    return f"{key} {seconds} ({human_duration(seconds)})"


class ArgsScope:
    """A plugin's own `namespaces` and `labelSelector` args, applied before the evictor's filter (upstream's
    pod list options)."""

    def __init__(self, namespaces: Namespaces | None, label_selector: LabelSelectorArg | None) -> None:
        self.namespaces = namespaces
        self.match: Matcher | None = label_selector.matcher() if label_selector is not None else None

    def why_out(self, pod: Pod) -> str | None:
        ns = self.namespaces
        if ns is not None and not ns.allows(pod.namespace):
            where = "not in namespaces.include" if ns.include else "in namespaces.exclude"
            return f"namespace {pod.namespace} is {where}"
        if self.match is not None and not self.match(pod.labels):
            return "labels do not match labelSelector"
        return None


def by_name(pod: Pod) -> tuple[str, str]:
    return pod.namespace, pod.name


def screen(plugin: Plugin, scope: ArgsScope, pod: Pod, check: Callable[[Pod], Check]) -> str | None:
    """Upstream's order for one pod: the args' namespaces and labelSelector, the evictor's filter, the plugin's
    rule (`check(pod)` returns (reason, why not)), then the evictor's pre-eviction filter. Returns the reason
    when the pod is picked; leaves a note for explain when the plugin's rule or scope is why it is not."""
    handle, evictor = plugin.handle, plugin.handle.evictor
    out = scope.why_out(pod)
    if out is None and not evictor.filter(pod):
        return None  # explain shows the protection itself
    reason, why_not = check(pod)
    if out is not None:
        if reason is not None:  # only worth saying when the rule alone would have picked it
            handle.note(pod, f"not picked: {out}")
        return None
    if reason is None:
        if why_not:
            handle.note(pod, f"not picked: {why_not}")
        return None
    if not evictor.pre_eviction_filter(pod):
        return None
    return reason


def evict_in_order(plugin: Plugin, picked: Sequence[tuple[Pod, str]]) -> bool:
    """Evict the picked pods in order. A node whose eviction limit is reached is skipped from then on; the
    total limit ends the run (returns False). Pods not tried are noted for explain."""
    handle, evictor = plugin.handle, plugin.handle.evictor
    full: set[str] = set()
    for i, (pod, reason) in enumerate(picked):
        if pod.node_name in full:
            handle.note(pod, f"selected ({reason}) but not tried: the eviction limit of node {pod.node_name} "
                             "was reached")
            continue
        got = evictor.evict(pod, EvictOptions(plugin.name, reason))
        if got:
            continue
        if got.total_reached:
            for rest, why in picked[i + 1:]:
                handle.note(rest, f"selected ({why}) but not tried: the total eviction limit was reached")
            handle.info("stopped: the total eviction limit was reached")
            return False
        if got.node_reached:
            full.add(pod.node_name)
    return True


def containers(pod: Pod, init: bool) -> Iterable[ContainerStatus]:
    """Regular container statuses, plus init containers' when asked for (ephemeral ones are kept apart)."""
    for cs in pod.statuses:
        if init or not cs.init:
            yield cs


def container_label(cs: ContainerStatus, ephemeral: bool = False) -> str:
    kind = "init container" if cs.init else "ephemeral container" if ephemeral else "container"
    return f"{kind} {cs.name}" if cs.name else kind


def validate_seconds(value: int | None, path: str) -> None:
    if value is not None and value < 0:
        raise ConfigError(path, f"must not be negative, not {value}")


def validate_exit_codes(codes: list[int], path: str) -> None:
    for i, code in enumerate(codes):
        if not INT32_MIN <= code <= INT32_MAX:
            raise ConfigError(f"{path}[{i}]", f"{code} is not a 32-bit exit code")
