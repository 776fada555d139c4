"""The simulated cluster stays healthy while it runs: no node ever turns NotReady, every pod stays Ready, and every
PodDisruptionBudget keeps the disruptions its spec allows.

kwok v0.7.0 started without a node lease duration renews no Lease and heartbeats a node's status only every 10
minutes, so kube-controller-manager marked each node NotReady about 55 s after it joined; kwok turned the node Ready
again within seconds, but the controller had marked its pods Ready=False for good, and every budget allowed 0
disruptions (issue 29). SimCluster now has kwok renew each node's Lease as a kubelet does (tests/cluster/simcluster.py).

By default the watch lasts 100 s, past that old failure; KDESCHED_SOAK_SECONDS=600 makes it the 10-minute soak:

    KDESCHED_SOAK_SECONDS=600 .venv/bin/python -m pytest -q -s -p no:cacheprovider tests/integration/test_sim_health.py
"""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime
from typing import Any

import pytest
from simcluster import NODE_LEASE_SECONDS, NODE_MONITOR_GRACE_SECONDS, SimCluster, deployment, pdb

pytestmark = pytest.mark.integration

SOAK_SECONDS = float(os.environ.get("KDESCHED_SOAK_SECONDS") or 100)
SAMPLE_EVERY = 1.0  # nodes and leases: a flip of a few seconds must not fall between two samples
CHECK_EVERY = 10.0  # pods and budgets: a pod marked not Ready stays so under kwok

# name -> (replicas, PDB spec, the disruptions the disruption controller allows with every pod healthy)
WORKLOADS: dict[str, tuple[int, dict[str, int], int]] = {
    "web": (4, {"min_available": 3}, 1),
    "api": (3, {"max_unavailable": 1}, 1),
    "worker": (2, {"min_available": 2}, 0),
}


def _ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _ready(obj: dict[str, Any]) -> str:
    return next((c["status"] for c in obj.get("status", {}).get("conditions") or [] if c["type"] == "Ready"), "none")


class Gaps:
    """The longest interval between successive distinct timestamps seen per key (a Lease's renewTime, a node's
    Ready heartbeat)."""

    def __init__(self) -> None:
        self.last: dict[str, datetime] = {}
        self.longest: dict[str, float] = {}
        self.count: dict[str, int] = {}

    def see(self, key: str, stamp: str | None) -> None:
        if not stamp:
            return
        t = _ts(stamp)
        before = self.last.get(key)
        if before is not None and t > before:
            self.longest[key] = max(self.longest.get(key, 0.0), (t - before).total_seconds())
            self.count[key] = self.count.get(key, 0) + 1
        if before is None or t > before:
            self.last[key] = t

    def worst(self) -> str:
        if not self.longest:
            return "none seen"
        key = max(self.longest, key=self.longest.__getitem__)
        return f"{self.longest[key]:.1f}s ({key}; {sum(self.count.values())} intervals seen)"


def _problems(sim: SimCluster, ns: str) -> list[str]:
    """What is unhealthy in the namespace's pods and budgets now."""
    found = []
    pods = [p for p in sim.pods(ns) if not p["metadata"].get("deletionTimestamp")]
    for p in pods:
        if _ready(p) != "True":
            found.append(f"pod {p['metadata']['name']} Ready={_ready(p)}")
    for app, (replicas, _spec, allowed) in WORKLOADS.items():
        mine = [p for p in pods if p["metadata"]["labels"].get("app") == app]
        if len(mine) != replicas:
            found.append(f"{app}: {len(mine)} pods, expected {replicas}")
        status = sim.pdb(ns, app).get("status") or {}
        seen = (status.get("currentHealthy"), status.get("expectedPods"), status.get("disruptionsAllowed"))
        if seen != (replicas, replicas, allowed):
            found.append(f"pdb {app}: currentHealthy/expectedPods/disruptionsAllowed {seen}, expected "
                         f"{(replicas, replicas, allowed)}")
    return found


def _not_ready_events(sim: SimCluster, ns: str, nodes: list[str]) -> list[str]:
    """The NodeNotReady events the node lifecycle controller records on a node going NotReady and on each of its
    pods it marks not Ready: proof of a flip however short."""
    events = sim._must("GET", "/api/v1/events", query={"fieldSelector": "reason=NodeNotReady"})["items"]
    return [f"{e['involvedObject']['kind']} {e['involvedObject']['name']}: {e.get('message')}" for e in events
            if e["involvedObject"]["name"] in nodes or e["involvedObject"].get("namespace") == ns]


def test_nodes_pods_and_budgets_stay_healthy(sim: SimCluster, sim_namespace: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    ns = sim_namespace
    nodes = sim.add_nodes([f"{ns}-{n}" for n in "abc"], labels={"sim-test": ns})
    joined = time.monotonic()
    for app, (replicas, spec, _allowed) in WORKLOADS.items():
        sim.apply(deployment(ns, app, replicas, cpu="250m", memory="256Mi", node_selector={"sim-test": ns}))
        sim.apply(pdb(ns, app, app, **spec))
    sim.wait_workloads_ready(ns)
    assert _problems(sim, ns) == []

    leases, heartbeats = Gaps(), Gaps()
    began = time.monotonic()
    next_check = began
    checks = samples = 0
    while (now := time.monotonic()) < began + SOAK_SECONDS:
        when = f"{now - joined:.0f}s after the nodes joined"
        for node in sim._must("GET", "/api/v1/nodes", query={"labelSelector": f"sim-test={ns}"})["items"]:
            name = node["metadata"]["name"]
            assert _ready(node) == "True", f"node {name} Ready={_ready(node)} {when}"
            heartbeats.see(name, next(c.get("lastHeartbeatTime") for c in node["status"]["conditions"]
                                      if c["type"] == "Ready"))
            lease = sim.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}")
            leases.see(name, lease.body["spec"].get("renewTime") if lease.ok else None)
        samples += 1
        if now >= next_check:
            assert _problems(sim, ns) == [], when
            checks += 1
            next_check += CHECK_EVERY
        time.sleep(SAMPLE_EVERY)
    assert _problems(sim, ns) == []
    assert _not_ready_events(sim, ns, nodes) == []
    # The controller counts a node alive by its Lease: each was renewed well inside the grace period.
    assert set(leases.longest) == set(nodes), f"a node's Lease was never renewed: {leases.longest}"
    assert max(leases.longest.values()) < NODE_MONITOR_GRACE_SECONDS / 2, leases.worst()
    with capsys.disabled():
        sys.stdout.write(
            f"\nsim cluster healthy for {time.monotonic() - began:.0f}s ({time.monotonic() - joined:.0f}s since the "
            f"nodes joined): {samples} samples of {len(nodes)} nodes, {checks} checks of "
            f"{sum(r for r, _s, _a in WORKLOADS.values())} pods and {len(WORKLOADS)} budgets; longest gap between "
            f"Lease renewals {leases.worst()} (lease {NODE_LEASE_SECONDS}s, grace {NODE_MONITOR_GRACE_SECONDS}s); "
            f"between status heartbeats {heartbeats.worst()}\n")
