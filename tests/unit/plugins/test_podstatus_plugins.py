"""PodLifeTime, RemoveFailedPods and RemovePodsHavingTooManyRestarts through the real runner
(policy_from_plugins -> decode_policy -> run), with the behaviours of upstream's test tables re-told in our own
fixtures, the reasons and notes explain shows, and args validation with field paths."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubectl_desched.errors import ConfigError
from kubectl_desched.framework import PluginSpec, Registry
from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.framework.policy_decoder import decode_policy, policy_from_plugins
from kubectl_desched.framework.runner import Scope, run
from kubectl_desched.model.objects import Pod, pod_from_json
from kubectl_desched.model.state import ClusterState
from kubectl_desched.plugins import in_tree_registry
from kubectl_desched.plugins.upstream.podlifetime import PodLifeTime
from kubectl_desched.plugins.upstream.podstatus import human_duration
from kubectl_desched.plugins.upstream.removefailedpods import RemoveFailedPods
from kubectl_desched.plugins.upstream.removepodshavingtoomanyrestarts import RemovePodsHavingTooManyRestarts
from kubectl_desched.ui.explain import Verdicts
from tests import builders as b
from tests.builders import as_upstream

PLT, RFP, RESTARTS = "PodLifeTime", "RemoveFailedPods", "RemovePodsHavingTooManyRestarts"
NOW = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
ARGS_PATH = "flags: profiles[0].pluginConfig[1].args"


def ago(seconds: float) -> str:
    return (NOW - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


HOUR, DAY = 3600, 86400
OLD = ago(30 * DAY)
NEW = ago(60)


def registry() -> Registry:
    reg = in_tree_registry()
    for plugin in (PodLifeTime, RemoveFailedPods, RemovePodsHavingTooManyRestarts):
        if plugin.name not in reg:
            reg.register(PluginSpec.of(plugin))
    return reg


def _state(objs: list[dict[str, Any]]) -> ClusterState:
    return b.state(objs, now=NOW, spare_node=True)


def plan_for(objs: list[dict[str, Any]], plugin: str, args: dict[str, Any], *,
             evictor_args: dict[str, Any] | None = None, limits: dict[str, int] | None = None,
             scope: Scope | None = None) -> EvictionPlan:
    return b.plan(_state(objs), [(plugin, "deschedule", args)], evictor_args=evictor_args, limits=limits, scope=scope,
                  registry=registry())


def evicted(plan: EvictionPlan) -> list[str]:
    return [c.pod.name for c in plan.candidates]


def find(plan: EvictionPlan, name: str, namespace: str = "default") -> Pod:
    p = plan.state.find_pod(namespace, name)
    assert p is not None
    return p


def verdict(plan: EvictionPlan, name: str, namespace: str = "default") -> tuple[str, str]:
    return Verdicts(plan).of(find(plan, name, namespace))


def reason(plan: EvictionPlan, name: str) -> str:
    (c,) = [c for c in plan.candidates if c.pod.name == name]
    return c.reason


def config_error(plugin: str, args: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        plan_for([b.node("n1")], plugin, args)
    return str(info.value)


def pod(name: str, node: str = "n1", **kw: Any) -> dict[str, Any]:
    """A ReplicaSet pod created (and started) 30 days before NOW unless `started` says otherwise."""
    kw.setdefault("started", OLD)
    return b.pod(name, node, **kw)


def status(obj: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return b.with_status(obj, **kw)


def cs(**kw: Any) -> dict[str, Any]:
    return b.container_status(**kw)


def test_model_keeps_what_these_plugins_read() -> None:
    raw = status(pod("p"), conditions=[b.condition("Ready", "False", "PodCompleted", ago(HOUR)), b.condition("X")],
                 ephemeral=[cs(name="debug", terminated="OOMKilled", exit_code=137)],
                 containers=[{"name": "app", "restartCount": 2, "state": {"terminated": {}}}, cs(name="up")])
    p = pod_from_json(raw)
    c = p.conditions[0]
    assert (c.type, c.status, c.reason, c.last_transition) == ("Ready", "False", "PodCompleted", ago(HOUR))
    assert (p.conditions[0].type, p.conditions[1].last_transition) == ("Ready", "")
    assert [(c.name, c.terminated_reason, c.exit_code, c.init) for c in p.ephemeral_statuses] == [
        ("debug", "OOMKilled", 137, False)]
    assert [(c.name, c.exit_code) for c in p.statuses] == [("app", 0), ("up", None)]


def test_human_duration() -> None:
    cases = {0: "0s", 59: "59s", 605: "10m5s", 600: "10m", 7320: "2h2m", DAY: "24h", 26 * HOUR: "26h",
             2 * DAY: "2d", 3 * DAY + 4 * HOUR + 59: "3d4h", -5: "0s"}
    assert {s: human_duration(s) for s in cases} == cases


# === PodLifeTime ===================================================================================================

AGE_600 = {"maxPodLifeTimeSeconds": 600}


def test_lifetime_evicts_only_pods_older_than_the_limit() -> None:
    plan = plan_for([b.node("n1"), pod("fresh", started=NEW), pod("stale")], PLT, AGE_600)
    assert evicted(plan) == ["stale"]
    assert reason(plan, "stale") == "age 30d, longer than maxPodLifeTimeSeconds 600 (10m)"
    assert verdict(plan, "fresh") == ("keep", "PodLifeTime: not picked: age 1m, not longer than "
                                              "maxPodLifeTimeSeconds 600 (10m)")
    assert plan.candidates[0].plugin == PLT


@pytest.mark.parametrize(("age", "picked"), [(595, False), (600, False), (600.9, False), (601, True), (605, True)])
def test_lifetime_age_must_be_strictly_longer_in_whole_seconds(age: float, picked: bool) -> None:
    objs = [b.node("n1"), pod("p", started=(NOW - timedelta(seconds=age)).isoformat())]
    assert evicted(plan_for(objs, PLT, AGE_600)) == (["p"] if picked else [])


def test_lifetime_reason_names_the_day_limit() -> None:
    plan = plan_for([b.node("n1"), pod("p", started=ago(26 * HOUR))], PLT, {"maxPodLifeTimeSeconds": DAY})
    assert reason(plan, "p") == "age 26h, longer than maxPodLifeTimeSeconds 86400 (24h)"


def test_lifetime_counts_from_creation_not_start() -> None:
    p = status(pod("p", started=ago(60)), created=ago(2 * HOUR))
    assert evicted(plan_for([b.node("n1"), p], PLT, AGE_600)) == ["p"]


def test_lifetime_skips_pods_whose_age_is_unknown_or_in_the_future() -> None:
    missing = pod("missing")
    del missing["metadata"]["creationTimestamp"]
    future = status(pod("future"), created=ago(-HOUR))
    plan = plan_for([b.node("n1"), missing, future], PLT, AGE_600)
    assert evicted(plan) == []
    assert verdict(plan, "missing") == ("keep", "PodLifeTime: not picked: no creationTimestamp, its age is unknown")
    assert verdict(plan, "future") == ("keep", "PodLifeTime: not picked: creationTimestamp is in the future")


def test_lifetime_terminating_pods_are_protected() -> None:
    objs = [b.node("n1"), status(pod("p14"), deleting=True), status(pod("p15"), deleting=True)]
    plan = plan_for(objs, PLT, AGE_600)
    assert evicted(plan) == []
    assert verdict(plan, "p14") == ("keep", "terminating: already being deleted "
                                            "(still counted on its node until it is gone)")


def test_lifetime_default_evictor_still_protects() -> None:
    objs = [b.node("n1"), pod("ds", owner="DaemonSet"), pod("bare", owner=None), pod("rs")]
    plan = plan_for(objs, PLT, AGE_600)
    assert evicted(plan) == ["rs"]
    assert verdict(plan, "ds") == ("keep", "protected: DaemonSet pod")
    assert verdict(plan, "bare") == ("keep", "protected: bare pod (no owner)")


@pytest.mark.parametrize(("evictor_args", "expected"), [({"ignorePvcPods": True}, []), ({}, ["p11"])])
def test_lifetime_pvc_pods_follow_the_evictor(evictor_args: dict[str, Any], expected: list[str]) -> None:
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "foo"}}]
    plan = plan_for([b.node("n1"), pod("p11", volumes=volumes)], PLT, AGE_600, evictor_args=evictor_args)
    assert evicted(plan) == expected


def test_lifetime_label_selector() -> None:
    objs = [b.node("n1"), pod("p12", labels={"foo": "bar"}), pod("p13", labels={"foo": "bar1"})]
    plan = plan_for(objs, PLT, {**AGE_600, "labelSelector": {"matchLabels": {"foo": "bar"}}})
    assert evicted(plan) == ["p12"]
    assert verdict(plan, "p13") == ("keep", "PodLifeTime: not picked: labels do not match labelSelector")


def test_lifetime_empty_label_selector_matches_everything() -> None:
    plan = plan_for([b.node("n1"), pod("a"), pod("b")], PLT, {**AGE_600, "labelSelector": {}})
    assert evicted(plan) == ["a", "b"]


@pytest.mark.parametrize(("namespaces", "expected", "note"), [
    ({"include": ["apps"]}, ["a"], "namespace kube-system is not in namespaces.include"),
    ({"exclude": ["kube-system"]}, ["a"], "namespace kube-system is in namespaces.exclude"),
])
def test_lifetime_namespaces(namespaces: dict[str, list[str]], expected: list[str], note: str) -> None:
    objs = [b.node("n1"), pod("a", namespace="apps"), pod("k", namespace="kube-system")]
    plan = plan_for(objs, PLT, {**AGE_600, "namespaces": namespaces})
    assert evicted(plan) == expected
    assert verdict(plan, "k", "kube-system") == ("keep", f"PodLifeTime: not picked: {note}")


def test_lifetime_out_of_scope_pods_that_would_not_match_get_no_note() -> None:
    plan = plan_for([b.node("n1"), pod("young", namespace="x", started=NEW)], PLT,
                    {**AGE_600, "namespaces": {"include": ["apps"]}})
    assert verdict(plan, "young", "x") == ("keep", "no enabled plugin selects it")


def _old_and_new() -> list[dict[str, Any]]:
    return [b.node("n1"), pod("p1", started=NEW), pod("p2"), pod("p9", phase="Pending")]


@pytest.mark.parametrize(("limits", "expected"), [
    ({}, ["p2", "p9"]),
    ({"maxNoOfPodsToEvictPerNamespace": 1}, ["p2"]),
    ({"maxNoOfPodsToEvictPerNamespace": 2, "maxNoOfPodsToEvictTotal": 1}, ["p2"]),
    ({"maxNoOfPodsToEvictPerNode": 1}, ["p2"]),
])
def test_lifetime_limits_spare_the_younger_pods(limits: dict[str, int], expected: list[str]) -> None:
    objs = _old_and_new()
    status(objs[3], created=ago(DAY))  # p9 is younger than p2 but still old enough
    assert evicted(plan_for(objs, PLT, AGE_600, limits=limits)) == expected


def test_lifetime_sorts_oldest_first_over_all_nodes() -> None:
    objs = [b.node("n1"), b.node("n2"),
            pod("b", "n1", started=ago(2 * DAY)), pod("c", "n1", started=ago(5 * DAY)),
            pod("a", "n2", started=ago(3 * DAY)), pod("d", "n2", started=ago(4 * DAY))]
    plan = plan_for(objs, PLT, {"maxPodLifeTimeSeconds": DAY}, limits={"maxNoOfPodsToEvictTotal": 2})
    assert evicted(plan) == ["c", "d"]
    assert verdict(plan, "a") == ("keep", "PodLifeTime: selected (age 3d, longer than maxPodLifeTimeSeconds 86400 "
                                          "(24h)) but maxNoOfPodsToEvictTotal (2) reached")
    assert verdict(plan, "b") == ("keep", "PodLifeTime: selected (age 2d, longer than maxPodLifeTimeSeconds 86400 "
                                          "(24h)) but not tried: the total eviction limit was reached")


def test_lifetime_node_limit_skips_that_node_only() -> None:
    objs = [b.node("n1"), b.node("n2"),
            pod("b", "n1", started=ago(2 * DAY)), pod("c", "n1", started=ago(5 * DAY)),
            pod("a", "n2", started=ago(3 * DAY)), pod("d", "n1", started=ago(4 * DAY))]
    plan = plan_for(objs, PLT, {"maxPodLifeTimeSeconds": DAY}, limits={"maxNoOfPodsToEvictPerNode": 1})
    assert evicted(plan) == ["c", "a"]
    assert verdict(plan, "d")[1].endswith("but maxNoOfPodsToEvictPerNode (1) reached on n1")
    assert verdict(plan, "b")[1].endswith("but not tried: the eviction limit of node n1 was reached")


@pytest.mark.parametrize("waiting", ["ContainerCreating", "PodInitializing", "ImagePullBackOff", "CrashLoopBackOff",
                                     "CreateContainerConfigError", "ErrImagePull", "CreateContainerError",
                                     "InvalidImageName"])
def test_lifetime_states_match_container_waiting_reasons(waiting: str) -> None:
    stuck = status(pod("stuck", phase="Pending"), containers=[cs(name="app", waiting=waiting)])
    plan = plan_for([b.node("n1"), pod("p9", phase="Pending"), stuck], PLT, {**AGE_600, "states": [waiting]})
    assert evicted(plan) == ["stuck"]
    assert reason(plan, "stuck") == (f"age 30d, longer than maxPodLifeTimeSeconds 600 (10m); container app waiting "
                                     f"in {waiting}")
    assert verdict(plan, "p9") == ("keep", f"PodLifeTime: not picked: not in states {waiting} (phase Pending)")


def test_lifetime_states_other_waiting_reason_does_not_match() -> None:
    p = status(pod("p9", phase="Pending"), containers=[cs(waiting="ImagePullBackOff")])
    assert evicted(plan_for([b.node("n1"), p], PLT, {**AGE_600, "states": ["ContainerCreating"]})) == []


@pytest.mark.parametrize(("flag", "group"), [("includingInitContainers", "init"),
                                             ("includingEphemeralContainers", "ephemeral")])
@pytest.mark.parametrize("state_kw", [{"waiting": "CreateContainerError"}, {"terminated": "CreateContainerError"}])
def test_lifetime_init_and_ephemeral_states_need_their_flag(flag: str, group: str, state_kw: dict[str, str]) -> None:
    def objs() -> list[dict[str, Any]]:
        return [b.node("n1"), status(pod("p9", phase="Pending"), **{group: [cs(name="extra", **state_kw)]})]
    args = {**AGE_600, "states": ["CreateContainerError"]}
    assert evicted(plan_for(objs(), PLT, args)) == []
    plan = plan_for(objs(), PLT, {**args, flag: True})
    assert evicted(plan) == ["p9"]
    assert f"{group} container extra" in reason(plan, "p9")


def test_lifetime_ephemeral_flag_does_not_cover_init_containers() -> None:
    p = status(pod("p"), init=[cs(name="setup", terminated="OOMKilled", exit_code=137)])
    args = {"states": ["OOMKilled"], "includingEphemeralContainers": True}
    assert evicted(plan_for([b.node("n1"), p], PLT, args)) == []


@pytest.mark.parametrize("pod_reason", ["NodeLost", "NodeAffinity", "Shutdown", "UnexpectedAdmissionError"])
def test_lifetime_states_match_the_pod_status_reason(pod_reason: str) -> None:
    p = status(pod("p9", phase="Pending"), reason=pod_reason)
    plan = plan_for([b.node("n1"), p], PLT, {**AGE_600, "states": [pod_reason]})
    assert evicted(plan) == ["p9"]
    assert reason(plan, "p9").endswith(f"; pod status reason {pod_reason}")


@pytest.mark.parametrize("phase", ["Pending", "Succeeded", "Failed", "Unknown"])
def test_lifetime_states_match_the_phase(phase: str) -> None:
    objs = [b.node("n1"), pod("p9", phase=phase), pod("other", phase="Running" if phase != "Running" else "Pending")]
    plan = plan_for(objs, PLT, {**AGE_600, "states": [phase]})
    assert evicted(plan) == ["p9"]
    assert reason(plan, "p9").endswith(f"; phase {phase}")


def test_lifetime_states_match_terminated_reasons() -> None:
    objs = [b.node("n1"),
            status(pod("affinity", phase="Failed"), containers=[cs(name="app", terminated="NodeAffinity")]),
            status(pod("shutdown", phase="Failed"), reason="Shutdown")]
    plan = plan_for(objs, PLT, {"states": ["NodeAffinity", "Shutdown"]})
    assert evicted(plan) == ["affinity", "shutdown"]
    assert reason(plan, "affinity") == "container app terminated with NodeAffinity"


def test_lifetime_states_alone_need_no_age() -> None:
    objs = [b.node("n1"), status(pod("crash", started=NEW), containers=[cs(waiting="CrashLoopBackOff")])]
    assert evicted(plan_for(objs, PLT, {"states": ["CrashLoopBackOff"]})) == ["crash"]


def _completed(name: str, since: str, *, reason_: str = "PodCompleted", phase: str = "Succeeded",
               extra: list[dict] | None = None) -> dict[str, Any]:
    conds = [b.condition("Initialized", "True", reason_, since), *(extra or [])]
    return status(pod(name, phase=phase), conditions=conds)


def test_lifetime_conditions_match_reason_and_status() -> None:
    objs = [b.node("n1"), _completed("p1", ago(2 * HOUR)),
            _completed("p2", ago(2 * HOUR), reason_="OtherReason")]
    plan = plan_for(objs, PLT, {"conditions": [{"reason": "PodCompleted", "status": "True"}]})
    assert evicted(plan) == ["p1"]
    assert reason(plan, "p1") == "condition Initialized=True (PodCompleted)"
    assert verdict(plan, "p2") == ("keep", "PodLifeTime: not picked: no status condition matches conditions")


def test_lifetime_conditions_match_type_only() -> None:
    p = status(pod("p1"), conditions=[b.condition("Ready", "False", since=ago(2 * HOUR))])
    assert evicted(plan_for([b.node("n1"), p], PLT, {"conditions": [{"type": "Ready"}]})) == ["p1"]


def test_lifetime_conditions_without_a_match() -> None:
    p = status(pod("p1"), conditions=[b.condition("Ready", "True", "SomethingElse")])
    assert evicted(plan_for([b.node("n1"), p], PLT, {"conditions": [{"reason": "PodCompleted"}]})) == []


def test_lifetime_conditions_are_ored() -> None:
    objs = [b.node("n1"), _completed("p1", ago(HOUR)),
            status(pod("p2"), conditions=[b.condition("Ready", "False", "ContainersNotReady")])]
    args = {"conditions": [{"reason": "PodCompleted"}, {"type": "Ready", "status": "False"}]}
    assert evicted(plan_for(objs, PLT, args)) == ["p1", "p2"]


def test_lifetime_condition_transition_time() -> None:
    five_minutes = {"reason": "PodCompleted", "status": "True", "minTimeSinceLastTransitionSeconds": 300}
    objs = [b.node("n1"),
            _completed("stale", ago(2 * HOUR), extra=[b.condition("Ready", "False", "PodCompleted", ago(2 * HOUR))]),
            _completed("recent", ago(60)),
            pod("running")]
    plan = plan_for(objs, PLT, {"states": ["Succeeded"], "conditions": [five_minutes]})
    assert evicted(plan) == ["stale"]
    assert reason(plan, "stale") == ("phase Succeeded; condition Initialized=True (PodCompleted) for 2h, at least "
                                     "minTimeSinceLastTransitionSeconds 300 (5m)")
    assert verdict(plan, "recent") == ("keep", "PodLifeTime: not picked: no status condition matches conditions")
    assert verdict(plan, "running") == ("keep", "PodLifeTime: not picked: not in states Succeeded (phase Running)")


def test_lifetime_recent_transition_is_not_enough() -> None:
    p = status(pod("p1", phase="Succeeded"), conditions=[b.condition("Ready", "False", since=ago(60))])
    args = {"states": ["Succeeded"], "conditions": [{"minTimeSinceLastTransitionSeconds": 4 * HOUR}]}
    assert evicted(plan_for([b.node("n1"), p], PLT, args)) == []


def test_lifetime_transition_time_only_counts_for_matching_conditions() -> None:
    p = status(pod("p1"), conditions=[b.condition("Initialized", "", "PodCompleted", ago(2 * HOUR)),
                                      b.condition("Ready", "", "OtherReason", ago(60))])
    args = {"conditions": [{"reason": "PodCompleted", "minTimeSinceLastTransitionSeconds": 300}]}
    assert evicted(plan_for([b.node("n1"), p], PLT, args)) == ["p1"]
    q = status(pod("q1"), conditions=[b.condition("Initialized", "", "OtherReason", ago(2 * HOUR)),
                                      b.condition("Ready", "", "PodCompleted", ago(60))])
    assert evicted(plan_for([b.node("n1"), q], PLT, args)) == []


def test_lifetime_transition_time_needs_a_condition_with_a_time() -> None:
    objs = [b.node("n1"), pod("no-conditions"),
            status(pod("no-time"), conditions=[b.condition("Ready", "False")])]
    args = {"states": ["Running"], "conditions": [{"minTimeSinceLastTransitionSeconds": 300}]}
    assert evicted(plan_for(objs, PLT, args)) == []


@pytest.mark.parametrize(("owner_kinds", "expected"), [
    ({"exclude": ["Job"]}, ["rs"]),
    ({"include": ["Job"]}, ["job"]),
])
def test_lifetime_owner_kinds(owner_kinds: dict[str, list[str]], expected: list[str]) -> None:
    objs = [b.node("n1"), pod("job", phase="Failed", owner="Job"), pod("rs", phase="Failed")]
    plan = plan_for(objs, PLT, {"states": ["Failed"], "ownerKinds": owner_kinds})
    assert evicted(plan) == expected
    kept = "job" if expected == ["rs"] else "rs"
    note = ("owned by a Job, in ownerKinds.exclude" if kept == "job"
            else "no owner of a kind in ownerKinds.include (Job)")
    assert verdict(plan, kept) == ("keep", f"PodLifeTime: not picked: {note}")


def test_lifetime_owner_kinds_include_names_the_owner() -> None:
    plan = plan_for([b.node("n1"), pod("job", phase="Failed", owner="Job")], PLT,
                    {"states": ["Failed"], "ownerKinds": {"include": ["Job"]}})
    assert reason(plan, "job") == "phase Failed; owned by a Job"


@pytest.mark.parametrize(("codes", "expected"), [([1], ["p1"]), ([2], []), ([3, 1], ["p1"])])
def test_lifetime_exit_codes(codes: list[int], expected: list[str]) -> None:
    p = status(pod("p1", phase="Failed"), containers=[cs(name="app", exit_code=1)])
    plan = plan_for([b.node("n1"), p], PLT, {"states": ["Failed"], "exitCodes": codes})
    assert evicted(plan) == expected
    if expected:
        assert reason(plan, "p1") == "phase Failed; container app exited with code 1"
    else:
        assert verdict(plan, "p1") == ("keep", "PodLifeTime: not picked: no container terminated with an exit code "
                                               "in exitCodes (2)")


def test_lifetime_exit_codes_alone_and_init_containers() -> None:
    def objs() -> list[dict[str, Any]]:
        return [b.node("n1"), status(pod("p1"), init=[cs(name="setup", exit_code=3)])]
    assert evicted(plan_for(objs(), PLT, {"exitCodes": [3]})) == []
    plan = plan_for(objs(), PLT, {"exitCodes": [3], "includingInitContainers": True})
    assert reason(plan, "p1") == "init container setup exited with code 3"


def test_lifetime_exit_codes_ignore_waiting_containers() -> None:
    """Only the current terminated state counts; a crash-looping container's last exit is not looked at."""
    p = status(pod("p1"), containers=[cs(waiting="CrashLoopBackOff", restarts=5)])
    assert evicted(plan_for([b.node("n1"), p], PLT, {"exitCodes": [0]})) == []


