"""The plan's node columns against where the real scheduler put the replacements (tests on SimCluster).

A node's "after" in the plan is its requests minus the pods the plan evicts from it, plus the replacements the
placement estimate lands there (kubectl_desched/placement.py). ``compare`` lines the plan's numbers up with the
cluster's per node and resource once the real scheduler has placed the replacements; ``render`` prints them, so a
test log shows how far the estimate is from reality.

Utilization is computed here from the pods themselves (container requests over allocatable, in %), independently
of the tool's own arithmetic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_desched.model.quantity import parse_quantity

RESOURCES = ("cpu", "memory", "pods")


def pod_requests(pod: Mapping[str, Any]) -> dict[str, float]:
    """cpu (cores), memory (bytes) and pods (1) a pod holds on its node; the pods here have plain containers."""
    total = {"cpu": 0.0, "memory": 0.0, "pods": 1.0}
    for c in pod["spec"].get("containers") or ():
        for name, value in ((c.get("resources") or {}).get("requests") or {}).items():
            if name in total:
                total[name] += parse_quantity(value)
    return total


def holds_resources(pod: Mapping[str, Any]) -> bool:
    """Bound, not finished and not being deleted: what the scheduler counts against the node."""
    return (bool(pod["spec"].get("nodeName")) and not pod["metadata"].get("deletionTimestamp")
            and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))


def utilization(nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Node -> resource -> requests as % of allocatable, for the given nodes."""
    allocatable = {n["metadata"]["name"]: {r: parse_quantity(n["status"]["allocatable"][r]) for r in RESOURCES}
                   for n in nodes}
    used = {name: dict.fromkeys(RESOURCES, 0.0) for name in allocatable}
    for p in pods:
        node = p["spec"].get("nodeName")
        if node in used and holds_resources(p):
            for r, v in pod_requests(p).items():
                used[node][r] += v
    return {name: {r: 100.0 * used[name][r] / allocatable[name][r] for r in RESOURCES} for name in allocatable}


@dataclass(frozen=True)
class Row:
    node: str
    resource: str
    now: float  # the plan's "now"
    planned: float  # the plan's "after"
    actual: float  # after the evictions, with the replacements running where the scheduler put them

    @property
    def error(self) -> float:
        return self.actual - self.planned


def compare(plan: Mapping[str, Any], actual: Mapping[str, Mapping[str, float]]) -> list[Row]:
    """One row per node of the plan (-o json) and resource; nodes the plan does not list are left out."""
    return [Row(n["name"], r, n["now"][r], n["after"][r], actual[n["name"]][r])
            for n in plan["nodes"] if n["name"] in actual for r in RESOURCES if r in n["after"]]


def mean_abs_error(rows: Iterable[Row], resource: str) -> float:
    errors = [abs(r.error) for r in rows if r.resource == resource]
    return sum(errors) / len(errors) if errors else 0.0


def render(rows: list[Row], moved_to: Mapping[str, int] | None = None) -> str:
    """A table of the rows; ``moved_to`` (node -> replacements bound there) adds the scheduler's choices."""
    lines = [f"{'NODE':<28} {'RES':<7} {'NOW':>7} {'PLANNED':>8} {'ACTUAL':>7} {'ERROR':>7}  REPLACEMENTS"]
    for r in rows:
        extra = str((moved_to or {}).get(r.node, "")) if r.resource == "cpu" else ""
        lines.append(f"{r.node:<28} {r.resource:<7} {r.now:>7.2f} {r.planned:>8.2f} {r.actual:>7.2f} "
                     f"{r.error:>+7.2f}  {extra}")
    lines.append("mean |error|: " + ", ".join(f"{res} {mean_abs_error(rows, res):.2f}" for res in RESOURCES))
    return "\n".join(lines)
