"""The shape in which API objects are decoded (msgspec typed Structs): only the fields the plugins, the evictor's
filters, explain and rendering read. Everything else in an object (managedFields above all) is skipped by the
decoder without ever being built, which is most of a pod's bytes.

The types check what a type can say (strings, booleans, int32 ranges, enums, RFC 3339 timestamps); model/objects.py
checks the rest (names, quantities, affinity) while it turns these into the model. null is not accepted here:
an object with nulls fails the fast decode and is read again the slow way (model/objects.py strips the nulls, which the
API reads as the empty value, and converts the same types).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta, Struct, field

from kubectl_desched.model import shapes

Int32 = Annotated[int, Meta(ge=shapes.INT32[0], le=shapes.INT32[1])]
Int64 = Annotated[int, Meta(ge=shapes.INT64[0], le=shapes.INT64[1])]
Count32 = Annotated[int, Meta(ge=0, le=shapes.INT32[1])]
Time = Annotated[str, Meta(pattern=rf"^(?:{shapes.RFC3339.pattern})\Z")]
PodTime = str  # a pod's status times: checked by model/objects.py all at once, one regular expression a pod
Quantity = str | int | float  # checked when parsed (model/objects.py)
Quantities = dict[str, Quantity]


class _Wire(Struct, kw_only=True, rename="camel", gc=False, omit_defaults=True):
    """Decoded objects hold no cycles: the cycle collector need not track them."""


class OwnerReference(_Wire, kw_only=True, frozen=True):
    api_version: str = ""
    kind: str
    name: str
    uid: str = ""
    controller: bool = False
    block_owner_deletion: bool = False


class ObjectMeta(_Wire, kw_only=True):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: tuple[OwnerReference, ...] = ()
    creation_timestamp: Time = ""
    deletion_timestamp: Time = ""
    generation: Int64 | None = None
    resource_version: str = ""


class Resources(_Wire, kw_only=True):
    requests: Quantities | None = None
    limits: Quantities | None = None


class Container(_Wire, kw_only=True):
    name: str = ""
    image: str = ""
    resources: Resources | None = None
    restart_policy: str = ""


class HostPath(_Wire, kw_only=True):
    path: str = ""


class ClaimSource(_Wire, kw_only=True):
    claim_name: str


class Volume(_Wire, kw_only=True):
    name: str = ""
    empty_dir: dict[str, Any] | None = None
    host_path: HostPath | None = None
    persistent_volume_claim: ClaimSource | None = None


class Toleration(_Wire, kw_only=True, frozen=True):
    key: str = ""
    operator: Literal["", "Equal", "Exists", "Lt", "Gt"] = ""
    value: str = ""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""
    toleration_seconds: Int64 | None = None


# Affinity and spread constraints: checked by their types, then handed to the plugins as the JSON they were
# (model/objects.py pools them by their encoding and makes them plain dicts and lists once per distinct value).
Weight = Annotated[int, Meta(ge=1, le=100)]
Positive32 = Annotated[int, Meta(ge=1, le=shapes.INT32[1])]
Strings = tuple[str, ...]


class LabelSelectorRequirement(_Wire, kw_only=True, frozen=True):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: Strings | None = None


class LabelSelector(_Wire, kw_only=True, frozen=True):
    match_labels: dict[str, str] | None = None
    match_expressions: tuple[LabelSelectorRequirement, ...] | None = None


class NodeSelectorRequirement(_Wire, kw_only=True, frozen=True):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: Strings | None = None


class NodeSelectorTerm(_Wire, kw_only=True, frozen=True):
    match_expressions: tuple[NodeSelectorRequirement, ...] | None = None
    match_fields: tuple[NodeSelectorRequirement, ...] | None = None


class NodeSelector(_Wire, kw_only=True, frozen=True):
    node_selector_terms: tuple[NodeSelectorTerm, ...]


class PreferredSchedulingTerm(_Wire, kw_only=True, frozen=True):
    weight: Weight
    preference: NodeSelectorTerm


class NodeAffinity(_Wire, kw_only=True, frozen=True):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: tuple[PreferredSchedulingTerm, ...] | None = None


class PodAffinityTerm(_Wire, kw_only=True, frozen=True):
    label_selector: LabelSelector | None = None
    namespace_selector: LabelSelector | None = None
    namespaces: Strings | None = None
    topology_key: str
    match_label_keys: Strings | None = None
    mismatch_label_keys: Strings | None = None


class WeightedPodAffinityTerm(_Wire, kw_only=True, frozen=True):
    weight: Weight
    pod_affinity_term: PodAffinityTerm


class PodAffinity(_Wire, kw_only=True, frozen=True):
    required_during_scheduling_ignored_during_execution: tuple[PodAffinityTerm, ...] | None = None
    preferred_during_scheduling_ignored_during_execution: tuple[WeightedPodAffinityTerm, ...] | None = None


class Affinity(_Wire, kw_only=True, frozen=True):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(_Wire, kw_only=True, frozen=True):
    max_skew: Positive32
    topology_key: str
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    label_selector: LabelSelector | None = None
    min_domains: Positive32 | None = None
    node_affinity_policy: Literal["Honor", "Ignore"] | None = None
    node_taints_policy: Literal["Honor", "Ignore"] | None = None
    match_label_keys: Strings | None = None


class ResourceClaim(_Wire, kw_only=True):
    name: str = ""


class PodSpec(_Wire, kw_only=True):
    node_name: str = ""
    containers: list[Container]
    init_containers: list[Container] = field(default_factory=list)
    overhead: Quantities | None = None
    resources: Resources | None = None
    volumes: list[Volume] = field(default_factory=list)
    priority: Int32 | None = None
    priority_class_name: str = ""
    tolerations: tuple[Toleration, ...] = ()
    node_selector: dict[str, str] | None = None
    affinity: Affinity | None = None
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] | None = None
    resource_claims: list[ResourceClaim] | None = None
    scheduler_name: str = ""


class Waiting(_Wire, kw_only=True):
    reason: str = ""


class Terminated(_Wire, kw_only=True):
    reason: str = ""
    exit_code: Int32 = 0


class ContainerState(_Wire, kw_only=True):
    waiting: Waiting | None = None
    terminated: Terminated | None = None


class ContainerStatus(_Wire, kw_only=True):
    name: str = ""
    restart_count: Count32 = 0
    image: str = ""
    state: ContainerState | None = None


class PodCondition(_Wire, kw_only=True, frozen=True):
    """One of a pod's status.conditions (`pod.conditions`)."""

    # decoded straight as the model's: no pod reads it back into anything
    type: str
    """PodScheduled, Initialized, ContainersReady, Ready, ..."""
    status: str
    """True, False or Unknown."""
    reason: str = ""
    """A one-word reason, "" when unset."""
    last_transition: PodTime = field(default="", name="lastTransitionTime")
    """lastTransitionTime as written, "" when unset."""


