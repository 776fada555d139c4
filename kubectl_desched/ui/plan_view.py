"""Turn a plan into what the user reads: tables for people, one JSON/YAML document for programs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubectl_desched.evictors.base import EvictionResult, timestamp
from kubectl_desched.framework.placement import Placement, node_warnings
from kubectl_desched.framework.plan import Candidate, EvictionPlan
from kubectl_desched.model.metrics import PROMETHEUS
from kubectl_desched.model.objects import Node, Pod
from kubectl_desched.model.quantity import fmt_pct, format_resource
from kubectl_desched.term.color import Painter
from kubectl_desched.term.tables import plain_table
from kubectl_desched.ui import node_bars
from kubectl_desched.ui.emptying import emptying_docs
from kubectl_desched.ui.formats import LazyItems
from kubectl_desched.ui.formats import sort_key as output_order
from kubectl_desched.ui.measurements import measurements
from kubectl_desched.ui.node_bars import BarView

RESOURCES = ("cpu", "memory", "pods")
_CLASS_COLOR = {"over-utilized": "red", "under-utilized": "green", "unschedulable": "yellow"}
def _owner(pod: Pod) -> str:
    o = pod.controller
    return f"{o.kind}/{o.name}" if o else "<none>"


def _requests(pod: Pod) -> str:
    return ",".join(f"{r}={format_resource(r, pod.requests[r])}" for r in ("cpu", "memory") if r in pod.requests) \
        or "<none>"


def plan_summary(plan: EvictionPlan) -> str:
    """The plan in one line, first: what a long table below holds."""
    n, nodes = len(plan.candidates), len({c.pod.node_name for c in plan.candidates})
    surged = sum(1 for c in plan.candidates if c.method == "surge")
    verb = "move" if surged else "evict"
    parts = [f"Plan: {n} pod{'s' if n != 1 else ''} to {verb} from {nodes} node{'s' if nodes != 1 else ''}"
             + (f" ({surged} replacement first, --surge)" if surged else "")]
    if plan.emptying:
        empty = sum(1 for d in emptying_docs(plan) if d["empty"])
        parts.append(f"{empty} of {len(plan.emptying)} cordoned node(s) left empty")
    if plan.kept_by_pdb:
        parts.append(f"{len(plan.kept_by_pdb)} kept because a PodDisruptionBudget would refuse them")
    if plan.kept_futile:
        parts.append(f"{len(plan.kept_futile)} kept: the move would change nothing")
    refused = sum(1 for c in plan.candidates if c.pdb_refusals)
    if refused:
        parts.append(f"{refused} the API will refuse (PodDisruptionBudgets, --no-respect-pdbs)")
    # Every warning the plan text prints: the candidates' (listed once each) and the nodes'.
    warnings = len({w for c in plan.candidates for w in c.warnings}) + sum(map(len, _node_warnings(plan).values()))
    if warnings:
        parts.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
    return "; ".join(parts)


def _node_warnings(plan: EvictionPlan) -> dict[str, list[str]]:
    placement = plan.placement
    if placement is None or not plan.candidates:
        return {}
    return node_warnings(placement, plan.candidates, plan.state.nodes, plan.targets)


def candidates_table(plan: EvictionPlan, wide: bool = False, placement: Placement | None = None, *,
                     headers: bool = True, labels: bool = False, sort_key: str | None = None) -> str:
    """The candidates, in eviction order unless --sort-by orders them (the evictions keep the plan's order)."""
    titles = ["NAMESPACE", "POD", "NODE", "PLUGIN", "REASON"]
    methods = any(c.method != "evict" for c in plan.candidates)  # a METHOD column only where it says something
    if methods:
        titles.insert(4, "METHOD")
    if wide:
        titles[4:4] = ["OWNER", "PRIORITY", "QOS", "REQUESTS"] + (["DESTINATION"] if placement else [])
    if labels:
        titles.append("LABELS")
    rows = []
    marks: dict[str, tuple[int, list[str]]] = {}  # warning text -> its number and the pods it is about
    shown = plan.candidates
    if sort_key:
        key = output_order(sort_key)
        shown = sorted(shown, key=lambda c: key(candidate_doc(c, placement)))
    for c in shown:
        p = c.pod
        reason = c.reason
        for w in c.warnings:  # long; listed once under the table, with a mark in each row it is about
            number, pods = marks.setdefault(w, (len(marks) + 1, []))
            pods.append(f"{p.namespace}/{p.name}")
            reason += f" [{number}]"
        if c.method == "surge":
            reason += f"; {c.why_surge}"
        row: list[Any] = [p.namespace, p.name, p.node_name, c.plugin, *([c.method] if methods else []), reason]
        if wide:
            at = titles.index("OWNER")
            row[at:at] = [_owner(p), "" if p.priority is None else p.priority, p.qos, _requests(p)]
            if placement:
                d = placement.of(c)
                row.insert(at + 4, d.text if d else "")
        if labels:
            row.append(",".join(f"{k}={v}" for k, v in sorted(p.labels.items())) or "<none>")
        rows.append(row)
    table = plain_table(rows, titles if headers else (), numeric=[titles.index("PRIORITY")] if wide else ())
    notes = [f"  [{number}] {', '.join(pods)}: {w}" for w, (number, pods) in marks.items()]
    return table + ("\nWarnings:\n" + "\n".join(notes) if notes else "")


def node_rows(plan: EvictionPlan, nodes: Iterable[Node], placement: Placement | None = None) -> list[dict[str, Any]]:
    """With a placement estimate, "after" on requests also counts the replacements that would land."""
    state = plan.state
    warned = _node_warnings(plan) if placement is not None else {}
    moving: dict[str, int] = {}
    landing: dict[str, int] = {}
    for c in plan.candidates:
        moving[c.pod.node_name] = moving.get(c.pod.node_name, 0) + 1
        d = placement.of(c) if placement else None
        if d is not None and d.node is not None:
            landing[d.node] = landing.get(d.node, 0) + 1
    out = []
    for n in nodes:
        reports = plan.node_reports.get(n.name, [])
        row: dict[str, Any] = {
            "name": n.name,
            "class": {r.plugin: r.klass for r in reports},
            "detail": {r.plugin: r.detail for r in reports},
            "schedulable": not n.unschedulable,
            "evictions": moving.get(n.name, 0),
            "landing": landing.get(n.name, 0),  # replacements the placement estimate puts here
            # Still counted in `now` and `after` until they are gone, as upstream counts them.
            "terminating": sum(p.terminating and not p.is_terminal for p in state.all_pods_on_node(n.name)),
            "warnings": warned.get(n.name, []),
        }
        metric = plan.metric_reports.get(n.name)
        if metric is not None:  # a query's share of the node, beside its requests
            row["measured"] = {"source": metric.source, "query": metric.query, "plugin": metric.plugin,
                               "value": metric.value,
                               "percent": int(metric.value * 100) if metric.value is not None else None}
        measured = plan.usage_reports.get(n.name)
        if measured is not None:
            row["basis"] = measured.basis
            row["now"] = {r: round(measured.now.get(r, 0.0), 2) for r in RESOURCES}
            row["after"] = {r: round(measured.after.get(r, 0.0), 2) for r in RESOURCES}
        else:
            before = state.requested_before(n.name)
            after = placement.used.get(n.name, {}) if placement else state.requested(n.name)
            row["basis"] = "requests"
            row["now"] = {r: percent_of(before.get(r, 0.0), n, r) for r in RESOURCES}
            row["after"] = {r: percent_of(after.get(r, 0.0), n, r) for r in RESOURCES}
        out.append(row)
    return out


def nodes_heading(rows: list[dict[str, Any]]) -> str:
    """What the percentages are: requests, or what a plugin measured (rows marked * where both appear)."""
    bases = sorted({r["basis"] for r in rows})
    metric = next((r["measured"]["source"] for r in rows if r.get("measured")), "")
    if bases == ["requests"] or not bases:
        moves = " and the estimated landings" if any(r.get("landing") for r in rows) else ""
        if metric:  # the query measures nodes only: nothing is taken off for a moved pod
            return (f"Nodes (requests as % of allocatable, now -> after the evictions{moves}; {metric.upper()}: "
                    "the query's share of the node as read, which upstream balances by):")
        return f"Nodes (requests as % of allocatable, now -> after the evictions{moves}):"
    measured = [b for b in bases if b != "requests"]
    text = f"Nodes ({' / '.join(measured)} as % of allocatable, now -> after the evictions"
    return text + ("; * marks nodes shown by requests):" if "requests" in bases else "):")


def percent_of(v: float, n: Node, r: str) -> float:
    cap = n.allocatable.get(r, 0.0)
    return round(v / cap * 100.0, 2) if cap else 0.0


def nodes_table(rows: list[dict[str, Any]], paint: Painter, all_nodes: bool = False,
                headers: bool = True, bars: BarView | None = None) -> tuple[str, int]:
    """Nodes that matter (classified other than appropriately, or losing pods); all with all_nodes. With `bars`,
    a bar after the CPU and MEMORY columns where the table still fits (ui/node_bars.py), and the line that reads
    them under it."""
    shown, hidden = [], 0
    listed: list[dict[str, Any]] = []  # the rows shown, for their bars
    measured = any(x["basis"] != "requests" for x in rows)  # then nodes shown by requests are marked
    # A query's share of each node (Prometheus), as upstream counts it: a whole percent
    metric_title = next((x["measured"]["source"].upper() for x in rows if x.get("measured")), "")
    for r in rows:
        classes = sorted(set(r["class"].values()))
        interesting = r["evictions"] or r.get("landing") or r.get("terminating") or \
            any(c != "appropriately utilized" for c in classes)
        if not (all_nodes or interesting):
            hidden += 1
            continue
        label = ",".join(classes) or "-"
        mixed = measured and r["basis"] == "requests"
        cells = [r["name"] + ("*" if mixed else ""), paint(label, _CLASS_COLOR.get(label))]
        for res in RESOURCES:
            now, after = fmt_pct(r["now"][res]), fmt_pct(r["after"][res])
            cells.append(now if now == after else f"{now} -> {after}")
        if metric_title:
            got = r.get("measured") or {}
            cells.append(f"{got['percent']}%" if got.get("percent") is not None else "-")
        cells += [r["evictions"] or "", r.get("landing") or "", r.get("terminating") or ""]
        shown.append(cells)
        listed.append(r)
    titles = ["NODE", "CLASS", "CPU", "MEMORY", "PODS", *([metric_title] if metric_title else []),
              "EVICT", "LAND", "TERMINATING"]
    for col in (len(titles) - 1, len(titles) - 2):  # LAND and TERMINATING only when they say something
        if not any(row[col] for row in shown):
            titles.pop(col)
            for row in shown:
                row.pop(col)
    chosen = node_bars.layout(bars, node_bars.table_width(shown, titles if headers else ()), listed) \
        if bars is not None and shown else None
    if bars is not None and chosen is not None:
        for res in reversed(chosen.resources):  # each after its own column
            at = titles.index(res.upper()) + 1
            titles.insert(at, "")
            for row, drawn in zip(shown, node_bars.column(bars, chosen, res, listed, paint), strict=True):
                row.insert(at, drawn)
    counts = [i for i, t in enumerate(titles) if t in ("EVICT", "LAND", "TERMINATING")]
    table = plain_table(shown, titles if headers else (), numeric=counts)
    if bars is not None and chosen is not None:
        table += "\n" + node_bars.legend(bars, chosen, listed)
    return table, hidden


def candidate_doc(c: Candidate, placement: Placement | None = None) -> dict[str, Any]:
    p = c.pod
    d = placement.of(c) if placement else None
    where: dict[str, Any] = {} if d is None else {"destination": {"node": d.node, "estimate": True, "why": d.why,
                                                  "tiedWith": list(d.tied), "recreated": d.recreated}}
    doc = {
        "namespace": p.namespace, "pod": p.name, "uid": p.uid, "resourceVersion": p.resource_version,
        "node": p.node_name, "plugin": c.plugin, "profile": c.profile, "reason": c.reason, "warnings": c.warnings,
        "futile": c.futile, "method": c.method, "owner": _owner(p),
        "priority": p.priority, "qos": p.qos,
        "requests": {k: format_resource(k, v) for k, v in p.requests.items()}, "labels": dict(p.labels),
    }
    doc.update(where)  # after the rest: the estimate comes last
    return doc


def result_doc(r: EvictionResult) -> dict[str, Any]:
    p = r.candidate.pod
    return {"namespace": p.namespace, "pod": p.name, "uid": p.uid, "node": p.node_name, "plugin": r.candidate.plugin,
            "method": r.candidate.method, "result": r.outcome, "message": r.message,
            "startedAt": timestamp(r.started),
            "finishedAt": timestamp(r.finished), "attempts": r.attempts, "notes": list(r.notes)}


def document(plan: EvictionPlan, nodes: list[Node], meta: dict[str, Any],
             results: list[EvictionResult] | None = None, placement: Placement | None = None, *,
             lazy: bool = False) -> dict[str, Any]:
    """The plan as -o json/yaml write it. `lazy`: the candidates are made as they are written (output.LazyItems),
    for -o json; the document is then only for output.emit."""
    doc: dict[str, Any] = dict(meta)
    doc["candidates"] = LazyItems(plan.candidates, lambda c: candidate_doc(c, placement)) if lazy else \
        [candidate_doc(c, placement) for c in plan.candidates]
    doc["nodes"] = node_rows(plan, nodes, placement)
    if plan.cluster.extra.get(PROMETHEUS):
        doc["measurements"] = measurements(plan.cluster)
    doc["kept"] = [{"namespace": p.namespace, "pod": p.name, "uid": p.uid, "node": p.node_name, "plugin": plugin,
                    "why": why, "kind": kind}
                   for kind, kept in (("pdb", plan.kept_by_pdb), ("futile", plan.kept_futile))
                   for p, plugin, why in kept.values()]
    if plan.emptying:
        doc["emptying"] = emptying_docs(plan)
    doc["messages"] = [{"plugin": p, "message": m} for p, m in plan.messages]
    doc["errors"] = list(plan.errors)
    if results is not None:
        doc["evictions"] = [result_doc(r) for r in results]
    return doc
