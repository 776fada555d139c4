"""The scheduler's predicates that descheduling needs: node selectors and required node affinity,
taints, and whether a pod's requests fit a node. Pure functions over the lean model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_desched.model import Node, Pod
from kubectl_desched.state import ClusterState


def _expr_matches(expr: Mapping[str, Any], value: str | None) -> bool:
    op = expr.get("operator")
    values = expr.get("values") or []
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and values:
        try:
            a, b = int(value), int(values[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def node_selector_term_matches(term: Mapping[str, Any], node: Node) -> bool:
    """All expressions of one term; an empty term matches nothing (as in the scheduler)."""
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False
    for e in exprs:
        if not _expr_matches(e, node.labels.get(e.get("key", ""))):
            return False
    for f in fields:
        value = node.name if f.get("key") == "metadata.name" else None
        if not _expr_matches(f, value):
            return False
    return True


def required_node_affinity(pod: Pod) -> list[Mapping[str, Any]] | None:
    na = (pod.affinity or {}).get("nodeAffinity") or {}
    req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not req:
        return None
    return list(req.get("nodeSelectorTerms") or [])


def pod_matches_node_selector(pod: Pod, node: Node) -> bool:
    """spec.nodeSelector and required node affinity (any term) both hold."""
    for k, v in pod.node_selector.items():
        if node.labels.get(k) != v:
            return False
    terms = required_node_affinity(pod)
    if terms is None:
        return True
    return any(node_selector_term_matches(t, node) for t in terms)


def untolerated_taint(pod: Pod, node: Node, effects: tuple[str, ...] = ("NoSchedule", "NoExecute")) -> str | None:
    for t in node.taints:
        if t.effect in effects and not pod.tolerates(t):
            return str(t)
    return None


def why_not_fit(pod: Pod, node: Node, state: ClusterState) -> str | None:
    """Why the pod could not be scheduled on the node now, or None if it could."""
    if node.unschedulable:
        return "unschedulable"
    if not node.ready:
        return "not ready"
    if not pod_matches_node_selector(pod, node):
        return "node selector or affinity does not match"
    taint = untolerated_taint(pod, node)
    if taint:
        return f"taint {taint} not tolerated"
    used = state.requested(node.name)
    for name, want in pod.requests.items():
        if want <= 0:
            continue
        free = node.allocatable.get(name, 0.0) - used.get(name, 0.0)
        if want > free:
            return f"insufficient {name}"
    if used.get("pods", 0.0) + 1 > node.allocatable.get("pods", 0.0):
        return "too many pods"
    return None
