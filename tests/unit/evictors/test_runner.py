"""The eviction runner without a cluster: backoff, pacing order, --wait-ready gating, Ctrl-C, the Eviction API
evictor's decisions on scripted answers, and report assembly. The API server is replaced by scripts here only;
tests/integration/test_safe_eviction.py runs the same paths against the real kube-apiserver."""

from __future__ import annotations

import itertools
import json
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from kubectl_desched.errors import UsageError
from kubectl_desched.evictors import eviction_api, execute
from kubectl_desched.evictors.base import EvictionResult, now
from kubectl_desched.evictors.eviction_api import Backoff, EvictionApiEvictor
from kubectl_desched.evictors.execute import EvictionRunner, Pacing
from kubectl_desched.evictors.readiness import Readiness, Workload
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.kube.config import Connection
from kubectl_desched.model.objects import pod_from_json
from kubectl_desched.ui.report import Report, check_writable
from tests import builders as b


def cand(name: str, owner: str | None = "rs-a", node: str = "n1") -> Candidate:
    return Candidate(pod_from_json(b.pod(name, node, owner="ReplicaSet" if owner else None, owner_name=owner,
                                         uid=f"uid-{name}")), "LowNodeUtilization", "node over target", "p")


# ---------------------------------------------------------------- backoff

