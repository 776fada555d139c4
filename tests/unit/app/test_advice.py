""""What would help" never names what the command already gives: not the rounds given again."""

from __future__ import annotations

import json
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


def test_the_rounds_given_are_not_suggested_again(tmp_path: Path) -> None:
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": budgeted()}))
    args = ("balance", "--from-file", str(snapshot), "-A", "--thresholds", "cpu=20", "--target-thresholds",
            "cpu=50")
    assert _plan(*args)["advice"][0]["suggestion"]["flags"] == "--rounds 2"
    (given,) = _plan(*args, "--rounds", "2")["advice"]
    assert {k: given["suggestion"][k] for k in ("flags", "rounds", "moves", "overAfter")} == \
        {"flags": "", "rounds": 2, "moves": 2, "overAfter": []}
    assert "hot stays over LowNodeUtilization's targets (cpu 50%) after this plan: the --rounds given would move " \
           "2 pod(s) in 2 rounds and leave every node within its targets" in _text(*args, "--rounds", "2")
    # the README's own suggestion, run as written, does not send the reader round again
    readme = ("balance", "--from-file", DEMO, "-A", *WIDER.split(), "--rounds", "2")
    assert "the --rounds given would move 6 pod(s) in 2 rounds" in _text(*readme)
    assert "--rounds 2 would" not in _text(*readme)
