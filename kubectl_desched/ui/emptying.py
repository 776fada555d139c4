"""--cordon's nodes as the plan leaves them: which end empty (only DaemonSet and mirror pods left: the node can be
removed) and the room that frees, and which keep pods, each with why it stays."""

from __future__ import annotations

from typing import Any

from kubectl_desched.framework.plan import EvictionPlan, holds_node
from kubectl_desched.model.quantity import format_resource
from kubectl_desched.ui.explain import Verdicts


def emptying_docs(plan: EvictionPlan) -> list[dict[str, Any]]:
    """Per cordoned node: whether the plan empties it, what that frees, and the pods that stay with why."""
    if not plan.emptying:
        return []
    verdicts = Verdicts(plan)
    out = []
    for name in sorted(plan.emptying):
        node = plan.cluster.nodes[name]
        staying = [p for p in plan.state.pods_on_node(name) if holds_node(p)]
        moved = sum(1 for c in plan.candidates if c.pod.node_name == name)
        doc: dict[str, Any] = {"node": name, "plugin": plan.emptying[name], "empty": not staying, "moved": moved,
                               "frees": None, "staying": []}
        if not staying:
            doc["frees"] = {r: format_resource(r, node.allocatable[r]) for r in ("cpu", "memory")
                            if r in node.allocatable}
        for p in sorted(staying, key=lambda p: (p.namespace, p.name)):
            doc["staying"].append({"namespace": p.namespace, "pod": p.name, "why": verdicts.decides(p)[1]})
        out.append(doc)
    return out


def emptying_lines(docs: list[dict[str, Any]]) -> list[str]:
    """The plan text's section: one line a node, and one a pod that stays."""
    if not docs:
        return []
    lines = ["Cordoned before their first move (--cordon), so no replacement lands there:"]
    for d in docs:
        if d["empty"]:
            frees = ", ".join(f"{v} {r}" for r, v in (d["frees"] or {}).items())
            if d["moved"]:
                lines.append(f"  {d['node']}: ends empty after {d['moved']} move(s), removable (frees {frees}); stays "
                             "cordoned")
            else:
                lines.append(f"  {d['node']}: already empty, removable (frees {frees}); uncordoned after the moves")
            continue
        lines.append(f"  {d['node']}: {len(d['staying'])} pod(s) stay, so it is uncordoned after the moves:")
        lines += [f"    {s['namespace']}/{s['pod']}: {s['why']}" for s in d["staying"]]
    return lines


def node_note(plan: EvictionPlan, name: str) -> str | None:
    """explain node's line on emptying the node: what --cordon's plan leaves on it, or, without --cordon, that a
    plugin that empties nodes classes it so and --cordon would cordon it first."""
    if name in plan.emptying:
        d = next(d for d in emptying_docs(plan) if d["node"] == name)
        if d["empty"]:
            return f"removable after the plan (--cordon): cordoned first, it ends with no pod but DaemonSet and " \
                   f"mirror pods ({d['moved']} moved off)"
        return f"not removable after the plan (--cordon): {len(d['staying'])} pod(s) stay, so it is uncordoned " \
               "after the moves"
    node = plan.cluster.nodes.get(name)
    for ev in plan.evictors:
        for plugin in ev.plugins.values():
            klass = plugin.empties
            if klass and any(r.plugin == plugin.name and r.klass == klass for r in plan.node_reports.get(name, ())):
                if node is not None and node.unschedulable:  # --cordon never touches it, nor uncordons it
                    return f"{plugin.name} empties {klass} nodes: it is already unschedulable, so no replacement " \
                           "lands on it (--cordon leaves it as it is)"
                if plan.limits.cordon:
                    return f"{plugin.name} empties {klass} nodes, but planned no move: --cordon cordons nothing"
                return f"{plugin.name} empties {klass} nodes: with --cordon it is cordoned first, so its pods' " \
                       "replacements cannot land back on it (explain node --cordon says what would stay)"
    return None
