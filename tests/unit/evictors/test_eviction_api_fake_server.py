"""Eviction safety under concurrent operators, unreadable answers, 404s, signals and server dry runs, without a
cluster. FakeApi below keeps pods the way the API server does for what matters here (UID and resourceVersion
preconditions, a terminating pod still accepting evictions, PDB 429s, dry runs that change nothing); the same
cases run against the real kube-apiserver in tests/integration/test_eviction_safety_live.py."""

from __future__ import annotations

import io
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from kubectl_desched import app, interrupts
from kubectl_desched.app import landings as _landings  # noqa: F401  (app imports its parts on first use)
from kubectl_desched.app import loading as _loading  # noqa: F401
from kubectl_desched.app.text import results_summary
from kubectl_desched.cli import main as cli
from kubectl_desched.evictors import eviction_api
from kubectl_desched.evictors.base import EvictionResult, Stop, now
from kubectl_desched.evictors.eviction_api import Backoff, EvictionApiEvictor, eviction_body, server_words
from kubectl_desched.evictors.execute import EvictionRunner, Pacing
from kubectl_desched.framework.plan import Candidate, EvictionPlan, Limits
from kubectl_desched.framework.types import EvictOptions
from kubectl_desched.interrupts import Interrupted
from kubectl_desched.kube import live
from kubectl_desched.kube.config import Connection
from kubectl_desched.kube.landings import Landed
from kubectl_desched.model.objects import node_from_json, pdb_from_json, pod_from_json
from kubectl_desched.model.state import ClusterState
from tests import builders as b

PDB_REFUSAL = "Cannot evict pod as it would violate the pod's disruption budget."


def _conn() -> Connection:
    return Connection(api=None, server="https://api", context="c", namespace="default")  # type: ignore[arg-type]


def cand(name: str, node: str = "n1", refusals: list[str] | None = None) -> Candidate:
    pod = pod_from_json(b.pod(name, node, owner_name=f"{name}-rs", uid=f"uid-{name}"))
    return Candidate(pod, "RemovePodsViolatingNodeTaints", "tainted", "p", list(refusals or []), list(refusals or []))


def api_error(status: int, message: str = "", causes: list[dict[str, str]] | None = None) -> ApiException:
    e = ApiException(status=status, reason="x")
    body: dict[str, Any] = {"kind": "Status", "message": message}
    if causes:
        body["details"] = {"causes": causes}
    e.body = json.dumps(body)
    return e


class FakeApi:
    """GET pod and POST eviction as the API server answers them. `faults[pod]` lists, per POST, what goes
    wrong: "lost" (applied, then the connection drops), "html" / "cut" (applied, then a 201 nobody can read),
    "404" (a proxy answers 404, nothing reaches the server), "touched" (someone changes the pod's labels just
    before the request), "other" (another operator evicts it just before the request), "pass"."""

    def __init__(self, names: list[str], node: str = "n1", refuse: set[str] | None = None) -> None:
        self.lock = threading.Lock()
        self.rv = itertools.count(100)
        self.pods: dict[str, dict[str, Any]] = {}
        for n in names:
            self.pods[n] = {"metadata": {"name": n, "uid": f"uid-{n}", "resourceVersion": str(next(self.rv))},
                            "spec": {"nodeName": node}}
        self.refuse = refuse or set()
        self.faults: dict[str, list[str]] = {}
        self.posts: list[tuple[str, dict[str, Any], str]] = []  # (pod, preconditions, what happened)
        self.applied: dict[str, int] = {}
        self.gets = 0

    def _bump(self, name: str, **meta: Any) -> None:
        self.pods[name]["metadata"].update(meta, resourceVersion=str(next(self.rv)))

    def _apply(self, name: str, pre: dict[str, Any], dry: bool) -> str:
        pod = self.pods.get(name)
        if pod is None:
            raise api_error(404, f'pods "{name}" not found')
        meta = pod["metadata"]
        for key in ("uid", "resourceVersion"):
            if key in pre and pre[key] != meta[key]:
                raise api_error(409, f"Operation cannot be fulfilled on Pod \"{name}\": the {key} in the "
                                     f"precondition ({pre[key]}) does not match the {key} in record "
                                     f"({meta[key]}). The object might have been modified")
        if name in self.refuse and not meta.get("deletionTimestamp"):  # a terminating pod skips PDB checks
            raise api_error(429, PDB_REFUSAL, [{"reason": "DisruptionBudget",
                                                "message": f"The disruption budget {name}-pdb needs 1 healthy "
                                                           "pods and has 1 currently"}])
        if dry:
            return "dry"
        self.applied[name] = self.applied.get(name, 0) + 1
        self._bump(name, deletionTimestamp="2026-01-01T00:00:00Z")
        return "applied"

    def __call__(self, _conn: Any, method: str, path: str, *, body: Any = None, query: Any = None,
                 timeout: Any = None) -> Any:
        name = path.split("/")[6]
        with self.lock:
            if method == "GET":
                self.gets += 1
                if name not in self.pods:
                    raise api_error(404, "not found")
                return json.loads(json.dumps(self.pods[name]))
            pre = dict((body.get("deleteOptions") or {}).get("preconditions") or {})
            fault = (self.faults.get(name) or ["pass"]).pop(0)
            if fault == "404":
                self.posts.append((name, pre, "404 from a proxy"))
                raise api_error(404, "the server could not find the requested resource")
            if fault == "touched":
                self._bump(name, labels={"touched": "yes"})
            if fault == "other":
                self.applied[name] = self.applied.get(name, 0) + 1
                self._bump(name, deletionTimestamp="2026-01-01T00:00:01Z")
            try:
                happened = self._apply(name, pre, dry=("dryRun", "All") in (query or []))
            except ApiException as e:
                self.posts.append((name, pre, str(e.status)))
                raise
            self.posts.append((name, pre, happened))
        if fault == "lost":
            raise urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset"))
        if fault in ("html", "cut"):
            data = b"<html><body>502 Bad Gateway</body></html>" if fault == "html" else b'{"kind":"Sta'
            live.decode_json(data, "POST", path)  # raises NotJSON, as request_json does
        return {"kind": "Status", "status": "Success"}


