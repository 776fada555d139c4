#!/usr/bin/env python3
"""Eviction runner bookkeeping benchmark: 30,000 and 16,000 confirmed candidates through EvictionRunner._schedule with
an instant fake evictor, with no workload keys (plain pacing) and with --wait-ready-style keys (10 pods per workload,
each workload's pods serialised). Not a timed test: it prints, per case, the median wall seconds and the median CPU
seconds of the scheduling (main) thread: the bookkeeping plus handing each eviction to a reused worker
(evictors/pool.py). The floor row starts one no-op thread per candidate, which is what a thread per eviction costs.

The old runner (before the linear rewrite) is loaded from git (`--old-ref`, default main) into a temporary module and
measured side by side in the same run, interleaved with the new one; `--old-runs 0` skips it.

    python bench/runner.py [--sizes 16000 30000] [--runs 3] [--old-runs 1] [--old-ref main] [--max-in-flight 16]
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kubectl_desched.evictors import execute  # noqa: E402
from kubectl_desched.evictors.base import EvictionResult  # noqa: E402
from kubectl_desched.evictors.readiness import Readiness, Workload  # noqa: E402

PER_WORKLOAD = 10


class InstantEvictor:
    name = "instant"

    def preflight(self, candidates: Any) -> list[str]:
        return []

    def settle(self, results: list[EvictionResult], stop: threading.Event) -> list[EvictionResult]:
        return results

    def evict(self, c: Any, stop: threading.Event) -> EvictionResult:
        return EvictionResult(c, "evicted", "")


class InstantWorkloads:
    """Every pod belongs to a Deployment of PER_WORKLOAD pods, which is ready again at once (a new status version on
    every read, so the runner sees that it moved)."""

    def __init__(self) -> None:
        self.versions = itertools.count()

    def workload(self, pod: Any) -> Workload:
        return Workload("Deployment", "bench", f"w{pod.index // PER_WORKLOAD}")

    def readiness(self, w: Workload) -> Readiness:
        return Readiness(1, 1, str(next(self.versions)))


def candidates(n: int) -> list[Any]:
    # The runner only hands candidates to the evictor and the workload reader: a stand-in is enough.
    return [SimpleNamespace(pod=SimpleNamespace(index=i, key=f"bench/p{i}")) for i in range(n)]


def old_module(ref: str) -> ModuleType:
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:kubectl_desched/evictors/execute.py"],
                            check=True, capture_output=True, text=True).stdout
    # The acting protocol was called Evictor before it became PodEvictor: let an old runner import it.
    source = source.replace("EvictionResult, Evictor, Stop", "EvictionResult, PodEvictor as Evictor, Stop")
    # --wait-ready's reader was evictors/workloads.py before the package layout (issue 32).
    source = source.replace("kubectl_desched.evictors.workloads import", "kubectl_desched.evictors.readiness import")
    path = Path(tempfile.mkdtemp()) / "old_execute.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("old_execute", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def once(module: ModuleType, n: int, keyed: bool, max_in_flight: int) -> tuple[float, float]:
    """(wall seconds, main-thread CPU seconds) of one _schedule over n candidates."""
    pacing = module.Pacing(max_in_flight=max_in_flight, wait_ready=keyed, timeout=30)
    runner_type = getattr(module, "EvictionRunner", None) or module.Runner  # an older ref's name for it
    runner = runner_type(InstantEvictor(), pacing, workloads=InstantWorkloads() if keyed else None)
    cands = candidates(n)
    wall, cpu = time.perf_counter(), time.thread_time()
    results = runner._schedule(cands)  # no signal handler: not needed for the bookkeeping
    cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    assert len(results) == n and all(r.outcome == "evicted" for r in results), "the benchmark run went wrong"
    return wall, cpu


def floor(n: int) -> tuple[float, float]:
    """(wall, CPU) of starting n no-op daemon threads: the runner starts one per eviction."""
    wall, cpu = time.perf_counter(), time.thread_time()
    for _ in range(n):
        threading.Thread(target=lambda: None, daemon=True).start()
    return time.perf_counter() - wall, time.thread_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[16_000, 30_000])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--old-runs", type=int, default=1, help="the old runner is quadratic: ~25 s at 30,000")
    ap.add_argument("--old-ref", default="main")
    ap.add_argument("--max-in-flight", type=int, default=16)
    args = ap.parse_args()
    old = old_module(args.old_ref) if args.old_runs else None
    print(f"{'candidates':>10} {'keys':>10} {'runner':>6} {'runs':>4} {'wall s':>8} {'cpu s':>8}")
    for n in args.sizes:
        for keyed in (False, True):
            times: dict[str, list[tuple[float, float]]] = {"floor": [], "old": [], "new": []}
            for r in range(max(args.runs, args.old_runs)):  # interleaved: old and new share the machine's state
                if old is not None and r < args.old_runs:
                    times["old"].append(once(old, n, keyed, args.max_in_flight))
                if r < args.runs:
                    times["floor"].append(floor(n))
                    times["new"].append(once(execute, n, keyed, args.max_in_flight))
            for name, got in times.items():
                if got:
                    wall = statistics.median(t[0] for t in got)
                    cpu = statistics.median(t[1] for t in got)
                    print(f"{n:>10} {'workload' if keyed else 'none':>10} {name:>6} {len(got):>4} {wall:>8.3f} "
                          f"{cpu:>8.3f}", flush=True)
            if times["old"]:
                ratio = statistics.median(t[0] for t in times["old"]) / statistics.median(t[0] for t in times["new"])
                print(f"{'':>10} {'':>10} {'old/new':>6} {'':>4} {ratio:>8.1f}x", flush=True)


if __name__ == "__main__":
    main()