def test_lifetime_completed_pods_idle_long_enough() -> None:
    args = {"states": ["Succeeded"],
            "conditions": [{"reason": "PodCompleted", "status": "True", "minTimeSinceLastTransitionSeconds": 300}]}
    objs = [b.node("n1"),
            _completed("stale-completed", ago(2 * HOUR),
                       extra=[b.condition("Ready", "False", "PodCompleted", ago(2 * HOUR))]),
            _completed("recent-completed", ago(60)), pod("running-pod")]
    assert evicted(plan_for(objs, PLT, args)) == ["stale-completed"]


def test_lifetime_failed_pods_like_remove_failed_pods() -> None:
    objs = [b.node("n1"),
            status(pod("failed-rs", phase="Failed"), containers=[cs(terminated="Error", exit_code=1)]),
            pod("failed-job", phase="Failed", owner="Job")]
    args = {"states": ["Failed"], "maxPodLifeTimeSeconds": 0, "ownerKinds": {"exclude": ["Job"]}}
    plan = plan_for(objs, PLT, args)
    assert evicted(plan) == ["failed-rs"]
    assert reason(plan, "failed-rs") == "age 30d, longer than maxPodLifeTimeSeconds 0 (0s); phase Failed"


def test_lifetime_respects_node_fit() -> None:
    objs = [b.node("n1"), b.node("full", cpu="50m"), pod("p")]
    plan = plan_for(objs, PLT, AGE_600, evictor_args={"nodeFit": True})
    assert evicted(plan) == []
    assert verdict(plan, "p") == ("keep", "preEvictionFilter: fits no other node (nodeFit)")


