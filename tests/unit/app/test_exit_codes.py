"""One table of exit codes (errors.py), as the docs list it, and each code as commands really give it."""

from __future__ import annotations

import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubectl_desched import app, errors
from kubectl_desched.errors import DeschedError, StaleError, UsageError
from kubectl_desched.interrupts import Interrupted
from kubectl_desched.model.state import ClusterState
from tests.unit.app.test_apply import TAINTS, World, make_plan, run_cli, world  # noqa: F401  (a fixture)

PAGE = Path(__file__).resolve().parents[3] / "docs" / "guide" / "evicting-safely.md"


def test_the_docs_table_lists_the_codes_of_the_table() -> None:
    text = PAGE.read_text()
    section = text[text.index("## Exit codes"):]
    section = section[:section.index("\n## ", 4)]
    listed = re.findall(r"^\| `([0-9+N]+)` \|", section, re.M)
    assert listed == [str(c) for c, _ in errors.TABLE if c != errors.INTERRUPTED] + ["128+N"]


def test_the_error_classes_carry_the_table_codes() -> None:
    assert (DeschedError.exit_code, UsageError.exit_code, StaleError.exit_code) == (1, 2, 4)
    assert (app.EXIT_NOT_CONFIRMED, app.EXIT_INTERRUPTED) == (errors.NOT_CONFIRMED, errors.INTERRUPTED)
    assert (errors.NOT_CONFIRMED, errors.INTERRUPTED) == (3, 130)


@pytest.mark.parametrize("command", [[*TAINTS], ["balance", "-n", "default"]])
def test_each_code_from_balance_and_deschedule(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                               world: Callable[[list[str]], World],  # noqa: F811
                                               command: list[str]) -> None:
    w = world(["web-0"])
    # 0: a preview
    assert run_cli(monkeypatch, capsys, *command, "--dry-run=client")[0] == 0
    # 2: a bad flag, before anything is read
    code, _out, err = run_cli(monkeypatch, capsys, *command, "--max-in-flight", "0")
    assert code == 2 and err.startswith("error: ")
    # 3: not confirmed (no terminal, no --yes) - only where there is a candidate
    if command[0] == "deschedule":
        assert run_cli(monkeypatch, capsys, *command)[0] == 3
        w.api.refuse = {"web-0"}  # 1: the eviction a PodDisruptionBudget refuses until --timeout
        assert run_cli(monkeypatch, capsys, *command, "--yes", "--timeout", "0.1s")[0] == 1

    # 1: an error; 130: interrupted while reading
    def fail(*_a: Any, **_k: Any) -> ClusterState:
        raise DeschedError("the cluster cannot be read")
    monkeypatch.setattr(app.loading, "read_cluster", fail)
    assert run_cli(monkeypatch, capsys, *command, "--yes")[:3:2] == (1, "error: the cluster cannot be read\n")

    def interrupted(*_a: Any, **_k: Any) -> ClusterState:
        raise Interrupted(signal.SIGTERM)
    monkeypatch.setattr(app.loading, "read_cluster", interrupted)
    assert run_cli(monkeypatch, capsys, *command, "--yes")[0] == 143


def test_apply_gives_4_only_when_something_was_left_out(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                        world: Callable[[list[str]], World]) -> None:  # noqa: F811
    w = world(["web-0", "web-1"])
    path, _doc = make_plan(monkeypatch, capsys, tmp_path)
    w.pods["web-1"]["spec"]["nodeName"] = "n2"
    code, _out, err = run_cli(monkeypatch, capsys, "apply", "-f", str(path), "--yes")
    assert code == 4 and "stale: default/web-1: moved: now on n2, the plan's was on n1" in err
    w.pods["web-1"]["spec"]["nodeName"] = "n1"
    w.api.applied.clear()
    w.api.pods = {k: {**v, "metadata": {**v["metadata"]}} for k, v in w.api.pods.items()}
    for v in w.api.pods.values():
        v["metadata"].pop("deletionTimestamp", None)
    assert run_cli(monkeypatch, capsys, "apply", "-f", str(path), "--yes")[0] == 0
