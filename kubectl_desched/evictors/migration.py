"""Evict by creating Koordinator PodMigrationJobs (scheduling.koordinator.sh/v1alpha1), which Koordinator's
migration controller carries out (reserve room elsewhere, evict, wait for the new pod), then follow the jobs
until they end. The jobs look like the ones koord-descheduler's MigrationController creates, plus a label that
says kubectl-desched made them."""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import urllib3
from tabulate import tabulate

from kubectl_desched.durations import format_duration
from kubectl_desched.errors import DeschedError
from kubectl_desched.evictors.base import EvictionResult, now
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.kube.access import Permission, missing_permissions
from kubectl_desched.kube.apierrors import api_exception
from kubectl_desched.kube.live import api_message, bounded_timeout, describe_api_error, request_json
from kubectl_desched.plugins.migrationcontroller import MigrationControllerArgs
from kubectl_desched.sanitize import LINE_LIMIT, one_line

if TYPE_CHECKING:
    from kubernetes.client.exceptions import ApiException

    from kubectl_desched.kube.config import Connection  # it imports the kubernetes client

GROUP = "scheduling.koordinator.sh"
VERSION = "v1alpha1"
RESOURCE = "podmigrationjobs"
KIND = "PodMigrationJob"
GROUP_VERSION_PATH = f"/apis/{GROUP}/{VERSION}"
JOBS_PATH = f"{GROUP_VERSION_PATH}/{RESOURCE}"
NOT_SERVED = (f"PodMigrationJob API ({GROUP}/{VERSION}) is not served by this cluster: "
              "install Koordinator or use --evictor eviction")

# What koord-descheduler writes on its jobs (the migration controller reads them for its events and metrics).
EVICT_REASON = "koordinator.sh/evict-reason"
EVICT_TRIGGER = "koordinator.sh/evict-trigger"
MANAGED_BY = "app.kubernetes.io/managed-by"
CREATOR = "kubectl-desched"
RUN_LABEL = "kubectl-desched/run"  # one value per run: the watch follows this run's jobs only

# Koordinator's MigrationController defaults (defaultJobMode, defaultJobTTL).
DEFAULT_MODE = "ReservationFirst"
DEFAULT_TTL_SECONDS = 300.0
# When the controller's verdict comes: it checks a job's TTL only when it next reconciles the job, and a job whose
# eviction failed (a PDB, an error) is retried with a backoff that doubles up to 1000 s, so a job may fail with
# Timeout long after its TTL (a 90 s TTL failed at 165 s). Its scavenger, every minute, deletes any job 5 minutes
# past its TTL (30 minutes old without one): by then every job has ended or is gone. Waiting longer is pointless.
SCAVENGE_AFTER_TTL_SECONDS = 300.0
NO_TTL_SCAVENGE_SECONDS = 1800.0
SCAVENGE_PERIOD_SECONDS = 60.0
WAIT_MARGIN_SECONDS = 15.0
MAX_BACKOFF_SECONDS = 1000.0
# koord-descheduler's arbitration marks each job it lets through (others wait, Pending, until it does).
PASSED_ARBITRATION = "descheduler.koordinator.sh/passed-arbitration"

PENDING, RUNNING, SUCCEEDED, FAILED, ABORTED = "Pending", "Running", "Succeeded", "Failed", "Aborted"
FINAL_PHASES = frozenset({SUCCEEDED, FAILED, ABORTED})
_PHASE_OUTCOME = {SUCCEEDED: "succeeded", FAILED: "failed", ABORTED: "aborted"}
DUPLICATE_CACHE_SECONDS = 5.0  # how long one LIST of existing jobs answers the duplicate check
FOLLOW_START_SECONDS = 10.0
MAX_GENERATE_BASE = 57  # the apiserver appends 5 random characters; keep generated names within 63


@dataclass(frozen=True)
class JobSettings:
    mode: str = DEFAULT_MODE
    ttl_seconds: float = DEFAULT_TTL_SECONDS
    delete_options: Mapping[str, Any] | None = None  # spec.deleteOptions, which the controller evicts with

    @property
    def ttl(self) -> str:
        return format_duration(self.ttl_seconds)


