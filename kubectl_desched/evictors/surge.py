"""--surge: move a Deployment's pod replacement first, so its workload never has fewer ready pods than at the start.

The pod gets the lowest controller.kubernetes.io/pod-deletion-cost, its Deployment is scaled up by one (the scale
subresource, conditional on the version read), and once a new pod of its ReplicaSet is Ready the Deployment is
scaled back: the ReplicaSet controller removes, of its ready pods, the one with the lowest deletion cost. No
eviction is sent, so no PodDisruptionBudget is asked: the budget's purpose (enough pods ready) holds throughout.

Every write is undone on every path that does not finish the move: the new pod never Ready within --timeout, an
API error, Ctrl-C/SIGTERM/SIGHUP. The annotation goes first (so the ReplicaSet removes the unready new pod, which
it ranks first), then the replicas go back to where they were, unless someone else changed them meanwhile.
restore_all() does the same from the main thread for a surge a second Ctrl-C abandoned."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import urllib3

from kubectl_desched.evictors.base import EvictionResult, PodEvictor, default_live_line, now, stopped_by
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.framework.surge import Target, surge_target
from kubectl_desched.kube.access import Permission, missing_permissions
from kubectl_desched.kube.apierrors import api_exception, is_api_exception
from kubectl_desched.kube.live import api_message, bounded_timeout, request_json

if TYPE_CHECKING:
    from kubectl_desched.kube.config import Connection
    from kubectl_desched.term.color import Painter

DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
LOWEST_COST = str(-(2**31))  # int32's least: below any cost a user set
POLL = 0.5
MERGE_PATCH = "application/merge-patch+json"
SURGE_PERMISSIONS = (
    Permission("get", "pods"), Permission("list", "pods"), Permission("patch", "pods"),
    Permission("list", "deployments", "apps"), Permission("list", "replicasets", "apps"),
    Permission("get", "deployments", "apps", "scale"), Permission("update", "deployments", "apps", "scale"),
    Permission("list", "horizontalpodautoscalers", "autoscaling"),
)


class SurgeFailed(Exception):
    """A step of the move failed: the outcome word and why."""

    def __init__(self, outcome: str, why: str) -> None:
        super().__init__(why)
        self.outcome = outcome


@dataclass
class _Move:
    """One surge's writes so far, what restore() must undo."""

    target: Target
    pod: str
    uid: str
    previous_cost: str | None
    annotated: bool = False
    scaled: bool = False
    new_ready: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


