"""The checks koord-descheduler's MigrationController makes before a balance plugin may pick a pod, beyond the
DefaultEvictor-style rules: an unfinished PodMigrationJob for the pod, the scheduler a ReservationFirst job needs,
the owner's expected replicas, and how many pods are migrating per workload, node, namespace and overall.

Koordinator counts the PodMigrationJobs that exist now (Pending or Running). A run's own planned evictions are not
jobs yet, so they are not counted: koord-descheduler's dry run does the same, and its real cycle only counts a job
it just created once its cache has seen it.

Written from Koordinator v1.8.0's rules (pkg/descheduler/controllers/migration/arbitrator and controllerfinder):
- owners: a ReplicaSet owned by a Deployment stands for the Deployment (its replicas, the pods of all its
  ReplicaSets); ReplicaSets, Deployments, StatefulSets and ReplicationControllers are looked up by name and UID;
  any other kind, or an owner that is gone, has no replica count, which Koordinator takes as 0 expected replicas;
- maxMigrating/maxUnavailable per workload: an int, or a percent of the expected replicas rounded down; a percent
  that rounds to 0 is 1; unset, 1 for up to 3 replicas, 2 for 4 to 10, else 10% rounded down; never more than
  the replicas.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_desched.model.label_selectors import label_selector
from kubectl_desched.model.objects import OwnerRef, Pod
from kubectl_desched.model.state import ClusterState

JOB_KIND = "PodMigrationJob"
WORKLOAD_KINDS = ("ReplicaSet", "Deployment", "StatefulSet", "ReplicationController")
LIVE_PHASES = frozenset({"", "Pending", "Running"})  # a job without a phase is Pending to the controller


def scaled_value(value: int | str, total: int) -> int:
    """An IntOrString against a total, percents rounded down; ValueError when a string is not "N%"."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"must be an integer or a percent such as 10%, not {value!r}")
    if isinstance(value, int):
        return value
    if not value.endswith("%"):
        raise ValueError(f"{value!r} is not a percentage")
    if not re.fullmatch(r"[+-]?[0-9]+", value[:-1]):
        raise ValueError(f"{value!r} is not a whole-number percentage")
    return int(value[:-1]) * total // 100


def max_unavailable(replicas: int, value: int | str | None) -> int:
    """Koordinator's maxUnavailable (and maxMigrating) for a workload with `replicas` expected replicas."""
    limit = 0
    if value is not None:
        limit = scaled_value(value, replicas) or 1  # a percent below one pod still allows one
    if limit == 0:
        if replicas > 10:
            limit = replicas // 10
        elif replicas >= 4:
            limit = 2
        else:
            limit = 1
    return min(limit, replicas)


def controller_of(pod: Pod) -> OwnerRef | None:
    """The owner reference marked controller (Koordinator's GetControllerOf), not just the first one."""
    return next((o for o in pod.owners if o.controller), None)


def is_available(pod: Pod) -> bool:
    """Active (not finished, not terminating) and Ready."""
    if pod.is_terminal or pod.terminating:
        return False
    return pod.ready


@dataclass(frozen=True)
class Owner:
    """A workload object as the checks need it."""

    kind: str
    namespace: str
    name: str
    uid: str
    replicas: int
    labels: Mapping[str, str]
    selector: Mapping[str, Any] | None
    controller: tuple[str, str, str] | None  # its own controller: kind, name, uid

    @classmethod
    def of(cls, obj: Mapping[str, Any], kind: str) -> Owner:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        ctrl = next((o for o in meta.get("ownerReferences") or () if o.get("controller")), None)
        replicas = spec.get("replicas")
        return cls(kind, meta.get("namespace") or "default", meta.get("name") or "", meta.get("uid") or "",
                   1 if replicas is None else int(replicas), meta.get("labels") or {}, spec.get("selector"),
                   (ctrl.get("kind", ""), ctrl.get("name", ""), ctrl.get("uid", "")) if ctrl else None)

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass(frozen=True)
class Workload:
    """What an owner reference resolves to: the object whose replicas count (None: Koordinator finds none, so 0
    expected replicas), and the owner UIDs whose pods are the workload's."""

    owner: Owner | None
    expected: int
    pod_owner_uids: tuple[str, ...]
    described: str  # "Deployment web", "ReplicaSet app (not found)"


