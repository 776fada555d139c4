"""Safe evictions against the real kube-apiserver: RBAC preflight, 429 retries, --wait-ready, Ctrl-C, re-reads,
--report, --record-events, and faults injected by a proxy between the tool and the server.

Pods sit on a node tainted NoSchedule, so RemovePodsViolatingNodeTaints proposes every one of them, in name
order. There is no kubelet: an evicted pod stays terminating (deletionTimestamp set), which is what the
assertions read; owner and PodDisruptionBudget status is written by the tests, as the controllers would."""

from __future__ import annotations

import json
import re
import signal
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from desched import Interactive, desched
from faultproxy import FaultProxy

pytestmark = pytest.mark.integration

TAINT = {"key": "maintenance", "value": "soon", "effect": "NoSchedule"}


def tainted(cluster: Any, ns: str, pods: list[str], owner: Callable[[str], str] = lambda p: f"{p}-rs") -> list[str]:
    """A tainted node with these pods on it; returns the CLI arguments that propose them all."""
    node = f"{ns}-n"
    cluster.create_node(node, taints=[TAINT])
    for p in pods:
        cluster.create_pod(ns, p, node, labels={"app": p.split("-")[0]}, owner_name=owner(p))
    return ["deschedule", "--plugin", "RemovePodsViolatingNodeTaints", "-n", ns, "--nodes", node]


def terminating(cluster: Any, ns: str, name: str) -> bool:
    pod = cluster.get_pod(ns, name)
    return pod is None or bool(pod["metadata"].get("deletionTimestamp"))


def report_of(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def results(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["pod"]: e for e in doc["evictions"]}


def parse_ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def rbac(cluster: Any, name: str, rules: list[dict[str, Any]], namespace: str | None = None) -> Callable[[], None]:
    """Grant the limited user these rules (cluster-wide, or in one namespace); returns the cleanup."""
    kind, binding_kind = ("Role", "RoleBinding") if namespace else ("ClusterRole", "ClusterRoleBinding")
    base = f"/apis/rbac.authorization.k8s.io/v1{f'/namespaces/{namespace}' if namespace else ''}"
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta, "rules": rules}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": binding_kind, "metadata": meta,
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "limited"}]}
    plural = kind.lower() + "s"
    assert cluster.request("POST", f"{base}/{plural}", role).ok
    assert cluster.request("POST", f"{base}/{binding_kind.lower()}s", binding).ok

    def cleanup() -> None:
        cluster.request("DELETE", f"{base}/{binding_kind.lower()}s/{name}")
        cluster.request("DELETE", f"{base}/{plural}/{name}")
    return cleanup


READ = [{"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list"]},
        {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["list"]}]
