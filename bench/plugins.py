#!/usr/bin/env python3
"""Per-plugin benchmark: every registered Deschedule and Balance plugin (in-tree and installed out-of-tree ones) on one
generated cluster, by default 5,000 nodes and 150,000 pods. Not a timed test: it prints the median seconds of a few
runs per plugin and the candidates each found, and the time to build the cluster state, reported apart.

    python bench/plugins.py [--nodes 5000] [--pods 150000] [--runs 3] [--plugin NAME ...] [--json]

The cluster comes from bench/clustergen (imported, objects streamed, no file), then a deterministic pass adds
what the generator leaves rare or absent so each plugin has real work: required anti-affinity, DoNotSchedule spread
constraints, required node affinity some nodes no longer meet, nodes with a NoSchedule taint, pods with many
restarts, old Pending pods. Each plugin runs through the real runner (policy -> DefaultEvictor -> limits -> plan) with
the args `kubectl desched balance|deschedule --plugin NAME` would give it, or those in BENCH_ARGS; the state is reset
between runs. A plugin whose args cannot default and has no BENCH_ARGS entry gets a "no bench args" line, one that
needs other kinds of objects gets them from EXTRA_KINDS (NodeMetric for LowNodeLoad) or a "no bench data" line.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
import zlib
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import clustergen

from kubectl_desched.cli.plugin_flags import PluginFlags, build_policy
from kubectl_desched.errors import DeschedError
from kubectl_desched.framework.policy_decoder import Policy
from kubectl_desched.framework.registry import PluginSpec, Registry
from kubectl_desched.framework.runner import Scope, run
from kubectl_desched.model.objects import Node, Pod, node_from_json, pdb_from_json, pod_from_json
from kubectl_desched.model.quantity import format_resource
from kubectl_desched.model.state import ClusterState
from kubectl_desched.plugins import full_registry

# Args per plugin where the CLI's defaults (what `--plugin NAME` gives) are not what a benchmark should run. The
# others run with those defaults; a new plugin whose args cannot default needs an entry here.
BENCH_ARGS: dict[str, dict[str, Any]] = {
    "LowNodeUtilization": {"thresholds": {"cpu": 20, "memory": 20, "pods": 20},
                           "targetThresholds": {"cpu": 50, "memory": 50, "pods": 50}},
    "HighNodeUtilization": {"thresholds": {"cpu": 20, "memory": 20, "pods": 20}},
    # The CLI's default (Pending for over a day) finds only pods bound to a node, which the generator leaves rare.
    "PodLifeTime": {"maxPodLifeTimeSeconds": 90 * 86400},
}
# Filter plugins are not run on their own: one of them filters every pod of every run above.
SKIP_POINTS = ("filter", "preEvictionFilter")


def _seasoned(objects: Iterable[dict[str, Any]], seed: int) -> Iterable[dict[str, Any]]:
    """The generator's objects with the cases it leaves rare, changed deterministically and in proportions a
    neglected cluster might show: ~2% of workers tainted, some workloads with required anti-affinity or node
    affinity, DoNotSchedule spread constraints, restart storms and week-old Pending pods."""
    rng = random.Random(seed)
    for obj in objects:
        kind = obj.get("kind")
        if kind == "Node":
            labels = obj["metadata"].get("labels", {})
            worker = "node-role.kubernetes.io/control-plane" not in labels and not obj["spec"].get("unschedulable")
            if worker and rng.random() < 0.02:
                obj["spec"].setdefault("taints", []).append(
                    {"key": "maintenance", "value": "kernel-upgrade", "effect": "NoSchedule"})
        elif kind == "Pod":
            _season_pod(obj, rng)
        yield obj


def _workload_key(obj: dict[str, Any]) -> int:
    """Stable per owner, so a whole workload gets the same change (as a template edit would)."""
    owners = obj["metadata"].get("ownerReferences") or [{}]
    return zlib.crc32(f"{obj['metadata'].get('namespace')}/{owners[0].get('name')}".encode()) % 1000


def _season_pod(obj: dict[str, Any], rng: random.Random) -> None:
    spec, meta, status = obj["spec"], obj["metadata"], obj.get("status", {})
    owners = meta.get("ownerReferences") or [{}]
    if owners[0].get("kind") != "ReplicaSet":
        return
    key = _workload_key(obj)
    for c in spec.get("topologySpreadConstraints") or ():
        if key % 2 == 0:
            c["whenUnsatisfiable"] = "DoNotSchedule"
    affinity = spec.get("affinity") or {}
    preferred = affinity.get("podAntiAffinity", {}).get("preferredDuringSchedulingIgnoredDuringExecution")
    if preferred and key % 3 == 0:
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution":
                                       [p["podAffinityTerm"] for p in preferred]}
    elif key % 97 == 0:  # pinned to instance types the cluster mostly replaced
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                   "values": ["m5.4xlarge", "r5.2xlarge"]}]}]}}}
    if status.get("phase") == "Running" and rng.random() < 0.004:
        for cs in (status.get("containerStatuses") or [])[:1]:
            cs["restartCount"] = rng.randint(20, 400)
    elif status.get("phase") == "Pending" and rng.random() < 0.5:
        meta["creationTimestamp"] = clustergen.ts(clustergen.NOW - rng.randint(2, 9) * clustergen.DAY)


def node_metrics(nodes: list[Node], pods: list[Pod], seed: int) -> list[dict[str, Any]]:
    """Koordinator NodeMetric objects (slo.koordinator.sh/v1alpha1), one per node, fresh at the snapshot's time:
    pod usage a random share of requests (hot nodes run hotter), plus system usage."""
    rng = random.Random(seed)
    by_node: dict[str, list[Pod]] = {}
    for p in pods:
        if p.node_name and not p.is_terminal:
            by_node.setdefault(p.node_name, []).append(p)
    stamp = clustergen.ts(clustergen.NOW - 30)
    out = []
    for n in nodes:
        heat = rng.uniform(0.3, 1.1)
        pods_metric = [{"namespace": p.namespace, "name": p.name, "podUsage": {"resources": {
            "cpu": format_resource("cpu", p.requests.get("cpu", 0.0) * heat * rng.uniform(0.5, 1.2)),
            "memory": format_resource("memory", p.requests.get("memory", 0.0) * rng.uniform(0.6, 1.0))}}}
            for p in by_node.get(n.name, ())]
        system = {"cpu": format_resource("cpu", n.allocatable.get("cpu", 0.0) * 0.04),
                  "memory": format_resource("memory", n.allocatable.get("memory", 0.0) * 0.06)}
        out.append({"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": n.name},
                    "status": {"updateTime": stamp, "nodeMetric": {"systemUsage": {"resources": system}},
                               "podsMetric": pods_metric}})
    return out


# Other kinds a plugin may need (Policy.required_kinds), generated from the cluster on first use.
EXTRA_KINDS: dict[str, Callable[[list[Node], list[Pod], int], list[dict[str, Any]]]] = {"NodeMetric": node_metrics}


def build_state(nodes: int, pods: int, seed: int) -> tuple[ClusterState, dict[str, float]]:
    """Stream the generator's objects into the lean model: generation and parsing are timed apart, as a live read
    would replace the first and keep the second."""
    times = {"plan": 0.0, "generate": 0.0, "parse": 0.0, "index": 0.0}
    t0 = time.perf_counter()
    cluster = clustergen.plan_cluster(nodes, pods, seed)
    times["plan"] = time.perf_counter() - t0
    node_objs, pod_objs, pdb_objs = [], [], []
    parsers = {"Node": (node_from_json, node_objs), "Pod": (pod_from_json, pod_objs),
               "PodDisruptionBudget": (pdb_from_json, pdb_objs)}
    items = iter(_seasoned(cluster.items(managed_fields=False), seed))
    while True:
        t = time.perf_counter()
        obj = next(items, None)
        t1 = time.perf_counter()
        times["generate"] += t1 - t
        if obj is None:
            break
        parse, into = parsers[obj["kind"]]
        into.append(parse(obj))
        times["parse"] += time.perf_counter() - t1
    t = time.perf_counter()
    state = ClusterState(node_objs, pod_objs, pdb_objs, source="bench/gencluster.py",
                         now=datetime.fromtimestamp(clustergen.NOW, UTC))
    times["index"] = time.perf_counter() - t
    return state, times


def _policy(registry: Registry, spec: PluginSpec) -> Policy:
    """The one-plugin policy `kubectl desched balance|deschedule --plugin NAME [--args NAME=BENCH_ARGS]` runs."""
    point = "deschedule" if "deschedule" in spec.points else "balance"
    args = (f"{spec.name}={json.dumps(BENCH_ARGS[spec.name])}",) if spec.name in BENCH_ARGS else ()
    return build_policy(registry, PluginFlags(plugins=(spec.name,), plugin_args=args), point, [])


def bench(registry: Registry, state: ClusterState, names: list[str] | None, runs: int,
          seed: int) -> list[dict[str, Any]]:
    rows = []
    for spec in registry:
        if all(p in SKIP_POINTS for p in spec.points) or (names and spec.name not in names):
            continue
        row: dict[str, Any] = {"plugin": spec.name, "origin": spec.origin.split(" (")[0],
                               "point": "deschedule" if "deschedule" in spec.points else "balance"}
        rows.append(row)
        try:
            policy = _policy(registry, spec)
        except DeschedError as e:
            row["skipped"] = f"no bench args: {e} (add it to BENCH_ARGS in bench/plugins.py)"
            continue
        missing = [k for k in sorted(policy.required_kinds()) if k not in state.extra and k not in EXTRA_KINDS]
        if missing:
            row["skipped"] = f"no bench data: needs {', '.join(missing)} (add a builder to EXTRA_KINDS)"
            continue
        for kind in sorted(policy.required_kinds() - set(state.extra)):
            state.extra = {**state.extra, kind: EXTRA_KINDS[kind](list(state.nodes.values()), state.pods, seed)}
        seconds, cpu = [], []
        for _ in range(runs):
            gc.collect()
            t, c = time.perf_counter(), time.process_time()
            plan = run(policy, state, Scope())
            seconds.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            row["candidates"] = len(plan.candidates)
            row["errors"] = plan.errors
        row["seconds"] = seconds
        row["median"] = statistics.median(seconds)
        row["cpu_median"] = statistics.median(cpu)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=150000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=3, help="runs per plugin; the median is reported")
    ap.add_argument("--plugin", action="append", help="only this plugin (repeatable)")
    ap.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    args = ap.parse_args(argv)

    gc.disable()  # millions of acyclic objects: as in clustergen, the cycle collector only costs time here
    state, times = build_state(args.nodes, args.pods, args.seed)
    gc.enable()
    gc.freeze()  # the state lives for the whole run: keep it out of the collections the plugins trigger
    registry = full_registry()
    for line in registry.broken:
        print(f"warning: {line}", file=sys.stderr)
    rows = bench(registry, state, args.plugin, args.runs, args.seed)
    if args.json:
        print(json.dumps({"nodes": len(state.nodes), "pods": len(state.pods), "state": times, "plugins": rows},
                         indent=2))
        return 0
    print(f"cluster: {len(state.nodes):,} nodes, {len(state.pods):,} pods, {len(state.pdbs):,} PDBs (seed {args.seed})")
    print(f"state build: parse {times['parse']:.1f}s + index {times['index']:.2f}s "
          f"(generating the objects: plan {times['plan']:.1f}s + build {times['generate']:.1f}s, not part of a run)")
    width = max(len(r["plugin"]) for r in rows) if rows else 10
    print(f"{'plugin':<{width}}  {'point':<10}  {'median s':>8}  {'cpu s':>6}  {'runs s':<20}  {'candidates':>10}")
    for r in rows:
        if "skipped" in r:
            print(f"{r['plugin']:<{width}}  {r['point']:<10}  {r['skipped']}")
            continue
        each = " ".join(f"{s:.2f}" for s in r["seconds"])
        errors = f"  errors: {'; '.join(r['errors'])}" if r["errors"] else ""
        print(f"{r['plugin']:<{width}}  {r['point']:<10}  {r['median']:>8.2f}  {r['cpu_median']:>6.2f}  {each:<20}  "
              f"{r['candidates']:>10,}"
              f"{errors}")
    timed = [r for r in rows if "median" in r]
    if timed:
        slowest = max(timed, key=lambda r: r["median"])
        print(f"slowest: {slowest['plugin']} {slowest['median']:.2f}s wall, {slowest['cpu_median']:.2f}s cpu "
              "(target: under 2s; on a shared machine cpu is what the plugin itself used)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
