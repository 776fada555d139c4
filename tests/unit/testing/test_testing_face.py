"""kubectl_desched.testing, the face of a plugin's tests: its objects parse as the API server's would, its clock is
fixed, and run_plugin / run_policy plan as `kubectl desched` does."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from kubectl_desched import testing as t
from kubectl_desched.errors import ConfigError

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
    assert t.policy(raw, "p.yaml").warnings == ["p.yaml: profiles[0].pluginConfig[0].args.typo: unknown field, ignored"]
    objs = [t.node("n1"), t.node("n2"), t.pod("a", "n1")]
    assert list(t.picked(t.run_policy(raw, objs))) == ["a"]
    raw["profiles"][0]["pluginConfig"][0]["args"] = {"maxPodLifeTimeSeconds": "x"}  # type: ignore[index]
    with pytest.raises(ConfigError, match="maxPodLifeTimeSeconds: must be an integer"):
        t.policy(raw)


def test_registry_and_desched() -> None:
    assert OLD in t.registry()
    proc = t.desched("version", "-o", "json")
    assert proc.returncode == 0 and "version" in json.loads(proc.stdout)
