"""--evictor migration against the real MigrationController: koord-descheduler v1.8.0 (built from its Go module by
tests/cluster/build-koord-descheduler) runs with LowNodeLoad paused, so it only carries out PodMigrationJobs, on an
apiserver of its own with Koordinator's CRDs. The same tool runs as against the imitation in test_migration_jobs.py:
here the phases, conditions, arbitration, the per-workload limiter, PDBs and the TTL are Koordinator's own.

Without kubelets a gracefully evicted pod would stay Terminating, and the controller waits for it to be gone, so
these runs evict with --grace-period 0."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from desched import as_json, desched
from koordinator import JOBS, controller, list_jobs

pytestmark = pytest.mark.integration

LNU = ["--thresholds", "cpu=20,memory=20,pods=20", "--target-thresholds", "cpu=50,memory=50,pods=50"]


@pytest.fixture
def scene(koord_cluster: Any) -> Iterator[tuple[Any, str]]:
    """A namespace and two nodes, removed afterwards with their jobs: the oracle cases that share this cluster
    must not see them."""
    ns = f"pmj-{int(time.time() * 1000) % 10**8}"
    koord_cluster.create_namespace(ns)
    yield koord_cluster, ns
    for job in list_jobs(koord_cluster, ns):
        koord_cluster.request("DELETE", f"{JOBS}/{job['metadata']['name']}")
    pods = koord_cluster.request("GET", f"/api/v1/namespaces/{ns}/pods").body.get("items") or []
    for pod in pods:
        koord_cluster.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}",
                              {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
    for node in ("over", "under"):
        koord_cluster.request("DELETE", f"/api/v1/nodes/{ns}-{node}")


def _imbalance(cluster: Any, ns: str, *, solo: int = 0) -> list[str]:
    """One node at 87.5% cpu (seven 500m pods), one nearly empty: LowNodeUtilization picks app-0, app-1, app-2.
    The first `solo` pods belong to ReplicaSets of one replica, which Koordinator's arbitration refuses."""
    labels = {"desched-test": ns}
    cluster.create_node(f"{ns}-over", labels=labels)
    cluster.create_node(f"{ns}-under", labels=labels)
    app = cluster.create_replica_set(ns, "app-rs", 7)["metadata"]["uid"]
    for i in range(7):
        owner, uid = "app-rs", app
        if i < solo:
            owner = f"solo-{i}"
            uid = cluster.create_replica_set(ns, owner, 1)["metadata"]["uid"]
        cluster.create_pod(ns, f"app-{i}", f"{ns}-over", cpu="500m", labels={"app": "app"}, owner_name=owner,
                           owner_uid=uid)
    light = cluster.create_replica_set(ns, "light-rs", 2)["metadata"]["uid"]
    cluster.create_pod(ns, "light", f"{ns}-under", cpu="200m", owner_name="light-rs", owner_uid=light)
    return ["balance", "--node-selector", f"desched-test={ns}", "-n", ns, *LNU, "--yes", "--evictor", "migration",
            "--grace-period", "0"]


def _lines(stderr: str, ns: str, pod: str) -> list[str]:
    prefix = f"{ns}/{pod}: PodMigrationJob "
    return [line.strip()[len(prefix):].split(" ", 1)[1] for line in stderr.splitlines()
            if line.strip().startswith(prefix)]


def _gone(cluster: Any, ns: str, pod: str) -> bool:
    return cluster.get_pod(ns, pod) is None


def test_evict_directly_end_to_end_and_the_arbitrations_refusal(scene: tuple[Any, str], koord_descheduler: Path,
                                                                 tmp_path: Path) -> None:
    cluster, ns = scene
    run = _imbalance(cluster, ns, solo=1)
    with controller(cluster, koord_descheduler, tmp_path, defaultJobMode="EvictDirectly",
                    objectLimiters={"workload": {"duration": "0s"}}) as log:
        # --no-wait-landing: no controller manager here makes the replacements of the pods Koordinator evicts
        proc = desched(cluster.kubeconfig_for(), *run, "--migration-mode", "EvictDirectly", "-o", "json",
                       "--no-wait-landing", timeout=240)
    assert proc.returncode == 1, f"{proc.stderr}\n{log.read_text()[-3000:]}"
    doc = as_json(proc)  # stdout is one document; the live lines are on stderr
    results = {e["pod"]: e["result"] for e in doc["evictions"]}
    assert results == {"app-0": "failed", "app-1": "succeeded", "app-2": "succeeded"}
    jobs = {j["pod"]: j for j in doc["podMigrationJobs"]}
    assert (jobs["app-0"]["phase"], jobs["app-0"]["reason"]) == ("Failed", "ForbiddenMigratePod")
    done = jobs["app-1"]
    assert (done["phase"], done["status"]) == ("Succeeded", "Complete")
    assert done["condition"] == "Eviction=True EvictComplete"
    assert done["passedArbitration"] and done["phases"] == ["Pending", "Running", "Succeeded"]
    lines = _lines(proc.stderr, ns, "app-1")
    assert lines[0] == "Pending" and lines[-1].startswith(f'Succeeded (Pod "{ns}/app-1" has been evicted)')
    assert any(line.startswith("Running (Evicting: ") and "condition Eviction=False Evicting" in line for line in lines)
    assert "passed arbitration" in lines[-1]
    assert _gone(cluster, ns, "app-1") and _gone(cluster, ns, "app-2") and not _gone(cluster, ns, "app-0")
    assert proc.stderr.rstrip().endswith("3 confirmed: 1 failed, 2 succeeded")


