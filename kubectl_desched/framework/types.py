"""Extension points. Plugins read the cluster state through their Handle and ask the handle's PlanningEvictor
to evict, which only plans; only the acting evictors (evictors/, upstream's PodEvictor) write to the cluster, and
only after the user confirms."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar, Protocol

from kubectl_desched.framework.flags import CliSurface
from kubectl_desched.model.objects import Node, Pod
from kubectl_desched.model.state import ClusterState


@dataclass(frozen=True)
class EvictOptions:
    plugin: str
    reason: str = ""
    delete_options: Mapping[str, Any] | None = None


class EvictStatus(Enum):
    """What became of one evict() call."""

    EVICTED = "evicted"
    FILTERED = "filtered"  # already planned (by this or another plugin)
    KEPT_BY_PDB = "kept by a PodDisruptionBudget"
    TOTAL_LIMIT = "total limit reached"
    NODE_LIMIT = "node limit reached"
    NAMESPACE_LIMIT = "namespace limit reached"
    WORKLOAD_LIMIT = "workload limit reached"
    FUTILE = "kept: the move would change nothing"


@dataclass(frozen=True)
class EvictOutcome:
    """evict()'s answer, as upstream's typed eviction errors: what became of this pod, and whether the run's or the
    pod's node's limit is now reached (so the plugin stops, or goes on to its next node). True when planned."""

    status: EvictStatus
    total_reached: bool = False
    node_reached: bool = False

    def __bool__(self) -> bool:
        return self.status is EvictStatus.EVICTED

    @property
    def evicted(self) -> bool:
        return self.status is EvictStatus.EVICTED


class PlanningEvictor(Protocol):
    """What a plugin asks before and when it picks a pod (upstream's Filter / PreEvictionFilter / Evict). It
    plans; the evictor that acts on the confirmed plan is evictors.base.PodEvictor."""

    def filter(self, pod: Pod) -> bool: ...

    def pre_eviction_filter(self, pod: Pod) -> bool: ...

    def evict(self, pod: Pod, options: EvictOptions) -> EvictOutcome:
        """Plan the eviction; the outcome says what stopped it, if anything."""
        ...


Evictor = PlanningEvictor  # the name plugins written before the split import


class Handle(Protocol):
    """The services a plugin gets: the read-only state, its profile's evictor, and places to explain."""

    @property
    def state(self) -> ClusterState: ...

    @property
    def evictor(self) -> PlanningEvictor: ...

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

    def report_metric(self, node: str, source: str, query: str, value: float | None) -> None:
        """Record what a metrics source measured for the node (e.g. a Prometheus query's sample, in [0, 1]; None
        when the answer had none for it): the nodes table, explain and -o json show it."""
        ...

    def report_targets(self, percent: dict[str, float]) -> None:
        """The request limits (percent of allocatable per resource) this plugin moves pods under: the placement
        estimate warns when a destination would end up above them."""
        ...

    def info(self, text: str) -> None:
        """Say something about the run as a whole, e.g. why nothing needs to move."""
        ...


class LandingView(Protocol):
    """What a plugin may ask of the placement estimate when it judges a landing (framework/placement.py)."""

    def owned(self, pod: Pod, node: str) -> int:
        """Running pods of the pod's controller on the node, as the moves planned so far leave it."""
        ...


class Plugin(ABC):
    """Every plugin has a unique name; `args_type` (a PluginArgs dataclass) holds its args, `cli` the flags that
    set them and its defaults from flags (framework/flags.py)."""

    name: ClassVar[str]
    args_type: ClassVar[type | None] = None
    description: ClassVar[str] = ""
    cli: ClassVar[CliSurface] = CliSurface()
    # Whether the plugin's goal is the pod running on another node (a Balance plugin, a placement violation):
    # then a replacement estimated to land back on its node, or on one its workload is leaving, is a futile move.
    # PodLifeTime and the like only want a new pod, wherever it lands.
    relocates: ClassVar[bool] = False
    # For a plugin whose goal is nodes left empty (HighNodeUtilization): the class it reports for the nodes it
    # empties. With --cordon those nodes are cordoned before the first eviction, and the estimate lands nothing there.
    empties: ClassVar[str | None] = None

    def __init__(self, args: Any, handle: Handle) -> None:
        self.args = args
        self.handle = handle

    @classmethod
    def reads_one_node(cls, args: Any) -> bool:
        """Whether its verdicts on a node's pods need only that node, its pods and cluster-wide settings (PDBs,
        namespaces, priority classes, PVCs). `explain node` then runs it on a quick read of that one node;
        otherwise the quick read reports it as not evaluated (see estimate_node)."""
        return False

    @staticmethod
    def required_kinds(args: Any) -> set[str]:
        """Kinds beyond nodes, pods and PDBs that it reads with these args (e.g. "PriorityClass", "NodeMetric"):
        read live, or asked of a snapshot. None by default."""
        return set()

    @staticmethod
    def prometheus_queries(args: Any) -> list[str]:
        """Prometheus instant queries it reads with these args: the loader evaluates each before the plugins run
        and puts the answers in the state (model/metrics.prometheus_reading); its required_kinds names
        "Prometheus". None by default."""
        return []

    def estimate_node(self, node: Node) -> list[tuple[Pod, str]] | None:
        """For a plugin that needs the whole cluster, what it can say from one node alone on explain's quick
        read: report the node's class (handle.report_node) and return the pods that could move, with why; None
        when even that needs the other nodes. The default cannot estimate: the plugin is listed as not evaluated."""
        return None

    @classmethod
    def estimates_nodes(cls) -> bool:
        return cls.estimate_node is not Plugin.estimate_node

    @classmethod
    def nearby_args(cls, args: Any) -> list[tuple[str, Any]]:
        """Small changes of these args an operator could try when nodes stay over the plugin's targets after its
        plan, each with the flags that make it, smallest first: the run tries them on the same state and says
        which would reach the goal. None by default."""
        return []

    def landing_problem(self, pod: Pod, node: Node, view: LandingView) -> str | None:
        """Why the pod's replacement landing on `node` would leave this plugin's rule broken again, so evicting
        it changes nothing (e.g. "would be a duplicate again on worker-2"); None when the move serves the
        rule. Asked only of a pod the plugin picked, with --keep-futile off; the framework already checks a
        landing back on its own node and the node classes the plugin reported."""
        return None


class DeschedulePlugin(Plugin):
    """Checks pods one by one against a rule they no longer meet."""

    @abstractmethod
    def deschedule(self, nodes: list[Node]) -> None: ...


class BalancePlugin(Plugin):
    """Looks at a group of pods or nodes and decides which pods to move to even things out."""

    relocates = True

    @abstractmethod
    def balance(self, nodes: list[Node]) -> None: ...


class EvictorPlugin(Plugin):
    """A filter on which pods may be evicted (upstream's DefaultEvictor is one). Methods return None when
    the pod passes, else the reason it is kept, so explain can show it."""

    def filter(self, pod: Pod) -> str | None:
        return None

    def pre_eviction_filter(self, pod: Pod) -> str | None:
        return None
