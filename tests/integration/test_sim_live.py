"""kubectl desched on a cluster that behaves like a real one (tests/cluster/simcluster.py): the real scheduler and
controllers, kwok's kubelets. What LocalCluster cannot show: PDB status kept by the disruption controller, evicted
pods replaced by their Deployment or StatefulSet and placed by the scheduler, --wait-ready against the real
controllers, and two operators at once.

Each test adds its own nodes labelled sim-test=<namespace>, pins its workloads there with a nodeSelector and scopes
the CLI with --node-selector, so the tests share one cluster without seeing each other."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import pytest
from desched import as_json, desched, desched_env
from placement import compare, render, utilization
from simcluster import SimCluster, deployment, pdb, statefulset, wait_until

pytestmark = pytest.mark.integration


def _nodes(sim: SimCluster, ns: str, *names: str, cpu: str = "4") -> list[str]:
    return sim.add_nodes([f"{ns}-{n}" for n in names], cpu=cpu, memory="16Gi", labels={"sim-test": ns})


def _scope(ns: str) -> list[str]:
    return ["--node-selector", f"sim-test={ns}", "-n", ns]


def _ready_pods(sim: SimCluster, ns: str, app: str) -> list[dict[str, Any]]:
    return [p for p in sim.pods(ns, f"app={app}") if not p["metadata"].get("deletionTimestamp")
            and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or [])]


@contextmanager
def budget_watch(sim: SimCluster, ns: str, floors: Mapping[str, int]) -> Iterator[dict[str, int]]:
    """Samples, every 0.1 s while the block runs, how many pods of each app are Ready and not terminating; yields
    the lowest count seen per app. A PodDisruptionBudget kept by the real controller must never let it fall below
    the floor (minAvailable, or replicas - maxUnavailable) through evictions."""
    lowest = {app: 10**6 for app in floors}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            for app in floors:
                lowest[app] = min(lowest[app], len(_ready_pods(sim, ns, app)))
            done.wait(0.1)
    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield lowest
    finally:
        done.set()
        thread.join(timeout=10)


def _cordon(sim: SimCluster, names: list[str], on: bool) -> None:
    for name in names:
        node = sim._must("GET", f"/api/v1/nodes/{name}")
        node["spec"]["unschedulable"] = on
        sim._must("PUT", f"/api/v1/nodes/{name}", node)


def _results(doc: dict[str, Any]) -> dict[str, str]:
    return {e["pod"]: e["result"] for e in doc.get("evictions", [])}


def test_evicted_pod_is_replaced_rescheduled_and_the_budget_kept_by_the_controller(sim: SimCluster,
                                                                                  sim_namespace: str) -> None:
    """The harness itself: nothing here writes a status; kwok, the controllers and the scheduler do."""
    ns = sim_namespace
    nodes = _nodes(sim, ns, "a", "b")
    sim.apply(deployment(ns, "web", 3, cpu="500m", node_selector={"sim-test": ns}))
    sim.apply(pdb(ns, "web", "web", min_available=2))
    sim.wait_workloads_ready(ns)
    budget = sim.pdb(ns, "web")["status"]
    assert (budget["disruptionsAllowed"], budget["currentHealthy"], budget["expectedPods"]) == (1, 3, 3)
    before = sim.placements(ns)
    assert len(before) == 3 and set(before.values()) <= set(nodes)

    first, second = sorted(before)[:2]
    # Cordoned, the nodes keep the replacement Pending, so the controller cannot hand the budget back before the
    # second eviction is tried: kwok readies a replacement in well under a second, which made this a race.
    _cordon(sim, nodes, True)
    assert sim.evict(ns, first).status == 201
    refused = sim.evict(ns, second)  # the apiserver counted the first disruption: the budget is spent
    assert refused.status == 429, refused.body
    wait_until(lambda: first not in sim.placements(ns), 60, "evicted pod gone")
    assert sim.pdb(ns, "web")["status"]["disruptionsAllowed"] == 0  # two Ready of three while it is Pending
    _cordon(sim, nodes, False)
    wait_until(lambda: len(sim.placements(ns)) == 3, 60, "replacement created")
    sim.wait_workloads_ready(ns)
    after = sim.placements(ns)
    (replacement,) = set(after) - set(before)
    assert after[replacement] in nodes  # bound by the scheduler, Running by kwok
    assert sim.pdb(ns, "web")["status"]["disruptionsAllowed"] == 1  # the controller saw it come back
    assert sim.evict(ns, second).status == 201  # so the next one may go


def _busy_then_scale_out(sim: SimCluster, ns: str) -> list[str]:
    """Three nodes filled to 75% cpu by a Deployment and a StatefulSet under budgets; then two empty nodes join,
    as after a scale-out. Returns the first three nodes."""
    old = _nodes(sim, ns, "a", "b", "c")
    pin = {"sim-test": ns}
    sim.apply(deployment(ns, "web", 6, cpu="1", memory="1Gi", node_selector=pin))
    sim.apply(pdb(ns, "web", "web", min_available=5))
    for obj in statefulset(ns, "db", 3, cpu="1", memory="1Gi", node_selector=pin):
        sim.apply(obj)
    sim.apply(pdb(ns, "db", "db", max_unavailable=1))
    sim.wait_workloads_ready(ns)
    _nodes(sim, ns, "d", "e")
    return old


def test_balance_with_budgets_replaces_reschedules_and_converges(sim: SimCluster, sim_namespace: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    ns = sim_namespace
    old = _busy_then_scale_out(sim, ns)
    kc = sim.kubeconfig_for()
    budgets = {p: sim.pdb(ns, p)["status"]["disruptionsAllowed"] for p in ("web", "db")}
    assert budgets == {"web": 1, "db": 1}  # computed by the disruption controller, not written by the test

    # --no-respect-pdbs: every move is planned at once and the budgets pace the run (429s retried until the
    # controller sees the previous replacement Ready). By default the plan stops at each budget (one pod each).
    assert len(as_json(desched(kc, "balance", *_scope(ns), "--dry-run=client", "-o", "json"))["candidates"]) == 2
    plan = as_json(desched(kc, "balance", *_scope(ns), "--dry-run=client", "-o", "json", "--no-respect-pdbs"))
    planned = {c["pod"]: c["node"] for c in plan["candidates"]}
    # 9 cpu on three 4-cpu nodes: over 50% wherever the scheduler put them; 4 cpu of headroom on the new nodes
    assert 3 <= len(planned) <= 4 and set(planned.values()) <= set(old)
    assert {c["owner"].split("/")[0] for c in plan["candidates"]} <= {"ReplicaSet", "StatefulSet"}
    now = utilization(sim._must("GET", "/api/v1/nodes", query={"labelSelector": f"sim-test={ns}"})["items"],
                      sim.pods(ns))
    for n in plan["nodes"]:  # the tool reads the real cluster as the scheduler counts it
        assert n["now"]["cpu"] == pytest.approx(now[n["name"]]["cpu"], abs=0.01), n["name"]

    began = time.monotonic()
    with budget_watch(sim, ns, {"web": 5, "db": 2}) as lowest:
        proc = desched(kc, "balance", *_scope(ns), "--yes", "-o", "json", "--timeout", "2m", "--no-respect-pdbs",
                       timeout=300)
        doc = as_json(proc)
        assert proc.returncode == 0, proc.stderr
        sim.wait_workloads_ready(ns, timeout=120)
    took = time.monotonic() - began
    assert _results(doc) == dict.fromkeys(planned, "evicted")
    # Pods behind the same budget of 1 are refused (429) and retried until the controller sees the previous
    # replacement Ready: the ready count never fell below the budget's floor.
    assert lowest["web"] >= 5 and lowest["db"] >= 2, lowest

    nodes = sim._must("GET", "/api/v1/nodes", query={"labelSelector": f"sim-test={ns}"})["items"]
    pods = sim.pods(ns)
    placed = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods}
    assert len(placed) == 9 and all(placed.values())  # every replacement scheduled: the plan's headroom was real
    moved_to = Counter(p["spec"]["nodeName"] for p in _created_since(doc, pods))
    assert sum(moved_to.values()) == len(planned)
    rows = compare(plan, utilization(nodes, pods))
    with capsys.disabled():
        attempts = {e["pod"]: e["attempts"] for e in doc["evictions"]}
        sys.stdout.write(f"\nplan vs real scheduler ({took:.0f}s to evict and settle; eviction requests per pod "
                         f"{attempts}):\n{render(rows, moved_to)}\n")
    # The plan's "after" counts the replacements where the placement estimate lands them. The real scheduler
    # picks at random among equally scored nodes (d and e are twins), so the estimate is checked within the tie:
    # the same number of nodes receive the same numbers of replacements, the nodes that only lose pods end
    # exactly at "after", and the rest differ by whole replacements (1 cpu of 4) that add up to nothing.
    landing = {n["name"]: n["landing"] for n in plan["nodes"]}
    assert sorted(v for v in landing.values() if v) == sorted(moved_to.values())
    assert all(c["destination"]["estimate"] and c["destination"]["node"] in landing for c in plan["candidates"])
    per_replacement = 100.0 / 4
    cpu = [r for r in rows if r.resource == "cpu"]
    for r in cpu:
        if not landing.get(r.node) and not moved_to.get(r.node):
            assert r.error == pytest.approx(0, abs=0.01), r
        assert r.error / per_replacement == pytest.approx(round(r.error / per_replacement), abs=0.01), r
    assert sum(r.error for r in cpu) == pytest.approx(0, abs=0.01)

    second = as_json(desched(kc, "balance", *_scope(ns), "--dry-run=client", "-o", "json", "--no-respect-pdbs"))
    # Converging: fewer moves left (none, as the scheduler places them today: the new nodes are no longer
    # under-utilized) and the nodes closer together.
    assert len(second["candidates"]) < len(planned)
    spread = [max(n["now"]["cpu"] for n in p["nodes"]) - min(n["now"]["cpu"] for n in p["nodes"])
              for p in (plan, second)]
    assert spread[1] < spread[0]


def _created_since(doc: dict[str, Any], pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pods created once the evictions began: the replacements (a StatefulSet's keep their names)."""
    began = min(_ts(e["startedAt"]) for e in doc["evictions"]).replace(microsecond=0)
    return [p for p in pods if _ts(p["metadata"]["creationTimestamp"]) >= began]


