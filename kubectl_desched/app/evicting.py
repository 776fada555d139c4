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
    from kubectl_desched.evictors.cordon import Cordons
    # Progress goes to stderr in every format: stdout stays the one document -o json/yaml promises.
    runner, status = build_runner(opts, conn, mode, policy, quiet=False)
    emptying = sorted(plan.emptying)
    preflight(runner, plan.candidates, opts, report, cordon_with=conn if emptying and mode == "evict" else None)
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
    cordons = Cordons(conn, lambda m: click.echo(m, err=True)) if emptying and mode == "evict" else None
    if emptying and cordons is None:
        click.echo(f"would cordon {', '.join(emptying)} first (--cordon; not in a server dry run)", err=True)
    try:
        return _act(opts, conn, mode, plan, placement, nodes, report, structured, paint, runner, status, chosen,
                    cordons)
    finally:
        if cordons is not None:
            with interrupts.deferred():  # every path: the nodes not emptied are uncordoned, each said
                records = cordons.finish()
            if report:
                report.doc["cordons"] = records


def _act(opts: Options, conn: Connection, mode: str, plan: EvictionPlan, placement: Placement | None,
         nodes: list[Any], report: Report | None, structured: bool, paint: Painter, runner: EvictionRunner,
         status: Any, chosen: list[Any], cordons: Cordons | None) -> Acted:
    code = errors.DONE
    surger = getattr(runner.evictor, "surger", None)
    if cordons is not None:  # a signal here raises: act() uncordons what was cordoned
        cordons.cordon(sorted(plan.emptying))
    with interrupts.deferred():  # a signal just before or after acting must not cut the record short
        try:
            outcome = runner.run(chosen)
        finally:
            if status is not None:
                status.clear()
            for line in surger.restore_all() if surger is not None else ():  # moves a second Ctrl-C abandoned
                click.echo(line, err=True)
        results = outcome.results
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
