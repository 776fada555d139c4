"""kubectl's --field-selector for pods: `field=value`, `field==value`, `field!=value`, comma-separated (a backslash
escapes a comma, `=` or `!` in a value). Against a cluster the apiserver evaluates it (every field it supports);
a snapshot is matched here, on the pod fields the model keeps."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from kubectl_desched.model.objects import Pod

# The apiserver's pod field labels that a snapshot can answer from the model.
LOCAL_FIELDS: dict[str, Callable[[Pod], str]] = {
    "metadata.name": lambda p: p.name,
    "metadata.namespace": lambda p: p.namespace,
    "spec.nodeName": lambda p: p.node_name,
    "spec.schedulerName": lambda p: p.scheduler_name,
    "status.phase": lambda p: p.phase,
}
_TERM = re.compile(r"^((?:[^=!\\]|\\.)+?)(==|!=|=)((?:[^\\]|\\.)*)$")


@dataclass(frozen=True)
class Requirement:
    field: str
    equal: bool
    value: str


def parse(text: str) -> list[Requirement]:
    """The requirements, or ValueError with kubectl's words for the first bad term."""
    terms = [t for t in re.split(r"(?<!\\),", text.strip()) if t.strip()]
    if not terms:
        raise ValueError("empty field selector")
    out = []
    for term in terms:
        m = _TERM.match(term.strip())
        if m is None:
            raise ValueError(f"invalid selector: '{term}'; can't understand '{term}'")
        field, op, value = m.group(1).strip(), m.group(2), re.sub(r"\\(.)", r"\1", m.group(3))
        out.append(Requirement(field, op != "!=", value))
    return out


def local_matcher(text: str) -> Callable[[Pod], bool]:
    """A matcher over the model, for a snapshot; ValueError for a field a snapshot cannot answer."""
    reqs = parse(text)
    for r in reqs:
        if r.field not in LOCAL_FIELDS:
            raise ValueError(f"field {r.field} cannot be matched in a snapshot (only {', '.join(LOCAL_FIELDS)}); "
                             "against the cluster the API server matches every field it supports")
    checks = [(LOCAL_FIELDS[r.field], r.equal, r.value) for r in reqs]
    return lambda pod: all((get(pod) == value) == equal for get, equal, value in checks)
