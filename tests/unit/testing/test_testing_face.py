"""kubectl_desched.testing, the face of a plugin's tests: its objects parse as the API server's would, its clock is
fixed, and run_plugin / run_policy plan as `kubectl desched` does."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from kubectl_desched import testing as t
from kubectl_desched.errors import ConfigError
from kubectl_desched.model.objects import ContainerStatus, Node, OwnerRef, Pod, PodDisruptionBudget, Taint, Toleration

OLD = "PodLifeTime"


def test_the_clock_is_fixed_and_ago_counts_back_from_it() -> None:
    assert t.timestamp(t.NOW) == "2026-01-01T12:00:00Z"
    assert t.ago("192h") == "2025-12-24T12:00:00Z"
    assert t.ago("90m") == "2026-01-01T10:30:00Z"
    assert t.ago(30, now=datetime(2030, 1, 1, tzinfo=UTC)) == "2029-12-31T23:59:30Z"
    assert t.state([]).now == t.NOW
    later = datetime(2027, 1, 1, tzinfo=UTC)
    assert t.state([], now=later).now == later


def test_objects_parse_into_the_state() -> None:
    objs = [t.node("n1", cordoned=True, taints=[t.taint("k", "v")], labels={"zone": "a"}), t.node("n2"),
            t.pod("web", "n1", namespace="shop", priority=5, labels={"app": "web"}, created=t.ago("2h"),
                  tolerations=[t.toleration("k")], restarts=3),
            t.pdb("web", {"app": "web"}, namespace="shop", allowed=1),
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": {}}}]
    s = t.state(objs)
    assert s.nodes["n1"].unschedulable and str(s.nodes["n1"].taints[0]) == "k=v:NoSchedule"
    (web,) = s.pods_on_node("n1")
    assert (web.namespace, web.priority, web.created, web.statuses[0].restarts) == ("shop", 5,
                                                                                    "2026-01-01T10:00:00Z", 3)
    assert [b.name for b in s.pdbs_for(web)] == ["web"]
    assert [n.name for n in s.extra["Namespace"]] == ["shop"]
    assert json.loads(json.dumps(t.snapshot(objs)))["items"] == objs


def test_run_plugin_ages_pods_on_the_fixed_clock() -> None:
    objs = [t.node("n1"), t.node("n2"), t.pod("old", "n1", created=t.ago("192h")), t.pod("new", "n2")]
    plan = t.run_plugin(OLD, objs, {"maxPodLifeTimeSeconds": 7 * 86400})
    assert list(t.picked(plan)) == ["old"]
    assert t.verdict(plan, "old")[0] == "evict"
    assert t.verdict(plan, "new")[0] == "keep"
    with pytest.raises(LookupError):
        t.verdict(plan, "nope")
    later = t.state(objs, now=datetime(2026, 1, 30, tzinfo=UTC))  # a month on, both are old
    assert sorted(t.picked(t.run_plugin(OLD, later, {"maxPodLifeTimeSeconds": 7 * 86400}))) == ["new", "old"]


def test_run_plugin_applies_limits_and_the_evictor_args() -> None:
    objs = [t.node("n1"), t.node("n2"), *(t.pod(f"p{i}", "n1", created=t.ago("192h")) for i in range(3)),
            t.pod("vip", "n2", created=t.ago("192h"), priority=5000)]
    args = {"maxPodLifeTimeSeconds": 86400}
    assert len(t.run_plugin(OLD, objs, args, limits={"maxNoOfPodsToEvictPerNode": 1}).candidates) == 2
    assert "vip" not in t.picked(t.run_plugin(OLD, objs, args, evictor_args={"priorityThreshold": {"value": 1000}}))


def test_policy_decodes_as_policy_does() -> None:
    raw = {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", "profiles": [{
        "name": "p", "plugins": {"deschedule": {"enabled": [OLD]}},
        "pluginConfig": [{"name": OLD, "args": {"maxPodLifeTimeSeconds": 60, "typo": 1}}]}]}
    with pytest.raises(ConfigError, match=r"^p.yaml: profiles\[0\].pluginConfig\[0\].args.typo: unknown field$"):
        t.policy(raw, "p.yaml")
    raw["profiles"][0]["pluginConfig"][0]["args"] = {"maxPodLifeTimeSeconds": 60}  # type: ignore[index]
    assert t.policy(raw, "p.yaml").warnings == []
    objs = [t.node("n1"), t.node("n2"), t.pod("a", "n1")]
    assert list(t.picked(t.run_policy(raw, objs))) == ["a"]
    raw["profiles"][0]["pluginConfig"][0]["args"] = {"maxPodLifeTimeSeconds": "x"}  # type: ignore[index]
    with pytest.raises(ConfigError, match="maxPodLifeTimeSeconds: must be an integer"):
        t.policy(raw)


def test_registry_and_desched() -> None:
    assert OLD in t.registry()
    proc = t.desched("version", "-o", "json")
    assert proc.returncode == 0 and "version" in json.loads(proc.stdout)


# --- the builders set every field a plugin reads --------------------------------------------------------------------

AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}
SPREAD = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
          "labelSelector": {"matchLabels": {"app": "web"}}}


def _pod(**kw: Any) -> Any:
    return t.state([t.pod("p", "n1", **kw)]).pods[0]


def _node(**kw: Any) -> Any:
    return t.state([t.node("n1", **kw)]).nodes["n1"]


# (field, the model object built with the builders, what the field reads)
POD_CASES: list[tuple[str, Any, Any]] = [
    ("namespace", _pod(namespace="shop"), "shop"),
    ("name", t.state([t.pod("web", "n1")]).pods[0], "web"),
    ("uid", _pod(uid="u-1"), "u-1"),
    ("node_name", t.state([t.pod("p", "n2")]).pods[0], "n2"),
    ("labels", _pod(labels={"app": "web"}), {"app": "web"}),
    ("annotations", _pod(annotations={"a": "b"}), {"a": "b"}),
    ("owners", _pod(owners=[t.owner_ref("StatefulSet", "db", uid="s-1"), t.owner_ref("X", "x", controller=False)]),
     (OwnerRef("StatefulSet", "db", "s-1", True), OwnerRef("X", "x", "owner-x", False))),
    ("priority", _pod(priority=5), 5),
    ("priority_class", _pod(priority_class="high"), "high"),
    ("qos", _pod(qos="Guaranteed"), "Guaranteed"),
    ("requests", _pod(cpu=None, requests={"nvidia.com/gpu": "1"}), {"memory": 64 * 2**20, "nvidia.com/gpu": 1.0}),
    ("phase", _pod(phase="Pending"), "Pending"),
    ("reason", _pod(phase="Failed", reason="Evicted"), "Evicted"),
    ("terminating", _pod(terminating=True), True),
    ("created", _pod(created=t.ago("48h")), "2025-12-30T12:00:00Z"),
    ("started", _pod(started=t.ago("30m")), "2026-01-01T11:30:00Z"),
    ("started", _pod(started=""), None),
    ("local_volumes", _pod(volumes=[t.volume("cache"), t.volume("logs", host_path="/var/log")]),
     ("emptyDir cache", "hostPath logs")),
    ("pvc_claims", _pod(volumes=[t.volume("data", claim="data-0")]), ("data-0",)),
    ("has_resource_claims", _pod(resource_claims=["gpu"]), True),
    ("tolerations", _pod(tolerations=[t.toleration("k")]), (Toleration("k", "Exists", "", ""),)),
    ("node_selector", _pod(node_selector={"zone": "a"}), {"zone": "a"}),
    ("affinity", _pod(affinity=AFFINITY), AFFINITY),
    ("spread_constraints", _pod(spread_constraints=[SPREAD]), (SPREAD,)),
    ("images", _pod(images=["app:2", "sidecar:1"]), ("app:2", "sidecar:1")),
    ("statuses", _pod(statuses=[t.container_status(waiting="CrashLoopBackOff", restarts=4)],
                      init_statuses=[t.container_status("init", terminated="Error", exit_code=1)]),
     (ContainerStatus("init", 0, "", "Error", 1, True),
      ContainerStatus("main", 4, "CrashLoopBackOff", "", None, False))),
    ("condition_kinds", _pod(conditions=[t.condition("Ready", "False", reason="Unhealthy")]),
     (("Ready", "False", "Unhealthy"),)),
    ("condition_times", _pod(conditions=[t.condition("Ready", since=t.ago("2h"))]), "2026-01-01T10:00:00Z"),
    ("ephemeral_statuses", _pod(ephemeral_statuses=[t.container_status("debug", restarts=1)]),
     (ContainerStatus("debug", 1, "", "", None, False),)),
    ("scheduler_name", _pod(scheduler_name="koord-scheduler"), "koord-scheduler"),
    ("resource_version", _pod(resource_version="42"), "42"),
]
NODE_CASES: list[tuple[str, Any, Any]] = [
    ("name", t.state([t.node("n7")]).nodes["n7"], "n7"),
    ("labels", _node(labels={"zone": "a"}), {"kubernetes.io/hostname": "n1", "zone": "a"}),
    ("annotations", _node(annotations={"a": "b"}), {"a": "b"}),
    ("taints", _node(taints=[t.taint("k", "v", "NoExecute")]), (Taint("k", "v", "NoExecute"),)),
    ("unschedulable", _node(cordoned=True), True),
    ("ready", _node(ready=False), False),
    ("allocatable", _node(cpu="2", memory="1Gi", pods=10, allocatable={"nvidia.com/gpu": "2"}),
     {"cpu": 2000.0, "memory": 2.0**30, "pods": 10.0, "nvidia.com/gpu": 2.0}),  # cpu in millicores
    ("kubelet_version", _node(kubelet_version="v1.36.3"), "v1.36.3"),
]
PDB_CASES: list[tuple[str, Any, Any]] = [
    ("namespace", t.state([t.pdb("b", {}, namespace="shop")]).pdbs[0], "shop"),
    ("name", t.state([t.pdb("web", {})]).pdbs[0], "web"),
    ("disruptions_allowed", t.state([t.pdb("b", {}, allowed=2)]).pdbs[0], 2),
    ("fresh", t.state([t.pdb("b", {}, fresh=False)]).pdbs[0], False),
    ("current_healthy", t.state([t.pdb("b", {}, current_healthy=2)]).pdbs[0], 2),
    ("desired_healthy", t.state([t.pdb("b", {}, desired_healthy=3)]).pdbs[0], 3),
]


def _read(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else value


@pytest.mark.parametrize(("kind", "cases", "default"), [
    (Pod, POD_CASES, _pod()), (Node, NODE_CASES, _node()),
    (PodDisruptionBudget, PDB_CASES, t.state([t.pdb("b", {})]).pdbs[0])])
def test_the_builders_set_every_field_of_the_model(kind: type, cases: list[tuple[str, Any, Any]], default: Any) -> None:
    """A plugin's test can build any pod, node or PDB its plugin may meet: every field of the model types is set by
    a builder argument to a value other than its default, and reads back as given."""
    fields = set(kind.__struct_fields__) - {"selector"}  # a PDB's selector: matchLabels, checked below
    assert {f for f, _, _ in cases} == fields
    for field, built, expected in cases:
        assert _read(getattr(built, field)) == expected, field
        assert _read(getattr(default, field)) != expected, f"{field}: the default already reads {expected!r}"
    (budget,) = t.state([t.pdb("b", {"app": "web"})]).pdbs
    assert budget.selector({"app": "web"}) and not budget.selector({"app": "db"})
