"""The plan keeps its evictions in its own overlay: the state it planned on is never written, so it can be planned on
again as it is, and a balance/deschedule run leaves the policy it was given as it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubectl_desched import app
from kubectl_desched.app.options import ClusterAccess, Options, ScopeOptions
from kubectl_desched.framework.policy_decoder import decode_policy, policy_from_plugins
from kubectl_desched.framework.runner import Scope, run
from kubectl_desched.model.objects import node_from_json, pod_from_json
from kubectl_desched.model.state import ClusterState
from kubectl_desched.plugins import in_tree_registry
from tests import builders as b
from tests.builders import as_upstream

OBJS = [b.node("tainted", taints=[b.taint("maintenance", "soon")]), b.node("other"),
        b.pod("web-0", "tainted", owner_name="web-0"), b.pod("web-1", "tainted", owner_name="web-1"),
        b.pod("db-0", "other", owner_name="db-0")]


def _policy(*plugins: tuple[str, str, dict[str, Any]]) -> Any:
    return as_upstream(decode_policy(policy_from_plugins(list(plugins), {}, {}), in_tree_registry(), "flags"))


def test_a_state_is_planned_on_again_without_a_reset() -> None:
    state = ClusterState([node_from_json(o) for o in OBJS if o["kind"] == "Node"],
                         [pod_from_json(o) for o in OBJS if o["kind"] == "Pod"])
    policy = _policy(("RemovePodsViolatingNodeTaints", "deschedule", {}))
    first = run(policy, state, Scope())
    assert sorted(c.pod.name for c in first.candidates) == ["web-0", "web-1"]
    assert first.state.pods_on_node("tainted") == []  # the plan's view: its evictions are gone
    assert [p.name for p in state.pods_on_node("tainted")] == ["web-0", "web-1"]  # the state: untouched
    second = run(policy, state, Scope())
    assert [c.pod.name for c in second.candidates] == [c.pod.name for c in first.candidates]


def test_a_balance_run_leaves_the_given_policy_as_it_was(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = tmp_path / "snap.json"
    snapshot.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": OBJS}))
    policy = _policy(("RemovePodsViolatingNodeTaints", "deschedule", {}),
                     ("LowNodeUtilization", "balance", {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}}))
    before = [(len(p.deschedule), len(p.balance)) for p in policy.profiles]
    opts = Options(access=ClusterAccess(from_files=(str(snapshot),)), scope=ScopeOptions(all_namespaces=True),
                   output="json")
    assert app.plan_and_act(opts, policy, point="balance") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["policy"]["profiles"][0]["deschedule"] == []  # the run itself used balance plugins only
    assert [(len(p.deschedule), len(p.balance)) for p in policy.profiles] == before == [(1, 1)]
