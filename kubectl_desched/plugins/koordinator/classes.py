"""Koordinator's view of pods and nodes, as koord-descheduler reads it: priority classes (koord-prod, -mid,
-batch, -free), QoS classes (LSE, LSR, LS, BE, SYSTEM), eviction and deletion costs, and a node's raw
allocatable. Used by LowNodeLoad to classify prod pods and to order evictions."""

from __future__ import annotations

from collections.abc import Mapping

from kubectl_desched.errors import UsageError
from kubectl_desched.model.objects import Node, Pod
from kubectl_desched.model.quantity import resource_value

PRIORITY_LABEL = "koordinator.sh/priority-class"
QOS_LABEL = "koordinator.sh/qosClass"
EVICTION_COST = "scheduling.koordinator.sh/eviction-cost"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
RAW_ALLOCATABLE = "node.koordinator.sh/raw-allocatable"

PROD, MID, BATCH, FREE = "koord-prod", "koord-mid", "koord-batch", "koord-free"
# spec.priority bands that imply a class when the label is absent
_PRIORITY_BANDS = ((9000, 9999, PROD), (7000, 7999, MID), (5000, 5999, BATCH), (3000, 3999, FREE))
_QOS_NAMES = {"LSE", "LSR", "LS", "BE", "SYSTEM"}
_QOS_FROM_KUBE = {"Guaranteed": "LSR", "Burstable": "LS", "BestEffort": "BE"}

# Eviction order: a lower rank goes first.
_PRIORITY_RANK = {FREE: 1, BATCH: 2, MID: 3, PROD: 4, "": 5}
_KOORD_QOS_RANK = {"BE": 1, "LS": 2, "LSR": 3, "LSE": 4, "SYSTEM": 4, "": 5}
_KUBE_QOS_RANK = {"BestEffort": 1, "Burstable": 2, "Guaranteed": 3}


def qos_class(pod: Pod) -> str:
    label = pod.labels.get(QOS_LABEL, "")
    return label if label in _QOS_NAMES else _QOS_FROM_KUBE.get(pod.qos, "")


def priority_class(pod: Pod) -> str:
    """The label when valid, else the band spec.priority falls in, else derived from the QoS class."""
    label = pod.labels.get(PRIORITY_LABEL)
    if label in _PRIORITY_RANK and label:
        return label
    if label is None and pod.priority is not None:
        for low, high, name in _PRIORITY_BANDS:
            if low <= pod.priority <= high:
                return name
    qos = qos_class(pod)
    if qos in ("SYSTEM", "LSE", "LSR", "LS"):
        return PROD
    return BATCH if qos == "BE" else ""


def is_prod(pod: Pod) -> bool:
    return priority_class(pod) == PROD


def _cost(pod: Pod, key: str) -> int:
    """An int32 annotation; a malformed value counts as 0, as Kubernetes and Koordinator read it."""
    text = pod.annotations.get(key)
    if not text or not (text == "0" or text[0] == "-" or "1" <= text[0] <= "9"):
        return 0
    try:
        value = int(text, 10)
    except ValueError:
        return 0
    return value if -(2**31) <= value < 2**31 else 0


def priority_key(pod: Pod) -> tuple[int, int, int, int, int, int]:
    """The comparisons koord-descheduler makes before usage and age, lowest first."""
    return (
        _PRIORITY_RANK[priority_class(pod)],
        pod.priority or 0,
        _KUBE_QOS_RANK.get(pod.qos, 3),
        _KOORD_QOS_RANK[qos_class(pod)],
        _cost(pod, DELETION_COST),
        _cost(pod, EVICTION_COST),
    )


def raw_allocatable(node: Node) -> Mapping[str, float]:
    """Allocatable before Koordinator's amplification, when the node carries it; malformed falls back."""
    text = node.annotations.get(RAW_ALLOCATABLE)
    if not text:
        return node.allocatable
    from kubectl_desched import safeload  # with yaml: loaded only when a node has the annotation

    try:
        raw = safeload.json_value(text, RAW_ALLOCATABLE)  # bounded: an annotation of a snapshot nobody vouched for
        values = {str(k): resource_value(str(k), v) for k, v in raw.items()}
        return node.allocatable if any(v < 0 for v in values.values()) else values
    except (ValueError, TypeError, AttributeError, UsageError):
        return node.allocatable
