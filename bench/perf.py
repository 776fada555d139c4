#!/usr/bin/env python3
"""kubectl-desched at cluster scale, against kubectl and json.load on the same data, side by side.

For each scale (by default 1/4, 1/2 and all of 5,000 nodes / 150,000 pods) it generates the cluster
with bench/gencluster.py, writes it as a kubectl-style JSON snapshot, loads it into the tests' real
kube-apiserver + etcd (tests/cluster/localcluster.py), and times, interleaved, several runs each:

  live      kubectl get pods -A -o json > /dev/null            (kubectl from tests/cluster/build-binaries)
            kubectl-desched balance --dry-run=client -o json -A (LowNodeUtilization)
            kubectl-desched explain node NODE                    (the most loaded node, fast path)
  snapshot  python -c 'json.load(open(FILE))'
            kubectl-desched run --from-file FILE --policy lownodeutilization.yaml -o json

and prints medians, peak RSS and ratios as a Markdown table (the README's Performance section).
Generated snapshots and loaded etcd data are cached in --work; a rerun only measures.

    .venv/bin/python bench/perf.py [--scales 0.25,0.5,1] [--runs 3] [--work DIR] [--only live|snapshot]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import apiload  # noqa: E402
import gencluster  # noqa: E402

BIN = Path(os.environ.get("KDESCHED_BIN_DIR") or Path.home() / ".cache/kubectl-desched/bin")
NODES, PODS = 5000, 150_000
POLICY = """apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
  - name: balance
    pluginConfig:
      - name: DefaultEvictor
      - name: LowNodeUtilization
        args:
          thresholds: {cpu: 20, memory: 20, pods: 20}
          targetThresholds: {cpu: 50, memory: 50, pods: 50}
    plugins:
      balance:
        enabled: [LowNodeUtilization]
"""


def bin_dir() -> Path:
    """The newest build of tests/cluster/build-binaries (a directory per version)."""
    if (BIN / "kube-apiserver").exists():
        return BIN
    builds = sorted(p for p in BIN.glob("*") if (p / "kube-apiserver").exists())
    if not builds:
        sys.exit(f"error: no kube-apiserver under {BIN}: run tests/cluster/build-binaries")
    return builds[-1]


@dataclass
class Sample:
    seconds: float
    rss: int  # peak resident set, bytes


@dataclass
class Timings:
    samples: dict[str, list[Sample]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # name -> why it was not measured

    def add(self, name: str, s: Sample) -> None:
        self.samples.setdefault(name, []).append(s)

    def median(self, name: str) -> float:
        return statistics.median(s.seconds for s in self.samples[name])

    def rss(self, name: str) -> int:
        return max(s.rss for s in self.samples[name])


# Runs the command in a child of this small process and reports the child's wall time and peak RSS. Measuring
# from perf.py itself would not do: a child's ru_maxrss starts from the RSS of the process it was forked from.
_TIMER = """
import os, sys, time
began = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"\\n@perf {time.perf_counter() - began} {usage.ru_maxrss * 1024}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def measure(cmd: Sequence[str], env: dict[str, str] | None = None) -> Sample:
    """Wall time and peak RSS of one command; stdout goes to /dev/null, as in `> /dev/null`."""
    with tempfile.TemporaryFile() as err:
        code = subprocess.run([sys.executable, "-c", _TIMER, *cmd], stdout=subprocess.DEVNULL, stderr=err,
                              env=env).returncode
        err.seek(0)
        text = err.read().decode(errors="replace")
    if code != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {code}: {text[-2000:]}")
    seconds, rss = text.rstrip().rsplit("\n", 1)[-1].split()[1:]
    return Sample(float(seconds), int(rss))


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def available_memory() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


# Peak RSS per pod seen at a smaller scale, to skip a command that would not fit in memory (kubectl and
# json.load hold the whole list: at 150,000 pods kubectl get -o json would need ~25 GB).
PER_POD: dict[str, float] = {}


def affordable(t: Timings, name: str, pods: int) -> bool:
    need = PER_POD.get(name, 0.0) * pods * 1.1
    if need and need > available_memory() - (2 << 30):
        t.skipped[name] = f"not run: needs ~{need / 2**30:.0f} GB, {available_memory() / 2**30:.0f} GB available"
        log(f"  {name}: {t.skipped[name]}")
        return False
    return True


def remember_memory(t: Timings, name: str, pods: int) -> None:
    if name in t.samples:
        PER_POD[name] = t.rss(name) / pods


