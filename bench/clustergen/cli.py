"""The command line: plan once, then stream the objects; a per-band summary on request."""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from clustergen.packing import Cluster
from clustergen.planner import plan_cluster
from clustergen.writing import list_object, write_list

DESCRIPTION = "Generate a realistic, deterministic Kubernetes cluster snapshot for benchmarks and tests."


def generate(nodes: int, pods: int, seed: int = 1, zones: int = 3) -> dict[str, Any]:
    """The whole List as one dict (for tests and small clusters; the CLI streams instead)."""
    with _no_gc():
        return list_object(list(plan_cluster(nodes, pods, seed, zones).items()))


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """The builders make millions of acyclic dicts: the cycle collector only costs time (~2x)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def summarize(cluster: Cluster) -> str:
    """Per band: node count and the spread of cpu/memory/pods requests (non-terminal pods) in %."""
    by: dict[str, list[tuple[float, float, float]]] = {}
    for n in cluster.nodes:
        by.setdefault(n.tier, []).append(
            (100 * n.band_cpu / n.alloc_cpu, 100 * n.band_mem / n.alloc_mem, 100 * n.band_pods / n.alloc_pods)
        )
    lines = [f"{'band':<14}{'nodes':>6}  {'cpu% min/avg/max':>18}  {'mem% min/avg/max':>18}  {'pods% min/avg/max':>18}"]
    for tier in ("heavy", "medium", "light", "cordoned", "control-plane", "gpu"):
        rows = by.get(tier)
        if not rows:
            continue
        cols = []
        for k in range(3):
            vals = [r[k] for r in rows]
            cols.append(f"{min(vals):5.1f}/{sum(vals) / len(vals):5.1f}/{max(vals):5.1f}")
        lines.append(f"{tier:<14}{len(rows):>6}  {cols[0]:>18}  {cols[1]:>18}  {cols[2]:>18}")
    phases: dict[str, int] = {}
    for p in cluster.pods:
        phases[p.phase] = phases.get(p.phase, 0) + 1
    lines.append(
        f"pods: {len(cluster.pods)} ({', '.join(f'{k} {v}' for k, v in sorted(phases.items()))}), "
        f"pdbs: {len(cluster.pdbs)}"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=DESCRIPTION.split("\n\n", 1)[0])
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--pods", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--zones", type=int, default=3)
    ap.add_argument("-o", "--output", choices=("json", "yaml"), default="json")
    ap.add_argument("--out", metavar="FILE", help="write here instead of standard output")
    ap.add_argument("--indent", type=int, default=4, help="json indent like kubectl (0: compact, ~5x faster)")
    ap.add_argument("--no-managed-fields", action="store_true", help="leave metadata.managedFields out")
    ap.add_argument("--summary", action="store_true", help="print the per-band utilization to stderr")
    args = ap.parse_args(argv)
    with _no_gc():
        try:
            cluster = plan_cluster(args.nodes, args.pods, args.seed, args.zones)
        except ValueError as e:
            ap.error(str(e))
        if args.summary:
            print(summarize(cluster), file=sys.stderr)
        pending = sum(1 for p in cluster.pods if p.node is None)
        if pending > max(10, len(cluster.pods) // 100):
            print(
                f"warning: {pending} pods did not fit and are Pending; the nodes are too few for --pods",
                file=sys.stderr,
            )
        items = cluster.items(managed_fields=not args.no_managed_fields)
        if args.out:
            with open(args.out, "w", encoding="utf-8", buffering=1 << 20) as f:
                write_list(items, f, args.output, args.indent)
        else:
            try:
                write_list(items, sys.stdout, args.output, args.indent)
                sys.stdout.flush()
            except BrokenPipeError:  # e.g. piped into head: stop quietly, like kubectl
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return 1
    return 0

