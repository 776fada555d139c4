"""MigrationController: Koordinator's default filter (and evict) plugin. As a filter it is what koord-descheduler
asks before a plugin picks a pod: an unfinished PodMigrationJob for the pod, the scheduler ReservationFirst needs,
then the DefaultEvictor-style rules driven by Koordinator's args (evictAllBarePods, namespaces, the maximum
eviction cost) and the owner's expected replicas, then how many pods migrate per workload, node, namespace and
overall (plugins/koordarbitration.py). skipEvictionGates turns checks off as in Koordinator.
Its other controller settings (rate limits, object limiters, arbitration) act inside the cluster and are accepted
as is; defaultJobMode and defaultJobTTL are validated as Koordinator does, because `--evictor migration` writes them
into the jobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubectl_desched.errors import ConfigError
from kubectl_desched.framework import Handle, PluginArgs
from kubectl_desched.framework.args import Duration, LabelSelectorArg, Namespaces, check_fields
from kubectl_desched.framework.flags import CliSurface
from kubectl_desched.model.objects import Pod
from kubectl_desched.model.podmigrationjob import JOB_MODES, RESERVATION_FIRST
from kubectl_desched.plugins.koordinator import arbitration as arb
from kubectl_desched.plugins.upstream.defaultevictor import (
    EVICT_ANNOTATION,
    DefaultEvictor,
    DefaultEvictorArgs,
    PriorityThreshold,
)

EVICTION_COST_ANNOTATION = "scheduling.koordinator.sh/eviction-cost"
MAX_EVICTION_COST = str(2**31 - 1)
DEFAULT_SCHEDULER_NAMES = ["koord-scheduler"]  # the scheduler that can place a ReservationFirst job's Reservation
DEFAULT_MAX_MIGRATING_PER_NODE = 2
# skipEvictionGates values (Koordinator's EvictionGate names).
GATES = ("MaxUnavailablePerWorkload", "MaxMigratingPerWorkload", "MaxMigratingPerNode", "MaxMigratingPerNamespace",
         "MaxMigratingGlobally", "ExpectedReplicas", "PVC", "BarePods", "LocalStorage", "SystemCritical",
         "PriorityThreshold", "LabelSelector", "Namespaces", "NodeFit")
OWNER_KINDS = set(arb.WORKLOAD_KINDS)  # what the workload checks read
# The fields of the objects kept as written, checked as koord-descheduler's strict decoding checks them
# (v1alpha2 MigrationObjectLimiter and ArbitrationArgs; metav1.DeleteOptions and its Preconditions).
OBJECT_LIMITER_FIELDS = ("duration", "maxMigrating", "burst")
ARBITRATION_FIELDS = ("enabled", "interval")
DELETE_OPTIONS_FIELDS = ("apiVersion", "kind", "gracePeriodSeconds", "preconditions", "orphanDependents",
                         "propagationPolicy", "dryRun", "ignoreStoreReadErrorWithClusterBreakingPotential")
PRECONDITIONS_FIELDS = ("uid", "resourceVersion")


@dataclass
class MigrationControllerArgs(PluginArgs):
    evict_failed_bare_pods: bool = False
    evict_all_bare_pods: bool = False
    evict_local_storage_pods: bool = False
    evict_system_critical_pods: bool = False
    ignore_pvc_pods: bool = False
    priority_threshold: PriorityThreshold | None = None
    label_selector: LabelSelectorArg | None = None
    namespaces: Namespaces | None = None
    node_fit: bool = False
    node_selector: str = ""
    skip_eviction_gates: list[str] = field(default_factory=list)
    max_migrating_globally: int | None = None
    max_migrating_per_node: int | None = None  # unset: 2
    max_migrating_per_namespace: int | None = None
    max_migrating_per_workload: Any = None  # an int or a percent of the expected replicas, e.g. "10%"
    max_unavailable_per_workload: Any = None
    skip_check_expected_replicas: bool | None = None
    default_job_mode: str = ""  # "" is Koordinator's default, ReservationFirst
    default_job_ttl: Duration | None = field(default=None, metadata={"key": "defaultJobTTL"})  # unset: 5m
    scheduler_names: list[str] = field(default_factory=list)  # unset: koord-scheduler
    default_delete_options: dict[str, Any] | None = None  # the jobs' spec.deleteOptions
    # The migration controller's own settings: they only matter in the cluster.
    dry_run: Any = None
    max_concurrent_reconciles: Any = None
    object_limiters: Any = None
    evict_qps: Any = field(default=None, metadata={"key": "evictQPS"})
    evict_burst: Any = None
    eviction_policy: Any = None
    arbitration_args: Any = None

    def validate(self, path: str) -> None:
        p = f"{path}." if path else ""
        self._check_objects(p)
        if self.default_job_mode and self.default_job_mode not in JOB_MODES:
            raise ConfigError(f"{p}defaultJobMode", f"must be {' or '.join(JOB_MODES)}, not {self.default_job_mode!r}")
        if self.default_job_ttl is not None and self.default_job_ttl.seconds < 0:
            raise ConfigError(f"{p}defaultJobTTL", "must be positive or zero")
        for i, gate in enumerate(self.skip_eviction_gates):
            if gate not in GATES:
                raise ConfigError(f"{p}skipEvictionGates[{i}]", f"unknown eviction gate {gate!r}; valid: "
                                                                f"{', '.join(GATES)}")
        for key, value in (("maxMigratingGlobally", self.max_migrating_globally),
                           ("maxMigratingPerNamespace", self.max_migrating_per_namespace),
                           ("maxMigratingPerNode", self.max_migrating_per_node)):
            if value is not None and value < 0:
                raise ConfigError(f"{p}{key}", "must be greater than or equal to 0")
        for key, value in (("maxMigratingPerWorkload", self.max_migrating_per_workload),
                           ("maxUnavailablePerWorkload", self.max_unavailable_per_workload)):
            if value is not None:
                try:
                    arb.scaled_value(value, 100)
                except ValueError as e:
                    raise ConfigError(f"{p}{key}", str(e)) from None

    def _check_objects(self, p: str) -> None:
        delete = self.default_delete_options
        if isinstance(delete, dict):
            check_fields(delete, DELETE_OPTIONS_FIELDS, f"{p}defaultDeleteOptions")
            if isinstance(delete.get("preconditions"), dict):
                check_fields(delete["preconditions"], PRECONDITIONS_FIELDS, f"{p}defaultDeleteOptions.preconditions")
        if isinstance(self.arbitration_args, dict):
            check_fields(self.arbitration_args, ARBITRATION_FIELDS, f"{p}arbitrationArgs")
        if isinstance(self.object_limiters, dict):
            for kind, limiter in self.object_limiters.items():
                if isinstance(limiter, dict):
                    check_fields(limiter, OBJECT_LIMITER_FIELDS, f"{p}objectLimiters.{kind}")

    def skips(self, gate: str) -> bool:
        return gate in self.skip_eviction_gates

    @property
    def job_mode(self) -> str:
        return self.default_job_mode or JOB_MODES[0]

    def reads_owners(self) -> bool:
        return not (self.skips("ExpectedReplicas") and self.skips("MaxMigratingPerWorkload")
                    and self.skips("MaxUnavailablePerWorkload"))

    def evictor_args(self) -> DefaultEvictorArgs:
        """The DefaultEvictor rules these args drive, with the skipped gates' checks off."""
        skips = self.skips
        return DefaultEvictorArgs(
            node_selector=self.node_selector,
            label_selector=None if skips("LabelSelector") else self.label_selector,
            priority_threshold=None if skips("PriorityThreshold") else self.priority_threshold,
            node_fit=self.node_fit and not skips("NodeFit"),
            evict_local_storage_pods=self.evict_local_storage_pods or skips("LocalStorage"),
            evict_system_critical_pods=self.evict_system_critical_pods or skips("SystemCritical"),
            ignore_pvc_pods=self.ignore_pvc_pods and not skips("PVC"),
            evict_failed_bare_pods=self.evict_failed_bare_pods or self.evict_all_bare_pods or skips("BarePods"),
        )


