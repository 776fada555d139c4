"""Evict through the policy/v1 Eviction subresource. The API server enforces PodDisruptionBudgets (429),
and a UID precondition makes sure a pod recreated under the same name is never evicted by mistake.

An eviction is not idempotent in effect: sent twice, the second one could hit a new pod that took the name,
and after a lost response we cannot tell from the error whether the first one was applied. So the pod is
re-read (GET) before every request and after every failure whose effect is unknown (5xx, timeout, dropped
connection): a pod that is now terminating, gone or replaced is reported as "unknown" with what we saw, never
evicted again; only a pod seen unchanged (same UID, not terminating) is sent the request again, still with
the UID precondition. The client library never retries a POST that reached the server by itself."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes.client.exceptions import ApiException

from kubectl_desched.evictors.base import EvictionResult, now
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.kube.access import Permission, missing_permissions
from kubectl_desched.kube.config import Connection
from kubectl_desched.kube.live import api_message, bounded_timeout, describe_api_error, request_json

REQUESTER = "kubectl-desched"
EVICTION_PERMISSIONS = (Permission("create", "pods", subresource="eviction"), Permission("get", "pods"))
MAX_UNSURE_SENDS = 4  # sends of one eviction whose answer got lost, each after a re-read showed the pod unchanged

Progress = Callable[[Candidate, str], None]


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with jitter, capped: retry n waits between half and all of min(cap, initial*factor^n),
    so many pods blocked by one budget do not retry in lockstep."""

    initial: float = 1.0
    factor: float = 2.0
    cap: float = 30.0

    def delay(self, retry: int, rand: Callable[[], float] = random.random) -> float:
        full = min(self.cap, self.initial * self.factor ** min(retry, 64))
        return full * (0.5 + 0.5 * rand())


UNSURE_BACKOFF = Backoff(initial=0.25, cap=2.0)  # a 5xx or a cut connection is usually over in a moment


def eviction_body(c: Candidate, *, server_dry_run: bool, grace_period: int | None) -> dict:
    delete_options: dict = {}
    if c.pod.uid:
        delete_options["preconditions"] = {"uid": c.pod.uid}
    if grace_period is not None:
        delete_options["gracePeriodSeconds"] = grace_period
    if server_dry_run:
        delete_options["dryRun"] = ["All"]
    return {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {
            "name": c.pod.name,
            "namespace": c.pod.namespace,
            "annotations": {"requested-by": REQUESTER, "reason": f"{c.plugin}: {c.reason}"[:1000]},
        },
        "deleteOptions": delete_options,
    }


