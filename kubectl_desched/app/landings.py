"""Closing the loop after the evictions: where each replacement was estimated to land and where the scheduler put
it, and the nodes as measured afterwards beside the plan's estimate."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from kubectl_desched.evictors.base import EvictionResult
from kubectl_desched.framework.placement import Placement
from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.interrupts import Interrupted
from kubectl_desched.model.objects import Node, Pod
from kubectl_desched.model.quantity import fmt_pct
from kubectl_desched.term.color import Painter
from kubectl_desched.term.tables import plain_table
from kubectl_desched.ui.plan_view import RESOURCES, node_rows, percent_of

if TYPE_CHECKING:
    from kubectl_desched.kube.config import Connection
    from kubectl_desched.kube.landings import Evicted, Landed
    from kubectl_desched.model.state import ClusterState


# Module-level stand-ins that import on first call (and that tests can replace).
def wait(conn: Connection, evicted: list[Evicted], known: set[str], timeout: float) -> dict[int, Landed]:
    from kubectl_desched.kube.landings import wait_for_landings
    return wait_for_landings(conn, evicted, known, timeout)


def read_nodes(conn: Connection, names: list[str]) -> ClusterState:
    from kubectl_desched.kube.live import read_cluster
    return read_cluster(conn, node_names=names)


# Labels a pod gets that its replacement may not share: where it runs (the PodTopologyLabels admission copies its
# node's topology labels onto a pod when it is bound) and which replica it is.
PER_POD = ("topology.kubernetes.io/", "kubernetes.io/hostname", "statefulset.kubernetes.io/pod-name",
           "apps.kubernetes.io/pod-index")


def template_labels(pod: Pod, plan: EvictionPlan) -> dict[str, str]:
    """The labels the pod's replacement will have too, to list it by: those its replicas share, without the ones a
    pod gets for where it runs or which replica it is."""
    shared = dict(pod.labels)
    for sibling in plan.cluster.owner_pods(pod):
        shared = {k: v for k, v in shared.items() if sibling.labels.get(k) == v}
    return {k: v for k, v in shared.items() if not k.startswith(PER_POD)}


def landings_doc(conn: Connection, plan: EvictionPlan, placement: Placement | None, results: Sequence[EvictionResult],
                 nodes: list[Node], timeout: float) -> dict[str, Any] | None:
    """Waits (at most `timeout` seconds, Ctrl-C ends the wait) for the replacements of the evicted pods to be
    bound, then reads the nodes they left and landed on. None when no pod was evicted."""
    from kubectl_desched.kube.landings import Evicted

    gone = [r for r in results if r.gone and r.candidate.pod.controller is not None]
    if not gone:
        return None
    evicted = [Evicted(p.namespace, p.name, p.controller.uid if p.controller else "", template_labels(p, plan),
                       r.started or r.finished or plan.cluster.now, p.controller.kind if p.controller else "",
                       p.controller.name if p.controller else "", p.uid) for r in gone for p in (r.candidate.pod,)]
    known = {p.uid for p in plan.cluster.pods}
    if sys.stderr.isatty():
        click.echo(f"waiting up to {timeout:g}s for {len(gone)} replacement(s) to be scheduled "
                   "(Ctrl-C stops waiting; --no-wait-landing skips this)", err=True)
    stopped = False
    try:
        found = wait(conn, evicted, known, timeout)
    except (KeyboardInterrupt, Interrupted):  # the evictions are done: only the wait ends
        found, stopped = {}, True
    skipped = {i: x.skipped for i, x in found.items() if x.skipped}
    if len(skipped) == len(gone):
        return None  # not one pod was evicted and can be replaced: nothing to say about landings
    found = _interchange(gone, {i: x for i, x in found.items() if not x.skipped}, placement)
    # A replacement on a node another pod of its controller left is a move undone too (a swap), whichever
    # evicted pod it is paired with.
    left_by: dict[str, set[str]] = {}
    for r in gone:
        ref = r.candidate.pod.controller
        left_by.setdefault(ref.uid if ref else "", set()).add(r.candidate.pod.node_name)
    rows: list[dict[str, Any]] = []
    involved: set[str] = set()
    for i, r in enumerate(gone):
        pod = r.candidate.pod
        if i in skipped:
            continue
        d = placement.destinations.get(id(pod)) if placement else None
        landed = found.get(i)
        where = landed.node if landed else ""
        estimated = d.node if d else None
        tied = list(d.tied) if d else []
        rows.append({"namespace": pod.namespace, "pod": pod.name, "from": pod.node_name, "estimated": estimated,
                     "tiedWith": tied, "replacement": landed.pod if landed else None, "landed": where or None,
                     "asEstimated": bool(where) and (where == estimated or where in tied),
                     "landedBack": where == pod.node_name or (
                         bool(where) and pod.controller is not None and where in left_by[pod.controller.uid])})
        involved.update(n for n in (pod.node_name, estimated, where) if n)
    measured: dict[str, dict[str, float]] = {}
    after = None
    if involved and not stopped:
        try:
            after = read_nodes(conn, sorted(involved))
        except (KeyboardInterrupt, Interrupted):
            stopped = True
    if after is not None:
        for name in sorted(involved):
            node = after.nodes.get(name)
            if node is not None:
                used = after.requested(name)
                measured[name] = {r: percent_of(used.get(r, 0.0), node, r) for r in RESOURCES}
    planned = {row["name"]: row for row in node_rows(plan, nodes, placement)}
    node_docs = [{"name": name, "before": planned[name]["now"] if name in planned else None,
                  "estimated": planned[name]["after"] if name in planned else None, "measured": measured[name]}
                 for name in sorted(measured)]
    as_estimated = sum(1 for r in rows if r["asEstimated"])
    bound = sum(1 for r in rows if r["landed"])
    return {"waitedFor": len(rows), "bound": bound, "asEstimated": as_estimated,
            "landedBack": sum(1 for r in rows if r["landedBack"]), "stopped": stopped, "pods": rows,
            "notWaitedFor": [{"namespace": gone[i].candidate.pod.namespace, "pod": gone[i].candidate.pod.name,
                              "why": why} for i, why in sorted(skipped.items())],
            "nodes": node_docs}


def landings_text(doc: dict[str, Any], paint: Painter) -> str:
    rows = []
    for r in doc["pods"]:
        est = r["estimated"] or "Pending"
        if len(r["tiedWith"]) > 1:
            est += f" (tied: {','.join(r['tiedWith'])})"
        landed = r["landed"] or ("Pending" if r["replacement"] else "not seen")
        mark = "" if r["asEstimated"] else paint("MISS", "red")
        if r["landedBack"]:
            mark = paint("BACK ON ITS NODE", "red")
        rows.append([r["namespace"], r["pod"], r["from"], est, landed, r["replacement"] or "", mark])
    out = [paint("Landings (estimated, and where the scheduler put each replacement):", None, bold=True),
           plain_table(rows, ["NAMESPACE", "POD", "FROM", "ESTIMATED", "LANDED", "REPLACEMENT", ""])]
    out.append(landings_summary(doc))
    if doc["nodes"]:
        out.append(paint("Nodes after (requests as % of allocatable: before -> estimated | measured):", None,
                         bold=True))
        table = []
        for n in doc["nodes"]:
            cells = [n["name"]]
            for res in RESOURCES:
                measured = fmt_pct(n["measured"][res])
                if n["estimated"] is None:
                    cells.append(f"? -> ? | {measured}")
                    continue
                est = fmt_pct(n["estimated"][res])
                cell = f"{fmt_pct(n['before'][res])} -> {est} | {measured}"
                cells.append(cell if est == measured else paint(cell, "yellow"))
            table.append(cells)
        out.append(plain_table(table, ["NODE", "CPU", "MEMORY", "PODS"]))
    return "\n".join(out)


def _interchange(gone: Sequence[EvictionResult], found: dict[int, Landed],
                 placement: Placement | None) -> dict[int, Landed]:
    """A controller's replacements are interchangeable: its new pods are not made for one evicted pod each, and
    their creation times (whole seconds) cannot say which came first. So within one controller the landings are
    paired with the evicted pods that were estimated there (or tied there) first; a StatefulSet's replacement
    keeps its pod's name and stays paired with it."""
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(gone):
        ref = r.candidate.pod.controller
        if ref is not None and ref.kind != "StatefulSet" and i in found:
            groups.setdefault(ref.uid, []).append(i)
    out = dict(found)
    for indexes in groups.values():
        pool = [found[i] for i in indexes]
        left = list(indexes)
        for wanted in ("estimated", "tied"):
            for i in list(left):
                d = placement.destinations.get(id(gone[i].candidate.pod)) if placement else None
                nodes = ({d.node} if wanted == "estimated" else set(d.tied)) if d is not None else set()
                hit = next((x for x in pool if x.node and x.node in nodes), None)
                if hit is not None:
                    out[i] = hit
                    pool.remove(hit)
                    left.remove(i)
        for i, x in zip(left, pool, strict=True):
            out[i] = x
    return out


def landings_summary(doc: dict[str, Any]) -> str:
    n, bound, right, back = doc["waitedFor"], doc["bound"], doc["asEstimated"], doc["landedBack"]
    text = f"{right} of {n} replacement(s) landed where estimated (a tied node counts)"
    if bound < n:
        text += f"; {n - bound} not scheduled " + ("when the wait was stopped" if doc["stopped"] else "in time")
    text += "; " + (f"{back} landed back on its own node" if back else "none landed back on its own node")
    return text
