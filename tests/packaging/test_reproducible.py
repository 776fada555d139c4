"""The same commit gives the same archives: a second build, from a copy of the sources at another path, makes a
byte-identical archive."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from tests.packaging.conftest import commit_time, run


def test_a_second_build_elsewhere_is_byte_identical(krew_dist: Path, source_copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "again"
    run([source_copy / "scripts" / "build-krew", "--out", out, "--platform", "linux/amd64"], timeout=1800,
        env={**os.environ, "SOURCE_DATE_EPOCH": commit_time()})
    [again] = out.glob("*.tar.gz")
    first = krew_dist / again.name
    assert hashlib.sha256(again.read_bytes()).hexdigest() == hashlib.sha256(first.read_bytes()).hexdigest()
    assert not (out / "desched.yaml").exists()  # a partial build writes no manifest


def test_outside_git_the_build_asks_for_source_date_epoch(source_copy: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    proc = subprocess.run([source_copy / "scripts" / "build-krew", "--out", tmp_path / "out"], capture_output=True,
                          text=True, timeout=120, env=env, check=False)
    assert proc.returncode == 1
    assert proc.stderr == "error: not a git checkout: set SOURCE_DATE_EPOCH to the release's commit time\n"
