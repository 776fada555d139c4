"""Eviction safety against the real kube-apiserver: concurrent operators over the same pods, answers that are
lost or unreadable, a 404 from a proxy, SIGTERM/SIGHUP while acting and at the prompt, and server dry runs
that meet a PodDisruptionBudget. Faults are forged by tests/integration/faultproxy.py. There is no kubelet:
an evicted pod stays terminating, which is what the assertions read."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from desched import Interactive, desched, desched_env
from faultproxy import FaultProxy

pytestmark = pytest.mark.integration

TAINT = {"key": "maintenance", "value": "soon", "effect": "NoSchedule"}


def tainted(cluster: Any, ns: str, pods: list[str]) -> list[str]:
    """A tainted node with these pods on it; returns the arguments that propose them all, in name order."""
    node = f"{ns}-n"
    cluster.create_node(node, taints=[TAINT])
    for p in pods:
        cluster.create_pod(ns, p, node, labels={"app": p.split("-")[0]}, owner_name=f"{p}-rs")
    return ["deschedule", "--plugin", "RemovePodsViolatingNodeTaints", "-n", ns, "--nodes", node]


def terminating(cluster: Any, ns: str, name: str) -> bool:
    pod = cluster.get_pod(ns, name)
    return pod is None or bool(pod["metadata"].get("deletionTimestamp"))


def results(path: Path) -> dict[str, dict[str, Any]]:
    return {e["pod"]: e for e in json.loads(path.read_text())["evictions"]}


def evictions_rule(actions: dict[str, list[str]]) -> Any:
    """A proxy rule: the nth eviction POST of a pod gets actions[pod][n-1] (then "pass"); everything else passes."""
    def rule(method: str, path: str, nth: int) -> str:
        if method != "POST" or not path.endswith("/eviction"):
            return "pass"
        todo = actions.get(path.split("/")[-2], [])
        return todo[nth - 1] if nth <= len(todo) else "pass"
    return rule


def via_proxy(proxy: FaultProxy, cluster: Any, tmp_path: Path) -> Path:
    return proxy.kubeconfig(cluster.kubeconfig_for(), tmp_path / "via-proxy.kubeconfig")


# ---------------------------------------------------------------- two (three) operators at once

def _shop(cluster: Any, ns: str, pods: int = 9) -> list[str]:
    """One node at 90% cpu with `pods` pods and three empty huge ones (1% of each takes them all), no PDB:
    balance moves every pod."""
    labels = {"desched-test": ns}
    cluster.create_node(f"{ns}-over", cpu="4", labels=labels)
    for i in range(3):
        cluster.create_node(f"{ns}-under-{i}", cpu="1000", memory="256Gi", labels=labels)
    for i in range(pods):
        cluster.create_pod(ns, f"shop-{i}", f"{ns}-over", cpu=f"{3600 // pods}m", labels={"app": "shop"},
                           owner_name="shop-rs")
    # --keep-futile: the shared cluster has no scheduler, and other tests' nodes change where the estimate would
    # land the replacements; these tests are about acting, not about which moves are futile
    return ["balance", "-n", ns, "--node-selector", f"desched-test={ns}", "--thresholds", "cpu=1,memory=20,pods=20",
            "--target-thresholds", "cpu=1,memory=50,pods=50", "--yes", "--max-in-flight", "8", "--keep-futile"]


@pytest.mark.parametrize("lined_up", [True, False], ids=["lined-up", "as-they-come"])
def test_three_concurrent_runs_evict_and_report_each_pod_once(cluster: Any, namespace: str, tmp_path: Path,
                                                              lined_up: bool) -> None:
    """Lined up, the proxy holds each pod's eviction until all three runs have sent theirs (so all three read the
    pod before any eviction lands): the race the re-read alone lost. As they come is the campaign's own case."""
    args = _shop(cluster, namespace)
    barriers: dict[str, threading.Barrier] = {}
    lock = threading.Lock()

    def rule(method: str, path: str, _nth: int) -> str:
        if lined_up and method == "POST" and path.endswith("/eviction"):
            with lock:
                barrier = barriers.setdefault(path, threading.Barrier(3, timeout=30))
            with contextlib.suppress(threading.BrokenBarrierError):  # a run that did not plan it: let the rest go
                barrier.wait()
        return "pass"

    with FaultProxy(cluster.server, cluster.ca_file, tmp_path, rule) as proxy:
        kubeconfig = via_proxy(proxy, cluster, tmp_path)
        reports = [tmp_path / f"run-{i}.json" for i in range(3)]
        runs = [subprocess.Popen([*_python(), *args, "--report", str(r)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=desched_env(kubeconfig)) for r in reports]
        outs = [p.communicate(timeout=180) for p in runs]
        accepted = Counter(s.path.split("/")[-2] for s in proxy.seen("POST", "/eviction") if s.upstream == 201)

    for p, (_out, err) in zip(runs, outs, strict=True):
        assert p.returncode == 0, err  # "conflict" and "terminating" are not failures: the pod is going
    docs = [results(r) for r in reports]
    pods = sorted({pod for d in docs for pod in d})
    assert pods == [f"shop-{i}" for i in range(9)]
    for pod in pods:
        words = sorted(d[pod]["result"] for d in docs if pod in d)
        assert words.count("evicted") == 1, (pod, words)
        assert set(words) - {"evicted"} <= {"conflict", "terminating"}, (pod, words)
        assert terminating(cluster, namespace, pod)
    assert accepted == dict.fromkeys(pods, 1)  # the API server applied one eviction per pod, not two
    if lined_up:
        conflicts = [d[p] for d in docs for p in d if d[p]["result"] == "conflict"]
        assert len(conflicts) == 18  # all three sent; two of three lost each race
        assert all("someone else evicted or deleted it first" in c["message"] and "(409)" in c["message"]
                   and "re-read: the pod is terminating" in c["message"] for c in conflicts)


def _python() -> list[str]:
    return [sys.executable, "-m", "kubectl_desched"]


# ---------------------------------------------------------------- answers nobody can read, 404 from a proxy

def test_unreadable_answers_are_lost_answers_and_a_proxy_404_is_not_gone(cluster: Any, namespace: str,
                                                                         tmp_path: Path) -> None:
    pods = ["u0-html", "u1-cut", "u2-404", "u3-fine"]
    args = tainted(cluster, namespace, pods)
    rule = evictions_rule({"u0-html": ["html-after"], "u1-cut": ["cut-after"], "u2-404": ["404"]})
    report = tmp_path / "r.json"
    with FaultProxy(cluster.server, cluster.ca_file, tmp_path, rule) as proxy:
        proc = desched(via_proxy(proxy, cluster, tmp_path), *args, "--yes", "--report", str(report))
        posts = proxy.seen("POST", "/eviction")
    assert proc.returncode == 1, proc.stderr
    assert "JSONDecodeError" not in proc.stderr + proc.stdout and "internal error" not in proc.stderr
    r = results(report)
    for pod, what in (("u0-html", "bytes of HTML"), ("u1-cut", "cut short after")):
        assert r[pod]["result"] == "unknown" and r[pod]["attempts"] == 1, r[pod]
        assert r[pod]["message"].startswith(f"the answer to POST /api/v1/namespaces/{namespace}/pods/{pod}/eviction "
                                            "was not JSON (") and what in r[pod]["message"], r[pod]
        assert "re-read: the pod is terminating (since" in r[pod]["message"]
        assert terminating(cluster, namespace, pod)
    assert r["u2-404"]["result"] == "failed" and not terminating(cluster, namespace, "u2-404")
    assert r["u2-404"]["message"] == "not evicted: Not Found (404), yet a re-read shows the pod unchanged"
    assert r["u3-fine"]["result"] == "evicted"
    assert [s.upstream for s in posts if s.path.split("/")[-2] == "u2-404"] == [None]  # never reached the server
    assert sum(1 for s in posts if s.path.split("/")[-2] in ("u0-html", "u1-cut")) == 2  # and not sent again


def test_a_resend_after_a_lost_answer_carries_the_latest_version(cluster: Any, namespace: str,
                                                                 tmp_path: Path) -> None:
    """The first request never reaches the server, and meanwhile the pod changes (a label): the resend must be
    conditional on the version the re-read saw, or the server refuses it with 409."""
    args = tainted(cluster, namespace, ["web-0"])
    path = f"/api/v1/namespaces/{namespace}/pods/web-0"

    def rule(method: str, p: str, nth: int) -> str:
        if method == "POST" and p.endswith("/eviction") and nth == 1:
            pod = cluster._must("GET", path)
            pod["metadata"].setdefault("labels", {})["touched"] = "yes"
            cluster._must("PUT", path, pod)
            return "drop"
        return "pass"

    report = tmp_path / "r.json"
    with FaultProxy(cluster.server, cluster.ca_file, tmp_path, rule) as proxy:
        proc = desched(via_proxy(proxy, cluster, tmp_path), *args, "--yes", "--report", str(report))
        sends = [(s.action, s.upstream) for s in proxy.seen("POST", "/eviction")]
    assert proc.returncode == 0, proc.stderr
    assert results(report)["web-0"]["result"] == "evicted" and results(report)["web-0"]["attempts"] == 2
    assert sends == [("drop", None), ("pass", 201)]
    assert terminating(cluster, namespace, "web-0")


def test_someone_else_evicting_between_the_re_read_and_the_request_is_a_conflict(cluster: Any, namespace: str,
                                                                                  tmp_path: Path) -> None:
    args = tainted(cluster, namespace, ["web-0", "web-1"])

    def rule(method: str, p: str, nth: int) -> str:
        if method == "POST" and p.endswith("/web-0/eviction") and nth == 1:
            assert cluster.evict(namespace, "web-0").ok  # the other operator's eviction lands first
        return "pass"

    report = tmp_path / "r.json"
    with FaultProxy(cluster.server, cluster.ca_file, tmp_path, rule) as proxy:
        proc = desched(via_proxy(proxy, cluster, tmp_path), *args, "--yes", "--report", str(report))
        sends = [(s.path.split("/")[-2], s.upstream) for s in proxy.seen("POST", "/eviction")]
    assert proc.returncode == 0, proc.stderr
    r = results(report)
    assert r["web-0"]["result"] == "conflict" and r["web-1"]["result"] == "evicted"
    assert re.fullmatch(r"not evicted by this run: someone else evicted or deleted it first \(.*\(409\)\); "
                        r"re-read: the pod is terminating \(since .*\)", r["web-0"]["message"])
    assert sorted(sends) == [("web-0", 409), ("web-1", 201)]
    assert "web-0: conflict" in proc.stderr


# ---------------------------------------------------------------- SIGTERM and SIGHUP

@pytest.mark.parametrize(("sig", "code", "name"), [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGHUP, 129, "SIGHUP")])
def test_sigterm_during_a_retry_writes_the_report(cluster: Any, namespace: str, tmp_path: Path, sig: int, code: int,
                                                  name: str) -> None:
    args = tainted(cluster, namespace, ["a-guarded", "b-web", "c-web"])
    cluster.create_pdb(namespace, "a", {"app": "a"}, min_available=1, disruptions_allowed=0)
    report = tmp_path / "r.json"
    # --no-respect-pdbs: the guarded pod is planned so that its eviction is retried on 429 while the signal comes
    session = Interactive(cluster.kubeconfig_for(), *args, "--no-respect-pdbs", "--yes", "--max-in-flight", "2",
                          "--interval", "3s", "--timeout", "60s", "--report", str(report))
    session.wait_for("b-web: evicted")
    session.wait_for("retry 2 in")  # a-guarded is being retried
    session.proc.send_signal(sig)
    got, out, err = session.finish(timeout=30)
    assert got == code, err
    assert f"interrupted by {name}: no new evictions" in err
    assert f"interrupted by {name}: 1 evicted, 1 not evicted, 1 not attempted." in err
    doc = json.loads(report.read_text())
    r = {e["pod"]: e for e in doc["evictions"]}
    assert r["b-web"]["result"] == "evicted"
    assert r["a-guarded"]["result"] == "interrupted"
    assert r["a-guarded"]["message"].startswith(f"not evicted: stopped by {name} while retrying (PodDisruptionBudget")
    assert r["c-web"]["result"] == "interrupted" and r["c-web"]["message"] == \
        f"not evicted: stopped by {name} before its turn"
    assert doc["summary"] == {"confirmed": 3, "results": {"interrupted": 2, "evicted": 1}, "interrupted": True,
                              "exitCode": code, "interruptedBy": name}
    assert re.search(r"b-web\s+\S+\s+evicted", out)
    assert [p for p in ("a-guarded", "b-web", "c-web") if terminating(cluster, namespace, p)] == ["b-web"]


