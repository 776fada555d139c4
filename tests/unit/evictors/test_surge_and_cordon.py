"""--surge's and --cordon's writes against a fake API (the live tests run them on the simulated cluster; here the
failure paths a real server rarely gives on demand: a lost answer, an undo that fails, a read that breaks). The
fake keeps one Deployment's scale and pods, and plays the ReplicaSet controller: scaling up adds a pod, scaling
down removes an unready pod first, then the lowest pod-deletion-cost, then the newest."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import urllib3

from kubectl_desched.evictors import cordon as cordon_mod
from kubectl_desched.evictors import surge as surge_mod
from kubectl_desched.evictors.cordon import Cordons
from kubectl_desched.evictors.surge import DELETION_COST, SURGE_PERMISSIONS, Surger
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.kube.access import Permission
from kubectl_desched.kube.config import Connection
from kubectl_desched.model.objects import pod_from_json
from tests.builders import pod as pod_obj

NS = "shop"


class ApiError(Exception):
    """Stands for the client's ApiException (status and body), as surge.py catches it through api_exception()."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status, self.body, self.reason = status, "{}", "error"


class World:
    def __init__(self, replicas: int = 1, *, new_ready: bool = True) -> None:
        self.replicas = replicas
        self.rv = 1
        self.new_ready = new_ready
        self.pods: dict[str, dict[str, Any]] = {}
        self.made = 0
        for _ in range(replicas):
            self._add(ready=True)
        self.fail: dict[tuple[str, str], list[Exception | None]] = {}  # (method, path suffix) -> failures to come
        self.lose_answer: set[tuple[str, str]] = set()  # applied, then the answer is lost
        self.calls: list[tuple[str, str]] = []

    def _add(self, ready: bool) -> str:
        name = f"checkout-{self.made}"
        self.made += 1
        self.pods[name] = {"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}",
                                        "labels": {"app": "checkout", "pod-template-hash": "h"}, "annotations": {},
                                        "ownerReferences": [{"kind": "ReplicaSet", "name": "checkout-h",
                                                             "uid": "rs-uid", "controller": True}]},
                           "spec": {"nodeName": f"n{self.made}"},
                           "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}
        return name

    def _ready(self, p: dict[str, Any]) -> bool:
        return p["status"]["conditions"][0]["status"] == "True"

    def _reconcile(self) -> None:
        while len(self.pods) < self.replicas:
            self._add(self.new_ready)
        while len(self.pods) > self.replicas:
            def rank(name: str) -> tuple[bool, int, int]:  # unready, lower cost, then newer go first
                p = self.pods[name]
                return (self._ready(p), int(p["metadata"]["annotations"].get(DELETION_COST, "0")),
                        -int(name.rsplit("-", 1)[1]))
            del self.pods[min(self.pods, key=rank)]

    def __call__(self, _conn: Any, method: str, path: str, *, body: Any = None, query: Any = None,
                 timeout: Any = None, content_type: str = "", **_kw: Any) -> Any:
        self.calls.append((method, path))
        for (m, suffix), queue in self.fail.items():
            if m == method and path.endswith(suffix) and queue:
                e = queue.pop(0)
                if e is not None:
                    raise e
        answer = self._answer(method, path, body)
        if any(m == method and path.endswith(suffix) for m, suffix in self.lose_answer):
            self.lose_answer = {x for x in self.lose_answer if not (x[0] == method and path.endswith(x[1]))}
            raise urllib3.exceptions.ReadTimeoutError(None, path, "read timed out")  # type: ignore[arg-type]
        return answer

    def _answer(self, method: str, path: str, body: Any) -> Any:
        rs = {"kind": "ReplicaSet", "metadata": {"name": "checkout-h", "namespace": NS, "uid": "rs-uid",
                                                 "ownerReferences": [{"kind": "Deployment", "name": "checkout",
                                                                      "uid": "d-uid", "controller": True}]},
              "spec": {"replicas": self.replicas}}
        ready = sum(self._ready(p) for p in self.pods.values())
        deployment = {"metadata": {"name": "checkout", "namespace": NS, "uid": "d-uid", "generation": 1},
                      "spec": {"replicas": self.replicas},
                      "status": {"observedGeneration": 1, "replicas": len(self.pods),
                                 "updatedReplicas": len(self.pods), "readyReplicas": ready}}
        if path.endswith("/replicasets"):
            return {"items": [rs]}
        if path.endswith("/deployments"):
            return {"items": [deployment]}
        if path.endswith("/horizontalpodautoscalers"):
            return {"items": []}
        if path.endswith("/deployments/checkout"):
            return deployment
        if path.endswith("/scale"):
            if method == "GET":
                return {"apiVersion": "autoscaling/v1", "kind": "Scale",
                        "metadata": {"name": "checkout", "resourceVersion": str(self.rv)},
                        "spec": {"replicas": self.replicas}}
            self.replicas = body["spec"]["replicas"]
            self.rv += 1
            self._reconcile()
            return body
        if path.endswith(f"/namespaces/{NS}/pods"):
            return {"items": list(self.pods.values())}
        name = path.rsplit("/", 1)[1]
        if name not in self.pods:
            raise ApiError(404)
        p = self.pods[name]
        if method == "PATCH":
            for k, v in body["metadata"]["annotations"].items():
                if v is None:
                    p["metadata"]["annotations"].pop(k, None)
                else:
                    p["metadata"]["annotations"][k] = v
        return p


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> World:
    w = World()
    monkeypatch.setattr(surge_mod, "request_json", w)
    monkeypatch.setattr(surge_mod, "api_exception", lambda: ApiError)
    monkeypatch.setattr(surge_mod, "is_api_exception", lambda e: isinstance(e, ApiError))
    monkeypatch.setattr(surge_mod, "api_message", lambda e: "error")
    monkeypatch.setattr(surge_mod, "POLL", 0.01)
    return w


