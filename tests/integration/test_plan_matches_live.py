"""The plan against what happens: on a real kube-apiserver, a pod whose PodDisruptionBudget has no budget left is
not planned (the next pod is), the evictions all succeed at once instead of waiting out --timeout, the nodes
table's "after" equals the cluster read back afterwards, and a re-run right after names the terminating pods."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from desched import BALANCE, as_json, desched

pytestmark = pytest.mark.integration



def _cpu(text: str) -> float:
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)


def _scenario(cluster: Any, ns: str) -> list[str]:
    labels = {"desched-test": ns}
    cluster.create_node(f"{ns}-over", labels=labels)  # 4 cpu
    cluster.create_node(f"{ns}-under", labels=labels)
    cluster.create_pod(ns, "a-guarded", f"{ns}-over", cpu="500m", labels={"app": "guarded"}, owner_name="g-rs")
    for i in range(6):
        cluster.create_pod(ns, f"web-{i}", f"{ns}-over", cpu="500m", labels={"app": "web"}, owner_name="web-rs")
    cluster.create_pod(ns, "light", f"{ns}-under", cpu="200m", owner_name="light-rs")
    cluster.create_pdb(ns, "guarded", {"app": "guarded"}, min_available=1, disruptions_allowed=0)
    return ["--node-selector", f"desched-test={ns}", "-n", ns, *BALANCE]


def _live_cpu_pct(cluster: Any, ns: str, node: str) -> float:
    """The node's cpu requests as the cluster has them now, terminating pods left out."""
    got = cluster.kubectl("get", "pods", "-n", ns, "-o", "json")
    assert got.returncode == 0, got.stderr

    pods = [p for p in json.loads(got.stdout)["items"]
            if p["spec"].get("nodeName") == node and not p["metadata"].get("deletionTimestamp")]
    used = sum(_cpu(c["resources"]["requests"]["cpu"]) for p in pods for c in p["spec"]["containers"])
    return round(used / 4 * 100, 2)


def test_blocked_pod_is_replaced_and_after_matches_the_cluster(cluster: Any, namespace: str) -> None:
    scope = _scenario(cluster, namespace)
    over = f"{namespace}-over"
    proc = desched(cluster.kubeconfig_for(), "balance", *scope, "--yes", "-o", "json", "--timeout", "120s")
    assert proc.returncode == 0, proc.stderr
    doc = as_json(proc)
    assert doc["respectPDBs"] is True
    planned = [c["pod"] for c in doc["candidates"]]
    assert "a-guarded" not in planned and planned == ["web-0", "web-1", "web-2"]  # 87.5% -> 50%
    assert {e["pod"]: e["result"] for e in doc["evictions"]} == dict.fromkeys(planned, "evicted")
    after = {n["name"]: n for n in doc["nodes"]}[over]["after"]["cpu"]
    assert after == _live_cpu_pct(cluster, namespace, over) == 50.0

    explained = as_json(desched(cluster.kubeconfig_for(), "explain", "pod", "a-guarded", *scope, "-o", "json",
                                "--plugin", "LowNodeUtilization"))
    assert "PodDisruptionBudget guarded allows no disruption" in explained["why"]

    # Right after: the evicted pods are terminating (no kubelet here finishes them) and still counted.
    rerun = as_json(desched(cluster.kubeconfig_for(), "balance", *scope, "--dry-run=client", "-o", "json"))
    row = {n["name"]: n for n in rerun["nodes"]}[over]
    assert row["terminating"] == 3
    assert any("only because of its 3 terminating pod(s)" in m["message"] for m in rerun["messages"])
    web0 = as_json(desched(cluster.kubeconfig_for(), "explain", "pod", "web-0", *scope, "-o", "json"))
    assert web0["why"].startswith("terminating")


def test_no_respect_pdbs_plans_as_upstreams_dry_run(cluster: Any, namespace: str) -> None:
    scope = _scenario(cluster, namespace)
    doc = as_json(desched(cluster.kubeconfig_for(), "balance", *scope, "--dry-run=client", "-o", "json",
                          "--no-respect-pdbs"))
    assert doc["respectPDBs"] is False
    assert doc["candidates"][0]["pod"] == "a-guarded"
    assert any("PodDisruptionBudget guarded" in w for w in doc["candidates"][0]["warnings"])


def test_progress_line_on_a_terminal_and_each_result_once(cluster: Any, namespace: str) -> None:
    """stdout and stderr on one terminal: a redrawn progress line while evicting, then each pod once (the table)."""
    from desched import FullScreen

    scope = _scenario(cluster, namespace)
    term = FullScreen(cluster.kubeconfig_for(), "balance", *scope, "--yes", "--interval", "1s", "--no-pager",
                      stdout_on_terminal=True, rows=60)
    code, _out, screen = term.finish()
    assert code == 0, screen
    raw = term.raw.decode(errors="replace")
    assert "evicting: 0/3 done" in raw and "next in 1s" in raw  # drawn while the --interval ran
    assert "evicting:" not in screen  # and cleared when done
    for pod in ("web-0", "web-1", "web-2"):
        assert len(re.findall(rf"{pod}\s+{namespace}-over\s+evicted", screen)) == 1  # the results table's row
        assert f"{pod}: evicted" not in raw  # and no live line besides it
    assert "3 confirmed: 3 evicted" in screen