def evictor(api: FakeApi, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> EvictionApiEvictor:
    monkeypatch.setattr(eviction_api, "request_json", api)
    kw.setdefault("backoff", Backoff(initial=0.01, cap=0.02))
    return EvictionApiEvictor(_conn(), unsure_backoff=Backoff(0.001, cap=0.002), **kw)


# ---------------------------------------------------------------- the precondition: uid and resourceVersion

def test_the_eviction_is_conditional_on_the_uid_and_version_just_read() -> None:
    body = eviction_body(cand("web"), server_dry_run=False, grace_period=None, resource_version="42")
    assert body["deleteOptions"]["preconditions"] == {"uid": "uid-web", "resourceVersion": "42"}
    assert "resourceVersion" not in eviction_body(cand("web"), server_dry_run=False,
                                                  grace_period=None)["deleteOptions"]["preconditions"]


def test_the_version_sent_is_the_one_read_right_before(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi(["web"])
    r = evictor(api, monkeypatch).evict(cand("web"), threading.Event())
    assert r.outcome == "evicted" and api.posts == [("web", {"uid": "uid-web", "resourceVersion": "100"}, "applied")]


def test_someone_else_evicting_first_is_a_conflict_never_evicted(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi(["web"])
    api.faults["web"] = ["other"]  # evicted by another operator between our re-read and our request
    r = evictor(api, monkeypatch).evict(cand("web"), threading.Event())
    assert r.outcome == "conflict" and r.ok and not r.disruptive and r.attempts == 1
    assert r.message.startswith("not evicted by this run: someone else evicted or deleted it first (")
    assert "(409)" in r.message and "re-read: the pod is terminating (since 2026-01-01T00:00:01Z)" in r.message
    assert api.applied == {"web": 1} and api.gets == 2  # re-read after the 409, nothing sent again


def test_a_conflict_with_the_pod_gone_is_a_conflict_too(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi(["web"])
    ev = evictor(api, monkeypatch)
    original = api._apply

    def deleted_meanwhile(name: str, pre: dict[str, Any], dry: bool) -> str:
        api._bump(name)
        try:
            return original(name, pre, dry)
        finally:
            del api.pods[name]
    monkeypatch.setattr(api, "_apply", deleted_meanwhile)
    r = ev.evict(cand("web"), threading.Event())
    assert r.outcome == "conflict" and "re-read: the pod no longer exists" in r.message


def test_a_conflict_with_a_new_pod_under_the_name_is_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi(["web"])
    ev = evictor(api, monkeypatch)
    original = api._apply

    def recreated(name: str, pre: dict[str, Any], dry: bool) -> str:
        api._bump(name, uid="uid-new")
        return original(name, pre, dry)
    monkeypatch.setattr(api, "_apply", recreated)
    r = ev.evict(cand("web"), threading.Event())
    assert r.outcome == "changed" and "a new pod took the name" in r.message and "(409)" in r.message
    assert not api.applied


def test_a_pod_only_touched_meanwhile_is_sent_again_with_its_new_version(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi(["web"])
    api.faults["web"] = ["touched"]
    progress: list[str] = []
    r = evictor(api, monkeypatch, progress=lambda _c, m: progress.append(m)).evict(cand("web"), threading.Event())
    assert (r.outcome, r.attempts) == ("evicted", 2)
    assert [(p[1]["resourceVersion"], p[2]) for p in api.posts] == [("100", "409"), ("101", "applied")]
    assert progress == ["changed since it was re-read (409 Conflict), not terminating: sending again with its new "
                        "version"]


def test_a_pod_that_keeps_changing_is_failed_after_a_few_conflicts(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi(["web"])
    api.faults["web"] = ["touched"] * 10
    r = evictor(api, monkeypatch).evict(cand("web"), threading.Event())
    assert r.outcome == "failed" and not r.ok and "the pod kept changing" in r.message
    assert r.attempts == eviction_api.MAX_CONFLICTS + 1 and not api.applied


def test_a_409_that_is_not_about_the_version_is_failed_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    pod = {"metadata": {"uid": "uid-web", "resourceVersion": "7"}, "spec": {"nodeName": "n1"}}

    def fake(_conn: Any, method: str, path: str, **_kw: Any) -> Any:
        calls.append(method)
        if method == "POST":
            raise api_error(409, "some other conflict")
        return pod
    monkeypatch.setattr(eviction_api, "request_json", fake)
    r = EvictionApiEvictor(_conn()).evict(cand("web"), threading.Event())
    assert r.outcome == "failed" and r.message == "not evicted: some other conflict (409)"
    assert calls == ["GET", "POST", "GET"]


def test_three_operators_at_once_evict_each_pod_exactly_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three evictors race over the same pods; every request waits at a barrier so all three read before any
    sends. Each pod must be applied once and reported evicted by exactly one of them."""
    names = [f"p{i}" for i in range(6)]
    api = FakeApi(names)
    barriers = {n: threading.Barrier(3, timeout=5) for n in names}
    real = api.__call__

    def racing(conn: Any, method: str, path: str, **kw: Any) -> Any:
        name = path.split("/")[6]
        if method == "POST":
            barriers[name].wait()  # all three have re-read the pod by now
        return real(conn, method, path, **kw)
    monkeypatch.setattr(eviction_api, "request_json", racing)
    runs = [EvictionRunner(EvictionApiEvictor(_conn()), Pacing(max_in_flight=8)) for _ in range(3)]
    outcomes: list[list[EvictionResult]] = [[] for _ in runs]

    def go(i: int) -> None:
        outcomes[i] = runs[i]._schedule([cand(n) for n in names])  # _schedule: no signal handler off the main thread
    threads = [threading.Thread(target=go, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert api.applied == dict.fromkeys(names, 1)
    for n in names:
        words = sorted(r.outcome for rs in outcomes for r in rs if r.candidate.pod.name == n)
        assert words == ["conflict", "conflict", "evicted"], (n, words)


# ---------------------------------------------------------------- lost answers, incl. a 2xx nobody can read

@pytest.mark.parametrize("fault", ["lost", "html", "cut"])
def test_an_applied_eviction_whose_answer_is_lost_or_unreadable_is_unknown(monkeypatch: pytest.MonkeyPatch,
                                                                           fault: str) -> None:
    api = FakeApi(["web"])
    api.faults["web"] = [fault]
    r = evictor(api, monkeypatch).evict(cand("web"), threading.Event())
    assert r.outcome == "unknown" and r.disruptive and "JSONDecodeError" not in r.message
    assert "re-read: the pod is terminating" in r.message and "most likely evicted by this request" in r.message
    if fault != "lost":
        what = "bytes of HTML" if fault == "html" else "cut short after"
        assert r.message.startswith("the answer to POST /api/v1/namespaces/default/pods/web/eviction was not JSON (")
        assert what in r.message
    assert api.applied == {"web": 1} and len(api.posts) == 1


def test_a_resend_after_a_lost_answer_carries_the_latest_version(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi(["web"])
    ev = evictor(api, monkeypatch)
    lost = urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset"))
    real = api.__call__
    sent = iter([lost])

    def dropped_before_the_server(conn: Any, method: str, path: str, **kw: Any) -> Any:
        if method == "POST":
            e = next(sent, None)
            if e is not None:
                with api.lock:
                    api._bump("web", labels={"status": "changed"})  # the kubelet wrote something meanwhile
                raise e
        return real(conn, method, path, **kw)
    monkeypatch.setattr(eviction_api, "request_json", dropped_before_the_server)
    r = ev.evict(cand("web"), threading.Event())
    assert (r.outcome, r.attempts) == ("evicted", 2)
    assert api.posts == [("web", {"uid": "uid-web", "resourceVersion": "101"}, "applied")]  # not the stale 100


def test_a_conflict_after_our_own_lost_answer_is_unknown_not_someone_elses(monkeypatch: pytest.MonkeyPatch) -> None:
    """Our first request timed out while the server was still working on it: the re-read saw the pod unchanged,
    the resend found it evicted (409). That eviction may well be ours: "unknown", never "conflict"."""
    api = FakeApi(["web"])
    ev = evictor(api, monkeypatch)
    real = api.__call__
    first = [True]

    def slow(conn: Any, method: str, path: str, **kw: Any) -> Any:
        if method == "POST" and first[0]:
            first[0] = False
            raise urllib3.exceptions.ReadTimeoutError(None, path, "Read timed out.")  # type: ignore[arg-type]
        if method == "POST":
            with api.lock:  # the first request lands now
                api._apply("web", {}, dry=False)
        return real(conn, method, path, **kw)
    monkeypatch.setattr(eviction_api, "request_json", slow)
    r = ev.evict(cand("web"), threading.Event())
    assert r.outcome == "unknown" and "then" in r.message and "(409)" in r.message
    assert "most likely evicted by this run's earlier request" in r.message
    assert api.applied == {"web": 1}


def test_request_json_turns_an_unreadable_2xx_into_a_lost_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    for data, what in ((b"<!DOCTYPE html><html>proxy error</html>", "bytes of HTML"),
                       (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Succ', "cut short after"),
                       (b"\x89PNG\r\n", "not UTF-8")):
        monkeypatch.setattr(live, "request_raw", lambda *_a, _d=data, **_k: _d)
        with pytest.raises(live.NotJSON, match=what) as e:
            live.request_json(_conn(), "POST", "/api/v1/namespaces/d/pods/p/eviction")
        assert isinstance(e.value, urllib3.exceptions.HTTPError)  # caught wherever a dropped connection is
    monkeypatch.setattr(live, "request_raw", lambda *_a, **_k: b"")
    assert live.request_json(_conn(), "GET", "/x") is None


# ---------------------------------------------------------------- 404 on the eviction: look first

def test_a_404_with_the_pod_still_there_is_failed_with_the_servers_words(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi(["web"])
    api.faults["web"] = ["404"]
    r = evictor(api, monkeypatch).evict(cand("web"), threading.Event())
    assert r.outcome == "failed" and not r.ok
    assert r.message == ("not evicted: the server could not find the requested resource (404), yet a re-read shows "
                         "the pod unchanged")
    assert api.gets == 2 and not api.applied


def test_a_404_with_the_pod_really_gone_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi(["web"])
    ev = evictor(api, monkeypatch)
    real = api.__call__

    def deleted_meanwhile(conn: Any, method: str, path: str, **kw: Any) -> Any:
        if method == "POST":
            api.pods.pop("web", None)
        return real(conn, method, path, **kw)
    monkeypatch.setattr(eviction_api, "request_json", deleted_meanwhile)
    r = ev.evict(cand("web"), threading.Event())
    assert r.outcome == "gone" and r.message == "not evicted: the pod no longer exists (pods \"web\" not found (404))"
    assert api.gets == 2


def test_a_404_and_an_unreadable_pod_is_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    answers: list[Any] = [{"metadata": {"uid": "uid-web"}, "spec": {"nodeName": "n1"}}, api_error(404, "nope"),
                          api_error(500, "etcd down")]

    def fake(*_a: Any, **_k: Any) -> Any:
        a = answers.pop(0)
        if isinstance(a, BaseException):
            raise a
        return a
    monkeypatch.setattr(eviction_api, "request_json", fake)
    r = EvictionApiEvictor(_conn()).evict(cand("web"), threading.Event())
    assert r.outcome == "failed" and r.message.startswith("not evicted: nope (404); the pod could not be re-read")


# ---------------------------------------------------------------- server dry run

def test_a_dry_run_answers_a_budget_at_once_with_the_servers_words(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi(["web"], refuse={"web"})
    began = time.monotonic()
    r = evictor(api, monkeypatch, server_dry_run=True, timeout=300,
                backoff=Backoff(initial=30, cap=30)).evict(cand("web"), threading.Event())
    assert time.monotonic() - began < 2
    assert (r.outcome, r.attempts) == ("blocked", 1)
    assert r.message == (f"PodDisruptionBudget: {PDB_REFUSAL}; The disruption budget web-pdb needs 1 healthy pods "
                         "and has 1 currently (server dry run: not retried)")
    assert not api.applied


def test_a_dry_run_throttled_by_the_server_is_not_retried_either(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def fake(_conn: Any, method: str, path: str, **_kw: Any) -> Any:
        calls.append(method)
        if method == "POST":
            raise api_error(429, "too many requests, please try again later")
        return {"metadata": {"uid": "uid-web"}, "spec": {"nodeName": "n1"}}
    monkeypatch.setattr(eviction_api, "request_json", fake)
    r = EvictionApiEvictor(_conn(), server_dry_run=True).evict(cand("web"), threading.Event())
    assert r.outcome == "failed" and "(server dry run: not retried)" in r.message and calls == ["GET", "POST"]


def test_a_dry_run_does_not_claim_would_evict_for_a_pod_the_plan_knows_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi(["a", "b"])  # the server allows each alone: a dry run uses up no budget
    refusal = "PodDisruptionBudget web allows no more disruptions, eviction will be refused"
    ev = evictor(api, monkeypatch, server_dry_run=True)
    first, second = ev.evict(cand("a"), threading.Event()), ev.evict(cand("b", refusals=[refusal]), threading.Event())
    assert first.outcome == "would evict"
    assert second.outcome == "blocked" and not second.ok
    assert second.message.startswith(refusal + " (the server dry run accepted it alone")
    assert [p[2] for p in api.posts] == ["dry", "dry"] and not api.applied  # sent, answered, nothing changed


def test_the_plan_marks_which_candidates_a_budget_refuses() -> None:
    pods = [pod_from_json(b.pod(f"web-{i}", "n1", labels={"app": "web"})) for i in range(3)]
    other = pod_from_json(b.pod("api-0", "n1", labels={"app": "api"}))
    state = ClusterState([node_from_json(b.node("n1"))], [*pods, other],
                         [pdb_from_json(b.pdb("web", {"app": "web"}, allowed=1))])
    plan = EvictionPlan(state, Limits())
    cands = [plan.add(p, EvictOptions("LowNodeUtilization", "over"), "p") for p in [*pods, other]]
    spent = "PodDisruptionBudget web allows 1 disruption(s), all taken by the {} pod(s) planned before it, eviction " \
        "will be refused"
    assert [c.pdb_refusals for c in cands] == [[], [spent.format(1)], [spent.format(2)], []]
    assert all(c.warnings == c.pdb_refusals for c in cands)


def test_server_words_name_the_budget_from_the_status_causes() -> None:
    e = api_error(429, PDB_REFUSAL, [{"reason": "DisruptionBudget", "message": "The disruption budget db needs 2"}])
    assert server_words(e) == f"{PDB_REFUSAL}; The disruption budget db needs 2"
    long = server_words(api_error(429, "x" * 2000))
    assert long.startswith("x" * 300) and "[cut: 2,000 characters in all]" in long and len(long) < 500  # bounded
    broken = ApiException(status=429, reason="Too Many Requests")
    broken.body = '{"message": "m", "details": "not a mapping"}'
    assert server_words(broken) == "m"


# ---------------------------------------------------------------- SIGTERM and SIGHUP while acting


def test_a_signal_the_process_ignores_stays_ignored() -> None:
    """nohup's SIGHUP and a background job's SIGINT: the user chose to ignore them, so a run does not act on them."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with interrupts.raising():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.2)  # nothing raised
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)

@pytest.mark.parametrize(("sig", "name"), [(signal.SIGTERM, "SIGTERM"), (signal.SIGHUP, "SIGHUP")])
def test_sigterm_and_sighup_while_acting_stop_like_ctrl_c(monkeypatch: pytest.MonkeyPatch, sig: int,
                                                          name: str) -> None:
    api = FakeApi(["a", "b", "c", "d"], refuse={"a", "c"})
    ev = evictor(api, monkeypatch, timeout=60, backoff=Backoff(initial=5, cap=5))
    notes: list[str] = []
    runner = EvictionRunner(ev, Pacing(max_in_flight=2), note=notes.append)  # a and c hold both slots, retrying
    before = signal.getsignal(sig)
    if before is signal.SIG_IGN:
        pytest.skip(f"{name} is ignored in this process (nohup?), so a run keeps ignoring it")
    threading.Timer(0.3, os.kill, (os.getpid(), sig)).start()
    began = time.monotonic()
    out = runner.run([cand("a"), cand("b"), cand("c"), cand("d")])
    assert time.monotonic() - began < 4
    assert out.interrupted and out.signum == sig
    assert [r.outcome for r in out.results] == ["interrupted", "evicted", "interrupted", "interrupted"]
    assert out.results[0].message.startswith(f"not evicted: stopped by {name} while retrying (PodDisruptionBudget")
    assert out.results[3].message == f"not evicted: stopped by {name} before its turn"
    assert any(n.startswith(f"interrupted by {name}: no new evictions") for n in notes)
    assert signal.getsignal(sig) is before  # restored


def test_interrupts_raise_outside_acting_and_are_restored_after() -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    if before[signal.SIGTERM] is signal.SIG_IGN:
        pytest.skip("SIGTERM is ignored in this process, so a run keeps ignoring it")
    with pytest.raises(Interrupted) as e, interrupts.raising():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)
    assert (e.value.name, e.value.exit_code) == ("SIGTERM", 143)
    assert {s: signal.getsignal(s) for s in before} == before  # restored, whatever they were
    assert (interrupts.signal_name(signal.SIGINT), interrupts.exit_code(signal.SIGINT)) == ("Ctrl-C", 130)
    assert interrupts.exit_code(signal.SIGHUP) == 129


def test_a_signal_while_the_report_is_written_waits_for_the_write() -> None:
    done: list[str] = []
    with pytest.raises(Interrupted) as e, interrupts.deferred():
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(0.1)
        done.append("written")
    assert done == ["written"] and e.value.name == "SIGHUP"


# ---------------------------------------------------------------- the whole command, transport faked

@pytest.fixture
def fake_cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., FakeApi]]:
    """`balance`-free: deschedule RemovePodsViolatingNodeTaints over pods on a tainted node, answered by FakeApi."""
    def make(names: list[str], refuse: set[str] | None = None, allowed: int | None = None) -> FakeApi:
        nodes = [node_from_json(b.node("n1", taints=[b.taint("maintenance", "soon")])), node_from_json(b.node("n2"))]
        pods = [pod_from_json(b.pod(n, "n1", labels={"app": "web"}, uid=f"uid-{n}", owner_name=f"{n}-rs"))
                for n in names]
        pdbs = [pdb_from_json(b.pdb("web", {"app": "web"}, allowed=allowed))] if allowed is not None else []
        api = FakeApi(names, refuse=refuse)
        monkeypatch.setattr(app.loading, "connect", lambda _o: _conn())
        monkeypatch.setattr(app.loading, "read_cluster",  # a fresh state per run: a plan removes its candidates from it
                            lambda *_a, **_k: ClusterState(nodes, pods, pdbs, source="cluster https://api (context c)"))
        monkeypatch.setattr(eviction_api, "missing_permissions", lambda *_a, **_k: [])
        monkeypatch.setattr(eviction_api, "request_json", api)
        # Each replacement is bound to n2 at once: the landing check reads it there
        monkeypatch.setattr(app.landings, "wait", lambda _c, evicted, _k, _t: {
            i: Landed(f"{e.name}-new", "n2") for i, e in enumerate(evicted)})
        monkeypatch.setattr(app.landings, "read_nodes", lambda _c, names: ClusterState(
            [n for n in nodes if n.name in names],
            [pod_from_json(b.pod(f"{n}-new", "n2", uid=f"uid-{n}-new", owner_name=f"{n}-rs")) for n in api.applied]))
        return api
    yield make


def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["kubectl-desched", "deschedule", "--plugin", "RemovePodsViolatingNodeTaints",
                                      "-n", "default", *args])
    with pytest.raises(SystemExit) as e:
        cli.main()
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def test_ctrl_c_sigterm_and_sighup_at_the_prompt_exit_128_plus_n_with_the_report(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        fake_cluster: Callable[..., FakeApi]) -> None:
    api = fake_cluster(["web-0"])
    for sig, code, said in ((signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "interrupted by SIGTERM"),
                            (signal.SIGHUP, 129, "interrupted by SIGHUP")):
        def prompt(*_a: Any, _s: int = sig, **_k: Any) -> str:
            os.kill(os.getpid(), _s)  # the handler raises out of click's input(), as on a terminal
            time.sleep(1)
            return "a"
        monkeypatch.setattr("kubectl_desched.ui.confirm.stdin_is_tty", lambda: True)
        monkeypatch.setattr("click.prompt", prompt)
        report = tmp_path / f"{sig}.json"
        got, _out, err = run_cli(monkeypatch, capsys, "--report", str(report))
        assert got == code, err
        assert err.endswith(f"\n{said}: nothing further was evicted\n")
        doc = json.loads(report.read_text())
        name = interrupts.signal_name(sig)
        assert doc["confirmation"]["refused"] == f"interrupted by {name} at the prompt"
        assert doc["error"] == f"interrupted by {name} before any eviction was sent" and doc["evictions"] == []
    assert api.posts == []


def test_eof_at_the_prompt_is_still_not_confirmed(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                                  fake_cluster: Callable[..., FakeApi]) -> None:
    fake_cluster(["web-0"])
    monkeypatch.setattr("kubectl_desched.ui.confirm.stdin_is_tty", lambda: True)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # Ctrl-D: no answer, which is a "no"
    code, _out, _err = run_cli(monkeypatch, capsys)
    assert code == app.EXIT_NOT_CONFIRMED


def test_sigterm_during_a_retry_writes_the_report_and_exits_143(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        fake_cluster: Callable[..., FakeApi]) -> None:
    api = fake_cluster(["web-0", "web-1"], refuse={"web-1"})
    real = api.__call__

    def on_retry(conn: Any, method: str, path: str, **kw: Any) -> Any:
        if method == "POST" and "web-1" in path and sum(p[0] == "web-1" for p in api.posts) == 1:
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
        return real(conn, method, path, **kw)
    monkeypatch.setattr(eviction_api, "request_json", on_retry)  # the default backoff waits 0.5-1s: long enough
    report = tmp_path / "r.json"
    code, out, err = run_cli(monkeypatch, capsys, "--yes", "--timeout", "60s", "--report", str(report))
    assert code == 143, err
    assert "interrupted by SIGTERM: 1 evicted, 1 not evicted. 2 confirmed: 1 evicted, 1 interrupted" in err
    doc = json.loads(report.read_text())
    got = {e["pod"]: e for e in doc["evictions"]}
    assert got["web-0"]["result"] == "evicted"
    assert got["web-1"]["result"] == "interrupted" and "stopped by SIGTERM while retrying" in got["web-1"]["message"]
    assert doc["summary"]["exitCode"] == 143 and doc["summary"]["interruptedBy"] == "SIGTERM"
    assert doc["summary"]["interrupted"] is True and doc["error"] is None
    assert "web-1" in out and api.applied == {"web-0": 1}


def test_server_dry_run_reports_blocked_for_the_budget_the_plan_counts(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        fake_cluster: Callable[..., FakeApi]) -> None:
    api = fake_cluster(["web-0", "web-1", "web-2"], allowed=1)
    report = tmp_path / "r.json"
    began = time.monotonic()
    # --no-respect-pdbs: the plan keeps the refused pods (as upstream's dry run); the server dry run names them.
    code, _out, err = run_cli(monkeypatch, capsys, "--dry-run=server", "--yes", "--report", str(report),
                              "--no-respect-pdbs")
    assert time.monotonic() - began < 10
    assert code == 1, err
    got = {e["pod"]: e for e in json.loads(report.read_text())["evictions"]}
    assert got["web-0"]["result"] == "would evict"
    for p in ("web-1", "web-2"):
        assert got[p]["result"] == "blocked" and got[p]["message"].startswith(
            "PodDisruptionBudget web allows 1 disruption(s), all taken by the ")
    assert not api.applied


def test_by_default_the_plan_keeps_what_the_budget_would_refuse(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        fake_cluster: Callable[..., FakeApi]) -> None:
    api = fake_cluster(["web-0", "web-1", "web-2"], allowed=1)
    report = tmp_path / "r.json"
    code, _out, err = run_cli(monkeypatch, capsys, "--dry-run=server", "--yes", "--report", str(report))
    assert code == 0, err
    assert [e["pod"] for e in json.loads(report.read_text())["evictions"]] == ["web-0"]
    assert not api.applied


def test_the_report_names_the_evictor_as_the_flag_does(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        fake_cluster: Callable[..., FakeApi]) -> None:
    """One name for the Eviction API evictor: what --evictor takes is what the report records."""
    fake_cluster(["web-0"], allowed=1)
    report = tmp_path / "r.json"
    code, _out, err = run_cli(monkeypatch, capsys, "--dry-run=server", "--yes", "--evictor", "eviction",
                              "--report", str(report))
    assert code == 0, err
    assert json.loads(report.read_text())["evictor"] == "eviction"


# ---------------------------------------------------------------- a real terminal prompt, real signals

PROMPT_SCRIPT = """
import sys
from kubectl_desched import interrupts
from kubectl_desched.ui import confirm
from tests.unit.evictors.test_eviction_api_fake_server import cand
with interrupts.raising():
    try:
        confirm.ask([cand("web")])
    except interrupts.Interrupted as e:
        print("interrupted", e.name, e.exit_code, flush=True)
        sys.exit(e.exit_code)
print("answered", flush=True)
"""


@pytest.mark.parametrize(("sig", "name", "code"), [(signal.SIGINT, "Ctrl-C", 130), (signal.SIGTERM, "SIGTERM", 143),
                                                   (signal.SIGHUP, "SIGHUP", 129)])
def test_a_signal_at_a_real_prompt_is_an_interrupt_not_a_no(sig: int, name: str, code: int) -> None:
    """click.prompt turns KeyboardInterrupt into Abort (which reads as "not confirmed"); Interrupted must get
    through input() on a terminal."""
    import pty

    master, slave = pty.openpty()
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.Popen([sys.executable, "-c", PROMPT_SCRIPT], stdin=slave, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    os.close(slave)
    try:
        os.set_blocking(proc.stderr.fileno(), False)  # type: ignore[union-attr]
        err, deadline = b"", time.monotonic() + 30
        while b"[n]o" not in err and time.monotonic() < deadline and proc.poll() is None:
            err += proc.stderr.read() or b""  # type: ignore[union-attr]
            time.sleep(0.05)
        assert b"[n]o" in err, err
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=30)
    finally:
        os.close(master)
    assert proc.returncode == code and out.decode().split() == ["interrupted", name, str(code)]


def into_files(monkeypatch: pytest.MonkeyPatch, out: Path, err: Path) -> int:
    """cli.main() with stdout and stderr on real files (the same path for both is `&> log`): its exit code."""
    monkeypatch.setattr(sys, "argv", ["kubectl-desched", "deschedule", "--plugin", "RemovePodsViolatingNodeTaints",
                                      "-n", "default", "--yes"])
    with out.open("a") as o, err.open("a") as e, monkeypatch.context() as m, pytest.raises(SystemExit) as done:
        m.setattr(sys, "stdout", o)
        m.setattr(sys, "stderr", e)
        cli.main()
    return int(done.value.code or 0)


def test_each_result_appears_once_in_a_log_of_stdout_and_stderr_together(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake_cluster: Callable[..., FakeApi]) -> None:
    """With 2>&1 a line per pod on stderr and the results table on stdout showed every result twice."""
    fake_cluster(["web-0", "web-1"])
    log = tmp_path / "log"
    assert into_files(monkeypatch, log, log) == 0
    results = [line.split() for line in log.read_text().splitlines() if "evicted" in line]
    assert results == [["default", "web-0", "n1", "evicted", "eviction", "accepted"],  # the table's rows, once
                       ["default", "web-1", "n1", "evicted", "eviction", "accepted"],
                       ["2", "confirmed:", "2", "evicted"]]
    out, err = tmp_path / "out", tmp_path / "err"  # apart: stderr has a line per pod as it comes, stdout the table
    fake_cluster(["web-0", "web-1"])
    assert into_files(monkeypatch, out, err) == 0
    assert "  default/web-0: evicted\n  default/web-1: evicted\n" in err.read_text()
    assert "web-1  n1      evicted" in out.read_text() and "default/web-1: evicted" not in out.read_text()


def test_ctrl_c_after_seven_evictions_says_seven_evicted_and_one_not_attempted(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        fake_cluster: Callable[..., FakeApi]) -> None:
    """Every answer came: nothing is "possibly" evicted (it said "7 evicted or possibly evicted, 1 not")."""
    api = fake_cluster([f"web-{i}" for i in range(8)])
    real = api.__call__

    def seventh_then_ctrl_c(conn: Any, method: str, path: str, **kw: Any) -> Any:
        answer = real(conn, method, path, **kw)
        if method == "POST" and len(api.applied) == 7:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.3)  # the handler has run before the answer is handed back
        return answer
    monkeypatch.setattr(eviction_api, "request_json", seventh_then_ctrl_c)
    code, _out, err = run_cli(monkeypatch, capsys, "--yes")
    assert code == 130, err
    assert "\ninterrupted: 7 evicted, 1 not attempted. 8 confirmed: 7 evicted, 1 interrupted\n" in err