class PodStatus(_Wire, kw_only=True):
    phase: str = ""
    reason: str = ""
    qos_class: Literal["Guaranteed", "Burstable", "BestEffort", ""] = ""
    start_time: PodTime = ""
    conditions: list[PodCondition] = field(default_factory=list)
    container_statuses: list[ContainerStatus] = field(default_factory=list)
    init_container_statuses: list[ContainerStatus] = field(default_factory=list)
    ephemeral_container_statuses: list[ContainerStatus] = field(default_factory=list)


class Pod(_Wire, kw_only=True, tag_field="kind", tag="Pod"):
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: PodSpec
    status: PodStatus = field(default_factory=PodStatus)


class Taint(_Wire, kw_only=True):
    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    time_added: Time = ""


class NodeSpec(_Wire, kw_only=True):
    taints: list[Taint] = field(default_factory=list)
    unschedulable: bool = False


class NodeCondition(_Wire, kw_only=True):
    type: str = ""
    status: str = ""


class NodeSystemInfo(_Wire, kw_only=True):
    kubelet_version: str = ""


class NodeStatus(_Wire, kw_only=True):
    allocatable: Quantities | None = None
    capacity: Quantities | None = None
    conditions: list[NodeCondition] = field(default_factory=list)
    node_info: NodeSystemInfo | None = None