# === RemoveFailedPods ==============================================================================================


def failed(name: str, node: str = "n1", *, reason_: str | None = None, containers: list[dict] | None = None,
           init: list[dict] | None = None, created: str | None = None, **kw: Any) -> dict[str, Any]:
    """A Failed ReplicaSet pod created two hours before NOW (older than the default minPodLifetimeSeconds)."""
    kw.setdefault("started", ago(2 * HOUR))
    p = b.pod(name, node, phase="Failed", **kw)
    return status(p, reason=reason_, containers=containers, init=init, created=created)


def test_failed_nothing_failed_nothing_evicted() -> None:
    objs = [b.node("n1"), pod("running"),
            status(pod("ran", phase="Succeeded"), containers=[cs(terminated="Completed")])]
    plan = plan_for(objs, RFP, {})
    assert evicted(plan) == []
    assert verdict(plan, "running") == ("keep", "no enabled plugin selects it")


def test_failed_pod_is_evicted_with_a_reason_that_says_why() -> None:
    objs = [b.node("n1"), failed("p1", containers=[cs(name="app", terminated="OOMKilled", exit_code=137)])]
    plan = plan_for(objs, RFP, {})
    assert evicted(plan) == ["p1"]
    assert reason(plan, "p1") == "failed with reason OOMKilled, exit code 137, age 2h"
    assert plan.candidates[0].plugin == RFP


