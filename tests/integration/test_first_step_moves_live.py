"""The moves that need a step before the eviction (issue 37), on the simulated cluster with the real kube-scheduler,
kube-controller-manager (ReplicaSet, Deployment and disruption controllers) and kwok:

- --cordon: HighNodeUtilization empties the light nodes it cordons first; no replacement lands on them; the emptied
  ones stay cordoned with a line saying so; an interrupted run uncordons what it did not empty.
- --surge: a Deployment's pod its PodDisruptionBudget refuses (checkout, 2 of 2) and a single replica guarded by
  minAvailable 1 move off an over-utilized node replacement first; a watch during the move sees the ready count
  never below the start, and spec.replicas ends as it began, also when the move is interrupted.
- what cannot be safe (an HPA, a paused or Recreate Deployment, a StatefulSet) gets one clear line; missing RBAC
  for nodes or deployments/scale is named before anything is written.

Each test adds its own nodes labelled sim-test=<namespace>, pins its workloads to them and scopes the CLI with
--node-selector, so the tests share one cluster without seeing each other."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from desched import BALANCE, desched, desched_env
from simcluster import SimCluster, deployment, pdb, statefulset
from test_safe_eviction import READ, rbac

pytestmark = pytest.mark.integration


def _nodes(sim: SimCluster, ns: str, *names: str, cpu: str = "4") -> list[str]:
    return sim.add_nodes([f"{ns}-{n}" for n in names], cpu=cpu, memory="16Gi", labels={"sim-test": ns})


def _pinned(obj: dict[str, Any], ns: str) -> dict[str, Any]:
    obj["spec"]["template"]["spec"]["nodeSelector"] = {"sim-test": ns}
    return obj


def _scope(ns: str) -> list[str]:
    return ["--node-selector", f"sim-test={ns}", "-n", ns]


def _bare(ns: str, name: str, node: str, cpu: str, **spec: Any) -> dict[str, Any]:
    """A pod with no controller, bound to its node: protected from eviction, it keeps the node as full as it is."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "registry.local/app:1",
                                                      "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                                                      **spec}]}}


def _unschedulable(sim: SimCluster, node: str) -> bool:
    return bool(sim._must("GET", f"/api/v1/nodes/{node}")["spec"].get("unschedulable"))


def _holding(sim: SimCluster, ns: str, node: str) -> list[str]:
    return sorted(name for name, where in sim.placements(ns).items() if where == node)


def _consolidation(sim: SimCluster, ns: str) -> tuple[list[str], list[str]]:
    """Two nodes half full (fill), then two light ones that web and api land on (the emptiest)."""
    busy = _nodes(sim, ns, "busy-1", "busy-2")
    sim.apply(_pinned(deployment(ns, "fill", 2, cpu="2"), ns))
    sim.wait_workloads_ready(ns)
    light = _nodes(sim, ns, "light-1", "light-2")
    sim.apply(_pinned(deployment(ns, "web", 2, cpu="200m"), ns))
    sim.apply(_pinned(deployment(ns, "api", 1, cpu="300m"), ns))
    sim.wait_workloads_ready(ns)
    assert all(sim.placements(ns, "app=fill")[p] in busy for p in sim.placements(ns, "app=fill"))
    assert all(where in light for where in {**sim.placements(ns, "app=web"), **sim.placements(ns, "app=api")}.values())
    return busy, light


HNU = ["--plugin", "HighNodeUtilization", "--thresholds", "cpu=20,memory=20,pods=20"]


def test_without_cordon_every_replacement_would_land_back_and_the_advice_says_cordon(
        sim: SimCluster, sim_namespace: str) -> None:
    ns = sim_namespace
    _consolidation(sim, ns)
    proc = desched(sim.kubeconfig_for(), "balance", *HNU, *_scope(ns), "--dry-run", "--no-pager")
    assert proc.returncode == 0, proc.stderr
    assert "Plan: 0 pods to evict" in proc.stdout
    assert "--cordon cordons them first and would move 3 pod(s) and leave 2 node(s) empty" in proc.stdout


