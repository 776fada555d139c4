"""Lean, read-only Nodes, Pods, PodDisruptionBudgets and the other kinds plugins read, as msgspec Structs.

Objects are decoded from the API's JSON into the typed shapes of model/wire.py, which hold only what plugins, filters,
explain and rendering read (everything else is skipped by the decoder without being built), and finished here
into the model: derived values (effective requests, QoS, local storage) computed once, values many pods share
pooled, names checked as the API server checks them. The fast way is kube/decode.py's, from the bytes of a LIST
page or a snapshot file; `*_from_json` read one already-parsed object (YAML snapshots, tests) into the same types.

Every field read is validated (model/shapes.py has the rules): a wrong type or a value the API server would refuse is a
ParseError naming the object and the field path. The typed decode checks what types can; an object it refuses,
or that fails here, is read again from its parsed JSON, where the full schema says what and where.
"""

from __future__ import annotations

import contextlib
import gc
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import msgspec
from msgspec import Struct

from kubectl_desched import collector
from kubectl_desched.model import shapes, wire
from kubectl_desched.model.label_selectors import Matcher, label_selector
from kubectl_desched.model.names import SUBDOMAIN_MAX, dns1123_label_problem, dns1123_subdomain_problem
from kubectl_desched.model.quantity import resource_value
from kubectl_desched.model.shapes import Invalid
from kubectl_desched.sanitize import short

SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
DEFAULT_SCHEDULER = "default-scheduler"  # what the API server writes when spec.schedulerName is empty
_intern = sys.intern
_DROPPED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)


class Taint(Struct, frozen=True, gc=False):
    """One of a node's spec.taints; `str()` writes it as kubectl does, `key=value:Effect`."""

    key: str
    """A label-style key, such as node.kubernetes.io/unschedulable."""
    value: str
    """"" when the taint has none."""
    effect: str
    """NoSchedule, PreferNoSchedule or NoExecute."""

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


class Toleration(Struct, frozen=True, gc=False):
    """One of a pod's spec.tolerations."""

    key: str
    """"" with operator Exists: every taint."""
    operator: str
    """Equal (the API's default when unset) or Exists."""
    value: str
    """The value it tolerates with Equal."""
    effect: str
    """"" for every effect."""

    def tolerates(self, taint: Taint) -> bool:
        """The scheduler's rule: empty effect matches all effects, empty key with Exists matches all keys."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == taint.key
        return self.key == taint.key and self.value == taint.value


class OwnerRef(Struct, frozen=True, gc=False):
    """One of a pod's metadata.ownerReferences."""

    kind: str
    """ReplicaSet, StatefulSet, DaemonSet, Job, Node (a mirror pod)..."""
    name: str
    """The owner's name."""
    uid: str
    """The owner's uid, "" when the reference has none."""
    controller: bool
    """The reference is the pod's managing controller."""


class ContainerStatus(Struct, frozen=True, gc=False):
    """One container's status: status.containerStatuses, initContainerStatuses or ephemeralContainerStatuses."""

    name: str
    """The container's name."""
    restarts: int
    """restartCount."""
    waiting_reason: str
    """state.waiting.reason (CrashLoopBackOff, ImagePullBackOff...), "" unless waiting."""
    terminated_reason: str
    """state.terminated.reason (Error, OOMKilled, Completed...), "" unless terminated."""
    exit_code: int | None
    """state.terminated.exitCode; None unless terminated."""
    init: bool
    """An init container's status."""


PodCondition = wire.PodCondition  # type, status, reason, last_transition (lastTransitionTime as written)
ConditionKind = tuple[str, str, str]  # a condition's type, status and reason


class Node(Struct, kw_only=True, gc=False):
    """A Node as plugins read it (`handle.state.nodes`, and the `nodes` a plugin is given)."""

    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    taints: tuple[Taint, ...]
    """spec.taints."""
    unschedulable: bool
    """spec.unschedulable: the node is cordoned."""
    ready: bool
    """No Ready condition other than True (a node without one counts as ready, as upstream counts it)."""
    allocatable: Mapping[str, float]
    """status.allocatable (capacity where it is missing): cpu in millicores, everything else in its base unit
    (memory in bytes, pods as a count)."""
    kubelet_version: str = ""  # a snapshot's only hint of the cluster's version
    """status.nodeInfo.kubeletVersion, "" when unset."""

    def tolerated_by(self, pod: Pod, effects: tuple[str, ...] = ("NoSchedule", "NoExecute")) -> bool:
        """The pod tolerates every taint of the node with one of these effects."""
        return all(pod.tolerates(t) for t in self.taints if t.effect in effects)