class Arbitration:
    """Live PodMigrationJobs, owners and pods, indexed once per run for the MigrationController's checks."""

    def __init__(self, state: ClusterState, info: Callable[[str], None]) -> None:
        self.state = state
        self.info = info
        self._told: set[str] = set()
        extra = state.extra
        self.jobs_known = JOB_KIND in extra
        jobs = [j for j in extra.get(JOB_KIND, ()) if _phase(j) in LIVE_PHASES and (j.get("spec") or {}).get("podRef")]
        self.jobs = [((j.get("metadata") or {}).get("name", "?"), _phase(j) or "Pending", _ref(j)) for j in jobs]
        self._job_by_uid: dict[str, tuple[str, str]] = {}
        self._job_by_key: dict[str, tuple[str, str]] = {}
        self._ns_jobs: dict[str, Counter[str]] = defaultdict(Counter)  # namespace -> podRef uid -> jobs
        self._all_jobs: Counter[str] = Counter()
        for name, phase, (ns, pod_name, uid) in self.jobs:
            if uid:
                self._job_by_uid.setdefault(uid, (name, phase))
            self._job_by_key.setdefault(f"{ns}/{pod_name}", (name, phase))
            self._ns_jobs[ns][uid] += 1
            self._all_jobs[uid] += 1
        self.kinds_known = {k for k in WORKLOAD_KINDS if k in extra}
        self.owners: dict[tuple[str, str, str], Owner] = {}
        for kind in self.kinds_known:
            for obj in extra[kind]:
                o = Owner.of(obj, kind)
                self.owners[(kind, o.namespace, o.name)] = o
        self._by_owner_uid: dict[str, list[Pod]] | None = None
        self._migrating_on_node: dict[str, set[int]] | None = None
        self._migrating_by_ctrl: dict[str, set[tuple[str, str]]] | None = None
        # Per owner reference and per workload, computed once: every pod of a workload asks the same questions.
        self._workloads: dict[tuple[str, str, str, str], Workload | None] = {}
        self._unavailable: dict[tuple[str, tuple[str, ...]], set[str]] = {}
        self._rs_by_controller: dict[tuple[str, str], list[Owner]] | None = None

    # --- indexes built on first use -----------------------------------------------------------------------------

    def _pods_by_owner_uid(self) -> dict[str, list[Pod]]:
        if self._by_owner_uid is None:
            index: dict[str, list[Pod]] = defaultdict(list)
            for p in self.state.pods:
                for o in p.owners:
                    if o.uid:
                        index[o.uid].append(p)
            self._by_owner_uid = index
        return self._by_owner_uid

    def _index_migrating(self) -> None:
        """Which pods are migrating: per node, each pod a live job names (by UID or by namespace/name, as Koordinator
        matches a pod to its jobs); per controller, the pods of the jobs' podRef namespace/name (Koordinator looks a
        job's pod up by name there), with the jobs' podRef UIDs."""
        by_uid: dict[str, Pod] = {}
        by_key: dict[str, Pod] = {}
        for p in self.state.pods:
            if p.uid:
                by_uid[p.uid] = p
            by_key[p.key] = p
        on_node: dict[str, set[int]] = defaultdict(set)
        by_ctrl: dict[str, set[tuple[str, str]]] = defaultdict(set)
        for _name, _phase, (ns, name, uid) in self.jobs:
            named = by_key.get(f"{ns}/{name}")
            for found in (by_uid.get(uid) if uid else None, named):
                if found is not None and found.node_name:
                    on_node[found.node_name].add(id(found))
            ctrl = controller_of(named) if named is not None else None
            if ctrl is not None:
                by_ctrl[ctrl.uid].add((f"{ns}/{name}", uid))
        self._migrating_on_node, self._migrating_by_ctrl = on_node, by_ctrl

    # --- the checks -----------------------------------------------------------------------------------------------

    def existing_job(self, pod: Pod) -> str | None:
        found = (self._job_by_uid.get(pod.uid) if pod.uid else None) or self._job_by_key.get(pod.key)
        if found is None:
            return None
        return f"PodMigrationJob {found[0]} ({found[1]}) already exists for the pod"

    def migrating_globally(self, pod: Pod, limit: int | None) -> str | None:
        if not limit or limit <= 0:
            return None
        count = sum(self._all_jobs.values()) - self._all_jobs.get(pod.uid, 0)
        if count >= limit:
            return f"{count} pod(s) migrating (unfinished PodMigrationJobs), maxMigratingGlobally {limit}"
        return None

    def migrating_per_node(self, pod: Pod, limit: int | None) -> str | None:
        if not pod.node_name or not limit or limit <= 0 or not self.jobs:
            return None
        if self._migrating_on_node is None:
            self._index_migrating()
        assert self._migrating_on_node is not None
        ids = self._migrating_on_node.get(pod.node_name, set())
        count = len(ids) - (id(pod) in ids)
        if count >= limit:
            return f"{count} pod(s) on node {pod.node_name} migrating, maxMigratingPerNode {limit}"
        return None

    def migrating_per_namespace(self, pod: Pod, limit: int | None) -> str | None:
        if not limit or limit <= 0:
            return None
        jobs = self._ns_jobs.get(pod.namespace)
        count = sum(jobs.values()) - jobs.get(pod.uid, 0) if jobs else 0
        if count >= limit:
            return f"{count} pod(s) in namespace {pod.namespace} migrating, maxMigratingPerNamespace {limit}"
        return None

    def workload(self, ref: OwnerRef, namespace: str) -> Workload | None:
        """The workload behind a controller reference; None when the source did not include that kind."""
        key = (ref.kind, namespace, ref.name, ref.uid)
        if key not in self._workloads:
            self._workloads[key] = self._resolve(ref, namespace)
        return self._workloads[key]

    def _resolve(self, ref: OwnerRef, namespace: str) -> Workload | None:
        if ref.kind not in WORKLOAD_KINDS:
            # Koordinator asks such an owner's scale subresource (a Job has none: 0 expected replicas); that is not
            # read here, so the pod is kept either way.
            return Workload(None, 0, (), f"{ref.kind} {ref.name} (no replica count is read for a {ref.kind})")
        if ref.kind not in self.kinds_known:
            return self._unknown(ref.kind)
        owner = self._find(ref.kind, namespace, ref.name, ref.uid)
        if owner is None:
            return Workload(None, 0, (), f"{ref.kind} {ref.name} (not found)")
        if ref.kind == "ReplicaSet" and owner.controller and owner.controller[0] == "Deployment":
            if "Deployment" not in self.kinds_known:
                return self._unknown("Deployment")
            _kind, name, uid = owner.controller
            deployment = self._find("Deployment", namespace, name, uid)
            if deployment is None:
                return Workload(None, 0, (), f"Deployment {name} of ReplicaSet {ref.name} (not found)")
            return Workload(deployment, deployment.replicas, self._replica_sets_of(deployment), str(deployment))
        return Workload(owner, owner.replicas, (owner.uid,), str(owner))

    def _unknown(self, kind: str) -> Workload | None:
        """None: the workload cannot be judged without the kind's objects; said once per kind."""
        if kind not in self._told:
            self._told.add(kind)
            self.info(f"the source has no {kind} objects: the expected-replicas and per-workload checks are left "
                      f"out for pods {kind}s own (add them: kubectl get rs,deploy,sts,rc -A -o yaml)")
        return None

    def _find(self, kind: str, namespace: str, name: str, uid: str) -> Owner | None:
        owner = self.owners.get((kind, namespace, name))
        if owner is None or (uid and owner.uid != uid):
            return None
        return owner

    def _replica_sets_of(self, deployment: Owner) -> tuple[str, ...]:
        """The UIDs of the ReplicaSets the Deployment selects and controls; its own UID if there are none."""
        try:
            match = label_selector(deployment.selector)
        except ValueError:
            match = None
        if self._rs_by_controller is None:
            index: dict[tuple[str, str], list[Owner]] = defaultdict(list)
            for (kind, ns, _name), o in self.owners.items():
                if kind == "ReplicaSet" and o.controller:
                    index[(ns, o.controller[2])].append(o)
            self._rs_by_controller = index
        found = self._rs_by_controller.get((deployment.namespace, deployment.uid), ())
        uids = tuple(o.uid for o in found if match is not None and match(o.labels))
        return uids or (deployment.uid,)

    def expected_replicas(self, pod: Pod, max_migrating: int | str | None, max_unavail: int | str | None,
                          skip_check: bool) -> str | None:
        ref = controller_of(pod)
        if ref is None or skip_check:
            return None
        w = self.workload(ref, pod.namespace)
        if w is None:
            return None
        most_migrating = max_unavailable(w.expected, max_migrating)
        most_unavailable = max_unavailable(w.expected, max_unavail)
        if w.expected == 1:
            return f"expected replicas: {w.described} has 1 replica"
        if w.expected == most_unavailable:
            return (f"expected replicas: {w.described} has {w.expected}, which maxUnavailablePerWorkload allows "
                    "to be unavailable at once")
        if w.expected == most_migrating:
            return (f"expected replicas: {w.described} has {w.expected}, which maxMigratingPerWorkload allows "
                    "to migrate at once")
        return None

    def per_workload(self, pod: Pod, max_migrating: int | str | None, max_unavail: int | str | None,
                     check_migrating: bool, check_unavailable: bool) -> str | None:
        ref = controller_of(pod)
        if ref is None or not (check_migrating or check_unavailable):
            return None
        w = self.workload(ref, pod.namespace)
        if w is None:
            return None
        if self._migrating_by_ctrl is None:
            self._index_migrating()
        assert self._migrating_by_ctrl is not None
        # Koordinator counts the jobs of pods with the same controller UID as this pod's, in its namespace.
        migrating = {key for key, uid in self._migrating_by_ctrl.get(ref.uid, ())
                     if uid != pod.uid and key.split("/", 1)[0] == pod.namespace}
        if check_migrating and migrating:
            limit = max_unavailable(w.expected, max_migrating)
            if len(migrating) >= limit:
                return f"{w.described}: {len(migrating)} pod(s) migrating, maxMigratingPerWorkload {limit}"
        if not check_unavailable:
            return None
        unavailable = self._unavailable_of(w, pod.namespace) | migrating
        limit = max_unavailable(w.expected, max_unavail)
        if len(unavailable) >= limit:
            return (f"{w.described}: {len(unavailable)} pod(s) unavailable or migrating, maxUnavailablePerWorkload "
                    f"{limit}")
        return None

    def _unavailable_of(self, w: Workload, namespace: str) -> set[str]:
        """The workload's pods that are not available (not Ready, not scheduled, finished or terminating)."""
        key = (namespace, w.pod_owner_uids)
        if key not in self._unavailable:
            by_uid = self._pods_by_owner_uid()
            pods = {id(p): p for uid in w.pod_owner_uids for p in by_uid.get(uid, ()) if p.namespace == namespace}
            self._unavailable[key] = {p.key for p in pods.values() if not is_available(p)}
        return self._unavailable[key]


def _phase(job: Mapping[str, Any]) -> str:
    return str((job.get("status") or {}).get("phase") or "")


def _ref(job: Mapping[str, Any]) -> tuple[str, str, str]:
    ref = (job.get("spec") or {}).get("podRef") or {}
    return str(ref.get("namespace") or ""), str(ref.get("name") or ""), str(ref.get("uid") or "")
