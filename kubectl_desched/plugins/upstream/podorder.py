"""The order upstream's plugins try a node's pods in (its SortPodsBasedOnPriorityLowToHigh), shared by the
node-utilization and inter-pod anti-affinity plugins."""

from __future__ import annotations

from collections.abc import Iterable

from kubectl_desched.model.objects import Pod
from kubectl_desched.plugins.upstream.defaultevictor import PREFER_NO_EVICTION_ANNOTATION

_QOS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}


def eviction_order(pods: Iterable[Pod]) -> list[Pod]:
    """Lowest priority first (none before any), then BestEffort < Burstable < Guaranteed, then pods without
    the prefer-no-eviction annotation (whatever noEvictionPolicy says); namespace/name break the remaining
    ties so live and snapshot runs agree."""
    return sorted(pods, key=lambda p: (p.priority is not None, p.priority or 0, _QOS_RANK.get(p.qos, 2),
                                       PREFER_NO_EVICTION_ANNOTATION in p.annotations, p.namespace, p.name))