def test_failed_reason_without_container_details() -> None:
    plan = plan_for([b.node("n1"), failed("p1", reason_="Evicted")], RFP, {})
    assert reason(plan, "p1") == "failed with reason Evicted, age 2h"
    plan = plan_for([b.node("n1"), failed("p2")], RFP, {})
    assert reason(plan, "p2") == "failed with age 2h"


@pytest.mark.parametrize(("codes", "exit_code", "picked"), [([1], 1, True), ([2], 1, False), ([1, 2, 3], 2, True)])
def test_failed_exit_codes(codes: list[int], exit_code: int, picked: bool) -> None:
    objs = [b.node("n1"), failed("p1", containers=[cs(terminated="NodeAffinity", exit_code=exit_code)])]
    plan = plan_for(objs, RFP, {"exitCodes": codes})
    assert evicted(plan) == (["p1"] if picked else [])
    if not picked:
        assert verdict(plan, "p1") == ("keep", "RemoveFailedPods: not picked: Failed, but no container exited with "
                                               "one of exitCodes 2")


def test_failed_exit_codes_pick_among_pods() -> None:
    objs = [b.node("n1"), failed("p1", containers=[cs(exit_code=1)]), failed("p2", containers=[cs(exit_code=2)])]
    assert evicted(plan_for(objs, RFP, {"exitCodes": [1, 2, 3]})) == ["p1", "p2"]
    assert evicted(plan_for(objs, RFP, {"exitCodes": [1]})) == ["p1"]


