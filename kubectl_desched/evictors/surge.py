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

from kubectl_desched.evictors.base import (
    EvictionResult,
    PodEvictor,
    WrappingEvictor,
    default_live_line,
    now,
    stopped_by,
)
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.framework.surge import Target, surge_target
from kubectl_desched.kube.access import Permission, missing_permissions
from kubectl_desched.kube.apierrors import api_exception, is_api_exception
from kubectl_desched.kube.live import api_message, bounded_timeout, request_json

if TYPE_CHECKING:
    from kubectl_desched.kube.config import Connection

DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
LOWEST_COST = str(-(2**31))  # int32's least: below any cost a user set
POLL = 0.5
MERGE_PATCH = "application/merge-patch+json"
TEMPLATE_HASH = "pod-template-hash"  # the label a ReplicaSet of a Deployment gives its pods
SURGE_PERMISSIONS = (
    Permission("get", "pods"), Permission("list", "pods"), Permission("patch", "pods"),
    Permission("get", "deployments", "apps"), Permission("list", "deployments", "apps"),
    Permission("list", "replicasets", "apps"),
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
    """One surge's writes, each marked before it is sent (an answer lost on the way still counts as written): what
    restore() must undo. `lock` is held around each write and its mark, so the main thread's restore_all() and the
    worker never write at once; `abandoned` (set by restore_all) stops the worker's next write."""

    target: Target
    pod: str
    uid: str
    previous_cost: str | None
    annotated: bool = False
    scaled: bool = False
    abandoned: bool = False
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
        self.active: dict[int, _Move] = {}  # id(move) -> a move with writes not yet undone or done

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

    def _pods_of(self, t: Target, rs_uid: str, template_hash: str) -> list[Mapping[str, Any]]:
        """The ReplicaSet's pods: those of its pod-template-hash (the label it gives them), owned by it."""
        query = [("labelSelector", f"{TEMPLATE_HASH}={template_hash}")] if template_hash else []
        items = self._call("GET", f"/api/v1/namespaces/{t.namespace}/pods", query=query).get("items") or []
        return [p for p in items if any(r.get("uid") == rs_uid and r.get("controller")
                                        for r in (p.get("metadata") or {}).get("ownerReferences") or ())]

    def _replicas(self, t: Target) -> tuple[int | None, dict[str, Any]]:
        scale = self._call("GET", self._apps(t.namespace, "deployments", t.deployment) + "/scale")
        return (scale.get("spec") or {}).get("replicas"), scale

    def _scale(self, t: Target, expect: int, to: int) -> bool:
        """Set the Deployment's replicas from `expect` to `to`; False when they are no longer `expect`."""
        path = self._apps(t.namespace, "deployments", t.deployment) + "/scale"
        for _ in range(3):
            replicas, scale = self._replicas(t)
            if replicas != expect:
                return False
            scale["spec"]["replicas"] = to
            try:
                self._call("PUT", path, scale)  # conditional on the resourceVersion just read
                return True
            except api_exception() as e:
                if e.status != 409:  # another writer moved the version: read again
                    raise
        raise SurgeFailed("failed", f"Deployment {t.deployment}'s scale kept changing under us")

    def _annotate(self, move: _Move, value: str | None) -> None:
        body = {"metadata": {"annotations": {DELETION_COST: value}, "uid": move.uid}}  # the uid: a precondition
        self._call("PATCH", f"/api/v1/namespaces/{move.target.namespace}/pods/{move.pod}", body, patch=True)

    def _write(self, move: _Move, mark: str, write: Callable[[], Any]) -> Any:
        """One forward write, marked first, never after restore_all() gave the move up."""
        with move.lock:
            if move.abandoned:
                raise SurgeFailed("interrupted", "abandoned by a second Ctrl-C: undone from the main thread")
            setattr(move, mark, True)
            return write()

    # ------------------------------------------------------------------ the move

    def move(self, c: Candidate, stop: threading.Event) -> EvictionResult:
        started = now()
        try:
            # One surge at a time per ReplicaSet (so per Deployment once it has settled on one): each counts on its
            # replicas going N -> N+1 -> N, and reads the Deployment only once it holds the lock.
            with self._lock(c):
                if stop.is_set():
                    raise SurgeFailed("interrupted", f"not moved: stopped by {stopped_by(stop)} before its turn")
                return self._surge(c, self._target(c), stop, started)
        except SurgeFailed as e:
            return EvictionResult(c, e.outcome, str(e), started=started, finished=now(), attempts=1)
        except (api_exception(), urllib3.exceptions.HTTPError, OSError, ValueError, KeyError, TypeError,
                AttributeError) as e:  # a malformed answer too: the move ends with a record, never a traceback
            why = f"HTTP {e.status}: {api_message(e)}" if is_api_exception(e) else f"{type(e).__name__}: {e}"
            return EvictionResult(c, "failed", f"not moved: {why}", started=started, finished=now(), attempts=1)

    def _lock(self, c: Candidate) -> threading.Lock:
        ref = c.pod.controller
        with self._guard:
            return self._locks.setdefault((c.pod.namespace, ref.name if ref else c.pod.name), threading.Lock())

    def _surge(self, c: Candidate, t: Target, stop: threading.Event, started: Any) -> EvictionResult:
        ns, name = c.pod.namespace, c.pod.name
        pod = self._call("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
        meta = pod.get("metadata") or {}
        if meta.get("uid") != c.pod.uid or meta.get("deletionTimestamp"):
            raise SurgeFailed("changed", "not moved: the pod was replaced or is being deleted since the plan")
        rs_uid = next((r.get("uid") for r in meta.get("ownerReferences") or () if r.get("controller")), "")
        template_hash = (meta.get("labels") or {}).get(TEMPLATE_HASH, "")
        self._wait_settled(t, stop)
        before = {(p.get("metadata") or {}).get("uid") for p in self._pods_of(t, rs_uid, template_hash)}
        move = _Move(t, name, c.pod.uid, (meta.get("annotations") or {}).get(DELETION_COST))
        if self.dry_run:
            self._annotate(move, LOWEST_COST)
            self._call("PATCH", self._apps(ns, "deployments", t.deployment) + "/scale",
                       {"spec": {"replicas": t.replicas + 1}}, patch=True)
            return EvictionResult(c, "would surge", f"Deployment {t.deployment} {t.replicas} -> {t.replicas + 1} "
                                  "accepted (dryRun=All)", started=started, finished=now(), attempts=1)
        self.active[id(move)] = move
        try:
            self._write(move, "annotated", lambda: self._annotate(move, LOWEST_COST))
            if not self._write(move, "scaled", lambda: self._scale(t, t.replicas, t.replicas + 1)):
                move.scaled = False  # read as changed: nothing was written
                raise SurgeFailed("changed", f"not moved: Deployment {t.deployment}'s replicas changed since it "
                                             f"was read ({t.replicas})")
            self.say(f"  {ns}/{name}: Deployment {t.deployment} scaled {t.replicas} -> {t.replicas + 1}, waiting "
                     "for the new pod to be Ready")
            new, node = self._wait_ready(t, rs_uid, template_hash, before, stop)
            with move.lock:  # the scale-back is the move's last step: from here on it is the ReplicaSet's
                if move.abandoned:
                    raise SurgeFailed("interrupted", "abandoned by a second Ctrl-C: undone from the main thread")
                if not self._scale(t, t.replicas + 1, t.replicas):
                    raise SurgeFailed("failed", f"Deployment {t.deployment}'s replicas were changed by someone "
                                                "else during the move: left as they are")
                move.scaled = False
            self._wait_removed(c, t)
            move.annotated = False
            return EvictionResult(c, "moved", f"replacement {new} Ready on {node}; the pod removed by its "
                                  f"ReplicaSet, Deployment {t.deployment} back to {t.replicas}",
                                  started=started, finished=now(), attempts=1)
        except Exception as e:
            left = self.restore(move)
            if isinstance(e, SurgeFailed):
                raise SurgeFailed(e.outcome, "; ".join([str(e), *left])) from None
            why = f"HTTP {e.status}: {api_message(e)}" if is_api_exception(e) else f"{type(e).__name__}: {e}"
            raise SurgeFailed("failed", "; ".join([f"not moved: {why}", "what it wrote is undone", *left])) from None
        except BaseException:
            self.restore(move)
            raise
        finally:
            if not (move.annotated or move.scaled):
                self.active.pop(id(move), None)

    def _wait_settled(self, t: Target, stop: threading.Event) -> None:
        """Until every replica is Ready and current (an eviction of the same Deployment planned before this pod
        may still be being replaced): a ReplicaSet scaling down removes an unready pod before any other, so the
        surge's marked pod goes only if all the others are Ready."""
        deadline = self.clock() + self.timeout
        path = self._apps(t.namespace, "deployments", t.deployment)
        while True:
            d = self._call("GET", path)
            spec, status = d.get("spec") or {}, d.get("status") or {}
            want = spec.get("replicas", 1)
            if (status.get("observedGeneration") or 0) >= ((d.get("metadata") or {}).get("generation") or 0) and \
                    status.get("readyReplicas", 0) >= want and status.get("replicas", 0) == want:
                return
            if stop.is_set():
                raise SurgeFailed("interrupted", f"not moved: stopped by {stopped_by(stop)} before the surge began")
            if self.clock() >= deadline:
                raise SurgeFailed("timed out", f"not moved: Deployment {t.deployment} did not get back to all {want} "
                                               f"ready within --timeout ({self.timeout:g}s)")
            stop.wait(POLL)

    def _wait_ready(self, t: Target, rs_uid: str, template_hash: str, before: set[Any],
                    stop: threading.Event) -> tuple[str, str]:
        """The new pod, once the ReplicaSet has all N+1 pods Ready (then its scale-down ranks them by deletion
        cost, and the marked pod goes)."""
        deadline = self.clock() + self.timeout
        while True:
            live = [p for p in self._pods_of(t, rs_uid, template_hash)
                    if not (p.get("metadata") or {}).get("deletionTimestamp")]
            ready = [p for p in live if any(x.get("type") == "Ready" and x.get("status") == "True"
                                            for x in (p.get("status") or {}).get("conditions") or ())]
            new = [p for p in ready if (p.get("metadata") or {}).get("uid") not in before]
            if new and len(ready) == len(live) == t.replicas + 1:
                return str(new[0]["metadata"].get("name")), str((new[0].get("spec") or {}).get("nodeName"))
            if stop.is_set():
                raise SurgeFailed("interrupted", f"stopped by {stopped_by(stop)} before the new pod was Ready: "
                                                 "replicas restored, the pod stays")
            if self.clock() >= deadline:
                raise SurgeFailed("timed out", f"no new pod Ready within --timeout ({self.timeout:g}s): replicas "
                                               "restored, the pod stays")
            stop.wait(POLL)

    def _wait_removed(self, c: Candidate, t: Target) -> None:
        """The ReplicaSet deletes the marked pod: wait for it even after a Ctrl-C (the scale-back is done)."""
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
            time.sleep(POLL)  # not stop.wait: once stopped it would return at once, and this loop spin
        raise SurgeFailed("failed", f"Deployment {t.deployment} is back to {t.replicas}, but its ReplicaSet kept "
                                    "the pod and removed another")

    # ------------------------------------------------------------------ undo

    def restore(self, move: _Move, wait: float | None = None) -> list[str]:
        """Undo what the move wrote, step by step, each whatever the other did; safe to call again (the worker
        and the main thread). What could not be undone comes back, each with the command that undoes it by hand.
        `wait`: give up on the lock after this many seconds (a write still on its way)."""
        if not move.lock.acquire(timeout=-1 if wait is None else wait):
            return [self._by_hand(move, "a write is still on its way")]
        try:
            left = []
            if move.annotated:
                try:
                    self._annotate(move, move.previous_cost)  # first: then the new pod, if unready, is removed
                    move.annotated = False
                except api_exception() as e:
                    if e.status in (404, 409, 422):  # the pod is gone or replaced: nothing to restore on it
                        move.annotated = False
                    else:
                        left.append(f"{DELETION_COST} not removed (HTTP {e.status})")
                except Exception as e:
                    left.append(f"{DELETION_COST} not removed ({type(e).__name__})")
            if move.scaled:
                t = move.target
                try:
                    replicas, _scale = self._replicas(t)
                    if replicas == t.replicas + 1:
                        self._scale(t, t.replicas + 1, t.replicas)
                        move.scaled = False
                    elif replicas == t.replicas:  # the scale-up never reached the server
                        move.scaled = False
                    else:
                        left.append(f"replicas are {replicas}, changed by someone else during the move: left")
                        move.scaled = False
                except Exception as e:
                    left.append(f"replicas not restored to {t.replicas} ({type(e).__name__})")
            if move.annotated or move.scaled:
                left.append(self._by_hand(move, "undo by hand"))
            return left
        finally:
            move.lock.release()

    def _by_hand(self, move: _Move, why: str) -> str:
        t = move.target
        return (f"{why}: kubectl scale deployment {t.deployment} -n {t.namespace} --replicas={t.replicas}; "
                f"kubectl annotate pod {move.pod} -n {t.namespace} {DELETION_COST}-")

    def restore_all(self) -> list[str]:
        """From the main thread, after the runner returned: undo every move with writes left (a second Ctrl-C
        abandoned it, or its own undo failed); the worker, if still running, writes nothing more."""
        said = []
        for key, move in list(self.active.items()):
            move.abandoned = True  # read under the lock by the worker's next write
            left = self.restore(move, wait=45.0)  # longer than one bounded request
            where = f"{move.target.namespace}/{move.pod}"
            if left:
                said.append(f"{where}: the surge could not be fully undone: {'; '.join(left)}")
            else:
                said.append(f"{where}: surge undone, Deployment {move.target.deployment} at {move.target.replicas}")
                self.active.pop(key, None)
        return said


class SurgingEvictor(WrappingEvictor):
    """The evictor the runner gets with --surge: candidates planned as surges move through the Surger, the rest
    through the chosen evictor (the Eviction API)."""

    def __init__(self, inner: PodEvictor, surger: Surger) -> None:
        super().__init__(inner)
        self.surger = surger

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

    def live_line(self, r: EvictionResult) -> str | None:
        return default_live_line(r) if r.candidate.method == "surge" else self.inner.live_line(r)
