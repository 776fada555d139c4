"""The cluster state plugins read: nodes, pods and PDBs with the indexes plugins need. Read-only once built, so
one state serves any number of plans; the evictions a plan makes live in its overlay (framework/overlay.py)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from kubectl_desched.model.objects import Node, Pod, PodDisruptionBudget, extra_from_json

_MINOR = re.compile(r"v1\.(\d+)\.")


class ClusterState:
    """The cluster as a plugin reads it, `self.handle.state`: nodes, pods and PDBs with the indexes plugins need,
    read-only (a plan's own evictions are left out of what `pods_on_node` and `owner_pods` return)."""

    now: datetime
    """The one clock every age in a run is measured from (timezone-aware UTC): `--now` sets it for a snapshot."""
    server_version: str
    """The API server's gitVersion ("v1.36.3"), "" when not known (a snapshot)."""
    nodes: dict[str, Node]
    """Every node read, by name, in scope or not (a plugin is given the Ready ones in scope)."""
    pods: list[Pod]
    """Every pod read."""
    pdbs: list[PodDisruptionBudget]
    """Every PodDisruptionBudget read."""
    source: str
    """Where the state was read from: "cluster URL (context NAME)", "file NAME", "" in tests."""

    def __init__(
        self,
        nodes: Iterable[Node],
        pods: Iterable[Pod],
        pdbs: Iterable[PodDisruptionBudget] = (),
        *,
        source: str = "",
        extra: Mapping[str, list[Any]] | None = None,
        now: datetime | None = None,
        server_version: str = "",
    ) -> None:
        self.now = now or datetime.now(UTC)
        self.server_version = server_version
        self.nodes = {n.name: n for n in nodes}
        self.pods = list(pods)
        self.pdbs = list(pdbs)
        self.source = source
        self.extra = extra or {}
        self._by_node: dict[str, list[Pod]] = defaultdict(list)
        self._by_owner: dict[str, list[Pod]] = defaultdict(list)
        # namespace -> name -> pod, made on the first find_pod (explain pod): a balance never looks a pod up by
        # name, and "namespace/name" keys for every pod were 13 MiB at 150,000 pods.
        self._by_name: dict[str, dict[str, Pod]] | None = None
        for p in self.pods:
            if p.node_name:
                self._by_node[p.node_name].append(p)
            for owner in p.owners:  # every reference, as upstream's minReplicas index keeps them
                self._by_owner[owner.uid or f"{p.namespace}/{owner.kind}/{owner.name}"].append(p)
        self._pdbs_by_ns: dict[str, list[PodDisruptionBudget]] = defaultdict(list)
        for b in self.pdbs:
            self._pdbs_by_ns[b.namespace].append(b)
        self._requested: dict[str, dict[str, float]] = {}
        # pdbs_for by (namespace, labels object): replicas share one pooled labels mapping (model/objects.py), so a
        # namespace's selectors run once per distinct label set instead of once per pod and call (2.2 million
        # selector calls for 150,000 pods). The entry keeps the mapping, so its id cannot be reused meanwhile.
        self._pdbs_of_labels: dict[tuple[str, int], tuple[Mapping[str, str], list[PodDisruptionBudget]]] = {}

    @property
    def extra(self) -> Mapping[str, list[Any]]:
        """Other kinds a source read, by kind: the kinds plugins read as their model (model.Namespace,
        model.NodeMetric, ...), others as parsed."""
        return self._extra

    @extra.setter
    def extra(self, extra: Mapping[str, list[Any]]) -> None:
        # Objects given as parsed JSON (tests, benchmarks) become the model once, here, not in each plugin.
        self._extra = {kind: [extra_from_json(kind, o) if isinstance(o, Mapping) else o for o in objs]
                       for kind, objs in extra.items()}

    @property
    def server_minor(self) -> int | None:
        """The Kubernetes minor version the cluster runs (the placement estimate follows its scheduler), if known:
        the API server's, else (a snapshot) the newest its kubelets report, which never run ahead of it."""
        if m := _MINOR.match(self.server_version):
            return int(m.group(1))
        minors = [int(m.group(1)) for n in self.nodes.values() if (m := _MINOR.match(n.kubelet_version))]
        return max(minors, default=None)

    @property
    def from_file(self) -> bool:
        """A snapshot: its objects were read at some unknown earlier time."""
        return self.source.startswith("file ")

    # reading
    def pods_on_node(self, node: str) -> list[Pod]:
        """Pods bound to the node, without the ones the plan already evicts."""
        return list(self._by_node.get(node, []))

    def all_pods_on_node(self, node: str) -> list[Pod]:
        """Pods bound to the node, with the ones the plan already evicts."""
        return list(self._by_node.get(node, []))

    def find_pod(self, namespace: str, name: str) -> Pod | None:
        """The pod of that name in that namespace, or None."""
        if self._by_name is None:
            by_name: dict[str, dict[str, Pod]] = defaultdict(dict)
            for p in self.pods:
                by_name[p.namespace][p.name] = p  # the last of a repeated name, as a snapshot read in order gives
            self._by_name = by_name
        return self._by_name.get(namespace, {}).get(name)

    def owner_pods(self, pod: Pod) -> list[Pod]:
        """Pods that name the pod's only owner among their owner references, without the ones the plan already
        evicts; empty for a pod with no owner or several (upstream's minReplicas skips those)."""
        if len(pod.owners) != 1:
            return []
        owner = pod.owners[0]
        pods = self._by_owner.get(owner.uid or f"{pod.namespace}/{owner.kind}/{owner.name}", [])
        return list(pods)

    def pdbs_for(self, pod: Pod) -> list[PodDisruptionBudget]:
        """The PodDisruptionBudgets that cover the pod."""
        in_namespace = self._pdbs_by_ns.get(pod.namespace)
        if not in_namespace:
            return []
        key = (pod.namespace, id(pod.labels))
        cached = self._pdbs_of_labels.get(key)
        if cached is None or cached[0] is not pod.labels:
            cached = (pod.labels, [b for b in in_namespace if b.covers(pod)])
            self._pdbs_of_labels[key] = cached
        return list(cached[1])

    def requested(self, node: str) -> dict[str, float]:
        """Summed requests of the node's non-terminal pods, with `pods` counting them (cached)."""
        cached = self._requested.get(node)
        if cached is None:
            cached = {"pods": 0.0}
            for p in self.pods_on_node(node):
                if p.is_terminal:
                    continue
                cached["pods"] += 1
                for k, v in p.requests.items():
                    cached[k] = cached.get(k, 0.0) + v
            self._requested[node] = cached
        return cached

    def requested_before(self, node: str) -> dict[str, float]:
        """Like requested(), ignoring planned evictions: the node as it is now."""
        out = {"pods": 0.0}
        for p in self._by_node.get(node, ()):
            if not p.is_terminal:
                out["pods"] += 1
                for k, v in p.requests.items():
                    out[k] = out.get(k, 0.0) + v
        return out