def test_a_job_held_by_the_workload_limiter_stays_running_with_no_reason(scene: tuple[Any, str],
                                                                         koord_descheduler: Path,
                                                                         tmp_path: Path) -> None:
    cluster, ns = scene
    run = _imbalance(cluster, ns)
    limiter = {"workload": {"duration": "10m", "maxMigrating": 1}}  # one eviction per workload in 10 minutes
    with controller(cluster, koord_descheduler, tmp_path, defaultJobMode="EvictDirectly", objectLimiters=limiter):
        proc = desched(cluster.kubeconfig_for(), *run, "--max-pods", "2", "--migration-mode", "EvictDirectly",
                       "--timeout", "25s", timeout=120)
    assert proc.returncode == 1, proc.stderr
    finals = {pod: _lines(proc.stderr, ns, pod)[-1] for pod in ("app-0", "app-1")}
    held = [pod for pod, line in finals.items() if not line.startswith("Succeeded")]
    assert len(held) == 1, finals
    assert finals[held[0]] == "Running; passed arbitration"  # no reason, no condition: only the limiter knows
    # the summary counts outcomes in the order the results come, and the controller picks which job its limiter holds
    summary = [line for line in proc.stderr.splitlines() if line.startswith("2 confirmed: ")]
    assert len(summary) == 1 and sorted(summary[0].removeprefix("2 confirmed: ").split(", ")) == [
        "1 succeeded", "1 timed out"], proc.stderr
    job = next(j for j in list_jobs(cluster, ns) if j["spec"]["podRef"]["name"] == held[0])
    assert job["status"]["phase"] == "Running" and not job["status"].get("reason")


def test_reservation_first_waits_with_its_status_shown(scene: tuple[Any, str], koord_descheduler: Path,
                                                       tmp_path: Path) -> None:
    """No koord-scheduler here: the Reservation is created and never scheduled, so the job stays Running."""
    cluster, ns = scene
    run = _imbalance(cluster, ns)
    with controller(cluster, koord_descheduler, tmp_path):
        proc = desched(cluster.kubeconfig_for(), *run, "--max-pods", "1", "--timeout", "20s", timeout=120)
    assert proc.returncode == 1, proc.stderr
    last = _lines(proc.stderr, ns, "app-0")[-1]
    assert last.startswith("Running") and "status ReservationCreated" in last, proc.stderr
    assert "condition ReservationCreated=True" in last and last.endswith("passed arbitration")
    assert cluster.request("GET", "/apis/scheduling.koordinator.sh/v1alpha1/reservations").body["items"]


def test_a_pdb_held_job_fails_on_the_controllers_schedule_after_its_ttl(scene: tuple[Any, str],
                                                                        koord_descheduler: Path,
                                                                        tmp_path: Path) -> None:
    """The Eviction API refuses (PDB), the controller retries with a growing backoff and checks the TTL only when
    it looks again: the verdict comes after the TTL, and the tool waits for it."""
    cluster, ns = scene
    run = _imbalance(cluster, ns)
    cluster.create_pdb(ns, "app-pdb", {"app": "app"}, min_available=7, disruptions_allowed=0)
    began = time.monotonic()
    with controller(cluster, koord_descheduler, tmp_path, defaultJobMode="EvictDirectly"):
        # --no-respect-pdbs: planned although the budget is spent, so the controller meets the refusal
        proc = desched(cluster.kubeconfig_for(), *run, "--max-pods", "1", "--migration-mode", "EvictDirectly",
                       "--migration-ttl", "15s", "--no-respect-pdbs", timeout=480)
    took = time.monotonic() - began
    assert proc.returncode == 1, proc.stderr
    lines = _lines(proc.stderr, ns, "app-0")
    assert any("past its TTL 15s" in line for line in lines), lines
    assert re.match(r"Failed \(Timeout: Abort job caused by timeout\)", lines[-1]), lines
    assert took > 15 and not _gone(cluster, ns, "app-0")
    job = list_jobs(cluster, ns)[0]
    assert job["status"]["reason"] == "Timeout"
