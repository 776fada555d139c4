"""Why each pod would or would not move, in the same words the candidates table uses."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from kubectl_desched.framework.plan import Candidate, EvictionPlan
from kubectl_desched.model import Node, Pod


class Verdicts:
    def __init__(self, plan: EvictionPlan) -> None:
        self.plan = plan
        self._candidates: dict[int, Candidate] = {id(c.pod): c for c in plan.candidates}

    def of(self, pod: Pod) -> tuple[str, str]:
        """("evict", plugin: reason) or ("keep", the protection, filter or plugin note that keeps it)."""
        c = self._candidates.get(id(pod))
        if c is not None:
            warn = "".join(f" [warning: {w}]" for w in c.warnings)
            return "evict", f"{c.plugin}: {c.reason}{warn}"
        for ev in self.plan.evictors:
            why = ev.why_kept(pod)
            if why:
                return "keep", f"protected: {why}"
        notes = self.plan.notes.get(id(pod))
        if notes:
            return "keep", "; ".join(f"{plugin}: {text}" for plugin, text in dict.fromkeys(notes))
        if pod.is_terminal:
            return "keep", f"phase {pod.phase}: not counted in utilization, no enabled plugin selects it"
        return "keep", "no enabled plugin selects it"


def node_status(node: Node, considered: bool) -> str:
    parts = ["Ready" if node.ready else "NotReady", "unschedulable" if node.unschedulable else "schedulable"]
    if node.taints:
        parts.append("taints " + ", ".join(map(str, node.taints)))
    if not considered:
        parts.append("not considered (not Ready or outside the node selection)")
    return "; ".join(parts)


def explain_node_doc(plan: EvictionPlan, node: Node, considered: bool) -> dict[str, Any]:
    verdicts = Verdicts(plan)
    pods = sorted(plan.state.all_pods_on_node(node.name), key=lambda p: (p.namespace, p.name))
    return {
        "node": node.name,
        "status": node_status(node, considered),
        "plugins": [{"plugin": r.plugin, "class": r.klass, "detail": r.detail}
                    for r in plan.node_reports.get(node.name, [])],
        "pods": [dict(zip(("namespace", "pod", "verdict", "why"), (p.namespace, p.name, *verdicts.of(p)), strict=True))
                 for p in pods],
    }


def explain_node_text(doc: dict[str, Any]) -> str:
    lines = [f"Node {doc['node']}: {doc['status']}"]
    if not doc["plugins"]:
        lines.append("  no plugin classified this node")
    for r in doc["plugins"]:
        lines.append(f"  {r['plugin']}: {r['class']}: {r['detail']}")
    lines.append("")
    rows = [[p["namespace"], p["pod"], p["verdict"].upper(), p["why"]] for p in doc["pods"]]
    lines.append(tabulate(rows, headers=["NAMESPACE", "POD", "VERDICT", "WHY"], tablefmt="plain") if rows
                 else "No pods on this node.")
    return "\n".join(lines)
