"""Extension points. Plugins read the cluster state through their Handle and ask the handle's Evictor
to evict; only evictors write to the cluster, and only after the user confirms."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from kubectl_desched.framework.flags import CliSurface
from kubectl_desched.model import Node, Pod
from kubectl_desched.state import ClusterState


@dataclass(frozen=True)
class EvictOptions:
    plugin: str
    reason: str = ""
    delete_options: Mapping[str, Any] | None = None


class Evictor(Protocol):
    """What a plugin asks before and when it picks a pod (upstream's Filter / PreEvictionFilter / Evict)."""

    def filter(self, pod: Pod) -> bool: ...

    def pre_eviction_filter(self, pod: Pod) -> bool: ...

    def evict(self, pod: Pod, options: EvictOptions) -> bool:
        """Plan the eviction; False when a filter or a limit stops it."""
        ...

    def node_limit_reached(self, node: str) -> bool: ...

    def total_limit_reached(self) -> bool: ...


class Handle(Protocol):
    """The services a plugin gets: the read-only state, its profile's evictor, and places to explain."""

    @property
    def state(self) -> ClusterState: ...

    @property
    def evictor(self) -> Evictor: ...

    def note(self, pod: Pod, text: str) -> None:
        """Record why this plugin looked at the pod and did not pick it (shown by explain)."""
        ...

    def report_node(self, node: str, klass: str, detail: str) -> None:
        """Record how this plugin classified a node (shown in the nodes table and by explain)."""
        ...

    def report_usage(self, node: str, basis: str, now: dict[str, float], after: dict[str, float]) -> None:
        """Record the node's utilization, now and after the planned moves, as this plugin measures it (percent
        of allocatable per resource), when that is not the pods' requests (shown in the nodes table)."""
        ...

    def report_targets(self, percent: dict[str, float]) -> None:
        """The request limits (percent of allocatable per resource) this plugin moves pods under: the placement
        estimate warns when a destination would end up above them."""
        ...

    def info(self, text: str) -> None:
        """Say something about the run as a whole, e.g. why nothing needs to move."""
        ...


class Plugin(ABC):
    """Every plugin has a unique name; `args_type` (a PluginArgs dataclass) holds its args, `cli` the flags that
    set them and its defaults from flags (framework/flags.py)."""

    name: ClassVar[str]
    args_type: ClassVar[type | None] = None
    description: ClassVar[str] = ""
    cli: ClassVar[CliSurface] = CliSurface()

    def __init__(self, args: Any, handle: Handle) -> None:
        self.args = args
        self.handle = handle

    @classmethod
    def reads_one_node(cls, args: Any) -> bool:
        """Whether its verdicts on a node's pods need only that node, its pods and cluster-wide settings (PDBs,
        namespaces, priority classes, PVCs). `explain node` then runs it on a quick read of that one node;
        otherwise the quick read reports it as not evaluated (see NodeEstimate)."""
        return False


class DeschedulePlugin(Plugin):
    """Checks pods one by one against a rule they no longer meet."""

    @abstractmethod
    def deschedule(self, nodes: list[Node]) -> None: ...


class BalancePlugin(Plugin):
    """Looks at a group of pods or nodes and decides which pods to move to even things out."""

    @abstractmethod
    def balance(self, nodes: list[Node]) -> None: ...


class EvictorPlugin(Plugin):
    """A filter on which pods may be evicted (upstream's DefaultEvictor is one). Methods return None when
    the pod passes, else the reason it is kept, so explain can show it."""

    def filter(self, pod: Pod) -> str | None:
        return None

    def pre_eviction_filter(self, pod: Pod) -> str | None:
        return None


class NodeEstimate(Protocol):
    """A plugin that needs the whole cluster but can say something from one node alone, for explain's quick
    read: e.g. the node's class under static thresholds."""

    def estimate_node(self, node: Node) -> list[tuple[Pod, str]] | None:
        """Report the node's class (handle.report_node) from the node alone and return the pods that could move,
        with why; None when even that needs the other nodes."""
        ...