class Pod(Struct, kw_only=True, eq=False, gc=False):
    """A Pod as plugins read it (`handle.state.pods_on_node(name)`, ...): what plugins, filters and explain read,
    with the values the scheduler derives (effective requests, QoS class) worked out once."""

    namespace: str
    name: str
    uid: str
    node_name: str
    """spec.nodeName, "" for a pod not bound to a node."""
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    """metadata.annotations, without kubectl's last-applied-configuration (nothing reads it)."""
    owners: tuple[OwnerRef, ...]
    """metadata.ownerReferences, in order (see `controller`)."""
    priority: int | None
    """spec.priority, None when unset."""
    priority_class: str
    """spec.priorityClassName, "" when unset."""
    qos: str
    """status.qosClass, or worked out from the requests and limits as the kubelet does: Guaranteed, Burstable or
    BestEffort."""
    requests: Mapping[str, float]
    """The effective requests, as the scheduler counts them: the containers' (with restartable init sidecars), or
    the largest init container's if more, pod-level resources where set, plus overhead; cpu in millicores,
    everything else in its base unit."""
    phase: str
    """status.phase; Pending when unset."""
    reason: str
    """status.reason (Evicted, NodeLost, ...), "" when unset."""
    terminating: bool
    """metadata.deletionTimestamp is set."""
    created: str
    """metadata.creationTimestamp as written (RFC 3339), "" when unset; `pod_age` reads it."""
    started: str | None
    """status.startTime as written, None when unset."""
    local_volumes: tuple[str, ...]  # why a pod has local storage, as filters and explain say it
    """The volumes with local storage, as "emptyDir NAME" or "hostPath NAME"."""
    pvc_claims: tuple[str, ...]
    """The claimName of each persistentVolumeClaim volume."""
    has_resource_claims: bool
    """spec.resourceClaims is not empty (dynamic resource allocation)."""
    tolerations: tuple[Toleration, ...]
    """spec.tolerations."""
    node_selector: Mapping[str, str]
    """spec.nodeSelector."""
    affinity: Mapping[str, Any] | None
    """spec.affinity as the API's JSON (camelCase keys, unset fields left out), None when unset."""
    spread_constraints: tuple[Mapping[str, Any], ...]
    """spec.topologySpreadConstraints as the API's JSON."""
    images: tuple[str, ...]
    """The image of each of spec.containers, in order (not the init containers')."""
    statuses: tuple[ContainerStatus, ...]
    """The init containers' statuses (`init` true), then the containers'."""
    # status.conditions in two halves: their types, statuses and reasons, one pooled tuple shared by every pod with
    # the same sequence (most pods: five conditions, all True), and this pod's lastTransitionTimes in order, joined
    # by "|" (no valid time holds one; "" where unset) into one string. Five condition objects a pod were the
    # model's largest part, and only PodLifeTime's conditions filter reads the times.
    condition_kinds: tuple[ConditionKind, ...]
    """status.conditions' (type, status, reason), in order; read `conditions` for whole conditions."""
    condition_times: str
    """status.conditions' lastTransitionTimes joined by "|"; read `conditions` instead."""
    ephemeral_statuses: tuple[ContainerStatus, ...] = ()  # kept apart from the containers'
    """status.ephemeralContainerStatuses."""
    scheduler_name: str = DEFAULT_SCHEDULER  # Koordinator's ReservationFirst mode only moves its scheduler's pods
    """spec.schedulerName; default-scheduler when unset."""
    resource_version: str = ""  # as read: a plan names it, so a reviewer can tell the pod changed since
    """metadata.resourceVersion as read."""

    @property
    def key(self) -> str:
        """NAMESPACE/NAME."""
        return f"{self.namespace}/{self.name}"

    @property
    def controller(self) -> OwnerRef | None:
        """The owner reference marked controller, else the first one; None for a pod without owners."""
        for o in self.owners:
            if o.controller:
                return o
        return self.owners[0] if self.owners else None

    @property
    def is_terminal(self) -> bool:
        """The pod has finished: Succeeded or Failed."""
        return self.phase in ("Succeeded", "Failed")

    @property
    def conditions(self) -> tuple[PodCondition, ...]:
        """status.conditions, made when asked (PodLifeTime's conditions filter)."""
        if not self.condition_kinds:
            return ()
        return tuple(PodCondition(type=t, status=s, reason=r, last_transition=time)
                     for (t, s, r), time in zip(self.condition_kinds, self.condition_times.split("|"), strict=True))

    @property
    def ready(self) -> bool:
        """Its Ready condition is True (whatever else it is: terminating, finished)."""
        return any(t == "Ready" and s == "True" for t, s, _ in self.condition_kinds)

    def tolerates(self, taint: Taint) -> bool:
        """One of the pod's tolerations tolerates the taint."""
        return any(t.tolerates(taint) for t in self.tolerations)


