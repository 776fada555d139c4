"""Load a generated cluster (bench/gencluster.py) into the tests' real kube-apiserver + etcd, fast, and keep
the etcd data between benchmark runs.

There is no scheduler, kubelet or controller-manager, so nothing changes what is loaded: nodes keep the
status they are created with; a pod's status is dropped on create (the apiserver starts every pod Pending)
and is written back through the status subresource, as a kubelet would. Many keep-alive connections in
parallel: 150,000 pods are 300,000 requests.
"""

from __future__ import annotations

import http.client
import json
import queue
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.cluster, when run as bench/perf.py

from tests.cluster.localcluster import ADMIN_USER, LocalCluster

# Room for 150,000 realistic pods (about 3 GB in etcd, more with the history of the status writes).
ETCD_ARGS = ("--quota-backend-bytes=34359738368", "--snapshot-count=100000")
APISERVER_ARGS = (
    "--allow-privileged=true",  # kube-proxy and the CSI node pods are privileged, as in real clusters
    "--max-requests-inflight=2000",
    "--max-mutating-requests-inflight=1000",
    "--enable-priority-and-fairness=false",  # the bulk load is one client; APF would queue it
    "--etcd-compaction-interval=2m",
)
# The generator's non-system classes; the two system-* ones are built in.
PRIORITY_CLASSES = {"business-critical": 1_000_000, "high-priority": 10_000, "low-priority": -10}
_ASSIGNED = ("uid", "resourceVersion", "creationTimestamp", "generation")


def bench_cluster(bin_dir: Path, work_dir: Path) -> LocalCluster:
    return LocalCluster(bin_dir, work_dir, start_timeout=600, etcd_args=ETCD_ARGS, apiserver_args=APISERVER_ARGS,
                        keep_data=True)


class _Worker(threading.Thread):
    """Sends queued requests over one keep-alive HTTPS connection."""

    def __init__(self, cluster: LocalCluster, jobs: queue.Queue, errors: list[str]) -> None:
        super().__init__(daemon=True)
        url = urlsplit(cluster.server)
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 443
        self.ctx = cluster._ssl
        self.headers = {"Authorization": f"Bearer {cluster.tokens[ADMIN_USER]}", "Accept": "application/json"}
        self.jobs, self.errors = jobs, errors
        self.conn: http.client.HTTPSConnection | None = None

    def send(self, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        ctype = "application/merge-patch+json" if method == "PATCH" else "application/json"
        for attempt in range(5):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=120)
                self.conn.request(method, path, body, {**self.headers, "Content-Type": ctype})
                resp = self.conn.getresponse()
                data = resp.read()
                if resp.status == 429 or resp.status >= 500:
                    time.sleep(0.2 * (attempt + 1))
                    continue
                return resp.status, data
            except (OSError, http.client.HTTPException):
                self.conn = None
                time.sleep(0.2 * (attempt + 1))
        return 0, b"no answer after 5 attempts"

    def run(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            for method, path, body, ok_statuses in job:
                status, data = self.send(method, path, body)
                if status not in ok_statuses:
                    self.errors.append(f"{method} {path} -> {status}: {data[:300]!r}")
                    break


def _prepare(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items() if k not in _ASSIGNED}
    obj = {**obj, "metadata": meta}
    if obj["kind"] == "Pod":
        # The Priority admission plugin sets spec.priority from priorityClassName.
        obj["spec"] = {k: v for k, v in obj["spec"].items() if k != "priority"}
    return obj


def _jobs_for(obj: dict[str, Any]) -> list[tuple[str, str, bytes, tuple[int, ...]]]:
    obj = _prepare(obj)
    kind, meta = obj["kind"], obj["metadata"]
    if kind == "Node":
        return [("POST", "/api/v1/nodes", json.dumps(obj).encode(), (201, 409))]
    if kind == "Pod":
        base = f"/api/v1/namespaces/{meta['namespace']}/pods"
    elif kind == "PodDisruptionBudget":
        base = f"/apis/policy/v1/namespaces/{meta['namespace']}/poddisruptionbudgets"
    else:
        raise ValueError(f"cannot load a {kind}")
    body = json.dumps(obj).encode()
    status = f"{base}/{meta['name']}/status"
    # The status write follows its create on the same connection; both tolerate a rerun (409 / same status).
    # Pods take an unconditional PUT; a PDB update needs a resourceVersion, a merge patch does not.
    if kind == "Pod":
        return [("POST", base, body, (201, 409)), ("PUT", status, body, (200,))]
    return [("POST", base, body, (201, 409)), ("PATCH", status, json.dumps({"status": obj["status"]}).encode(), (200,))]


def load(cluster: LocalCluster, items: Iterable[dict[str, Any]], *, connections: int = 24,
         log: Any = print) -> int:
    """Create every item (nodes, then pods, then PDBs, as the generator yields them); returns the count."""
    for name, value in PRIORITY_CLASSES.items():
        r = cluster.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                             "value": value})
        if not r.ok and r.status != 409:
            raise RuntimeError(f"creating PriorityClass {name}: {r.status} {r.body}")
    jobs: queue.Queue = queue.Queue(maxsize=connections * 8)
    errors: list[str] = []
    workers = [_Worker(cluster, jobs, errors) for _ in range(connections)]
    for w in workers:
        w.start()
    namespaces: set[str] = {"default", "kube-system"}
    began, n = time.monotonic(), 0
    for obj in items:
        ns = obj["metadata"].get("namespace")
        if ns and ns not in namespaces:
            cluster.request("POST", "/api/v1/namespaces",
                            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            namespaces.add(ns)
        jobs.put(_jobs_for(obj))
        n += 1
        if n % 10000 == 0:
            log(f"  loaded {n:,} objects ({n / (time.monotonic() - began):.0f}/s)")
        if len(errors) > 20:
            break
    for _ in workers:
        jobs.put(None)
    for w in workers:
        w.join()
    if errors:
        raise RuntimeError(f"{len(errors)} requests failed, first: {errors[0]}")
    return n