def test_after_an_interrupt_possibly_is_said_only_of_pods_without_an_answer() -> None:
    def result(outcome: str, attempts: int = 1) -> EvictionResult:
        return EvictionResult(cand("web"), outcome, "", attempts=attempts)

    got = results_summary([result("evicted"), result("unknown"), result("unfinished"), result("blocked"),
                           result("interrupted", attempts=2), result("interrupted", attempts=0)], True, "SIGHUP")
    assert got == ("interrupted by SIGHUP: 1 evicted, 1 possibly evicted (no answer), 1 still migrating (Koordinator "
                   "carries on), 2 not evicted, 1 not attempted. 6 confirmed: 1 evicted, 1 unknown, 1 unfinished, "
                   "1 blocked, 2 interrupted")


def test_second_signal_abandons_what_is_in_flight_and_says_which() -> None:
    release = threading.Event()

    class Stuck:
        name = "stuck"

        def preflight(self, _c: Any) -> list[str]:
            return []

        def settle(self, results: list[EvictionResult], _stop: threading.Event) -> list[EvictionResult]:
            return results

        def evict(self, c: Candidate, stop: threading.Event) -> EvictionResult:
            release.wait(10)
            return EvictionResult(c, "evicted", "ok", finished=now())

    assert isinstance(EvictionRunner(Stuck(), Pacing()).stop, Stop)
    runner = EvictionRunner(Stuck(), Pacing())
    for delay in (0.2, 0.4):
        threading.Timer(delay, os.kill, (os.getpid(), signal.SIGTERM)).start()
    out = runner.run([cand("a"), cand("b")])
    release.set()
    assert [r.outcome for r in out.results] == ["unknown", "interrupted"]
    assert out.results[0].message.startswith("abandoned by a second SIGTERM while the eviction was in flight")