def test_failed_exit_code_zero_counts_for_a_bare_terminated_state() -> None:
    objs = [b.node("n1"), failed("p1", containers=[{"name": "app", "restartCount": 0,
                                                    "state": {"terminated": {"reason": "Error"}}}])]
    assert evicted(plan_for(objs, RFP, {"exitCodes": [0]})) == ["p1"]


@pytest.mark.parametrize(("including_init", "codes", "picked"), [(True, [1], True), (True, [2], False),
                                                                 (False, [1], False)])
def test_failed_init_container_exit_codes(including_init: bool, codes: list[int], picked: bool) -> None:
    objs = [b.node("n1"), failed("p1", init=[cs(name="setup", exit_code=1)])]
    plan = plan_for(objs, RFP, {"exitCodes": codes, "includingInitContainers": including_init})
    assert evicted(plan) == (["p1"] if picked else [])


@pytest.mark.parametrize(("reasons", "picked"), [
    (["CreateContainerConfigError"], True),
    (["CreateContainerConfigError", "NodeAffinity"], True),
    (["NodeAffinity"], False),
])
def test_failed_reasons(reasons: list[str], picked: bool) -> None:
    objs = [b.node("n1"), failed("p1", containers=[cs(terminated="CreateContainerConfigError")])]
    plan = plan_for(objs, RFP, {"reasons": reasons})
    assert evicted(plan) == (["p1"] if picked else [])
    if picked:
        assert reason(plan, "p1") == "failed with reason CreateContainerConfigError, exit code 0, age 2h"
    else:
        assert verdict(plan, "p1") == ("keep", "RemoveFailedPods: not picked: Failed, but not for one of reasons "
                                               "NodeAffinity")


@pytest.mark.parametrize(("including_init", "picked"), [(False, False), (True, True)])
def test_failed_init_container_reasons_need_the_flag(including_init: bool, picked: bool) -> None:
    objs = [b.node("n1"), failed("p1", init=[cs(name="setup", waiting="CreateContainerConfigError")])]
    args = {"reasons": ["CreateContainerConfigError"], "includingInitContainers": including_init}
    assert evicted(plan_for(objs, RFP, args)) == (["p1"] if picked else [])


def test_failed_without_filters_any_failed_pod_goes() -> None:
    objs = [b.node("n1"), b.node("n2"),
            failed("p1", "n1", init=[cs(terminated="CreateContainerConfigError")]),
            failed("p2", "n2", init=[cs(terminated="CreateContainerConfigError")])]
    assert evicted(plan_for(objs, RFP, {"includingInitContainers": True})) == ["p1", "p2"]


def test_failed_reasons_match_the_pod_status_reason() -> None:
    objs = [b.node("n1"), failed("p1", reason_="Shutdown"), failed("p2", reason_="Shutdown"),
            failed("p3", reason_="Evicted")]
    plan = plan_for(objs, RFP, {"reasons": ["Shutdown"]})
    assert evicted(plan) == ["p1", "p2"]
    assert reason(plan, "p1") == "failed with reason Shutdown, age 2h"


def test_failed_reasons_match_waiting_reasons() -> None:
    objs = [b.node("n1"), failed("p1", containers=[cs(waiting="CreateContainerConfigError")])]
    assert evicted(plan_for(objs, RFP, {"reasons": ["CreateContainerConfigError"]})) == ["p1"]


def test_failed_reasons_and_exit_codes_must_both_match() -> None:
    objs = [b.node("n1"), failed("p1", containers=[cs(terminated="Error", exit_code=2)])]
    assert evicted(plan_for(objs, RFP, {"reasons": ["Error"], "exitCodes": [1]})) == []
    assert evicted(plan_for(objs, RFP, {"reasons": ["Error"], "exitCodes": [2]})) == ["p1"]


@pytest.mark.parametrize(("args", "picked"), [
    ({}, False),  # default minPodLifetimeSeconds 3600
    ({"minPodLifetimeSeconds": None}, False),  # null is unset: still 3600
    ({"minPodLifetimeSeconds": 600}, True),
    ({"minPodLifetimeSeconds": 0}, True),
])
def test_failed_min_pod_lifetime(args: dict[str, Any], picked: bool) -> None:
    objs = [b.node("n1"), failed("p1", started=ago(20 * 60))]
    plan = plan_for(objs, RFP, args)
    assert evicted(plan) == (["p1"] if picked else [])
    if not picked:
        assert verdict(plan, "p1") == ("keep", "RemoveFailedPods: not picked: Failed, but age 20m is less than "
                                               "minPodLifetimeSeconds 3600 (1h)")


def test_failed_min_pod_lifetime_counts_from_creation() -> None:
    """Upstream measures from metadata.creationTimestamp, not status.startTime."""
    objs = [b.node("n1"), failed("created-long-ago", started=ago(10 * 60), created=ago(2 * HOUR)),
            failed("created-recently", started=ago(10 * 60), created=ago(30 * 60))]
    assert evicted(plan_for(objs, RFP, {})) == ["created-long-ago"]


def test_failed_without_creation_time_is_kept_while_an_age_is_required() -> None:
    p = failed("p1")
    del p["metadata"]["creationTimestamp"]
    plan = plan_for([b.node("n1"), p], RFP, {})
    assert evicted(plan) == []
    assert verdict(plan, "p1") == ("keep", "RemoveFailedPods: not picked: Failed, but it has no creationTimestamp: "
                                           "its age is unknown")
    assert evicted(plan_for([b.node("n1"), p], RFP, {"minPodLifetimeSeconds": 0})) == ["p1"]


@pytest.mark.parametrize(("kinds", "picked"), [(["ReplicaSet"], False), (["DaemonSet"], True)])
def test_failed_exclude_owner_kinds(kinds: list[str], picked: bool) -> None:
    objs = [b.node("n1"), failed("p1", init=[cs(terminated="NodeAffinity")])]
    plan = plan_for(objs, RFP, {"excludeOwnerKinds": kinds, "includingInitContainers": True})
    assert evicted(plan) == (["p1"] if picked else [])
    if not picked:
        assert verdict(plan, "p1") == ("keep", "RemoveFailedPods: not picked: Failed, but owned by a ReplicaSet, in "
                                               "excludeOwnerKinds")


def test_failed_terminating_pod_is_left_alone() -> None:
    objs = [b.node("n1"), status(failed("p1", init=[cs(terminated="NodeAffinity")]), deleting=True)]
    assert evicted(plan_for(objs, RFP, {"excludeOwnerKinds": ["DaemonSet"], "includingInitContainers": True})) == []


