"""The shape of API objects as the API server checks it: which fields are strings, integers, quantities, lists
or objects. The model (model/objects.py) validates what it reads with these when an object is read, so a wrong type is
one error naming the object and the field path (`spec.containers[0].resources.requests[cpu]`), never a
traceback in a plugin later.

A check is a function (value, path) that raises Invalid. null is accepted for every optional field, as the API's
decoder reads it as the empty value. Unknown fields are ignored, as in the API's non-strict decoding."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from kubectl_desched.model.quantity import parse_quantity

Check = Callable[[Any, str], None]

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
YAML11_HINT = " (YAML reads an unquoted yes, no, on, off, y, n, true or false as a boolean: quote it)"


class Invalid(ValueError):
    """A field whose value the API server would refuse."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path, self.message = path, message

    def under(self, parent: str) -> Invalid:
        """The same problem seen from the parent: paths are built only for the one field that fails."""
        if not self.path:
            return Invalid(parent, self.message)
        return Invalid(parent + self.path if self.path[0] == "[" or not parent else f"{parent}.{self.path}",
                       self.message)


def describe(value: Any) -> str:
    """What a value is, for messages: `a string ("high")`, `a list`, `null`. Short, whatever the value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int):
        text = str(value) if value.bit_length() < 64 else f"{str(value)[:12]}... ({len(str(abs(value)))} digits)"
        return f"the integer {text}"
    if isinstance(value, float):
        return f"the number {value!r}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {shown!r}"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


def policy_value(value: Any, limit: int = 60) -> str:
    """A value as Python writes it (as policy errors show values), cut short, on one line."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of {len(str(abs(value))) if value.bit_length() < 14000 else 'thousands of'} digits"
    text = repr(value) if not isinstance(value, Mapping | list | tuple) or len(value) < 50 else \
        ("{...}" if isinstance(value, Mapping) else "[...]")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def yaml_hint(expected: str, value: Any) -> str:
    """Why a boolean stands where a string was expected."""
    return YAML11_HINT if isinstance(value, bool) and expected.startswith("a string") else ""


def not_a(expected: str, value: Any) -> str:
    """`must be a string, not the boolean true (...)`: the hint says why YAML made a boolean of it."""
    return f"must be {expected}, not {describe(value)}{yaml_hint(expected, value)}"


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def printable(text: str, limit: int = 60) -> str:
    """A name or key as a message may show it: on one line, short, quoted when it has odd characters."""
    if len(text) <= limit and text.isprintable() and text.strip() == text and text:
        return text
    return repr(text[:limit] + ("..." if len(text) > limit else ""))


# --- scalars ---------------------------------------------------------------------------------------------------

def string(value: Any, path: str) -> None:
    if type(value) is not str:
        raise Invalid(path, not_a("a string", value))


def boolean(value: Any, path: str) -> None:
    if type(value) is not bool:
        raise Invalid(path, not_a("a boolean", value))


def integer(low: int, high: int, what: str = "an integer") -> Check:
    def check(value: Any, path: str) -> None:
        if type(value) is not int:
            raise Invalid(path, not_a(what, value))
        if not low <= value <= high:
            raise Invalid(path, f"must be from {low} to {high}, not {describe(value)}")

    return check


int32 = integer(*INT32)
int64 = integer(*INT64)
non_negative32 = integer(0, INT32[1], "a whole number")
positive32 = integer(1, INT32[1], "a whole number above 0")


def enum(*allowed: str) -> Check:
    def check(value: Any, path: str) -> None:
        if type(value) is not str or value not in allowed:
            shown = ", ".join(a or '""' for a in allowed)
            raise Invalid(path, f"must be one of {shown}, not {describe(value)}")

    return check


# The ranges are in the pattern (one regular expression, which the model runs on every pod's timestamps); a day
# past its month's end (02-30) still passes, and the plugins then treat the time as unknown.
RFC3339 = re.compile(r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])[Tt ](?:[01]\d|2[0-3]):[0-5]\d:(?:[0-5]\d|60)"
                     r"(?:\.\d{1,9})?(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)")


def timestamp(value: Any, path: str) -> None:
    """An RFC 3339 date and time with a zone, as the API writes metav1.Time: 2024-05-01T10:00:00Z."""
    if type(value) is not str or not RFC3339.fullmatch(value):
        raise Invalid(path, f"must be an RFC 3339 timestamp such as 2024-05-01T10:00:00Z, not {describe(value)}")