def test_a_signal_right_after_acting_still_records_what_was_done(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        fake_cluster: Callable[..., FakeApi]) -> None:
    """Between the runner's return and the report's evictions no signal may make the report claim that
    nothing was sent."""
    fake_cluster(["web-0"])
    real_run = EvictionRunner.run

    def then_sigterm(self: EvictionRunner, candidates: Any) -> Any:
        out = real_run(self, candidates)
        os.kill(os.getpid(), signal.SIGTERM)  # lands after the runner restored the outer handlers
        time.sleep(0.1)
        return out
    monkeypatch.setattr(EvictionRunner, "run", then_sigterm)
    report = tmp_path / "r.json"
    code, _out, err = run_cli(monkeypatch, capsys, "--yes", "--report", str(report))
    assert code == 143, err
    doc = json.loads(report.read_text())
    assert doc["evictions"][0]["result"] == "evicted"
    assert doc["error"] == "interrupted by SIGTERM after acting (see evictions)"
    assert doc["summary"]["exitCode"] == 143


# ---------------------------------------------------------------- after the evictions: where the replacements landed


def test_the_run_shows_where_each_replacement_landed_against_the_estimate(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        fake_cluster: Callable[..., FakeApi]) -> None:
    fake_cluster(["web-0", "web-1"])
    report = tmp_path / "r.json"
    code, out, _err = run_cli(monkeypatch, capsys, "--yes", "--report", str(report))
    assert code == 0
    assert "Landings (estimated, and where the scheduler put each replacement):" in out
    assert [line.split() for line in out.splitlines() if line.startswith("default ")][-2:] == [
        ["default", "web-0", "n1", "n2", "n2", "web-0-new"], ["default", "web-1", "n1", "n2", "n2", "web-1-new"]]
    assert "2 of 2 replacement(s) landed where estimated (a tied node counts); none landed back on its own node" in out
    # n1 loses both pods, n2 gets both: measured after as the estimate said
    assert "n1      5% -> 0% | 0%" in out and "n2      0% -> 5% | 5%" in out
    landings = json.loads(report.read_text())["landings"]
    assert (landings["waitedFor"], landings["asEstimated"], landings["landedBack"]) == (2, 2, 0)
    assert landings["pods"][0] | {"tiedWith": []} == {
        "namespace": "default", "pod": "web-0", "from": "n1", "estimated": "n2", "tiedWith": [],
        "replacement": "web-0-new", "landed": "n2", "asEstimated": True, "landedBack": False}


