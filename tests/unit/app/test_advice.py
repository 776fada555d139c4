""""What would help" names a change the same command accepts, never one already given: -A when the namespaces in
scope hold none of the pods that could move, not the rounds given again, and under --policy a --policy-patch
instead of plugin flags that --policy refuses. Each suggestion is then run as written and does what it said."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_desched.cli.main import cli
from tests.unit.framework.test_rehearsal import budgeted

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
DEMO = str(EXAMPLES / "demo-cluster.yaml")
WIDER = "--thresholds cpu=30,memory=30,pods=30"


def _on_targets(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The advice on plugins' targets, without the first-step entries (--cordon, --surge) the demo also gets."""
    return [a for a in doc["advice"] if "step" not in a]


@pytest.fixture(autouse=True)
def no_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))  # the default namespace of a snapshot: default


def _plan(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, [*args, "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _text(*args: str) -> str:
    result = CliRunner().invoke(cli, [*args, "--no-pager"])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_forgetting_all_namespaces_is_named_with_what_the_other_namespaces_hold() -> None:
    args = ("balance", "--from-file", DEMO)
    doc = _plan(*args)
    assert doc["candidates"] == []
    (advice,) = _on_targets(doc)
    assert advice["outsideScope"] == {"shop": 7, "kube-system": 4, "payments": 4, "monitoring": 3, "batch": 2}
    s = advice["suggestion"]
    assert s["flags"] == f"-A {WIDER} --rounds 2" and s["scopeChanged"] and s["overAfter"] == []
    assert "after this plan: 20 of their pods are in other namespaces (shop 7, kube-system 4, payments 4, " \
           f"monitoring 3, ...); -A {WIDER} --rounds 2 would move 6 pod(s) in 2 rounds and leave every node " \
           "within its targets" in _text(*args)
    # as written, the suggestion is a command whose own advice says the rounds given get there
    (again,) = _on_targets(_plan(*args, *s["flags"].split()))
    assert "outsideScope" not in again and again["suggestion"]["flags"] == ""


def test_the_rounds_given_are_not_suggested_again(tmp_path: Path) -> None:
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": budgeted()}))
    args = ("balance", "--from-file", str(snapshot), "-A", "--thresholds", "cpu=20", "--target-thresholds",
            "cpu=50")
    assert _plan(*args)["advice"][0]["suggestion"]["flags"] == "--rounds 2"
    (given,) = _on_targets(_plan(*args, "--rounds", "2"))
    assert {k: given["suggestion"][k] for k in ("flags", "rounds", "moves", "overAfter")} == \
        {"flags": "", "rounds": 2, "moves": 2, "overAfter": []}
    assert "hot stays over LowNodeUtilization's targets (cpu 50%) after this plan: the --rounds given would move " \
           "2 pod(s) in 2 rounds and leave every node within its targets" in _text(*args, "--rounds", "2")
    # the README's own suggestion, run as written, does not send the reader round again
    readme = ("balance", "--from-file", DEMO, "-A", *WIDER.split(), "--rounds", "2")
    assert "the --rounds given would move 6 pod(s) in 2 rounds" in _text(*readme)
    assert "--rounds 2 would" not in _text(*readme)


POLICY = {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy",
          "profiles": [{"name": "default",
                        "pluginConfig": [{"name": "DefaultEvictor"},
                                         {"name": "LowNodeUtilization",
                                          "args": {"thresholds": {"cpu": 20, "memory": 20, "pods": 20},
                                                   "targetThresholds": {"cpu": 50, "memory": 50, "pods": 50}}}],
                        "plugins": {"balance": {"enabled": ["LowNodeUtilization"]}}}]}


def test_under_a_policy_the_advice_is_a_policy_patch_the_command_accepts(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump(POLICY))
    args = ("run", "--policy", str(policy), "--from-file", DEMO)
    (advice,) = _on_targets(_plan(*args))
    s = advice["suggestion"]
    ops = [{"op": "add", "path": "/profiles/0/pluginConfig/1/args/thresholds",
            "value": {"cpu": 30, "memory": 30, "pods": 30}}]
    assert s["flags"] == f"--policy-patch '{json.dumps(ops)}' --rounds 2" and s["overAfter"] == []
    assert not any(t["flags"].startswith("--thresholds") for t in advice["tried"])
    (again,) = _on_targets(_plan(*args, *shlex.split(s["flags"])))  # accepted beside --policy, and gets there
    assert again["suggestion"]["flags"] == "" and again["suggestion"]["overAfter"] == []


def test_under_a_patched_policy_the_patch_says_it_goes_after_the_given_one(tmp_path: Path) -> None:
    bare = {**POLICY, "profiles": [{**POLICY["profiles"][0],
                                    "pluginConfig": [{"name": "DefaultEvictor"}, {"name": "LowNodeUtilization"}]}]}
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump(bare))
    given = [{"op": "add", "path": "/profiles/0/pluginConfig/1/args",
              "value": POLICY["profiles"][0]["pluginConfig"][1]["args"]}]
    args = ("run", "--policy", str(policy), "--from-file", DEMO, "--policy-patch", json.dumps(given))
    (advice,) = _on_targets(_plan(*args))
    op = {"op": "add", "path": "/profiles/0/pluginConfig/1/args/thresholds",
          "value": {"cpu": 30, "memory": 30, "pods": 30}}
    assert advice["suggestion"]["flags"] == f"--policy-patch with {json.dumps(op)} after its operations --rounds 2"


def test_a_patch_for_a_plugin_configured_without_args_adds_an_args_object() -> None:
    from dataclasses import replace

    from kubectl_desched.app.advice import _policy_patch
    from kubectl_desched.framework.policy import PluginUse
    from kubectl_desched.plugins import in_tree_registry
    from kubectl_desched.plugins.upstream.lownodeutilization import LowNodeUtilizationArgs

    spec = in_tree_registry().get("LowNodeUtilization")
    args = LowNodeUtilizationArgs(thresholds={"cpu": 20.0}, target_thresholds={"cpu": 50.0})
    use = PluginUse(spec, args, "profiles[0].pluginConfig[2].args")
    raw = {"profiles": [{"pluginConfig": [{}, {}, {"name": "LowNodeUtilization"}]}]}
    nearby = replace(args, thresholds={"cpu": 25.0})
    assert _policy_patch(use, nearby, raw, patched=False) == \
        """--policy-patch '[{"op": "add", "path": "/profiles/0/pluginConfig/2/args", "value": {"thresholds": """ \
        """{"cpu": 25}}}]'"""
    assert _policy_patch(replace(use, path="pluginConfig[LowNodeUtilization].args"), nearby, raw, False) is None