@pytest.mark.parametrize(("sig", "code", "name"), [(signal.SIGINT, 130, "Ctrl-C"), (signal.SIGTERM, 143, "SIGTERM"),
                                                   (signal.SIGHUP, 129, "SIGHUP")])
def test_an_interrupt_at_the_prompt_exits_128_plus_n(cluster: Any, namespace: str, tmp_path: Path, sig: int, code: int,
                                                     name: str) -> None:
    args = tainted(cluster, namespace, ["web-0"])
    report = tmp_path / "r.json"
    session = Interactive(cluster.kubeconfig_for(), *args, "--report", str(report))
    session.wait_for("[a]ll, [s]elect pod by pod, [n]o")
    session.proc.send_signal(sig)
    got, _out, err = session.finish(timeout=30)
    assert got == code, err
    assert err.rstrip().endswith("nothing further was evicted") and "Traceback" not in err
    doc = json.loads(report.read_text())
    assert doc["confirmation"]["refused"] == f"interrupted by {name} at the prompt"
    assert doc["error"] == f"interrupted by {name} before any eviction was sent"
    assert not terminating(cluster, namespace, "web-0")


# ---------------------------------------------------------------- server dry run and budgets

def test_a_server_dry_run_answers_budgets_at_once_and_counts_the_plan(cluster: Any, namespace: str,
                                                                      tmp_path: Path) -> None:
    args = tainted(cluster, namespace, ["db-0", "web-0", "web-1", "web-2"])
    cluster.create_pdb(namespace, "db", {"app": "db"}, min_available=1, disruptions_allowed=0)
    cluster.create_pdb(namespace, "web", {"app": "web"}, min_available=1, disruptions_allowed=1)
    report = tmp_path / "r.json"
    began = time.monotonic()
    proc = desched(cluster.kubeconfig_for(), *args, "--no-respect-pdbs", "--dry-run=server", "--yes", "--timeout", "5m",
                   "--report", str(report))
    took = time.monotonic() - began
    assert proc.returncode == 1, proc.stderr
    assert took < 30  # no backoff: the 429 is the answer
    r = results(report)
    assert r["db-0"]["result"] == "blocked" and r["db-0"]["attempts"] == 1
    assert r["db-0"]["message"].startswith("PodDisruptionBudget: Cannot evict pod as it would violate the pod's "
                                           "disruption budget.")
    assert "The disruption budget db needs 1 healthy pods" in r["db-0"]["message"]  # the server names it
    assert r["db-0"]["message"].endswith("(server dry run: not retried)")
    assert r["web-0"]["result"] == "would evict"
    for p in ("web-1", "web-2"):  # the server accepts each alone; the plan knows web-0 used the one disruption
        assert r[p]["result"] == "blocked", r[p]
        assert r[p]["message"].startswith("PodDisruptionBudget web allows 1 disruption(s), all taken by the "), r[p]
        assert "eviction will be refused (the server dry run accepted it alone" in r[p]["message"]
    assert not any(terminating(cluster, namespace, p) for p in ("db-0", "web-0", "web-1", "web-2"))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_a_second_signal_abandons_a_hung_eviction_and_exits_at_once(cluster: Any, namespace: str, tmp_path: Path,
                                                                     sig: int) -> None:
    """The eviction reaches the server, whose answer the proxy then holds (over TLS). The first signal stops new
    evictions and waits for it; the second abandons it, and the process ends within moments with 128+N: the
    worker still waiting inside TLS neither holds the exit nor crashes it."""
    args = tainted(cluster, namespace, ["a-web", "b-web"])
    cluster.create_node(f"{namespace}-spare")  # a second Ready node: with one, upstream plans nothing
    report = tmp_path / "r.json"
    name = "SIGTERM" if sig == signal.SIGTERM else "Ctrl-C"
    with FaultProxy(cluster.server, cluster.ca_file, tmp_path, evictions_rule({"a-web": ["hang-after"]}),
                    hang=60) as proxy:
        session = Interactive(via_proxy(proxy, cluster, tmp_path), *args, "--yes", "--max-in-flight", "1",
                              "--report", str(report))
        try:
            proxy.wait_until_seen("POST", "/a-web/eviction", session.proc)
            session.proc.send_signal(sig)
            session.wait_for("no new evictions")
            sent = time.monotonic()
            session.proc.send_signal(sig)
            got, _out, err = session.finish(timeout=20)
            took = time.monotonic() - sent
        finally:
            session.proc.kill()
    assert got == 128 + sig, err
    assert took < 5, f"took {took:.1f} s to leave"
    assert "Traceback" not in err
    r = results(report)
    assert r["a-web"]["result"] == "unknown"
    assert r["a-web"]["message"].startswith(f"abandoned by a second {name} while the eviction was in flight")
    assert r["b-web"]["result"] == "interrupted"
    assert terminating(cluster, namespace, "a-web") and not terminating(cluster, namespace, "b-web")
