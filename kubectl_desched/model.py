"""Lean, read-only views of Nodes, Pods and PodDisruptionBudgets.

Objects are built once from raw API JSON and keep only what plugins, filters and rendering need:
at 150,000 pods the kubernetes client's model classes (and the raw dicts) cost minutes and gigabytes.
"""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kubectl_desched.quantity import resource_value
from kubectl_desched.selectors import Matcher, label_selector

SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
DEFAULT_SCHEDULER = "default-scheduler"  # what the API server writes when spec.schedulerName is empty
_intern = sys.intern
_DROPPED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: Taint) -> bool:
        """The scheduler's rule: empty effect matches all effects, empty key with Exists matches all keys."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == taint.key
        return self.key == taint.key and self.value == taint.value


@dataclass(frozen=True, slots=True)
class OwnerRef:
    kind: str
    name: str
    uid: str
    controller: bool


@dataclass(frozen=True, slots=True)
class ContainerStatus:
    name: str
    restarts: int
    waiting_reason: str
    terminated_reason: str
    exit_code: int | None
    init: bool


class PodCondition(NamedTuple):
    """One status.conditions entry; a tuple, so it indexes as the former (type, status, reason) did."""

    type: str
    status: str
    reason: str
    last_transition: str  # lastTransitionTime as written, "" when unset


@dataclass(slots=True)
class Node:
    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    ready: bool
    allocatable: Mapping[str, float]

    def tolerated_by(self, pod: Pod, effects: tuple[str, ...] = ("NoSchedule", "NoExecute")) -> bool:
        return all(pod.tolerates(t) for t in self.taints if t.effect in effects)


@dataclass(slots=True, eq=False)
class Pod:
    namespace: str
    name: str
    uid: str
    node_name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    owners: tuple[OwnerRef, ...]
    priority: int | None
    priority_class: str
    qos: str
    requests: Mapping[str, float]
    phase: str
    reason: str
    terminating: bool
    created: str
    started: str | None
    local_volumes: tuple[str, ...]  # "emptyDir cache", "hostPath logs": why a pod has local storage
    pvc_claims: tuple[str, ...]
    has_resource_claims: bool
    tolerations: tuple[Toleration, ...]
    node_selector: Mapping[str, str]
    affinity: Mapping[str, Any] | None
    spread_constraints: tuple[Mapping[str, Any], ...]
    images: tuple[str, ...]
    statuses: tuple[ContainerStatus, ...]
    conditions: tuple[PodCondition, ...]
    ephemeral_statuses: tuple[ContainerStatus, ...] = ()  # status.ephemeralContainerStatuses, kept apart
    scheduler_name: str = DEFAULT_SCHEDULER  # Koordinator's ReservationFirst mode only moves its scheduler's pods
    extra: dict[str, Any] = field(default_factory=dict)  # room for out-of-tree plugins' caches

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def controller(self) -> OwnerRef | None:
        for o in self.owners:
            if o.controller:
                return o
        return self.owners[0] if self.owners else None

    @property
    def is_terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    def tolerates(self, taint: Taint) -> bool:
        return any(t.tolerates(taint) for t in self.tolerations)


@dataclass(slots=True)
class PodDisruptionBudget:
    namespace: str
    name: str
    selector: Matcher
    disruptions_allowed: int
    fresh: bool  # status.observedGeneration caught up with metadata.generation

    def covers(self, pod: Pod) -> bool:
        return pod.namespace == self.namespace and self.selector(pod.labels)


@contextlib.contextmanager
def cycle_collector_paused() -> Iterator[None]:
    """For reading a cluster: millions of acyclic objects, which the cycle collector would only scan again and
    again as they pile up. They are frozen when done (gc.freeze): the state lives as long as the command, and
    otherwise the first collection after this scans them all (2 s of a 10 s run at 37,500 pods). Frozen objects
    are still freed by reference counting."""
    enabled = gc.isenabled()
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
    safe because the model is read-only."""

    def __init__(self, limit: int = 1 << 18) -> None:
        self.limit = limit
        self._items: dict[Any, Any] = {}

    def get(self, key: Any, value: Any) -> Any:
        """The pooled value for key, else value (remembered while the pool has room)."""
        try:
            found = self._items.get(key)
        except TypeError:  # an unhashable key (odd JSON in a hand-written file): not pooled
            return value
        if found is not None:
            return found
        if len(self._items) < self.limit:
            self._items[key] = value
        return value

    def mapping(self, raw: Mapping[str, Any] | None) -> Mapping[str, Any]:
        """A flat map (labels, annotations, nodeSelector), pooled by its items."""
        if not raw:
            return _EMPTY
        return self.get(("map", *raw.items()), raw)

    def nested(self, raw: Any) -> Any:
        """Nested JSON (affinity, spread constraints), pooled by its text."""
        return self.get(("json", repr(raw)), raw) if raw else raw


