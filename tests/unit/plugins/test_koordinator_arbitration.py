"""Koordinator's MigrationController checks beyond the DefaultEvictor rules (plugins/koordinator/arbitration.py): an
unfinished PodMigrationJob, ReservationFirst's schedulerNames, expected replicas, and the migrating and unavailable
counts per workload, node, namespace and overall, each named in explain's words; skipEvictionGates; the limits'
arithmetic; and what a source without owners or jobs leaves out."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kubectl_desched.errors import ConfigError
from kubectl_desched.framework.args import decode_args
from kubectl_desched.framework.plan import EvictionPlan, Limits, PluginHandle, ProfileEvictor
from kubectl_desched.model.objects import node_from_json, pod_from_json
from kubectl_desched.model.state import ClusterState
from kubectl_desched.plugins.koordinator.arbitration import max_unavailable, scaled_value
from kubectl_desched.plugins.koordinator.migrationcontroller import MigrationController, MigrationControllerArgs
from tests import builders as b

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DIRECT = {"defaultJobMode": "EvictDirectly"}
KINDS = ("ReplicaSet", "Deployment", "StatefulSet", "ReplicationController", "PodMigrationJob")


def _controller(args: dict[str, Any], objs: list[dict[str, Any]], *, kinds: tuple[str, ...] = KINDS
                ) -> tuple[MigrationController, ClusterState, EvictionPlan]:
    """The filter over nodes n1-n3 and `objs`; the extra kinds are as a live read gives them (all, maybe empty)."""
    objs = [b.node("n1"), b.node("n2"), b.node("n3"), *objs]
    extra: dict[str, list[Any]] = {k: [] for k in kinds}
    for o in objs:
        if o["kind"] not in ("Node", "Pod"):
            extra.setdefault(o["kind"], []).append(o)
    pods = [pod_from_json(o) for o in objs if o["kind"] == "Pod"]
    state = ClusterState([node_from_json(o) for o in objs if o["kind"] == "Node"], pods, extra=extra, now=NOW)
    plan = EvictionPlan(state, Limits())
    handle = PluginHandle(plan, ProfileEvictor(plan, "p", lambda _p: None), "MigrationController")
    return MigrationController(decode_args(MigrationControllerArgs, args, ""), handle), state, plan


def verdict(args: dict[str, Any], objs: list[dict[str, Any]], pod: str = "p", **kw: Any) -> str | None:
    mc, state, _plan = _controller({**DIRECT, **args}, objs, **kw)
    found = state.find_pod("default", pod)
    assert found is not None
    return mc.filter(found)


def rs(name: str = "app", replicas: int = 3, **kw: Any) -> dict[str, Any]:
    return b.workload("ReplicaSet", name, replicas, **kw)


def pod(name: str = "p", node: str = "n1", owner: str = "app", **kw: Any) -> dict[str, Any]:
    return b.ready(b.pod(name, node, owner_name=owner, **kw))


# --- the arithmetic ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("replicas", "value", "expected"), [
    (0, None, 0), (1, None, 1), (3, None, 1), (4, None, 2), (10, None, 2), (11, None, 1), (25, None, 2),
    (100, None, 10), (5, 3, 3), (5, 9, 5), (10, "50%", 5), (10, "25%", 2), (3, "10%", 1), (0, "10%", 0),
    (4, "100%", 4), (2, 0, 1), (7, "+20%", 1),
])
def test_max_unavailable_follows_koordinators_rules(replicas: int, value: Any, expected: int) -> None:
    assert max_unavailable(replicas, value) == expected


@pytest.mark.parametrize("value", ["5", "x%", "1.5%", " 5%", True, 1.5])
def test_a_limit_is_an_int_or_a_whole_percent(value: Any) -> None:
    with pytest.raises(ValueError):
        scaled_value(value, 10)


@pytest.mark.parametrize(("args", "path", "message"), [
    ({"skipEvictionGates": ["NodeFit", "Teleport"]}, "skipEvictionGates[1]", "unknown eviction gate 'Teleport'"),
    ({"maxMigratingPerNode": -1}, "maxMigratingPerNode", "greater than or equal to 0"),
    ({"maxMigratingGlobally": -3}, "maxMigratingGlobally", "greater than or equal to 0"),
    ({"maxMigratingPerWorkload": "half"}, "maxMigratingPerWorkload", "not a percentage"),
    ({"maxUnavailablePerWorkload": "12.5%"}, "maxUnavailablePerWorkload", "whole-number percentage"),
])
def test_args_are_validated_as_koordinator_does(args: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        decode_args(MigrationControllerArgs, args, "")
    assert e.value.path == path and message in e.value.message


# --- an unfinished job, the scheduler ------------------------------------------------------------------------------


def test_a_pod_with_an_unfinished_job_is_kept_whatever_its_annotations() -> None:
    p = pod(annotations={"descheduler.alpha.kubernetes.io/evict": "true"})
    assert verdict({}, [rs(), p, b.migration_job("j1", p)]) == \
        "PodMigrationJob j1 (Running) already exists for the pod"
    assert verdict({}, [rs(), p, b.migration_job("j1", p, phase=None)]) == \
        "PodMigrationJob j1 (Pending) already exists for the pod"  # no phase yet: Pending to the controller
    other_uid = b.migration_job("j2", pod_name="p", pod_uid="recreated")
    assert verdict({}, [rs(), p, other_uid]) == "PodMigrationJob j2 (Running) already exists for the pod"
    for phase in ("Succeeded", "Failed", "Aborted"):
        assert verdict({}, [rs(), p, b.migration_job("j3", p, phase=phase)]) is None


def test_reservation_first_moves_only_the_pods_of_its_schedulers() -> None:
    plain, koord = pod("p"), pod("q", schedulerName="koord-scheduler")
    objs = [rs(), plain, koord]
    assert verdict({"defaultJobMode": ""}, objs) == (
        "schedulerName default-scheduler is not in MigrationController schedulerNames (koord-scheduler), which "
        "defaultJobMode ReservationFirst needs")
    assert verdict({"defaultJobMode": "ReservationFirst"}, objs, "q") is None
    assert verdict({"defaultJobMode": "", "schedulerNames": ["default-scheduler"]}, objs) is None
    assert verdict({}, objs) is None  # EvictDirectly needs no reservation
    # The evict annotation does not waive it.
    annotated = pod("r", annotations={"descheduler.alpha.kubernetes.io/evict": ""})
    assert verdict({"defaultJobMode": ""}, [rs(), annotated], "r") is not None


def test_the_evict_annotation_waives_the_other_checks() -> None:
    p = pod(owner="gone", annotations={"descheduler.alpha.kubernetes.io/evict": "", "scheduling.koordinator.sh/"
                                       "eviction-cost": "2147483647"}, volumes=[{"name": "c", "emptyDir": {}}])
    busy = [pod(f"m{i}", owner="other") for i in range(2)]
    jobs = [b.migration_job(f"j{i}", m) for i, m in enumerate(busy)]
    assert verdict({"namespaces": {"include": ["elsewhere"]}}, [p, rs("other", 9), *busy, *jobs]) is None


# --- expected replicas -----------------------------------------------------------------------------------------------


def test_expected_replicas() -> None:
    assert verdict({}, [rs(replicas=1), pod()]) == "expected replicas: ReplicaSet app has 1 replica"
    assert verdict({}, [pod()]) == ("expected replicas: ReplicaSet app (not found) has 0, which "
                                    "maxUnavailablePerWorkload allows to be unavailable at once")
    assert verdict({}, [rs(uid="someone-else"), pod()]) is not None  # same name, another object
    assert verdict({}, [rs(replicas=2), pod()]) is None
    assert verdict({"maxUnavailablePerWorkload": "100%"}, [rs(replicas=4), pod()]) == (
        "expected replicas: ReplicaSet app has 4, which maxUnavailablePerWorkload allows to be unavailable at once")
    assert verdict({"maxMigratingPerWorkload": 4}, [rs(replicas=4), pod()]) == (
        "expected replicas: ReplicaSet app has 4, which maxMigratingPerWorkload allows to migrate at once")
    assert verdict({"skipCheckExpectedReplicas": True}, [rs(replicas=1), pod()]) is None
    assert verdict({"skipEvictionGates": ["ExpectedReplicas"]}, [rs(replicas=1), pod()]) is None


def test_a_deployments_replica_set_counts_the_deployments_replicas() -> None:
    deploy = b.workload("Deployment", "web", 1, uid="dep-web", labels={"app": "web"})
    current = rs("web-1", 5, owner=("Deployment", "web", "dep-web"), labels={"app": "web"})
    p = pod(owner="web-1")
    assert verdict({}, [deploy, current, p]) == "expected replicas: Deployment web has 1 replica"
    deploy["spec"]["replicas"] = 3
    assert verdict({}, [deploy, current, p]) is None
    assert verdict({}, [current, p]) == ("expected replicas: Deployment web of ReplicaSet web-1 (not found) has 0, "
                                         "which maxUnavailablePerWorkload allows to be unavailable at once")


def test_owners_of_other_kinds_have_no_replica_count() -> None:
    job_pod = b.ready(b.pod("p", "n1", owner="Job", owner_name="batch"))
    assert verdict({}, [job_pod]) == ("expected replicas: Job batch (no replica count is read for a Job) has 0, "
                                      "which maxUnavailablePerWorkload allows to be unavailable at once")
    bare = b.ready(b.pod("p", "n1", owner=None))
    assert verdict({"evictAllBarePods": True}, [bare]) is None  # no controller: nothing to count


def test_a_source_without_owners_leaves_their_checks_out_and_says_so() -> None:
    mc, state, plan = _controller(DIRECT, [pod()], kinds=("PodMigrationJob",))
    found = state.find_pod("default", "p")
    assert found is not None and mc.filter(found) is None
    assert mc.filter(found) is None
    assert [m for _p, m in plan.messages] == [
        "the source has no ReplicaSet objects: the expected-replicas and per-workload checks are left out for pods "
        "ReplicaSets own (add them: kubectl get rs,deploy,sts,rc -A -o yaml)"]  # said once


# --- per workload ----------------------------------------------------------------------------------------------------


def test_unavailable_pods_of_the_workload_count_against_max_unavailable() -> None:
    pods = [pod(f"w{i}") for i in range(4)]
    assert verdict({}, [rs(replicas=4), *pods], "w0") is None  # 4 replicas: 2 may be unavailable
    b.ready(pods[1], False)
    assert verdict({}, [rs(replicas=4), *pods], "w0") is None
    pending = b.ready(b.pod("w9", "", owner_name="app"), False)
    pending["spec"].pop("nodeName")
    pending["status"]["phase"] = "Pending"
    assert verdict({}, [rs(replicas=4), *pods, pending], "w0") == \
        "ReplicaSet app: 2 pod(s) unavailable or migrating, maxUnavailablePerWorkload 2"
    # The same from a snapshot, where unscheduled pods are among the others.
    assert verdict({}, [rs(replicas=4), *pods, pending], "w0", kinds=KINDS[:-1]) is not None
    assert verdict({"skipEvictionGates": ["MaxUnavailablePerWorkload"]}, [rs(replicas=4), *pods, pending], "w0") \
        is None


def test_migrating_pods_of_the_workload_count_twice() -> None:
    pods = [pod(f"w{i}") for i in range(6)]
    job = b.migration_job("j", pods[1])
    assert verdict({}, [rs(replicas=6), *pods, job], "w0") is None  # 1 migrating: 1 < 2
    assert verdict({"maxMigratingPerWorkload": 1}, [rs(replicas=6), *pods, job], "w0") == \
        "ReplicaSet app: 1 pod(s) migrating, maxMigratingPerWorkload 1"
    b.ready(pods[2], False)
    assert verdict({}, [rs(replicas=6), *pods, job], "w0") == \
        "ReplicaSet app: 2 pod(s) unavailable or migrating, maxUnavailablePerWorkload 2"
    gates = {"skipEvictionGates": ["MaxMigratingPerWorkload", "MaxUnavailablePerWorkload"]}
    assert verdict(gates, [rs(replicas=6), *pods, job], "w0") is None


# --- per node, namespace, overall ------------------------------------------------------------------------------------


def test_max_migrating_per_node_defaults_to_two() -> None:
    pods = [pod(f"m{i}", owner=f"o{i}") for i in range(3)] + [pod("p", "n1", owner="app")]
    owners = [rs(f"o{i}", 5) for i in range(3)] + [rs(replicas=5)]
    jobs = [b.migration_job("j0", pods[0])]
    assert verdict({}, [*owners, *pods, *jobs]) is None
    jobs.append(b.migration_job("j1", pods[1]))
    assert verdict({}, [*owners, *pods, *jobs]) == "2 pod(s) on node n1 migrating, maxMigratingPerNode 2"
    assert verdict({"maxMigratingPerNode": 3}, [*owners, *pods, *jobs]) is None
    assert verdict({"maxMigratingPerNode": 0}, [*owners, *pods, *jobs]) is None  # 0: no limit
    assert verdict({"skipEvictionGates": ["MaxMigratingPerNode"]}, [*owners, *pods, *jobs]) is None
    elsewhere = [pod(f"m{i}", "n2", owner=f"o{i}") if i < 2 else p for i, p in enumerate(pods)]
    assert verdict({}, [*owners, *elsewhere, *jobs]) is None


def test_max_migrating_per_namespace_and_globally() -> None:
    pods = [pod("m0", "n2", owner="o0"), pod("m1", "n3", owner="o1", namespace="other"), pod()]
    owners = [rs("o0", 5), rs("o1", 5, namespace="other"), rs(replicas=5)]
    jobs = [b.migration_job("j0", pods[0]), b.migration_job("j1", pods[1]),
            b.migration_job("gone", pod_name="ghost", pod_uid="ghost-uid")]  # its pod no longer exists
    objs = [*owners, *pods, *jobs]
    assert verdict({"maxMigratingPerNamespace": 3}, objs) is None
    assert verdict({"maxMigratingPerNamespace": 2}, objs) == \
        "2 pod(s) in namespace default migrating, maxMigratingPerNamespace 2"
    assert verdict({"maxMigratingGlobally": 4}, objs) is None
    assert verdict({"maxMigratingGlobally": 3}, objs) == \
        "3 pod(s) migrating (unfinished PodMigrationJobs), maxMigratingGlobally 3"
    assert verdict({"maxMigratingGlobally": 3, "skipEvictionGates": ["MaxMigratingGlobally"]}, objs) is None


# --- what the checks need --------------------------------------------------------------------------------------------


def test_required_kinds_and_one_node_reads() -> None:
    args = decode_args(MigrationControllerArgs, {}, "")
    assert MigrationController.required_kinds(args) == set(KINDS)
    assert not MigrationController.reads_one_node(args)  # the workload's pods are on every node
    gates = ["ExpectedReplicas", "MaxMigratingPerWorkload", "MaxUnavailablePerWorkload"]
    lean = decode_args(MigrationControllerArgs, {"skipEvictionGates": gates}, "")
    assert MigrationController.required_kinds(lean) == {"PodMigrationJob"}
    assert MigrationController.reads_one_node(lean)


def test_the_gates_turn_the_default_evictor_rules_off() -> None:
    p = b.ready(b.pod("p", "n1", owner=None, priority=2_000_000_000, labels={"a": "b"},
                      volumes=[{"name": "c", "emptyDir": {}},
                               {"name": "d", "persistentVolumeClaim": {"claimName": "x"}}]))
    args = {"ignorePvcPods": True, "labelSelector": {"matchLabels": {"a": "c"}}, "namespaces": {"include": ["x"]},
            "priorityThreshold": {"value": 5}}
    assert verdict(args, [p]) is not None
    gates = ["BarePods", "SystemCritical", "LocalStorage", "PVC", "LabelSelector", "Namespaces", "PriorityThreshold"]
    assert verdict({**args, "skipEvictionGates": gates}, [p]) is None


def test_a_live_read_keeps_what_the_checks_need(monkeypatch: pytest.MonkeyPatch) -> None:
    """Owners slimmed to what is read, unscheduled pods by field selector, no PodMigrationJob API as no jobs, and
    owners the user may not list left out with a warning."""
    import json

    from kubernetes.client.exceptions import ApiException

    from kubectl_desched.kube import live
    from kubectl_desched.kube.config import Connection

    template = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "m", "image": "x"}]}}
    owner = {**rs(replicas=4, labels={"app": "a"}), "status": {"replicas": 4}}
    owner["spec"]["template"] = template
    waiting = b.pod("w", "", owner_name="app")
    waiting["spec"].pop("nodeName")
    lists = {"/api/v1/nodes": [b.node("n1"), b.node("n2")], "/api/v1/pods": [pod(), waiting],
             "/apis/policy/v1/poddisruptionbudgets": [], "/apis/apps/v1/replicasets": [owner]}
    asked: list[tuple[str, str]] = []

    def serve(conn: Any, method: str, path: str, *, query: Any = None, **_kw: Any) -> bytes:
        selector = dict(query or []).get("fieldSelector", "")
        asked.append((path, selector))
        if path not in lists:
            raise ApiException(status=404 if "koordinator" in path else 403, reason="nope")
        items = lists[path]
        if selector == "spec.nodeName=":
            items = [i for i in items if not i["spec"].get("nodeName")]
        elif selector == "spec.nodeName!=":
            items = [i for i in items if i["spec"].get("nodeName")]
        return json.dumps({"metadata": {"resourceVersion": "1"},
                           "items": [{k: v for k, v in i.items() if k != "kind"} for i in items]}).encode()

    monkeypatch.setattr(live, "request_raw", serve)
    warnings: list[str] = []
    conn = Connection(api=None, server="https://x", context="c", namespace="default")  # type: ignore[arg-type]
    state = live.read_cluster(conn, warn=warnings.append, kinds=set(KINDS))
    assert sorted(p.name for p in state.pods) == ["p", "w"]  # the unscheduled one too, in one read
    assert state.extra["ReplicaSet"] == [{"kind": "ReplicaSet", "metadata": owner["metadata"],
                                          "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "a"}}}}]
    assert state.extra["PodMigrationJob"] == []  # the API is not served: there are none
    assert "Deployment" not in state.extra and any("cannot list Deployment objects" in w for w in warnings)
