"""kubectl-desched out-of-tree plugin: RemovePodsFromCordonedNodes."""

from kubectl_desched_cordoned.removepodsfromcordonednodes import (
    UNSCHEDULABLE_TAINT,
    RemovePodsFromCordonedNodes,
    RemovePodsFromCordonedNodesArgs,
)

__all__ = ["UNSCHEDULABLE_TAINT", "RemovePodsFromCordonedNodes", "RemovePodsFromCordonedNodesArgs"]
