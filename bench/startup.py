#!/usr/bin/env python3
"""Start-up benchmark: the median wall time of `kubectl-desched version`, `balance --help` and a completion request
(`__complete balance --no-`, what kubectl_complete-desched answers on TAB), for this checkout and optionally for
another installation (e.g. another checkout's venv at the commit to compare with), interleaved in one run so both see
the same machine. Not a timed test. A command the other installation does not have is reported for this one only.

    python bench/startup.py [--before OTHER/.venv/bin/kubectl-desched] [--runs 10] [--after PATH]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(sys.executable).parent / "kubectl-desched"  # this venv's entry point
COMMANDS = (["version"], ["balance", "--help"], ["__complete", "balance", "--no-"])


def once(exe: str, args: list[str]) -> float | None:
    """Seconds, or None when this installation does not know the command."""
    began = time.perf_counter()
    done = subprocess.run([exe, *args], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - began if done.returncode == 0 else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--before", help="the kubectl-desched executable to compare with")
    ap.add_argument("--after", default=str(HERE))
    args = ap.parse_args()
    exes = {"before": args.before, "after": args.after} if args.before else {"after": args.after}
    for cmd in COMMANDS:
        known = {name: exe for name, exe in exes.items() if once(exe, cmd) is not None}  # also warms the caches
        times: dict[str, list[float]] = {k: [] for k in known}
        for _ in range(args.runs):
            for name, exe in known.items():
                took = once(exe, cmd)
                if took is not None:
                    times[name].append(took)
        med = {k: statistics.median(v) for k, v in times.items() if v}
        line = f"kubectl-desched {' '.join(cmd):<26}" + "".join(f" {k} {v:.3f} s" for k, v in med.items())
        if len(med) == 2:
            line += f"  ({med['before'] / med['after']:.1f}x faster)"
        print(line + f"  (median of {args.runs})", flush=True)


if __name__ == "__main__":
    main()
