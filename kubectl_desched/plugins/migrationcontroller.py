"""MigrationController: Koordinator's default filter (and evict) plugin. As a filter it is the DefaultEvictor
driven by Koordinator's args, plus evictAllBarePods, namespaces and the maximum eviction-cost protection.
Its controller settings (rate limits, arbitration) act inside the cluster and are accepted as is; defaultJobMode
and defaultJobTTL are validated as Koordinator does, because `--evictor migration` writes them into the jobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubectl_desched.errors import ConfigError
from kubectl_desched.framework import Handle, PluginArgs
from kubectl_desched.framework.args import Duration, LabelSelectorArg, Namespaces
from kubectl_desched.model import Pod
from kubectl_desched.plugins.defaultevictor import DefaultEvictor, DefaultEvictorArgs, PriorityThreshold

EVICTION_COST_ANNOTATION = "scheduling.koordinator.sh/eviction-cost"
MAX_EVICTION_COST = str(2**31 - 1)
JOB_MODES = ("ReservationFirst", "EvictDirectly")  # PodMigrationJob spec.mode


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
    # The migration controller's own settings: they only matter in the cluster.
    dry_run: Any = None
    max_concurrent_reconciles: Any = None
    skip_eviction_gates: Any = None
    max_migrating_globally: Any = None
    max_migrating_per_node: Any = None
    max_migrating_per_namespace: Any = None
    max_migrating_per_workload: Any = None
    max_unavailable_per_workload: Any = None
    skip_check_expected_replicas: Any = None
    object_limiters: Any = None
    default_job_mode: str = ""  # "" is Koordinator's default, ReservationFirst
    default_job_ttl: Duration | None = field(default=None, metadata={"key": "defaultJobTTL"})  # unset: 5m
    scheduler_names: Any = None
    evict_qps: Any = field(default=None, metadata={"key": "evictQPS"})
    evict_burst: Any = None
    eviction_policy: Any = None
    default_delete_options: dict[str, Any] | None = None  # the jobs' spec.deleteOptions
    arbitration_args: Any = None

    def validate(self, path: str) -> None:
        if self.default_job_mode and self.default_job_mode not in JOB_MODES:
            raise ConfigError(f"{path}.defaultJobMode" if path else "defaultJobMode",
                              f"must be {' or '.join(JOB_MODES)}, not {self.default_job_mode!r}")
        if self.default_job_ttl is not None and self.default_job_ttl.seconds < 0:
            raise ConfigError(f"{path}.defaultJobTTL" if path else "defaultJobTTL", "must be positive or zero")

    def evictor_args(self) -> DefaultEvictorArgs:
        return DefaultEvictorArgs(
            node_selector=self.node_selector, label_selector=self.label_selector,
            priority_threshold=self.priority_threshold, node_fit=self.node_fit,
            evict_local_storage_pods=self.evict_local_storage_pods,
            evict_system_critical_pods=self.evict_system_critical_pods,
            ignore_pvc_pods=self.ignore_pvc_pods,
            evict_failed_bare_pods=self.evict_failed_bare_pods or self.evict_all_bare_pods,
        )


class MigrationController(DefaultEvictor):
    """Koordinator's evictor filter: DefaultEvictor rules with Koordinator's args."""

    name = "MigrationController"
    args_type = MigrationControllerArgs

    def __init__(self, args: MigrationControllerArgs, handle: Handle) -> None:
        super().__init__(args.evictor_args(), handle)
        self.koord_args = args

    @staticmethod
    def required_kinds(args: MigrationControllerArgs) -> set[str]:  # type: ignore[override]
        return DefaultEvictor.required_kinds(args.evictor_args())

    @classmethod
    def reads_one_node(cls, args: MigrationControllerArgs) -> bool:  # type: ignore[override]
        return DefaultEvictor.reads_one_node(args.evictor_args())

    def filter(self, pod: Pod) -> str | None:
        ns = self.koord_args.namespaces
        if ns is not None and not ns.allows(pod.namespace):
            return f"namespace {pod.namespace} is outside MigrationController namespaces"
        if pod.annotations.get(EVICTION_COST_ANNOTATION) == MAX_EVICTION_COST:
            return f"{EVICTION_COST_ANNOTATION} is the maximum"
        return super().filter(pod)

    def _protections(self, pod: Pod) -> list[str]:
        reasons = super()._protections(pod)
        if self.koord_args.evict_all_bare_pods:
            reasons = [r for r in reasons if not r.startswith("bare pod")]
        return reasons