def test_failed_default_evictor_still_protects() -> None:
    objs = [b.node("n1"), failed("ds", owner="DaemonSet", containers=[cs(terminated="Error", exit_code=1)]),
            failed("bare", owner=None), failed("local", volumes=[{"name": "tmp", "emptyDir": {}}])]
    plan = plan_for(objs, RFP, {})
    assert evicted(plan) == []
    assert verdict(plan, "ds") == ("keep", "protected: DaemonSet pod")
    assert verdict(plan, "bare") == ("keep", "protected: bare pod (no owner)")
    assert verdict(plan, "local") == ("keep", "protected: local storage (emptyDir tmp)")
    # a failed bare pod may go once the FailedBarePods protection is switched off
    plan = plan_for(objs, RFP, {}, evictor_args={"podProtections": {"defaultDisabled": ["FailedBarePods"]}})
    assert evicted(plan) == ["bare"]


@pytest.mark.parametrize("other", [b.node("n2", unschedulable=True), b.node("n2", cpu="50m")])
def test_failed_node_fit(other: dict[str, Any]) -> None:
    objs = [b.node("n1"), other, failed("p1", containers=[cs(terminated="NodeAffinity")])]
    plan = plan_for(objs, RFP, {}, evictor_args={"nodeFit": True})
    assert evicted(plan) == []
    assert verdict(plan, "p1") == ("keep", "preEvictionFilter: fits no other node (nodeFit)")


def test_failed_node_fit_with_a_single_node() -> None:
    objs = [b.node("n1"), failed("p1", reason_="Shutdown")]
    assert evicted(plan_for(objs, RFP, {}, evictor_args={"nodeFit": True})) == []


def test_failed_namespaces_and_label_selector() -> None:
    objs = [b.node("n1"), failed("a", namespace="apps", labels={"tier": "web"}),
            failed("b", namespace="apps", labels={"tier": "db"}),
            failed("c", namespace="other", labels={"tier": "web"})]
    args = {"namespaces": {"include": ["apps"]}, "labelSelector": {"matchLabels": {"tier": "web"}}}
    plan = plan_for(objs, RFP, args)
    assert evicted(plan) == ["a"]
    assert verdict(plan, "b", "apps") == ("keep", "RemoveFailedPods: not picked: labels do not match labelSelector")
    assert verdict(plan, "c", "other") == ("keep", "RemoveFailedPods: not picked: namespace other is not in "
                                                   "namespaces.include")


def test_failed_limits() -> None:
    objs = [b.node("n1"), b.node("n2"), failed("a1", "n1"), failed("a2", "n1"), failed("b1", "n2"),
            failed("b2", "n2")]
    assert evicted(plan_for(objs, RFP, {}, limits={"maxNoOfPodsToEvictPerNode": 1})) == ["a1", "b1"]
    plan = plan_for(objs, RFP, {}, limits={"maxNoOfPodsToEvictTotal": 1})
    assert evicted(plan) == ["a1"]
    assert verdict(plan, "a2") == ("keep", "RemoveFailedPods: selected (failed with age 2h) but "
                                           "maxNoOfPodsToEvictTotal (1) reached")
    assert plan.messages == [(RFP, "stopped: the total eviction limit was reached")]
    assert verdict(plan, "b1")[1].endswith("no enabled plugin selects it")  # the run stopped before node n2


def test_failed_node_limit_notes_the_rest_of_the_node() -> None:
    objs = [b.node("n1"), failed("a1"), failed("a2"), failed("a3")]
    plan = plan_for(objs, RFP, {}, limits={"maxNoOfPodsToEvictPerNode": 1})
    assert evicted(plan) == ["a1"]
    assert verdict(plan, "a2")[1] == ("RemoveFailedPods: selected (failed with age 2h) but maxNoOfPodsToEvictPerNode "
                                      "(1) reached on n1")
    assert verdict(plan, "a3")[1] == ("RemoveFailedPods: selected (failed with age 2h) but not tried: the eviction "
                                      "limit of node n1 was reached")


# === RemovePodsHavingTooManyRestarts ================================================================================

MIRROR = {"kubernetes.io/config.mirror": "mirror"}
LOCAL = [{"name": "host", "hostPath": {"path": "/x"}}, {"name": "scratch", "emptyDir": {}}]


def restarting_pods(change: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """pod-0..pod-9 on node1: pod-i has one init container with 5*i restarts and two containers with 10*i each.
    pod-6 belongs to a DaemonSet, pod-7 has local storage and pod-8 is a mirror pod: never evicted. Two 150m
    pods use up part of node4 and node5, which some cases add."""
    pods = []
    for i in range(10):
        kw: dict[str, Any] = {"owner": "DaemonSet"} if i == 6 else {"volumes": LOCAL} if i == 7 else {}
        if i == 8:
            kw["annotations"] = MIRROR
        p = status(b.pod(f"pod-{i}", "node1", **kw), init=[cs(name="init", restarts=5 * i)],
                   containers=[cs(name="a", restarts=10 * i), cs(name="b", restarts=10 * i)])
        if change:
            change(p)
        pods.append(p)
    return [*pods, b.pod("cpu-consumer-1", "node4", cpu="150m"), b.pod("cpu-consumer-2", "node5", cpu="150m")]


def restarts_args(threshold: int, including_init: bool = False, **kw: Any) -> dict[str, Any]:
    return {"podRestartThreshold": threshold, "includingInitContainers": including_init, **kw}


@pytest.mark.parametrize(("threshold", "including_init", "count"), [
    (10000, True, 0),
    (1, True, 6),
    (25, True, 6),
    (25, False, 5),
    (20, True, 6),
    (20, False, 6),
    (5 * 25 + 1, True, 1),
    (5 * 20 + 1, False, 1),
])
def test_restarts_threshold(threshold: int, including_init: bool, count: int) -> None:
    plan = plan_for([b.node("node1"), *restarting_pods()], RESTARTS, restarts_args(threshold, including_init))
    assert len(evicted(plan)) == count


def test_restarts_most_restarts_first_and_reasons() -> None:
    plan = plan_for([b.node("node1"), *restarting_pods()], RESTARTS, restarts_args(1, True))
    assert evicted(plan) == ["pod-9", "pod-5", "pod-4", "pod-3", "pod-2", "pod-1"]
    assert reason(plan, "pod-9") == "restarts 225 (init containers included) >= 1"
    assert verdict(plan, "pod-6") == ("keep", "protected: DaemonSet pod")
    assert verdict(plan, "pod-7") == ("keep", "protected: local storage (hostPath host)")
    assert verdict(plan, "pod-8")[1].startswith("protected: mirror pod")
    assert verdict(plan, "pod-0") == ("keep", "no enabled plugin selects it")  # no restarts at all


def test_restarts_reason_and_note_wording() -> None:
    objs = [b.node("n1"), status(pod("many"), containers=[cs(restarts=14)]),
            status(pod("few"), containers=[cs(restarts=3)])]
    plan = plan_for(objs, RESTARTS, restarts_args(10))
    assert evicted(plan) == ["many"]
    assert reason(plan, "many") == "restarts 14 >= 10"
    assert verdict(plan, "few") == ("keep", "RemovePodsHavingTooManyRestarts: not picked: restarts 3 < 10")


def test_restarts_ignore_init_containers_unless_asked() -> None:
    objs = [b.node("n1"), status(pod("p"), init=[cs(name="setup", restarts=12)], containers=[cs(restarts=0)])]
    assert evicted(plan_for(objs, RESTARTS, restarts_args(10))) == []
    assert evicted(plan_for(objs, RESTARTS, restarts_args(10, True))) == ["p"]


def test_restarts_ignore_ephemeral_containers() -> None:
    objs = [b.node("n1"), status(pod("p"), ephemeral=[cs(name="debug", restarts=50)])]
    assert evicted(plan_for(objs, RESTARTS, restarts_args(1, True))) == []


def test_restarts_consider_terminal_pods_too() -> None:
    objs = [b.node("n1"), status(pod("p", phase="Failed"), containers=[cs(restarts=30, terminated="Error")])]
    assert evicted(plan_for(objs, RESTARTS, restarts_args(10))) == ["p"]


@pytest.mark.parametrize(("limit", "expected"), [
    ("maxNoOfPodsToEvictPerNode", ["pod-9", "pod-5", "pod-4"]),
    ("maxNoOfPodsToEvictPerNamespace", ["pod-9", "pod-5", "pod-4"]),
])
def test_restarts_limits(limit: str, expected: list[str]) -> None:
    plan = plan_for([b.node("node1"), *restarting_pods()], RESTARTS, restarts_args(1, True), limits={limit: 3})
    assert evicted(plan) == expected


@pytest.mark.parametrize(("other", "count"), [
    (b.node("node2", taints=[{"key": "hardware", "value": "gpu", "effect": "NoSchedule"}]), 0),
    (b.node("node3", unschedulable=True), 0),
    (b.node("node4", cpu="200m"), 0),  # 150m of its 200m are in use: no room for a 100m pod
    (b.node("node5"), 3),
])
def test_restarts_node_fit(other: dict[str, Any], count: int) -> None:
    plan = plan_for([b.node("node1"), other, *restarting_pods()], RESTARTS, restarts_args(1, True),
                    evictor_args={"nodeFit": True}, limits={"maxNoOfPodsToEvictPerNode": 3})
    assert len(evicted(plan)) == count


def _crash_first_container(p: dict[str, Any]) -> None:
    p["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": "CrashLoopBackOff"}}


