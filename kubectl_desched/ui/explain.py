"""Why each pod would or would not move, in the same words the candidates table uses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubectl_desched.framework.plan import Candidate, EvictionPlan
from kubectl_desched.framework.predicates import why_not_node_fit
from kubectl_desched.model.objects import Node, Pod, PodDisruptionBudget
from kubectl_desched.model.state import ClusterState
from kubectl_desched.term.tables import plain_table
from kubectl_desched.ui.measurements import measurements


class Verdicts:
    def __init__(self, plan: EvictionPlan) -> None:
        self.plan = plan
        self._candidates: dict[int, Candidate] = {id(c.pod): c for c in plan.candidates}

    def of(self, pod: Pod) -> tuple[str, str]:
        """("evict", plugin: reason) or ("keep", the protection, filter or plugin note that keeps it)."""
        c = self._candidates.get(id(pod))
        if c is not None:
            warn = "".join(f" [warning: {w}]" for w in c.warnings)
            if c.method == "surge":
                return "move", f"{c.plugin}: {c.reason}; replacement first (--surge): {c.why_surge}{warn}"
            return "evict", f"{c.plugin}: {c.reason}{warn}"
        kept = self._before_plugins(pod)
        if kept:
            return "keep", kept
        maybe = self.plan.maybe.get(id(pod))
        if maybe:
            said = "; ".join(f"{plugin}: {text}" for plugin, text in dict.fromkeys(maybe))
            refused = self._budget_refusal(pod)
            # whatever the other nodes' room, the Eviction API would refuse it: the budget decides, not the estimate
            return ("keep", f"{refused}; {said}") if refused else ("maybe", said)
        notes = self.plan.notes.get(id(pod))
        if notes:
            return "keep", "; ".join(f"{plugin}: {text}" for plugin, text in dict.fromkeys(notes))
        which = "no plugin evaluated on this node alone" if self.plan.not_evaluated else "no enabled plugin"
        if pod.is_terminal:
            return "keep", f"phase {pod.phase}: already finished, {which} selects it"
        return "keep", f"{which} selects it"

    def _before_plugins(self, pod: Pod) -> str | None:
        """What keeps the pod whatever any plugin says: being deleted already, the scope, a protection."""
        if pod.terminating and not pod.is_terminal:  # before any scope or protection: nothing else applies
            return "terminating: already being deleted (still counted on its node until it is gone)"
        for ev in self.plan.evictors:
            why = ev.why_kept(pod)
            if why:
                return f"protected: {why}"
        return None

    def decides(self, pod: Pod) -> tuple[str, str]:
        """The verdict with what decides it first: for a pod a plugin picked but the plan kept, the futile move or
        the budget that keeps it, ahead of every plugin's notes."""
        verdict, why = self.of(pod)
        plan = self.plan
        futile, budget = plan.kept_futile.get(id(pod)), plan.kept_by_pdb.get(id(pod))
        if verdict != "keep" or not (futile or budget) or self._before_plugins(pod):
            return verdict, why
        parts = []
        if futile:
            parts.append(f"the move would change nothing: {futile[2]}; picked by {futile[1]}")
        if budget:
            parts.append(f"{self._budget_refusal(pod) or budget[2]}; picked by {budget[1]}")
        return verdict, "; ".join(parts)

    def _budget_refusal(self, pod: Pod) -> str | None:
        """Why the Eviction API would refuse this pod now, where the plan respects budgets; a budget that allows
        no disruption at all is named with its healthy counts."""
        plan = self.plan
        if not plan.limits.respect_pdbs:
            return None
        refused = plan.pdb_refusal(pod)
        if refused is None:
            return None
        blocking = next((b for b in plan.state.pdbs_for(pod) if b.fresh and b.disruptions_allowed <= 0), None)
        return _no_disruption(blocking) if blocking is not None else refused


