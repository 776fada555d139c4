"""`deschedule`: which plugins run by default and which args our defaults give them."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_desched.cli.plugin_flags import PluginFlags, build_policy, default_plugins
from kubectl_desched.errors import UsageError
from kubectl_desched.plugins import in_tree_registry
from kubectl_desched.plugins.upstream.podlifetime import PodLifeTime

SIX = ["PodLifeTime", "RemoveFailedPods", "RemovePodsHavingTooManyRestarts", "RemovePodsViolatingInterPodAntiAffinity",
       "RemovePodsViolatingNodeAffinity", "RemovePodsViolatingNodeTaints"]


def _policy(plugins: tuple[str, ...] = (), plugin_args: tuple[str, ...] = (), **values: Any) -> Any:
    """The policy `deschedule [--plugin P] [--args A] [--flag-name VALUE]...` builds."""
    registry = in_tree_registry()
    flags = PluginFlags(plugins=plugins, plugin_args=plugin_args,
                        values={f"--{k.replace('_', '-')}": v for k, v in values.items()})
    return build_policy(registry, flags, "deschedule", default_plugins(registry, "deschedule"))


def _args(policy: Any, name: str) -> Any:
    return next(u.args for u in policy.profiles[0].deschedule if u.spec.name == name)


def test_all_six_deschedule_plugins_run_by_default() -> None:
    policy = _policy()
    assert [u.spec.name for u in policy.profiles[0].deschedule] == SIX
    assert policy.profiles[0].balance == []
    assert _args(policy, "RemovePodsHavingTooManyRestarts").pod_restart_threshold == 100
    assert _args(policy, "RemovePodsViolatingNodeAffinity").node_affinity_type == [
        "requiredDuringSchedulingIgnoredDuringExecution"]
    lifetime = _args(policy, "PodLifeTime")
    assert lifetime.max_pod_life_time_seconds == PodLifeTime.cli.args({}, {})["maxPodLifeTimeSeconds"] == 86400
    assert lifetime.states == ["Pending"]


def test_max_pod_lifetime_replaces_the_default_criteria() -> None:
    lifetime = _args(_policy(max_pod_lifetime="168h"), "PodLifeTime")
    assert lifetime.max_pod_life_time_seconds == 168 * 3600 and not lifetime.states


def test_args_with_a_criterion_replace_our_criteria() -> None:
    lifetime = _args(_policy(plugin_args=('PodLifeTime={"states": ["CrashLoopBackOff"]}',)), "PodLifeTime")
    assert lifetime.states == ["CrashLoopBackOff"] and lifetime.max_pod_life_time_seconds is None


def test_restart_threshold_flag_and_its_error() -> None:
    assert _args(_policy(pod_restart_threshold=5), "RemovePodsHavingTooManyRestarts").pod_restart_threshold == 5
    with pytest.raises(UsageError) as err:
        _policy(pod_restart_threshold=0)
    assert str(err.value).startswith("--pod-restart-threshold: podRestartThreshold: must be at least 1")


def test_named_plugins_only() -> None:
    policy = _policy(plugins=("RemoveFailedPods",))
    assert [u.spec.name for u in policy.profiles[0].deschedule] == ["RemoveFailedPods"]
    with pytest.raises(UsageError):
        _policy(plugins=("NoSuchPlugin",))
