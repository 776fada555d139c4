"""--evictor migration against a real kube-apiserver with our PodMigrationJob CRD installed: the jobs' exact
spec, labels and annotations, waiting with live phase lines and a summary (a stand-in controller moves the jobs
through their phases), --no-wait, --timeout, server dry run, duplicate jobs, RBAC, and a cluster without the CRD."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from desched import as_json, desched, desched_env
from koordinator import (
    FORBIDDEN,
    STAY_RUNNING,
    SUCCEED,
    FakeMigrationController,
    create_job,
    install_crd,
    list_jobs,
    remove_crd,
)

pytestmark = pytest.mark.integration

LNU = ["--thresholds", "cpu=20,memory=20,pods=20", "--target-thresholds", "cpu=50,memory=50,pods=50"]
CANDIDATES = ["app-0", "app-1", "app-2"]
NOT_SERVED = ("error: PodMigrationJob API (scheduling.koordinator.sh/v1alpha1) is not served by this cluster: "
              "install Koordinator or use --evictor eviction\n")


@pytest.fixture
def crd(cluster: Any) -> Iterator[None]:
    install_crd(cluster)
    yield


def _imbalance(cluster: Any, ns: str) -> list[str]:
    """One node at 87.5% cpu (seven 500m pods of a ReplicaSet of 7), one nearly empty: LowNodeUtilization moves
    three pods. The ReplicaSets exist, as Koordinator's MigrationController reads their replicas."""
    labels = {"desched-test": ns}
    cluster.create_node(f"{ns}-over", labels=labels)
    cluster.create_node(f"{ns}-under", labels=labels)
    app = cluster.create_replica_set(ns, "app-rs", 7)["metadata"]["uid"]
    light = cluster.create_replica_set(ns, "light-rs", 2)["metadata"]["uid"]
    for i in range(7):
        cluster.create_pod(ns, f"app-{i}", f"{ns}-over", cpu="500m", labels={"app": "app"}, owner_name="app-rs",
                           owner_uid=app)
    cluster.create_pod(ns, "light", f"{ns}-under", cpu="200m", owner_name="light-rs", owner_uid=light)
    return ["balance", "--node-selector", f"desched-test={ns}", "-n", ns, *LNU]


def _terminating(cluster: Any, ns: str, name: str) -> bool:
    pod = cluster.get_pod(ns, name)
    return pod is None or bool(pod["metadata"].get("deletionTimestamp"))


