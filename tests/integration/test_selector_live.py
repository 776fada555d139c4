"""The full-screen selector on a real pseudo-terminal against a real kube-apiserver: keys choose the pods, the
final question names them, and exactly those are evicted."""

from __future__ import annotations

from typing import Any

import pytest
from desched import BALANCE, FullScreen

pytestmark = pytest.mark.integration


def _two_hot_nodes(cluster: Any, ns: str) -> list[str]:
    labels = {"desched-test": ns}
    for node in ("hot-a", "hot-b", "cold"):
        cluster.create_node(f"{ns}-{node}", labels=labels)
    for node in ("hot-a", "hot-b"):
        for i in range(6):
            cluster.create_pod(ns, f"{node}-web-{i}", f"{ns}-{node}", cpu="600m", labels={"app": "web"},
                               owner_name=f"{node}-rs")
    return ["--node-selector", f"desched-test={ns}", "-n", ns, *BALANCE]


def _gone(cluster: Any, ns: str, name: str) -> bool:
    pod = cluster.get_pod(ns, name)
    return pod is None or bool(pod["metadata"].get("deletionTimestamp"))


def test_selector_chooses_by_key_and_evicts_exactly_that(cluster: Any, namespace: str) -> None:
    scope = _two_hot_nodes(cluster, namespace)
    screen = FullScreen(cluster.kubeconfig_for(), "balance", *scope)
    screen.wait_for("Choose the pods to evict")
    screen.wait_for(f"node {namespace}-hot-a")
    screen.keys("n")  # the cursor starts on hot-a's first pod: drop the whole node (its 3 candidates)
    screen.wait_for(f"node {namespace}-hot-a  (0/3 chosen)")
    screen.keys("jjj")  # to hot-b's candidate: the detail pane follows the cursor
    screen.wait_for(f"pod        {namespace}/hot-b-web-0")
    screen.wait_for("lands on   ")  # the placement estimate, in the detail pane
    screen.keys("k ")  # back to hot-a's last candidate and choose it again
    screen.wait_for(f"node {namespace}-hot-a  (1/3 chosen)")
    screen.keys("\r")
    screen.wait_for("Evict 2 pods from 2 nodes? [y/N]")
    screen.keys("y\r")
    code, _out, shown = screen.finish()
    assert code == 0, shown
    gone = sorted(f"{n}-web-{i}" for n in ("hot-a", "hot-b") for i in range(6)
                  if _gone(cluster, namespace, f"{n}-web-{i}"))
    assert gone == ["hot-a-web-2", "hot-b-web-0"]


def test_selector_cancel_evicts_nothing(cluster: Any, namespace: str) -> None:
    scope = _two_hot_nodes(cluster, namespace)
    screen = FullScreen(cluster.kubeconfig_for(), "balance", *scope)
    screen.wait_for("Choose the pods to evict")
    screen.keys("q")
    code, _out, shown = screen.finish()
    assert code == 3 and "nothing was evicted" in shown
    assert not any(_gone(cluster, namespace, f"{n}-web-{i}") for n in ("hot-a", "hot-b") for i in range(6))


def test_final_no_after_the_selector_evicts_nothing(cluster: Any, namespace: str) -> None:
    scope = _two_hot_nodes(cluster, namespace)
    screen = FullScreen(cluster.kubeconfig_for(), "balance", *scope)
    screen.wait_for("Choose the pods to evict")
    screen.keys("\r")
    screen.wait_for("[y/N]")
    screen.keys("\r")  # the default is no
    code, _out, shown = screen.finish()
    assert code == 3 and "nothing was evicted" in shown
    assert not any(_gone(cluster, namespace, f"{n}-web-{i}") for n in ("hot-a", "hot-b") for i in range(6))
