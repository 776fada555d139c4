"""Load a generated cluster (bench/gencluster.py) into the tests' real kube-apiserver + etcd, and keep the
etcd data between benchmark runs.

Creating 150,000 pods through the API is 300,000 requests (a create, then the status a kubelet would
write, which a create drops); on this shared 2-core machine that ran at ~40 pods/s, over an hour. So the
apiserver stores JSON (--storage-media-type=application/json) and the objects are written straight into
etcd under the apiserver's keys, in batches; the apiserver's watch cache takes them in as they come, and
everything the benchmark reads is served by the apiserver as usual. Namespaces and PriorityClasses go
through the API, and a sample of the objects is sent again as dry-run creates, so the apiserver's
admission and validation pass on what was written directly.
"""

from __future__ import annotations

import base64
import json
import random
import sys
import time
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.cluster, when run as bench/perf.py

from tests.cluster.localcluster import LocalCluster

ETCD_ARGS = ("--quota-backend-bytes=8589934592", "--max-txn-ops=10000", "--max-request-bytes=33554432")
APISERVER_ARGS = (
    "--storage-media-type=application/json",  # so objects written into etcd directly can be read back
    "--allow-privileged=true",  # kube-proxy and the CSI node pods are privileged, as in real clusters
    "--max-requests-inflight=2000",
)
# The generator's non-system classes; the two system-* ones are built in.
PRIORITY_CLASSES = {"business-critical": 1_000_000, "high-priority": 10_000, "low-priority": -10}
BATCH_BYTES = 8 << 20
_PREFIX = {"Node": "minions", "Pod": "pods", "PodDisruptionBudget": "poddisruptionbudgets"}


def bench_cluster(bin_dir: Path, work_dir: Path) -> LocalCluster:
    return LocalCluster(bin_dir, work_dir, start_timeout=600, etcd_args=ETCD_ARGS, apiserver_args=APISERVER_ARGS,
                        keep_data=True)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _key(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    ns = f"{meta['namespace']}/" if obj["kind"] != "Node" else ""
    return f"/registry/{_PREFIX[obj['kind']]}/{ns}{meta['name']}"


def _stored(obj: dict[str, Any]) -> bytes:
    """The object as the apiserver keeps it: no resourceVersion (etcd's revision is the version)."""
    meta = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
    return json.dumps({**obj, "metadata": meta}, separators=(",", ":")).encode()


def _put_all(etcd_url: str, batch: list[tuple[str, bytes]]) -> None:
    body = json.dumps({"success": [{"requestPut": {"key": _b64(k.encode()), "value": _b64(v)}} for k, v in batch]})
    req = urllib.request.Request(f"{etcd_url}/v3/kv/txn", data=body.encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        answer = json.loads(r.read())
    if not answer.get("succeeded", False):
        raise RuntimeError(f"etcd refused a batch: {str(answer)[:300]}")


def _api_create(cluster: LocalCluster, path: str, body: dict[str, Any]) -> None:
    r = cluster.request("POST", path, body)
    if not r.ok and r.status != 409:
        raise RuntimeError(f"POST {path}: {r.status} {r.body}")


def _dry_run(cluster: LocalCluster, obj: dict[str, Any]) -> None:
    """Create a copy under another name with dryRun=All: admission and validation run, nothing is stored."""
    meta = {k: v for k, v in obj["metadata"].items() if k not in ("uid", "resourceVersion", "creationTimestamp")}
    meta["name"] = meta["name"][:240] + "-check"
    copy = {**obj, "metadata": meta}
    if obj["kind"] == "Pod":
        copy["spec"] = {k: v for k, v in obj["spec"].items() if k != "priority"}  # admission sets it
        path = f"/api/v1/namespaces/{meta['namespace']}/pods"
    elif obj["kind"] == "Node":
        path = "/api/v1/nodes"
    else:
        path = f"/apis/policy/v1/namespaces/{meta['namespace']}/poddisruptionbudgets"
    r = cluster.request("POST", path, copy, query={"dryRun": "All"})
    if not r.ok:
        raise RuntimeError(f"the apiserver rejects {obj['kind']} {meta['name'][:-6]}: {r.status} {r.body}")


def load(cluster: LocalCluster, items: Iterable[dict[str, Any]], *, check_every: int = 500,
         log: Any = print) -> int:
    """Write every item; returns the count. Every `check_every`-th object is dry-run created as well."""
    for name, value in PRIORITY_CLASSES.items():
        _api_create(cluster, "/apis/scheduling.k8s.io/v1/priorityclasses",
                    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                     "value": value})
    namespaces: set[str] = set()
    batch: list[tuple[str, bytes]] = []
    size = n = 0
    began = time.monotonic()
    rng = random.Random(1)
    for obj in items:
        ns = obj["metadata"].get("namespace")
        if ns and ns not in namespaces:
            _api_create(cluster, "/api/v1/namespaces",
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            namespaces.add(ns)
        if rng.randrange(check_every) == 0:
            _dry_run(cluster, obj)
        stored = _stored(obj)
        batch.append((_key(obj), stored))
        size += len(stored)
        n += 1
        if size >= BATCH_BYTES:
            _put_all(cluster.etcd_url, batch)
            batch, size = [], 0
        if n % 20000 == 0:
            log(f"  written {n:,} objects ({n / (time.monotonic() - began):.0f}/s)")
    if batch:
        _put_all(cluster.etcd_url, batch)
    return n


def served_pods(cluster: LocalCluster) -> int:
    """How many pods the apiserver lists (one item and the remaining count)."""
    r = cluster.request("GET", "/api/v1/pods", query={"limit": "1"})
    if not r.ok:
        raise RuntimeError(f"listing pods: {r.status} {r.body}")
    return len(r.body["items"]) + int(r.body["metadata"].get("remainingItemCount") or 0)
