"""Evict through the policy/v1 Eviction subresource. The API server enforces PodDisruptionBudgets (429).

Each Eviction is conditional on the exact pod that was re-read right before it: its deleteOptions carry
preconditions on both the UID (a pod recreated under the same name is never evicted by mistake) and the
resourceVersion. The API server accepts evicting a pod that is already terminating, so without the version a
second operator (or a resend of ours) would evict the same pod again and both would report it evicted. With it,
whoever comes second gets 409 Conflict, because setting deletionTimestamp changed the version.

An eviction is not idempotent in effect, and after a lost answer we cannot tell from the error whether it was
applied. So the pod is re-read (GET) before the first request and after every answer that does not settle it:
a 5xx, a timeout, a dropped connection, a 2xx whose body cannot be read, a 409 and a 404. A pod that is now
terminating, gone or replaced is never evicted again: after a lost answer it is "unknown" (maybe ours); after a
409 with no earlier lost answer it is "conflict" (someone else's). Only a pod seen unchanged (same UID, not
terminating) is sent the request again, with the resourceVersion of that latest re-read. The client library
never retries a POST that reached the server by itself."""


from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import urllib3

from kubectl_desched.evictors.base import EvictionResult, default_live_line, now, stopped_by
from kubectl_desched.evictors.results import results_table
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.kube.access import Permission, missing_permissions
from kubectl_desched.kube.apierrors import api_exception
from kubectl_desched.kube.live import (
    NotJSON,
    api_message,
    bounded_timeout,
    describe_api_error,
    request_json,
)
from kubectl_desched.sanitize import one_line

if TYPE_CHECKING:
    from kubernetes.client.exceptions import ApiException

    from kubectl_desched.kube.config import Connection  # it imports the kubernetes client
    from kubectl_desched.term.color import Painter

REQUESTER = "kubectl-desched"
EVICTION_PERMISSIONS = (Permission("create", "pods", subresource="eviction"), Permission("get", "pods"))
MAX_UNSURE_SENDS = 4  # sends of one eviction whose answer got lost, each after a re-read showed the pod unchanged
MAX_CONFLICTS = 3  # 409s on a pod that a re-read then shows unchanged but for its version (a label, a status)

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


def eviction_body(c: Candidate, *, server_dry_run: bool, grace_period: int | None,
                  resource_version: str | None = None) -> dict:
    """The Eviction, conditional on the planned UID and on the resourceVersion of the latest re-read."""
    delete_options: dict = {}
    preconditions = {k: v for k, v in (("uid", c.pod.uid), ("resourceVersion", resource_version)) if v}
    if preconditions:
        delete_options["preconditions"] = preconditions
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