def snapshot_file(work: Path, nodes: int, pods: int) -> Path:
    path = work / f"snapshot-{nodes}-{pods}.json"
    if not path.exists():
        log(f"generating {path}")
        tmp = path.with_suffix(".tmp")
        subprocess.run([sys.executable, str(HERE / "gencluster.py"), "--nodes", str(nodes), "--pods", str(pods),
                        "--out", str(tmp)], check=True)
        tmp.rename(path)
    return path


DESCHED = [str(Path(sys.executable).with_name("kubectl-desched"))]  # then the --baseline build, if any


def desched() -> str:
    return DESCHED[0]


def builds() -> list[tuple[str, str]]:
    """(suffix of the timing's name, kubectl-desched executable) for this build and the --baseline one."""
    return [("", DESCHED[0])] + [(" @baseline", exe) for exe in DESCHED[1:]]


def bench_snapshot(work: Path, nodes: int, pods: int, runs: int, t: Timings) -> None:
    path = snapshot_file(work, nodes, pods)
    policy = work / "lownodeutilization.yaml"
    policy.write_text(POLICY)
    load = [sys.executable, "-c", "import json, sys; json.load(open(sys.argv[1]))", str(path)]
    plain = affordable(t, "json.load", pods)
    for i in range(runs):
        log(f"  snapshot run {i + 1}/{runs}")
        if plain:
            t.add("json.load", measure(load))
        for suffix, exe in builds():
            t.add("run --from-file" + suffix, measure([exe, "run", "--from-file", str(path), "--policy", str(policy),
                                                       "-o", "json"]))
    with (work / f"run-{nodes}-{pods}.json").open("w") as f:
        subprocess.run([desched(), "run", "--from-file", str(path), "--policy", str(policy), "-o", "json"],
                       stdout=f, check=True)


def loaded_cluster(work: Path, nodes: int, pods: int) -> apiload.LocalCluster:
    """A started cluster holding the generated objects; the etcd data is kept for the next run."""
    cdir = work / f"cluster-{nodes}-{pods}"
    marker = cdir / "loaded"
    if not marker.exists():
        shutil.rmtree(cdir, ignore_errors=True)
    cluster = apiload.bench_cluster(bin_dir(), cdir)
    cluster.start()
    try:
        if not marker.exists():
            log(f"loading {nodes} nodes / {pods} pods into the apiserver at {cluster.server}")
            began = time.monotonic()
            with gencluster._no_gc():
                plan = gencluster.plan_cluster(nodes, pods)
                n = apiload.load(cluster, plan.items(), log=log)
            marker.write_text(f"{n} objects in {time.monotonic() - began:.0f}s\n")
            log(f"  {marker.read_text().strip()}")
        deadline = time.monotonic() + 600
        while apiload.served_pods(cluster) < pods:  # the watch cache may still be taking them in
            if time.monotonic() > deadline:
                raise RuntimeError(f"the apiserver serves {apiload.served_pods(cluster)} pods, not {pods}")
            time.sleep(2)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def busiest_overutilized_node(out: Path) -> str:
    doc = json.loads(out.read_text())
    rows = [r for r in doc["nodes"] if r["class"].get("LowNodeUtilization") == "overutilized"] or doc["nodes"]
    return max(rows, key=lambda r: r["now"]["pods"])["name"]


def bench_live(work: Path, nodes: int, pods: int, runs: int, t: Timings) -> str:
    cluster = loaded_cluster(work, nodes, pods)
    try:
        env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
        kubectl = [str(cluster.bin_dir / "kubectl"), f"--cache-dir={cluster.work_dir / 'kubectl-cache'}"]
        get = [*kubectl, "get", "pods", "-A", "-o", "json"]
        balance = ["balance", "--dry-run=client", "-o", "json", "-A"]
        out = work / f"balance-{nodes}-{pods}.json"
        with out.open("w") as f:
            subprocess.run([desched(), *balance], stdout=f, env=env, check=True)
        node = busiest_overutilized_node(out)
        plain = affordable(t, "kubectl get pods", pods)
        for i in range(runs):
            log(f"  live run {i + 1}/{runs}")
            if plain:
                t.add("kubectl get pods", measure(get, env))
            for suffix, exe in builds():
                t.add("balance" + suffix, measure([exe, *balance], env))
                t.add("explain node" + suffix, measure([exe, "explain", "node", node], env))
        return node
    finally:
        cluster.stop()