def profile_settings(profiles: Sequence[Any], mode: str | None, ttl_seconds: float | None,
                     grace_period: int | None = None) -> dict[str, JobSettings]:
    """Job settings per policy profile: flags win, then the profile's MigrationController defaultJobMode,
    defaultJobTTL and defaultDeleteOptions (as koord-descheduler would use them), then Koordinator's defaults.
    The key "" is the default for a candidate whose profile is not listed."""
    grace = None if grace_period is None else {"gracePeriodSeconds": grace_period}
    base = JobSettings(mode or DEFAULT_MODE, DEFAULT_TTL_SECONDS if ttl_seconds is None else ttl_seconds, grace)
    out = {"": base}
    for p in profiles:
        args = next((u.args for u in (*p.filters, *p.pre_eviction_filters)
                     if isinstance(u.args, MigrationControllerArgs)), None)
        if args is None:
            continue
        s = base
        if mode is None and args.default_job_mode:
            s = replace(s, mode=args.default_job_mode)
        if ttl_seconds is None and args.default_job_ttl is not None:
            s = replace(s, ttl_seconds=args.default_job_ttl.seconds)
        if args.default_delete_options:
            s = replace(s, delete_options={**args.default_delete_options, **(grace or {})})
        out[p.name] = s
    return out


def generate_name(pod_name: str) -> str:
    return pod_name[:MAX_GENERATE_BASE].rstrip(".-") + "-"


def job_body(c: Candidate, settings: JobSettings, run_id: str) -> dict[str, Any]:
    pod = c.pod
    body: dict[str, Any] = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {
            "generateName": generate_name(pod.name),
            "labels": {MANAGED_BY: CREATOR, RUN_LABEL: run_id},
            "annotations": {EVICT_REASON: c.reason, EVICT_TRIGGER: c.plugin},
        },
        "spec": {
            "podRef": {"namespace": pod.namespace, "name": pod.name, "uid": pod.uid},
            "mode": settings.mode,
            "ttl": settings.ttl,
        },
    }
    if settings.delete_options:
        body["spec"]["deleteOptions"] = dict(settings.delete_options)
    return body


def job_status(job: Mapping[str, Any]) -> tuple[str, str, str]:
    """(phase, reason, message); a job the controller has not looked at yet has no phase: it is Pending.
    The controller's words are printed in lines and tables: made one safe, short line each."""
    status = job.get("status")
    if not isinstance(status, Mapping):
        status = {}
    return (one_line(status.get("phase") or PENDING, 40), one_line(status.get("reason") or "", 100),
            one_line(status.get("message") or ""))


def job_detail(job: Mapping[str, Any]) -> tuple[str, str, bool]:
    """What says why a job waits: status.status (e.g. ReservationCreated while the phase stays Running), the latest
    condition as "Type=Status Reason", and whether the arbitration let it through."""
    status = job.get("status") or {}
    conditions = [c for c in status.get("conditions") or () if isinstance(c, Mapping)]
    latest = ""
    if conditions:
        # The latest transition; on equal times (seconds) the later entry, as the controller appends new types.
        _, last = max(enumerate(conditions), key=lambda ic: (str(ic[1].get("lastTransitionTime") or ""), ic[0]))
        latest = " ".join(x for x in (f"{last.get('type', '?')}={last.get('status', '?')}", last.get("reason") or "")
                          if x)
    passed = ((job.get("metadata") or {}).get("annotations") or {}).get(PASSED_ARBITRATION) == "true"
    return str(status.get("status") or ""), latest, passed


def same_pod(job: Mapping[str, Any], namespace: str, name: str, uid: str) -> bool:
    ref = (job.get("spec") or {}).get("podRef") or {}
    if uid and ref.get("uid") == uid:
        return True
    return ref.get("namespace") == namespace and ref.get("name") == name


def blocking_job(jobs: Sequence[Mapping[str, Any]], namespace: str, name: str, uid: str) -> Mapping[str, Any] | None:
    """A job that has not ended for this pod, matched by UID or by namespace/name as koord-descheduler's
    arbitration does: then no second job is created for it."""
    for job in jobs:
        if job_status(job)[0] not in FINAL_PHASES and same_pod(job, namespace, name, uid):
            return job
    return None


@dataclass
class JobTrack:
    """One created job as we follow it."""

    candidate: Candidate
    name: str
    settings: JobSettings
    created: datetime
    phase: str = PENDING
    reason: str = ""
    message: str = ""
    ended: datetime | None = None
    deleted: bool = False
    history: list[str] = field(default_factory=list)
    status: str = ""  # status.status
    condition: str = ""  # the latest condition, "Type=Status Reason"
    passed_arbitration: bool = False
    overdue: bool = False  # past its TTL and not ended: the controller decides on its next look

    @property
    def final(self) -> bool:
        return self.deleted or self.phase in FINAL_PHASES

    def observe(self, job: Mapping[str, Any], when: datetime) -> bool:
        """Take the job's status; True when anything a live line shows changed."""
        seen = job_status(job)
        detail = job_detail(job)
        if (seen == (self.phase, self.reason, self.message)
                and detail == (self.status, self.condition, self.passed_arbitration) and self.history):
            return False
        self.phase, self.reason, self.message = seen
        self.status, self.condition, self.passed_arbitration = detail
        self.history.append(self.phase)
        if self.phase in FINAL_PHASES and self.ended is None:
            self.ended = when
        return True