def test_backoff_grows_exponentially_with_jitter_and_a_cap() -> None:
    b_ = Backoff(initial=1.0, factor=2.0, cap=10.0)
    assert [b_.delay(n, rand=lambda: 1.0) for n in range(6)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert [b_.delay(n, rand=lambda: 0.0) for n in range(4)] == [0.5, 1.0, 2.0, 4.0]
    assert b_.delay(10_000, rand=lambda: 1.0) == 10.0  # no overflow on huge retry counts
    delays = {b_.delay(3) for _ in range(50)}
    assert len(delays) > 1 and all(4.0 <= d <= 8.0 for d in delays)


# ---------------------------------------------------------------- pacing

class FakeEvictor:
    """Records when each eviction started and ended and how many ran at once."""

    name = "fake"

    def __init__(self, seconds: float = 0.05, outcomes: dict[str, str] | None = None) -> None:
        self.seconds = seconds
        self.outcomes = outcomes or {}
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.log: list[tuple[str, str, float]] = []  # (event, pod, monotonic)
        self.threads: list[tuple[str, str, float, str]] = []  # the same, with the worker thread's name

    def preflight(self, candidates: Any) -> list[str]:
        return []

    def settle(self, results: list[EvictionResult], stop: threading.Event) -> list[EvictionResult]:
        return results

    def evict(self, c: Candidate, stop: threading.Event) -> EvictionResult:
        started = now()
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.log.append(("start", c.pod.name, time.monotonic()))
            self.threads.append(("start", c.pod.name, time.monotonic(), threading.current_thread().name))
        stop.wait(self.seconds)
        with self.lock:
            self.running -= 1
            self.log.append(("end", c.pod.name, time.monotonic()))
        return EvictionResult(c, self.outcomes.get(c.pod.name, "evicted"), "ok", started=started, finished=now(),
                              attempts=1)

    def starts(self) -> list[str]:
        return [p for e, p, _t in self.log if e == "start"]

    def at(self, event: str, pod: str) -> float:
        return next(t for e, p, t in self.log if e == event and p == pod)


def test_one_at_a_time_in_plan_order_by_default() -> None:
    ev = FakeEvictor()
    cands = [cand(f"p{i}", owner=f"rs-{i}") for i in range(5)]
    out = EvictionRunner(ev, Pacing()).run(cands)
    assert ev.starts() == ["p0", "p1", "p2", "p3", "p4"]
    assert ev.most == 1
    assert [r.candidate.pod.name for r in out.results] == ["p0", "p1", "p2", "p3", "p4"]
    assert not out.interrupted and all(r.outcome == "evicted" for r in out.results)


def test_max_in_flight_bounds_concurrency_and_results_keep_plan_order() -> None:
    ev = FakeEvictor(seconds=0.15)
    cands = [cand(f"p{i}", owner=f"rs-{i}") for i in range(6)]
    out = EvictionRunner(ev, Pacing(max_in_flight=3)).run(cands)
    assert ev.most == 3
    assert ev.starts()[:3] == ["p0", "p1", "p2"]
    assert [r.candidate.pod.name for r in out.results] == [f"p{i}" for i in range(6)]


def test_workers_are_reused_and_never_more_than_max_in_flight() -> None:
    ev = FakeEvictor(seconds=0.01)
    runner = EvictionRunner(ev, Pacing(max_in_flight=3))
    out = runner.run([cand(f"p{i}", owner=f"rs-{i}") for i in range(40)])
    assert [r.outcome for r in out.results] == ["evicted"] * 40
    assert 1 <= runner._evicting.threads <= 3  # 40 evictions, not 40 threads
    names = _thread_names(ev)
    assert names and names <= {f"evict-{n}" for n in (1, 2, 3)}


def _thread_names(ev: FakeEvictor) -> set[str]:
    return {thread for _event, _pod, _t, thread in ev.threads}


def test_interval_spaces_the_starts() -> None:
    ev = FakeEvictor(seconds=0.0)
    cands = [cand(f"p{i}", owner=f"rs-{i}") for i in range(3)]
    EvictionRunner(ev, Pacing(max_in_flight=3, interval=0.2)).run(cands)
    starts = [ev.at("start", f"p{i}") for i in range(3)]
    assert all(later - earlier >= 0.19 for earlier, later in itertools.pairwise(starts))


class FakeWorkloads:
    """Owners by pod name prefix; readiness comes back after `recover` seconds (or never)."""

    def __init__(self, recover: float | None) -> None:
        self.recover = recover
        self.evicted_at: dict[Workload, float] = {}
        self.reads = 0

    def workload(self, pod: Any) -> Workload | None:
        o = pod.controller
        return Workload("Deployment", pod.namespace, o.name) if o else None

    def readiness(self, w: Workload) -> Readiness:
        self.reads += 1
        since = self.evicted_at.get(w)
        if since is None:
            return Readiness(3, 3, "1")
        if self.recover is not None and time.monotonic() - since >= self.recover:
            return Readiness(3, 3, "3")
        return Readiness(2, 3, "2")


class MarkingEvictor(FakeEvictor):
    def __init__(self, workloads: FakeWorkloads, **kw: Any) -> None:
        super().__init__(**kw)
        self.workloads = workloads

    def evict(self, c: Candidate, stop: threading.Event) -> EvictionResult:
        r = super().evict(c, stop)
        w = self.workloads.workload(c.pod)
        assert w is not None
        self.workloads.evicted_at[w] = time.monotonic()
        return r


def test_wait_ready_holds_the_same_workload_and_lets_others_pass() -> None:
    wl = FakeWorkloads(recover=0.6)
    ev = MarkingEvictor(wl, seconds=0.0)
    cands = [cand("a1", owner="a"), cand("a2", owner="a"), cand("b1", owner="b")]
    notes: list[str] = []
    out = EvictionRunner(ev, Pacing(max_in_flight=1, wait_ready=True, timeout=5), workloads=wl,  # type: ignore[arg-type]
                 note=notes.append).run(cands)
    assert ev.starts() == ["a1", "b1", "a2"]  # b1 did not wait for a's recovery
    assert ev.at("start", "a2") - ev.at("end", "a1") >= 0.6
    assert all(r.outcome == "evicted" for r in out.results)
    assert "waiting for Deployment default/a: 2 of 3 ready; its next eviction waits for all 3" in notes


def test_wait_ready_says_what_it_waits_on_each_time_that_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The status read right after an eviction often still predates it: the line says so, rather than "6/6 ready"
    as if the workload were ready and the wait pointless."""
    monkeypatch.setattr(execute, "POLL", 0.01)
    reads = iter([Readiness(6, 6, "1"),  # before the eviction
                  Readiness(6, 6, "1"), Readiness(6, 6, "1"), Readiness(5, 6, "2"), Readiness(5, 6, "2"),
                  Readiness(6, 6, "3")])

    class Scripted(FakeWorkloads):
        def readiness(self, w: Workload) -> Readiness:
            return next(reads)

    notes: list[str] = []
    out = EvictionRunner(FakeEvictor(seconds=0.0), Pacing(wait_ready=True, timeout=30), workloads=Scripted(None),  # type: ignore[arg-type]
                 note=notes.append).run([cand("a1", owner="web"), cand("a2", owner="web")])
    assert [r.outcome for r in out.results] == ["evicted", "evicted"]
    assert notes == [
        "waiting for Deployment default/web: its status has not changed since the eviction (still 6 of 6 ready); "
        "its next eviction waits for a new status with all 6 ready",
        "waiting for Deployment default/web: 5 of 6 ready; its next eviction waits for all 6"]
    assert execute.waiting_line(Workload("StatefulSet", "db", "pg"), None, None) == (
        "waiting for StatefulSet db/pg: its status cannot be read; its next eviction waits for every replica to be "
        "ready")


def test_wait_ready_timeout_holds_back_the_rest_of_that_workload() -> None:
    wl = FakeWorkloads(recover=None)
    ev = MarkingEvictor(wl, seconds=0.0)
    cands = [cand("a1", owner="a"), cand("a2", owner="a"), cand("a3", owner="a"), cand("b1", owner="b")]
    out = EvictionRunner(ev, Pacing(wait_ready=True, timeout=0.5), workloads=wl).run(cands)  # type: ignore[arg-type]
    by = {r.candidate.pod.name: r for r in out.results}
    assert ev.starts() == ["a1", "b1"]
    assert by["a2"].outcome == by["a3"].outcome == "held"
    assert "Deployment default/a not back to ready within --timeout (2/3 ready)" in by["a2"].message
    assert not by["a2"].ok and by["b1"].outcome == "evicted"


def test_wait_ready_not_needed_after_the_last_pod_of_a_workload() -> None:
    wl = FakeWorkloads(recover=None)  # would time out if anyone waited
    ev = MarkingEvictor(wl, seconds=0.0)
    began = time.monotonic()
    out = EvictionRunner(ev, Pacing(wait_ready=True, timeout=30), workloads=wl).run(  # type: ignore[arg-type]
        [cand("a1", owner="a"), cand("b1", owner="b")])
    assert time.monotonic() - began < 5 and wl.reads == 0
    assert [r.outcome for r in out.results] == ["evicted", "evicted"]


def test_a_blocked_pod_does_not_make_its_workload_wait() -> None:
    wl = FakeWorkloads(recover=None)
    ev = FakeEvictor(seconds=0.0, outcomes={"a1": "blocked"})
    out = EvictionRunner(ev, Pacing(wait_ready=True, timeout=30), workloads=wl).run(  # type: ignore[arg-type]
        [cand("a1", owner="a"), cand("a2", owner="a")])
    assert [r.outcome for r in out.results] == ["blocked", "evicted"]


def test_ctrl_c_stops_new_evictions_and_lets_the_one_in_flight_finish() -> None:
    ev = FakeEvictor(seconds=0.4)

    class Patient(FakeEvictor):
        def evict(self, c: Candidate, stop: threading.Event) -> EvictionResult:
            time.sleep(0.4)  # a request that does not look at stop: it must still be waited for
            return ev.evict(c, threading.Event())

    notes: list[str] = []
    runner = EvictionRunner(Patient(), Pacing(), note=notes.append)
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN when the suite runs as a background job
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
    out = runner.run([cand(f"p{i}", owner=f"rs-{i}") for i in range(4)])
    assert out.interrupted
    assert [r.outcome for r in out.results] == ["evicted", "interrupted", "interrupted", "interrupted"]
    assert "before its turn" in out.results[1].message
    assert any(n.startswith("interrupted: no new evictions; waiting for 1 in flight") for n in notes)
    assert signal.getsignal(signal.SIGINT) is before  # restored


def test_second_ctrl_c_abandons_what_is_in_flight() -> None:
    release = threading.Event()

    class Stuck(FakeEvictor):
        def evict(self, c: Candidate, stop: threading.Event) -> EvictionResult:
            release.wait(10)
            return super().evict(c, stop)

    runner = EvictionRunner(Stuck(), Pacing(max_in_flight=2))
    for delay in (0.2, 0.5):
        threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT)).start()
    began = time.monotonic()
    out = runner.run([cand(f"p{i}", owner=f"rs-{i}") for i in range(3)])
    release.set()
    assert time.monotonic() - began < 5
    assert [r.outcome for r in out.results] == ["unknown", "unknown", "interrupted"]
    assert "abandoned by a second Ctrl-C" in out.results[0].message and not out.results[0].ok


# ---------------------------------------------------------------- the Eviction API evictor on scripted answers

Answer = Callable[[], Any]


def _pod_json(c: Candidate, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"uid": c.pod.uid, **meta}, "spec": {"nodeName": c.pod.node_name}}


def _api_error(status: int, message: str = "") -> ApiException:
    e = ApiException(status=status, reason="x")
    e.body = json.dumps({"message": message})
    return e


def scripted(monkeypatch: pytest.MonkeyPatch, gets: list[Any], posts: list[Any]) -> list[str]:
    """request_json answers GETs and POSTs from the lists (an exception is raised); returns the call log."""
    calls: list[str] = []

    def fake(_conn: Any, method: str, path: str, **_kw: Any) -> Any:
        calls.append(method)
        answer = (gets if method == "GET" else posts).pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    monkeypatch.setattr(eviction_api, "request_json", fake)
    return calls


def evictor(**kw: Any) -> EvictionApiEvictor:
    conn = Connection(api=None, server="https://api", context="c", namespace="default")  # type: ignore[arg-type]
    return EvictionApiEvictor(conn, backoff=Backoff(initial=0.01, cap=0.02), unsure_backoff=Backoff(0.01, cap=0.02),
                              **kw)


def test_evicted_after_a_clean_re_read(monkeypatch: pytest.MonkeyPatch) -> None:
    c = cand("web")
    calls = scripted(monkeypatch, [_pod_json(c)], [{}])
    r = evictor().evict(c, threading.Event())
    assert (r.outcome, r.attempts, calls) == ("evicted", 1, ["GET", "POST"])
    assert r.started and r.finished and r.started <= r.finished


@pytest.mark.parametrize(("current", "outcome", "says"), [
    (None, "gone", "no longer exists"),
    ({"metadata": {"uid": "other"}, "spec": {"nodeName": "n1"}}, "changed", "a new pod took the name"),
    ({"metadata": {"uid": "uid-web", "deletionTimestamp": "2026-01-01T00:00:00Z"}, "spec": {"nodeName": "n1"}},
     "terminating", "terminating (since 2026-01-01T00:00:00Z)"),
    ({"metadata": {"uid": "uid-web"}, "spec": {"nodeName": "n9"}}, "moved", "now on node n9, not n1"),
])
def test_re_read_skips_a_pod_that_changed(monkeypatch: pytest.MonkeyPatch, current: Any, outcome: str,
                                          says: str) -> None:
    c = cand("web")
    gets = [_api_error(404)] if current is None else [current]
    calls = scripted(monkeypatch, gets, [])
    r = evictor().evict(c, threading.Event())
    assert r.outcome == outcome and says in r.message and r.message.startswith("not evicted: ")
    assert calls == ["GET"]  # nothing sent


def test_lost_answer_with_the_pod_now_terminating_is_unknown_and_not_resent(monkeypatch: pytest.MonkeyPatch) -> None:
    c = cand("web")
    lost = urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset"))
    calls = scripted(monkeypatch, [_pod_json(c), _pod_json(c, deletionTimestamp="2026-01-01T00:00:05Z")], [lost])
    r = evictor().evict(c, threading.Event())
    assert r.outcome == "unknown" and not r.ok and r.disruptive
    assert "re-read: the pod is terminating (since 2026-01-01T00:00:05Z): most likely evicted by this request" \
        in r.message
    assert calls == ["GET", "POST", "GET"]


def test_server_error_with_the_pod_unchanged_is_sent_again(monkeypatch: pytest.MonkeyPatch) -> None:
    c = cand("web")
    calls = scripted(monkeypatch, [_pod_json(c), _pod_json(c)], [_api_error(500, "etcd timeout"), {}])
    r = evictor().evict(c, threading.Event())
    assert (r.outcome, r.attempts) == ("evicted", 2)
    assert calls == ["GET", "POST", "GET", "POST"]


def test_unsure_sends_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    c = cand("web")
    n = eviction_api.MAX_UNSURE_SENDS
    scripted(monkeypatch, [_pod_json(c)] * (n + 1), [_api_error(503, "unavailable")] * n)
    r = evictor().evict(c, threading.Event())
    assert r.outcome == "failed" and r.attempts == n
    assert r.message.endswith(f"sent {n} times, the pod is unchanged: not evicted")


def test_429_from_a_budget_is_retried_until_it_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    c = cand("web")
    pdb = _api_error(429, "Cannot evict pod as it would violate the pod's disruption budget.")
    progress: list[str] = []
    scripted(monkeypatch, [_pod_json(c)], [pdb, pdb, {}])
    r = evictor(progress=lambda _c, m: progress.append(m)).evict(c, threading.Event())
    assert (r.outcome, r.attempts) == ("evicted", 3)
    assert len(progress) == 2 and progress[0].startswith("PodDisruptionBudget: Cannot evict pod") \
        and "retry 1 in" in progress[0]


def test_429_until_timeout_is_blocked_and_never_a_delete(monkeypatch: pytest.MonkeyPatch) -> None:
    c = cand("web")
    pdb = _api_error(429, "Cannot evict pod as it would violate the pod's disruption budget.")
    calls = scripted(monkeypatch, [_pod_json(c)], [pdb] * 100)
    r = evictor(timeout=0.2).evict(c, threading.Event())
    assert r.outcome == "blocked" and "gave up after" in r.message and "(--timeout)" in r.message
    assert r.attempts >= 3 and set(calls) == {"GET", "POST"} and calls.count("GET") == 1
    zero = scripted(monkeypatch, [_pod_json(c)], [pdb])
    r0 = evictor(timeout=0).evict(c, threading.Event())
    assert r0.outcome == "blocked" and r0.attempts == 1 and zero == ["GET", "POST"]


def test_stop_during_a_budget_wait_ends_as_interrupted(monkeypatch: pytest.MonkeyPatch) -> None:
    c = cand("web")
    pdb = _api_error(429, "would violate the pod's disruption budget")
    scripted(monkeypatch, [_pod_json(c)], [pdb] * 100)
    stop = threading.Event()
    threading.Timer(0.1, stop.set).start()
    ev = EvictionApiEvictor(Connection(None, "s", "c", "n"), backoff=Backoff(initial=5, cap=5))  # type: ignore[arg-type]
    began = time.monotonic()
    r = ev.evict(c, stop)
    assert time.monotonic() - began < 2
    assert r.outcome == "interrupted" and "while retrying (PodDisruptionBudget" in r.message


# ---------------------------------------------------------------- report

def test_report_path_is_checked_first(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"directory .*nope does not exist"):
        check_writable(str(tmp_path / "nope" / "r.json"))
    with pytest.raises(UsageError, match="is a directory"):
        check_writable(str(tmp_path))
    check_writable(str(tmp_path / "ok.json"))
    assert list(tmp_path.iterdir()) == []  # the probe leaves nothing behind


def test_report_assembly_and_atomic_write(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text("old")
    report = Report(str(path))
    a, b_ = cand("a"), cand("b")
    report.candidates([a, b_])
    report.confirmation("interactive", "select", [a])
    t0 = now()
    report.evictions([EvictionResult(a, "evicted", "eviction accepted", started=t0, finished=t0, attempts=1)],
                     interrupted=False, exit_code=0)
    report.write()
    doc = json.loads(path.read_text())
    assert doc["kind"] == "Report" and doc["finishedAt"] >= doc["startedAt"]
    assert [c["pod"] for c in doc["candidates"]] == ["a", "b"]
    assert doc["confirmation"]["how"] == "interactive" and doc["confirmation"]["chosen"] == ["default/a"]
    e = doc["evictions"][0]
    assert (e["pod"], e["result"], e["uid"], e["plugin"], e["attempts"]) == ("a", "evicted", "uid-a",
                                                                             "LowNodeUtilization", 1)
    assert e["startedAt"].endswith("Z") and len(e["startedAt"]) == len("2026-01-01T00:00:00.000Z")
    assert doc["summary"] == {"confirmed": 1, "results": {"evicted": 1}, "interrupted": False, "exitCode": 0}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]  # no temp file left
