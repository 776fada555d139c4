"""How PodMigrationJobs are shown: a live line per phase change, the summary table after the run, and each
followed job's section of the -o json/yaml document."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from kubectl_desched.evictors.base import EvictionResult
from kubectl_desched.evictors.migration.jobs import MAX_BACKOFF_SECONDS, JobTrack
from kubectl_desched.model.durations import format_duration
from kubectl_desched.model.podmigrationjob import SCAVENGE_AFTER_TTL_SECONDS
from kubectl_desched.sanitize import LINE_LIMIT, one_line
from kubectl_desched.term.tables import plain_table


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
    return plain_table(summary_rows(results, tracks), SUMMARY_HEADERS)
