"""Acting on the confirmed candidates: the runner with its evictor, progress lines and permission checks."""

from __future__ import annotations

import os
import sys
from typing import IO, TYPE_CHECKING

import click

from kubectl_desched.app.options import Options
from kubectl_desched.app.text import live_line, warn
from kubectl_desched.errors import DeschedError
from kubectl_desched.evictors.choose import Build, make_evictor
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.framework.policy_decoder import Policy
from kubectl_desched.ui.formats import is_text
from kubectl_desched.ui.report import Report
from kubectl_desched.ui.statusline import StatusLine

if TYPE_CHECKING:
    from kubectl_desched.evictors.execute import EvictionRunner
    from kubectl_desched.kube.config import Connection


def same_place(out: IO[str], err: IO[str]) -> bool:
    """Whether what is written to the two streams is read in one place: two terminals, or one file or pipe."""
    try:
        if out.isatty() and err.isatty():
            return True
        a, b = os.fstat(out.fileno()), os.fstat(err.fileno())
    except (OSError, ValueError):  # no file under it (io.UnsupportedOperation is both)
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def build_runner(opts: Options, conn: Connection, mode: str, policy: Policy, *,
            quiet: bool) -> tuple[EvictionRunner, StatusLine | None]:
    from kubectl_desched.evictors.events import EventRecorder
    from kubectl_desched.evictors.execute import EvictionRunner, Pacing
    from kubectl_desched.evictors.readiness import WorkloadReader

    # On a terminal one progress line is redrawn on stderr. Each pod's result is printed once: in the results table
    # when stdout shows up where stderr does (both terminals, or one log with 2>&1), else also as it comes.
    status = StatusLine(sys.stderr) if not quiet and sys.stderr.isatty() else None
    table_follows = is_text(opts.output) and same_place(sys.stdout, sys.stderr)

    def say(message: str) -> None:
        if status is not None:
            status.clear()
        click.echo(message, err=True)

    def progress(c: Candidate, message: str) -> None:
        say(f"  {c.pod.namespace}/{c.pod.name}: {message}")

    acting = opts.acting
    pacing = Pacing(max_in_flight=acting.max_in_flight, interval=acting.interval, wait_ready=acting.wait_ready,
                    timeout=acting.timeout)
    events = EventRecorder(conn) if acting.record_events and mode == "evict" else None
    evictor = make_evictor(acting, Build(conn, server_dry_run=mode == "dry-run=server",
                                         progress=None if quiet else progress, profiles=policy.profiles, say=say))
    per_pod = not quiet and not table_follows
    return EvictionRunner(evictor, pacing,
                  workloads=WorkloadReader(conn) if acting.wait_ready else None, events=events,
                  on_result=(lambda r: live_line(evictor.live_line(r), say)) if per_pod else None, note=say,
                  on_tick=status.update if status is not None else None), status


def preflight(runner: EvictionRunner, candidates: list[Candidate], opts: Options, report: Report | None) -> None:
    """Before the prompt: name every missing permission in one line and stop, rather than fail pod by pod."""
    from kubectl_desched.kube.access import AccessCheckUnavailable
    try:
        missing, optional = runner.preflight(candidates)
    except AccessCheckUnavailable as e:
        warn(f"{e}; going ahead (the API server still checks each request)")
        missing, optional = [], []
    if report:
        report.doc["preflight"] = {"missing": missing, "missingForEvents": optional}
    if missing:
        raise DeschedError(f"not allowed to {'; '.join(missing)} (checked before asking: nothing was evicted)")
    if optional:
        warn(f"--record-events: not allowed to {'; '.join(optional)}: evictions will go ahead without events")