def test_a_replacement_that_lands_back_is_marked_and_no_wait_landing_skips_the_check(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        fake_cluster: Callable[..., FakeApi]) -> None:
    fake_cluster(["web-0"])
    monkeypatch.setattr(app.landings, "wait", lambda _c, evicted, _k, _t: {0: Landed("web-0-new", "n1")})
    code, out, _err = run_cli(monkeypatch, capsys, "--yes")
    assert code == 0 and "BACK ON ITS NODE" in out
    assert "0 of 1 replacement(s) landed where estimated (a tied node counts); 1 landed back on its own node" in out
    waited: list[int] = []
    monkeypatch.setattr(app.landings, "wait", lambda *_a: waited.append(1) or {})
    fake_cluster(["web-0"])
    code, out, _err = run_cli(monkeypatch, capsys, "--yes", "--no-wait-landing")
    assert code == 0 and waited == [] and "Landings" not in out


def test_replacements_are_matched_to_their_evicted_pods() -> None:
    from datetime import UTC, datetime

    from kubectl_desched.kube.landings import Evicted, match

    t0 = datetime(2026, 11, 27, 12, 0, 0, tzinfo=UTC)

    def pod(name: str, owner: str, created: str, node: str = "", uid: str = "") -> dict[str, Any]:
        return {"metadata": {"name": name, "uid": uid or f"uid-{name}", "creationTimestamp": created,
                             "ownerReferences": [{"uid": owner, "controller": True}]}, "spec": {"nodeName": node}}
    evicted = [Evicted("ns", "web-a", "rs", {}, t0), Evicted("ns", "web-b", "rs", {}, t0.replace(second=5)),
               Evicted("ns", "db-0", "sts", {}, t0)]
    pods = [pod("web-old", "rs", "2026-11-27T11:00:00Z", "n9"),  # there before: not a replacement
            pod("web-x", "rs", "2026-11-27T12:00:01Z", "n2"), pod("web-y", "rs", "2026-11-27T12:00:06Z"),
            pod("db-0", "sts", "2026-11-27T12:00:02Z", "n3", uid="uid-db-0-new"),
            pod("web-known", "rs", "2026-11-27T12:00:01Z", "n4", uid="uid-known")]
    found = match(evicted, pods, known={"uid-known"})
    assert found[0].pod == "web-x" and found[0].node == "n2"
    assert found[1].pod == "web-y" and found[1].node == ""  # created, not yet bound: Pending
    assert found[2].pod == "db-0" and found[2].node == "n3"  # a StatefulSet's keeps its name