def test_cordon_empties_the_light_nodes_and_nothing_lands_back(sim: SimCluster, sim_namespace: str,
                                                              tmp_path: Path) -> None:
    ns = sim_namespace
    busy, light = _consolidation(sim, ns)
    report = tmp_path / "report.json"
    proc = desched(sim.kubeconfig_for(), "balance", *HNU, "--cordon", *_scope(ns), "--yes", "--timeout", "2m",
                   "--report", str(report), "-o", "json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["cordon"] is True
    assert {e["node"]: e["empty"] for e in plan["emptying"]} == {light[0]: True, light[1]: True}
    assert sorted(c["pod"].split("-")[0] for c in plan["candidates"]) == ["api", "web", "web"]
    sim.wait_workloads_ready(ns)
    for node in light:
        assert _holding(sim, ns, node) == [], f"{node} still holds pods"
        assert _unschedulable(sim, node), f"{node} should stay cordoned"
        assert f"{node} is empty and stays cordoned: `kubectl uncordon {node}` to use it again" in proc.stderr
    landed = json.loads(report.read_text())["landings"]["pods"]
    assert len(landed) == 3 and all(p["landed"] in busy for p in landed), landed
    assert {c["node"]: (c["empty"], c["uncordoned"]) for c in json.loads(report.read_text())["cordons"]} == \
        {light[0]: (True, False), light[1]: (True, False)}


def test_an_interrupted_cordon_run_uncordons_what_it_did_not_empty(sim: SimCluster, sim_namespace: str) -> None:
    ns = sim_namespace
    _busy, light = _consolidation(sim, ns)
    # --interval 30s: the first eviction goes, then Ctrl-C comes while the rest wait their turn
    cmd = [sys.executable, "-m", "kubectl_desched", "balance", *HNU, "--cordon", *_scope(ns), "--yes",
           "--interval", "30s", "--no-wait-landing"]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=desched_env(sim.kubeconfig_for()))
    deadline = time.monotonic() + 60
    while not all(_unschedulable(sim, n) for n in light):
        assert proc.poll() is None and time.monotonic() < deadline, "the light nodes were never cordoned"
        time.sleep(0.2)
    time.sleep(2)  # the first eviction is sent right away
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    for node in light:
        if _holding(sim, ns, node):
            assert not _unschedulable(sim, node), f"{node} keeps pods and must be uncordoned"
            assert f"{node} was not emptied" in err and "uncordoned" in err
        else:
            assert _unschedulable(sim, node) and f"{node} is empty and stays cordoned" in err
    assert any(_holding(sim, ns, n) for n in light), "the interrupt came too late to leave a node unemptied"


# ---------------------------------------------------------------------- --surge