def _surger(timeout: float = 5.0) -> Surger:
    conn = Connection(api=None, server="https://x", context="c", namespace="default")  # type: ignore[arg-type]
    return Surger(conn, timeout)


def _candidate(w: World, name: str = "checkout-0") -> Candidate:
    p = w.pods[name]
    raw = pod_obj(name, "n1", namespace=NS, owner="ReplicaSet", owner_name="checkout-h", uid=p["metadata"]["uid"],
                  labels=dict(p["metadata"]["labels"]))
    return Candidate(pod_from_json(raw), "LowNodeUtilization", "r", "default", method="surge", why_surge="x")


def test_a_surge_moves_exactly_the_marked_pod_and_restores_the_replicas(world: World) -> None:
    r = _surger().move(_candidate(world), threading.Event())
    assert r.outcome == "moved", r.message
    assert world.replicas == 1 and list(world.pods) == ["checkout-1"]


def test_a_new_pod_never_ready_is_the_one_removed_and_the_mark_goes(world: World) -> None:
    world.new_ready = False
    surger = _surger(timeout=0.3)
    r = surger.move(_candidate(world), threading.Event())
    assert r.outcome == "timed out" and "replicas restored, the pod stays" in r.message
    assert world.replicas == 1 and list(world.pods) == ["checkout-0"]
    assert DELETION_COST not in world.pods["checkout-0"]["metadata"]["annotations"]
    assert surger.active == {}


def test_ctrl_c_while_waiting_restores(world: World) -> None:
    world.new_ready = False
    stop = threading.Event()
    threading.Timer(0.1, stop.set).start()
    r = _surger().move(_candidate(world), stop)
    assert r.outcome == "interrupted"
    assert world.replicas == 1 and list(world.pods) == ["checkout-0"]
    assert not world.pods["checkout-0"]["metadata"]["annotations"]


def test_a_scale_up_whose_answer_is_lost_is_still_undone(world: World) -> None:
    world.lose_answer = {("PUT", "/scale")}  # the server applied it; the client hears a timeout
    r = _surger().move(_candidate(world), threading.Event())
    assert r.outcome == "failed" and "what it wrote is undone" in r.message, r.message
    assert world.replicas == 1 and "checkout-0" in world.pods
    assert not world.pods["checkout-0"]["metadata"]["annotations"]


def test_an_undo_that_fails_is_said_with_the_commands_and_retried_by_restore_all(world: World) -> None:
    world.new_ready = False
    # the wait times out; then undoing the mark fails (500) and so does the scale's read
    world.fail = {("PATCH", "/pods/checkout-0"): [None, ApiError(500)], ("GET", "/scale"): [None, None, ApiError(500)]}
    surger = _surger(timeout=0.2)
    r = surger.move(_candidate(world), threading.Event())
    assert r.outcome == "timed out"
    assert "kubectl scale deployment checkout -n shop --replicas=1" in r.message, r.message
    assert world.replicas == 2 and len(surger.active) == 1  # kept for the main thread's retry
    lines = surger.restore_all()
    assert lines == ["shop/checkout-0: surge undone, Deployment checkout at 1"], lines
    assert world.replicas == 1 and not world.pods["checkout-0"]["metadata"]["annotations"]
    assert surger.active == {}


def test_an_abandoned_move_writes_nothing_more(world: World) -> None:
    surger = _surger()
    move = surge_mod._Move(surge_mod.Target(NS, "checkout", "checkout-h", 1), "checkout-0", "uid-checkout-0", None)
    move.abandoned = True
    with pytest.raises(surge_mod.SurgeFailed):
        surger._write(move, "scaled", lambda: pytest.fail("written after abandoned"))


