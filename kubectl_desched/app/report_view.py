"""`kubectl desched report FILE`: a --report file as a person reads it, per pod and per node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from kubectl_desched import errors
from kubectl_desched.app.after_action import pct_cells, record
from kubectl_desched.safeload import MAX_YAML_SNAPSHOT_CHARS, InputError, json_value, read_file
from kubectl_desched.sanitize import LINE_LIMIT, one_line
from kubectl_desched.term.tables import plain_table


def read_report(path: str) -> dict[str, Any]:
    name = "<stdin>" if path == "-" else path
    doc = json_value(read_file(path, MAX_YAML_SNAPSHOT_CHARS), name, MAX_YAML_SNAPSHOT_CHARS)
    if not isinstance(doc, Mapping) or doc.get("kind") != "Report" or doc.get("apiVersion") != "kubectl-desched/v1":
        raise InputError(f"{name}: not a kubectl-desched/v1 Report (what --report FILE writes)")
    out = dict(doc)
    if not isinstance(out.get("pods"), list) or not isinstance(out.get("nodes"), list):
        out.update(record(out))  # a report written before these sections existed
    return out


def _text(value: Any) -> str:
    """A value from the file as one bounded line: a report is input like any other."""
    return "" if value is None else one_line(value, LINE_LIMIT)


def report_text(doc: Mapping[str, Any]) -> str:
    cluster = doc.get("cluster") or {}
    where = _text(cluster.get("server")) or _text(doc.get("source")) or "?"
    summary = doc.get("summary") or {}
    out = [f"Command:  kubectl desched {' '.join(_text(a) for a in doc.get('arguments') or ())}",
           f"Cluster:  {where}" + (f" (context {_text(cluster['context'])})" if cluster.get("context") else ""),
           f"Mode:     {_text(doc.get('mode'))}, {_text(doc.get('startedAt'))} to {_text(doc.get('finishedAt'))}",
           f"Exit:     {_text(summary.get('exitCode', '-'))}"
           + (f"; {_text(doc['error'])}" if doc.get("error") else "")]
    plan = doc.get("plan") or {}
    if plan:
        ident = plan.get("identity") or {}
        by = (ident.get("madeBy") or {}).get("username")
        out.append(f"Plan:     {_text(plan.get('file'))}, made {_text(ident.get('madeAt'))}"
                   + (f" by {_text(by)}" if by else "") + f", {_text(plan.get('candidates'))} candidate(s)")
    out.append("")
    rows = [[_text(p.get("namespace")), _text(p.get("pod")), _text(p.get("node")),
             _text(p.get("result")) + (" (surge)" if p.get("method") == "surge" else ""),
             _text(p.get("estimated")) or "-", _text(p.get("landed")) or "-", _text(p.get("why"))]
            for p in doc.get("pods") or ()]
    out.append(f"Pods ({len(rows)} planned):")
    out.append(plain_table(rows, ["NAMESPACE", "POD", "NODE", "RESULT", "ESTIMATED", "LANDED", "WHY"])
               if rows else "  none")
    cordons = doc.get("cordons") or ()
    if cordons:
        out += ["", "Cordoned first (--cordon):"]
        for c in cordons:
            if not isinstance(c, Mapping):
                continue
            if c.get("empty"):
                out.append(f"  {_text(c.get('node'))}: emptied, stays cordoned")
            else:
                done = "uncordoned" if c.get("uncordoned") else f"NOT uncordoned ({_text(c.get('error'))})"
                out.append(f"  {_text(c.get('node'))}: {len(c.get('staying') or ())} pod(s) stayed, {done}")
    nodes = doc.get("nodes") or ()
    if nodes:
        out += ["", "Nodes (requests as % of allocatable: before -> estimated after | measured after):"]
        table = []
        for n in nodes:
            before, estimated, after = (pct_cells(n.get(k)) for k in ("before", "estimated", "after"))
            table.append([_text(n.get("name"))] + [f"{b} -> {e} | {a}" for b, e, a in zip(before, estimated, after,
                                                                                            strict=True)])
        out.append(plain_table(table, ["NODE", "CPU", "MEMORY", "PODS"]))
    return "\n".join(out)


def show(path: str) -> int:
    click.echo(report_text(read_report(path)))
    return errors.DONE
