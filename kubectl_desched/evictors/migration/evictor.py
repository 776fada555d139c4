"""Evict by creating Koordinator PodMigrationJobs, which Koordinator's migration controller carries out (reserve room
elsewhere, evict, wait for the new pod), then follow the jobs until they end. The jobs' bodies and tracking are in
jobs.py, the watch in follow.py, how they are shown in text.py."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import urllib3

from kubectl_desched.evictors.base import EvictionResult, default_live_line, now
from kubectl_desched.evictors.migration.follow import Follower
from kubectl_desched.evictors.migration.jobs import (
    DUPLICATE_CACHE_SECONDS,
    FOLLOW_START_SECONDS,
    GROUP,
    JOBS_PATH,
    NOT_SERVED,
    RESOURCE,
    RUN_LABEL,
    JobSettings,
    JobTrack,
    blocking_job,
    final_outcome,
    job_body,
    job_status,
    require_served,
    same_pod,
)
from kubectl_desched.evictors.migration.text import job_doc, summary_table
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.kube.access import Permission, missing_permissions
from kubectl_desched.kube.apierrors import api_exception
from kubectl_desched.kube.live import api_message, bounded_timeout, describe_api_error, request_json
from kubectl_desched.model.podmigrationjob import WAIT_PAST_TTL_SECONDS, WAIT_WITHOUT_TTL_SECONDS

if TYPE_CHECKING:
    from kubernetes.client.exceptions import ApiException

    from kubectl_desched.kube.config import Connection  # it imports the kubernetes client
    from kubectl_desched.term.color import Painter


class MigrationEvictor:
    """Creates one PodMigrationJob per confirmed candidate; settle() follows them until they end."""

    name = "migration"

    def __init__(self, conn: Connection, settings: Mapping[str, JobSettings], *, server_dry_run: bool = False,
                 wait: bool = True, timeout: float | None = None,
                 on_phase: Callable[[JobTrack], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.conn = conn
        self.settings = dict(settings) or {"": JobSettings()}
        self.server_dry_run = server_dry_run
        self.wait = wait and not server_dry_run  # a dry-run job does not exist: nothing to wait for
        self.timeout = timeout
        self.on_phase = on_phase
        self.clock = clock
        self.run_id = uuid.uuid4().hex[:16]
        self.tracks: dict[int, JobTrack] = {}  # id(candidate) -> its job
        self._lock = threading.RLock()
        self._by_name: dict[str, JobTrack] = {}
        self._unclaimed: dict[str, Mapping[str, Any]] = {}  # watched before our POST returned
        self._follower: Follower | None = None
        self._known: list[Mapping[str, Any]] = []  # existing jobs, for the duplicate check
        self._known_at: float | None = None

    def settings_for(self, c: Candidate) -> JobSettings:
        return self.settings.get(c.profile) or self.settings.get("") or JobSettings()

    # ------------------------------------------------------------------ before the prompt

    def preflight(self, candidates: Sequence[Candidate]) -> list[str]:
        require_served(self.conn)
        needed = [Permission("create", RESOURCE, GROUP), Permission("list", RESOURCE, GROUP)]
        if self.wait:
            needed.append(Permission("watch", RESOURCE, GROUP))
        missing = missing_permissions(self.conn, needed, [])
        # The pod is read again right before its job is created.
        missing += missing_permissions(self.conn, [Permission("get", "pods")],
                                       {c.pod.namespace for c in candidates})
        return missing

    # ------------------------------------------------------------------ one candidate

    def evict(self, c: Candidate, stop: threading.Event) -> EvictionResult:
        started = now()
        if stop.is_set():
            return EvictionResult(c, "interrupted", "not started: interrupted", started, now())
        try:
            existing = self._blocking_job(c)
            if existing is not None:
                name = (existing.get("metadata") or {}).get("name", "?")
                return EvictionResult(c, "skipped", f"PodMigrationJob {name} ({job_status(existing)[0]}) already "
                                      "exists for this pod", started, now())
            changed = self._pod_changed(c)
            if changed is not None:
                return EvictionResult(c, *changed, started, now(), attempts=0)
        except (api_exception(), urllib3.exceptions.HTTPError, OSError) as e:
            return EvictionResult(c, "failed", str(describe_api_error(e, "before creating the job", self.conn.server)),
                                  started, now())
        settings = self.settings_for(c)
        if not self.server_dry_run:
            self._start_following()
        body = job_body(c, settings, self.run_id)
        query = [("dryRun", "All")] if self.server_dry_run else []
        try:
            job = request_json(self.conn, "POST", JOBS_PATH, query=query, body=body, timeout=bounded_timeout(self.conn))
        except api_exception() as e:
            return EvictionResult(c, *self._classify(e), started, now(), attempts=1)
        except (urllib3.exceptions.HTTPError, OSError) as e:
            # The request may have reached the server: look for the job rather than create a second one.
            job = self._find_own_job(c)
            if job is None:
                return EvictionResult(c, "unknown", f"{describe_api_error(e, 'creating the job', self.conn.server)};"
                                      " no job found for the pod afterwards", started, now(), attempts=1)
        name = job["metadata"]["name"]
        if self.server_dry_run:
            return EvictionResult(c, "would create", f"server dry run accepted PodMigrationJob {name} "
                                  f"({settings.mode}, {settings.ttl_text})", started, now(), attempts=1)
        self._register(JobTrack(c, name, settings, now()), job)
        return EvictionResult(c, "created", f"PodMigrationJob {name} created ({settings.mode}, {settings.ttl_text})",
                              started, now(), attempts=1)

    def _blocking_job(self, c: Candidate) -> Mapping[str, Any] | None:
        with self._lock:
            fresh = self._known_at is not None and self.clock() - self._known_at < DUPLICATE_CACHE_SECONDS
            if not fresh:
                self._known = [*self._list()]
                self._known_at = self.clock()
            return blocking_job(self._known, c.pod.namespace, c.pod.name, c.pod.uid)

    def _list(self, label_selector: str | None = None) -> Iterator[Mapping[str, Any]]:
        query = [("labelSelector", label_selector)] if label_selector else []
        doc = request_json(self.conn, "GET", JOBS_PATH, query=query, timeout=bounded_timeout(self.conn))
        yield from doc.get("items") or []

    def _pod_changed(self, c: Candidate) -> tuple[str, str] | None:
        """Koordinator looks the pod up by name, so a pod recreated under that name must not get a job."""
        p = c.pod
        try:
            pod = request_json(self.conn, "GET", f"/api/v1/namespaces/{p.namespace}/pods/{p.name}",
                               timeout=bounded_timeout(self.conn))
        except api_exception() as e:
            if e.status == 404:
                return "gone", "pod no longer exists: no job created"
            raise
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        if p.uid and meta.get("uid") != p.uid:
            return "changed", "pod was replaced by another with the same name: no job created"
        if meta.get("deletionTimestamp"):
            return "terminating", "pod is already terminating: no job created"
        if p.node_name and spec.get("nodeName") != p.node_name:
            return "moved", f"pod is now on {spec.get('nodeName') or 'no node'}, not {p.node_name}: no job created"
        return None

    def _find_own_job(self, c: Candidate) -> Mapping[str, Any] | None:
        try:
            jobs = list(self._list(f"{RUN_LABEL}={self.run_id}"))
        except (api_exception(), urllib3.exceptions.HTTPError, OSError):
            return None
        return next((j for j in jobs if same_pod(j, c.pod.namespace, c.pod.name, c.pod.uid)), None)

    def _classify(self, e: ApiException) -> tuple[str, str]:
        msg = api_message(e)
        if e.status == 403:
            return "forbidden", f"missing permission: create {RESOURCE}.{GROUP} ({msg})"
        if e.status == 404:
            return "failed", NOT_SERVED
        if e.status == 401:
            return "failed", "unauthorized: credentials rejected"
        return "failed", f"creating the PodMigrationJob: {msg} ({e.status})"

    def _register(self, track: JobTrack, job: Mapping[str, Any]) -> None:
        with self._lock:
            self.tracks[id(track.candidate)] = track
            self._by_name[track.name] = track
            self._known.append(job)
            seen = self._unclaimed.pop(track.name, None)  # the watch may have been quicker than our POST
        self._observe(track, job)
        if seen is not None:
            self._observe(track, seen)

    def _observe(self, track: JobTrack, job: Mapping[str, Any]) -> None:
        with self._lock:
            changed = track.observe(job, now())
        if changed and self.on_phase:
            self.on_phase(track)

    def _gone(self, track: JobTrack) -> None:
        with self._lock:
            if track.final:
                return
            track.deleted = True
            track.ended = now()
        if self.on_phase:
            self.on_phase(track)

    # ------------------------------------------------------------------ waiting

    def _start_following(self) -> None:
        """Watch this run's jobs from before the first one is created, so no phase change is missed."""
        with self._lock:
            if self._follower is not None or not self.wait:
                return
            self._follower = Follower(self)
        self._follower.start()
        self._follower.listed.wait(FOLLOW_START_SECONDS)  # without it the first job's early phases may be missed

    def wait_seconds(self) -> float:
        """--timeout, else until the controller's scavenger has deleted any job still open: by then each job has
        its verdict (its TTL is checked only on the controller's next look, which may come long after it)."""
        if self.timeout is not None:
            return self.timeout
        ttls = [t.settings.ttl_seconds for t in self.tracks.values()]
        return WAIT_WITHOUT_TTL_SECONDS if not ttls or min(ttls) == 0 else max(ttls) + WAIT_PAST_TTL_SECONDS

    def open_jobs(self) -> list[JobTrack]:
        with self._lock:
            return [t for t in self.tracks.values() if not t.final]

    def _note_overdue(self) -> None:
        """Say once per job when it passes its TTL unended: the wait goes on until the controller decides."""
        due = now()
        for t in self.open_jobs():
            ttl = t.settings.ttl_seconds
            if ttl and not t.overdue and (due - t.created).total_seconds() > ttl:
                with self._lock:
                    t.overdue = True
                if self.on_phase:
                    self.on_phase(t)

    def settle(self, results: list[EvictionResult], stop: threading.Event) -> list[EvictionResult]:
        if self.wait and self.tracks:
            deadline = self.clock() + self.wait_seconds()
            try:
                while self.open_jobs() and not stop.is_set() and self.clock() < deadline:
                    self._note_overdue()
                    stop.wait(0.1)
            except KeyboardInterrupt:
                stop.set()
        if self._follower is not None:
            self._follower.halt()
        return [self._final(r, stop.is_set()) for r in results]

    def _final(self, r: EvictionResult, interrupted: bool) -> EvictionResult:
        t = self.tracks.get(id(r.candidate))
        if t is None or not self.wait:
            return r
        with self._lock:
            outcome, message = final_outcome(t, interrupted)
            ended = t.ended
        return replace(r, outcome=outcome, message=message, finished=ended or now())

    def apply_event(self, kind: str, job: Mapping[str, Any]) -> None:
        name = (job.get("metadata") or {}).get("name", "")
        with self._lock:
            t = self._by_name.get(name)
            if t is None:
                self._unclaimed[name] = job
                return
        self._observe(t, job)
        if kind == "DELETED":
            self._gone(t)

    def apply_list(self, jobs: Sequence[Mapping[str, Any]], registered_before: set[str]) -> None:
        """A fresh LIST: jobs missing from it that existed before it was sent were deleted."""
        listed = {(j.get("metadata") or {}).get("name", ""): j for j in jobs}
        for job in listed.values():
            self.apply_event("MODIFIED", job)
        with self._lock:
            missing = [t for name, t in self._by_name.items() if name in registered_before and name not in listed]
        for t in missing:
            self._gone(t)

    def registered_names(self) -> set[str]:
        with self._lock:
            return set(self._by_name)

    # ------------------------------------------------------------------ showing the results

    def results_table(self, results: Sequence[EvictionResult], paint: Painter) -> str:
        return summary_table(results, self.tracks)

    def document_sections(self, results: Sequence[EvictionResult]) -> dict[str, Any]:
        return {"podMigrationJobs": [job_doc(self.tracks[id(r.candidate)], r) for r in results
                                     if id(r.candidate) in self.tracks]}

    def live_line(self, r: EvictionResult) -> str | None:
        return None if r.outcome == "created" else default_live_line(r)  # a job's phases have their own lines