def phase_line(t: JobTrack) -> str:
    """`ns/pod: PodMigrationJob NAME Phase (reason: message); status S; condition Type=Status Reason; passed
    arbitration`: a job held by a limiter or a PDB stays Running with no reason, so the rest says why it waits."""
    p = t.candidate.pod
    detail = ": ".join(x for x in (t.reason, t.message) if x)
    state = "deleted before it ended" if t.deleted else t.phase
    line = f"  {p.namespace}/{p.name}: PodMigrationJob {t.name} {state}" + (f" ({detail})" if detail else "")
    extras = [f"status {t.status}" if t.status else "", f"condition {t.condition}" if t.condition else "",
              "passed arbitration" if t.passed_arbitration else ""]
    if t.overdue and not t.final:
        extras.append(f"past its TTL {t.settings.ttl}: Koordinator fails it on its next look at the job (up to "
                      f"{int(MAX_BACKOFF_SECONDS)} s apart after failed evictions) and deletes it "
                      f"{format_duration(SCAVENGE_AFTER_TTL_SECONDS)} after the TTL")
    return "; ".join([line, *(x for x in extras if x)])


def final_outcome(t: JobTrack, interrupted: bool) -> tuple[str, str]:
    """The result word and message for a job when we stop following it."""
    detail = ": ".join(x for x in (t.reason, t.message) if x)
    if t.deleted:
        return "deleted", f"PodMigrationJob {t.name} was deleted while {t.phase}"
    if t.phase in FINAL_PHASES:
        return _PHASE_OUTCOME[t.phase], f"PodMigrationJob {t.name} {t.phase}" + (f" ({detail})" if detail else "")
    if interrupted:  # not "interrupted": that word means nothing was sent for the pod
        return "unfinished", f"PodMigrationJob {t.name} still {t.phase} when interrupted; Koordinator carries on"
    return "timed out", f"PodMigrationJob {t.name} still {t.phase} at the timeout; Koordinator carries on"


def duration_text(start: datetime | None, end: datetime | None) -> str:
    if start is None or end is None:
        return "-"
    return format_duration(round((end - start).total_seconds()))


def summary_rows(results: Sequence[EvictionResult], tracks: Mapping[int, JobTrack]) -> list[list[str]]:
    """Pod, job, final phase, reason, message, duration: one row per confirmed candidate."""
    rows = []
    for r in results:
        p = r.candidate.pod
        t = tracks.get(id(r.candidate))
        if t is None:  # no job: skipped, refused or failed before one existed
            rows.append([p.namespace, p.name, "-", "-", r.outcome, one_line(r.message, LINE_LIMIT), "-"])
            continue
        phase = "Deleted" if t.deleted else t.phase
        if r.outcome in _UNFINISHED_LABEL:
            phase += f" ({_UNFINISHED_LABEL[r.outcome]})"
        rows.append([p.namespace, p.name, t.name, phase, t.reason, t.message, duration_text(t.created, r.finished)])
    return rows


def job_doc(t: JobTrack, r: EvictionResult) -> dict[str, Any]:
    """A followed job for -o json/yaml."""
    p = t.candidate.pod
    return {"name": t.name, "namespace": p.namespace, "pod": p.name, "uid": p.uid, "mode": t.settings.mode,
            "ttl": t.settings.ttl, "phase": t.phase, "reason": t.reason, "message": t.message,
            "status": t.status, "condition": t.condition, "passedArbitration": t.passed_arbitration,
            "deleted": t.deleted, "phases": list(dict.fromkeys(t.history)), "result": r.outcome,
            "duration": duration_text(t.created, r.finished)}


_UNFINISHED_LABEL = {"timed out": "timed out", "unfinished": "interrupted"}
SUMMARY_HEADERS = ["NAMESPACE", "POD", "JOB", "PHASE", "REASON", "MESSAGE", "DURATION"]


def summary_table(results: Sequence[EvictionResult], tracks: Mapping[int, JobTrack]) -> str:
    return tabulate(summary_rows(results, tracks), headers=SUMMARY_HEADERS, tablefmt="plain")