def test_restarts_state_crash_loop_back_off() -> None:
    nodes = [b.node("node1"), b.node("node5")]
    args = restarts_args(1, states=["CrashLoopBackOff"])
    kw: dict[str, Any] = {"evictor_args": {"nodeFit": True}, "limits": {"maxNoOfPodsToEvictPerNode": 3}}
    plan = plan_for([*nodes, *restarting_pods(_crash_first_container)], RESTARTS, args, **kw)
    assert evicted(plan) == ["pod-9", "pod-5", "pod-4"]
    assert reason(plan, "pod-9") == "restarts 180 >= 1; container a waiting in CrashLoopBackOff"
    plan = plan_for([*nodes, *restarting_pods()], RESTARTS, args, **kw)
    assert evicted(plan) == []
    assert verdict(plan, "pod-9") == ("keep", "RemovePodsHavingTooManyRestarts: not picked: restarts 180 >= 1, but "
                                              "not in states CrashLoopBackOff (phase Running)")


@pytest.mark.parametrize(("phase", "count"), [("Running", 3), ("Pending", 0)])
def test_restarts_state_running_is_the_phase(phase: str, count: int) -> None:
    def set_phase(p: dict[str, Any]) -> None:
        p["status"]["phase"] = phase
    plan = plan_for([b.node("node1"), *restarting_pods(set_phase)], RESTARTS, restarts_args(1, states=["Running"]),
                    limits={"maxNoOfPodsToEvictPerNode": 3})
    assert len(evicted(plan)) == count


@pytest.mark.parametrize(("including_init", "count"), [(True, 3), (False, 0)])
def test_restarts_state_of_init_containers(including_init: bool, count: int) -> None:
    def crash_init(p: dict[str, Any]) -> None:
        p["status"]["initContainerStatuses"] = [cs(name="init", waiting="CrashLoopBackOff")]
    plan = plan_for([b.node("node1"), *restarting_pods(crash_init)], RESTARTS,
                    restarts_args(1, including_init, states=["CrashLoopBackOff"]),
                    limits={"maxNoOfPodsToEvictPerNode": 3})
    assert len(evicted(plan)) == count


def test_restarts_states_ignore_terminated_and_pod_reasons() -> None:
    """Upstream compares the phase and container waiting reasons only."""
    objs = [b.node("n1"),
            status(pod("p", phase="Pending"), reason="CrashLoopBackOff",
                   containers=[cs(restarts=9, terminated="CrashLoopBackOff")])]
    assert evicted(plan_for(objs, RESTARTS, restarts_args(1, states=["CrashLoopBackOff"]))) == []