class PodDisruptionBudget(Struct, kw_only=True, gc=False):
    """A PodDisruptionBudget (`handle.state.pdbs_for(pod)`)."""

    namespace: str
    name: str
    selector: Matcher
    """spec.selector compiled: called with a pod's labels, true when it selects them (policy/v1: an empty
    selector selects every pod of the namespace)."""
    disruptions_allowed: int
    """status.disruptionsAllowed."""
    fresh: bool
    """status.observedGeneration has caught up with metadata.generation, so the status is the spec's."""
    current_healthy: int | None = None  # to say why no disruption is allowed
    """status.currentHealthy, None when unset."""
    desired_healthy: int | None = None
    """status.desiredHealthy, None when unset."""

    def covers(self, pod: Pod) -> bool:
        """The budget is in the pod's namespace and selects it."""
        return pod.namespace == self.namespace and self.selector(pod.labels)


# --- the other kinds, as far as plugins read them ---------------------------------------------------------------

class Namespace(Struct, frozen=True, gc=False):
    """A Namespace (`state.extra["Namespace"]`, read when a plugin asks for the kind)."""

    name: str
    labels: Mapping[str, str]
    uid: str = ""  # kube-system's names the cluster a plan was made on
    """metadata.uid, "" when unset."""


class PriorityClass(Struct, frozen=True, gc=False):
    """A PriorityClass (`state.extra["PriorityClass"]`)."""

    name: str
    value: int
    """The priority of the pods that name it."""


class PersistentVolumeClaim(Struct, frozen=True, gc=False):
    """A PersistentVolumeClaim (`state.extra["PersistentVolumeClaim"]`)."""

    namespace: str
    name: str
    storage_class: str
    """spec.storageClassName, "" when unset."""

    @property
    def key(self) -> str:
        """NAMESPACE/NAME."""
        return f"{self.namespace}/{self.name}"


class NodeMetrics(Struct, frozen=True, gc=False):
    """metrics.k8s.io: a node's usage (`state.extra["NodeMetrics"]`)."""

    name: str
    usage: Mapping[str, float]
    """cpu in millicores, memory in bytes."""


class PodMetrics(Struct, frozen=True, gc=False):
    """metrics.k8s.io: a pod's usage, summed over its containers (`state.extra["PodMetrics"]`)."""

    namespace: str
    name: str
    usage: Mapping[str, float]
    """cpu in millicores, memory in bytes."""

    @property
    def key(self) -> str:
        """NAMESPACE/NAME."""
        return f"{self.namespace}/{self.name}"


class NodeMetric(Struct, frozen=True, gc=False):
    """Koordinator's NodeMetric (slo.koordinator.sh/v1alpha1): when koordlet last reported, system usage and
    per-pod usage (`state.extra["NodeMetric"]`)."""

    name: str
    update_time: str
    """status.updateTime as written, "" when unset."""
    has_node_metric: bool
    """status.nodeMetric is set."""
    system: Mapping[str, float]
    """status.nodeMetric.systemUsage: cpu in millicores, memory in bytes."""
    pods: Mapping[str, Mapping[str, float]]
    """Each pod's usage from status.podsMetric, by NAMESPACE/NAME."""