def test_wait_ready_waits_for_the_real_deployment_controller(sim: SimCluster, sim_namespace: str) -> None:
    """No budget: only --wait-ready keeps the second pod of the Deployment in place until the first one's
    replacement is Ready, as the Deployment controller reports it."""
    ns = sim_namespace
    _nodes(sim, ns, "a", "b")
    sim.apply(deployment(ns, "web", 4, cpu="1200m", memory="1Gi", node_selector={"sim-test": ns}))
    sim.wait_workloads_ready(ns)
    _nodes(sim, ns, "c", "d")
    kc = sim.kubeconfig_for()
    proc = desched(kc, "balance", *_scope(ns), "--yes", "--wait-ready", "--max-in-flight", "2", "-o", "json",
                   "--timeout", "2m", timeout=300)
    doc = as_json(proc)
    assert proc.returncode == 0, proc.stderr
    evictions = sorted(doc["evictions"], key=lambda e: e["startedAt"])
    assert [e["result"] for e in evictions] == ["evicted", "evicted"]  # 60% -> 30% on each of a and b
    assert "waiting for Deployment" in proc.stderr and "its next eviction waits for" in proc.stderr
    sim.wait_workloads_ready(ns)
    first_done = _ts(evictions[0]["finishedAt"])
    second_start = _ts(evictions[1]["startedAt"])
    # The replacement of the first pod: created after it went, Ready before the second eviction started
    # (Ready times have one-second resolution).
    replacements = [p for p in sim.pods(ns) if _ts(p["metadata"]["creationTimestamp"]) >= first_done.replace(
        microsecond=0)]
    ready_at = sorted(_ts(c["lastTransitionTime"]) for p in replacements for c in p["status"]["conditions"]
                      if c["type"] == "Ready" and c["status"] == "True")
    assert ready_at and ready_at[0] <= second_start
    assert (second_start - first_done).total_seconds() > 0.2  # it did wait, although two could be in flight