def test_restarts_namespaces_and_label_selector() -> None:
    def crashing(name: str, ns: str, labels: dict[str, str]) -> dict[str, Any]:
        return status(pod(name, namespace=ns, labels=labels), containers=[cs(restarts=20)])
    objs = [b.node("n1"), crashing("a", "apps", {"tier": "web"}), crashing("b", "apps", {"tier": "db"}),
            crashing("c", "kube-system", {"tier": "web"})]
    args = restarts_args(5, namespaces={"exclude": ["kube-system"]},
                         labelSelector={"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]})
    plan = plan_for(objs, RESTARTS, args)
    assert evicted(plan) == ["a"]
    assert verdict(plan, "c", "kube-system") == ("keep", "RemovePodsHavingTooManyRestarts: not picked: namespace "
                                                         "kube-system is in namespaces.exclude")


def test_restarts_total_limit_stops_every_node() -> None:
    objs = [b.node("n1"), b.node("n2"), status(pod("a", "n1"), containers=[cs(restarts=5)]),
            status(pod("b", "n1"), containers=[cs(restarts=7)]), status(pod("c", "n2"), containers=[cs(restarts=9)])]
    plan = plan_for(objs, RESTARTS, restarts_args(1), limits={"maxNoOfPodsToEvictTotal": 1})
    assert evicted(plan) == ["b"]
    assert verdict(plan, "a")[1] == ("RemovePodsHavingTooManyRestarts: selected (restarts 5 >= 1) but "
                                     "maxNoOfPodsToEvictTotal (1) reached")


# === args validation ===============================================================================================


@pytest.mark.parametrize(("plugin", "args", "message"), [
    (PLT, {}, f"{ARGS_PATH}: at least one of maxPodLifeTimeSeconds, states, conditions or exitCodes must be set"),
    (PLT, {"states": ["Running"], "namespaces": {"include": ["a"], "exclude": ["b"]}},
     f"{ARGS_PATH}.namespaces: only one of include and exclude can be set"),
    (PLT, {"states": ["Running"], "ownerKinds": {"include": ["Job"], "exclude": ["ReplicaSet"]}},
     f"{ARGS_PATH}.ownerKinds: only one of include and exclude can be set"),
    (PLT, {"states": ["Running", "NotAState"]},
     f"{ARGS_PATH}.states[1]: invalid state 'NotAState'; must be one of Completed, ContainerCannotRun, "
     "ContainerCreating, CrashLoopBackOff, CreateContainerConfigError, CreateContainerError, DeadlineExceeded, "
     "ErrImagePull, Error, Evicted, Failed, ImagePullBackOff, InvalidImageName, NodeAffinity, NodeLost, OOMKilled, "
     "Pending, PodInitializing, Running, Shutdown, StartError, Succeeded, UnexpectedAdmissionError, Unknown"),
    (PLT, {"conditions": [{"reason": "PodCompleted"}, {}]},
     f"{ARGS_PATH}.conditions[1]: at least one of type, status, reason or minTimeSinceLastTransitionSeconds "
     "must be set"),
    (PLT, {"maxPodLifeTimeSeconds": -1}, f"{ARGS_PATH}.maxPodLifeTimeSeconds: must not be negative, not -1"),
    (PLT, {"conditions": [{"minTimeSinceLastTransitionSeconds": -5}]},
     f"{ARGS_PATH}.conditions[0].minTimeSinceLastTransitionSeconds: must not be negative, not -5"),
    (PLT, {"exitCodes": [1, 2**31]}, f"{ARGS_PATH}.exitCodes[1]: 2147483648 is not a 32-bit exit code"),
    (PLT, {"maxPodLifeTimeSeconds": "1h"}, f"{ARGS_PATH}.maxPodLifeTimeSeconds: must be an integer, not '1h'"),
    (PLT, {"states": ["Running"], "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
     f"{ARGS_PATH}.labelSelector: matchExpressions[0]: operator In needs values"),
    (RFP, {"namespaces": {"include": ["default"], "exclude": ["kube-system"]}},
     f"{ARGS_PATH}.namespaces: only one of include and exclude can be set"),
    (RFP, {"minPodLifetimeSeconds": -1}, f"{ARGS_PATH}.minPodLifetimeSeconds: must not be negative, not -1"),
    (RFP, {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
     f"{ARGS_PATH}.labelSelector: matchExpressions[0]: operator In needs values"),
    (RFP, {"exitCodes": ["1"]}, f"{ARGS_PATH}.exitCodes[0]: must be an integer, not '1'"),
    (RESTARTS, {}, f"{ARGS_PATH}.podRestartThreshold: must be at least 1, not 0"),
    (RESTARTS, {"podRestartThreshold": 0}, f"{ARGS_PATH}.podRestartThreshold: must be at least 1, not 0"),
    (RESTARTS, {"podRestartThreshold": 1, "states": ["Failed"]},
     f"{ARGS_PATH}.states[0]: invalid state 'Failed'; must be one of CrashLoopBackOff, Running"),
    (RESTARTS, {"podRestartThreshold": 3, "namespaces": {"include": ["a"], "exclude": ["b"]}},
     f"{ARGS_PATH}.namespaces: only one of include and exclude can be set"),
])
def test_args_validation(plugin: str, args: dict[str, Any], message: str) -> None:
    assert config_error(plugin, args) == message


@pytest.mark.parametrize(("plugin", "args"), [
    (PLT, {"maxPodLifeTimeSeconds": 1, "states": ["Running"]}),
    (PLT, {"maxPodLifeTimeSeconds": 1, "states": ["Succeeded", "Failed"]}),
    (PLT, {"states": ["CrashLoopBackOff"]}),
    (PLT, {"conditions": [{"reason": "PodCompleted"}]}),
    (PLT, {"maxPodLifeTimeSeconds": 600}),
    (PLT, {"states": ["Succeeded"], "conditions": [{"reason": "PodCompleted"}]}),
    (PLT, {"exitCodes": [1]}),
    (PLT, {"conditions": [{"minTimeSinceLastTransitionSeconds": 300}]}),
    (RFP, {}),
    (RFP, {"namespaces": {"include": ["default"]}, "excludeOwnerKinds": ["Job"], "reasons": ["ReasonDoesNotMatch"],
           "minPodLifetimeSeconds": 3600}),
    (RFP, {"labelSelector": {"matchLabels": {"role.kubernetes.io/node": ""}}}),
    (RESTARTS, {"podRestartThreshold": 1, "states": ["Running"]}),
    (RESTARTS, {"podRestartThreshold": 1, "states": ["CrashLoopBackOff"]}),
])
def test_args_accepted(plugin: str, args: dict[str, Any]) -> None:
    plan = plan_for([b.node("n1")], plugin, args)
    assert plan.errors == [] and plan.candidates == []


def test_args_defaults() -> None:
    raw = policy_from_plugins([(RFP, "deschedule", {}), (PLT, "deschedule", {"states": ["Failed"]}),
                               (RESTARTS, "deschedule", {"podRestartThreshold": 2})], {}, {})
    policy = as_upstream(decode_policy(raw, registry(), "flags"))
    rfp, plt, restarts = (u.args for u in policy.profiles[0].deschedule)
    assert (rfp.min_pod_lifetime_seconds, rfp.reasons, rfp.exit_codes, rfp.exclude_owner_kinds,
            rfp.including_init_containers, rfp.namespaces, rfp.label_selector) == (3600, [], [], [], False, None, None)
    assert (plt.max_pod_life_time_seconds, plt.conditions, plt.exit_codes, plt.owner_kinds,
            plt.including_init_containers, plt.including_ephemeral_containers) == (None, [], [], None, False, False)
    assert (restarts.including_init_containers, restarts.states) == (False, [])


def test_unknown_args_are_refused_as_upstream_does() -> None:
    raw = policy_from_plugins([(PLT, "deschedule", {"states": ["Failed"], "maxPodLifetimeSeconds": 5})], {}, {})
    with pytest.raises(ConfigError) as err:
        decode_policy(raw, registry(), "flags")
    assert str(err.value) == ("flags: profiles[0].pluginConfig[1].args.maxPodLifetimeSeconds: unknown field "
                              "(field names are case-sensitive: maxPodLifeTimeSeconds)")


# === together ======================================================================================================


def test_deschedule_plugins_share_one_plan() -> None:
    """A pod one plugin picks is gone for the next; limits are shared."""
    crash = status(pod("crash", phase="Failed"), containers=[cs(restarts=20, terminated="Error", exit_code=1)])
    objs = [b.node("n1"), crash, pod("old")]
    raw = policy_from_plugins([(RFP, "deschedule", {"minPodLifetimeSeconds": 0}),
                               (RESTARTS, "deschedule", {"podRestartThreshold": 5}),
                               (PLT, "deschedule", {"maxPodLifeTimeSeconds": DAY})], {}, {})
    plan = run(as_upstream(decode_policy(raw, registry(), "flags")), _state(objs), Scope())
    assert [(c.pod.name, c.plugin) for c in plan.candidates] == [("crash", RFP), ("old", PLT)]