def resource_version(pod: Mapping[str, Any] | None) -> str | None:
    meta = (pod or {}).get("metadata") or {}
    rv = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
    return rv if isinstance(rv, str) and rv else None


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
    name = "eviction"

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

    def results_table(self, results: Sequence[EvictionResult], paint: Painter) -> str:
        return results_table(results, paint)

    def document_sections(self, results: Sequence[EvictionResult]) -> dict[str, Any]:
        return {}

    def live_line(self, r: EvictionResult) -> str | None:
        return default_live_line(r)

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
        except api_exception() as e:
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
            current = self.read_pod(c)
        except read_errors() as e:
            return done("failed", f"not evicted: could not re-read the pod first: {self._describe(e, 'reading')}")
        verdict = pod_changed(c, current)
        if verdict:
            return done(verdict[0], f"not evicted: {verdict[1]}")
        version = resource_version(current)  # every send is conditional on the latest re-read

        blocked_retries = unsure_sends = conflicts = 0
        last = lost = ""  # the last refusal or error; the last answer that got lost
        while True:
            if stop.is_set():
                return done("interrupted", f"not evicted: stopped by {stopped_by(stop)}"
                            + (f" while retrying ({last})" if last else " before the request was sent"))
            attempts += 1
            try:
                request_json(self.conn, "POST", f"{self._path(c)}/eviction", body=self._body(c, version),
                             query=[("dryRun", "All")] if self.server_dry_run else [], timeout=self.request_timeout)
            except api_exception() as e:
                if e.status == 429:
                    last = self._blocked_message(e)
                    if self.server_dry_run:  # a preview answers at once with what the server said
                        return done("blocked" if last.startswith("PodDisruptionBudget") else "failed",
                                    f"{last} (server dry run: not retried)")
                    wait = self.backoff.delay(blocked_retries)
                    if self.clock() + wait > deadline:
                        tried = f"; gave up after {attempts} attempts (--timeout)" if attempts > 1 else ""
                        return done("blocked" if last.startswith("PodDisruptionBudget") else "failed", last + tried)
                    blocked_retries += 1
                    self.progress(c, f"{last}; retry {blocked_retries} in {wait:.1f}s")
                    stop.wait(wait)
                    continue
                if e.status in (404, 409):
                    # A refusal: this request changed nothing. Whether the pod is gone (404) or was taken by
                    # someone else (409) is for a re-read to say, not the status code: a 404 may come from a proxy.
                    answer = f"{api_message(e)} ({e.status})"
                    try:
                        current = self.read_pod(c)
                    except read_errors() as err:
                        why = f"the pod could not be re-read ({self._describe(err, 'reading')})"
                        if unsure_sends:
                            return done("unknown", f"{lost}; then {answer}; {why}: an earlier request may have "
                                                   "been applied")
                        return done("failed", f"not evicted: {answer}; {why}")
                    verdict = pod_changed(c, current)
                    if verdict and unsure_sends:
                        return done("unknown", f"{lost}; then {answer}; re-read: {verdict[1]}: most likely "
                                               "evicted by this run's earlier request")
                    if verdict and e.status == 409 and verdict[0] in ("terminating", "gone"):
                        return done("conflict", f"not evicted by this run: someone else evicted or deleted it "
                                                f"first ({answer}); re-read: {verdict[1]}")
                    if verdict:
                        return done(verdict[0], f"not evicted: {verdict[1]} ({answer})")
                    new_version = resource_version(current)
                    if e.status == 404:
                        return done("failed", f"not evicted: {answer}, yet a re-read shows the pod unchanged")
                    conflicts += 1
                    if new_version == version or conflicts > MAX_CONFLICTS:
                        kept = "" if new_version == version else f" {conflicts} times, the pod kept changing"
                        return done("failed", f"not evicted: {answer}{kept}")
                    version = new_version
                    self.progress(c, "changed since it was re-read (409 Conflict), not terminating: sending again "
                                     "with its new version")
                    continue
                if e.status < 500:
                    return done(*self._classify(e, c.pod.namespace))
                error = self._describe(e, "eviction")
            except (urllib3.exceptions.HTTPError, OSError) as e:  # incl. NotJSON: a 2xx nobody can read
                error = self._describe(e, "eviction")
            else:
                if self.server_dry_run:
                    if c.pdb_refusals:  # the server judged it alone; the plan counts the pods before it
                        return done("blocked", f"{'; '.join(c.pdb_refusals)} (the server dry run accepted it "
                                               "alone, as a dry run uses up no budget)")
                    return done("would evict", "server dry run accepted")
                return done("evicted", "eviction accepted")
            # The answer is lost or an error the server may have hit after applying it: look before resending.
            unsure_sends += 1
            last = lost = error
            stop.wait(self.unsure_backoff.delay(unsure_sends - 1))
            try:
                current = self.read_pod(c)
            except read_errors() as e:
                return done("unknown", f"{error}; the pod could not be re-read ({self._describe(e, 'reading')}): "
                                       "the eviction may have been applied")
            verdict = pod_changed(c, current)
            if verdict:
                return done("unknown", f"{error}; re-read: {verdict[1]}: most likely evicted by this request")
            if unsure_sends >= MAX_UNSURE_SENDS or self.clock() > deadline:
                return done("failed", f"{error}; sent {attempts} times, the pod is unchanged: not evicted")
            version = resource_version(current)  # the resend must match the pod as it is now, not as first read
            self.progress(c, f"{error}; the pod is unchanged, sending again")

    def _body(self, c: Candidate, version: str | None) -> dict:
        return eviction_body(c, server_dry_run=self.server_dry_run, grace_period=self.grace_period,
                             resource_version=version)

    def _describe(self, e: Exception, what: str) -> str:
        if isinstance(e, NotJSON):  # before ProtocolError, which it also is
            return str(e)
        if isinstance(e, urllib3.exceptions.ProtocolError):
            return "the connection was closed before an answer came"
        text = str(describe_api_error(e, what, self.conn.server))
        return text.removeprefix(f"{what}: ")

    @staticmethod
    def _blocked_message(e: ApiException) -> str:
        msg = server_words(e)
        if "disruption budget" in msg.lower():
            return f"PodDisruptionBudget: {msg}"
        return f"too many requests: {msg}"  # API priority and fairness: also worth a retry

    @staticmethod
    def _classify(e: ApiException, namespace: str) -> tuple[str, str]:
        msg = api_message(e)
        if e.status == 403:
            return "forbidden", f"missing permission: create pods/eviction in namespace {namespace} ({msg})"
        if e.status == 401:
            return "failed", "unauthorized: credentials rejected"
        return "failed", f"{msg} ({e.status})"


def read_errors() -> tuple[type[Exception], ...]:
    return (api_exception(), urllib3.exceptions.HTTPError, OSError)


def server_words(e: ApiException) -> str:
    """The Status message and its causes: a PDB refusal names the budget only in its cause ("The disruption
    budget web needs 2 healthy pods and has 2 currently")."""
    words = api_message(e)
    try:
        body = json.loads(e.body or "")
        causes = (body.get("details") or {}).get("causes") or [] if isinstance(body, dict) else []
        extra = [str(x.get("message")) for x in causes if isinstance(x, dict) and x.get("message")]
    except (ValueError, TypeError, AttributeError):
        extra = []
    return one_line("; ".join([words, *extra]), 500)  # the causes are server text too
