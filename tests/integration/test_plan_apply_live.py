"""Plan, review, apply on the simulated cluster (tests/cluster/simcluster.py: a real kube-apiserver, kube-scheduler
and controllers, kwok nodes): a plan applied at once evicts exactly its pods; a plan whose pod was replaced in
between is applied without that pod, which is reported stale (and refused whole under --strict); a plan from
another cluster is refused, and so is an expired one; the report's landings are what `kubectl get pods -o wide`
shows afterwards.

Each test makes its own nodes labelled sim-test=<namespace>: first node A, where its workload starts, then node B;
A is then tainted NoSchedule, so RemovePodsViolatingNodeTaints plans every pod on A and their replacements can only
land on B."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from desched import desched
from simcluster import SimCluster, deployment, statefulset

pytestmark = pytest.mark.integration

TAINT = "maintenance=soon:NoSchedule"


def _scope(ns: str) -> list[str]:
    return ["--plugin", "RemovePodsViolatingNodeTaints", "--node-selector", f"sim-test={ns}", "-n", ns]


def _setup(sim: SimCluster, ns: str, *, stateful: bool = False) -> tuple[str, str]:
    a, b = f"{ns}-a", f"{ns}-b"
    pin = {"sim-test": ns}
    sim.add_nodes([a], cpu="8", memory="16Gi", labels=pin)
    objs = statefulset(ns, "db", 3, cpu="250m", memory="256Mi", node_selector=pin) if stateful else \
        [deployment(ns, "web", 3, cpu="250m", memory="256Mi", node_selector=pin)]
    for obj in objs:
        sim.apply(obj)
    sim.wait_workloads_ready(ns)
    sim.add_nodes([b], cpu="8", memory="16Gi", labels=pin)
    proc = sim.kubectl("taint", "nodes", a, TAINT)
    assert proc.returncode == 0, proc.stderr
    return a, b


def _plan(sim: SimCluster, ns: str, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    proc = desched(sim.kubeconfig_for(), "deschedule", *_scope(ns), "--dry-run=client", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / "plan.json"
    path.write_text(proc.stdout)
    doc = json.loads(proc.stdout)
    assert doc["identity"]["kubeSystemUID"] == sim._must("GET", "/api/v1/namespaces/kube-system")["metadata"]["uid"]
    assert len(doc["candidates"]) == 3, doc["candidates"]
    return path, doc


def _uids(sim: SimCluster, ns: str) -> dict[str, str]:
    return {p["metadata"]["uid"]: p["metadata"]["name"] for p in sim.pods(ns)
            if not p["metadata"].get("deletionTimestamp")}


def _edited(path: Path, **identity: Any) -> Path:
    doc = json.loads(path.read_text())
    doc["identity"].update(identity)
    out = path.with_name("edited-" + path.name)
    out.write_text(json.dumps(doc))
    return out


def _wide(sim: SimCluster, ns: str) -> dict[str, str]:
    """Pod -> node as `kubectl get pods -o wide` prints them."""
    proc = sim.kubectl("get", "pods", "-n", ns, "-o", "wide", "--no-headers")
    assert proc.returncode == 0, proc.stderr
    # NODE is third from the end (NOMINATED NODE and READINESS GATES follow); RESTARTS may hold spaces
    return {cols[0]: cols[-3] for line in proc.stdout.splitlines() if (cols := line.split())}


def test_a_plan_applied_at_once_evicts_exactly_its_pods_and_lands_as_reported(
        sim: SimCluster, sim_namespace: str, tmp_path: Path) -> None:
    ns = sim_namespace
    _a, b = _setup(sim, ns)
    path, plan = _plan(sim, ns, tmp_path)
    planned = {c["uid"] for c in plan["candidates"]}
    before = _uids(sim, ns)
    report = tmp_path / "applied.json"
    proc = desched(sim.kubeconfig_for(), "apply", "-f", str(path), "--yes", "--timeout", "2m", "--report",
                   str(report), timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(report.read_text())
    evicted = {e["uid"] for e in doc["evictions"] if e["result"] == "evicted"}
    assert evicted == planned  # exactly the plan's pods
    still = set(_uids(sim, ns))
    assert not planned & still and set(before) - planned <= still
    # the report's landings are the cluster's
    wide = _wide(sim, ns)
    landed = [p for p in doc["pods"] if p["landed"]]
    assert len(landed) == 3
    for p in landed:
        assert wide[p["replacement"]] == p["landed"] == b, (p, wide)
    shown = desched(sim.kubeconfig_for(), "report", str(report))
    assert shown.returncode == 0 and shown.stdout.count(" evicted ") == 3, shown.stdout


def test_a_replaced_pod_is_left_out_stale_and_strict_refuses_the_plan(sim: SimCluster, sim_namespace: str,
                                                                      tmp_path: Path) -> None:
    ns = sim_namespace
    _setup(sim, ns, stateful=True)
    path, plan = _plan(sim, ns, tmp_path)
    gone = plan["candidates"][0]
    proc = sim.kubectl("delete", "pod", "-n", ns, gone["pod"], "--wait=true")
    assert proc.returncode == 0, proc.stderr
    sim.wait_workloads_ready(ns)  # db-N is back under its name, with another uid
    assert gone["pod"] in _wide(sim, ns) and gone["uid"] not in _uids(sim, ns)
    before = _uids(sim, ns)

    strict = desched(sim.kubeconfig_for(), "apply", "-f", str(path), "--yes", "--strict", timeout=300)
    assert strict.returncode == 4, strict.stderr
    assert f"stale: {ns}/{gone['pod']}: replaced" in strict.stderr and "--strict" in strict.stderr
    assert _uids(sim, ns) == before  # nothing evicted

    report = tmp_path / "r.json"
    proc = desched(sim.kubeconfig_for(), "apply", "-f", str(path), "--yes", "--timeout", "2m", "--report",
                   str(report), timeout=300)
    assert proc.returncode == 4, proc.stderr
    doc = json.loads(report.read_text())
    assert [s["pod"] for s in doc["stale"]] == [gone["pod"]]
    assert {e["pod"] for e in doc["evictions"]} == {c["pod"] for c in plan["candidates"][1:]}
    assert all(e["result"] == "evicted" for e in doc["evictions"])
    assert {p["pod"]: p["result"] for p in doc["pods"]}[gone["pod"]] == "stale"


def test_a_plan_from_another_cluster_or_too_old_is_refused(sim: SimCluster, sim_namespace: str,
                                                           tmp_path: Path) -> None:
    ns = sim_namespace
    _setup(sim, ns)
    path, _plan_doc = _plan(sim, ns, tmp_path)
    before = _uids(sim, ns)
    other = desched(sim.kubeconfig_for(), "apply", "-f", str(_edited(path, kubeSystemUID="0000-other")), "--yes")
    assert other.returncode == 1
    assert "the plan was made on another cluster" in other.stderr and len(other.stderr.splitlines()) == 1
    made = (datetime.now(UTC) - timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    old = desched(sim.kubeconfig_for(), "apply", "-f", str(_edited(path, madeAt=made)), "--yes")
    assert old.returncode == 4 and "more than --max-age 1h0m0s" in old.stderr, old.stderr
    assert _uids(sim, ns) == before