@contextlib.contextmanager
def cycle_collector_paused() -> Iterator[None]:
    """For reading a cluster: millions of acyclic objects, which the cycle collector would only scan again and
    again as they pile up. They are frozen when done (gc.freeze): the state lives as long as the command, and
    otherwise the first collection after this scans them all (2 s of a 10 s run at 37,500 pods). Frozen objects
    are still freed by reference counting."""
    enabled = gc.isenabled() or collector.end_start_pause()  # the first read ends the pause of starting
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


class _Pool:
    """Equal values read from many pods (replicas' labels, tolerations, owners, affinity, requests) kept once:
    at 150,000 pods this more than halves the model's memory. Pooled values are shared between pods, which is
    safe because the model is read-only. Keys are made of the decoded values (typed, so `controller: true` and
    `controller: 1` never meet), and what a value is made into is made once per distinct value."""

    def __init__(self, limit: int = 1 << 18) -> None:
        self.limit = limit
        self._items: dict[Any, Any] = {}

    def get(self, key: Any, value: Any) -> Any:
        """The pooled value for key, else value (remembered while the pool has room)."""
        try:
            found = self._items.get(key)
        except TypeError:  # an unhashable key: not pooled
            return value
        if found is not None:
            return found
        if len(self._items) < self.limit:
            self._items[key] = value
        return value

    def find(self, key: Any) -> Any:
        """The pooled value for a hashable key, or None."""
        return self._items.get(key)


_pool = _Pool()
_EMPTY: Mapping[str, Any] = {}
_INF = float("inf")


class ParseError(ValueError):
    """Raised with the object's kind/name when an API object cannot be read."""


class _Wrong(ValueError):
    """Found while finishing an object the types let through; the full schema then says where."""


