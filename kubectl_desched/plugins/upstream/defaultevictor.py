"""DefaultEvictor: which pods may be evicted at all (Filter) and whether one may go now
(PreEvictionFilter), with upstream's protections, args and validation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from kubectl_desched.errors import ConfigError
from kubectl_desched.framework import EvictorPlugin, Handle, PluginArgs
from kubectl_desched.framework.args import Duration, LabelSelectorArg, decode_args
from kubectl_desched.framework.flags import INT32_MAX, CliSurface, DurationText, Flag, Integer
from kubectl_desched.framework.predicates import why_not_node_fit
from kubectl_desched.model.durations import parse_time
from kubectl_desched.model.label_selectors import parse_selector
from kubectl_desched.model.objects import SYSTEM_CRITICAL_PRIORITY, Pod

EVICT_ANNOTATION = "descheduler.alpha.kubernetes.io/evict"
PREFER_NO_EVICTION_ANNOTATION = "descheduler.alpha.kubernetes.io/prefer-no-eviction"

DEFAULT_PROTECTIONS = ("PodsWithLocalStorage", "DaemonSetPods", "SystemCriticalPods", "FailedBarePods")
EXTRA_PROTECTIONS = ("PodsWithPVC", "PodsWithoutPDB", "PodsWithResourceClaims")


@dataclass
class PriorityThreshold:
    value: int | None = None
    name: str = ""

    @classmethod
    def from_raw(cls, value: Any, path: str) -> PriorityThreshold:
        obj = decode_args(cls, value, path)
        if obj.value is not None and obj.name:
            raise ConfigError(path, "priority threshold misconfigured, only one of value and name can be set")
        return obj

    def to_raw(self) -> dict[str, Any]:
        return {"value": self.value} if self.value is not None else ({"name": self.name} if self.name else {})


@dataclass
class ProtectedStorageClass:
    name: str = ""


@dataclass
class PodsWithPVCConfig:
    protected_storage_classes: list[ProtectedStorageClass] = field(default_factory=list)


@dataclass
class PodProtectionsConfig:
    pods_with_pvc: PodsWithPVCConfig | None = field(default=None, metadata={"key": "PodsWithPVC"})


@dataclass
class PodProtections:
    extra_enabled: list[str] = field(default_factory=list)
    default_disabled: list[str] = field(default_factory=list)
    config: PodProtectionsConfig | None = None


@dataclass
class DefaultEvictorArgs(PluginArgs):
    node_selector: str = ""
    label_selector: LabelSelectorArg | None = None
    namespace_label_selector: LabelSelectorArg | None = None
    priority_threshold: PriorityThreshold | None = None
    node_fit: bool = False
    min_replicas: int = 0
    min_pod_age: Duration | None = None
    no_eviction_policy: Literal["", "Preferred", "Mandatory"] = ""
    pod_protections: PodProtections = field(default_factory=PodProtections)
    # deprecated booleans, still accepted as upstream does
    evict_local_storage_pods: bool = False
    evict_daemon_set_pods: bool = field(default=False, metadata={"key": "evictDaemonSetPods"})
    evict_system_critical_pods: bool = False
    ignore_pvc_pods: bool = False
    ignore_pods_without_pdb: bool = field(default=False, metadata={"key": "ignorePodsWithoutPDB"})
    evict_failed_bare_pods: bool = False

    deprecated: ClassVar[dict[str, str]] = {
        k: "use podProtections"
        for k in ("evictLocalStoragePods", "evictDaemonSetPods", "evictSystemCriticalPods", "ignorePvcPods",
                  "ignorePodsWithoutPDB", "evictFailedBarePods")
    }

    def uses_legacy(self) -> bool:
        return any((self.evict_local_storage_pods, self.evict_daemon_set_pods, self.evict_system_critical_pods,
                    self.ignore_pvc_pods, self.ignore_pods_without_pdb, self.evict_failed_bare_pods))

    def validate(self, path: str) -> None:
        pp = self.pod_protections
        p = f"{path}." if path else ""
        if self.uses_legacy() and (pp.extra_enabled or pp.default_disabled):
            raise ConfigError(path, "cannot use deprecated fields alongside podProtections.extraEnabled or "
                                    "podProtections.defaultDisabled")
        for key, values, allowed in (("extraEnabled", pp.extra_enabled, EXTRA_PROTECTIONS),
                                     ("defaultDisabled", pp.default_disabled, DEFAULT_PROTECTIONS)):
            for i, v in enumerate(values):
                if v not in allowed:
                    raise ConfigError(f"{p}podProtections.{key}[{i}]",
                                      f"invalid pod protection {v!r}; valid: {', '.join(allowed)}")
            if len(set(values)) != len(values):
                raise ConfigError(f"{p}podProtections.{key}", "contains duplicate entries")
        cfg = pp.config.pods_with_pvc if pp.config else None
        for i, sc in enumerate(cfg.protected_storage_classes if cfg else []):
            if not sc.name:
                raise ConfigError(f"{p}podProtections.config.PodsWithPVC.protectedStorageClasses[{i}].name",
                                  "cannot be empty")
        if self.min_replicas < 0:
            raise ConfigError(f"{p}minReplicas", "must not be negative")
        try:
            parse_selector(self.node_selector)
        except ValueError as e:
            raise ConfigError(f"{p}nodeSelector", str(e)) from None

    def protections(self) -> set[str]:
        """The effective protections: the podProtections form, or the deprecated booleans."""
        pp = self.pod_protections
        if pp.extra_enabled or pp.default_disabled:
            return (set(DEFAULT_PROTECTIONS) - set(pp.default_disabled)) | set(pp.extra_enabled)
        out = set()
        if not self.evict_local_storage_pods:
            out.add("PodsWithLocalStorage")
        if not self.evict_daemon_set_pods:
            out.add("DaemonSetPods")
        if not self.evict_system_critical_pods:
            out.add("SystemCriticalPods")
        if not self.evict_failed_bare_pods:
            out.add("FailedBarePods")
        if self.ignore_pvc_pods:
            out.add("PodsWithPVC")
        if self.ignore_pods_without_pdb:
            out.add("PodsWithoutPDB")
        return out


class DefaultEvictor(EvictorPlugin):
    """Upstream's default filter: protects mirror, static, terminating, critical, bare, DaemonSet and
    local-storage pods, with optional PVC, PDB, ResourceClaim, label, age, replica and node-fit rules."""

    name = "DefaultEvictor"
    args_type: ClassVar[type | None] = DefaultEvictorArgs  # MigrationController puts its own here
    cli = CliSurface(flags=(
        Flag("--evict-local-storage-pods", "evictLocalStoragePods", "allow pods with emptyDir/hostPath"),
        Flag("--evict-system-critical-pods", "evictSystemCriticalPods", "allow system-critical pods"),
        Flag("--evict-daemonset-pods", "evictDaemonSetPods", "allow DaemonSet pods"),
        Flag("--evict-failed-bare-pods", "evictFailedBarePods", "allow failed pods without owner"),
        Flag("--ignore-pvc-pods", "ignorePvcPods", "protect pods with PVCs"),
        Flag("--ignore-pods-without-pdb", "ignorePodsWithoutPDB", "protect pods no PDB covers"),
        Flag("--priority-threshold", "priorityThreshold.value", "protect pods of priority >= N",
             Integer(-INT32_MAX - 1)),
        Flag("--min-replicas", "minReplicas", "protect owners with fewer pods", Integer()),
        Flag("--min-pod-age", "minPodAge", "protect pods younger than this", DurationText()),
        Flag("--node-fit", "nodeFit", "only evict pods that fit another node"),
    ))

    def __init__(self, args: DefaultEvictorArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.protections = args.protections()
        self.priority_limit: int | None = None
        if "SystemCriticalPods" in self.protections:
            self.priority_limit = self._priority_threshold(args.priority_threshold)
        self.label_match = args.label_selector.matcher() if args.label_selector else None
        self.fit_nodes = parse_selector(args.node_selector)
        self.protected_classes: set[str] = set()
        cfg = args.pod_protections.config.pods_with_pvc if args.pod_protections.config else None
        if "PodsWithPVC" in self.protections and cfg:
            self.protected_classes = {sc.name for sc in cfg.protected_storage_classes}
        selector = args.namespace_label_selector
        self.ns_match = selector.matcher() if selector is not None and _has_terms(selector) else None
        self._ns_labels = {o.name: o.labels for o in handle.state.extra.get("Namespace", [])}
        # "" and unset both leave the class unknown
        self._claims = {o.key: o.storage_class for o in handle.state.extra.get("PersistentVolumeClaim", [])}

    @classmethod
    def reads_one_node(cls, args: DefaultEvictorArgs) -> bool:
        # nodeFit looks at every other node; minReplicas counts the owner's pods on every node
        return not args.node_fit and args.min_replicas <= 1

    @staticmethod
    def required_kinds(args: DefaultEvictorArgs) -> set[str]:
        """Objects beyond nodes, pods and PDBs that these args need the source to read."""
        kinds = set()
        if _has_terms(args.namespace_label_selector):
            kinds.add("Namespace")
        if args.priority_threshold and args.priority_threshold.name:
            kinds.add("PriorityClass")
        cfg = args.pod_protections.config.pods_with_pvc if args.pod_protections.config else None
        if cfg and cfg.protected_storage_classes:
            kinds.add("PersistentVolumeClaim")
        return kinds

    def _priority_threshold(self, pt: PriorityThreshold | None) -> int:
        if pt is None or (pt.value is None and not pt.name):
            return SYSTEM_CRITICAL_PRIORITY
        if pt.value is not None:
            return pt.value
        for obj in self.handle.state.extra.get("PriorityClass", []):
            if obj.name == pt.name:
                return int(obj.value)
        raise ConfigError("priorityThreshold.name", f"PriorityClass {pt.name!r} not found")

    def filter(self, pod: Pod) -> str | None:
        if EVICT_ANNOTATION in pod.annotations:
            return None
        a = self.args
        if a.no_eviction_policy == "Mandatory" and PREFER_NO_EVICTION_ANNOTATION in pod.annotations:
            return "has the prefer-no-eviction annotation (noEvictionPolicy Mandatory)"
        reasons = []
        if "kubernetes.io/config.mirror" in pod.annotations:
            reasons.append("mirror pod")
        source = pod.annotations.get("kubernetes.io/config.source")
        if source is not None and source != "api":
            reasons.append("static pod")
        if pod.terminating:
            reasons.append("terminating")
        reasons += self._protections(pod)
        if self.label_match is not None and not self.label_match(pod.labels):
            reasons.append("labels do not match the DefaultEvictor labelSelector")
        if a.min_replicas > 1 and len(pod.owners) == 1:  # upstream skips pods with no owner or several
            siblings = len(self.handle.state.owner_pods(pod))
            if siblings < a.min_replicas:
                reasons.append(f"owner has {siblings} pods, fewer than minReplicas {a.min_replicas}")
        if a.min_pod_age is not None:
            started = parse_time(pod.started)
            age = (self.handle.state.now - started).total_seconds() if started else None
            if age is None or age < a.min_pod_age.seconds:
                reasons.append(f"younger than minPodAge {a.min_pod_age.text}")
        return "; ".join(reasons) or None

    def _protections(self, pod: Pod) -> list[str]:
        p = self.protections
        out = []
        if self.priority_limit is not None and pod.priority is not None:
            if pod.priority >= SYSTEM_CRITICAL_PRIORITY:
                out.append(f"system critical (priority {pod.priority})")
            elif pod.priority >= self.priority_limit:
                out.append(f"priority {pod.priority} at or above the threshold {self.priority_limit}")
        if not pod.owners and ("FailedBarePods" in p or pod.phase != "Failed"):
            out.append("bare pod (no owner)")
        if "PodsWithLocalStorage" in p and pod.local_volumes:
            out.append(f"local storage ({pod.local_volumes[0]})")
        if "DaemonSetPods" in p and any(o.kind == "DaemonSet" for o in pod.owners):
            out.append("DaemonSet pod")
        if "PodsWithPVC" in p and pod.pvc_claims:
            if not self.protected_classes:
                out.append(f"uses a PersistentVolumeClaim ({pod.pvc_claims[0]})")
            else:
                out += self._storage_class_protection(pod.namespace, pod.pvc_claims)
        if "PodsWithoutPDB" in p and not self.handle.state.pdbs_for(pod):
            out.append("no PodDisruptionBudget covers it")
        if "PodsWithResourceClaims" in p and pod.has_resource_claims:
            out.append("uses ResourceClaims")
        return out

    def _storage_class_protection(self, namespace: str, claims: Sequence[str]) -> list[str]:
        """Upstream protects the pod when a claim is missing or has no class: its class cannot be known."""
        classes = []
        for claim in claims:
            sc = self._claims.get(f"{namespace}/{claim}")
            if sc is None:
                return [f"PersistentVolumeClaim {claim} not found, so its storage class is unknown"]
            if not sc:
                return [f"PersistentVolumeClaim {claim} has no storage class"]
            classes.append((sc, claim))
        return [f"uses protected storage class {sc} ({claim})" for sc, claim in classes
                if sc in self.protected_classes][:1]

    def pre_eviction_filter(self, pod: Pod) -> str | None:
        if self.args.node_fit:
            state = self.handle.state
            others = [n for n in state.nodes.values() if n.name != pod.node_name and n.ready
                      and self.fit_nodes(n.labels)]
            if not any(why_not_node_fit(pod, n, state) is None for n in others):
                return "fits no other node (nodeFit)"
        if self.ns_match is not None:
            labels = self._ns_labels.get(pod.namespace)
            if labels is None or not self.ns_match(labels):
                return "namespace does not match namespaceLabelSelector"
        return None


def _has_terms(selector: LabelSelectorArg | None) -> bool:
    """Upstream ignores a namespaceLabelSelector with no matchLabels and no matchExpressions."""
    return selector is not None and bool(selector.raw.get("matchLabels") or selector.raw.get("matchExpressions"))
