"""Rounds tried in memory (framework/rehearsal.py) and the advice built on them: a budget that lets one pod go per
round is not a dead end, and what the advice says is what the rounds then do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubectl_desched.cli.main import cli
from kubectl_desched.framework.policy_decoder import decode_policy, policy_from_plugins
from kubectl_desched.framework.rehearsal import after_moves, rehearse
from kubectl_desched.framework.runner import Scope, run
from kubectl_desched.plugins import in_tree_registry
from tests import builders as b

LNU = "LowNodeUtilization"
CPU = {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}}


def budgeted() -> list[dict[str, Any]]:
    """hot holds four web pods (70% cpu) whose budget lets one go at a time; cold1 and cold2 are empty."""
    return [b.node("hot"), b.node("cold1"), b.node("cold2"),
            *[b.pod(f"web-{i}", "hot", cpu="700m", owner_name="web", labels={"app": "web"}) for i in range(4)],
            b.pdb("web-pdb", {"app": "web"}, allowed=1, healthy=(4, 3))]


def policy() -> Any:
    return decode_policy(policy_from_plugins([(LNU, "balance", CPU)], {}, {}), in_tree_registry(), "flags")


def cpu_pct(state: Any) -> dict[str, float]:
    return {n: round(state.requested(n).get("cpu", 0.0) / 40, 2) for n in sorted(state.nodes)}


def test_after_moves_runs_each_replacement_where_the_estimate_lands_it_and_keeps_the_budgets() -> None:
    state = b.state(budgeted())
    plan = run(policy(), state, Scope())
    (moved,) = plan.candidates
    dest = plan.placement.of(moved) if plan.placement else None
    assert dest is not None and dest.node in ("cold1", "cold2")
    after = after_moves(plan)
    assert cpu_pct(after) == {"cold1": 17.5 if dest.node == "cold1" else 0.0,
                              "cold2": 17.5 if dest.node == "cold2" else 0.0, "hot": 52.5}
    (replacement,) = [p for p in after.pods if p.name == moved.pod.name]
    assert replacement.node_name == dest.node and replacement.uid != moved.pod.uid
    assert replacement.phase == "Running" and after.pdbs == state.pdbs  # Ready again: the budget is whole
    assert len(after.pods) == len(state.pods)


def test_rehearsed_rounds_reach_the_goal_a_budget_holds_back_in_one() -> None:
    state = b.state(budgeted())
    first = run(policy(), state, Scope())

    def over(p: Any) -> list[str]:
        used = p.placement.used if p.placement else {}
        return [n for n in ("hot", "cold1", "cold2") if used.get(n, {}).get("cpu", 0.0) > 2000]

    assert over(first) == ["hot"]  # one round: hot stays at 52.5%
    two = rehearse(policy(), state, Scope(), over, 3, first=first)
    assert (two.rounds, two.moves, two.left) == (2, 2, [])
    one = rehearse(policy(), state, Scope(), over, 1, first=first)
    assert (one.rounds, one.moves, one.left) == (1, 1, ["hot"])


def test_the_plan_says_how_many_rounds_reach_the_goal_and_they_do(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": budgeted()}))
    args = ["balance", "--from-file", str(snapshot), "-A", "--thresholds", "cpu=20", "--target-thresholds", "cpu=50"]
    doc = json.loads(CliRunner().invoke(cli, [*args, "-o", "json"]).stdout)
    (advice,) = [a for a in doc["advice"] if "step" not in a]  # the budgets' --surge advice aside
    assert advice["overAfter"] == ["hot"]
    assert {k: advice["suggestion"][k] for k in ("flags", "argsChanged", "rounds", "moves", "overAfter")} == \
        {"flags": "--rounds 2", "argsChanged": False, "rounds": 2, "moves": 2, "overAfter": []}
    text = CliRunner().invoke(cli, [*args, "--no-pager"]).stdout
    assert "hot stays over LowNodeUtilization's targets (cpu 50%) after this plan: --rounds 2 would move 2 pod(s) " \
           "in 2 rounds and leave every node within its targets" in text
    # the second round, as the cluster would be once the first replacement runs where estimated
    state = b.state(budgeted())
    second = run(policy(), after_moves(run(policy(), state, Scope())), Scope())
    assert len(second.candidates) == 1 and second.placement is not None
    assert round(second.placement.used["hot"]["cpu"]) == 1400  # 35%: within the target
