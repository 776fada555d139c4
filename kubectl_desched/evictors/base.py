"""What every evictor offers the shared runner (evictors/execute.py), and what it hands back.

The runner owns pacing, Ctrl-C, the report and events; an evictor knows how to check its permissions, how to act
on one confirmed candidate, and how its results are shown (the live lines, the table after the run, its sections
of the -o json/yaml document), so nothing outside evictors/ names one. Two evictors exist: the Eviction API
(eviction_api.py) and Koordinator PodMigrationJobs (migration.py); choose.py picks one from the options. (The
planning side's evictor, which filters and limits candidates, is framework.types.PlanningEvictor.)"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from kubectl_desched.framework.plan import Candidate
from kubectl_desched.sanitize import LINE_LIMIT, one_line

if TYPE_CHECKING:
    from kubectl_desched.term.color import Painter

# Outcomes that do not make the exit code 1. Anything else (blocked, changed, moved, forbidden, failed,
# unknown, interrupted, ...) is a confirmed action that did not happen as asked, or may not have.
OK_OUTCOMES = frozenset({
    "evicted", "would evict",  # Eviction API
    "gone", "terminating",     # the pod was already gone or going when we looked: nothing left to do
    # 409: another hand (a second operator, a controller) evicted or deleted it between our re-read and our
    # request, and a re-read shows it going. The same race lost by a few ms more reads "terminating": the exit
    # code must not depend on which side of the re-read the other request landed.
    "conflict",
    "created", "succeeded",    # PodMigrationJob created (--no-wait) / ended Succeeded
    "would create",            # PodMigrationJob accepted by a server dry run
})

# A surge's (--surge, evictors/surge.py) successes: its replacement Ready and the pod removed by its ReplicaSet /
# accepted by a server dry run. Judged by the candidate's method: the Eviction API's "moved" is a pod found on
# another node and not evicted, a failure.
SURGE_OK_OUTCOMES = frozenset({"moved", "would surge"})

# Outcomes after which the pod is, or may be, going away: --wait-ready waits for its owner after these.
DISRUPTIVE_OUTCOMES = frozenset({"evicted", "unknown", "created", "succeeded",
                                 "timed out", "unfinished"})  # a PodMigrationJob still running may yet evict


class Stop(threading.Event):
    """Set when the user interrupts the run; `by` names how (Ctrl-C, SIGTERM, SIGHUP) for the results' words."""

    def __init__(self) -> None:
        super().__init__()
        self.by = "Ctrl-C"


def stopped_by(stop: threading.Event) -> str:
    return getattr(stop, "by", "Ctrl-C")


def now() -> datetime:
    return datetime.now(UTC)


def timestamp(t: datetime | None) -> str | None:
    """RFC 3339 in UTC with milliseconds: evictions a few ms apart must stay in order in the report."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z" if t else None


@dataclass
class EvictionResult:
    candidate: Candidate
    outcome: str  # see OK_OUTCOMES; an evictor may add its own words
    message: str
    started: datetime | None = None
    finished: datetime | None = None
    attempts: int = 0  # requests sent for this pod (retries after 429 or a lost connection count)
    notes: list[str] = field(default_factory=list)  # e.g. "event not recorded: ..." (warnings, not failures)

    @property
    def surge(self) -> bool:
        return getattr(self.candidate, "method", "evict") == "surge"  # a runner's stand-in candidate may have none

    @property
    def ok(self) -> bool:
        return self.outcome in (SURGE_OK_OUTCOMES if self.surge else OK_OUTCOMES)

    @property
    def disruptive(self) -> bool:
        """A surge never is: its workload's ready count does not drop, whatever its outcome."""
        return not self.surge and self.outcome in DISRUPTIVE_OUTCOMES

    @property
    def gone(self) -> bool:
        """The pod is gone and its controller makes its replacement now: a PodMigrationJob that succeeded has
        evicted it (one only created has not yet); a surge's replacement came first."""
        return self.outcome == "moved" if self.surge else self.outcome in ("evicted", "succeeded")


def default_live_line(r: EvictionResult) -> str | None:
    """The line a log gets as each result comes: `  ns/pod: outcome (why, when it did not go as asked)`."""
    p = r.candidate.pod
    return f"  {p.namespace}/{p.name}: {r.outcome}" + ("" if r.ok else f" ({one_line(r.message, LINE_LIMIT)})")


class PodEvictor(Protocol):
    """One way of acting on confirmed candidates (upstream's PodEvictor). Constructed by choose.make_evictor."""

    name: str  # its key in choose.EVICTORS, the --evictor value: recorded in the report

    def preflight(self, candidates: Sequence[Candidate]) -> list[str]:
        """Before the prompt: what the user may not do that acting on these candidates needs, each as one
        phrase such as "create pods/eviction in namespace web" (kube/access.py builds them). Empty: all fine.
        May raise DeschedError for a cluster that cannot work at all (e.g. the CRD is not served)."""
        ...

    def evict(self, candidate: Candidate, stop: threading.Event) -> EvictionResult:
        """Act on one candidate and say what happened, with started/finished set. Runs in a worker thread,
        several at once under --max-in-flight. `stop` is set on Ctrl-C, SIGTERM or SIGHUP (stopped_by(stop) says
        which): stop retrying or waiting and return (outcome "interrupted" if nothing was sent). Never raises for
        API or network errors."""
        ...

    def settle(self, results: list[EvictionResult], stop: threading.Event) -> list[EvictionResult]:
        """After every evict() returned: wait for work that evict() only started (PodMigrationJobs) and return
        the final results in the same order. The Eviction API returns them unchanged."""
        ...

    def results_table(self, results: Sequence[EvictionResult], paint: Painter) -> str:
        """The table printed after the run, one row per confirmed candidate."""
        ...

    def document_sections(self, results: Sequence[EvictionResult]) -> dict[str, Any]:
        """Top-level sections this evictor adds to the -o json/yaml document (none: {})."""
        ...

    def live_line(self, r: EvictionResult) -> str | None:
        """The line a log gets for this result as it comes (None: none, e.g. when the evictor has its own)."""
        ...


class WrappingEvictor:
    """An evictor around the chosen one (--surge, --cordon): it does a step of its own where it must and hands the
    rest on; subclasses override what they change."""

    def __init__(self, inner: PodEvictor) -> None:
        self.inner = inner
        self.name = inner.name

    def preflight(self, candidates: Sequence[Candidate]) -> list[str]:
        return self.inner.preflight(candidates)

    def evict(self, candidate: Candidate, stop: threading.Event) -> EvictionResult:
        return self.inner.evict(candidate, stop)

    def settle(self, results: list[EvictionResult], stop: threading.Event) -> list[EvictionResult]:
        return self.inner.settle(results, stop)

    def results_table(self, results: Sequence[EvictionResult], paint: Painter) -> str:
        return self.inner.results_table(results, paint)

    def document_sections(self, results: Sequence[EvictionResult]) -> dict[str, Any]:
        return self.inner.document_sections(results)

    def live_line(self, r: EvictionResult) -> str | None:
        return self.inner.live_line(r)
