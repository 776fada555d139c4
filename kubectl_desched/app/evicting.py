"""What every acting command does with a plan once it is shown: the RBAC preflight, the confirmation, the paced
evictions, the results and the wait for the landings, each recorded in --report. balance, deschedule and run act on
the plan they just made; apply on a plan document checked against today's cluster."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from kubectl_desched import errors, interrupts
from kubectl_desched.app.acting import build_runner, preflight
from kubectl_desched.app.landings import landings_doc, landings_summary, landings_text
from kubectl_desched.app.options import Options
from kubectl_desched.app.text import results_summary
from kubectl_desched.errors import UsageError
from kubectl_desched.evictors.base import EvictionResult
from kubectl_desched.framework.placement import Placement
from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.framework.policy_decoder import Policy
from kubectl_desched.interrupts import Interrupted
from kubectl_desched.term.color import Painter
from kubectl_desched.ui.confirm import NotConfirmed, ask
from kubectl_desched.ui.report import Report

if TYPE_CHECKING:
    from kubectl_desched.evictors.cordon import Cordons
    from kubectl_desched.evictors.execute import EvictionRunner
    from kubectl_desched.evictors.surge import Surger
    from kubectl_desched.kube.config import Connection


@dataclass
class Acted:
    """How acting on a plan ended: the exit code it gives, or why nothing was confirmed."""

    code: int
    results: list[EvictionResult] | None = None
    runner: EvictionRunner | None = None
    landings: dict[str, Any] | None = None
    refused: str | None = None  # not confirmed: the line that says why (the caller prints it after its document)


def act(opts: Options, conn: Connection, mode: str, policy: Policy, plan: EvictionPlan,
        placement: Placement | None, nodes: list[Any], report: Report | None, *, structured: bool,
        paint: Painter) -> Acted:
    """Preflight, confirm (--yes or the prompt), cordon (--cordon), evict with the pacing flags, then wait for the
    landings; the cordoned nodes not emptied are uncordoned however it ends."""
    # Progress goes to stderr in every format: stdout stays the one document -o json/yaml promises.
    runner, status = build_runner(opts, conn, mode, policy, quiet=False)

    def say(message: str) -> None:
        if status is not None:
            status.clear()
        click.echo(message, err=True)

    surger, cordons = _first_steps(opts, conn, mode, policy, plan, runner, say)
    preflight(runner, plan.candidates, opts, report)
    try:
        landing: Callable[[Any], str | None] | None = \
            (lambda c: d.text if (d := placement.of(c)) else None) if placement else None
        chosen, answer = (plan.candidates, "all") if opts.acting.yes else ask(plan.candidates, landing)
    except NotConfirmed as e:
        if report:
            report.doc["confirmation"] = {"how": "interactive", "answer": None, "chosen": [], "refused": str(e)}
        return Acted(errors.NOT_CONFIRMED, refused=str(e))
    except Interrupted as e:  # at the prompt: an interrupt (128+N), not a "no" (3)
        if report:
            report.doc["confirmation"] = {"how": "interactive", "answer": None, "chosen": [],
                                          "refused": f"interrupted by {e.name} at the prompt"}
        raise
    if report:
        report.confirmation("--yes" if opts.acting.yes else "interactive", answer, chosen)
    if plan.emptying and cordons is None:
        say(f"would cordon {', '.join(sorted(plan.emptying))} first (--cordon; not in a server dry run)")
    moved_from: set[str] = set()
    try:
        return _act(opts, conn, mode, plan, placement, nodes, report, structured, paint, runner, status, chosen,
                    surger, moved_from)
    finally:
        if cordons is not None:
            with interrupts.deferred():  # every path: the nodes not emptied are uncordoned, each said
                records = cordons.finish(moved_from)
                if report:
                    report.doc["cordons"] = records


def _first_steps(opts: Options, conn: Connection, mode: str, policy: Policy, plan: EvictionPlan,
                 runner: EvictionRunner, say: Callable[[str], None]) -> tuple[Surger | None, Cordons | None]:
    """--surge and --cordon as evictors around the chosen one: a surge candidate moves through the Surger, and the
    nodes are cordoned just before the first move of the plugin that empties them."""
    from kubectl_desched.evictors.cordon import CordoningEvictor, Cordons
    from kubectl_desched.evictors.surge import Surger, SurgingEvictor

    surger = cordons = None
    if policy.limits.surge:
        if opts.acting.evictor != "eviction":
            raise UsageError("--surge moves pods through their Deployment's scale: it works with --evictor eviction "
                             "(Koordinator's ReservationFirst mode starts the replacement first its own way)")
        surger = Surger(conn, opts.acting.timeout, server_dry_run=mode == "dry-run=server", say=say)
        runner.evictor = SurgingEvictor(runner.evictor, surger)
    if plan.emptying and mode == "evict":
        cordons = Cordons(conn, sorted(plan.emptying), say)
        runner.evictor = CordoningEvictor(runner.evictor, cordons, set(plan.emptying.values()))
    return surger, cordons


def _act(opts: Options, conn: Connection, mode: str, plan: EvictionPlan, placement: Placement | None,
         nodes: list[Any], report: Report | None, structured: bool, paint: Painter, runner: EvictionRunner,
         status: Any, chosen: list[Any], surger: Surger | None, moved_from: set[str]) -> Acted:
    code = errors.DONE
    with interrupts.deferred():  # a signal just before or after acting must not cut the record short
        try:
            outcome = runner.run(chosen)
        finally:
            if status is not None:
                status.clear()
            for line in surger.restore_all() if surger is not None else ():  # moves a second Ctrl-C abandoned
                click.echo(line, err=True)
        results = outcome.results
        moved_from.update(r.candidate.pod.node_name for r in results if r.ok)
        if any(not r.ok for r in results):
            code = errors.ERROR
        by = interrupts.signal_name(outcome.signum) if outcome.signum is not None else None
        if outcome.interrupted:
            code = interrupts.exit_code(outcome.signum) if outcome.signum is not None else errors.INTERRUPTED
        if report:
            report.evictions(results, interrupted=outcome.interrupted, exit_code=code,
                             interrupted_by=by if outcome.interrupted else None)
    if not structured:
        click.echo("")
        click.echo(runner.evictor.results_table(results, paint))
    click.echo(results_summary(results, outcome.interrupted, by), err=True)
    landings = None
    if mode == "evict" and opts.acting.wait_landing and not outcome.interrupted:
        landings = landings_doc(conn, plan, placement, results, nodes, opts.acting.timeout)
        if landings is not None:
            if report:
                report.doc["landings"] = landings
            if not structured:
                click.echo("")
                click.echo(landings_text(landings, paint))
            else:
                click.echo(landings_summary(landings), err=True)
    return Acted(code, results, runner, landings)
