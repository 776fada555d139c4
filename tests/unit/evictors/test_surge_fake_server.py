"""--surge's move against a fake API server that scales the way the ReplicaSet controller does: scaled up, it adds a
pod (Ready at once, or never); scaled down, it removes a pod that is not Ready first, else the one with the lowest
controller.kubernetes.io/pod-deletion-cost. The same moves run on the real components in the live tests; here, what
they ask of the server, and that the preflight asks for each of those permissions."""

from __future__ import annotations

import itertools
import re
import threading
from typing import Any

import pytest

from kubectl_desched.evictors import surge
from kubectl_desched.evictors.surge import DELETION_COST, SURGE_PERMISSIONS, Surger
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.kube.access import Permission
from kubectl_desched.kube.config import Connection
from kubectl_desched.model.objects import pod_from_json
from tests import builders as b

NS = "shop"


class FakeApps:
    """One Deployment `checkout` (2 replicas, ReplicaSet checkout-rs) and its pods, as the API server and the
    ReplicaSet controller keep them. `ready_new`: whether a pod the scale-up adds gets Ready."""

    def __init__(self, ready_new: bool = True) -> None:
        self.ready_new = ready_new
        self.replicas = 2
        self.serial = itertools.count(1)
        self.pods: dict[str, dict[str, Any]] = {}
        for name in ("checkout-a", "checkout-b"):
            self._add(name, ready=True)
        self.calls: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def _add(self, name: str, ready: bool) -> None:
        self.pods[name] = {
            "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "annotations": {},
                         "ownerReferences": [{"kind": "ReplicaSet", "name": "checkout-rs", "uid": "uid-rs",
                                              "controller": True}]},
            "spec": {"nodeName": "cold-1"},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}

    def _reconcile(self) -> None:
        while len(self.pods) < self.replicas:
            self._add(f"checkout-new{next(self.serial)}", ready=self.ready_new)
        while len(self.pods) > self.replicas:
            def rank(p: dict[str, Any]) -> tuple[bool, int]:
                ready = p["status"]["conditions"][0]["status"] == "True"
                return ready, int(p["metadata"]["annotations"].get(DELETION_COST) or 0)
            del self.pods[min(self.pods.values(), key=rank)["metadata"]["name"]]

    def __call__(self, _conn: Any, method: str, path: str, *, body: Any = None, **_kw: Any) -> Any:
        with self.lock:
            self.calls.append((method, path))
            apps = f"/apis/apps/v1/namespaces/{NS}"
            if (method, path) == ("GET", f"{apps}/replicasets"):
                owner = {"kind": "Deployment", "name": "checkout", "uid": "uid-d", "controller": True}
                return {"items": [{"metadata": {"name": "checkout-rs", "namespace": NS, "uid": "uid-rs",
                                                "ownerReferences": [owner]}, "spec": {"replicas": self.replicas}}]}
            if (method, path) == ("GET", f"{apps}/deployments"):
                return {"items": [{"metadata": {"name": "checkout", "namespace": NS, "uid": "uid-d", "generation": 1},
                                   "spec": {"replicas": self.replicas},
                                   "status": {"observedGeneration": 1, "replicas": self.replicas,
                                              "updatedReplicas": self.replicas}}]}
            if (method, path) == ("GET", f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers"):
                return {"items": []}
            if path == f"{apps}/deployments/checkout/scale":
                if method == "PUT":
                    self.replicas = body["spec"]["replicas"]
                    self._reconcile()
                return {"spec": {"replicas": self.replicas}}
            if (method, path) == ("GET", f"/api/v1/namespaces/{NS}/pods"):
                return {"items": list(self.pods.values())}
            m = re.fullmatch(rf"/api/v1/namespaces/{NS}/pods/([\w-]+)", path)
            if m and m.group(1) in self.pods:
                pod = self.pods[m.group(1)]
                if method == "PATCH":
                    value = body["metadata"]["annotations"][DELETION_COST]
                    if value is None:
                        pod["metadata"]["annotations"].pop(DELETION_COST, None)
                    else:
                        pod["metadata"]["annotations"][DELETION_COST] = value
                return pod
            from kubectl_desched.kube.apierrors import api_exception
            raise api_exception()(status=404, reason="Not Found")


def _candidate() -> Candidate:
    pod = pod_from_json(b.pod("checkout-a", "hot", namespace=NS, owner_name="checkout-rs", uid="uid-checkout-a"))
    c = Candidate(pod, "LowNodeUtilization", "node over target", "p")
    c.method, c.why_surge = "surge", "PodDisruptionBudget checkout-pdb allows no disruption"
    return c


def _surger(api: FakeApps, monkeypatch: pytest.MonkeyPatch, timeout: float = 5) -> Surger:
    monkeypatch.setattr(surge, "request_json", api)
    monkeypatch.setattr(surge, "POLL", 0.01)
    conn = Connection(api=None, server="https://api", context="c", namespace="default")  # type: ignore[arg-type]
    return Surger(conn, timeout)


def test_a_surge_removes_exactly_the_chosen_pod_and_ends_at_its_replicas(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApps()
    r = _surger(api, monkeypatch).move(_candidate(), threading.Event())
    assert (r.outcome, r.ok, r.gone) == ("moved", True, True), r.message
    assert r.message == ("replacement checkout-new1 Ready on cold-1; the pod removed by its ReplicaSet, Deployment "
                         "checkout back to 2")
    assert sorted(api.pods) == ["checkout-b", "checkout-new1"] and api.replicas == 2
    assert all(DELETION_COST not in p["metadata"]["annotations"] for p in api.pods.values())


def test_a_new_pod_never_ready_is_the_one_removed_and_the_pod_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApps(ready_new=False)
    r = _surger(api, monkeypatch, timeout=0.05).move(_candidate(), threading.Event())
    assert (r.outcome, r.ok) == ("timed out", False)
    assert r.message == "no new pod Ready within --timeout (0.05s): replicas restored, the pod stays"
    assert sorted(api.pods) == ["checkout-a", "checkout-b"] and api.replicas == 2
    assert DELETION_COST not in api.pods["checkout-a"]["metadata"]["annotations"]


def test_ctrl_c_while_waiting_restores_the_replicas(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApps(ready_new=False)
    stop = threading.Event()
    stop.set()
    r = _surger(api, monkeypatch).move(_candidate(), stop)
    assert r.outcome == "interrupted" and "replicas restored" in r.message
    assert sorted(api.pods) == ["checkout-a", "checkout-b"] and api.replicas == 2


def _needed(method: str, path: str) -> Permission:
    """The permission one request of the move needs, as the API server's authorizer sees it."""
    parts = path.strip("/").split("/")
    group = "" if parts[0] == "api" else parts[1]
    rest = parts[4:] if parts[0] == "api" else parts[5:]  # after namespaces/<ns>
    resource, name, sub = rest[0], rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else ""
    verb = {"GET": "get" if name else "list", "PUT": "update", "PATCH": "patch"}[method]
    return Permission(verb, resource, group, sub)


def test_the_preflight_asks_for_every_permission_the_move_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApps()
    _surger(api, monkeypatch).move(_candidate(), threading.Event())
    used = {_needed(m, p) for m, p in api.calls}
    assert used - set(SURGE_PERMISSIONS) == set()