def _by_pod(jobs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {j["spec"]["podRef"]["name"]: j for j in jobs}


def test_jobs_have_the_exact_spec_labels_and_annotations(cluster: Any, namespace: str, crd: None) -> None:
    scope = _imbalance(cluster, namespace)
    plan = as_json(desched(cluster.kubeconfig_for(), *scope, "--dry-run=client", "-o", "json"))
    assert [c["pod"] for c in plan["candidates"]] == CANDIDATES
    proc = desched(cluster.kubeconfig_for(), *scope, "--yes", "--evictor", "migration", "--no-wait",
                   "--migration-mode", "EvictDirectly", "--migration-ttl", "90s", "--grace-period", "5")
    assert proc.returncode == 0, proc.stderr
    jobs = _by_pod(list_jobs(cluster, namespace))
    assert sorted(jobs) == CANDIDATES
    reasons = {c["pod"]: c["reason"] for c in plan["candidates"]}
    run_ids = set()
    for pod, job in jobs.items():
        uid = cluster.get_pod(namespace, pod)["metadata"]["uid"]
        assert job["spec"] == {"podRef": {"namespace": namespace, "name": pod, "uid": uid},
                               "mode": "EvictDirectly", "ttl": "1m30s", "deleteOptions": {"gracePeriodSeconds": 5}}
        meta = job["metadata"]
        assert re.fullmatch(rf"{pod}-[a-z0-9]{{5}}", meta["name"]) and meta["generateName"] == f"{pod}-"
        assert meta["annotations"] == {"koordinator.sh/evict-reason": reasons[pod],
                                       "koordinator.sh/evict-trigger": "LowNodeUtilization"}
        assert set(meta["labels"]) == {"app.kubernetes.io/managed-by", "kubectl-desched/run"}
        assert meta["labels"]["app.kubernetes.io/managed-by"] == "kubectl-desched"
        run_ids.add(meta["labels"]["kubectl-desched/run"])
        assert "status" not in job or not job["status"].get("phase")  # created Pending, for the controller
        assert f"PodMigrationJob {meta['name']} Pending" in proc.stderr
    assert len(run_ids) == 1
    assert reasons["app-0"].startswith("node over target")
    # --no-wait: every job created is a success; nothing was evicted by the tool itself.
    assert proc.stderr.rstrip().endswith("3 confirmed: 3 created")
    assert not any(_terminating(cluster, namespace, p) for p in CANDIDATES)


def test_defaults_are_koordinators_and_policy_args_yield_to_flags(cluster: Any, namespace: str, crd: None,
                                                                  tmp_path: Path) -> None:
    scope = _imbalance(cluster, namespace)
    default = desched(cluster.kubeconfig_for(), *scope, "--yes", "--evictor", "migration", "--no-wait",
                      "--max-pods", "1")
    assert default.returncode == 0, default.stderr
    (job,) = list_jobs(cluster, namespace)
    assert (job["spec"]["mode"], job["spec"]["ttl"]) == ("ReservationFirst", "5m0s")
    assert "deleteOptions" not in job["spec"]

    policy = tmp_path / "koord.yaml"
    # The migrating-pod limits are skipped: the jobs of this test, left Pending, would otherwise keep every pod.
    policy.write_text(f"""
apiVersion: descheduler/v1alpha2
kind: DeschedulerConfiguration
profiles:
  - name: koord
    plugins:
      balance: {{enabled: [{{name: LowNodeUtilization}}]}}
    pluginConfig:
      - name: LowNodeUtilization
        args:
          thresholds: {{cpu: 20, memory: 20, pods: 20}}
          targetThresholds: {{cpu: 50, memory: 50, pods: 50}}
      - name: MigrationController
        args:
          defaultJobMode: EvictDirectly
          defaultJobTTL: 2m
          namespaces: {{include: [{namespace}]}}
          skipEvictionGates: [MaxMigratingPerNode, MaxMigratingPerWorkload, MaxUnavailablePerWorkload]
""")
    run = ["run", "--policy", str(policy), "--node-selector", f"desched-test={namespace}", "--yes",
           "--evictor", "migration", "--no-wait"]
    from_policy = desched(cluster.kubeconfig_for(), *run, "--max-pods", "2")
    # app-0 has an unfinished job already: the MigrationController filter leaves it out of the plan, as
    # koord-descheduler would, and the next pods are taken.
    assert from_policy.returncode == 0, from_policy.stderr
    assert f"{namespace}/app-0" not in from_policy.stderr
    jobs = _by_pod(list_jobs(cluster, namespace))
    assert sorted(jobs) == ["app-0", "app-1", "app-2"]
    assert (jobs["app-1"]["spec"]["mode"], jobs["app-1"]["spec"]["ttl"]) == ("EvictDirectly", "2m0s")

    flags = desched(cluster.kubeconfig_for(), *run, "--max-pods", "1", "--migration-ttl", "45s",
                    "--migration-mode", "ReservationFirst")
    assert flags.returncode == 0, flags.stderr
    jobs = _by_pod(list_jobs(cluster, namespace))
    assert sorted(jobs) == ["app-0", "app-1", "app-2", "app-3"]
    assert (jobs["app-3"]["spec"]["mode"], jobs["app-3"]["spec"]["ttl"]) == ("ReservationFirst", "45s")


def test_waits_shows_each_phase_and_summarizes(cluster: Any, namespace: str, crd: None) -> None:
    scope = _imbalance(cluster, namespace)
    scripts = {"app-0": SUCCEED, "app-1": FORBIDDEN, "app-2": SUCCEED}
    with FakeMigrationController(cluster, namespace, scripts) as controller:
        # --no-wait-landing: no controller manager here makes replacements for what the jobs evict
        proc = desched(cluster.kubeconfig_for(), *scope, "--yes", "--evictor", "migration",
                       "--migration-mode", "EvictDirectly", "--timeout", "60s", "--no-wait-landing")
    assert controller.errors == []
    assert proc.returncode == 1, proc.stderr  # one job Failed
    names = {pod: job for job, pod in controller.handled.items()}
    assert sorted(names) == CANDIDATES
    lines = [line.strip() for line in proc.stderr.splitlines()]

    def phases(pod: str) -> list[str]:
        prefix = f"{namespace}/{pod}: PodMigrationJob {names[pod]} "
        return [line[len(prefix):] for line in lines if line.startswith(prefix)]

    assert phases("app-0") == ["Pending", "Running", "Running (Evicting: evicting the pod)", "Succeeded"]
    assert phases("app-1") == ["Pending", "Failed (ForbiddenMigratePod: the pod does not pass the arbitration's "
                                          "filters)"]
    assert phases("app-2")[-1] == "Succeeded"
    rows = {line.split()[1]: line.split() for line in proc.stdout.splitlines()
            if line.startswith(namespace) and line.split()[1] in CANDIDATES}
    assert rows["app-0"][2:4] == [names["app-0"], "Succeeded"]
    assert rows["app-1"][2:5] == [names["app-1"], "Failed", "ForbiddenMigratePod"]
    assert re.fullmatch(r"\d+(\.\d+)?s", rows["app-0"][-1])  # duration
    header = [line for line in proc.stdout.splitlines() if line.startswith("NAMESPACE")][-1]
    assert header.split() == ["NAMESPACE", "POD", "JOB", "PHASE", "REASON", "MESSAGE", "DURATION"]
    assert proc.stderr.rstrip().endswith("3 confirmed: 2 succeeded, 1 failed")
    assert _terminating(cluster, namespace, "app-0") and _terminating(cluster, namespace, "app-2")
    assert not _terminating(cluster, namespace, "app-1")


def test_all_succeeded_exits_zero_and_json_lists_the_jobs(cluster: Any, namespace: str, crd: None) -> None:
    scope = _imbalance(cluster, namespace)
    with FakeMigrationController(cluster, namespace, dict.fromkeys(CANDIDATES, SUCCEED), step_seconds=0.2):
        proc = desched(cluster.kubeconfig_for(), *scope, "--yes", "--evictor", "migration", "-o", "json",
                       "--no-wait-landing")  # no controller manager here makes replacements
    assert proc.returncode == 0, proc.stderr
    doc = as_json(proc)
    assert [(e["pod"], e["result"]) for e in doc["evictions"]] == [(p, "succeeded") for p in CANDIDATES]
    jobs = {j["pod"]: j for j in doc["podMigrationJobs"]}
    assert jobs["app-1"]["phases"] == ["Pending", "Running", "Succeeded"]
    assert jobs["app-1"]["mode"] == "ReservationFirst" and jobs["app-1"]["ttl"] == "5m0s"
    # stdout is the one document; the live lines still go to stderr.
    name = jobs["app-1"]["name"]
    assert f"{namespace}/app-1: PodMigrationJob {name} Succeeded" in proc.stderr
    assert proc.stderr.rstrip().endswith("3 confirmed: 3 succeeded")


def test_timeout_leaves_a_running_job_and_fails(cluster: Any, namespace: str, crd: None) -> None:
    scope = _imbalance(cluster, namespace)
    scripts = {"app-0": SUCCEED, "app-1": STAY_RUNNING, "app-2": SUCCEED}
    with FakeMigrationController(cluster, namespace, scripts, step_seconds=0.2):
        proc = desched(cluster.kubeconfig_for(), *scope, "--yes", "--evictor", "migration", "--timeout", "6s")
    assert proc.returncode == 1, proc.stderr
    row = [line for line in proc.stdout.splitlines() if line.split()[1:2] == ["app-1"]][-1]
    assert "Running (timed out)" in row and "WaitForBoundPodReady" in row
    assert "3 confirmed: 2 succeeded, 1 timed out" in proc.stderr
    jobs = _by_pod(list_jobs(cluster, namespace))
    assert jobs["app-1"]["status"]["phase"] == "Running"  # left to Koordinator, not deleted


def test_ctrl_c_while_waiting_leaves_the_jobs_and_reports(cluster: Any, namespace: str, crd: None,
                                                          tmp_path: Path) -> None:
    scope = _imbalance(cluster, namespace)
    report = tmp_path / "run.json"
    proc = subprocess.Popen([sys.executable, "-m", "kubectl_desched", *scope, "--yes", "--evictor", "migration",
                             "--report", str(report)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=desched_env(cluster.kubeconfig_for()))
    try:
        deadline = time.monotonic() + 60
        while len(list_jobs(cluster, namespace)) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)  # waiting now: no controller moves the jobs
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted: 3 still migrating (Koordinator carries on). 3 confirmed: 3 unfinished" in err
    assert "Traceback" not in err
    rows = [line.split() for line in out.splitlines() if line.startswith(namespace)][-3:]
    assert [r[3:5] for r in rows] == [["Pending", "(interrupted)"]] * 3
    assert len(list_jobs(cluster, namespace)) == 3  # left to Koordinator
    doc = json.loads(report.read_text())
    assert doc["evictor"] == "migration"
    assert [e["result"] for e in doc["evictions"]] == ["unfinished"] * 3
    assert all("still Pending when interrupted" in e["message"] for e in doc["evictions"])


def test_server_dry_run_creates_nothing(cluster: Any, namespace: str, crd: None) -> None:
    scope = _imbalance(cluster, namespace)
    proc = desched(cluster.kubeconfig_for(), *scope, "--yes", "--evictor", "migration", "--dry-run=server",
                   "-o", "json")
    assert proc.returncode == 0, proc.stderr
    results = as_json(proc)["evictions"]
    assert [r["result"] for r in results] == ["would create"] * 3
    assert all(re.search(r"accepted PodMigrationJob app-\d-[a-z0-9]{5} \(ReservationFirst, ttl 5m0s\)", r["message"])
               for r in results)
    assert list_jobs(cluster, namespace) == []
    client = desched(cluster.kubeconfig_for(), *scope, "--evictor", "migration", "--dry-run=client")
    assert client.returncode == 0 and list_jobs(cluster, namespace) == []


def test_a_pod_with_an_unfinished_job_is_skipped(cluster: Any, namespace: str, crd: None) -> None:
    scope = _imbalance(cluster, namespace)
    running = create_job(cluster, cluster.get_pod(namespace, "app-0"), phase="Running", name=f"{namespace}-a0")
    create_job(cluster, cluster.get_pod(namespace, "app-1"), phase="Succeeded")  # ended: no obstacle
    create_job(cluster, cluster.get_pod(namespace, "app-1"), phase="Aborted")
    # No phase yet (Pending to the controller), and the same namespace/name under another UID: blocks too.
    pending = create_job(cluster, {"metadata": {"namespace": namespace, "name": "app-2", "uid": "other"}})
    proc = desched(cluster.kubeconfig_for(), *scope, "--yes", "--evictor", "migration", "--no-wait")
    assert proc.returncode == 1, proc.stderr
    assert (f"{namespace}/app-0: skipped (PodMigrationJob {running['metadata']['name']} (Running) already exists "
            "for this pod)") in proc.stderr
    assert f"{namespace}/app-2: skipped (PodMigrationJob {pending['metadata']['name']} (Pending)" in proc.stderr
    assert "3 confirmed: 2 skipped, 1 created" in proc.stderr
    mine = [j for j in list_jobs(cluster, namespace) if j["metadata"].get("labels")]
    assert [j["spec"]["podRef"]["name"] for j in mine] == ["app-1"]
    row = [line.split() for line in proc.stdout.splitlines() if line.split()[1:2] == ["app-0"]][-1]
    assert row[2:5] == ["-", "-", "skipped"]  # the summary: no job, and why


def test_missing_rbac_is_named_before_anything_is_created(cluster: Any, namespace: str, crd: None) -> None:
    scope = _imbalance(cluster, namespace)
    limited = cluster.kubeconfig_for("limited")
    name = f"pmj-{namespace}"
    rules = [{"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list"]},
             {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["list"]}]

    def grant(extra: list[dict[str, Any]]) -> None:
        role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
                "rules": rules + extra}
        cluster.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}")
        assert cluster.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", role).ok

    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "limited"}]}
    grant([])
    assert cluster.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding).ok
    try:
        proc = desched(limited, *scope, "--yes", "--evictor", "migration")
        assert proc.returncode == 1
        assert proc.stderr.count("\n") == 1, proc.stderr
        pmj = "podmigrationjobs.scheduling.koordinator.sh"
        assert proc.stderr == (f"error: not allowed to create {pmj}; list {pmj}; watch {pmj} "
                               "(checked before asking: nothing was evicted)\n")
        grant([{"apiGroups": ["scheduling.koordinator.sh"], "resources": ["podmigrationjobs"],
                "verbs": ["create", "list"]}])
        waiting = desched(limited, *scope, "--yes", "--evictor", "migration")
        assert waiting.returncode == 1 and f"not allowed to watch {pmj} (checked" in waiting.stderr
        assert list_jobs(cluster, namespace) == []
        no_wait = desched(limited, *scope, "--yes", "--evictor", "migration", "--no-wait")
        assert no_wait.returncode == 0, no_wait.stderr  # --no-wait needs no watch
        assert len(list_jobs(cluster, namespace)) == 3
    finally:
        cluster.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{name}")
        cluster.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}")


