#!/usr/bin/env python3
"""Start-up benchmark: the median wall time of `kubectl-desched version`, `balance --help`, a completion request
(`__complete balance --no-`, what kubectl_complete-desched answers on TAB) and `explain node` on a two-node snapshot
(the snapshot path's start: no request, no kubernetes client), for this checkout and optionally for another
installation (e.g. another checkout's venv at the commit to compare with), interleaved in one run so both see the
same machine. Not a timed test. A command the other installation does not have is reported for this one only.
`explain node` on a live cluster, at every scale, is a row of bench/perf.py.

    python bench/startup.py [--before OTHER/.venv/bin/kubectl-desched] [--runs 10] [--after PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(sys.executable).parent / "kubectl-desched"  # this venv's entry point
# (command, target seconds from issue 13, if it sets one)
COMMANDS: tuple[tuple[list[str], float | None], ...] = (
    (["version"], 0.15), (["balance", "--help"], None), (["__complete", "balance", "--no-"], 0.15),
    (["explain", "node", "n1", "--from-file", "{snapshot}"], 0.3))
# An installed tool has its bytecode compiled; without this a developer's PYTHONDONTWRITEBYTECODE would time the
# compiler on every run.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def snapshot(path: Path) -> None:
    def node(name: str) -> dict:
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                           "conditions": [{"type": "Ready", "status": "True"}]}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
           "status": {"phase": "Running"}}
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node("n1"), node("n2"), pod]}))


def once(exe: str, args: list[str]) -> float | None:
    """Seconds, or None when this installation does not know the command."""
    began = time.perf_counter()
    done = subprocess.run([exe, *args], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - began if done.returncode == 0 else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--before", help="the kubectl-desched executable to compare with")
    ap.add_argument("--after", default=str(HERE))
    args = ap.parse_args()
    exes = {"before": args.before, "after": args.after} if args.before else {"after": args.after}
    with tempfile.TemporaryDirectory() as tmp:
        snap = Path(tmp) / "two-nodes.json"
        snapshot(snap)
        for template, target in COMMANDS:
            cmd = [a.replace("{snapshot}", str(snap)) for a in template]
            known = {name: exe for name, exe in exes.items() if once(exe, cmd) is not None}  # also warms the caches
            times: dict[str, list[float]] = {k: [] for k in known}
            for _ in range(args.runs):
                for name, exe in known.items():
                    took = once(exe, cmd)
                    if took is not None:
                        times[name].append(took)
            med = {k: statistics.median(v) for k, v in times.items() if v}
            shown = " ".join(template).replace(" --from-file {snapshot}", " (snapshot)")
            line = f"kubectl-desched {shown:<32}" + "".join(f" {k} {v:.3f} s" for k, v in med.items())
            if len(med) == 2:
                line += f"  ({med['before'] / med['after']:.1f}x faster)"
            if "after" in med and target is not None:
                line += f"  target {target:g} s: {'met' if med['after'] <= target else 'NOT met'}"
            print(line + f"  (median of {args.runs})", flush=True)


if __name__ == "__main__":
    main()