def _no_disruption(pdb: PodDisruptionBudget) -> str:
    counts = ""
    if pdb.current_healthy is not None and pdb.desired_healthy is not None:
        counts = f" ({pdb.current_healthy} healthy, {pdb.desired_healthy} required)"
    return f"PodDisruptionBudget {pdb.name} allows no disruption{counts}: the API would refuse the eviction"


def node_status(node: Node, considered: bool) -> str:
    parts = ["Ready" if node.ready else "NotReady", "unschedulable" if node.unschedulable else "schedulable"]
    if node.taints:
        parts.append("taints " + ", ".join(map(str, node.taints)))
    if not considered:
        parts.append("not considered (not Ready or outside the node selection)")
    return "; ".join(parts)


def explain_node_doc(plan: EvictionPlan, node: Node, considered: bool,
                     namespaces: Sequence[str] = ()) -> dict[str, Any]:
    """namespaces: the ones -n narrowed the explanation to (none: the node's pods in every namespace)."""
    verdicts = Verdicts(plan)
    pods = sorted(plan.state.all_pods_on_node(node.name), key=lambda p: (p.namespace, p.name))
    return {
        "node": node.name,
        "status": node_status(node, considered),
        "namespaces": sorted(namespaces) or None,
        "plugins": [{"plugin": r.plugin, "class": r.klass, "detail": r.detail}
                    for r in plan.node_reports.get(node.name, [])],
        "measured": _measured(plan, node.name),
        "read": "node" if plan.one_node else "cluster",
        "estimated": list(plan.estimated),  # classified from this node alone; their "maybe" verdicts are estimates
        "notEvaluated": list(plan.not_evaluated),  # need the other nodes' pods: run with --full
        "pods": [dict(zip(("namespace", "pod", "verdict", "why"), (p.namespace, p.name, *verdicts.of(p)), strict=True))
                 for p in pods],
    }


def _measured(plan: EvictionPlan, node: str) -> list[dict[str, Any]]:
    """Each Prometheus query's value for the node, whether or not a plugin ran on it (explain's quick read
    leaves LowNodeUtilization out, but the query was read)."""
    out = []
    for m in measurements(plan.cluster):
        value = m["values"].get(node)
        out.append({"source": m["source"], "query": m["query"], "evaluatedAt": m["evaluatedAt"], "value": value,
                    "percent": int(value * 100) if value is not None else None})
    return out


def explain_node_text(doc: dict[str, Any]) -> str:
    lines = [f"Node {doc['node']}: {doc['status']}"]
    if doc.get("namespaces"):
        ns = ",".join(doc["namespaces"])
        lines.append(f"  Only pods in namespace {ns} are judged (-n {ns}); without -n, every pod on the node is")
    if not doc["plugins"]:
        lines.append("  no plugin classified this node")
    for r in doc["plugins"]:
        lines.append(f"  {r['plugin']}: {r['class']}: {r['detail']}")
    for m in doc.get("measured") or ():
        got = f"{m['value']:g} ({m['percent']}%)" if m["value"] is not None else "no sample for this node"
        lines.append(f"  {m['source']} {m['query']} at {m['evaluatedAt']}: {got}")
    if doc.get("estimated") or doc.get("notEvaluated"):
        lines.append("  Only this node and its pods were read:")
        if doc.get("estimated"):
            lines.append(f"    estimated from this node alone (MAYBE verdicts): {', '.join(doc['estimated'])}")
        if doc.get("notEvaluated"):
            lines.append(f"    not evaluated, they need every node's pods: {', '.join(doc['notEvaluated'])}")
        lines.append(f"    kubectl desched explain node {doc['node']} --full reads the whole cluster and evaluates all")
    if doc.get("emptying"):
        lines.append(f"  {doc['emptying'][0].upper()}{doc['emptying'][1:]}")
    lines.append("")
    rows = [[p["namespace"], p["pod"], p["verdict"].upper(), p["why"]] for p in doc["pods"]]
    lines.append(plain_table(rows, ["NAMESPACE", "POD", "VERDICT", "WHY"]) if rows
                 else "No pods on this node.")
    return "\n".join(lines)


