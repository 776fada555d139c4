"""examples/sim-cluster as a user runs it: start, export the KUBECONFIG it prints, `kubectl desched balance -A`,
then stop it (with its stop subcommand, or Ctrl-C)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from desched import ROOT, as_json, desched
from simcluster import wait_until

from tests.gobuilds import built

pytestmark = pytest.mark.integration

SCRIPT = ROOT / "examples" / "sim-cluster"


class Example:
    """The script in the background, its output read line by line."""

    def __init__(self, directory: Path, metrics: bool = False) -> None:
        self.directory = directory
        self.proc = subprocess.Popen([sys.executable, str(SCRIPT), "--dir", str(directory),
                                      *([] if metrics else ["--no-metrics"])],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def wait_for(self, text: str, timeout: float = 300) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None and self.lines.empty():
                    break
                continue
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"no {text!r} from examples/sim-cluster; output:\n{''.join(self.seen)}")

    def components(self) -> dict[str, int]:
        return json.loads((self.directory / "sim-cluster.json").read_text())["components"]  # type: ignore[no-any-return]

    def finish(self, timeout: float = 90) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


@pytest.fixture
def example(tmp_path: Path) -> Iterator[Example]:
    built("build-binaries", "kube-apiserver")  # skips with the build's reason, as the other live tests do
    built("build-sim", "kwok")
    ex = Example(tmp_path / "sim")
    try:
        yield ex
    finally:
        if ex.proc.poll() is None:
            ex.proc.send_signal(signal.SIGTERM)
            ex.finish()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purpose
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def _pods(kubectl: Path, kubeconfig: str) -> list[dict[str, Any]]:
    got = subprocess.run([str(kubectl), f"--kubeconfig={kubeconfig}", "get", "pods", "-A", "-o", "json"],
                         capture_output=True, text=True, check=True)
    return json.loads(got.stdout)["items"]  # type: ignore[no-any-return]


def _running(pod: dict[str, Any]) -> bool:
    return not pod["metadata"].get("deletionTimestamp") and any(
        c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions") or [])


def test_balance_all_namespaces_end_to_end_then_stop(example: Example) -> None:
    kubeconfig = example.wait_for("export KUBECONFIG=").split("=", 1)[1].strip()
    example.wait_for("Stop with Ctrl-C")
    kubectl = built("build-binaries", "kubectl")
    before = _pods(kubectl, kubeconfig)
    assert len(before) == 24 and all(map(_running, before))
    nodes = {p["spec"]["nodeName"] for p in before if p["metadata"]["namespace"] != "monitoring"}
    assert nodes == {"worker-1", "worker-2", "worker-3"}  # the late nodes only got the DaemonSet

    plan = as_json(desched(kubeconfig, "balance", "-A", "--dry-run", "-o", "json"))
    classes = {n["name"]: n["class"]["LowNodeUtilization"] for n in plan["nodes"]}
    # which of the first three nodes the scheduler filled most varies from start to start
    busy = {n for n, c in classes.items() if c == "over-utilized"}
    assert len(busy) >= 2 and busy <= {"worker-1", "worker-2", "worker-3"}, classes
    assert classes["worker-4"] == classes["worker-5"] == "under-utilized"
    assert plan["candidates"] and {c["namespace"] for c in plan["candidates"]} <= {"shop", "payments", "batch"}
    # more web/cart pods than their budgets allow at once: kept, with the budget's reason
    assert any(k["kind"] == "pdb" and "PodDisruptionBudget" in k["why"] for k in plan["kept"])

    # the budgets hold most pods back in one round; the plan says how many rounds reach the goal, tried in memory
    (advice,) = [a for a in plan["advice"] if "step" not in a]  # beside it: --surge for the budgets' pods
    assert advice["suggestion"] is not None, (advice, plan["kept"])
    assert advice["suggestion"]["flags"] == "--rounds 2" and advice["suggestion"]["overAfter"] == []
    done = desched(kubeconfig, "balance", "-A", "--yes", "--rounds", "2", "--no-pager", "--timeout", "1m",
                   timeout=300)
    assert done.returncode == 0, done.stderr
    rounds = [line for line in done.stderr.splitlines() if line.startswith(("round ", "after round "))]
    print("\n".join(rounds))
    assert len(rounds) == 3 and all("evicted; " in line for line in rounds[:2]), rounds
    # what the advice promised, checked on the cluster itself: read again, nothing is over target
    assert rounds[2].startswith("after round 2: no node over target"), rounds
    wait_until(lambda: (pods := _pods(kubectl, kubeconfig)) and len(pods) == 24 and all(map(_running, pods)), 120,
               "every evicted pod replaced and Running")
    after = _pods(kubectl, kubeconfig)
    assert {p["spec"]["nodeName"] for p in after} >= {"worker-4", "worker-5"}  # replacements went to the new nodes
    again = as_json(desched(kubeconfig, "balance", "-A", "--dry-run", "-o", "json"))
    assert again["candidates"] == [] and again["advice"] == []

    components = example.components()
    assert set(components) == {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}
    stopped = subprocess.run([sys.executable, str(SCRIPT), "stop", "--dir", str(example.directory)],
                             capture_output=True, text=True, timeout=120, check=False)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stdout + stopped.stderr
    assert example.finish() == 0
    assert not any(_alive(pid) for pid in components.values())
    assert not (example.directory / "sim-cluster.json").exists()


def test_ctrl_c_stops_every_component(example: Example) -> None:
    example.wait_for("Stop with Ctrl-C")
    components = example.components()
    example.proc.send_signal(signal.SIGINT)
    assert example.finish() == 0
    assert not any(_alive(pid) for pid in components.values())
    again = subprocess.run([sys.executable, str(SCRIPT), "stop", "--dir", str(example.directory)],
                           capture_output=True, text=True, timeout=60, check=False)
    assert again.returncode == 0 and "no sim-cluster is running" in again.stdout


def _ready_replicas(kubectl: Path, kubeconfig: str, name: str) -> tuple[int, int]:
    got = subprocess.run([str(kubectl), f"--kubeconfig={kubeconfig}", "get", "deploy", name, "-n", "shop", "-o",
                          "json"], capture_output=True, text=True, check=True)
    d = json.loads(got.stdout)
    return (d.get("status") or {}).get("readyReplicas") or 0, d["spec"]["replicas"]


def test_the_walkthrough_moves_checkout_and_empties_a_node(example: Example) -> None:
    """docs/guide/simulated-cluster.md's "Moves that need a step first", as written: checkout moves replacement
    first with its ready count never below 2, --surge balances in one round, and HighNodeUtilization with --cordon
    empties the node it cordons, which stays cordoned with the line that says so."""
    kubeconfig = example.wait_for("export KUBECONFIG=").split("=", 1)[1].strip()
    example.wait_for("Stop with Ctrl-C")
    kubectl = built("build-binaries", "kubectl")
    seen: list[tuple[int, int]] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.append(_ready_replicas(kubectl, kubeconfig, "checkout"))
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    moved = desched(kubeconfig, "balance", "-n", "shop", "-l", "app=checkout", "--surge", "--yes", "--no-pager",
                    "-o", "json", timeout=300)
    done.set()
    watcher.join(timeout=10)
    assert moved.returncode == 0, moved.stderr
    doc = json.loads(moved.stdout)
    # one checkout pod or both, as the scheduler placed them on this start: each replacement first
    assert doc["candidates"] and {(c["pod"].split("-")[0], c["method"]) for c in doc["candidates"]} == \
        {("checkout", "surge")}, doc["candidates"]
    assert {e["result"] for e in doc["evictions"]} == {"moved"}, doc["evictions"]
    assert seen and min(r for r, _ in seen) >= 2 and max(n for _, n in seen) == 3, seen
    assert _ready_replicas(kubectl, kubeconfig, "checkout")[1] == 2

    one = desched(kubeconfig, "balance", "-A", "--surge", "--yes", "--no-pager", "-o", "json", timeout=300)
    assert one.returncode == 0, one.stderr
    # what the rest takes varies with the start: whatever was planned went as asked
    assert all(e["result"] in ("evicted", "moved") for e in json.loads(one.stdout).get("evictions", ())), one.stdout
    wait_until(lambda: (pods := _pods(kubectl, kubeconfig)) and len(pods) == 24 and all(map(_running, pods)), 120,
               "every moved pod replaced and Running")

    emptied = desched(kubeconfig, "balance", "-A", "--plugin", "HighNodeUtilization", "--cordon", "--yes",
                      "--no-pager", "-o", "json", timeout=300)
    assert emptied.returncode == 0, emptied.stderr
    plan = json.loads(emptied.stdout)
    empty = [e["node"] for e in plan.get("emptying", ()) if e["empty"] and e["moved"]]
    wait_until(lambda: (pods := _pods(kubectl, kubeconfig)) and len(pods) == 24 and all(map(_running, pods)), 120,
               "every evicted pod replaced and Running")
    nodes = json.loads(subprocess.run([str(kubectl), f"--kubeconfig={kubeconfig}", "get", "nodes", "-o", "json"],
                                      capture_output=True, text=True, check=True).stdout)["items"]
    cordoned = {n["metadata"]["name"] for n in nodes if n["spec"].get("unschedulable")}
    assert cordoned == set(empty), (cordoned, plan.get("emptying"), emptied.stderr)
    for node in empty:
        assert f"{node} is empty and stays cordoned: `kubectl uncordon {node}` to use it again" in emptied.stderr
        left = [p for p in _pods(kubectl, kubeconfig) if p["spec"].get("nodeName") == node]
        assert all(p["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet" for p in left), left
    landed = {p["landed"] for p in (plan.get("landings") or {}).get("pods", ())}
    assert not landed & {e["node"] for e in plan.get("emptying", ())}, landed  # nothing back where it empties


def test_the_printed_prometheus_command_balances_by_its_recording_rule(tmp_path: Path) -> None:
    built("build-binaries", "kube-apiserver")
    built("build-sim", "kwok")
    built("build-prometheus", "prometheus")
    ex = Example(tmp_path / "sim", metrics=True)
    try:
        kubeconfig = ex.wait_for("export KUBECONFIG=").split("=", 1)[1].strip()
        hint = ex.wait_for("--prometheus-query").split()
        ex.wait_for("Stop with Ctrl-C")
        assert hint[:4] == ["kubectl", "desched", "balance", "-A"], hint
        plan = as_json(desched(kubeconfig, *hint[2:], "--dry-run=client", "-o", "json"))
        measured = {n["name"]: n.get("measured") for n in plan["nodes"]}
        assert all(v is not None for v in measured.values()), measured  # a value for every node, in the plan
        assert plan["measurements"], plan
    finally:
        if ex.proc.poll() is None:
            ex.proc.send_signal(signal.SIGTERM)
            ex.finish()