def test_without_the_crd_nothing_is_created(cluster: Any, namespace: str) -> None:
    scope = _imbalance(cluster, namespace)
    remove_crd(cluster)
    try:
        proc = desched(cluster.kubeconfig_for(), *scope, "--yes", "--evictor", "migration")
        assert proc.returncode == 1
        assert proc.stderr == NOT_SERVED
        assert "3 candidate pod(s)" in proc.stdout  # the plan is shown, then the error, before any prompt
        prompt = desched(cluster.kubeconfig_for(), *scope, "--evictor", "migration")
        assert prompt.returncode == 1 and prompt.stderr == NOT_SERVED  # checked before asking
        assert not any(_terminating(cluster, namespace, p) for p in CANDIDATES)
    finally:
        install_crd(cluster)
    assert list_jobs(cluster, namespace) == []


def test_migration_flags_need_the_migration_evictor(cluster: Any, namespace: str) -> None:
    proc = desched(cluster.kubeconfig_for(), "balance", "-n", namespace, "--no-wait")
    assert proc.returncode == 2 and proc.stderr == "error: --no-wait only applies with --evictor migration\n"
    bad = desched(cluster.kubeconfig_for(), "balance", "-n", namespace, "--evictor", "migration",
                  "--migration-ttl", "soon")
    assert bad.returncode == 2 and "--migration-ttl: 'soon' is not a duration" in bad.stderr
