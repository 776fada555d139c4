#!/usr/bin/env python3
"""Start-up benchmark: the median wall time of `kubectl-desched version` and `kubectl-desched balance --help`, for
this checkout and for another installation (e.g. another checkout's venv at the commit to compare with), interleaved in
one run so both see the same machine. Not a timed test.

    python bench/startup.py --before OTHER/.venv/bin/kubectl-desched [--runs 10] [--after PATH]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(sys.executable).parent / "kubectl-desched"  # this venv's entry point
COMMANDS = (["version"], ["balance", "--help"])


def once(exe: str, args: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run([exe, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - began


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--before", required=True, help="the kubectl-desched executable to compare with")
    ap.add_argument("--after", default=str(HERE))
    args = ap.parse_args()
    exes = {"before": args.before, "after": args.after}
    for cmd in COMMANDS:
        for exe in exes.values():
            once(exe, cmd)  # warm the page cache and .pyc files
        times: dict[str, list[float]] = {k: [] for k in exes}
        for _ in range(args.runs):
            for name, exe in exes.items():
                times[name].append(once(exe, cmd))
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"kubectl-desched {' '.join(cmd):<16} before {med['before']:.3f} s  after {med['after']:.3f} s  "
              f"({med['before'] / med['after']:.1f}x faster, median of {args.runs})", flush=True)


if __name__ == "__main__":
    main()