def require_served(conn: Connection) -> None:
    """Discovery of scheduling.koordinator.sh/v1alpha1 must list podmigrationjobs."""
    try:
        doc = request_json(conn, "GET", GROUP_VERSION_PATH, timeout=bounded_timeout(conn))
    except api_exception() as e:
        if e.status == 404:
            raise DeschedError(NOT_SERVED) from None
        raise describe_api_error(e, "checking for the PodMigrationJob API", conn.server) from None
    except (urllib3.exceptions.HTTPError, OSError) as e:
        raise describe_api_error(e, "checking for the PodMigrationJob API", conn.server) from None
    resources = (doc or {}).get("resources")
    if not isinstance(resources, list) or not any(isinstance(r, Mapping) and r.get("name") == RESOURCE
                                                  for r in resources):
        raise DeschedError(NOT_SERVED)


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
        self._follower: _Follower | None = None
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
                                  f"({settings.mode}, ttl {settings.ttl})", started, now(), attempts=1)
        self._register(JobTrack(c, name, settings, now()), job)
        return EvictionResult(c, "created", f"PodMigrationJob {name} created ({settings.mode}, ttl {settings.ttl})",
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
            self._follower = _Follower(self)
        self._follower.start()
        self._follower.listed.wait(FOLLOW_START_SECONDS)  # without it the first job's early phases may be missed

    def wait_seconds(self) -> float:
        """--timeout, else until the controller's scavenger has deleted any job still open: by then each job has
        its verdict (its TTL is checked only on the controller's next look, which may come long after it)."""
        if self.timeout is not None:
            return self.timeout
        ttls = [t.settings.ttl_seconds for t in self.tracks.values()]
        longest = NO_TTL_SCAVENGE_SECONDS if not ttls or min(ttls) == 0 else max(ttls) + SCAVENGE_AFTER_TTL_SECONDS
        return longest + SCAVENGE_PERIOD_SECONDS + WAIT_MARGIN_SECONDS

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


class _Follower(threading.Thread):
    """LIST this run's jobs, then WATCH from that list's resourceVersion; list again whenever the watch ends
    (server timeout, 410 Gone, a dropped connection). Every ADDED/MODIFIED/DELETED goes to the evictor."""

    def __init__(self, evictor: MigrationEvictor) -> None:
        super().__init__(daemon=True, name="pmj-follow")
        self.evictor = evictor
        self.selector = f"{MANAGED_BY}={CREATOR},{RUN_LABEL}={evictor.run_id}"
        self.stopped = threading.Event()
        self.listed = threading.Event()  # the first LIST is done: the watch will replay everything after it
        self._response: Any = None

    def run(self) -> None:
        ev = self.evictor
        while not self.stopped.is_set():
            with ev._lock:
                before = set(ev._by_name)
            try:
                doc = request_json(ev.conn, "GET", JOBS_PATH, query=[("labelSelector", self.selector)],
                                   timeout=bounded_timeout(ev.conn))
            except (api_exception(), urllib3.exceptions.HTTPError, OSError):
                self.stopped.wait(1.0)  # a blip while waiting: try again until settle() gives up
                continue
            ev.apply_list(doc.get("items") or [], before)
            self.listed.set()
            try:
                self._watch((doc.get("metadata") or {}).get("resourceVersion", ""))
            except Exception:  # a broken or refused watch only means: list again, a second later
                self.stopped.wait(1.0)

    def _watch(self, version: str) -> None:
        api, conn = self.evictor.conn.api, self.evictor.conn
        query = [("watch", "true"), ("labelSelector", self.selector), ("allowWatchBookmarks", "true"),
                 ("timeoutSeconds", 300)]
        if version:
            query.append(("resourceVersion", version))
        method, url, headers, body, post = api.param_serialize(
            "GET", JOBS_PATH, query_params=query, header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"])
        # The read stays unbounded unless --request-timeout says otherwise: a quiet watch is normal, the server
        # ends it (timeoutSeconds), and settle() stops waiting at its deadline whatever this thread does.
        resp = api.call_api(method, url, header_params=headers, body=body, post_params=post,
                            _request_timeout=conn.timeout)
        self._response = resp.response
        if resp.status != 200:
            raise api_exception()(http_resp=resp)
        if self.stopped.is_set():
            return
        buffer = b""
        for chunk in self._response.stream(4096, decode_content=True):
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if not line.strip():
                    continue
                event = json.loads(line)
                kind = event.get("type")
                if kind == "ERROR":  # 410 Gone and friends: list again
                    return
                if kind in ("ADDED", "MODIFIED", "DELETED"):
                    self.evictor.apply_event(kind, event.get("object") or {})

    def halt(self) -> None:
        self.stopped.set()
        r = self._response
        if r is not None:
            # Closing a half-read stream may fail; the thread ends anyway.
            with contextlib.suppress(Exception):
                (getattr(r, "shutdown", None) or r.close)()
