"""Drive a Koordinator oracle case: run the real koord-descheduler (built from its Go module by
tests/cluster/build-koord-descheduler) with the case's DeschedulerConfiguration, LowNodeLoad in its own dry run, and
read which pods it would evict in each descheduling cycle from its log.

koord-descheduler logs in klog's text format only. Each cycle, LowNodeLoad logs one Info line per node pool
("Criteria for nodes under low thresholds and above high thresholds", or "No nodes to process LowNodeLoad"), then
"Evict pod in dry run mode" with pod="namespace/name" for each pod it picks. Cycles are deschedulingInterval (2 s)
apart, so lines less than a second apart belong to one cycle.

Its first cycle may run before the MigrationController's cache has the PodMigrationJobs (its filter then counts
none), so it is left out; the next cycles are compared. Where the case has pods that tie in every sort key, each
cycle may pick others among them (Go's map and sort order): every cycle is checked, and the distinct outcomes are
reported.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from tests.processes import end

MODULE = "github.com/koordinator-sh/koordinator"
VERSION = "v1.8.0"
# The CRDs koord-descheduler needs: jobs (MigrationController), Reservations (it watches them), NodeMetrics
# (LowNodeLoad).
CRD_FILES = ("scheduling.koordinator.sh_podmigrationjobs.yaml", "scheduling.koordinator.sh_reservations.yaml",
             "slo.koordinator.sh_nodemetrics.yaml")

DRY_RUN_EVICTION = "Evict pod in dry run mode"
POOL_MARKERS = ("Criteria for nodes under low thresholds and above high thresholds", "No nodes to process LowNodeLoad",
                "LowNodeLoad is paused and will do nothing.")
# Error lines that are part of the scenarios: a node without a fresh NodeMetric is left out with an error.
EXPECTED_ERRORS = ("NodeMetric has expired", "Failed to get NodeMetric")
_LINE = re.compile(r'^([IWEF])(\d{4}) (\d{2}:\d{2}:\d{2}\.\d+)\s+\d+ [^\]]+\] "((?:[^"\\]|\\.)*)"(.*)$')
_POD = re.compile(r'\bpod="([^"]+)"')


class KoordError(AssertionError):
    pass


@functools.cache
def module_dir() -> tuple[Path | None, str]:
    """Koordinator's module from the Go module proxy (the module cache after the first time), or why not."""
    if shutil.which("go") is None:
        return None, "`go` is not on PATH: Koordinator's module cannot be had"
    try:
        proc = subprocess.run(["go", "mod", "download", "-json", f"{MODULE}@{VERSION}"], capture_output=True,
                              text=True, timeout=600, check=False, cwd=Path(__file__).parent)
    except subprocess.TimeoutExpired:
        return None, f"go mod download {MODULE}@{VERSION} took over 10 minutes"
    try:
        found = json.loads(proc.stdout)
    except ValueError:
        found = {}
    if proc.returncode != 0 or not found.get("Dir"):
        why = found.get("Error") or proc.stderr.strip().splitlines()[-1:] or ["no output"]
        return None, f"go mod download {MODULE}@{VERSION} failed: {str(why)[:200]}"
    return Path(found["Dir"]), ""


def crd_files() -> tuple[list[Path] | None, str]:
    """Koordinator's own CRD manifests (config/crd/bases of the module), or why they cannot be had."""
    root, why = module_dir()
    if root is None:
        return None, why
    files = [root / "config" / "crd" / "bases" / name for name in CRD_FILES]
    missing = [f.name for f in files if not f.exists()]
    if missing:
        return None, f"{MODULE}@{VERSION} has no {', '.join(missing)}"
    return files, ""


def config_for(policy: Path, kubeconfig: Path, interval: str = "2s") -> dict[str, Any]:
    """The case's DeschedulerConfiguration as koord-descheduler runs it here: no leader election, this cluster,
    a short interval, no listener, and LowNodeLoad in its own dry run whatever the case says."""
    doc = yaml.safe_load(policy.read_text())
    if doc.get("kind") != "DeschedulerConfiguration":
        raise KoordError(f"{policy}: not a DeschedulerConfiguration")
    doc.update({"leaderElection": {"leaderElect": False}, "clientConnection": {"kubeconfig": str(kubeconfig)},
                "deschedulingInterval": interval, "healthzBindAddress": "127.0.0.1:0",
                "metricsBindAddress": "127.0.0.1:0"})
    for profile in doc.get("profiles") or []:
        configs = profile.setdefault("pluginConfig", [])
        lnl = next((c for c in configs if c.get("name") == "LowNodeLoad"), None)
        if lnl is None:
            lnl = {"name": "LowNodeLoad", "args": {}}
            configs.append(lnl)
        lnl["args"] = {"apiVersion": "descheduler/v1alpha2", "kind": "LowNodeLoadArgs", **(lnl.get("args") or {}),
                       "dryRun": True}
    return doc


@dataclass
class Cycle:
    started: float  # seconds of the day, from the log
    evicted: set[str]


@dataclass(frozen=True)
class KoordRun:
    cycles: list[frozenset[str]]  # the compared cycles' evictions
    log: str
    seconds: float

    @property
    def outcomes(self) -> set[frozenset[str]]:
        return set(self.cycles)


def _seconds(clock: str) -> float:
    t = datetime.strptime(clock, "%H:%M:%S.%f")
    return t.hour * 3600 + t.minute * 60 + t.second + t.microsecond / 1e6


def parse_log(log: str) -> tuple[list[Cycle], list[str]]:
    """The cycles (each with the pods it would evict) and the unexpected error lines of a koord-descheduler log."""
    cycles: list[Cycle] = []
    errors: list[str] = []
    last_marker = -10.0
    for line in log.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        level, _day, clock, msg, rest = m.groups()
        when = _seconds(clock)
        if msg in POOL_MARKERS:
            if when - last_marker > 1.0 or when < last_marker:  # the next cycle (or past midnight)
                cycles.append(Cycle(when, set()))
            last_marker = when
        elif msg == DRY_RUN_EVICTION and cycles:
            pod = _POD.search(rest)
            if pod:
                cycles[-1].evicted.add(pod.group(1))
        elif level in ("E", "F") and not any(e in msg for e in EXPECTED_ERRORS):
            errors.append(line)
    return cycles, errors


def run_koord(binary: Path, kubeconfig: Path, policy: Path, work: Path, *, cycles: int = 3,
              timeout: float = 90) -> KoordRun:
    """koord-descheduler's dry-run evictions in `cycles` cycles after its first; then it is stopped."""
    config = work / "koord-config.yaml"
    config.write_text(yaml.safe_dump(config_for(policy, kubeconfig)))
    began = time.monotonic()
    proc = subprocess.Popen([str(binary), f"--config={config}", "--secure-port=0", "--v=0"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    watchdog = threading.Timer(timeout, proc.kill)
    watchdog.start()
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if any(f'"{m}"' in line for m in POOL_MARKERS) and len(parse_log("".join(lines))[0]) >= cycles + 2:
                break  # the last compared cycle ended when this one began
    finally:
        watchdog.cancel()
        end(proc)
    log = "".join(lines)
    found, errors = parse_log(log)
    if len(found) < cycles + 2 or errors:
        raise KoordError(f"koord-descheduler: {len(found)} cycle(s) seen, errors {errors[:5]}, exit {proc.returncode}"
                         f"\n{log[-6000:]}")
    compared = [frozenset(c.evicted) for c in found[1:cycles + 1]]
    return KoordRun(compared, log, time.monotonic() - began)