def test_a_surge_refused_live_writes_nothing(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(surge_mod, "surge_target", lambda _p, _e: "Deployment checkout is paused")
    r = _surger().move(_candidate(world), threading.Event())
    assert (r.outcome, r.message) == ("refused", "not moved: Deployment checkout is paused")
    assert all(m == "GET" for m, _p in world.calls)


# ---------------------------------------------------------------------- --cordon


class Nodes:
    def __init__(self, **pods: list[dict[str, Any]]) -> None:
        self.unschedulable = dict.fromkeys(pods, False)
        self.pods = pods
        self.fail: dict[tuple[str, str], Exception] = {}
        self.said: list[str] = []

    def __call__(self, _conn: Any, method: str, path: str, *, body: Any = None, query: Any = None,
                 **_kw: Any) -> Any:
        if (method, path) in self.fail:
            raise self.fail.pop((method, path))
        if path == "/api/v1/pods":
            node = dict(query)["fieldSelector"].split("=", 1)[1]
            return {"items": self.pods[node]}
        name = path.rsplit("/", 1)[1]
        if method == "PATCH":
            self.unschedulable[name] = body["spec"]["unschedulable"]
        return {"spec": {"unschedulable": self.unschedulable[name]}}


@pytest.fixture
def nodes(monkeypatch: pytest.MonkeyPatch) -> Nodes:
    n = Nodes(a=[], b=[pod_obj("web", "b")], c=[pod_obj("agent", "c", owner="DaemonSet")])
    monkeypatch.setattr(cordon_mod, "request_json", n)
    return n


def _cordons(n: Nodes, *names: str) -> Cordons:
    conn = Connection(api=None, server="https://x", context="c", namespace="default")  # type: ignore[arg-type]
    return Cordons(conn, list(names), n.said.append)


def test_only_a_node_this_run_emptied_stays_cordoned(nodes: Nodes) -> None:
    c = _cordons(nodes, "a", "b", "c")
    assert c.ensure() is None and all(nodes.unschedulable.values())
    records = c.finish(moved_from={"a", "b"})
    assert nodes.unschedulable == {"a": True, "b": False, "c": False}
    assert "a is empty and stays cordoned: `kubectl uncordon a` to use it again" in nodes.said
    assert "b was not emptied (1 pod(s) stay: default/web): uncordoned" in nodes.said
    assert "c was not emptied (nothing was moved off it): uncordoned" in nodes.said
    assert [(r["node"], r["empty"], r["uncordoned"]) for r in records] == \
        [("a", True, False), ("b", False, True), ("c", True, True)]


def test_a_cordon_that_fails_halfway_is_undone_and_said(nodes: Nodes) -> None:
    nodes.fail[("PATCH", "/api/v1/nodes/b")] = urllib3.exceptions.ProtocolError("connection reset")
    c = _cordons(nodes, "a", "b", "c")
    failed = c.ensure()
    assert failed is not None and failed.startswith("cordoning failed (ProtocolError")
    assert c.ensure() == failed  # once: the other candidates hear the same
    c.finish(moved_from=set())
    assert not any(nodes.unschedulable.values())
    assert "a was not emptied (nothing was moved off it): uncordoned" in nodes.said


def test_a_node_whose_pods_cannot_be_read_is_uncordoned(nodes: Nodes) -> None:
    c = _cordons(nodes, "a")
    c.ensure()
    nodes.fail[("GET", "/api/v1/pods")] = ApiError(500)
    c.finish(moved_from={"a"})
    assert nodes.unschedulable["a"] is False
    assert any(line.startswith("a was not emptied (1 pod(s) stay: (its pods could not be read") for line in nodes.said)


def test_an_uncordon_that_fails_names_the_command(nodes: Nodes) -> None:
    c = _cordons(nodes, "b")
    c.ensure()
    nodes.fail[("PATCH", "/api/v1/nodes/b")] = ApiError(503)
    records = c.finish(moved_from={"b"})
    assert records[0]["uncordoned"] is False and "error" in records[0]
    assert any(line.startswith("error: b could not be uncordoned") and "`kubectl uncordon b`" in line
               for line in nodes.said)


def _needed(method: str, path: str) -> Permission:
    """The permission one request of the move needs, as the API server's authorizer sees it."""
    parts = path.strip("/").split("/")
    group = "" if parts[0] == "api" else parts[1]
    rest = parts[4:] if parts[0] == "api" else parts[5:]  # after namespaces/<ns>
    resource, name, sub = rest[0], rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else ""
    verb = {"GET": "get" if name else "list", "PUT": "update", "PATCH": "patch"}[method]
    return Permission(verb, resource, group, sub)


def test_the_preflight_asks_for_every_permission_a_move_and_its_undo_use(world: World) -> None:
    world.new_ready = False
    _surger(timeout=0.2).move(_candidate(world), threading.Event())  # up, wait, then every undo step
    world.new_ready = True
    _surger().move(_candidate(world), threading.Event())  # the whole move
    assert {_needed(m, p) for m, p in world.calls} - set(SURGE_PERMISSIONS) == set()
