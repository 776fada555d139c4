"""PodMigrationJobs as kubectl-desched writes and reads them: the API's names, Koordinator's defaults, a job's
body for a candidate, its status, and what a run tracks of each job it created (scheduling.koordinator.sh/v1alpha1;
the jobs look like koord-descheduler's MigrationController's, plus a label that says kubectl-desched made them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import urllib3

from kubectl_desched.errors import DeschedError
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.kube.apierrors import api_exception
from kubectl_desched.kube.live import bounded_timeout, describe_api_error, request_json
from kubectl_desched.model.durations import format_duration
from kubectl_desched.model.podmigrationjob import DEFAULT_TTL_SECONDS, RESERVATION_FIRST
from kubectl_desched.plugins.koordinator.migrationcontroller import MigrationControllerArgs
from kubectl_desched.sanitize import one_line

if TYPE_CHECKING:
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

DEFAULT_MODE = RESERVATION_FIRST  # Koordinator's MigrationController defaultJobMode
MAX_BACKOFF_SECONDS = 1000.0  # the controller retries a failed eviction this far apart at most (see the wait, model/)
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
    ttl_seconds: float = DEFAULT_TTL_SECONDS  # 0: none
    delete_options: Mapping[str, Any] | None = None  # spec.deleteOptions, which the controller evicts with

    def __post_init__(self) -> None:
        # A TTL under a nanosecond is written 0s, which Koordinator reads as none (as Go parses a policy's): so it is.
        if self.ttl == "0s":
            object.__setattr__(self, "ttl_seconds", 0.0)

    @property
    def ttl(self) -> str:
        """spec.ttl as written."""
        return format_duration(self.ttl_seconds)

    @property
    def ttl_text(self) -> str:
        """The TTL in a sentence: `ttl 5m0s`, `no TTL`."""
        return f"ttl {self.ttl}" if self.ttl_seconds else "no TTL"


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