def pod_changed(c: Candidate, current: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """Why the pod as it is now must not be evicted as planned, as (outcome, message); None if unchanged."""
    if current is None:
        return "gone", "the pod no longer exists"
    meta = current.get("metadata") or {}
    if c.pod.uid and meta.get("uid") != c.pod.uid:
        return "changed", f"a new pod took the name (UID {str(meta.get('uid'))[:8]}, planned {c.pod.uid[:8]})"
    if meta.get("deletionTimestamp"):
        return "terminating", f"the pod is terminating (since {meta['deletionTimestamp']})"
    node = (current.get("spec") or {}).get("nodeName") or ""
    if node != c.pod.node_name:
        return "moved", f"the pod is now on node {node or '(none)'}, not {c.pod.node_name}"
    return None


class EvictionApiEvictor:
    name = "eviction-api"

    def __init__(self, conn: Connection, *, server_dry_run: bool = False, grace_period: int | None = None,
                 timeout: float = 300.0, backoff: Backoff = Backoff(), unsure_backoff: Backoff = UNSURE_BACKOFF,
                 progress: Progress | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.conn = conn
        self.server_dry_run = server_dry_run
        self.grace_period = grace_period
        self.timeout = timeout  # how long to keep retrying one pod (429 from a budget, lost answers)
        self.backoff = backoff  # between retries a budget refused (429)
        self.unsure_backoff = unsure_backoff  # before re-reading after a lost or failed answer
        self.progress = progress or (lambda _c, _m: None)
        self.clock = clock
        self.request_timeout = bounded_timeout(conn)

    def preflight(self, candidates: Sequence[Candidate]) -> list[str]:
        return missing_permissions(self.conn, EVICTION_PERMISSIONS, {c.pod.namespace for c in candidates})

    def settle(self, results: list[EvictionResult], stop: threading.Event) -> list[EvictionResult]:
        return results

    def _path(self, c: Candidate) -> str:
        return f"/api/v1/namespaces/{c.pod.namespace}/pods/{c.pod.name}"

    def read_pod(self, c: Candidate) -> dict[str, Any] | None:
        """The pod now (a quorum read), None if it is gone. Raises for other errors."""
        try:
            return request_json(self.conn, "GET", self._path(c), timeout=self.request_timeout)  # type: ignore[no-any-return]
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def evict(self, c: Candidate, stop: threading.Event) -> EvictionResult:
        started = now()
        deadline = self.clock() + self.timeout
        attempts = 0

        def done(outcome: str, message: str) -> EvictionResult:
            return EvictionResult(c, outcome, message, started=started, finished=now(), attempts=attempts)

        try:
            verdict = pod_changed(c, self.read_pod(c))
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as e:
            return done("failed", f"not evicted: could not re-read the pod first: {self._describe(e, 'reading')}")
        if verdict:
            return done(verdict[0], f"not evicted: {verdict[1]}")

        blocked_retries = unsure_sends = 0
        last = ""
        while True:
            if stop.is_set():
                return done("interrupted", "not evicted: stopped by Ctrl-C" + (f" while retrying ({last})" if last
                                                                             else " before the request was sent"))
            attempts += 1
            try:
                request_json(self.conn, "POST", f"{self._path(c)}/eviction", body=self._body(c),
                             query=[("dryRun", "All")] if self.server_dry_run else [], timeout=self.request_timeout)
            except ApiException as e:
                if e.status == 429:
                    last = self._blocked_message(e)
                    wait = self.backoff.delay(blocked_retries)
                    if self.clock() + wait > deadline:
                        tried = f"; gave up after {attempts} attempts (--timeout)" if attempts > 1 else ""
                        return done("blocked" if last.startswith("PodDisruptionBudget") else "failed", last + tried)
                    blocked_retries += 1
                    self.progress(c, f"{last}; retry {blocked_retries} in {wait:.1f}s")
                    stop.wait(wait)
                    continue
                if e.status < 500:
                    return done(*self._classify(e, c.pod.namespace))
                error = self._describe(e, "eviction")
            except (urllib3.exceptions.HTTPError, OSError) as e:
                error = self._describe(e, "eviction")
            else:
                if self.server_dry_run:
                    return done("would evict", "server dry run accepted")
                return done("evicted", "eviction accepted")
            # The answer is lost or an error the server may have hit after applying it: look before resending.
            unsure_sends += 1
            last = error
            stop.wait(self.unsure_backoff.delay(unsure_sends - 1))
            try:
                verdict = pod_changed(c, self.read_pod(c))
            except (ApiException, urllib3.exceptions.HTTPError, OSError) as e:
                return done("unknown", f"{error}; the pod could not be re-read ({self._describe(e, 'reading')}): "
                                       "the eviction may have been applied")
            if verdict:
                return done("unknown", f"{error}; re-read: {verdict[1]}: most likely evicted by this request")
            if unsure_sends >= MAX_UNSURE_SENDS or self.clock() > deadline:
                return done("failed", f"{error}; sent {attempts} times, the pod is unchanged: not evicted")
            self.progress(c, f"{error}; the pod is unchanged, sending again")

    def _body(self, c: Candidate) -> dict:
        return eviction_body(c, server_dry_run=self.server_dry_run, grace_period=self.grace_period)

    def _describe(self, e: Exception, what: str) -> str:
        if isinstance(e, urllib3.exceptions.ProtocolError):
            return "the connection was closed before an answer came"
        text = str(describe_api_error(e, what, self.conn.server))
        return text.removeprefix(f"{what}: ")

    @staticmethod
    def _blocked_message(e: ApiException) -> str:
        msg = api_message(e)
        if "disruption budget" in msg.lower():
            return f"PodDisruptionBudget: {msg}"
        return f"too many requests: {msg}"  # API priority and fairness: also worth a retry

    @staticmethod
    def _classify(e: ApiException, namespace: str) -> tuple[str, str]:
        msg = api_message(e)
        if e.status == 404:
            return "gone", "the pod no longer exists"
        if e.status == 409:
            return "changed", f"pod was replaced or changed, not evicted ({msg})"
        if e.status == 403:
            return "forbidden", f"missing permission: create pods/eviction in namespace {namespace} ({msg})"
        if e.status == 401:
            return "failed", "unauthorized: credentials rejected"
        return "failed", f"{msg} ({e.status})"