class Surger:
    def __init__(self, conn: Connection, timeout: float, *, server_dry_run: bool = False,
                 say: Callable[[str], None] = lambda _m: None, clock: Callable[[], float] = time.monotonic) -> None:
        self.conn = conn
        self.timeout = timeout
        self.dry_run = server_dry_run
        self.say = say
        self.clock = clock
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._guard = threading.Lock()
        self.active: dict[int, _Move] = {}  # id(move) -> a move not finished nor restored

    # ------------------------------------------------------------------ reads and writes

    def _call(self, method: str, path: str, body: Any = None, *, patch: bool = False,
              query: list[tuple[str, Any]] | None = None) -> Any:
        q = list(query or []) + ([("dryRun", "All")] if self.dry_run and method != "GET" else [])
        return request_json(self.conn, method, path, body=body, query=q, timeout=bounded_timeout(self.conn),
                            content_type=MERGE_PATCH if patch else "application/json")

    @staticmethod
    def _apps(ns: str, kind: str, name: str = "") -> str:
        return f"/apis/apps/v1/namespaces/{ns}/{kind}" + (f"/{name}" if name else "")

    def _target(self, c: Candidate) -> Target:
        """The Deployment as it is now, judged by the same rules as the plan (framework/surge.py)."""
        ns = c.pod.namespace
        extra = {"ReplicaSet": self._call("GET", self._apps(ns, "replicasets")).get("items") or [],
                 "Deployment": self._call("GET", self._apps(ns, "deployments")).get("items") or [],
                 "HorizontalPodAutoscaler": self._call(
                     "GET", f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers").get("items") or []}
        target = surge_target(c.pod, extra)
        if isinstance(target, str):
            raise SurgeFailed("refused", f"not moved: {target}")
        return target

    def _pods_of(self, t: Target, rs_uid: str) -> list[Mapping[str, Any]]:
        items = self._call("GET", f"/api/v1/namespaces/{t.namespace}/pods").get("items") or []
        return [p for p in items if any(r.get("uid") == rs_uid and r.get("controller")
                                        for r in (p.get("metadata") or {}).get("ownerReferences") or ())]

    def _scale(self, t: Target, expect: int, to: int) -> bool:
        """Set the Deployment's replicas from `expect` to `to`; False when they are no longer `expect`."""
        path = self._apps(t.namespace, "deployments", t.deployment) + "/scale"
        for _ in range(3):
            scale = self._call("GET", path)
            if (scale.get("spec") or {}).get("replicas") != expect:
                return False
            scale["spec"]["replicas"] = to
            try:
                self._call("PUT", path, scale)
                return True
            except api_exception() as e:
                if e.status != 409:  # another writer moved the version: read again
                    raise
        raise SurgeFailed("failed", f"Deployment {t.deployment}'s scale kept changing under us")

    def _annotate(self, move: _Move, value: str | None) -> None:
        body = {"metadata": {"annotations": {DELETION_COST: value}, "uid": move.uid}}
        self._call("PATCH", f"/api/v1/namespaces/{move.target.namespace}/pods/{move.pod}", body, patch=True)

    # ------------------------------------------------------------------ the move

    def move(self, c: Candidate, stop: threading.Event) -> EvictionResult:
        started = now()
        try:
            target = self._target(c)
            with self._lock(target):  # one surge at a time per Deployment: each counts on replicas N -> N+1 -> N
                return self._surge(c, target, stop, started)
        except SurgeFailed as e:
            return EvictionResult(c, e.outcome, str(e), started=started, finished=now(), attempts=1)
        except (api_exception(), urllib3.exceptions.HTTPError, OSError, ValueError) as e:
            why = f"HTTP {e.status}: {api_message(e)}" if is_api_exception(e) else f"{type(e).__name__}: {e}"
            return EvictionResult(c, "failed", f"not moved: {why}", started=started, finished=now(), attempts=1)

    def _lock(self, t: Target) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault((t.namespace, t.deployment), threading.Lock())

    def _surge(self, c: Candidate, t: Target, stop: threading.Event, started: Any) -> EvictionResult:
        ns, name = c.pod.namespace, c.pod.name
        pod = self._call("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
        meta = pod.get("metadata") or {}
        if meta.get("uid") != c.pod.uid or meta.get("deletionTimestamp"):
            raise SurgeFailed("changed", "not moved: the pod was replaced or is being deleted since the plan")
        rs_uid = next((r.get("uid") for r in meta.get("ownerReferences") or () if r.get("controller")), "")
        before = {(p.get("metadata") or {}).get("uid") for p in self._pods_of(t, rs_uid)}
        move = _Move(t, name, c.pod.uid, (meta.get("annotations") or {}).get(DELETION_COST))
        if self.dry_run:
            self._annotate(move, LOWEST_COST)
            self._call("PATCH", self._apps(ns, "deployments", t.deployment) + "/scale",
                       {"spec": {"replicas": t.replicas + 1}}, patch=True)
            return EvictionResult(c, "would surge", f"Deployment {t.deployment} {t.replicas} -> {t.replicas + 1} "
                                  "accepted (dryRun=All)", started=started, finished=now(), attempts=1)
        self.active[id(move)] = move
        try:
            self._annotate(move, LOWEST_COST)
            move.annotated = True
            if not self._scale(t, t.replicas, t.replicas + 1):
                raise SurgeFailed("changed", f"not moved: Deployment {t.deployment}'s replicas changed since it "
                                             f"was read ({t.replicas})")
            move.scaled = True
            self.say(f"  {ns}/{name}: Deployment {t.deployment} scaled {t.replicas} -> {t.replicas + 1}, waiting "
                     "for the new pod to be Ready")
            new, node = self._wait_ready(t, rs_uid, before, stop)
            move.new_ready = True
            if not self._scale(t, t.replicas + 1, t.replicas):
                raise SurgeFailed("failed", f"Deployment {t.deployment}'s replicas were changed by someone else "
                                            "during the move: left as they are")
            move.scaled = False
            self._wait_removed(c, t, stop)
            move.annotated = False
            return EvictionResult(c, "moved", f"replacement {new} Ready on {node}; the pod removed by its "
                                  f"ReplicaSet, Deployment {t.deployment} back to {t.replicas}",
                                  started=started, finished=now(), attempts=1)
        except BaseException:
            self.restore(move)
            raise
        finally:
            self.active.pop(id(move), None)

    def _wait_ready(self, t: Target, rs_uid: str, before: set[Any],
                    stop: threading.Event) -> tuple[str, str]:
        deadline = self.clock() + self.timeout
        while True:
            for p in self._pods_of(t, rs_uid):
                meta, status = p.get("metadata") or {}, p.get("status") or {}
                if meta.get("uid") in before or meta.get("deletionTimestamp"):
                    continue
                if any(x.get("type") == "Ready" and x.get("status") == "True" for x in status.get("conditions") or ()):
                    return str(meta.get("name")), str((p.get("spec") or {}).get("nodeName"))
            if stop.is_set():
                raise SurgeFailed("interrupted", f"stopped by {stopped_by(stop)} before the new pod was Ready: "
                                                 "replicas restored")
            if self.clock() >= deadline:
                raise SurgeFailed("timed out", f"no new pod Ready within --timeout ({self.timeout:g}s): replicas "
                                               "restored, the pod stays")
            stop.wait(POLL)

    def _wait_removed(self, c: Candidate, t: Target, stop: threading.Event) -> None:
        deadline = self.clock() + self.timeout
        path = f"/api/v1/namespaces/{c.pod.namespace}/pods/{c.pod.name}"
        while self.clock() < deadline:
            try:
                pod = self._call("GET", path)
            except api_exception() as e:
                if e.status == 404:
                    return
                raise
            meta = pod.get("metadata") or {}
            if meta.get("uid") != c.pod.uid or meta.get("deletionTimestamp"):
                return
            stop.wait(POLL)
        raise SurgeFailed("failed", f"Deployment {t.deployment} is back to {t.replicas}, but its ReplicaSet kept "
                                    "the pod and removed another")

    # ------------------------------------------------------------------ undo

    def restore(self, move: _Move) -> None:
        """Undo what the move wrote, as far as it got; safe to call twice (the worker and the main thread)."""
        with move.lock:
            try:
                if move.annotated:
                    self._annotate(move, move.previous_cost)  # first: the unready new pod is then removed
                    move.annotated = False
            except api_exception() as e:
                if e.status not in (404, 409, 422):  # the pod is gone (or replaced): nothing to restore on it
                    self.say(f"  warning: {move.target.namespace}/{move.pod}: its {DELETION_COST} could not be "
                             f"restored (HTTP {e.status})")
                move.annotated = False
            if move.scaled:
                t = move.target
                if not self._scale(t, t.replicas + 1, t.replicas):
                    self.say(f"  warning: Deployment {t.namespace}/{t.deployment}: replicas were changed by "
                             "someone else during the move: left as they are")
                move.scaled = False

    def restore_all(self) -> list[str]:
        """From the main thread, after the runner returned: undo every move still in flight (abandoned)."""
        said = []
        for move in list(self.active.values()):
            try:
                self.restore(move)
                said.append(f"{move.target.namespace}/{move.pod}: surge undone, Deployment {move.target.deployment} "
                            f"back to {move.target.replicas}")
            except (api_exception(), urllib3.exceptions.HTTPError, OSError, SurgeFailed) as e:
                said.append(f"{move.target.namespace}/{move.pod}: could not undo the surge ({e}): check Deployment "
                            f"{move.target.deployment}'s replicas ({move.target.replicas} before)")
            self.active.pop(id(move), None)
        return said


class SurgingEvictor:
    """The evictor the runner gets with --surge: candidates planned as surges move through the Surger, the rest
    through the chosen evictor (the Eviction API)."""

    def __init__(self, inner: PodEvictor, surger: Surger) -> None:
        self.inner = inner
        self.surger = surger
        self.name = inner.name

    def preflight(self, candidates: Sequence[Candidate]) -> list[str]:
        surged = [c for c in candidates if c.method == "surge"]
        missing = self.inner.preflight([c for c in candidates if c.method != "surge"])
        if surged:
            missing += missing_permissions(self.surger.conn, SURGE_PERMISSIONS, {c.pod.namespace for c in surged})
        return missing

    def evict(self, candidate: Candidate, stop: threading.Event) -> EvictionResult:
        if candidate.method == "surge":
            return self.surger.move(candidate, stop)
        return self.inner.evict(candidate, stop)

    def settle(self, results: list[EvictionResult], stop: threading.Event) -> list[EvictionResult]:
        return self.inner.settle(results, stop)

    def results_table(self, results: Sequence[EvictionResult], paint: Painter) -> str:
        return self.inner.results_table(results, paint)

    def document_sections(self, results: Sequence[EvictionResult]) -> dict[str, Any]:
        return self.inner.document_sections(results)

    def live_line(self, r: EvictionResult) -> str | None:
        return default_live_line(r) if r.candidate.method == "surge" else self.inner.live_line(r)