def _landing(plan: EvictionPlan, pod: Pod) -> dict[str, Any] | None:
    """Where the pod's replacement would likely land, from the plan's own estimate: its destination where the plan
    evicts it, else the estimator's answer with the plan's moves done (asked, then taken back)."""
    placement = plan.placement
    dest = placement.destinations.get(id(pod)) if placement is not None else None
    planned = dest is not None
    if dest is None:
        if plan.one_node or pod.node_name not in plan.cluster.nodes:
            return None  # one node alone cannot place it; an unscheduled pod has no replacement to place
        estimator = plan.estimator
        dest = estimator.move(pod)
        estimator.undo()
    return {"planned": planned, "node": dest.node, "tied": [n for n in dest.tied if n != dest.node],
            "recreated": dest.recreated, "why": dest.why}


def _landing_text(doc: dict[str, Any], moves: int) -> str:
    land = doc["landing"]
    lead = "Its replacement would" if land["planned"] else "If evicted, its replacement would"
    if not land["recreated"]:
        return f"If evicted: {land['why']}"  # no controller, or its DaemonSet's own node
    if land["node"] is None:
        return f"{lead} stay Pending: {land['why']}"
    where = land["node"] + (", its own node" if land["node"] == doc["node"] else "")
    if land["tied"]:
        where += f" (tied with {', '.join(land['tied'])})"
    after = f", once the plan's {moves} eviction(s) are done" if moves and not land["planned"] else ""
    return f"{lead} likely land on: {where}{after}"


def _fit_summary(pod: Pod, state: ClusterState, skip: Sequence[str] = (), limit: int = 5) -> dict[str, Any]:
    """Which other ready nodes could take the pod now, and why the others could not, grouped by reason; the nodes
    the placement estimate names (skip) are left to it."""
    fits: list[str] = []
    refused: dict[str, list[str]] = {}
    for n in sorted(state.nodes.values(), key=lambda n: n.name):
        if n.name == pod.node_name or n.name in skip:
            continue
        why = "not ready" if not n.ready else why_not_node_fit(pod, n, state)
        if why is None:
            fits.append(n.name)
        else:
            refused.setdefault(why, []).append(n.name)
    return {
        "fits": fits,
        "refused": [{"reason": r, "count": len(ns), "nodes": ns[:limit]}
                    for r, ns in sorted(refused.items(), key=lambda kv: -len(kv[1]))],
    }


def _barred(plan: EvictionPlan, pod: Pod, plugin: str) -> str | None:
    """What keeps every plugin of this one's profile from selecting the pod: out of scope, or protected by a
    filter; None when nothing does."""
    evictors = [ev for ev in plan.evictors if plugin in ev.plugins] or plan.evictors[:1]
    for ev in evictors:
        out = ev.scope(pod)
        if out:
            return f"out of scope: {out}"
        kept = ev.why_kept(pod)
        if kept:
            return f"protected: {kept}"
    return None