def test_rounds_stop_when_the_nodes_do_not_get_better(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str],
                                                     fake_cluster: Callable[..., FakeApi]) -> None:
    """The faked cluster reads the same every time, as if nothing had moved: the second round plans the same
    moves, finds the nodes no better than the first round did, and evicts nothing more."""
    api = fake_cluster(["web-0"])
    code, out, err = run_cli(monkeypatch, capsys, "--yes", "--rounds", "3")
    assert code == 0 and api.applied == {"web-0": 1}
    rounds = [line for line in err.splitlines() if line.startswith("round ")]
    assert rounds == ["round 1: 0 node(s) over target, cpu spread 2.5%; 1 planned, 1 evicted; 1 of 1 landed as "
                      "estimated",
                      "round 2: stopped: 0 node(s) over target, cpu spread 2.5%, no better than the round before"]
    assert out.count("Round 1") == 1 and "Round 2" not in out


def test_rounds_that_run_out_read_the_cluster_once_more_to_say_where_they_left_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        fake_cluster: Callable[..., FakeApi]) -> None:
    """The budget lets one pod go per round. Each read shows the evicted pods replaced on n2, as the landing wait
    saw them: two rounds move both, and the line after them comes from a third read, not from the estimate."""
    api = fake_cluster(["web-0", "web-1"], allowed=1)
    nodes = [node_from_json(b.node("n1", taints=[b.taint("maintenance", "soon")])), node_from_json(b.node("n2"))]
    reads: list[int] = []

    def read(*_a: Any, **_k: Any) -> ClusterState:
        reads.append(1)
        pods = [pod_from_json(b.pod(n if n not in api.applied else f"{n}-new", "n2" if n in api.applied else "n1",
                                    labels={"app": "web"}, uid=f"uid-{n}{'-new' if n in api.applied else ''}",
                                    owner_name=f"{n}-rs")) for n in ("web-0", "web-1")]
        pdbs = [pdb_from_json(b.pdb("web", {"app": "web"}, allowed=1))]
        return ClusterState(nodes, pods, pdbs, source="cluster https://api (context c)")

    monkeypatch.setattr(app.loading, "read_cluster", read)
    code, _out, err = run_cli(monkeypatch, capsys, "--yes", "--rounds", "2")
    assert code == 0 and api.applied == {"web-0": 1, "web-1": 1} and len(reads) == 3
    lines = [line for line in err.splitlines() if line.startswith(("round ", "after round"))]
    assert lines[2] == "after round 2: no node over target, cpu spread 5% (read again)"
    code, _out, err = run_cli(monkeypatch, capsys, "--yes", "--rounds", "3")  # both moved: nothing left
    assert code == 0 and "round 1: no node over target, cpu spread 5%; nothing left to move" in err