_pool = _Pool()
_EMPTY: Mapping[str, Any] = {}


class ParseError(ValueError):
    """Raised with the object's kind/name when an API object cannot be read."""


def _taints(spec: Mapping[str, Any]) -> tuple[Taint, ...]:
    return tuple(
        Taint(t.get("key", ""), t.get("value", "") or "", t.get("effect", "")) for t in spec.get("taints") or ()
    )


def _resources(raw: Mapping[str, Any] | None) -> dict[str, float]:
    return {_intern(k): resource_value(k, v) for k, v in (raw or {}).items()}


def node_from_json(obj: Mapping[str, Any]) -> Node:
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name:
        raise ParseError("a Node without metadata.name")
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    try:
        allocatable = _resources(status.get("allocatable") or status.get("capacity"))
    except ValueError as e:
        raise ParseError(f"node {name}: bad quantity in status.allocatable: {e}") from None
    # As upstream: only a Ready condition that is not True makes a node not ready; a node without one counts.
    ready = not any(c.get("type") == "Ready" and c.get("status") != "True" for c in status.get("conditions") or ())
    return Node(
        name=_intern(name),
        labels=meta.get("labels") or {},
        annotations=meta.get("annotations") or {},
        taints=_taints(spec),
        unschedulable=bool(spec.get("unschedulable")),
        ready=ready,
        allocatable=allocatable,
    )


def _add(into: dict[str, float], res: Mapping[str, float]) -> None:
    for k, v in res.items():
        into[k] = into.get(k, 0.0) + v


def _max(into: dict[str, float], res: Mapping[str, float]) -> None:
    for k, v in res.items():
        if v > into.get(k, 0.0):
            into[k] = v


def pod_requests(spec: Mapping[str, Any]) -> dict[str, float]:
    """Effective requests as the scheduler counts them: containers (plus restartable init sidecars),
    or the largest init container if that is more, plus pod overhead."""
    total: dict[str, float] = {}
    for c in spec.get("containers") or ():
        _add(total, _resources((c.get("resources") or {}).get("requests")))
    sidecars: dict[str, float] = {}
    init_peak: dict[str, float] = {}
    for c in spec.get("initContainers") or ():
        req = _resources((c.get("resources") or {}).get("requests"))
        if c.get("restartPolicy") == "Always":
            _add(sidecars, req)
            _max(init_peak, sidecars)
        else:
            step = dict(sidecars)
            _add(step, req)
            _max(init_peak, step)
    _add(total, sidecars)
    _max(total, init_peak)
    _add(total, _resources(spec.get("overhead")))
    return total


def _qos(spec: Mapping[str, Any]) -> str:
    containers = list(spec.get("containers") or ()) + list(spec.get("initContainers") or ())
    any_set = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        # Only non-zero cpu and memory decide the class, as in the kubelet's ComputePodQOS.
        if any(resource_value(r, q[r]) > 0 for q in (req, lim) for r in ("cpu", "memory") if r in q):
            any_set = True
        for r in ("cpu", "memory"):
            if r not in lim or resource_value(r, lim[r]) <= 0 or (
                    r in req and resource_value(r, req[r]) != resource_value(r, lim[r])):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _statuses(raw: Any, init: bool) -> list[ContainerStatus]:
    out = []
    for s in raw or ():
        state = s.get("state") or {}
        waiting = state.get("waiting") or {}
        term = state.get("terminated")
        terminated = term is not None  # `terminated: {}` is still a terminated state, exit code 0
        term = term or {}
        status = ContainerStatus(
            name=s.get("name", ""),
            restarts=int(s.get("restartCount") or 0),
            waiting_reason=waiting.get("reason", "") or "",
            terminated_reason=term.get("reason", "") or "",
            exit_code=int(term.get("exitCode") or 0) if terminated else None,
            init=init,
        )
        out.append(_pool.get(status, status))
    return out


