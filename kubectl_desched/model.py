"""Lean, read-only views of Nodes, Pods and PodDisruptionBudgets.

Objects are built once from raw API JSON and keep only what plugins, filters and rendering need:
at 150,000 pods the kubernetes client's model classes (and the raw dicts) cost minutes and gigabytes.

Every field read is validated as it is read (shapes.py has the rules): a wrong type or a value the API server
would refuse is a ParseError naming the object and the field path. For pods, which there may be 150,000 of, the
checks are inlined, and values many pods share (labels, tolerations, affinity) are checked once, when first pooled;
anything the inline checks miss fails while building and is then located by the full schema.
"""

from __future__ import annotations

import contextlib
import gc
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kubectl_desched import shapes
from kubectl_desched.names import SUBDOMAIN_MAX, dns1123_label_problem, dns1123_subdomain_problem
from kubectl_desched.quantity import resource_value
from kubectl_desched.safeload import short
from kubectl_desched.selectors import Matcher, label_selector
from kubectl_desched.shapes import Invalid, not_a

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
    safe because the model is read-only. A value is validated when it enters the pool, so once per distinct
    value; keys are made of the raw values (not converted ones), so an invalid value never hits a valid entry."""

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

    def checked(self, key: Any, raw: Any, check: shapes.Check, path: str, build: Any = None) -> Any:
        """The pooled value for key; on a miss `raw` is checked (Invalid) and kept, or what build(raw) makes."""
        try:
            found = self._items.get(key)
            hashable = True
        except TypeError:  # something in it is not a string or a number: the check says what, if anything
            found, hashable = None, False
        if found is not None:
            return found
        check(raw, path)
        value = raw if build is None else build(raw)
        if hashable and len(self._items) < self.limit:
            self._items[key] = value
        return value

    def strings(self, raw: Any, path: str) -> Mapping[str, str]:
        """A map of strings (labels, annotations, nodeSelector), pooled by its items."""
        if raw is None:
            return _EMPTY
        if type(raw) is not dict:
            raise _Wrong
        if not raw:
            return _EMPTY
        return self.checked(("strings", *raw.items()), raw, shapes.string_map, path)

    def nested(self, tag: str, raw: Any, check: shapes.Check, path: str, build: Any = None) -> Any:
        """Nested JSON (affinity, spread constraints), pooled by its text."""
        return self.checked((tag, repr(raw)), raw, check, path, build)


_pool = _Pool()
_EMPTY: Mapping[str, Any] = {}
_INF = float("inf")


class ParseError(ValueError):
    """Raised with the object's kind/name when an API object cannot be read."""


class _Wrong(ValueError):
    """Found by a pod's inline checks, which do not spend time on paths: the schema then says where."""


def _dict(raw: Any) -> Mapping[str, Any]:
    """An optional object: null is empty."""
    if type(raw) is dict:
        return raw
    if raw is None:
        return _EMPTY
    raise _Wrong


def _list(raw: Any) -> list[Any] | tuple[()]:
    if type(raw) is list:
        return raw
    if raw is None:
        return ()
    raise _Wrong


def _str(raw: Any) -> str:
    """An optional string: null is ""."""
    if type(raw) is str:
        return raw
    if raw is None:
        return ""
    raise _Wrong


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


def _failed(kind: str, obj: Any, schema: shapes.Check, error: Exception) -> ParseError:
    """The error for an object that could not be read: the schema says where, else what failed."""
    if not isinstance(obj, Mapping):
        return ParseError(f"a {kind} must be an object, not {shapes.describe(obj)}")
    problem = shapes.check_all(schema, obj)
    if problem is None:
        problem = str(error) if isinstance(error, Invalid) else \
            f"malformed: {type(error).__name__}: {short(str(error)) or 'a field of the wrong type'}"
    return ParseError(f"{_name(kind, obj)}: {problem}")


def _required_name(kind: str, meta: Mapping[str, Any]) -> str:
    name = meta.get("name")
    if type(name) is not str:
        if name is None:
            raise ParseError(f"a {kind} without metadata.name")
        raise Invalid("metadata.name", not_a("a string", name))
    if not name:
        raise ParseError(f"a {kind} without metadata.name")
    if not _NAME.fullmatch(name) or len(name) > SUBDOMAIN_MAX:  # what the API server admits; nothing to print raw
        raise Invalid("metadata.name", dns1123_subdomain_problem(name) or "is not a valid name")
    return name


_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
_seen_names: set[str] = set()  # namespaces and node names repeat over thousands of pods: check each once


def _checked(field: str, value: str, problem: Callable[[str], str | None]) -> str:
    if value in _seen_names:
        return value
    why = problem(value)
    if why is not None:
        raise Invalid(field, why)
    if len(_seen_names) < 100_000:
        _seen_names.add(value)
    return value