EVICT = [{"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]}]


# ---------------------------------------------------------------- RBAC preflight

def test_preflight_names_what_is_missing_before_asking(cluster: Any, namespace: str, tmp_path: Path) -> None:
    args = tainted(cluster, namespace, ["web-0", "web-1"])
    cluster.create_node(f"{namespace}-spare")  # upstream skips a cycle with fewer than two Ready nodes
    other = f"{namespace}-b"
    cluster.create_namespace(other)
    cluster.create_pod(other, "api-0", f"{namespace}-n", owner_name="api-rs")
    args = [*args[:4], f"{namespace},{other}", *args[5:]]
    limited = cluster.kubeconfig_for("limited")
    cleanups = [rbac(cluster, f"read-{namespace}", READ), rbac(cluster, "evict", EVICT, namespace=namespace)]
    try:
        # No --yes and no terminal: it would stop at the prompt with exit 3; the preflight comes first.
        report = tmp_path / "refused.json"
        refused = desched(limited, *args, "--report", str(report))
        assert refused.returncode == 1, refused.stderr
        assert refused.stderr == (f"error: not allowed to create pods/eviction in namespace {other} "
                                  "(checked before asking: nothing was evicted)\n")
        doc = report_of(report)  # written on failure too
        assert doc["preflight"]["missing"] == [f"create pods/eviction in namespace {other}"]
        assert doc["error"].startswith("not allowed to create pods/eviction")
        assert doc["confirmation"] is None and doc["evictions"] == [] and len(doc["candidates"]) == 3
        cleanups.append(rbac(cluster, "evict", EVICT, namespace=other))
        ok = desched(limited, *args, "--yes", "--record-events")
        assert ok.returncode == 0, ok.stderr
        assert "warning: --record-events: not allowed to create events.events.k8s.io in namespaces" in ok.stderr
        assert "evictions will go ahead without events" in ok.stderr
        assert "event could not be recorded (HTTP 403)" in ok.stderr  # a warning, not a failed eviction
    finally:
        for c in cleanups:
            c()
    assert all(terminating(cluster, namespace, p) for p in ("web-0", "web-1"))
    assert terminating(cluster, other, "api-0")


# ---------------------------------------------------------------- 429: retry with backoff, then blocked

def test_budget_that_frees_up_is_waited_for_and_one_that_does_not_is_blocked(cluster: Any, namespace: str,
                                                                              tmp_path: Path) -> None:
    args = tainted(cluster, namespace, ["db-0", "db-1"])
    cluster.create_pdb(namespace, "db", {"app": "db"}, min_available=1, disruptions_allowed=0)
    report = tmp_path / "blocked.json"
    # --no-respect-pdbs: planned although the budget is spent, so the Eviction API's 429 and the retries are tested
    blocked = desched(cluster.kubeconfig_for(), *args, "--no-respect-pdbs", "--yes", "--timeout", "2s", "--report",
                      str(report))
    assert blocked.returncode == 1
    doc = report_of(report)
    assert {r["result"] for r in doc["evictions"]} == {"blocked"}
    assert all(r["attempts"] >= 2 and "gave up after" in r["message"] for r in doc["evictions"])
    assert not terminating(cluster, namespace, "db-0") and not terminating(cluster, namespace, "db-1")

    # Free one disruption only once the tool has been refused, as the disruption controller would when a
    # replacement becomes ready: the retry, not the first request, must get through.
    session = Interactive(cluster.kubeconfig_for(), *args, "--no-respect-pdbs", "--yes", "--timeout", "5s",
                          "--report", str(report))
    session.wait_for("retry 1 in")
    cluster.set_pdb_status(namespace, "db", 1)
    code, _out, _err = session.finish(timeout=60)
    doc = results(report_of(report))
    assert doc["db-0"]["result"] == "evicted" and doc["db-0"]["attempts"] >= 2
    # The budget the tool consumed is not given back (no controller), so db-1 stays blocked: never deleted.
    assert doc["db-1"]["result"] == "blocked" and not terminating(cluster, namespace, "db-1")
    assert code == 1


# ---------------------------------------------------------------- --wait-ready

def _deployment(cluster: Any, ns: str, name: str, replicas: int) -> str:
    """A Deployment and its ReplicaSet as the controllers would leave them; returns the ReplicaSet name."""
    template = {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}}
    spec = {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template}
    dep = cluster._must("POST", f"/apis/apps/v1/namespaces/{ns}/deployments",
                        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": spec})
    rs = f"{name}-5d8f"
    cluster._must("POST", f"/apis/apps/v1/namespaces/{ns}/replicasets", {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": rs, "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                                                      "uid": dep["metadata"]["uid"], "controller": True}]},
        "spec": spec})
    _set_ready(cluster, ns, name, replicas)
    return rs


def _set_ready(cluster: Any, ns: str, name: str, ready: int) -> None:
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/{name}/status"
    dep = cluster._must("GET", path)
    dep["status"] = {"replicas": dep["spec"]["replicas"], "readyReplicas": ready,
                     "availableReplicas": ready, "observedGeneration": dep["metadata"]["generation"]}
    cluster._must("PUT", path, dep)


