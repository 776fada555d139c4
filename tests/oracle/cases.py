"""Oracle cases: one scenario per upstream descheduler behaviour, kept as fixtures under tests/oracle/cases/<name>/.

Each case directory holds
  cluster.yaml   the objects, as a client would create them (Namespaces, PriorityClasses, Nodes with status,
                 Pods bound with spec.nodeName and their status, PDBs with status), in one YAML List so anchors work;
  policy.yaml    a DeschedulerPolicy (descheduler/v1alpha2) that both tools read unchanged;
  expected.yaml  `evicted`: the pods (namespace/name) the upstream descheduler evicts in a dry run, proven against
                 upstream by tests/integration/test_oracle_upstream.py; `choose`: groups of equal pods of which upstream
                 evicts `count` in an order it leaves unspecified (its sorts are not stable), so only the count is
                 compared there; `why`: what behaviour the case pins; and, only where we deliberately differ, `ours`
                 (our answer) and `difference` (the reason docs/compatibility/ gives).

The same objects serve two tests: the integration test creates them in a real kube-apiserver and runs both tools
there; the unit test turns them into a snapshot with the fields the API server would have added (uid,
creationTimestamp "now", spec.priority from the PriorityClass) and runs our CLI with --from-file.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

CASES_DIR = Path(__file__).resolve().parent / "cases"
# Koordinator's cases, proven against koord-descheduler (tests/oracle/koord.py): the same layout, with a
# DeschedulerConfiguration as policy.yaml, NodeMetrics for the load, and owners and PodMigrationJobs where the
# MigrationController's checks need them.
KOORD_CASES_DIR = Path(__file__).resolve().parent / "koord-cases"
# The order the API server needs: a pod's namespace and PriorityClass must exist before the pod, an owner before
# the objects that name its UID, a pod before the PodMigrationJob that names its UID.
CREATE_ORDER = ("Namespace", "PriorityClass", "Node", "PodDisruptionBudget", "PersistentVolumeClaim", "Deployment",
                "ReplicaSet", "StatefulSet", "Pod", "NodeMetric", "PodMigrationJob")
NAMESPACED = ("Pod", "PodDisruptionBudget", "PersistentVolumeClaim", "Deployment", "ReplicaSet", "StatefulSet")


@dataclass(frozen=True)
class Case:
    name: str
    path: Path
    objects: list[dict[str, Any]]
    expected: frozenset[str]  # upstream's evictions, "namespace/name"
    choose: tuple[tuple[int, frozenset[str]], ...]  # (count, pods): upstream evicts count of these, any of them
    ours: frozenset[str]  # ours: the same unless the case records a deliberate difference
    why: str
    difference: str

    @property
    def policy(self) -> Path:
        return self.path / "policy.yaml"

    def mismatch(self, evicted: frozenset[str] | set[str], exact: frozenset[str] | None = None) -> str | None:
        """Why `evicted` is not what the case expects (None when it is): the fixed set, plus `count` of each
        choose group. `exact` replaces the fixed set (our deliberate answer)."""
        fixed = self.expected if exact is None else exact
        rest = set(evicted) - fixed
        problems = [f"missing {sorted(fixed - set(evicted))}"] if fixed - set(evicted) else []
        for count, group in self.choose:
            picked = rest & group
            if len(picked) != count:
                problems.append(f"{len(picked)} of {sorted(group)} instead of {count}: {sorted(picked)}")
            rest -= group
        if rest:
            problems.append(f"unexpected {sorted(rest)}")
        return "; ".join(problems) or None

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]


def _pods(value: Any, where: Path) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.count("/") == 1 for v in value):
        raise ValueError(f"{where}: expected a list of namespace/name strings, got {value!r}")
    return frozenset(value)


def load_case(path: Path) -> Case:
    raw = yaml.safe_load((path / "cluster.yaml").read_text())
    objects = [o for o in raw["items"] if not str(o.get("kind", "")).startswith("_")]  # "_" kinds hold anchors
    for o in objects:
        if o["kind"] not in CREATE_ORDER:
            raise ValueError(f"{path}/cluster.yaml: unsupported kind {o['kind']}")
    expected = yaml.safe_load((path / "expected.yaml").read_text())
    evicted = _pods(expected.get("evicted") or [], path / "expected.yaml")
    choose = tuple((int(g["count"]), _pods(g["from"], path / "expected.yaml")) for g in expected.get("choose") or ())
    ours = _pods(expected["ours"], path / "expected.yaml") if "ours" in expected else evicted
    if ours != evicted and not expected.get("difference"):
        raise ValueError(f"{path}/expected.yaml: `ours` differs from `evicted` without a `difference`")
    objects.sort(key=lambda o: CREATE_ORDER.index(o["kind"]))
    return Case(path.name, path, objects, evicted, choose, ours, str(expected.get("why") or ""),
                str(expected.get("difference") or ""))


def all_cases(directory: Path = CASES_DIR) -> list[Case]:
    return [load_case(p) for p in sorted(directory.iterdir()) if (p / "cluster.yaml").exists()]


def koord_cases() -> list[Case]:
    return all_cases(KOORD_CASES_DIR)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def as_snapshot(case: Case, now: datetime | None = None) -> dict[str, Any]:
    """The case's objects as `kubectl get -o yaml` would show them right after creation.

    Adds what the API server sets: metadata.uid, metadata.creationTimestamp (a few seconds ago, as in the
    integration test, which runs the tools right after creating the objects), spec.priority resolved from
    spec.priorityClassName (the Priority admission plugin), node capacity defaulting to allocatable; and what the
    harness writes: a NodeMetric's status.updateTime (when it was created). A uid the case gives an object (which
    other objects' ownerReferences or podRefs name) is kept: the harness maps it to the real one.
    """
    now = now or datetime.now(UTC)
    created = _stamp(now - timedelta(seconds=5))
    classes = {o["metadata"]["name"]: o["value"] for o in case.of_kind("PriorityClass")}
    classes.update({"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000})
    items = []
    for i, obj in enumerate(copy.deepcopy(case.objects)):
        meta = obj["metadata"]
        meta.setdefault("uid", f"{case.name}-{i}")
        meta.setdefault("creationTimestamp", created)
        if obj["kind"] == "Pod":
            spec = obj["spec"]
            name = spec.get("priorityClassName")
            if name:
                if "priority" in spec and spec["priority"] != classes[name]:
                    raise ValueError(f"{case.name}: pod {meta['name']}: spec.priority {spec['priority']} "
                                     f"disagrees with PriorityClass {name} ({classes[name]})")
                spec["priority"] = classes[name]
        if obj["kind"] in NAMESPACED:
            meta.setdefault("namespace", "default")
        if obj["kind"] == "NodeMetric":
            obj.setdefault("status", {}).setdefault("updateTime", created)
        if obj["kind"] == "Node":
            status = obj.setdefault("status", {})
            status.setdefault("capacity", dict(status.get("allocatable") or {}))
        if obj["kind"] == "PodDisruptionBudget":
            meta.setdefault("generation", 1)
        items.append(obj)
    return {"apiVersion": "v1", "kind": "List", "items": items}
