#!/usr/bin/env python3
"""Placement estimate benchmark: where the replacements of a LowNodeUtilization plan would land, on generated
clusters (bench/gencluster.py through bench/plugins.build_state) of 1,000 and 5,000 nodes at 30 pods per node.
Not a timed test: prints, per size, the plan's candidates and the median seconds of the estimate over a few runs,
with the plan's own time beside it, measured in the same process one after the other.

    python bench/placement.py [--sizes 1000,5000] [--pods-per-node 30] [--runs 3] [--json]
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
from kubectl_desched.placement import estimate
from kubectl_desched.plugins import full_registry
from plugins import _policy, build_state


def measure(nodes: int, pods: int, runs: int) -> dict[str, float | int]:
    state, _times = build_state(nodes, pods, seed=1)
    policy = _policy(full_registry(), full_registry().get("LowNodeUtilization"))
    plan_s, estimate_s, landed = [], [], 0
    for _ in range(runs):
        state.reset()
        t = time.perf_counter()
        plan = run(policy, state, Scope())
        plan_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        placed = estimate(state, plan.candidates)
        estimate_s.append(time.perf_counter() - t)
        landed = sum(1 for c in plan.candidates if (d := placed.of(c)) is not None and d.node is not None)
    return {"nodes": nodes, "pods": pods, "candidates": len(plan.candidates), "landed": landed,
            "plan_median_s": round(statistics.median(plan_s), 3),
            "estimate_median_s": round(statistics.median(estimate_s), 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,5000")
    ap.add_argument("--pods-per-node", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = [measure(n, n * args.pods_per_node, args.runs) for n in map(int, args.sizes.split(","))]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for r in rows:
        ratio = r["estimate_median_s"] / r["plan_median_s"] if r["plan_median_s"] else 0.0
        print(f"{r['nodes']:>6} nodes {r['pods']:>7} pods: {r['candidates']:>5} candidates ({r['landed']} placed); "
              f"plan {r['plan_median_s']:.3f}s, estimate {r['estimate_median_s']:.3f}s ({ratio:.2f}x the plan)")


if __name__ == "__main__":
    main()