def _resources(raw: Any) -> dict[str, float]:
    """A ResourceList: cpu in millicores, the rest in base units; finite and not negative, as the API stores."""
    if raw is None:
        return {}
    out = {}
    for k, v in _dict(raw).items():
        value = resource_value(k, v)  # ValueError or TypeError: located by the schema
        if not 0 <= value < _INF:  # NaN fails this too
            raise _Wrong
        out[_intern(k)] = value
    return out


def node_from_json(obj: Mapping[str, Any]) -> Node:
    """Nodes are few (5,000 at most): the whole schema is checked first."""
    problem = shapes.check_all(shapes.NODE, obj) if isinstance(obj, Mapping) else None
    try:
        if problem is not None:
            raise ParseError(f"{_name('Node', obj)}: {problem}")
        meta = _dict(obj.get("metadata"))
        name = _required_name("Node", meta)
        spec = _dict(obj.get("spec"))
        status = _dict(obj.get("status"))
        allocatable = _resources(status.get("allocatable") or status.get("capacity"))
        # As upstream: only a Ready condition that is not True makes a node not ready; a node without one counts.
        ready = not any(c.get("type") == "Ready" and c.get("status") != "True" for c in status.get("conditions") or ())
        return Node(
            name=_intern(name),
            labels=meta.get("labels") or {},
            annotations=meta.get("annotations") or {},
            taints=tuple(Taint(t["key"], t.get("value") or "", t["effect"]) for t in spec.get("taints") or ()),
            unschedulable=bool(spec.get("unschedulable")),
            ready=ready,
            allocatable=allocatable,
        )
    except ParseError:
        raise
    except (AttributeError, TypeError, ValueError, KeyError, IndexError) as e:
        raise _failed("Node", obj, shapes.NODE, e) from None


def _add(into: dict[str, float], res: Mapping[str, float]) -> None:
    for k, v in res.items():
        into[k] = into.get(k, 0.0) + v


def _max(into: dict[str, float], res: Mapping[str, float]) -> None:
    for k, v in res.items():
        if v > into.get(k, 0.0):
            into[k] = v


def _requests(c: Any) -> dict[str, float]:
    return _resources(_dict(_dict(c).get("resources")).get("requests"))


def pod_requests(spec: Mapping[str, Any]) -> dict[str, float]:
    """Effective requests as the scheduler counts them: containers (plus restartable init sidecars),
    or the largest init container if that is more, cpu/memory/hugepages replaced by the pod-level requests where
    set, plus pod overhead."""
    total: dict[str, float] = {}
    for c in _list(spec.get("containers")):
        _add(total, _requests(c))
    sidecars: dict[str, float] = {}
    init_peak: dict[str, float] = {}
    for c in _list(spec.get("initContainers")):
        req = _requests(c)
        if c.get("restartPolicy") == "Always":
            _add(sidecars, req)
            _max(init_peak, sidecars)
        else:
            step = dict(sidecars)
            _add(step, req)
            _max(init_peak, step)
    _add(total, sidecars)
    _max(total, init_peak)
    pod_level = spec.get("resources")
    if pod_level is not None:  # PodLevelResources: the pod's own requests replace its containers' for these
        for name, value in _requests({"resources": pod_level}).items():
            if name in ("cpu", "memory") or name.startswith("hugepages-"):
                total[name] = value
    _add(total, _resources(spec.get("overhead")))
    return total


