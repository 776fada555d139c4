"""The cluster as a plan leaves it: a read-only ClusterState without the pods the plan has chosen to evict, so a
pod one plugin plans to evict is gone for the next. The plan owns it (EvictionPlan.state); the state under it is
never written, so it can be planned on again without a reset."""

from __future__ import annotations

from kubectl_desched.model.objects import Pod
from kubectl_desched.model.state import ClusterState


class PlannedState(ClusterState):
    """Reads as a ClusterState; pods_on_node, owner_pods and requested leave out the planned pods."""

    def __init__(self, base: ClusterState) -> None:  # no super().__init__(): it shares the base's indexes
        self.__dict__.update(base.__dict__)  # the same nodes, pods and indexes: no copy, nothing rebuilt
        self.base = base
        self._planned: set[int] = set()
        self._requested = {}  # this overlay's own cache: its sums leave out the planned pods

    def pods_on_node(self, node: str) -> list[Pod]:
        pods = self.base.pods_on_node(node)
        return [p for p in pods if id(p) not in self._planned] if self._planned else pods

    def owner_pods(self, pod: Pod) -> list[Pod]:
        return [p for p in self.base.owner_pods(pod) if id(p) not in self._planned]

    def find_pod(self, namespace: str, name: str) -> Pod | None:
        return self.base.find_pod(namespace, name)  # planned pods too; the index, made once, is the base's

    def is_planned(self, pod: Pod) -> bool:
        return id(pod) in self._planned

    def plan(self, pod: Pod) -> None:
        """Take the pod out of what the next readers see."""
        self._planned.add(id(pod))
        self._requested.pop(pod.node_name, None)
