#!/usr/bin/env python3
"""Placement estimate benchmark: where the replacements of a LowNodeUtilization plan would land, on generated
clusters (bench/gencluster.py through bench/plugins.build_state) of 1,000 and 5,000 nodes at 30 pods per node.
Not a timed test: prints, per size, the median seconds of the plan with the futility check (the default) and with
--keep-futile, side by side in each round, the candidates and futile moves of each, and the estimate alone.

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

from kubectl_desched.framework.placement import estimate
from kubectl_desched.framework.runner import Scope, run
from kubectl_desched.plugins import full_registry
from plugins import _policy, build_state


def measure(nodes: int, pods: int, runs: int) -> dict[str, float | int]:
    """The plan with the futility check (the default) and without (--keep-futile), side by side in each round;
    both work the estimate out move by move, so the difference is the check and the moves it takes back."""
    state, _times = build_state(nodes, pods, seed=1)
    policy = _policy(full_registry(), full_registry().get("LowNodeUtilization"))
    plan_s, keep_s, estimate_s = [], [], []
    for _ in range(runs):
        for keep, times in ((False, plan_s), (True, keep_s)):
            policy.limits.keep_futile = keep
            t = time.perf_counter()
            plan = run(policy, state, Scope())
            times.append(time.perf_counter() - t)
            if keep:
                kept_plan = plan
            else:
                default_plan = plan
        t = time.perf_counter()
        placed = estimate(kept_plan.state, kept_plan.candidates)  # the estimate alone, as it was run before
        estimate_s.append(time.perf_counter() - t)
    landed = sum(1 for c in kept_plan.candidates if (d := placed.of(c)) is not None and d.node is not None)
    return {"nodes": nodes, "pods": pods, "candidates": len(default_plan.candidates),
            "futile": len(default_plan.kept_futile), "candidates_keep_futile": len(kept_plan.candidates),
            "landed": landed, "plan_median_s": round(statistics.median(plan_s), 3),
            "plan_keep_futile_median_s": round(statistics.median(keep_s), 3),
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
        ratio = r["plan_median_s"] / r["plan_keep_futile_median_s"] if r["plan_keep_futile_median_s"] else 0.0
        print(f"{r['nodes']:>6} nodes {r['pods']:>7} pods: {r['candidates']:>5} candidates, {r['futile']} kept as "
              f"futile ({r['candidates_keep_futile']} with --keep-futile, {r['landed']} placed); plan "
              f"{r['plan_median_s']:.3f}s, with --keep-futile {r['plan_keep_futile_median_s']:.3f}s ({ratio:.2f}x); "
              f"the estimate alone {r['estimate_median_s']:.3f}s")


if __name__ == "__main__":
    main()