def table(results: list[dict[str, Any]]) -> str:
    def cell(r: dict[str, Any], name: str) -> str:
        if name in r.get("skipped", {}):
            return r["skipped"][name]
        if name not in r["median"]:
            return "-"
        return f"{r['median'][name]:.2f} s / {r['rss'][name] / 2**20:,.0f} MB"

    def ratio(r: dict[str, Any], a: str, b: str) -> str:
        return f"{r['median'][a] / r['median'][b]:.2f}" if a in r["median"] and b in r["median"] else "-"

    head = ("| nodes / pods | kubectl get pods -A -o json | balance --dry-run=client -o json | ratio "
            "| explain node | json.load of the snapshot | run --from-file | ratio |")
    lines = [head, "|" + "---|" * 8]
    for r in results:
        for suffix in ("", " @baseline"):
            if "balance" + suffix not in r["median"] and "run --from-file" + suffix not in r["median"]:
                continue
            label = f"{r['nodes']:,} / {r['pods']:,}" + (" (baseline)" if suffix else "")
            lines.append(
                f"| {label} | {cell(r, 'kubectl get pods')} | {cell(r, 'balance' + suffix)} "
                f"| {ratio(r, 'balance' + suffix, 'kubectl get pods')} | {cell(r, 'explain node' + suffix)} "
                f"| {cell(r, 'json.load')} | {cell(r, 'run --from-file' + suffix)} "
                f"| {ratio(r, 'run --from-file' + suffix, 'json.load')} |")
    return "\n".join(lines)


def same_plan(work: Path, nodes: int, pods: int) -> str:
    """The live plan and the snapshot's: the same objects must give the same candidates."""
    live, snap = work / f"balance-{nodes}-{pods}.json", work / f"run-{nodes}-{pods}.json"
    if not (live.exists() and snap.exists()):
        return "not compared"

    def key(path: Path) -> list[tuple[str, str, str]]:
        return [(c["namespace"], c["pod"], c["reason"]) for c in json.loads(path.read_text())["candidates"]]

    a, b = key(live), key(snap)
    return f"same {len(a)} candidates" if a == b else f"DIFFERENT: {len(a)} live, {len(b)} from the snapshot"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--nodes", type=int, default=NODES)
    ap.add_argument("--pods", type=int, default=PODS)
    ap.add_argument("--scales", default="0.25,0.5,1", help="fractions of --nodes/--pods (default 0.25,0.5,1)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", choices=("live", "snapshot"))
    ap.add_argument("--work", type=Path, default=Path.home() / ".cache/kubectl-desched/bench",
                    help="generated snapshots and etcd data, kept between runs")
    ap.add_argument("--results", type=Path, help="also write the figures as JSON here")
    ap.add_argument("--exe", default=DESCHED[0], help="the kubectl-desched to measure (default: this venv's)")
    ap.add_argument("--baseline", metavar="EXE", help="another kubectl-desched to time side by side (before/after)")
    args = ap.parse_args(argv)
    DESCHED[0] = args.exe
    if args.baseline:
        DESCHED.append(args.baseline)
    for exe in DESCHED:
        if not os.access(exe, os.X_OK):
            ap.error(f"{exe} is not executable (pip install -e . in this virtualenv)")
    args.work.mkdir(parents=True, exist_ok=True)
    results = []
    for scale in (float(s) for s in args.scales.split(",")):
        nodes, pods = round(args.nodes * scale), round(args.pods * scale)
        log(f"{nodes} nodes / {pods} pods")
        t = Timings()
        node = None
        if args.only != "live":
            bench_snapshot(args.work, nodes, pods, args.runs, t)
        if args.only != "snapshot":
            node = bench_live(args.work, nodes, pods, args.runs, t)
        plans = same_plan(args.work, nodes, pods)
        log(f"  live plan vs snapshot plan: {plans}")
        for name in ("json.load", "kubectl get pods"):
            remember_memory(t, name, pods)
        results.append({"nodes": nodes, "pods": pods, "runs": args.runs, "explained_node": node, "plans": plans,
                        "skipped": t.skipped,
                        "median": {k: t.median(k) for k in t.samples},
                        "rss": {k: t.rss(k) for k in t.samples},
                        "seconds": {k: [s.seconds for s in v] for k, v in t.samples.items()}})
        print(table(results[-1:]), flush=True)
        if args.results:
            args.results.write_text(json.dumps(results, indent=2) + "\n")
    print()
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