class ReadyWatch:
    """Reads a Deployment's ready replicas every 0.1 s while a move runs: the lowest count seen, and its replicas."""

    def __init__(self, sim: SimCluster, ns: str, name: str) -> None:
        self.sim, self.path = sim, f"/apis/apps/v1/namespaces/{ns}/deployments/{name}"
        self.lowest: int | None = None
        self.highest_replicas = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            d = self.sim._must("GET", self.path)
            ready = (d.get("status") or {}).get("readyReplicas") or 0
            self.lowest = ready if self.lowest is None else min(self.lowest, ready)
            self.highest_replicas = max(self.highest_replicas, d["spec"]["replicas"])
            time.sleep(0.1)

    def __enter__(self) -> ReadyWatch:
        self._thread.start()
        return self

    def __exit__(self, *_exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def _guarded(sim: SimCluster, ns: str, name: str, replicas: int, min_available: int,
             container: dict[str, Any] | None = None) -> tuple[str, list[str]]:
    """`name` on a node over LowNodeUtilization's targets (a bare pod fills it), a PDB that allows no disruption,
    and two empty nodes to move to. `container`: more fields for its container."""
    (hot,) = _nodes(sim, ns, "hot")
    sim.apply(_bare(ns, "anchor", hot, "1500m"))
    obj = _pinned(deployment(ns, name, replicas, cpu="800m"), ns)
    obj["spec"]["template"]["spec"]["containers"][0].update(container or {})
    sim.apply(obj)
    sim.apply(pdb(ns, name, name, min_available=min_available))
    sim.wait_workloads_ready(ns)
    cold = _nodes(sim, ns, "cold-1", "cold-2")
    assert sim.pdb(ns, name)["status"]["disruptionsAllowed"] == 0
    return hot, cold


def test_without_surge_the_budget_keeps_checkout(sim: SimCluster, sim_namespace: str) -> None:
    ns = sim_namespace
    _guarded(sim, ns, "checkout", 2, 2)
    proc = desched(sim.kubeconfig_for(), "balance", *BALANCE, *_scope(ns), "--dry-run", "-o", "json")
    doc = json.loads(proc.stdout)
    assert doc["candidates"] == [] and len(doc["kept"]) == 2
    assert any(a.get("step") == "--surge" for a in doc["advice"])


@pytest.mark.parametrize(("replicas", "min_available"), [(2, 2), (1, 1)], ids=["checkout-2-of-2", "single-replica"])
def test_surge_moves_a_guarded_pod_without_dropping_below_its_ready_count(
        sim: SimCluster, sim_namespace: str, tmp_path: Path, replicas: int, min_available: int) -> None:
    ns = sim_namespace
    hot, cold = _guarded(sim, ns, "checkout", replicas, min_available)
    before = sim.placements(ns, "app=checkout")
    report = tmp_path / "report.json"
    with ReadyWatch(sim, ns, "checkout") as watch:
        proc = desched(sim.kubeconfig_for(), "balance", *BALANCE, "--surge", *_scope(ns), "--yes", "--timeout", "2m",
                       "--report", str(report), "-o", "json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    moved = [c for c in doc["candidates"] if c["method"] == "surge"]
    assert moved and all(c["node"] == hot for c in moved)
    assert [e["result"] for e in doc["evictions"]] == ["moved"] * len(moved)
    assert watch.lowest is not None and watch.lowest >= replicas, f"ready fell to {watch.lowest}"
    assert watch.highest_replicas == replicas + 1  # the surge, one at a time
    d = sim._must("GET", f"/apis/apps/v1/namespaces/{ns}/deployments/checkout")
    assert d["spec"]["replicas"] == replicas
    sim.wait_workloads_ready(ns)
    after = sim.placements(ns, "app=checkout")
    gone = {c["pod"] for c in moved}
    assert gone.isdisjoint(after) and gone <= set(before)
    landed = json.loads(report.read_text())["landings"]["pods"]
    assert all(p["landed"] in cold for p in landed) and len(landed) == len(moved), landed
    assert all(p["asEstimated"] for p in landed), landed


def test_an_interrupted_surge_restores_the_replicas_and_the_pod_stays(sim: SimCluster, sim_namespace: str) -> None:
    """The new pod can never start: the cold nodes' port 18080 is taken, which the estimate does not model (the
    scheduler's NodePorts filter refuses them). Ctrl-C while the surge waits for it."""
    ns = sim_namespace
    port = {"ports": [{"containerPort": 80, "hostPort": 18080}]}
    _hot, cold = _guarded(sim, ns, "checkout", 1, 1, port)
    d_path = f"/apis/apps/v1/namespaces/{ns}/deployments/checkout"
    (old,) = sim.placements(ns, "app=checkout")
    for i, node in enumerate(cold):
        sim.apply(_bare(ns, f"port-{i}", node, "10m", **port))
    cmd = [sys.executable, "-m", "kubectl_desched", "balance", *BALANCE, "--surge", *_scope(ns), "--yes",
           "--timeout", "5m"]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=desched_env(sim.kubeconfig_for()))
    deadline = time.monotonic() + 60
    while sim._must("GET", d_path)["spec"]["replicas"] != 2:
        assert proc.poll() is None and time.monotonic() < deadline, "the Deployment was never scaled up"
        time.sleep(0.2)
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "replicas restored" in err
    dep = sim._must("GET", d_path)
    assert dep["spec"]["replicas"] == 1
    pod = sim._must("GET", f"/api/v1/namespaces/{ns}/pods/{old}")
    assert not pod["metadata"].get("deletionTimestamp")
    assert "controller.kubernetes.io/pod-deletion-cost" not in (pod["metadata"].get("annotations") or {})
    sim.wait_workloads_ready(ns)
    assert list(sim.placements(ns, "app=checkout")) == [old]


def _hpa(ns: str, target: str) -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": f"{target}-hpa", "namespace": ns},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
                     "minReplicas": 1, "maxReplicas": 3,
                     "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                         "type": "Utilization", "averageUtilization": 80}}}]}}


def test_what_cannot_surge_safely_gets_one_clear_line(sim: SimCluster, sim_namespace: str) -> None:
    ns = sim_namespace
    (hot,) = _nodes(sim, ns, "hot", cpu="8")
    sim.apply(_bare(ns, "anchor", hot, "2"))
    for name in ("scaled", "paused", "recreate"):
        sim.apply(_pinned(deployment(ns, name, 1, cpu="700m"), ns))
        sim.apply(pdb(ns, name, name, min_available=1))
    for obj in statefulset(ns, "ledger", 1, cpu="700m"):
        sim.apply(_pinned(obj, ns) if obj["kind"] == "StatefulSet" else obj)
    sim.apply(pdb(ns, "ledger", "ledger", min_available=1))
    sim.wait_workloads_ready(ns)
    assert sim.request("POST", f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers",
                       _hpa(ns, "scaled")).ok
    for name, patch in (("paused", {"spec": {"paused": True}}),
                        ("recreate", {"spec": {"strategy": {"type": "Recreate", "rollingUpdate": None}}})):
        r = sim.request("PATCH", f"/apis/apps/v1/namespaces/{ns}/deployments/{name}", patch,
                        content_type="application/merge-patch+json")
        assert r.ok, r.body
    _nodes(sim, ns, "cold-1", "cold-2")
    proc = desched(sim.kubeconfig_for(), "balance", *BALANCE, "--surge", *_scope(ns), "--dry-run", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["candidates"] == []
    whys = {k["pod"].split("-")[0]: k["why"].split("; --surge cannot move it: ")[1] for k in doc["kept"]}
    assert whys == {
        "scaled": "HorizontalPodAutoscaler scaled-hpa scales Deployment scaled: it would undo the surge",
        "paused": "Deployment paused is paused",
        "recreate": "Deployment recreate uses the Recreate strategy: its old and new pods never run together",
        "ledger": "StatefulSet ledger keeps each pod's identity: eviction only",
    }


def test_the_preflight_names_missing_rbac_for_nodes_and_deployments_scale(sim: SimCluster, sim_namespace: str) -> None:
    ns = sim_namespace
    _consolidation(sim, ns)
    sim.apply(_pinned(deployment(ns, "checkout", 1, cpu="200m"), ns))
    sim.apply(pdb(ns, "checkout", "checkout", min_available=1))
    sim.wait_workloads_ready(ns)
    reads = [*READ,
             {"apiGroups": ["apps"], "resources": ["replicasets", "deployments"], "verbs": ["get", "list"]},
             {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"], "verbs": ["list"]},
             {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]}]
    cleanup = rbac(sim, f"read-{ns}", reads)
    try:
        limited = sim.kubeconfig_for("limited")
        cordon = desched(limited, "balance", *HNU, "--cordon", *_scope(ns), "--yes")
        assert cordon.returncode == 1, cordon.stderr
        assert cordon.stderr.endswith("error: not allowed to patch nodes (checked before asking: nothing was "
                                      "evicted)\n"), cordon.stderr
        both = desched(limited, "balance", *HNU, "--cordon", "--surge", *_scope(ns), "--yes")
        assert both.returncode == 1, both.stderr
        assert f"update deployments.apps/scale in namespace {ns}" in both.stderr
        assert f"patch pods in namespace {ns}" in both.stderr and "patch nodes" in both.stderr
        assert not any(_unschedulable(sim, n) for n in set(sim.placements(ns).values()))
        assert sim._must("GET", f"/apis/apps/v1/namespaces/{ns}/deployments/checkout")["spec"]["replicas"] == 1
    finally:
        cleanup()


def test_a_reviewed_plan_applied_later_cordons_and_surges_as_planned(sim: SimCluster, sim_namespace: str,
                                                                     tmp_path: Path) -> None:
    """plan -> review -> apply: the document carries the cordoned nodes and each pod's method, and apply acts on
    them as `balance --yes` would."""
    ns = sim_namespace
    _busy, light = _consolidation(sim, ns)
    kc = sim.kubeconfig_for()
    plan = tmp_path / "cordon.json"
    made = desched(kc, "balance", *HNU, "--cordon", *_scope(ns), "--dry-run", "-o", "json")
    assert made.returncode == 0, made.stderr
    plan.write_text(made.stdout)
    doc = json.loads(made.stdout)
    assert doc["cordon"] is True and sorted(e["node"] for e in doc["emptying"]) == sorted(light)
    applied = desched(kc, "apply", "-f", str(plan), "--yes", "--timeout", "2m", timeout=300)
    assert applied.returncode == 0, applied.stderr
    sim.wait_workloads_ready(ns)
    for node in light:
        assert _holding(sim, ns, node) == [] and _unschedulable(sim, node), node


def test_a_surge_plan_applied_later_moves_replacement_first(sim: SimCluster, sim_namespace: str,
                                                           tmp_path: Path) -> None:
    ns = sim_namespace
    hot, _cold = _guarded(sim, ns, "checkout", 1, 1)
    kc = sim.kubeconfig_for()
    made = desched(kc, "balance", *BALANCE, "--surge", *_scope(ns), "--dry-run", "-o", "json")
    assert made.returncode == 0, made.stderr
    plan = tmp_path / "surge.json"
    plan.write_text(made.stdout)
    assert [c["method"] for c in json.loads(made.stdout)["candidates"]] == ["surge"]
    with ReadyWatch(sim, ns, "checkout") as watch:
        applied = desched(kc, "apply", "-f", str(plan), "--yes", "--timeout", "2m", "-o", "json", timeout=300)
    assert applied.returncode == 0, applied.stderr
    assert [e["result"] for e in json.loads(applied.stdout)["evictions"]] == ["moved"]
    assert watch.lowest is not None and watch.lowest >= 1
    sim.wait_workloads_ready(ns)
    assert hot not in sim.placements(ns, "app=checkout").values()


def test_a_failed_eviction_leaves_its_node_uncordoned_and_says_so(sim: SimCluster, sim_namespace: str) -> None:
    """An error path: api's budget allows nothing, --no-respect-pdbs plans it anyway, the Eviction API refuses it
    (429) until --timeout; its node keeps the pod and is uncordoned, the other light node is emptied."""
    ns = sim_namespace
    _busy, light = _consolidation(sim, ns)
    sim.apply(pdb(ns, "api", "api", min_available=1))
    sim.wait_workloads_ready(ns)
    api_node = next(iter(sim.placements(ns, "app=api").values()))
    proc = desched(sim.kubeconfig_for(), "balance", *HNU, "--cordon", "--no-respect-pdbs", *_scope(ns), "--yes",
                   "--timeout", "3s", "--no-pager", timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert not _unschedulable(sim, api_node) and _holding(sim, ns, api_node)
    assert f"{api_node} was not emptied (1 pod(s) stay: {ns}/" in proc.stderr and "uncordoned" in proc.stderr
    for node in set(light) - {api_node}:
        if not _holding(sim, ns, node):
            assert _unschedulable(sim, node) and f"{node} is empty and stays cordoned" in proc.stderr


def test_a_surge_whose_new_pod_never_starts_times_out_and_restores(sim: SimCluster, sim_namespace: str) -> None:
    """The timeout path, as the Ctrl-C one above: the new pod cannot start (the port), --timeout 5s ends the wait."""
    ns = sim_namespace
    port = {"ports": [{"containerPort": 80, "hostPort": 18080}]}
    _hot, cold = _guarded(sim, ns, "checkout", 1, 1, port)
    (old,) = sim.placements(ns, "app=checkout")
    for i, node in enumerate(cold):
        sim.apply(_bare(ns, f"port-{i}", node, "10m", **port))
    proc = desched(sim.kubeconfig_for(), "balance", *BALANCE, "--surge", *_scope(ns), "--yes", "--timeout", "5s",
                   "-o", "json", timeout=300)
    assert proc.returncode == 1, proc.stderr
    (result,) = json.loads(proc.stdout)["evictions"]
    assert result["result"] == "timed out" and "replicas restored, the pod stays" in result["message"]
    assert sim._must("GET", f"/apis/apps/v1/namespaces/{ns}/deployments/checkout")["spec"]["replicas"] == 1
    pod = sim._must("GET", f"/api/v1/namespaces/{ns}/pods/{old}")
    assert "controller.kubernetes.io/pod-deletion-cost" not in (pod["metadata"].get("annotations") or {})
    sim.wait_workloads_ready(ns)
    assert list(sim.placements(ns, "app=checkout")) == [old]