class Node(_Wire, kw_only=True, tag_field="kind", tag="Node"):
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: NodeSpec = field(default_factory=NodeSpec)
    status: NodeStatus = field(default_factory=NodeStatus)


IntOrPercent = Annotated[int, Meta(ge=0, le=shapes.INT32[1])] | Annotated[str, Meta(pattern=r"^\d+%\Z")]


class PDBSpec(_Wire, kw_only=True):
    selector: dict[str, Any] | None = None
    min_available: IntOrPercent | None = None
    max_unavailable: IntOrPercent | None = None


class PDBStatus(_Wire, kw_only=True):
    disruptions_allowed: Count32 = 0
    current_healthy: Count32 | None = None
    desired_healthy: Count32 | None = None
    observed_generation: Int64 | None = None


class PodDisruptionBudget(_Wire, kw_only=True, tag_field="kind", tag="PodDisruptionBudget"):
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: PDBSpec = field(default_factory=PDBSpec)
    status: PDBStatus = field(default_factory=PDBStatus)


# --- the other kinds plugins read (kube/live.py's EXTRA_KINDS) --------------------------------------------------

class Namespace(_Wire, kw_only=True, tag_field="kind", tag="Namespace"):
    metadata: ObjectMeta = field(default_factory=ObjectMeta)


class PriorityClass(_Wire, kw_only=True, tag_field="kind", tag="PriorityClass"):
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    value: Int32 = 0


class ClaimSpec(_Wire, kw_only=True):
    storage_class_name: str | None = None


class PersistentVolumeClaim(_Wire, kw_only=True, tag_field="kind", tag="PersistentVolumeClaim"):
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: ClaimSpec = field(default_factory=ClaimSpec)


class NodeMetrics(_Wire, kw_only=True, tag_field="kind", tag="NodeMetrics"):
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    usage: Quantities | None = None


class ContainerUsage(_Wire, kw_only=True):
    usage: Quantities | None = None


class PodMetrics(_Wire, kw_only=True, tag_field="kind", tag="PodMetrics"):
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    containers: list[ContainerUsage] = field(default_factory=list)


class ResourceUsage(_Wire, kw_only=True):
    resources: Quantities | None = None


class SystemUsage(_Wire, kw_only=True):
    system_usage: ResourceUsage | None = None


class PodUsage(_Wire, kw_only=True):
    namespace: str = ""
    name: str = ""
    pod_usage: ResourceUsage | None = None


class NodeMetricStatus(_Wire, kw_only=True):
    update_time: Time = ""
    node_metric: SystemUsage | None = None
    pods_metric: list[PodUsage] = field(default_factory=list)


class NodeMetric(_Wire, kw_only=True, tag_field="kind", tag="NodeMetric"):
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    status: NodeMetricStatus = field(default_factory=NodeMetricStatus)


EXTRA: dict[str, type[Any]] = {
    "Namespace": Namespace, "PriorityClass": PriorityClass, "PersistentVolumeClaim": PersistentVolumeClaim,
    "NodeMetrics": NodeMetrics, "PodMetrics": PodMetrics, "NodeMetric": NodeMetric,
}
BY_KIND: dict[str, type[Any]] = {"Pod": Pod, "Node": Node, "PodDisruptionBudget": PodDisruptionBudget, **EXTRA}


class ListMeta(_Wire, kw_only=True):
    continue_: str = field(default="", name="continue")


def list_type(item: Any) -> type[Any]:
    """A LIST answer of these items: its metadata.continue and its items."""
    return type(f"{getattr(item, '__name__', 'Mixed')}List", (_Wire,), {
        "__annotations__": {"metadata": ListMeta, "items": list[item]},  # type: ignore[valid-type]
        "metadata": field(default_factory=ListMeta), "items": field(default_factory=list)})
