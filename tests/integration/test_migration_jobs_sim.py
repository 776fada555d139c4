"""--evictor migration on the simulated cluster, against the real MigrationController: koord-descheduler (LowNodeLoad
paused) carries out the PodMigrationJobs, kwok's kubelets let the evicted pods really go away, and the Deployment
controller and the scheduler put replacements on the new node. On LocalCluster (test_migration_jobs_koord.py) an
evicted pod stays Terminating unless evicted with a zero grace period."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from desched import as_json, desched
from koordinator import controller, install_koordinator
from simcluster import SimCluster, deployment, wait_until

from tests.oracle.koord import crd_files

pytestmark = pytest.mark.integration


def test_jobs_evict_pods_that_go_away_and_come_back_elsewhere(sim: SimCluster, sim_namespace: str,
                                                              koord_descheduler: Path, tmp_path: Path) -> None:
    files, why = crd_files()
    if files is None:
        pytest.skip(why)
    install_koordinator(sim)  # idempotent: the session's simulated cluster keeps the CRDs
    ns = sim_namespace
    labels = {"sim-test": ns}
    sim.add_nodes([f"{ns}-a"], cpu="4", memory="16Gi", labels=labels)
    sim.apply(deployment(ns, "web", 4, cpu="800m", node_selector=labels))  # 80% of the only node
    sim.wait_workloads_ready(ns)
    sim.add_nodes([f"{ns}-b"], cpu="4", memory="16Gi", labels=labels)
    before = sim.placements(ns)
    assert set(before.values()) == {f"{ns}-a"}

    scope = ["--node-selector", f"sim-test={ns}", "-n", ns,
             "--thresholds", "cpu=20,memory=20,pods=20", "--target-thresholds", "cpu=50,memory=50,pods=50"]
    with controller(sim, koord_descheduler, tmp_path, defaultJobMode="EvictDirectly",
                    objectLimiters={"workload": {"duration": "0s"}}) as log:
        proc = desched(sim.kubeconfig_for(), "balance", *scope, "--yes", "--evictor", "migration",
                       "--migration-mode", "EvictDirectly", "-o", "json", timeout=300)
    assert proc.returncode == 0, f"{proc.stderr}\n{log.read_text()[-3000:]}"
    doc = as_json(proc)
    results: dict[str, Any] = {e["pod"]: e["result"] for e in doc["evictions"]}
    assert results and set(results.values()) == {"succeeded"}, results
    moved = set(results)

    def replaced() -> bool:
        now = sim.placements(ns)
        return not moved & set(now) and len(now) == 4

    wait_until(replaced, 120, "the evicted pods gone and replaced")
    sim.wait_workloads_ready(ns)
    after = sim.placements(ns)
    assert sum(node == f"{ns}-b" for node in after.values()) == len(moved)  # the scheduler used the new node
    again = as_json(desched(sim.kubeconfig_for(), "balance", *scope, "--dry-run=client", "-o", "json"))
    assert again["candidates"] == []  # the cluster is balanced now