def _qos(spec: Mapping[str, Any]) -> str:
    containers = list(spec.get("containers") or ()) + list(spec.get("initContainers") or ())
    any_set = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = _resources(res.get("requests")), _resources(res.get("limits"))
        # Only non-zero cpu and memory decide the class, as in the kubelet's ComputePodQOS.
        if any(q.get(r, 0) > 0 for q in (req, lim) for r in ("cpu", "memory")):
            any_set = True
        for r in ("cpu", "memory"):
            if lim.get(r, 0) <= 0 or (r in req and req[r] != lim[r]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


_QOS_CLASSES = frozenset(("Guaranteed", "Burstable", "BestEffort"))


_INT32_MIN, _INT32_MAX = shapes.INT32


def _count(raw: Any) -> int:
    """An optional int32 that is not negative; null is 0."""
    if type(raw) is int and 0 <= raw <= _INT32_MAX:
        return raw
    if raw is None:
        return 0
    raise _Wrong


def _int32(raw: Any) -> int:
    if type(raw) is int and _INT32_MIN <= raw <= _INT32_MAX:
        return raw
    if raw is None:
        return 0
    raise _Wrong


def _statuses(raw: Any, init: bool) -> list[ContainerStatus]:
    out = []
    for s in _list(raw):
        state = s.get("state") or _EMPTY
        waiting = state.get("waiting") or _EMPTY
        term = state.get("terminated")
        terminated = term is not None  # `terminated: {}` is still a terminated state, exit code 0
        term = term or _EMPTY
        name, restarts = s.get("name"), s.get("restartCount")
        if type(name) is not str or type(restarts) is not int or not 0 <= restarts <= _INT32_MAX:
            name, restarts = _str(name), _count(restarts)
        status = ContainerStatus(
            name=name,
            restarts=restarts,
            waiting_reason=_str(waiting.get("reason")),
            terminated_reason=_str(term.get("reason")),
            exit_code=_int32(term.get("exitCode")) if terminated else None,
            init=init,
        )
        out.append(_pool.get(status, status))
    return out


_is_time = shapes.RFC3339.fullmatch


def _time(raw: Any) -> str:
    """An optional RFC 3339 timestamp, kept as written; null is ""."""
    if type(raw) is str and _is_time(raw):
        return raw
    if raw is None:
        return ""
    raise _Wrong


def _conditions(raw: Any) -> tuple[PodCondition, ...]:
    out = []
    for c in _list(raw):
        kind, status, reason, since = c.get("type"), c.get("status"), c.get("reason"), c.get("lastTransitionTime")
        if type(kind) is not str or type(status) is not str or (reason is not None and type(reason) is not str) or (
                since is not None and not (type(since) is str and _is_time(since))):
            raise _Wrong
        out.append(PodCondition(_intern(kind), _intern(status), _intern(reason) if reason else "", since or ""))
    return tuple(out)


def _tolerations(raw: Any) -> tuple[Toleration, ...]:
    return tuple(Toleration(t.get("key") or "", t.get("operator") or "Equal", t.get("value") or "",
                            t.get("effect") or "") for t in raw)


def _owners(raw: Any) -> tuple[OwnerRef, ...]:
    return tuple(OwnerRef(_intern(o["kind"]), o["name"], o.get("uid") or "", bool(o.get("controller")))
                 for o in raw)


def pod_from_json(obj: Mapping[str, Any]) -> Pod:
    try:
        return _pod(obj)
    except ParseError:
        raise
    except (AttributeError, TypeError, ValueError, KeyError, IndexError) as e:
        raise _failed("Pod", obj, shapes.POD, e) from None


def _pod(obj: Mapping[str, Any]) -> Pod:
    meta = _dict(obj.get("metadata"))
    name = _required_name("Pod", meta)
    namespace = meta.get("namespace")
    if type(namespace) is not str:
        namespace = _str(namespace)
    if namespace:
        _checked("metadata.namespace", namespace, dns1123_label_problem)
    spec = obj.get("spec")
    if type(spec) is not dict:
        raise _Wrong
    status = _dict(obj.get("status"))
    annotations = meta.get("annotations")
    if annotations and any(k in annotations for k in _DROPPED_ANNOTATIONS):
        shapes.string_map(annotations, "metadata.annotations")
        annotations = {k: v for k, v in annotations.items() if k not in _DROPPED_ANNOTATIONS}
    local, pvcs, = [], []
    for v in _list(spec.get("volumes")):
        if "emptyDir" in _dict(v):
            local.append(f"emptyDir {_str(v.get('name'))}")
        elif "hostPath" in v:
            local.append(f"hostPath {_str(v.get('name'))}")
        elif "persistentVolumeClaim" in v:
            pvcs.append(_str(_dict(v["persistentVolumeClaim"]).get("claimName")))
    containers = spec.get("containers")
    if type(containers) is not list or not containers:
        raise _Wrong
    requests = pod_requests(spec)
    qos = status.get("qosClass")
    if qos is None:
        qos = _qos(spec)
    elif qos not in _QOS_CLASSES:
        raise _Wrong
    statuses = _statuses(status.get("initContainerStatuses"), True) + _statuses(status.get("containerStatuses"), False)
    raw_owners = meta.get("ownerReferences")
    owners: tuple[OwnerRef, ...] = ()
    if raw_owners is not None:
        # True == 1 as a key: the type of the booleans is part of it, so an invalid `controller: 1` never hits
        owners = _pool.checked(("owners", *((*o.items(), type(o.get("controller")), type(o.get("blockOwnerDeletion")))
                                            for o in raw_owners)), raw_owners,
                               shapes.OWNER_REFERENCES, "metadata.ownerReferences", _owners)
    raw_tolerations = spec.get("tolerations")
    tolerations: tuple[Toleration, ...] = ()
    if raw_tolerations is not None:
        tolerations = _pool.checked(("tolerations", *((*t.items(), type(t.get("tolerationSeconds")))
                                                      for t in raw_tolerations)), raw_tolerations,
                                    shapes.TOLERATIONS, "spec.tolerations", _tolerations)
    images = tuple(c.get("image") for c in containers)
    priority = spec.get("priority")
    if priority is not None and not (type(priority) is int and _INT32_MIN <= priority <= _INT32_MAX):
        raise _Wrong
    affinity = spec.get("affinity")
    if affinity is not None:
        affinity = _pool.nested("affinity", affinity, shapes.AFFINITY, "spec.affinity") or None
    spread = spec.get("topologySpreadConstraints")
    spread = () if spread is None else _pool.nested("spread", spread, shapes.SPREAD_CONSTRAINTS,
                                                    "spec.topologySpreadConstraints", tuple)
    claims = spec.get("resourceClaims")
    if claims is not None and type(claims) is not list:
        raise _Wrong
    node_name = spec.get("nodeName")
    if type(node_name) is str and node_name:
        _checked("spec.nodeName", node_name, dns1123_subdomain_problem)
    uid = meta.get("uid")
    phase = status.get("phase")
    deleted = meta.get("deletionTimestamp")
    return Pod(
        namespace=_intern(namespace or "default"),
        name=name,
        uid=uid if type(uid) is str else _str(uid),
        node_name=_intern(node_name if type(node_name) is str else _str(node_name)),
        labels=_pool.strings(meta.get("labels"), "metadata.labels"),
        annotations=_pool.strings(annotations, "metadata.annotations"),
        owners=owners,
        priority=priority,
        priority_class=_str(spec.get("priorityClassName")),
        qos=_intern(qos),
        requests=_pool.get(("requests", *requests.items()), requests) if requests else _EMPTY,
        phase=_intern(phase if type(phase) is str and phase else _str(phase) or "Pending"),
        reason=_str(status.get("reason")),
        terminating=deleted is not None and bool(_time(deleted)),
        created=_time(meta.get("creationTimestamp")),
        started=_time(status.get("startTime")) or None,
        local_volumes=tuple(local),
        pvc_claims=tuple(pvcs),
        has_resource_claims=bool(claims),
        tolerations=tolerations,
        node_selector=_pool.strings(spec.get("nodeSelector"), "spec.nodeSelector"),
        affinity=affinity,
        spread_constraints=spread,
        images=_pool.checked(("images", *images), images, _images, "spec.containers", _no_nulls),
        statuses=tuple(statuses),
        conditions=_conditions(status.get("conditions")),
        ephemeral_statuses=tuple(_statuses(status.get("ephemeralContainerStatuses"), False)),
        scheduler_name=_intern(spec.get("schedulerName") or DEFAULT_SCHEDULER),
    )


def _images(images: tuple[Any, ...], path: str) -> None:
    for i, image in enumerate(images):
        if image is not None:
            shapes.string(image, f"{path}[{i}].image")


def _no_nulls(images: tuple[str | None, ...]) -> tuple[str, ...]:
    return tuple(i or "" for i in images)


def pdb_from_json(obj: Mapping[str, Any]) -> PodDisruptionBudget:
    """PodDisruptionBudgets are few next to pods: the whole schema is checked first."""
    problem = shapes.check_all(shapes.PDB, obj) if isinstance(obj, Mapping) else None
    try:
        if problem is not None:
            raise ParseError(f"{_name('PodDisruptionBudget', obj)}: {problem}")
        meta = _dict(obj.get("metadata"))
        name = _required_name("PodDisruptionBudget", meta)
        status = _dict(obj.get("status"))
        try:
            raw_selector = _dict(obj.get("spec")).get("selector")
            # policy/v1: an empty selector covers every pod of the namespace, a missing one none (as upstream)
            selector = label_selector(raw_selector) if raw_selector is not None else _covers_nothing
        except ValueError as e:
            raise ParseError(f"{_name('PodDisruptionBudget', obj)}: spec.selector: {e}") from None
        generation = meta.get("generation")
        observed = status.get("observedGeneration")
        return PodDisruptionBudget(
            namespace=meta.get("namespace") or "default",
            name=name,
            selector=selector,
            disruptions_allowed=status.get("disruptionsAllowed") or 0,
            fresh=generation is None or (observed is not None and observed >= generation),
        )
    except ParseError:
        raise
    except (AttributeError, TypeError, ValueError, KeyError, IndexError) as e:
        raise _failed("PodDisruptionBudget", obj, shapes.PDB, e) from None


def extra_from_json(kind: str, obj: Any) -> Any:
    """Another kind a source read for the plugins (NodeMetric, PriorityClass, ...), checked as far as plugins read
    it and kept raw; kinds no plugin reads are kept unchecked."""
    check = shapes.EXTRA.get(kind)
    if check is not None:
        problem = shapes.check_all(check, obj)
        if problem is not None:
            raise ParseError(f"{_name(kind, obj)}: {problem}")
    return obj


def _covers_nothing(_labels: Mapping[str, str]) -> bool:
    return False
