"""--cordon: the nodes a plan empties are cordoned (spec.unschedulable, as `kubectl cordon` sets it) just before the
first move of the plugin that empties them, as the estimate assumed, and once the moves are done, or on any failure
or interrupt, each is read again: a node this run moved pods off and left with only DaemonSet, mirror or finished
pods stays cordoned (it can be removed); every other node this run cordoned is uncordoned. A node that was
unschedulable before the run is never touched."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from kubectl_desched.evictors.base import EvictionResult, PodEvictor, WrappingEvictor, now
from kubectl_desched.framework.plan import Candidate, holds_node
from kubectl_desched.kube.access import Permission, missing_permissions
from kubectl_desched.kube.apierrors import is_api_exception
from kubectl_desched.kube.live import api_message, bounded_timeout, request_json
from kubectl_desched.model.objects import pod_from_json

if TYPE_CHECKING:
    from kubectl_desched.kube.config import Connection

CORDON_PERMISSIONS = (Permission("get", "nodes"), Permission("patch", "nodes"), Permission("list", "pods"))


def _why(e: Exception) -> str:
    return f"HTTP {e.status}: {api_message(e)}" if is_api_exception(e) else f"{type(e).__name__}: {e}"


class Cordons:
    def __init__(self, conn: Connection, names: Sequence[str], say: Callable[[str], None]) -> None:
        self.conn = conn
        self.names = list(names)
        self.say = say
        self.cordoned: list[str] = []  # by this run, each listed before its request is sent
        self.records: list[dict[str, Any]] = []  # what finish() found and did, for --report
        self._lock = threading.Lock()
        self._tried = False
        self._failed: str | None = None

    def _get(self, name: str) -> dict[str, Any]:
        return request_json(self.conn, "GET", f"/api/v1/nodes/{name}", timeout=bounded_timeout(self.conn)) or {}

    def _set(self, name: str, unschedulable: bool) -> None:
        request_json(self.conn, "PATCH", f"/api/v1/nodes/{name}", body={"spec": {"unschedulable": unschedulable}},
                     timeout=bounded_timeout(self.conn), content_type="application/merge-patch+json")

    def ensure(self) -> str | None:
        """Cordon every node, once (the first caller does it, the others wait); why it failed, if it did: then
        nothing is evicted from these nodes."""
        with self._lock:
            if not self._tried:
                self._tried = True
                try:
                    self._cordon_all()
                except Exception as e:  # one line, never a traceback: what was cordoned is undone by finish()
                    self._failed = f"cordoning failed ({_why(e)})"
            return self._failed

    def _cordon_all(self) -> None:
        for name in self.names:
            if (self._get(name).get("spec") or {}).get("unschedulable"):
                self.say(f"  {name}: already cordoned, left as it is")
                continue
            self.cordoned.append(name)  # first: an answer lost on the way still leaves it to undo
            self._set(name, True)
        if self.cordoned:
            self.say(f"cordoned {', '.join(self.cordoned)} so that no replacement lands there")

    def finish(self, moved_from: Collection[str]) -> list[dict[str, Any]]:
        """Each node this run cordoned, read again: kept cordoned when this run moved pods off it and it holds none
        but DaemonSet, mirror or finished pods, else uncordoned. One line each; nothing here raises."""
        for name in self.cordoned:
            record: dict[str, Any] = {"node": name, "empty": False, "staying": [], "uncordoned": False}
            try:
                if not (self._get(name).get("spec") or {}).get("unschedulable"):
                    continue  # the cordon never reached it (or someone uncordoned it): nothing to undo
                pods = request_json(self.conn, "GET", "/api/v1/pods",
                                    query=[("fieldSelector", f"spec.nodeName={name}")],
                                    timeout=bounded_timeout(self.conn)) or {}
                staying = [f"{p.namespace}/{p.name}" for p in map(pod_from_json, pods.get("items") or ())
                           if holds_node(p)]
            except Exception as e:
                staying = [f"(its pods could not be read: {_why(e)})"]
            record["empty"], record["staying"] = not staying, staying
            if not staying and name in moved_from:
                self.say(f"{name} is empty and stays cordoned: `kubectl uncordon {name}` to use it again")
            else:
                try:
                    self._set(name, False)
                    record["uncordoned"] = True
                    why = f"{len(staying)} pod(s) stay: {', '.join(staying[:3])}{', ...' if len(staying) > 3 else ''}" \
                        if staying else "nothing was moved off it"
                    self.say(f"{name} was not emptied ({why}): uncordoned")
                except Exception as e:
                    record["error"] = _why(e)
                    self.say(f"error: {name} could not be uncordoned ({_why(e)}): `kubectl uncordon {name}`")
            self.records.append(record)
        self.cordoned = []
        return self.records


class CordoningEvictor(WrappingEvictor):
    """The evictor the runner gets with --cordon: before the first candidate of a plugin that empties nodes, the
    nodes are cordoned; if that fails, none of that plugin's candidates is evicted."""

    def __init__(self, inner: PodEvictor, cordons: Cordons, plugins: Collection[str]) -> None:
        super().__init__(inner)
        self.cordons = cordons
        self.plugins = set(plugins)

    def preflight(self, candidates: Sequence[Candidate]) -> list[str]:
        return self.inner.preflight(candidates) + missing_permissions(self.cordons.conn, CORDON_PERMISSIONS, ())

    def evict(self, candidate: Candidate, stop: threading.Event) -> EvictionResult:
        if candidate.plugin in self.plugins:
            failed = self.cordons.ensure()
            if failed is not None:
                return EvictionResult(candidate, "failed", f"not evicted: {failed}", finished=now())
        return self.inner.evict(candidate, stop)