def pod_from_json(obj: Mapping[str, Any]) -> Pod:
    meta = obj.get("metadata") or {}
    name, namespace = meta.get("name"), meta.get("namespace") or "default"
    if not name:
        raise ParseError("a Pod without metadata.name")
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    annotations = meta.get("annotations") or {}
    if any(k in annotations for k in _DROPPED_ANNOTATIONS):
        annotations = {k: v for k, v in annotations.items() if k not in _DROPPED_ANNOTATIONS}
    local, pvcs, = [], []
    for v in spec.get("volumes") or ():
        if "emptyDir" in v:
            local.append(f"emptyDir {v.get('name', '')}")
        elif "hostPath" in v:
            local.append(f"hostPath {v.get('name', '')}")
        elif "persistentVolumeClaim" in v:
            pvcs.append((v["persistentVolumeClaim"] or {}).get("claimName", ""))
    try:
        requests = pod_requests(spec)
        qos = status.get("qosClass") or _qos(spec)
    except ValueError as e:
        raise ParseError(f"pod {namespace}/{name}: bad quantity in resources: {e}") from None
    statuses = _statuses(status.get("initContainerStatuses"), True) + _statuses(
        status.get("containerStatuses"), False
    )
    owners = tuple(
        OwnerRef(_intern(o.get("kind", "")), o.get("name", ""), o.get("uid", ""), bool(o.get("controller")))
        for o in meta.get("ownerReferences") or ()
    )
    tolerations = tuple(
        Toleration(t.get("key", "") or "", t.get("operator") or "Equal", t.get("value", "") or "",
                   t.get("effect", "") or "")
        for t in spec.get("tolerations") or ()
    )
    images = tuple(c.get("image", "") for c in spec.get("containers") or ())
    return Pod(
        namespace=_intern(namespace),
        name=name,
        uid=meta.get("uid", "") or "",
        node_name=_intern(spec.get("nodeName") or ""),
        labels=_pool.mapping(meta.get("labels")),
        annotations=_pool.mapping(annotations),
        owners=_pool.get(owners, owners),
        priority=spec.get("priority"),
        priority_class=spec.get("priorityClassName") or "",
        qos=_intern(qos),
        requests=_pool.mapping(requests),
        phase=_intern(status.get("phase") or "Pending"),
        reason=status.get("reason") or "",
        terminating=bool(meta.get("deletionTimestamp")),
        created=meta.get("creationTimestamp") or "",
        started=status.get("startTime"),
        local_volumes=tuple(local),
        pvc_claims=tuple(pvcs),
        has_resource_claims=bool(spec.get("resourceClaims")),
        tolerations=_pool.get(tolerations, tolerations),
        node_selector=_pool.mapping(spec.get("nodeSelector")),
        affinity=_pool.nested(spec.get("affinity") or None),
        spread_constraints=_pool.nested(tuple(spec.get("topologySpreadConstraints") or ())),
        images=_pool.get(images, images),
        statuses=tuple(statuses),
        conditions=tuple(
            PodCondition(_intern(c.get("type", "")), _intern(c.get("status", "")), _intern(c.get("reason", "") or ""),
                         c.get("lastTransitionTime") or "")
            for c in status.get("conditions") or ()
        ),
        ephemeral_statuses=tuple(_statuses(status.get("ephemeralContainerStatuses"), False)),
        scheduler_name=_intern(spec.get("schedulerName") or DEFAULT_SCHEDULER),
    )


def pdb_from_json(obj: Mapping[str, Any]) -> PodDisruptionBudget:
    meta = obj.get("metadata") or {}
    name = meta.get("name") or "?"
    status = obj.get("status") or {}
    try:
        selector = label_selector((obj.get("spec") or {}).get("selector"), empty_matches_all=True)
    except ValueError as e:
        raise ParseError(f"PodDisruptionBudget {name}: {e}") from None
    generation = meta.get("generation")
    observed = status.get("observedGeneration")
    return PodDisruptionBudget(
        namespace=meta.get("namespace") or "default",
        name=name,
        selector=selector,
        disruptions_allowed=int(status.get("disruptionsAllowed") or 0),
        fresh=generation is None or (observed is not None and observed >= generation),
    )
