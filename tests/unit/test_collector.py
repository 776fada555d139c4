"""The console scripts start with the cycle collector off (collector.py, launch.py): it only rescanned what
starting makes, 33-36 ms of a live `explain node`. The first read of a cluster or a snapshot turns it back on,
so planning and acting run with it as before."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubectl_desched import collector
from kubectl_desched.model.objects import cycle_collector_paused
from tests.builders import cluster, node, pod

# Calls an entry point of launch.py and says, at exit, how many collections ran from the call on and whether
# the collector is on. "unpaused" calls it with the pause taken out: the control.
_RUN = """
import atexit, gc, sys
from kubectl_desched import collector
from kubectl_desched.cli import launch
if sys.argv[1] == "unpaused":
    collector.pause_for_start = lambda: None
runs = []
gc.callbacks.append(lambda phase, info: runs.append(info["generation"]) if phase == "start" else None)
atexit.register(lambda: print(f"@collector {len(runs)} {gc.isenabled()}", file=sys.stderr))
entry = getattr(launch, sys.argv[2])
sys.argv = ["kubectl-desched", *sys.argv[3:]]
entry()
"""


def collections(entry: str, *args: str, env: dict[str, str] | None = None, paused: bool = True) -> tuple[int, bool]:
    run = subprocess.run([sys.executable, "-c", _RUN, "paused" if paused else "unpaused", entry, *args],
                         capture_output=True, text=True, timeout=60, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    said = [line.split() for line in run.stderr.splitlines() if line.startswith("@collector ")]
    assert len(said) == 1, run.stderr[-2000:]
    return int(said[0][1]), said[0][2] == "True"


def test_starting_runs_no_collection() -> None:
    assert collections("main", "version") == (0, False)
    assert collections("complete", "__complete", "balance", "--no-") == (0, False)
    assert collections("main", "__complete", "balance", "--no-") == (0, False)
    # The same starts with the collector left on collect again and again.
    for entry, args in (("main", ["version"]), ("complete", ["__complete", "balance", "--no-"])):
        count, enabled = collections(entry, *args, paused=False)
        assert count > 5 and enabled


def test_reading_a_snapshot_turns_the_collector_back_on(tmp_path: Path) -> None:
    snap = tmp_path / "cluster.json"
    snap.write_text(json.dumps(cluster(node("n1"), node("n2"), pod("p1", "n1", namespace="shop"))))
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(tmp_path)
    _count, enabled = collections("main", "explain", "node", "n1", "-n", "shop",
                                  "--from-file", str(snap), env=env)
    assert enabled


@pytest.fixture
def collector_state() -> Iterator[None]:
    was = gc.isenabled()
    yield
    collector.end_start_pause()
    if was:
        gc.enable()
    else:
        gc.disable()


@cycle_collector_paused()
def _read() -> bool:
    return gc.isenabled()


@pytest.mark.usefixtures("collector_state")
def test_a_read_ends_the_start_pause_once() -> None:
    gc.enable()
    collector.pause_for_start()
    assert not gc.isenabled()
    assert _read() is False  # off while reading
    assert gc.isenabled()  # and on after it
    assert collector.end_start_pause() is False  # the pause is over


@pytest.mark.usefixtures("collector_state")
def test_a_collector_turned_off_by_the_host_program_stays_off() -> None:
    gc.disable()  # an embedding program's choice, not the start pause
    collector.pause_for_start()  # finds it off: nothing to end later
    assert _read() is False
    assert not gc.isenabled()