def test_a_replacement_is_listed_by_the_labels_it_will_share() -> None:
    """The PodTopologyLabels admission gives a bound pod its node's zone: a replacement elsewhere has another."""
    from kubectl_desched.app.landings import template_labels

    pods = [b.pod("a", "n1", owner_name="web", labels={"app": "web", "topology.kubernetes.io/zone": "a",
                                                       "statefulset.kubernetes.io/pod-name": "a"}),
            b.pod("b", "n2", owner_name="web", labels={"app": "web", "topology.kubernetes.io/zone": "b", "v": "2"})]
    state = ClusterState([node_from_json(b.node("n1")), node_from_json(b.node("n2"))], map(pod_from_json, pods))
    plan = EvictionPlan(state, Limits())
    assert template_labels(plan.cluster.pods[0], plan) == {"app": "web"}


def test_replacements_of_one_controller_are_paired_with_the_estimate_they_meet() -> None:
    """Two pods of one ReplicaSet leave n1 and n2; the estimate sends the first to n3 and the second to n4. Their
    replacements were created in the same second, so nothing says which is whose: landing on n4 and n3 is the
    estimate met, not two misses."""
    from kubectl_desched.app.landings import _interchange
    from kubectl_desched.framework.placement import Destination, Placement

    a, b2 = cand("a", "n1"), cand("b", "n2")
    for c in (a, b2):  # one controller for both
        object.__setattr__(c, "pod", pod_from_json(b.pod(c.pod.name, c.pod.node_name, owner_name="web")))
    placement = Placement({id(a.pod): Destination("n3", tied=("n3",)), id(b2.pod): Destination("n4", tied=("n4",))})
    gone = [EvictionResult(a, "evicted", ""), EvictionResult(b2, "evicted", "")]
    paired = _interchange(gone, {0: Landed("web-x", "n4"), 1: Landed("web-y", "n3")}, placement)
    assert paired == {0: Landed("web-y", "n3"), 1: Landed("web-x", "n4")}


