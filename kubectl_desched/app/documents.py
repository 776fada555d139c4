"""The documents a run writes: the -o json/yaml plan's metadata, and what --report records of the run."""

from __future__ import annotations

from typing import Any

import click

from kubectl_desched import __version__
from kubectl_desched.app.after_action import nodes_planned, record
from kubectl_desched.app.loading import Loaded
from kubectl_desched.app.options import Options, OutputOptions
from kubectl_desched.app.plan_identity import plan_identity
from kubectl_desched.evictors.choose import settings_doc
from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.framework.policy_decoder import Policy
from kubectl_desched.model.metrics import PROMETHEUS
from kubectl_desched.ui import formats
from kubectl_desched.ui.measurements import measurements
from kubectl_desched.ui.report import Report, policy_doc


def plan_meta(policy: Policy, loaded: Loaded, mode: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubectl-desched/v1",
        "kind": "Plan",
        "version": __version__,
        "source": loaded.state.source,
        "scope": loaded.scope_text,
        "policy": {"kind": policy.kind, "source": policy.source,
                   "profiles": [{"name": p.name, "deschedule": [u.spec.name for u in p.deschedule],
                                 "balance": [u.spec.name for u in p.balance],
                                 "filter": [u.spec.name for u in p.filters]} for p in policy.profiles]},
        "mode": mode,
        "respectPDBs": policy.limits.respect_pdbs,
        "keepFutile": policy.limits.keep_futile,
        "cordon": policy.limits.cordon,
        "surge": policy.limits.surge,
        "maxPerWorkload": policy.limits.per_workload,
        "identity": plan_identity(policy, loaded),
    }


def emit(doc: dict[str, Any], output: str, view: OutputOptions | None = None) -> None:
    """Every -o format but the tables (ui/formats.py), --sort-by and --no-headers applied."""
    view = view or OutputOptions(output)
    # kubectl ends a jsonpath template's output where the template ends (no newline of its own)
    nl = not output.startswith("jsonpath=")
    text = formats.emit(doc, output, view.no_headers, view.sort_by)
    if isinstance(text, str):
        click.echo(text, nl=nl)
        return
    # -o json: bytes as they come (no text copy, no whole copy of the plan), in writes of about 1 MiB
    batch: list[bytes] = []
    size = 0
    for piece in text:
        batch.append(piece)
        size += len(piece)
        if size >= 1 << 20:
            click.echo(b"".join(batch), nl=False)
            batch, size = [], 0
    click.echo(b"".join([*batch, b"\n" if nl else b""]), nl=False)


def describe_run(report: Report, opts: Options, policy: Policy, loaded: Loaded, mode: str,
                  plan: EvictionPlan) -> None:
    conn, acting = loaded.conn, opts.acting
    report.doc.update({
        "cluster": {"server": conn.server, "context": conn.context} if conn else None,
        "source": loaded.state.source, "scope": loaded.scope_text, "mode": mode,
        "evictor": acting.evictor,
        "pacing": {"maxInFlight": acting.max_in_flight, "interval": acting.interval, "waitReady": acting.wait_ready,
                   "timeout": acting.timeout, "recordEvents": acting.record_events,
                   "gracePeriod": acting.grace_period},
        "policy": policy_doc(policy), "planErrors": list(plan.errors),
    })
    report.doc.update(settings_doc(acting))
    report.candidates(plan.candidates, plan.placement if plan.candidates else None)
    report.doc.update(nodes_planned(plan, plan.placement if plan.candidates else None))
    if plan.cluster.extra.get(PROMETHEUS):  # what the plan measured the nodes by, as read
        report.doc["measurements"] = measurements(plan.cluster)


def write_report(report: Report) -> None:
    report.doc.update(record(report.doc))  # the after-action view: per pod and per node
    try:
        report.write()
    except OSError as e:
        click.echo(f"error: --report {report.path}: {e.strerror or e}", err=True)