def _name(kind: str, obj: Any) -> str:
    """How errors name an object: `Pod shop/web-1`, `Node n1`; whatever the object holds."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    if not isinstance(meta, Mapping):
        return f"a {kind}"
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not name:
        return f"a {kind}"
    name = shapes.printable(name)
    if isinstance(namespace, str) and namespace:
        return f"{kind} {shapes.printable(namespace)}/{name}"
    return f"{kind} {name}"


def _required_name(kind: str, name: str) -> str:
    if not name:
        raise ParseError(f"a {kind} without metadata.name")
    if not _NAME.fullmatch(name) or len(name) > SUBDOMAIN_MAX:  # what the API server admits; nothing to print raw
        raise Invalid("metadata.name", dns1123_subdomain_problem(name) or "is not a valid name")
    return name


_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
_seen_names: dict[str, dict[str, str]] = {}  # per field: namespaces and node names repeat over thousands of pods


def _checked(field: str, value: str, problem: Callable[[str], str | None]) -> str:
    """The value checked once per field (a node name may be no namespace) and kept once: every pod of a namespace
    or a node then holds the same string, not its own copy of it."""
    seen = _seen_names.setdefault(field, {})
    found = seen.get(value)
    if found is not None:
        return found
    why = problem(value)
    if why is not None:
        raise Invalid(field, why)
    value = _intern(value)
    if len(seen) < 100_000:
        seen[value] = value
    return value


def _resources(raw: Mapping[str, Any] | None) -> dict[str, float]:
    """A ResourceList: cpu in millicores, the rest in base units; finite and not negative, as the API stores.
    Parsed once per distinct list (containers repeat theirs); the result is pooled, so it is never changed."""
    if not raw:
        return {}
    key = _flat("resources", raw)
    out = _pool.find(key)
    if out is not None:
        return out
    out = {}
    for k, v in raw.items():
        value = resource_value(k, v)  # ValueError: located by the schema
        if not 0 <= value < _INF:  # NaN fails this too
            raise _Wrong
        out[_intern(k)] = value
    return _pool.get(key, out)


def _strings(raw: Mapping[str, str] | None) -> Mapping[str, str]:
    """A map of strings (labels, annotations, nodeSelector), pooled by its items."""
    if not raw:
        return _EMPTY
    return _pool.get(_flat("strings", raw), raw)


def _flat(tag: str, raw: Mapping[str, Any]) -> tuple[Any, ...]:
    """A pool key for a map: its keys, then its values, in one flat tuple (equal keys mean equal maps: the length
    says how many items). The pool keeps one key per distinct map (most pods' labels are distinct at 150,000
    pods): a tuple per item cost 15 MiB more there."""
    return (tag, *raw, *raw.values())


# --- Node --------------------------------------------------------------------------------------------------------

def finish_node(w: wire.Node) -> Node:
    meta, status = w.metadata, w.status
    name = _required_name("Node", meta.name)
    # As upstream: only a Ready condition that is not True makes a node not ready; a node without one counts.
    ready = not any(c.type == "Ready" and c.status != "True" for c in status.conditions)
    return Node(
        name=_intern(name),
        labels=meta.labels or {},
        annotations=meta.annotations or {},
        taints=tuple(Taint(t.key, t.value, t.effect) for t in w.spec.taints),
        unschedulable=w.spec.unschedulable,
        ready=ready,
        allocatable=_resources(status.allocatable or status.capacity),
        kubelet_version=_intern(status.node_info.kubelet_version) if status.node_info else "",
    )


# --- Pod ---------------------------------------------------------------------------------------------------------

def _add(into: dict[str, float], res: Mapping[str, float]) -> None:
    for k, v in res.items():
        into[k] = into.get(k, 0.0) + v


def _max(into: dict[str, float], res: Mapping[str, float]) -> None:
    for k, v in res.items():
        if v > into.get(k, 0.0):
            into[k] = v


def _requests(c: wire.Container) -> dict[str, float]:
    return _resources(c.resources.requests) if c.resources is not None else {}


def _spec_requests(spec: wire.PodSpec) -> dict[str, float]:
    """Effective requests as the scheduler counts them: containers (plus restartable init sidecars),
    or the largest init container if that is more, cpu/memory/hugepages replaced by the pod-level requests where
    set, plus pod overhead."""
    containers = spec.containers
    if len(containers) == 1 and not spec.init_containers and spec.resources is None and spec.overhead is None:
        return _requests(containers[0])  # most pods
    total: dict[str, float] = {}
    for c in containers:
        _add(total, _requests(c))
    sidecars: dict[str, float] = {}
    init_peak: dict[str, float] = {}
    for c in spec.init_containers:
        req = _requests(c)
        if c.restart_policy == "Always":
            _add(sidecars, req)
            _max(init_peak, sidecars)
        else:
            step = dict(sidecars)
            _add(step, req)
            _max(init_peak, step)
    _add(total, sidecars)
    _max(total, init_peak)
    if spec.resources is not None:  # PodLevelResources: the pod's own requests replace its containers' for these
        for name, value in _resources(spec.resources.requests).items():
            if name in ("cpu", "memory") or name.startswith("hugepages-"):
                total[name] = value
    _add(total, _resources(spec.overhead))
    return total


def pod_requests(spec: Mapping[str, Any]) -> dict[str, float]:
    """The effective requests of a pod spec given as parsed JSON."""
    return _spec_requests(msgspec.convert(_without_nulls(spec), wire.PodSpec))


def _qos(spec: wire.PodSpec) -> str:
    any_set = False
    guaranteed = True
    for c in (*spec.containers, *spec.init_containers):
        res = c.resources or _NO_RESOURCES
        req, lim = _resources(res.requests), _resources(res.limits)
        # Only non-zero cpu and memory decide the class, as in the kubelet's ComputePodQOS.
        if any(q.get(r, 0) > 0 for q in (req, lim) for r in ("cpu", "memory")):
            any_set = True
        for r in ("cpu", "memory"):
            if lim.get(r, 0) <= 0 or (r in req and req[r] != lim[r]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


_NO_RESOURCES = wire.Resources()


def _statuses(raw: list[wire.ContainerStatus], init: bool) -> list[ContainerStatus]:
    out = []
    for s in raw:
        state = s.state
        waiting = state.waiting if state is not None else None
        term = state.terminated if state is not None else None
        status = ContainerStatus(
            name=s.name,
            restarts=s.restart_count,
            waiting_reason=waiting.reason if waiting is not None else "",
            terminated_reason=term.reason if term is not None else "",
            exit_code=term.exit_code if term is not None else None,  # `terminated: {}` is still terminated, code 0
            init=init,
        )
        out.append(_pool.get(status, status))
    return out


# A pod's condition times joined by "|" (which no timestamp holds; "" where unset), as the model keeps them: one
# match a pod instead of one a time (msgspec's pattern check cost 0.5 us each, five or six times a pod).
_TIMES = re.compile(rf"(?:{shapes.RFC3339.pattern})?(?:\|(?:{shapes.RFC3339.pattern})?)*")


def _times_valid(times: str, count: int, started: str, created: str) -> bool:
    """The joined condition times hold `count` times, each valid or unset; startTime is valid (the typed decode
    checked creationTimestamp, which it most often equals)."""
    if count and (times.count("|") != count - 1 or _TIMES.fullmatch(times) is None):
        return False
    return not started or started == created or shapes.RFC3339.fullmatch(started) is not None


def _condition_kinds(raw: list[PodCondition]) -> tuple[ConditionKind, ...]:
    """The pooled sequence of (type, status, reason): pods share a handful of them."""
    kinds = tuple((c.type, c.status, c.reason) for c in raw)
    found = _pool.find(("conditions", kinds))
    if found is not None:
        return found
    kept = tuple((_intern(t), _intern(s), _intern(r) if r else "") for t, s, r in kinds)
    return _pool.get(("conditions", kinds), kept)


def _tolerations(raw: tuple[wire.Toleration, ...]) -> tuple[Toleration, ...]:
    return tuple(Toleration(t.key, t.operator or "Equal", t.value, t.effect) for t in raw)


def _owners(raw: tuple[wire.OwnerReference, ...]) -> tuple[OwnerRef, ...]:
    return tuple(OwnerRef(_intern(o.kind), o.name, o.uid, o.controller) for o in raw)


def _pooled(tag: str, raw: tuple[Any, ...], build: Callable[[Any], Any]) -> Any:
    """Frozen wire Structs hash by value: equal owner lists or tolerations are built once."""
    if not raw:
        return ()
    key = (tag, raw)
    found = _pool.find(key)
    return found if found is not None else _pool.get(key, build(raw))


_encode, _decode = msgspec.json.encode, msgspec.json.decode


def _as_json(tag: str, typed: Any) -> Any:
    """Affinity and spread constraints as the plugins read them, plain dicts and lists (fields left unset are
    left out, as in the API's JSON), made once per distinct value."""
    text = _encode(typed)
    key = (tag, text)
    found = _pool.find(key)
    if found is None:
        found = _decode(text)
        found = _pool.get(key, tuple(found) if tag == "spread" else found)
    return found


def finish_pod(w: wire.Pod) -> Pod:
    meta, spec, status = w.metadata, w.spec, w.status
    name = _required_name("Pod", meta.name)
    namespace = meta.namespace
    namespace = _checked("metadata.namespace", namespace, dns1123_label_problem) if namespace else "default"
    containers = spec.containers
    conditions = status.conditions
    times = "|".join([c.last_transition for c in conditions])
    created = meta.creation_timestamp
    started = status.start_time
    if not containers or not _times_valid(times, len(conditions), started, created):
        raise _Wrong
    annotations = meta.annotations
    if annotations and any(k in annotations for k in _DROPPED_ANNOTATIONS):
        annotations = {k: v for k, v in annotations.items() if k not in _DROPPED_ANNOTATIONS}
    local: list[str] = []
    pvcs: list[str] = []
    for v in spec.volumes:
        if v.empty_dir is not None:
            local.append(f"emptyDir {v.name}")
        elif v.host_path is not None:
            local.append(f"hostPath {v.name}")
        elif v.persistent_volume_claim is not None:
            pvcs.append(v.persistent_volume_claim.claim_name)
    requests = _spec_requests(spec)
    qos = status.qos_class or _qos(spec)
    statuses = status.init_container_statuses and _statuses(status.init_container_statuses, True)
    if status.container_statuses:
        statuses = [*statuses, *_statuses(status.container_statuses, False)] if statuses else \
            _statuses(status.container_statuses, False)
    affinity = spec.affinity
    if affinity is not None:
        affinity = _as_json("affinity", affinity) or None
    spread = spec.topology_spread_constraints
    spread = _as_json("spread", spread) if spread else ()
    node_name = spec.node_name
    if node_name:
        node_name = _checked("spec.nodeName", node_name, dns1123_subdomain_problem)
    images = tuple(c.image for c in containers)
    if started == created:  # kept once
        started = created
    return Pod(
        namespace=namespace,
        name=name,
        uid=meta.uid,
        node_name=node_name,
        labels=_strings(meta.labels),
        annotations=_strings(annotations),
        owners=_pooled("owners", meta.owner_references, _owners),
        priority=spec.priority,
        priority_class=_intern(spec.priority_class_name),
        qos=_intern(qos),
        requests=_pool.get(_flat("requests", requests), requests) if requests else _EMPTY,
        phase=_intern(status.phase or "Pending"),
        reason=status.reason,
        terminating=bool(meta.deletion_timestamp),
        created=created,
        started=started or None,
        local_volumes=tuple(local),
        pvc_claims=tuple(pvcs),
        has_resource_claims=bool(spec.resource_claims),
        tolerations=_pooled("tolerations", spec.tolerations, _tolerations),
        node_selector=_strings(spec.node_selector),
        affinity=affinity,
        spread_constraints=spread,
        images=_pool.get(("images", *images), images),
        statuses=_pool.get(kept, kept) if (kept := tuple(statuses)) else (),  # replicas share theirs
        condition_kinds=_condition_kinds(conditions) if conditions else (),
        condition_times=times,
        ephemeral_statuses=tuple(_statuses(status.ephemeral_container_statuses, False))
        if status.ephemeral_container_statuses else (),
        scheduler_name=_intern(spec.scheduler_name or DEFAULT_SCHEDULER),
        resource_version=meta.resource_version,
    )


# --- PodDisruptionBudget -----------------------------------------------------------------------------------------

def finish_pdb(w: wire.PodDisruptionBudget) -> PodDisruptionBudget:
    meta = w.metadata
    name = _required_name("PodDisruptionBudget", meta.name)
    raw_selector = w.spec.selector
    selector: Matcher
    if raw_selector is None:
        selector = _covers_nothing  # policy/v1: an empty selector covers every pod of the namespace, none a missing one
    else:
        shapes.LABEL_SELECTOR(raw_selector, "spec.selector")
        try:
            selector = label_selector(raw_selector)
        except ValueError as e:
            raise Invalid("spec.selector", str(e)) from None
    generation, observed = meta.generation, w.status.observed_generation
    return PodDisruptionBudget(
        namespace=meta.namespace or "default",
        name=name,
        selector=selector,
        disruptions_allowed=w.status.disruptions_allowed,
        fresh=generation is None or (observed is not None and observed >= generation),
        current_healthy=w.status.current_healthy,
        desired_healthy=w.status.desired_healthy,
    )


def _covers_nothing(_labels: Mapping[str, str]) -> bool:
    return False


# --- the other kinds ---------------------------------------------------------------------------------------------

def _usage(raw: Mapping[str, Any] | None) -> dict[str, float]:
    return _resources(raw)


def _finish_namespace(w: wire.Namespace) -> Namespace:
    return Namespace(w.metadata.name, _strings(w.metadata.labels), w.metadata.uid)


def _finish_priority_class(w: wire.PriorityClass) -> PriorityClass:
    return PriorityClass(w.metadata.name, w.value)


def _finish_claim(w: wire.PersistentVolumeClaim) -> PersistentVolumeClaim:
    return PersistentVolumeClaim(w.metadata.namespace, w.metadata.name, w.spec.storage_class_name or "")


def _finish_node_metrics(w: wire.NodeMetrics) -> NodeMetrics:
    return NodeMetrics(w.metadata.name, _usage(w.usage))


def _finish_pod_metrics(w: wire.PodMetrics) -> PodMetrics:
    total: dict[str, float] = {}
    for c in w.containers:
        _add(total, _usage(c.usage))
    return PodMetrics(w.metadata.namespace, w.metadata.name, total)


def _finish_node_metric(w: wire.NodeMetric) -> NodeMetric:
    status = w.status
    node_metric = status.node_metric
    system = node_metric.system_usage if node_metric is not None else None
    pods = {f"{pm.namespace}/{pm.name}": _usage(pm.pod_usage.resources if pm.pod_usage else None)
            for pm in status.pods_metric}
    return NodeMetric(w.metadata.name, status.update_time, node_metric is not None,
                      _usage(system.resources if system is not None else None), pods)


FINISH: dict[str, Callable[[Any], Any]] = {
    "Pod": finish_pod, "Node": finish_node, "PodDisruptionBudget": finish_pdb,
    "Namespace": _finish_namespace, "PriorityClass": _finish_priority_class,
    "PersistentVolumeClaim": _finish_claim, "NodeMetrics": _finish_node_metrics,
    "PodMetrics": _finish_pod_metrics, "NodeMetric": _finish_node_metric,
}
SCHEMA: dict[str, shapes.Check] = {"Pod": shapes.POD, "Node": shapes.NODE, "PodDisruptionBudget": shapes.PDB,
                                   **shapes.EXTRA}


# --- from parsed JSON (the slow way, and the one that names what is wrong) ----------------------------------------

def _without_nulls(value: Any) -> Any:
    """The API reads a null field as the empty value, which is what leaving it out means to the typed decoder.
    Nulls inside lists stay (the schema refuses them)."""
    if type(value) is dict:
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if type(value) is list:
        return [_without_nulls(v) for v in value]
    return value


def from_json(kind: str, obj: Any) -> Any:
    """One parsed object of a kind the model types (the caller chose the kind), checked by the full schema
    first: its errors name the field."""
    if not isinstance(obj, Mapping):
        raise ParseError(f"a {kind} must be an object, not {shapes.describe(obj)}")
    problem = shapes.check_all(SCHEMA[kind], obj)
    if problem is not None:
        raise ParseError(f"{_name(kind, obj)}: {problem}")
    try:
        return FINISH[kind](msgspec.convert({**_without_nulls(dict(obj)), "kind": kind}, wire.BY_KIND[kind]))
    except ParseError:
        raise
    except Invalid as e:
        raise ParseError(f"{_name(kind, obj)}: {e}") from None
    except msgspec.ValidationError as e:
        raise ParseError(f"{_name(kind, obj)}: {_typed_problem(e)}") from None
    except (TypeError, ValueError, RecursionError) as e:
        raise ParseError(f"{_name(kind, obj)}: malformed: {type(e).__name__}: "
                         f"{short(str(e)) or 'a field of the wrong type'}") from None


def _typed_problem(e: msgspec.ValidationError) -> str:
    """msgspec's `Expected `str`, got `int` - at `$.spec.x[0]``, said as the schema says things."""
    text = str(e)
    message, _, where = text.rpartition(" - at `$")
    if not message:
        return short(text)
    return f"{where.rstrip('`').lstrip('.')}: {short(message)}"


def node_from_json(obj: Mapping[str, Any]) -> Node:
    return from_json("Node", obj)  # type: ignore[no-any-return]


def pod_from_json(obj: Mapping[str, Any]) -> Pod:
    return from_json("Pod", obj)  # type: ignore[no-any-return]


def pdb_from_json(obj: Mapping[str, Any]) -> PodDisruptionBudget:
    return from_json("PodDisruptionBudget", obj)  # type: ignore[no-any-return]


def extra_from_json(kind: str, obj: Any) -> Any:
    """Another kind a source read for the plugins: the kinds plugins read become their model (Namespace,
    PriorityClass, NodeMetric, ...), checked as far as plugins read them; other kinds are kept as parsed."""
    if kind in wire.EXTRA:
        return from_json(kind, obj)
    return obj
