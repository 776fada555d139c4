"""The optional Go builds the live tests need (tests/cluster/build-*), each tried at most once per test session.

A build that cannot run or fails skips only the tests that need it, with one line saying why; its full output
goes to a log file named in that line. No Go build is ever needed by the unit tests.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

CLUSTER_DIR = Path(__file__).resolve().parent / "cluster"
CACHE = Path(os.environ.get("KDESCHED_CACHE", "~/.cache/kubectl-desched")).expanduser()


@functools.cache
def build(script: str) -> tuple[Path | None, str]:
    """(directory the script printed, "") on success; (None, one-line reason) when it cannot be had."""
    if shutil.which("go") is None:
        return None, f"tests/cluster/{script} needs the Go toolchain: `go` is not on PATH"
    log = CACHE / "logs" / f"{script}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    try:
        proc = subprocess.run([str(CLUSTER_DIR / script)], capture_output=True, text=True, timeout=3600, check=False)
    except subprocess.TimeoutExpired:
        return None, f"tests/cluster/{script} took over an hour and was stopped"
    took = time.monotonic() - began
    if proc.returncode != 0 or took > 30 or not log.exists():  # a cache hit keeps the last real build's log
        log.write_text(f"exit {proc.returncode} after {took:.0f}s\n{proc.stdout}\n{proc.stderr}")
    if took > 30:  # a real build, not a cache hit: say what the silent minutes were
        sys.__stderr__.write(f"\ntests/cluster/{script}: {took / 60:.1f} min (exit {proc.returncode}), cached now\n")
    if proc.returncode != 0:
        # go indents the details of an error under it: name the error, not its last detail
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln[0].isspace()] or ["no output"]
        last = lines[-1].strip()
        return None, f"tests/cluster/{script} failed (exit {proc.returncode}): {last[:200]} (full log: {log})"
    return Path(proc.stdout.strip().splitlines()[-1]), ""


def built(script: str, binary: str) -> Path:
    """The built binary's path, or skip the calling test with the reason the build gave."""
    import pytest  # here, so examples/sim-cluster can use build() without pytest

    directory, why = build(script)
    if directory is None:
        pytest.skip(why)
    return directory / binary