def _ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_two_operators_at_once_on_the_same_deployment(sim: SimCluster, sim_namespace: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Two confirmed balances started together: each pod goes at most once, only planned pods go, and the budget
    holds throughout."""
    ns = sim_namespace
    _nodes(sim, ns, "a", "b", "c")
    sim.apply(deployment(ns, "web", 9, cpu="1", memory="1Gi", node_selector={"sim-test": ns}))
    sim.apply(pdb(ns, "web", "web", min_available=8))
    sim.wait_workloads_ready(ns)
    _nodes(sim, ns, "d", "e")
    kc = sim.kubeconfig_for()
    # --no-respect-pdbs: several pods of the one budget are planned, so the two runs race on the same budget
    plan = as_json(desched(kc, "balance", *_scope(ns), "--dry-run=client", "-o", "json", "--no-respect-pdbs"))
    planned = [c["pod"] for c in plan["candidates"]]
    assert len(planned) >= 3
    before = set(sim.placements(ns))

    args = [sys.executable, "-m", "kubectl_desched", "balance", *_scope(ns), "--yes", "-o", "json",
            "--timeout", "2m", "--no-respect-pdbs"]
    with budget_watch(sim, ns, {"web": 8}) as lowest:
        runs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=desched_env(kc)) for _ in range(2)]
        outs = [r.communicate(timeout=300) for r in runs]
        sim.wait_workloads_ready(ns, timeout=120)
    for run, (out, err) in zip(runs, outs, strict=True):
        assert run.returncode == 0 and out, err  # "gone"/"terminating" (the other one was first) are fine outcomes
    docs = [json.loads(out) for out, _err in outs]
    # a run that reads once the other's evictions are under way may find nothing to do: then it plans and sends
    # nothing, and its document has no evictions (docs/guide/output.md: "evictions when something was sent")
    assert all("evictions" in d or not d["candidates"] for d in docs), docs
    sent = [d.get("evictions", []) for d in docs]
    evicted = Counter(e["pod"] for moves in sent for e in moves if e["result"] == "evicted")
    results = Counter(e["result"] for moves in sent for e in moves)
    with capsys.disabled():
        for i, moves in enumerate(sent, 1):
            sys.stdout.write(f"\noperator {i}: " + ", ".join(f"{e['pod'][-5:]} {e['result']} ({e['attempts']})"
                                                            for e in moves))
        sys.stdout.write(f"\nlowest ready web pods seen: {lowest['web']} (budget: 8 of 9)\n")
    assert set(results) <= {"evicted", "gone", "terminating", "conflict"}, results
    assert max(evicted.values()) == 1  # no pod evicted twice
    gone = before - set(sim.placements(ns))
    assert gone == set(evicted)  # every pod that left was evicted by one of the two, and only those
    # each run plans from what it reads; one that reads after the other's replacements are placed may plan other
    # pods, so together they evict no more than their two plans, and never a pod neither planned
    assert gone and gone <= {c["pod"] for d in docs for c in d["candidates"]}
    assert lowest["web"] >= 8, lowest
    assert len(sim.placements(ns)) == 9
    again = as_json(desched(kc, "balance", *_scope(ns), "--dry-run=client", "-o", "json"))
    assert len(again["candidates"]) < len(planned)
