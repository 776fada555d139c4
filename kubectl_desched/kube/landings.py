"""Where the evicted pods' replacements really landed: after the evictions, the pods their controllers created are
watched (a list per namespace and label set, every second) until each is bound to a node or the wait runs out."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from kubectl_desched.model.durations import parse_time

if TYPE_CHECKING:
    from kubectl_desched.kube.config import Connection

# A replacement is created after its pod's eviction was sent; clocks of this machine and the server's may differ
# by a little, and the API's timestamps are whole seconds.
CLOCK_SLACK = timedelta(seconds=2)


# Where a controller of a built-in kind lives, to ask whether it is still there to make a replacement.
OWNER_PATHS = {"ReplicaSet": "/apis/apps/v1", "StatefulSet": "/apis/apps/v1", "DaemonSet": "/apis/apps/v1",
               "ReplicationController": "/api/v1", "Job": "/apis/batch/v1"}
# With no new replacement and no new binding for this long, the wait ends: a controller that makes replacements
# does so within seconds.
STALL_SECONDS = 60.0


@dataclass(frozen=True)
class Evicted:
    namespace: str
    name: str
    owner_uid: str  # its controller's: the replacement names the same one
    labels: Mapping[str, str]
    since: datetime  # when its eviction was sent
    owner_kind: str = ""
    owner_name: str = ""
    uid: str = ""  # its own: still listed and not terminating, it was not evicted after all


# What a pod is waited for when it is not: its controller is gone, or it is still running.
NO_CONTROLLER, NOT_EVICTED = "no controller to replace it", "still running: not evicted"


@dataclass(frozen=True)
class Landed:
    pod: str  # the replacement's name ("" when none was seen)
    node: str  # "" while it is not bound (Pending)
    skipped: str = ""  # why it was not waited for (NO_CONTROLLER, NOT_EVICTED)


def _selector(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _owner_uid(pod: Mapping[str, Any]) -> str:
    refs = (pod.get("metadata") or {}).get("ownerReferences") or ()
    ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
    return str(ref.get("uid", "")) if ref else ""


def match(evicted: list[Evicted], pods: Iterable[Mapping[str, Any]], known: set[str],
          indexes: list[int] | None = None) -> dict[int, Landed]:
    """Index in `evicted` (or in `indexes`, where given) -> its replacement: per controller, the pods created since
    the first of its evictions that were not there before, a StatefulSet's by name, the others in order of
    creation."""
    if indexes is not None:
        return {indexes[i]: x for i, x in match(evicted, pods, known).items()}
    fresh: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for p in pods:
        meta = p.get("metadata") or {}
        if meta.get("uid") in known or meta.get("deletionTimestamp"):
            continue
        fresh[_owner_uid(p)].append(p)
    out: dict[int, Landed] = {}
    by_owner: dict[str, list[int]] = defaultdict(list)
    for i, e in enumerate(evicted):
        by_owner[e.owner_uid].append(i)
    for owner, indexes in by_owner.items():
        first = min(evicted[i].since for i in indexes) - CLOCK_SLACK
        new = sorted((p for p in fresh.get(owner, ()) if (t := parse_time(p["metadata"].get("creationTimestamp", "")))
                      is not None and t >= first), key=lambda p: (p["metadata"].get("creationTimestamp", ""),
                                                                  p["metadata"].get("name", "")))
        taken: set[str] = set()
        for i in indexes:  # a StatefulSet's replacement keeps its pod's name
            same = next((p for p in new if p["metadata"]["name"] == evicted[i].name), None)
            if same is not None:
                taken.add(same["metadata"]["name"])
                out[i] = Landed(same["metadata"]["name"], (same.get("spec") or {}).get("nodeName") or "")
        rest = [p for p in new if p["metadata"]["name"] not in taken]
        for i in sorted((i for i in indexes if i not in out), key=lambda i: evicted[i].since):
            if not rest:
                break
            p = rest.pop(0)
            out[i] = Landed(p["metadata"]["name"], (p.get("spec") or {}).get("nodeName") or "")
    return out


def wait_for_landings(conn: Connection, evicted: list[Evicted], known: set[str], timeout: float,
                      stop: threading.Event | None = None, interval: float = 1.0,
                      list_pods: Callable[[str, str], list[Mapping[str, Any]]] | None = None,
                      owner_exists: Callable[[Evicted], bool] | None = None) -> dict[int, Landed]:
    """Polls until every evicted pod whose controller is still there has a bound replacement, `timeout` seconds
    pass, nothing changed for STALL_SECONDS or `stop` is set; returns what was found by then (a pod missing from
    the answer: no replacement seen)."""
    from kubectl_desched.kube.live import request_json

    if list_pods is None:
        def list_pods(namespace: str, selector: str) -> list[Mapping[str, Any]]:
            query = [("labelSelector", selector)] if selector else None
            answer = request_json(conn, "GET", f"/api/v1/namespaces/{namespace}/pods", query=query)
            return list((answer or {}).get("items") or ())

    if owner_exists is None:
        def owner_exists(e: Evicted) -> bool:
            """False only when the API says the controller is gone (404, or another one under its name)."""
            from kubectl_desched.kube.apierrors import is_api_exception

            base = OWNER_PATHS.get(e.owner_kind)
            if base is None or not e.owner_name:
                return True
            plural = e.owner_kind.lower() + "s"
            try:
                owner = request_json(conn, "GET", f"{base}/namespaces/{e.namespace}/{plural}/{e.owner_name}")
            except Exception as err:  # not allowed to look, or a passing fault: wait as for any controller
                return not (is_api_exception(err) and getattr(err, "status", None) == 404)
            return ((owner or {}).get("metadata") or {}).get("uid") == e.owner_uid

    skipped = {i: Landed("", "", NO_CONTROLLER) for i, e in enumerate(evicted) if not owner_exists(e)}
    waited = [i for i in range(len(evicted)) if i not in skipped]  # no controller: no replacement will come
    queries = sorted({(evicted[i].namespace, _selector(evicted[i].labels)) for i in waited})
    deadline = time.monotonic() + timeout
    found: dict[int, Landed] = dict(skipped)
    last, changed = found, time.monotonic()
    while waited:
        pods = [p for ns, sel in queries for p in list_pods(ns, sel)]
        running = {(p.get("metadata") or {}).get("uid") for p in pods
                   if not (p.get("metadata") or {}).get("deletionTimestamp")}
        for i in [i for i in waited if evicted[i].uid and evicted[i].uid in running]:
            skipped[i] = Landed("", "", NOT_EVICTED)  # e.g. a PodMigrationJob that ended without evicting
            waited.remove(i)
        found = {**match([evicted[i] for i in waited], pods, known, waited), **skipped}
        now = time.monotonic()
        if found != last:
            last, changed = found, now
        if all(i in found and found[i].node for i in waited) or now >= deadline or now - changed >= STALL_SECONDS:
            return found
        if (stop or threading.Event()).wait(interval):
            return found
    return found
