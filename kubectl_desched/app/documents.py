"""The documents a run writes: the -o json/yaml plan's metadata, and what --report records of the run."""

from __future__ import annotations

import json
from typing import Any

import click
import yaml

from kubectl_desched import __version__
from kubectl_desched.app.loading import Loaded
from kubectl_desched.evictors.choose import evictor_name, settings_doc
from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.options import Options
from kubectl_desched.policy import Policy
from kubectl_desched.report import Report, policy_doc


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
        "maxPerWorkload": policy.limits.per_workload,
    }


def emit(doc: dict[str, Any], output: str) -> None:
    if output == "json":
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False), nl=False)


def describe_run(report: Report, opts: Options, policy: Policy, loaded: Loaded, mode: str,
                  plan: EvictionPlan) -> None:
    conn, acting = loaded.conn, opts.acting
    report.doc.update({
        "cluster": {"server": conn.server, "context": conn.context} if conn else None,
        "source": loaded.state.source, "scope": loaded.scope_text, "mode": mode,
        "evictor": evictor_name(acting),
        "pacing": {"maxInFlight": acting.max_in_flight, "interval": acting.interval, "waitReady": acting.wait_ready,
                   "timeout": acting.timeout, "recordEvents": acting.record_events,
                   "gracePeriod": acting.grace_period},
        "policy": policy_doc(policy), "planErrors": list(plan.errors),
    })
    report.doc.update(settings_doc(acting))
    report.candidates(plan.candidates)


def write_report(report: Report) -> None:
    try:
        report.write()
    except OSError as e:
        click.echo(f"error: --report {report.path}: {e.strerror or e}", err=True)
