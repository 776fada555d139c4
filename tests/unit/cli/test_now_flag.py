"""--now TIMESTAMP: age rules read a snapshot at a chosen time (RFC 3339); bad input is one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubectl_desched.cli.main import cli
from kubectl_desched.errors import UsageError
from tests import builders as b


@pytest.fixture
def snap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    b.isolate_from_the_user(tmp_path, monkeypatch)
    objs = [b.node("n1"), b.node("n2"), b.pod("web", "n1", started="2026-01-01T00:00:00Z")]
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump(b.cluster(*objs)))
    return "snap.yaml"


def _picked(snap: str, *more: str) -> list[str]:
    args = ["deschedule", "--from-file", snap, "-A", "--plugin", "PodLifeTime", "--max-pod-lifetime", "24h",
            "-o", "json", *more]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return [c["pod"] for c in json.loads(result.stdout)["candidates"]]


def test_now_sets_the_clock_of_age_rules(snap: str) -> None:
    assert _picked(snap, "--now", "2026-01-01T12:00:00Z") == []  # 12 hours old
    assert _picked(snap, "--now", "2026-01-02T00:00:01Z") == ["web"]  # a day and a second
    assert _picked(snap, "--now", "2026-01-02T02:00:01+02:00") == ["web"]  # the same instant in another zone
    assert _picked(snap) == ["web"]  # today the pod is months old


@pytest.mark.parametrize(("args", "message"), [
    (["--now", "yesterday"], "--now: expected an RFC 3339 time such as 2026-01-01T12:00:00Z, got 'yesterday'"),
    (["--now", "2026-01-01"], "--now: expected an RFC 3339 time such as 2026-01-01T12:00:00Z, got '2026-01-01'"),
    (["--now", "2026-01-01T12:00:00"], "got '2026-01-01T12:00:00'"),  # no offset: which zone?
    (["--now", "2026-13-01T12:00:00Z"], "got '2026-13-01T12:00:00Z'"),
])
def test_bad_times_are_refused(snap: str, args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["deschedule", "--from-file", snap, "-A", *args])
    assert isinstance(result.exception, UsageError) and message in str(result.exception)


def test_now_needs_a_snapshot_one_line_exit_2(snap: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "kubectl_desched", "deschedule", "-A", "--now",
                           "2026-01-01T00:00:00Z"], capture_output=True, text=True, timeout=60, check=False)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == ("error: --now evaluates a snapshot (--from-file) at another time; a cluster is read as it "
                           "is now\n")