def test_wait_ready_waits_for_the_deployment_between_its_pods(cluster: Any, namespace: str, tmp_path: Path) -> None:
    rs = _deployment(cluster, namespace, "web", 3)
    args = tainted(cluster, namespace, ["web-0", "web-1", "web-2"], owner=lambda _p: rs)
    ready_at: dict[str, datetime] = {}

    def controller() -> None:
        """What the ReplicaSet controller and kubelet would do: ready drops after an eviction, then recovers."""
        for pod in ("web-0", "web-1"):
            deadline = time.monotonic() + 30
            while not terminating(cluster, namespace, pod) and time.monotonic() < deadline:
                time.sleep(0.1)
            _set_ready(cluster, namespace, "web", 2)
            time.sleep(1.0)
            ready_at[pod] = datetime.now(UTC)
            _set_ready(cluster, namespace, "web", 3)

    thread = threading.Thread(target=controller, daemon=True)
    thread.start()
    report = tmp_path / "r.json"
    proc = desched(cluster.kubeconfig_for(), *args, "--yes", "--wait-ready", "--timeout", "20s",
                   "--report", str(report))
    thread.join(5)
    assert proc.returncode == 0, proc.stderr
    doc = report_of(report)
    r = results(doc)
    assert [r[p]["result"] for p in ("web-0", "web-1", "web-2")] == ["evicted"] * 3
    for pod, after in (("web-1", "web-0"), ("web-2", "web-1")):  # the report keeps milliseconds
        ready = ready_at[after]
        assert parse_ts(r[pod]["startedAt"]) >= ready.replace(microsecond=ready.microsecond // 1000 * 1000)
    assert "waiting for Deployment " + namespace + "/web: " in proc.stderr  # and what it waits on
    assert doc["pacing"]["waitReady"] is True


def test_wait_ready_timeout_leaves_the_rest_of_the_workload_alone(cluster: Any, namespace: str) -> None:
    rs = _deployment(cluster, namespace, "web", 3)
    args = tainted(cluster, namespace, ["web-0", "web-1"], owner=lambda _p: rs)
    proc = desched(cluster.kubeconfig_for(), *args, "--yes", "--wait-ready", "--timeout", "1s")
    assert proc.returncode == 1
    assert "web-1: held (not evicted: Deployment " in proc.stderr
    assert "status unchanged since the eviction: is its controller running?" in proc.stderr
    assert terminating(cluster, namespace, "web-0") and not terminating(cluster, namespace, "web-1")


# ---------------------------------------------------------------- Ctrl-C

def test_ctrl_c_stops_new_evictions_and_reports_what_was_done(cluster: Any, namespace: str, tmp_path: Path) -> None:
    args = tainted(cluster, namespace, ["a-guarded", "b-web", "c-web", "d-web"])
    cluster.create_pdb(namespace, "a", {"app": "a"}, min_available=1, disruptions_allowed=0)
    report = tmp_path / "r.json"
    session = Interactive(cluster.kubeconfig_for(), *args, "--no-respect-pdbs", "--yes", "--max-in-flight", "2",
                          "--interval", "2s",
                          "--timeout", "60s", "--report", str(report))
    session.wait_for("b-web: evicted")
    session.proc.send_signal(signal.SIGINT)
    code, out, err = session.finish(timeout=30)
    assert code == 130, err
    assert "interrupted: no new evictions" in err
    assert "interrupted: 1 evicted, 1 not evicted, 2 not attempted." in err
    assert re.search(r"c-web\s+\S+\s+interrupted\s+not evicted: stopped by Ctrl-C before its turn", out)
    doc = report_of(report)
    r = results(doc)
    assert r["a-guarded"]["result"] == "interrupted" and "while retrying (PodDisruptionBudget" in \
        r["a-guarded"]["message"]
    assert r["b-web"]["result"] == "evicted"
    assert r["c-web"]["result"] == r["d-web"]["result"] == "interrupted" and r["c-web"]["startedAt"] is None
    assert doc["summary"]["interrupted"] is True and doc["summary"]["exitCode"] == 130
    assert [p for p in ("a-guarded", "b-web", "c-web", "d-web") if terminating(cluster, namespace, p)] == ["b-web"]


# ---------------------------------------------------------------- re-read right before each eviction

def test_pods_that_changed_after_the_prompt_are_skipped_with_the_reason(cluster: Any, namespace: str) -> None:
    args = tainted(cluster, namespace, ["p-gone", "p-ok", "p-terminating"])
    session = Interactive(cluster.kubeconfig_for(), *args)
    session.wait_for("[a]ll, [s]elect pod by pod, [n]o")
    base = f"/api/v1/namespaces/{namespace}/pods"
    assert cluster.request("DELETE", f"{base}/p-gone", {"gracePeriodSeconds": 0}).ok
    assert cluster.request("DELETE", f"{base}/p-terminating", {"gracePeriodSeconds": 30}).ok
    session.answer("a")
    code, out, err = session.finish()
    assert code == 0, err  # gone and terminating are not failures: nothing is left to do
    assert "p-gone: gone" in err and "p-terminating: terminating" in err and "p-ok: evicted" in err
    assert re.search(r"p-terminating\s+\S+\s+terminating\s+not evicted: the pod is terminating \(since ", out)


# ---------------------------------------------------------------- --report and --record-events

def test_report_and_events_record_the_run(cluster: Any, namespace: str, tmp_path: Path) -> None:
    args = tainted(cluster, namespace, ["web-0", "web-1", "web-2"])
    report = tmp_path / "r.json"
    bad = desched(cluster.kubeconfig_for(), *args, "--yes", "--report", str(tmp_path / "missing" / "r.json"))
    assert bad.returncode == 2
    assert bad.stderr == f"error: --report {tmp_path}/missing/r.json: directory {tmp_path}/missing does not exist\n"
    assert not any(terminating(cluster, namespace, p) for p in ("web-0", "web-1", "web-2"))
    unconfirmed = desched(cluster.kubeconfig_for(), *args, "--report", str(report))  # no terminal, no --yes
    assert unconfirmed.returncode == 3
    assert report_of(report)["confirmation"] == {"how": "interactive", "answer": None, "chosen": [],
                                                 "refused": unconfirmed.stderr.strip()}
    assert not any(terminating(cluster, namespace, p) for p in ("web-0", "web-1", "web-2"))

    proc = desched(cluster.kubeconfig_for(), *args, "--yes", "--max-in-flight", "3", "--record-events",
                   "--report", str(report))
    assert proc.returncode == 0, proc.stderr
    doc = report_of(report)
    assert doc["kind"] == "Report" and doc["mode"] == "evict" and doc["evictor"] == "eviction"
    assert doc["scope"].startswith(f"namespace {namespace}")
    assert doc["policy"]["profiles"][0]["deschedule"][0]["name"] == "RemovePodsViolatingNodeTaints"
    assert doc["policy"]["profiles"][0]["deschedule"][0]["args"] is not None
    assert [(c["pod"], c["plugin"]) for c in doc["candidates"]] == [
        (p, "RemovePodsViolatingNodeTaints") for p in ("web-0", "web-1", "web-2")]
    assert doc["confirmation"]["how"] == "--yes" and len(doc["confirmation"]["chosen"]) == 3
    assert doc["pacing"] == {"maxInFlight": 3, "interval": 0.0, "waitReady": False, "timeout": 300.0,
                             "recordEvents": True, "gracePeriod": None}
    for e in doc["evictions"]:
        assert e["result"] == "evicted" and e["attempts"] == 1 and e["notes"] == []
        assert parse_ts(doc["confirmation"]["at"]) <= parse_ts(e["startedAt"]) <= parse_ts(e["finishedAt"])
    assert doc["summary"] == {"confirmed": 3, "results": {"evicted": 3}, "interrupted": False, "exitCode": 0}
    events = cluster._must("GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")["items"]
    mine = sorted((e["regarding"]["name"], e["regarding"]["uid"], e["action"], e["reason"], e["type"],
                   e["reportingController"]) for e in events if e.get("reportingController") == "kubectl-desched")
    assert mine == sorted((p, cluster.get_pod(namespace, p)["metadata"]["uid"], "Descheduled",
                           "RemovePodsViolatingNodeTaints", "Normal", "kubectl-desched")
                          for p in ("web-0", "web-1", "web-2"))


# ---------------------------------------------------------------- faults between the tool and the server

def test_faults_on_evictions_never_double_evict_and_the_report_matches_the_cluster(
        cluster: Any, namespace: str, tmp_path: Path) -> None:
    pods = ["f0-500-once", "f1-500-always", "f2-drop-once", "f3-lost-answer", "f4-timeout", "f5-fine",
            "f6-not-confirmed"]
    args = tainted(cluster, namespace, pods)
    plan = {"f0-500-once": ["500"], "f1-500-always": ["500"] * 9, "f2-drop-once": ["drop"],
            "f3-lost-answer": ["drop-after"], "f4-timeout": ["hang-after"]}

    def rule(method: str, path: str, nth: int) -> str:
        if method != "POST" or not path.endswith("/eviction"):
            return "pass"
        actions = plan.get(path.split("/")[-2], [])
        return actions[nth - 1] if nth <= len(actions) else "pass"

    report = tmp_path / "r.json"
    with FaultProxy(cluster.server, cluster.ca_file, tmp_path, rule, hang=4.0) as proxy:
        kubeconfig = proxy.kubeconfig(cluster.kubeconfig_for(), tmp_path / "via-proxy.kubeconfig")
        session = Interactive(kubeconfig, *args, "--request-timeout", "2s", "--max-in-flight", "3",
                              "--report", str(report))
        session.wait_for("[a]ll, [s]elect pod by pod, [n]o")
        session.answer("s")
        for _ in pods:
            session.wait_for("[y]es, [n]o, [q]uit")
            asked = re.findall(r"evict \S+/(\S+) on", session.err.decode())[-1]
            session.err = b""
            session.answer("n" if asked == "f6-not-confirmed" else "y")
        code, _out, err = session.finish(timeout=90)
        posts = proxy.seen("POST", "/eviction")

    assert code == 1, err  # some confirmed evictions failed or are unknown
    r = results(report_of(report))
    assert r["f0-500-once"]["result"] == "evicted" and r["f0-500-once"]["attempts"] == 2
    assert r["f1-500-always"]["result"] == "failed" and "the pod is unchanged: not evicted" in \
        r["f1-500-always"]["message"]
    assert r["f2-drop-once"]["result"] == "evicted" and r["f2-drop-once"]["attempts"] == 2
    for lost in ("f3-lost-answer", "f4-timeout"):
        assert r[lost]["result"] == "unknown" and r[lost]["attempts"] == 1, r[lost]
        assert "re-read: the pod is terminating (since" in r[lost]["message"]
        assert "most likely evicted by this request" in r[lost]["message"]
    assert "timed out" in r["f4-timeout"]["message"]
    assert "the connection was closed before an answer came" in r["f3-lost-answer"]["message"]
    assert r["f5-fine"]["result"] == "evicted"
    assert "f6-not-confirmed" not in r

    # Nothing unconfirmed reached the server, and no pod got a second eviction after one was applied.
    by_pod: dict[str, list[str]] = {}
    for s in posts:
        by_pod.setdefault(s.path.split("/")[-2], []).append(f"{s.action}:{s.upstream}")
    assert "f6-not-confirmed" not in by_pod
    for pod, sends in by_pod.items():
        applied = [i for i, s in enumerate(sends) if s.endswith(":201")]
        assert len(applied) <= 1 and (not applied or applied[0] == len(sends) - 1), (pod, sends)
    assert by_pod["f1-500-always"] == ["500:None"] * 4

    # The report says evicted only for pods the cluster shows evicted, and the rest match too.
    for pod in pods:
        gone = terminating(cluster, namespace, pod)
        result = r.get(pod, {}).get("result")
        if result == "evicted":
            assert gone, pod
        elif result == "unknown":
            assert gone, pod  # the report said it saw the pod terminating
        else:
            assert not gone, (pod, result)