def test_the_landing_wait_ends_when_no_replacement_can_come_or_nothing_changes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import UTC, datetime

    from kubectl_desched.kube import landings

    evicted = [landings.Evicted("ns", "web-a", "rs", {"app": "web"}, datetime.now(UTC), "ReplicaSet", "web",
                                "uid-web-a")]
    lists: list[str] = []

    def list_pods(namespace: str, selector: str) -> list[dict[str, Any]]:
        lists.append(selector)
        return []
    began = time.monotonic()
    # the ReplicaSet is gone: no replacement will come, so nothing is listed at all
    assert landings.wait_for_landings(_conn(), evicted, set(), 60, list_pods=list_pods,
                                      owner_exists=lambda _e: False) == {0: Landed("", "", landings.NO_CONTROLLER)}
    assert lists == [] and time.monotonic() - began < 1
    # the pod is still listed and not terminating (a PodMigrationJob ended without evicting it): not waited for
    alive = [{"metadata": {"uid": "uid-web-a", "name": "web-a"}}]
    assert landings.wait_for_landings(_conn(), evicted, set(), 60, list_pods=lambda _n, _s: alive,
                                      owner_exists=lambda _e: True) == {0: Landed("", "", landings.NOT_EVICTED)}
    # it is there, but nothing appears: the wait ends after STALL_SECONDS, not --timeout
    monkeypatch.setattr(landings, "STALL_SECONDS", 0.3)
    assert landings.wait_for_landings(_conn(), evicted, set(), 60, interval=0.05, list_pods=list_pods,
                                      owner_exists=lambda _e: True) == {}
    assert lists[0] == "app=web" and len(lists) > 1 and time.monotonic() - began < 5
