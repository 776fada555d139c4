"""The after-action part of --report: per pod what was planned and what became of it (evicted, or why not; where its
replacement was estimated and where it landed), and per node its utilization before and after. Worked out from the
report's own sections when it is written, so `kubectl desched report FILE` reads one shape."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_desched.framework.placement import Placement
from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.ui.plan_view import RESOURCES, node_rows


def nodes_planned(plan: EvictionPlan, placement: Placement | None) -> dict[str, dict[str, dict[str, float]]]:
    """The candidates' nodes and their estimated destinations: `before`, as read before anything was evicted, and
    `estimated`, after the evictions and the estimated landings (requests as % of allocatable). A run that sends
    nothing (a snapshot, a dry run, a refusal) has the estimate too, as its plan showed it."""
    names = {c.pod.node_name for c in plan.candidates}
    if placement is not None:
        names |= {d.node for c in plan.candidates if (d := placement.of(c)) is not None and d.node}
    nodes = [plan.cluster.nodes[n] for n in sorted(names) if n in plan.cluster.nodes]
    rows = node_rows(plan, nodes, placement)
    return {"nodesBefore": {row["name"]: row["now"] for row in rows},
            "nodesEstimated": {row["name"]: row["after"] for row in rows}}


def _key(entry: Mapping[str, Any]) -> tuple[str, str]:
    return str(entry.get("namespace")), str(entry.get("pod"))


def pods_record(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per pod the plan named: its result, or why it was not evicted, and its landing."""
    evictions = {_key(e): e for e in doc.get("evictions") or ()}
    landings = doc.get("landings") or {}
    landed = {_key(p): p for p in landings.get("pods") or ()}
    not_waited = {_key(p): p["why"] for p in landings.get("notWaitedFor") or ()}
    confirmation = doc.get("confirmation") or {}
    chosen = set(confirmation.get("chosen") or ())
    rows: list[dict[str, Any]] = []
    for c in doc.get("candidates") or ():
        key = _key(c)
        e = evictions.get(key)
        row: dict[str, Any] = {"namespace": key[0], "pod": key[1], "uid": c.get("uid"), "node": c.get("node"),
                               "plugin": c.get("plugin"), "planned": True}
        if c.get("method") == "surge":  # an eviction's row keeps the shape it had before --surge
            row["method"] = "surge"
        if e is not None:
            row["result"], row["why"] = e.get("result"), e.get("message") or ""
        elif confirmation.get("refused"):
            row["result"], row["why"] = "not confirmed", confirmation["refused"]
        elif confirmation and f"{key[0]}/{key[1]}" not in chosen:
            row["result"], row["why"] = "not chosen", "left out at the prompt"
        elif doc.get("error"):
            row["result"], row["why"] = "not evicted", doc["error"]
        else:
            row["result"], row["why"] = "not evicted", f"mode {doc.get('mode')}: nothing is sent"
        lands = landed.get(key)
        destination = c.get("destination") or {}
        row["estimated"] = lands["estimated"] if lands else destination.get("node")
        row["landed"] = lands["landed"] if lands else None
        row["replacement"] = lands["replacement"] if lands else None
        if key in not_waited:
            row["landingNotWaitedFor"] = not_waited[key]
        rows.append(row)
    for s in doc.get("stale") or ():
        rows.append({"namespace": s["namespace"], "pod": s["pod"], "uid": s.get("uid"), "node": s.get("node"),
                     "plugin": s.get("plugin"), "planned": True, "result": s.get("kind", "stale"), "why": s["why"],
                     "estimated": None, "landed": None, "replacement": None})
    return rows


def nodes_record(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per node: before (as read), estimated after, and measured after (once the landing wait read them again)."""
    before: Mapping[str, Any] = doc.get("nodesBefore") or {}
    estimated: Mapping[str, Any] = doc.get("nodesEstimated") or {}
    measured = {n["name"]: n for n in (doc.get("landings") or {}).get("nodes") or ()}
    out = []
    for name in sorted(set(before) | set(measured)):
        m = measured.get(name) or {}
        out.append({"name": name, "before": before.get(name) or m.get("before"),
                    "estimated": m.get("estimated") or estimated.get(name), "after": m.get("measured")})
    return out


def record(doc: Mapping[str, Any]) -> dict[str, Any]:
    return {"pods": pods_record(doc), "nodes": nodes_record(doc)}


def pct_cells(values: Mapping[str, float] | None) -> list[str]:
    from kubectl_desched.model.quantity import fmt_pct

    return [fmt_pct(values[r]) if values and r in values else "-" for r in RESOURCES]
