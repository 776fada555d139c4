"""Run confirmed evictions safely, whichever evictor acts: pacing (--max-in-flight, --interval, --wait-ready),
Ctrl-C, events, and one result per confirmed candidate, in plan order, for the table and the report.

Threads: each eviction runs in a reused daemon worker thread (evictors/pool.py: at most --max-in-flight of them), and
each --wait-ready wait in another; this (main) thread only schedules and collects. SIGINT,
SIGTERM and SIGHUP set a flag instead of raising (or killing), so no bookkeeping is cut in half and the report is
still written: the first signal stops new evictions and waits for the ones in flight (an evictor stops retrying
when told), a second abandons them."""

from __future__ import annotations

import heapq
import queue
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType

import urllib3

from kubectl_desched.evictors.base import EvictionResult, PodEvictor, Stop, now
from kubectl_desched.evictors.events import EVENT_PERMISSION, EventRecorder
from kubectl_desched.evictors.pool import DaemonPool
from kubectl_desched.evictors.readiness import Readiness, Workload, WorkloadReader, owner_permissions
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.interrupts import handling, signal_name
from kubectl_desched.kube.access import missing_permissions
from kubectl_desched.kube.apierrors import api_exception, is_api_exception

POLL = 0.5  # seconds between readiness reads of an owner


@dataclass(frozen=True)
class Pacing:
    max_in_flight: int = 1
    interval: float = 0.0  # seconds between the starts of two evictions
    wait_ready: bool = False
    timeout: float = 300.0  # bounds each --wait-ready wait (the evictor uses it for its retries)


@dataclass
class Outcome:
    results: list[EvictionResult]
    interrupted: bool = False
    warnings: list[str] = field(default_factory=list)
    signum: int | None = None  # the first signal that interrupted the run (SIGINT, SIGTERM, SIGHUP)


Note = Callable[[str], None]


@dataclass(frozen=True)
class Tick:
    """Where a run stands, for a progress line: results so far, evictions in flight, seconds until --interval
    lets the next one start (None when nothing waits on it)."""

    done: int
    total: int
    in_flight: int
    next_in: float | None


def waiting_line(w: Workload, seen: Readiness | None, before: Readiness | None) -> str:
    """What a --wait-ready wait is still waiting on: a status written after the eviction, with every replica ready."""
    if seen is None:
        return f"waiting for {w}: its status cannot be read; its next eviction waits for every replica to be ready"
    if before is not None and seen.version == before.version:
        return (f"waiting for {w}: its status has not changed since the eviction (still {seen.ready} of "
                f"{seen.desired} ready); its next eviction waits for a new status with all {seen.desired} ready")
    return f"waiting for {w}: {seen.ready} of {seen.desired} ready; its next eviction waits for all {seen.desired}"