class MigrationController(DefaultEvictor):
    """Koordinator's evictor filter: its arbitration's checks around the DefaultEvictor rules."""

    name = "MigrationController"
    args_type = MigrationControllerArgs
    cli = CliSurface()  # DefaultEvictor's flags set DefaultEvictor's args, not these

    def __init__(self, args: MigrationControllerArgs, handle: Handle) -> None:
        super().__init__(args.evictor_args(), handle)
        self.koord_args = args
        self.all_bare = args.evict_all_bare_pods or args.skips("BarePods")
        self.namespaces = None if args.skips("Namespaces") else args.namespaces
        self.scheduler_names = args.scheduler_names or DEFAULT_SCHEDULER_NAMES
        self.arbitration = arb.Arbitration(handle.state, handle.info)

    @staticmethod
    def required_kinds(args: MigrationControllerArgs) -> set[str]:  # type: ignore[override]
        kinds = DefaultEvictor.required_kinds(args.evictor_args()) | {arb.JOB_KIND}
        return kinds | OWNER_KINDS if args.reads_owners() else kinds

    @classmethod
    def reads_one_node(cls, args: MigrationControllerArgs) -> bool:  # type: ignore[override]
        # nodeFit looks at every node; the per-workload checks at the workload's pods on every node.
        return (not args.evictor_args().node_fit and args.skips("MaxMigratingPerWorkload")
                and args.skips("MaxUnavailablePerWorkload"))


    def filter(self, pod: Pod) -> str | None:
        """Koordinator's order: the pod's own job, the scheduler, then the rules the evict annotation waives
        (namespaces, eviction cost, the DefaultEvictor's, expected replicas), then the migrating counts."""
        a, arbitration = self.koord_args, self.arbitration
        why = arbitration.existing_job(pod) or self._scheduler(pod)
        if why or EVICT_ANNOTATION in pod.annotations:
            return why
        if self.namespaces is not None and not self.namespaces.allows(pod.namespace):
            return f"namespace {pod.namespace} is outside MigrationController namespaces"
        if pod.annotations.get(EVICTION_COST_ANNOTATION) == MAX_EVICTION_COST:
            return f"{EVICTION_COST_ANNOTATION} is the maximum"
        why = super().filter(pod)
        if why:
            return why
        if not a.skips("ExpectedReplicas"):
            why = arbitration.expected_replicas(pod, a.max_migrating_per_workload, a.max_unavailable_per_workload,
                                                bool(a.skip_check_expected_replicas))
        per_node = DEFAULT_MAX_MIGRATING_PER_NODE if a.max_migrating_per_node is None else a.max_migrating_per_node
        return (why
                or (None if a.skips("MaxMigratingGlobally") else
                    arbitration.migrating_globally(pod, a.max_migrating_globally))
                or (None if a.skips("MaxMigratingPerNode") else arbitration.migrating_per_node(pod, per_node))
                or (None if a.skips("MaxMigratingPerNamespace") else
                    arbitration.migrating_per_namespace(pod, a.max_migrating_per_namespace))
                or arbitration.per_workload(pod, a.max_migrating_per_workload, a.max_unavailable_per_workload,
                                            not a.skips("MaxMigratingPerWorkload"),
                                            not a.skips("MaxUnavailablePerWorkload")))

    def _scheduler(self, pod: Pod) -> str | None:
        """A ReservationFirst job needs a scheduler that places Reservations: koord-descheduler skips the others'
        pods."""
        if self.koord_args.job_mode != RESERVATION_FIRST or pod.scheduler_name in self.scheduler_names:
            return None
        return (f"schedulerName {pod.scheduler_name} is not in MigrationController schedulerNames "
                f"({', '.join(self.scheduler_names)}), which defaultJobMode ReservationFirst needs")

    def _protections(self, pod: Pod) -> list[str]:
        reasons = super()._protections(pod)
        if self.all_bare:
            reasons = [r for r in reasons if not r.startswith("bare pod")]
        return reasons
