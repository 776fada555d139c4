"""The scheduler's predicates that descheduling needs: node selectors and required node affinity,
taints, and whether a pod's requests fit a node. Pure functions over the lean model."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kubectl_desched.model.label_selectors import Matcher, label_selector
from kubectl_desched.model.objects import Node, Pod, Taint, Toleration
from kubectl_desched.model.state import ClusterState


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


# --- Predicates the plugins and filters share: upstream's NodeFit (which also checks the
# pod's required anti-affinity against the node's pods and skips the resource check on the pod's own node),
# tolerations with the numeric Lt/Gt operators, preferred node affinity weights and pod anti-affinity terms.

_DECIMAL_INT = re.compile(r"0|-?[1-9][0-9]*")
_INT64 = 2**63


def _int64(text: str) -> int | None:
    if not _DECIMAL_INT.fullmatch(text):
        return None
    value = int(text)
    return value if -_INT64 <= value < _INT64 else None


def toleration_tolerates(tol: Toleration, taint: Taint) -> bool:
    """The API's matching rule, including the Lt and Gt operators (the taint's value compared as an integer
    with the toleration's); an unknown operator tolerates nothing."""
    if tol.effect and tol.effect != taint.effect:
        return False
    if tol.key and tol.key != taint.key:
        return False
    if tol.operator in ("", "Equal"):
        return tol.value == taint.value
    if tol.operator == "Exists":
        return True
    if tol.operator in ("Lt", "Gt"):
        limit, actual = _int64(tol.value), _int64(taint.value)
        if limit is None or actual is None:
            return False
        return actual < limit if tol.operator == "Lt" else actual > limit
    return False


def pod_tolerates_taint(pod: Pod, taint: Taint) -> bool:
    return any(toleration_tolerates(t, taint) for t in pod.tolerations)


def has_required_node_affinity(pod: Pod) -> bool:
    na = (pod.affinity or {}).get("nodeAffinity") or {}
    return na.get("requiredDuringSchedulingIgnoredDuringExecution") is not None


def preferred_node_affinity_terms(pod: Pod) -> list[Mapping[str, Any]]:
    na = (pod.affinity or {}).get("nodeAffinity") or {}
    return list(na.get("preferredDuringSchedulingIgnoredDuringExecution") or [])


def preferred_node_affinity_weight(pod: Pod, node: Node) -> int:
    """Sum of the weights of the pod's preferred node affinity terms that the node matches."""
    total = 0
    for term in preferred_node_affinity_terms(pod):
        if node_selector_term_matches(term.get("preference") or {}, node):
            total += int(term.get("weight") or 0)
    return total


def node_selector_mismatch(pod: Pod, node: Node) -> str | None:
    """Which of spec.nodeSelector and required node affinity the node no longer satisfies, or None."""
    for k, v in pod.node_selector.items():
        if node.labels.get(k) != v:
            return f"nodeSelector {k}={v}"
    terms = required_node_affinity(pod)
    if terms is not None and not any(node_selector_term_matches(t, node) for t in terms):
        return "required node affinity"
    return None


def required_anti_affinity_terms(pod: Pod) -> list[Mapping[str, Any]]:
    paa = (pod.affinity or {}).get("podAntiAffinity") or {}
    return list(paa.get("requiredDuringSchedulingIgnoredDuringExecution") or [])


def anti_affinity_namespaces(pod: Pod, term: Mapping[str, Any]) -> tuple[str, ...]:
    """The namespaces a term looks in: its `namespaces` list, else the pod's own. As upstream, a
    namespaceSelector is not evaluated."""
    names = term.get("namespaces") or []
    return tuple(sorted(set(names))) if names else (pod.namespace,)


def anti_affinity_matcher(term: Mapping[str, Any]) -> Matcher | None:
    """The term's label selector compiled; None when it is null (it then selects no pod). Raises ValueError
    for a selector that cannot be compiled."""
    raw = term.get("labelSelector")
    if raw is None:
        return None
    return label_selector(raw)


def describe_label_selector(raw: Mapping[str, Any] | None) -> str:
    """A LabelSelector in kubectl's string form: `app=db,tier in (a,b),!legacy`."""
    if raw is None:
        return "<none>"
    parts = [f"{k}={v}" for k, v in (raw.get("matchLabels") or {}).items()]
    for e in raw.get("matchExpressions") or []:
        key, op, values = e.get("key", ""), e.get("operator", ""), ",".join(map(str, e.get("values") or []))
        parts.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key,
                      "DoesNotExist": f"!{key}"}.get(op, f"{key} {op} ({values})"))
    return ",".join(parts) or "<all>"


def same_topology(a: Node, b: Node, key: str) -> bool:
    """Upstream's domain test: the same node always, else both nodes carry the key with equal values."""
    if a.name == b.name:
        return True
    va, vb = a.labels.get(key), b.labels.get(key)
    return va is not None and va == vb


def anti_affinity_conflict_on_node(pod: Pod, node: Node, pods_on_node: list[Pod]) -> str | None:
    """Whether placing the pod on the node breaks its own required anti-affinity with a pod already there
    (upstream checks only the node's own pods, and only when the node has the term's topologyKey label)."""
    for term in required_anti_affinity_terms(pod):
        try:
            matcher = anti_affinity_matcher(term)
        except ValueError as e:
            return f"invalid anti-affinity label selector: {e}"
        if matcher is None or term.get("topologyKey", "") not in node.labels:
            continue
        namespaces = anti_affinity_namespaces(pod, term)
        for other in pods_on_node:
            if other.name != pod.name and other.namespace in namespaces and matcher(other.labels):
                return f"anti-affinity with {other.key}"
    return None


def why_not_node_fit(pod: Pod, node: Node, state: ClusterState) -> str | None:
    """Upstream's NodeFit, in its order: schedulable, nodeSelector and required affinity, NoSchedule and
    NoExecute taints, the pod's anti-affinity with the node's pods, then requests against what is free (not
    checked on the node the pod already runs on). None when the pod fits."""
    if node.unschedulable:
        return "unschedulable"
    if not pod_matches_node_selector(pod, node):
        return "node selector or affinity does not match"
    for t in node.taints:
        if t.effect in ("NoSchedule", "NoExecute") and not pod_tolerates_taint(pod, t):
            return f"taint {t} not tolerated"
    if required_anti_affinity_terms(pod):
        others = [p for p in state.pods_on_node(node.name) if not p.is_terminal]
        conflict = anti_affinity_conflict_on_node(pod, node, others)
        if conflict:
            return conflict
    if pod.node_name != node.name:
        used = state.requested(node.name)
        for name, want in pod.requests.items():
            if name == "pods":
                continue
            if want > node.allocatable.get(name, 0.0) - used.get(name, 0.0):
                return f"insufficient {name}"
        if node.allocatable.get("pods", 0.0) - used.get("pods", 0.0) <= 0:
            return "too many pods"
    return None


def first_fitting_node(pod: Pod, nodes: list[Node], state: ClusterState) -> Node | None:
    """Upstream's PodFitsAnyNode (the pod's own node included): the first node the pod fits."""
    return next((n for n in nodes if why_not_node_fit(pod, n, state) is None), None)

