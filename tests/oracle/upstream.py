"""Drive an oracle case against a real kube-apiserver: create its objects, run the upstream descheduler in dry-run
mode and read which pods it evicts from its log, then remove the objects again.

The upstream descheduler (sigs.k8s.io/descheduler) is built from its Go module by tests/cluster/build-descheduler.
In dry run it logs each eviction it simulates, at verbosity 1, as the message "Evicted pod in dry run mode" with
the pod as a structured value; with --logging-format=json each log entry is one JSON object per line.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.oracle.cases import NAMESPACED, Case
from tests.processes import end

DRY_RUN_EVICTION = "Evicted pod in dry run mode"
CYCLE_START = "Resetting pod evictor counters"  # verbosity 3
CYCLE_END = "Number of evictions/requests"
SKIPPED = "Skipping descheduling cycle: requires >=2 nodes"
# Error entries that are expected: a maxNoOfPodsToEvict* limit refusing an eviction (logged by the evictor and
# again by the plugin), and a mistake in one of LowNodeUtilization's own log calls.
LIMIT_REACHED = "maximum number of evicted pods"
EXPECTED_ERRORS = ("non-string key argument passed to logging, ignoring all later arguments",)

_PATHS = {
    "Namespace": "/api/v1/namespaces",
    "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses",
    "Node": "/api/v1/nodes",
    "PodDisruptionBudget": "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
    "PersistentVolumeClaim": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    "Pod": "/api/v1/namespaces/{ns}/pods",
    # Koordinator's cases (tests/oracle/koord-cases)
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "ReplicaSet": "/apis/apps/v1/namespaces/{ns}/replicasets",
    "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets",
    "NodeMetric": "/apis/slo.koordinator.sh/v1alpha1/nodemetrics",
    "PodMigrationJob": "/apis/scheduling.koordinator.sh/v1alpha1/podmigrationjobs",
}


class OracleError(AssertionError):
    pass


@dataclass(frozen=True)
class Created:
    kind: str
    namespace: str
    name: str

    @property
    def path(self) -> str:
        return _PATHS[self.kind].format(ns=self.namespace) + "/" + self.name


def _must(cluster: Any, method: str, path: str, body: Any = None, **kw: Any) -> Any:
    r = cluster.request(method, path, body, **kw)
    if not r.ok:
        raise OracleError(f"{method} {path} -> {r.status}: {r.body}")
    return r.body


def create_objects(cluster: Any, case: Case) -> list[Created]:
    """Create the case's objects in order; status goes through the status subresource, as a kubelet or
    controller would write it (the API server ignores status on create for pods and PDBs). A uid the case gives
    an object stands for the one the server assigns, in the ownerReferences and podRefs of the objects after it."""
    created: list[Created] = []
    uids: dict[str, str] = {}
    try:
        for obj in case.objects:
            _create(cluster, _with_uids(obj, uids), created, uids)
    except BaseException:
        delete_objects(cluster, created)  # the next case must find a clean cluster
        raise
    return created


def _with_uids(obj: dict[str, Any], uids: dict[str, str]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    for ref in obj["metadata"].get("ownerReferences") or ():
        ref["uid"] = uids.get(ref.get("uid", ""), ref.get("uid", ""))
    pod_ref = (obj.get("spec") or {}).get("podRef")
    if pod_ref and pod_ref.get("uid"):
        pod_ref["uid"] = uids.get(pod_ref["uid"], pod_ref["uid"])
    return obj


def _create(cluster: Any, obj: dict[str, Any], created: list[Created], uids: dict[str, str]) -> None:
    kind, meta = obj["kind"], obj["metadata"]
    ns = meta.get("namespace", "default") if kind in NAMESPACED else ""
    base = _PATHS[kind].format(ns=ns)
    body = {k: v for k, v in obj.items() if k != "status"}
    body["metadata"] = {k: v for k, v in meta.items() if k != "uid"}
    if kind == "Node":
        body["status"] = dict(obj.get("status") or {})
        body["status"].setdefault("capacity", dict(body["status"].get("allocatable") or {}))
    made = _must(cluster, "POST", base, body)
    created.append(Created(kind, ns, meta["name"]))
    if meta.get("uid"):
        uids[meta["uid"]] = made["metadata"]["uid"]
    status = obj.get("status")
    if kind == "Node":
        made["status"] = body["status"]
    elif kind == "PodDisruptionBudget":
        made["status"] = {**(status or {}), "observedGeneration": made["metadata"]["generation"]}
    elif kind == "Pod" and status:
        made["status"] = {**(made.get("status") or {}), **status}  # keeps the qosClass the server computed
    elif kind == "NodeMetric":  # reported now, as koordlet would
        made["status"] = {**(status or {}), "updateTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    elif kind == "PodMigrationJob" and status:
        made["status"] = status
    else:
        return
    _must(cluster, "PUT", f"{base}/{meta['name']}/status", made)


def delete_objects(cluster: Any, created: list[Created]) -> None:
    """Remove what create_objects made. With no controllers running, finalizers are cleared by hand."""
    for ref in reversed(created):
        if ref.kind == "Pod":
            cluster.request("DELETE", ref.path, {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
            continue
        r = cluster.request("DELETE", ref.path)
        if ref.kind == "PersistentVolumeClaim" and r.ok:  # pvc-protection's finalizer has no controller to clear it
            claim = _must(cluster, "GET", ref.path)
            claim["metadata"]["finalizers"] = []
            cluster.request("PUT", ref.path, claim)
        if ref.kind == "Namespace" and r.ok:
            ns = _must(cluster, "GET", ref.path)
            ns["spec"]["finalizers"] = []
            cluster.request("PUT", f"{ref.path}/finalize", ns)  # the namespace controller's last step
    deadline = time.monotonic() + 30
    for ref in created:
        while cluster.request("GET", ref.path).status != 404:
            if time.monotonic() > deadline:
                raise OracleError(f"{ref.kind} {ref.namespace}/{ref.name} still exists after cleanup")
            time.sleep(0.05)


@dataclass(frozen=True)
class UpstreamRun:
    evicted: frozenset[str]
    log: str
    seconds: float


def _pod_key(value: Any) -> str:
    if isinstance(value, dict):
        return f"{value.get('namespace', '')}/{value.get('name', '')}"
    return str(value)


def _entries(log: str) -> Iterator[dict[str, Any]]:
    for line in log.splitlines():
        if line.startswith("{"):
            try:
                yield json.loads(line)
            except ValueError:
                continue


@dataclass
class Cycle:
    evicted: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    skipped: bool = False
    done: bool = False


def _is_error(entry: dict[str, Any]) -> bool:
    """Error entries carry no verbosity ("v")."""
    if "v" in entry or entry.get("msg") in EXPECTED_ERRORS:
        return False
    return not str(entry.get("err", "")).startswith(LIMIT_REACHED)


def parse_cycles(log: str) -> list[Cycle]:
    """The descheduling cycles in a JSON-format log, each with the pods it evicted and its unexpected errors."""
    cycles: list[Cycle] = []
    for entry in _entries(log):
        msg = entry.get("msg", "")
        if msg == CYCLE_START:
            cycles.append(Cycle())
        elif not cycles:
            if _is_error(entry):
                cycles.append(Cycle(errors=[json.dumps(entry)]))  # bootstrap failures
            continue
        elif msg == DRY_RUN_EVICTION:
            cycles[-1].evicted.add(_pod_key(entry.get("pod")))
        elif msg == SKIPPED:
            cycles[-1].skipped = True
        elif msg == CYCLE_END:
            cycles[-1].done = True
        elif _is_error(entry):
            cycles[-1].errors.append(json.dumps(entry))
    return cycles


def in_service_account_root(ca_file: Path, scratch: Path) -> list[str] | str:
    """A command prefix that runs the descheduler in a mount namespace of its own where
    /var/run/secrets/kubernetes.io/serviceaccount/ca.crt is ca_file (its Prometheus client trusts that CA alone
    and will not start without it, in cluster or not); the machine's /run is untouched. A string says why not."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        return "the upstream descheduler's Prometheus client needs its service account's ca.crt: unshare as root"
    account = scratch / "run" / "secrets" / "kubernetes.io" / "serviceaccount"
    account.mkdir(parents=True, exist_ok=True)
    shutil.copy(ca_file, account / "ca.crt")
    probe = subprocess.run([unshare, "-m", "sh", "-c", f"mount --bind {shlex.quote(str(scratch / 'run'))} /run"],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return f"cannot make a mount namespace for the descheduler: {probe.stderr.strip()[:200]}"
    return [unshare, "-m", "sh", "-c", f"mount --bind {shlex.quote(str(scratch / 'run'))} /run && exec \"$0\" \"$@\""]


def run_upstream(binary: Path, kubeconfig: Path, policy: Path, timeout: float = 60,
                 wrapper: Sequence[str] = (), compared: int = 1) -> UpstreamRun:
    """The upstream descheduler's answer in dry-run mode: its second descheduling cycle.

    Its first dry-run cycle can see an empty or partial cluster: the sandbox's fake informers are synced before
    the real ones have copied anything into them (kubernetes-sigs/descheduler#1917, still open in v0.36.0). So it
    runs every second, and the second cycle, which starts after everything has propagated (and after the first
    cycle's simulated evictions were restored), is the one compared; then it is stopped. `wrapper` comes before
    the command (in_service_account_root); `compared` is the cycle compared (0 the first), whose errors alone count
    past the second (a Prometheus client made from a Secret is ready only once the Secret was read).
    """
    began = time.monotonic()
    proc = subprocess.Popen(
        [*wrapper, str(binary), "--dry-run", f"--policy-config-file={policy}", f"--kubeconfig={kubeconfig}",
         "--descheduling-interval=1s", "--leader-elect=false", "--secure-port=0", "--logging-format=json", "--v=3"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    watchdog = threading.Timer(timeout, proc.kill)
    watchdog.start()
    lines: list[str] = []
    ends = 0
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if f'"msg":"{CYCLE_END}"' in line:
                ends += 1
                if ends == max(2, compared + 1):
                    break
    finally:
        watchdog.cancel()
        end(proc)
    log = "".join(lines)
    cycles = parse_cycles(log)
    errors = [e for c in (cycles if compared <= 1 else cycles[compared:]) for e in c.errors]
    if ends < max(2, compared + 1) or errors or not cycles[compared].done:
        raise OracleError(f"upstream descheduler: {ends} cycle(s) completed, errors {errors[:5]}, "
                          f"exit {proc.returncode}\n{log[-6000:]}")
    return UpstreamRun(frozenset(cycles[compared].evicted), log, time.monotonic() - began)