def quantity(value: Any, path: str) -> None:
    """A resource quantity the API would store: finite and not negative."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise Invalid(path, not_a("a quantity such as 500m or 1Gi", value))
    try:
        number = parse_quantity(value)
    except ValueError as e:
        if "out of range" in str(e):  # 1e999999999, .inf, NaN: no float holds them
            raise Invalid(path, f"{describe(value)} is out of range for a quantity") from None
        raise Invalid(path, f"must be a quantity such as 500m or 1Gi, not {describe(value)}") from None
    if number < 0:
        raise Invalid(path, f"must not be negative, not {describe(value)}")


_PERCENT = re.compile(r"\d+%")


def int_or_percent(value: Any, path: str) -> None:
    """An IntOrString that is a count or a percentage (a PodDisruptionBudget's minAvailable)."""
    if type(value) is int:
        if not 0 <= value <= INT32[1]:
            raise Invalid(path, f"must not be negative, not {describe(value)}")
        return
    if type(value) is not str or not _PERCENT.fullmatch(value):
        raise Invalid(path, f"must be a whole number or a percentage such as 50%, not {describe(value)}")


# --- collections -----------------------------------------------------------------------------------------------

# Containers check their children with an empty path and put the child's key in front of its path when it fails
# (Invalid.under): no path is formatted for the fields that are fine, which is nearly all of them.

def obj(fields: Mapping[str, Check], required: tuple[str, ...] = ()) -> Check:
    """An object with these fields (each checked when set and not null), in their order; `required` ones must be
    set."""
    assert set(required) <= set(fields), "a required field needs its check"
    items = tuple((key, check_field, key in required) for key, check_field in fields.items())

    def check(value: Any, path: str) -> None:
        if type(value) is not dict:
            raise Invalid(path, not_a("an object", value))
        for key, check_field, needed in items:
            v = value.get(key)
            if v is not None:
                try:
                    check_field(v, "")
                except Invalid as e:
                    raise e.under(join(path, key)) from None
            elif needed:
                raise Invalid(join(path, key), "required")

    return check


def list_of(item: Check, *, non_empty: bool = False) -> Check:
    def check(value: Any, path: str) -> None:
        if type(value) is not list:
            raise Invalid(path, not_a("a list", value))
        if non_empty and not value:
            raise Invalid(path, "must not be empty")
        for i, v in enumerate(value):
            if v is None:
                raise Invalid(f"{path}[{i}]", "must not be null")
            try:
                item(v, "")
            except Invalid as e:
                raise e.under(f"{path}[{i}]") from None

    return check


def map_of(item: Check) -> Check:
    """A map with string keys; a key shows in the path as [key], as the API server writes it."""

    def check(value: Any, path: str) -> None:
        if type(value) is not dict:
            raise Invalid(path, not_a("an object", value))
        for k, v in value.items():
            if type(k) is not str:
                raise Invalid(path, f"keys must be strings, not {describe(k)}")
            try:
                item(v, "")
            except Invalid as e:
                raise e.under(f"{path}[{printable(k)}]") from None

    return check


strings = list_of(string)
string_map = map_of(string)
quantities = map_of(quantity)


def check_all(check: Check, value: Any, path: str = "") -> str | None:
    """The first problem, or None."""
    try:
        check(value, path)
    except Invalid as e:
        return str(e)
    return None


# --- Kubernetes types the model reads --------------------------------------------------------------------------

LABEL_SELECTOR = obj({
    "matchLabels": string_map,
    "matchExpressions": list_of(obj({
        "key": string,
        "operator": enum("In", "NotIn", "Exists", "DoesNotExist"),
        "values": strings,
    }, required=("key", "operator"))),
})

_NODE_SELECTOR_REQUIREMENT = obj({
    "key": string,
    "operator": enum("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"),
    "values": strings,
}, required=("key", "operator"))
NODE_SELECTOR_TERM = obj({
    "matchExpressions": list_of(_NODE_SELECTOR_REQUIREMENT),
    "matchFields": list_of(_NODE_SELECTOR_REQUIREMENT),
})
_POD_AFFINITY_TERM = obj({
    "labelSelector": LABEL_SELECTOR,
    "namespaceSelector": LABEL_SELECTOR,
    "namespaces": strings,
    "topologyKey": string,
    "matchLabelKeys": strings,
    "mismatchLabelKeys": strings,
}, required=("topologyKey",))
_POD_AFFINITY = obj({
    "requiredDuringSchedulingIgnoredDuringExecution": list_of(_POD_AFFINITY_TERM),
    "preferredDuringSchedulingIgnoredDuringExecution": list_of(obj({
        "weight": integer(1, 100, "a whole number from 1 to 100"),
        "podAffinityTerm": _POD_AFFINITY_TERM,
    }, required=("weight", "podAffinityTerm"))),
})
AFFINITY = obj({
    "nodeAffinity": obj({
        "requiredDuringSchedulingIgnoredDuringExecution": obj({
            "nodeSelectorTerms": list_of(NODE_SELECTOR_TERM),
        }, required=("nodeSelectorTerms",)),
        "preferredDuringSchedulingIgnoredDuringExecution": list_of(obj({
            "weight": integer(1, 100, "a whole number from 1 to 100"),
            "preference": NODE_SELECTOR_TERM,
        }, required=("weight", "preference"))),
    }),
    "podAffinity": _POD_AFFINITY,
    "podAntiAffinity": _POD_AFFINITY,
})
SPREAD_CONSTRAINTS = list_of(obj({
    "maxSkew": positive32,
    "topologyKey": string,
    "whenUnsatisfiable": enum("DoNotSchedule", "ScheduleAnyway"),
    "labelSelector": LABEL_SELECTOR,
    "minDomains": positive32,
    "nodeAffinityPolicy": enum("Honor", "Ignore"),
    "nodeTaintsPolicy": enum("Honor", "Ignore"),
    "matchLabelKeys": strings,
}, required=("maxSkew", "topologyKey", "whenUnsatisfiable")))
TOLERATIONS = list_of(obj({
    "key": string,
    "operator": enum("", "Equal", "Exists", "Lt", "Gt"),
    "value": string,
    "effect": enum("", "NoSchedule", "PreferNoSchedule", "NoExecute"),
    "tolerationSeconds": int64,
}))
TAINTS = list_of(obj({
    "key": string,
    "value": string,
    "effect": enum("NoSchedule", "PreferNoSchedule", "NoExecute"),
    "timeAdded": timestamp,
}, required=("key", "effect")))
OWNER_REFERENCES = list_of(obj({
    "apiVersion": string, "kind": string, "name": string, "uid": string, "controller": boolean,
    "blockOwnerDeletion": boolean,
}, required=("kind", "name")))
_RESOURCES = obj({"requests": quantities, "limits": quantities})
_CONTAINER = obj({"name": string, "image": string, "resources": _RESOURCES, "restartPolicy": string})
_VOLUME = obj({
    "name": string,
    "emptyDir": obj({}),
    "hostPath": obj({"path": string}),
    "persistentVolumeClaim": obj({"claimName": string}, required=("claimName",)),
})
_CONTAINER_STATE = obj({
    "waiting": obj({"reason": string}),
    "terminated": obj({"reason": string, "exitCode": int32}),
})
_CONTAINER_STATUSES = list_of(obj({
    "name": string, "restartCount": non_negative32, "image": string, "state": _CONTAINER_STATE,
}))
OBJECT_META = obj({
    "name": string,
    "namespace": string,
    "uid": string,
    "labels": string_map,
    "annotations": string_map,
    "ownerReferences": OWNER_REFERENCES,
    "creationTimestamp": timestamp,
    "deletionTimestamp": timestamp,
    "generation": int64,
})

POD = obj({
    "metadata": OBJECT_META,
    "spec": obj({
        "nodeName": string,
        "containers": list_of(_CONTAINER, non_empty=True),
        "initContainers": list_of(_CONTAINER),
        "overhead": quantities,
        "resources": _RESOURCES,
        "volumes": list_of(_VOLUME),
        "priority": int32,
        "priorityClassName": string,
        "tolerations": TOLERATIONS,
        "nodeSelector": string_map,
        "affinity": AFFINITY,
        "topologySpreadConstraints": SPREAD_CONSTRAINTS,
        "resourceClaims": list_of(obj({"name": string})),
    }, required=("containers",)),
    "status": obj({
        "phase": string,
        "reason": string,
        "qosClass": enum("Guaranteed", "Burstable", "BestEffort"),
        "startTime": timestamp,
        "conditions": list_of(obj({
            "type": string, "status": string, "reason": string, "lastTransitionTime": timestamp,
        }, required=("type", "status"))),
        "containerStatuses": _CONTAINER_STATUSES,
        "initContainerStatuses": _CONTAINER_STATUSES,
        "ephemeralContainerStatuses": _CONTAINER_STATUSES,
    }),
}, required=("spec",))

NODE = obj({
    "metadata": OBJECT_META,
    "spec": obj({"taints": TAINTS, "unschedulable": boolean}),
    "status": obj({
        "allocatable": quantities,
        "capacity": quantities,
        "conditions": list_of(obj({"type": string, "status": string})),
    }),
})

PDB = obj({
    "metadata": OBJECT_META,
    "spec": obj({
        "selector": LABEL_SELECTOR,
        "minAvailable": int_or_percent,
        "maxUnavailable": int_or_percent,
    }),
    "status": obj({"disruptionsAllowed": non_negative32, "currentHealthy": non_negative32,
                   "desiredHealthy": non_negative32, "observedGeneration": int64}),
})

# The other kinds a source reads for plugins (kube/live.py's EXTRA_KINDS), as far as plugins read them.
_USAGE = obj({"usage": quantities})
EXTRA: dict[str, Check] = {
    "Namespace": obj({"metadata": OBJECT_META}),
    "PriorityClass": obj({"metadata": OBJECT_META, "value": int32}),
    "PersistentVolumeClaim": obj({"metadata": OBJECT_META, "spec": obj({"storageClassName": string})}),
    "NodeMetrics": obj({"metadata": OBJECT_META, "usage": quantities}),
    "PodMetrics": obj({"metadata": OBJECT_META, "containers": list_of(_USAGE)}),
    "NodeMetric": obj({
        "metadata": OBJECT_META,
        "status": obj({
            "updateTime": timestamp,
            "nodeMetric": obj({"systemUsage": obj({"resources": quantities})}),
            "podsMetric": list_of(obj({"namespace": string, "name": string,
                                       "podUsage": obj({"resources": quantities})})),
        }),
    }),
}
