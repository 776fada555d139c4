#!/usr/bin/env python3
"""Selector benchmark: the full-screen pod chooser on the plan of a generated cluster (bench/gencluster.py through
bench/plugins.build_state, LowNodeUtilization), driven by the application's own pipe input as the unit tests
drive it. Not a timed test: prints, per size, the plan's candidates, the median seconds to build the list
(what every toggle, sort and filter keystroke redraws), and the seconds the real application takes to open,
take 28 moves, a pod toggle, a node toggle and a sort, and close.

    python bench/selector.py [--sizes 1000,5000] [--pods-per-node 30] [--runs 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubectl_desched.framework.runner import Scope, run
from kubectl_desched.plugins import full_registry
from kubectl_desched.ui import picker as selector
from kubectl_desched.ui.picker_state import Selection
from plugins import _policy, build_state

KEYS = "j" * 28 + " " + "n" + "s" + "q"


def measure(nodes: int, pods: int, runs: int) -> dict[str, float | int]:
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    state, _times = build_state(nodes, pods, seed=1)
    policy = _policy(full_registry(), full_registry().get("LowNodeUtilization"))
    candidates = run(policy, state, Scope()).candidates
    lines_s, session_s = [], []
    for _ in range(runs):
        chosen = Selection(candidates)
        t = time.perf_counter()
        chosen.lines()
        lines_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        with create_pipe_input() as keys:
            keys.send_text(KEYS)
            selector.build(selector.Screen(chosen), input=keys, output=DummyOutput()).run()
        session_s.append(time.perf_counter() - t)
    return {"nodes": nodes, "pods": pods, "candidates": len(candidates),
            "lines_s": statistics.median(lines_s), "session_s": statistics.median(session_s), "keys": len(KEYS)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,5000", help="node counts")
    ap.add_argument("--pods-per-node", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    for nodes in (int(s) for s in args.sizes.split(",")):
        row = measure(nodes, nodes * args.pods_per_node, args.runs)
        if args.json:
            print(json.dumps(row))
        else:
            print(f"{row['nodes']:,} nodes / {row['pods']:,} pods: {row['candidates']:,} candidates; list "
                  f"{row['lines_s']:.3f} s; open, {row['keys']} keys, close {row['session_s']:.2f} s (medians)")


if __name__ == "__main__":
    main()