class EvictionRunner:
    def __init__(self, evictor: PodEvictor, pacing: Pacing, *, workloads: WorkloadReader | None = None,
                 events: EventRecorder | None = None, on_result: Callable[[EvictionResult], None] | None = None,
                 note: Note | None = None, clock: Callable[[], float] = time.monotonic,
                 on_tick: Callable[[Tick], None] | None = None) -> None:
        self.evictor = evictor
        self.pacing = pacing
        self.workloads = workloads if pacing.wait_ready else None
        self.events = events
        self.on_result = on_result or (lambda _r: None)
        self.note = note or (lambda _m: None)
        self.on_tick = on_tick
        self.clock = clock
        self.stop = Stop()
        self.presses = 0  # signals received (Ctrl-C, SIGTERM, SIGHUP alike)
        self.signum: int | None = None
        self._inbox: queue.Queue[tuple[str, int, object]] = queue.Queue()
        self._evicting = self._waiting = DaemonPool("unused", 0)  # replaced by each run

    # ------------------------------------------------------------------ before the prompt

    def preflight(self, candidates: Sequence[Candidate]) -> tuple[list[str], list[str]]:
        """(missing permissions that stop the run, missing ones that only lose events)."""
        missing = self.evictor.preflight(candidates)
        namespaces = {c.pod.namespace for c in candidates}
        if self.workloads is not None:
            missing += missing_permissions(self.workloads.conn, owner_permissions([c.pod for c in candidates]),
                                           namespaces)
        optional = missing_permissions(self.events.conn, [EVENT_PERMISSION], namespaces) if self.events else []
        return missing, optional

    # ------------------------------------------------------------------ acting

    def run(self, candidates: Sequence[Candidate]) -> Outcome:
        with handling(self._on_signal):
            results = self._schedule(list(candidates))
            results = self.evictor.settle(results, self.stop)
        return Outcome(results, interrupted=self.presses > 0, signum=self.signum)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.presses += 1  # no printing here: the main thread may be inside a write to stderr
        if self.signum is None:
            self.signum = signum
            self.stop.by = signal_name(signum)
        self.stop.set()

    def _schedule(self, candidates: list[Candidate]) -> list[EvictionResult]:
        # The runner never has more than --max-in-flight evictions running; waits for owners run beside them.
        self._evicting = DaemonPool("evict", self.pacing.max_in_flight)
        self._waiting = DaemonPool("wait-ready")
        try:
            return self._scheduled(candidates)
        finally:
            self._evicting.close()
            self._waiting.close()

    def _scheduled(self, candidates: list[Candidate]) -> list[EvictionResult]:
        # Linear bookkeeping (30,000 candidates): a heap of the candidates that may start as soon as pacing allows
        # (bare ones, and the first pending pod of each free workload), and a deque of each workload's pending
        # pods. Only a workload's first pending pod is ever startable, so no step rescans the plan.
        keys = self._workload_keys(candidates)
        n = len(candidates)
        waiting = [True] * n  # not yet started nor finished
        left = n  # how many are waiting
        queues: dict[Workload, deque[int]] = {}
        ready: list[int] = []  # min-heap of startable indices, in plan order
        for i, w in enumerate(keys):
            if w is None:
                ready.append(i)  # ascending, so already a heap
            elif w in queues:
                queues[w].append(i)
            else:
                queues[w] = deque([i])
                ready.append(i)
        heapq.heapify(ready)
        results: dict[int, EvictionResult] = {}
        in_flight: set[int] = set()
        busy: set[Workload] = set()  # in flight or recovering: its next pod waits
        held: dict[Workload, str] = {}  # never came back within --timeout: its other pods are left alone
        newly_held: list[Workload] = []  # their waiting pods are settled at the top of the next round
        following: set[int] = set()  # started with a recovery wait: "ready", not "result", frees the workload
        last_start: float | None = None
        told = 0

        def finish(i: int, r: EvictionResult) -> None:
            results[i] = r
            self.on_result(r)

        while left or in_flight:
            if self.on_tick is not None:
                pause = self.pacing.interval - (self.clock() - last_start) if left and last_start is not None else 0
                self.on_tick(Tick(len(results), n, len(in_flight), pause if pause > 0 else None))
            by = self.stop.by
            if self.presses > told:
                told = self.presses
                if told == 1:
                    said = "interrupted" if by == "Ctrl-C" else f"interrupted by {by}"
                    self.note(f"{said}: no new evictions; waiting for {len(in_flight)} in flight to finish "
                              f"({by} again to abandon them)" if in_flight else f"{said}: no new evictions")
            if self.stop.is_set():
                if left:  # once: every waiting candidate, in plan order
                    for i in range(n):
                        if waiting[i]:
                            finish(i, EvictionResult(candidates[i], "interrupted", f"not evicted: stopped by {by} "
                                                                                   "before its turn"))
                    waiting = [False] * n
                    left = 0
                    queues.clear()
                    ready.clear()
                if self.presses >= 2 or not in_flight:
                    for i in sorted(in_flight):
                        finish(i, EvictionResult(candidates[i], "unknown", f"abandoned by a second {by} while the "
                                                 "eviction was in flight: it may have been applied; check the pod",
                                                 finished=now()))
                    in_flight.clear()
                    break
            for w in newly_held:
                for i in queues.pop(w, ()):
                    waiting[i] = False
                    left -= 1
                    finish(i, EvictionResult(candidates[i], "held", f"not evicted: {held[w]}"))
            newly_held.clear()
            start = self._next(ready, waiting, len(in_flight), last_start)
            if start is not None:
                heapq.heappop(ready)
                waiting[start] = False
                left -= 1
                in_flight.add(start)
                w = keys[start]
                follow = False
                if w is not None:
                    q = queues[w]
                    q.popleft()
                    follow = bool(q)
                    if not q:
                        del queues[w]
                    busy.add(w)
                if follow:
                    following.add(start)
                last_start = self.clock()
                self._evicting.submit(self._work, start, candidates[start], w if follow else None)
                continue
            try:
                kind, i, payload = self._inbox.get(timeout=self._wait(left, last_start))
            except queue.Empty:
                continue
            w = keys[i]
            if kind == "result":
                in_flight.discard(i)
                if i not in results:  # not already abandoned
                    finish(i, payload)  # type: ignore[arg-type]
            elif payload and w is not None:  # "ready" with why the owner did not come back
                held[w] = str(payload)
                newly_held.append(w)
            if w is not None and (kind == "ready" or i not in following) and w in busy:
                busy.discard(w)
                if w not in held and w in queues:
                    heapq.heappush(ready, queues[w][0])  # its next pod may start
        return [results[i] for i in range(n)]

    def _next(self, ready: list[int], waiting: list[bool], in_flight: int, last_start: float | None) -> int | None:
        """The first waiting candidate that may start now, in plan order (the top of the heap), if pacing allows."""
        if self.stop.is_set() or in_flight >= self.pacing.max_in_flight:
            return None
        if last_start is not None and self.clock() - last_start < self.pacing.interval:
            return None
        while ready and not waiting[ready[0]]:
            heapq.heappop(ready)  # settled since it was pushed (held)
        return ready[0] if ready else None

    def _wait(self, left: int, last_start: float | None) -> float:
        if left and last_start is not None:
            remaining = self.pacing.interval - (self.clock() - last_start)
            if remaining > 0:
                return min(remaining, 0.2)
        return 0.2

    def _workload_keys(self, candidates: list[Candidate]) -> list[Workload | None]:
        """Each candidate's workload, or None when nothing groups it (no --wait-ready, bare pod, or unreadable
        owner: then that pod just does not wait)."""
        keys: list[Workload | None] = []
        for c in candidates:
            w = None
            if self.workloads is not None:
                try:
                    w = self.workloads.workload(c.pod)
                except (api_exception(), urllib3.exceptions.HTTPError, OSError) as e:
                    self.note(f"{c.pod.key}: cannot read its owner ({type(e).__name__}): it will not be waited on")
            keys.append(w)
        return keys

    def _work(self, i: int, c: Candidate, follow: Workload | None) -> None:
        before: Readiness | None = None
        if follow is not None and self.workloads is not None:
            try:
                before = self.workloads.readiness(follow)
            except (api_exception(), urllib3.exceptions.HTTPError, OSError):
                before = None
        try:
            r = self.evictor.evict(c, self.stop)
        except Exception as e:  # an evictor must not raise; if one does, the run still ends with a record
            r = EvictionResult(c, "failed", f"internal error: {type(e).__name__}: {e}", finished=now())
        if r.outcome == "evicted" and self.events is not None:
            try:
                self.events.descheduled(c)
            except (api_exception(), urllib3.exceptions.HTTPError, OSError) as e:
                why = f"HTTP {e.status}" if is_api_exception(e) else type(e).__name__
                r.notes.append(f"event not recorded: {why}")
                self.note(f"warning: {c.pod.key}: evicted, but the event could not be recorded ({why})")
        self._inbox.put(("result", i, r))
        if follow is None:
            return
        if r.disruptive:  # the wait runs in its own worker: this one is free for the next eviction
            self._waiting.submit(self._follow, i, follow, before)
        else:
            self._inbox.put(("ready", i, None))

    def _follow(self, i: int, w: Workload, before: Readiness | None) -> None:
        self._inbox.put(("ready", i, self._wait_ready(w, before)))

    def _wait_ready(self, w: Workload, before: Readiness | None) -> str | None:
        """None once the owner's status moved since the eviction and shows every replica ready; else why not.
        Requiring a change avoids reading a status the controller has not yet updated for the eviction."""
        assert self.workloads is not None
        deadline = self.clock() + self.pacing.timeout
        seen: Readiness | None = None
        said = ""
        while not self.stop.is_set():
            try:
                seen = self.workloads.readiness(w)
            except (api_exception(), urllib3.exceptions.HTTPError, OSError) as e:
                if is_api_exception(e) and e.status == 404:
                    return f"{w} no longer exists"
            else:
                moved = before is None or seen.version != before.version
                if moved and seen.complete:
                    return None
            if self.clock() >= deadline:
                break
            line = waiting_line(w, seen, before)
            if line != said:  # said again only when what it waits on changes
                self.note(line)
                said = line
            self.stop.wait(min(POLL, max(deadline - self.clock(), 0.01)))
        if self.stop.is_set():
            return f"stopped by {self.stop.by} while waiting for its owner"
        state = f"{seen}" if seen else "status unreadable"
        if seen and before and seen.version == before.version:
            state += ", status unchanged since the eviction: is its controller running?"
        return f"{w} not back to ready within --timeout ({state})"