def explain_pod_doc(plan: EvictionPlan, pod: Pod, plugin_names: list[str]) -> dict[str, Any]:
    verdicts = Verdicts(plan)
    verdict, why = verdicts.of(pod)
    checks = []
    for ev in plan.evictors:
        checks.append({"profile": ev.profile, "check": "scope", "result": ev.scope(pod) or "passes"})
        for f in ev.filters:
            checks.append({"profile": ev.profile, "check": f"{f.name} filter", "result": f.filter(pod) or "passes"})
        for f in ev.pre_filters:
            checks.append({"profile": ev.profile, "check": f"{f.name} preEvictionFilter",
                           "result": f.pre_eviction_filter(pod) or "passes"})
    notes = plan.notes.get(id(pod), ())
    reports = plan.node_reports.get(pod.node_name, [])
    plugins = []
    for name in plugin_names:
        chosen = [c for c in plan.candidates if c.pod is pod and c.plugin == name]
        said = list(dict.fromkeys(t for p, t in notes if p == name))
        klass = [r.klass for r in reports if r.plugin == name]
        barred = _barred(plan, pod, name)
        if chosen:
            result = f"selects it: {chosen[0].reason}"
        elif said:
            result = "; ".join(said)
        elif barred:  # whether or not its rule matched: a plugin skips a protected pod, before or after its rule
            result = f"cannot select it ({barred})" + (f"; its node is {klass[0]}" if klass else "")
        else:
            result = "does not select it" + (f" (its node is {klass[0]})" if klass else "")
        plugins.append({"plugin": name, "result": result})
    owner = pod.controller
    landing = _landing(plan, pod)
    named = [landing["node"], *landing["tied"]] if landing and landing["node"] else []
    return {
        "pod": pod.name, "namespace": pod.namespace, "node": pod.node_name, "uid": pod.uid,
        "owner": f"{owner.kind}/{owner.name}" if owner else None, "priority": pod.priority, "qos": pod.qos,
        "phase": pod.phase, "verdict": verdict, "why": why, "decides": verdicts.decides(pod)[1],
        "checks": checks, "plugins": plugins, "landing": landing, "plannedEvictions": len(plan.candidates),
        "otherNodes": _fit_summary(pod, plan.state, named),
        "surge": _surge_note(plan, pod, verdict),
    }


def _surge_note(plan: EvictionPlan, pod: Pod, verdict: str) -> str | None:
    """Without --surge, for a pod an eviction would hurt (its budget refuses it, or it is its workload's only
    pod): whether --surge could move it, replacement first, and if not why."""
    if plan.limits.surge or verdict == "move":
        return None
    kept = plan.kept_by_pdb.get(id(pod))
    hurt = kept[2] if kept else _only_pod_when_evicted(plan, pod) if verdict == "evict" else ""
    if not hurt:
        return None
    target = plan.surge_target(pod)
    if isinstance(target, str):
        return f"not movable with --surge: {target}"
    return (f"movable with --surge: Deployment {target.deployment} scaled {target.replicas} -> {target.replicas + 1} "
            "until its new pod is Ready, then back, so its ready pods never drop below the start")


def _only_pod_when_evicted(plan: EvictionPlan, pod: Pod) -> str:
    """For a candidate: whether it is its workload's only pod once the pods planned before it are gone. The
    plan's state hides every candidate, the pod too, so the siblings are the ones as read less those before it."""
    before: set[int] = set()
    for c in plan.candidates:
        if c.pod is pod:
            break
        before.add(id(c.pod))
    return plan.only_pod(pod, [p for p in plan.cluster.owner_pods(pod) if id(p) not in before])


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def explain_pod_text(doc: dict[str, Any]) -> str:
    owner = doc["owner"] or "no owner"
    prio = "no priority" if doc["priority"] is None else f"priority {doc['priority']}"
    lines = [f"Pod {doc['namespace']}/{doc['pod']} on {doc['node']}: {owner}, {prio}, {doc['qos']}, {doc['phase']}",
             f"Verdict: {doc['verdict'].upper()} - {doc['decides']}", "", "Filters:"]
    lines.append(_indent(plain_table([[c["check"], c["profile"], c["result"]] for c in doc["checks"]])))
    lines += ["", "Plugins:"]
    lines.append(_indent(plain_table([[p["plugin"], p["result"]] for p in doc["plugins"]])))
    lines.append("")
    if doc.get("surge"):
        lines.append(doc["surge"][0].upper() + doc["surge"][1:])
    if doc["landing"] is not None:
        lines.append(_landing_text(doc, doc["plannedEvictions"]))
    other = doc["otherNodes"]
    fits = other["fits"]
    shown = ", ".join(fits[:10]) + (f", ... ({len(fits)} in all)" if len(fits) > 10 else "")
    lines.append(f"Other nodes it fits now: {shown or 'none'}")
    for r in other["refused"]:
        more = f" and {r['count'] - len(r['nodes'])} more" if r["count"] > len(r["nodes"]) else ""
        lines.append(f"  {r['reason']}: {', '.join(r['nodes'])}{more}")
    return "\n".join(lines)
