"""--cordon: the nodes a plan empties are cordoned (spec.unschedulable, as `kubectl cordon` sets it) before the first
eviction, and once the moves are done, or on any failure or interrupt, each is read again: a node left with only
DaemonSet, mirror or finished pods stays cordoned (it can be removed), every other one this run cordoned is
uncordoned. A node that was unschedulable before the run is never touched."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import urllib3

from kubectl_desched.framework.plan import holds_node
from kubectl_desched.kube.access import Permission
from kubectl_desched.kube.apierrors import api_exception, is_api_exception
from kubectl_desched.kube.live import api_message, bounded_timeout, read_cluster, request_json

if TYPE_CHECKING:
    from kubectl_desched.kube.config import Connection

CORDON_PERMISSIONS = (Permission("get", "nodes"), Permission("patch", "nodes"))


class Cordons:
    def __init__(self, conn: Connection, say: Callable[[str], None]) -> None:
        self.conn = conn
        self.say = say
        self.cordoned: list[str] = []  # by this run, in order
        self.records: list[dict[str, Any]] = []  # what finish() found and did, for --report

    def _set(self, name: str, unschedulable: bool) -> None:
        request_json(self.conn, "PATCH", f"/api/v1/nodes/{name}", body={"spec": {"unschedulable": unschedulable}},
                     timeout=bounded_timeout(self.conn), content_type="application/merge-patch+json")

    def cordon(self, names: list[str]) -> None:
        for name in names:
            node = request_json(self.conn, "GET", f"/api/v1/nodes/{name}", timeout=bounded_timeout(self.conn))
            if (node.get("spec") or {}).get("unschedulable"):
                self.say(f"  {name}: already cordoned, left as it is")
                continue
            self._set(name, True)
            self.cordoned.append(name)
        if self.cordoned:
            self.say(f"cordoned {', '.join(self.cordoned)} so that no replacement lands there")

    def finish(self) -> list[dict[str, Any]]:
        """Read each node this run cordoned: keep the empty ones cordoned, uncordon the rest. Says one line each."""
        if not self.cordoned:
            return []
        try:
            state = read_cluster(self.conn, node_names=list(self.cordoned))
            staying = {n: [p.key for p in state.pods_on_node(n) if holds_node(p)] for n in self.cordoned}
        except (api_exception(), urllib3.exceptions.HTTPError, OSError) as e:
            why = f"HTTP {e.status}" if is_api_exception(e) else type(e).__name__
            self.say(f"cannot read the cordoned nodes' pods ({why}): uncordoning all of them")
            staying = {n: ["(unread)"] for n in self.cordoned}
        for name in self.cordoned:
            pods = staying[name]
            record: dict[str, Any] = {"node": name, "empty": not pods, "staying": pods, "uncordoned": False}
            if not pods:
                self.say(f"{name} is empty and stays cordoned: `kubectl uncordon {name}` to use it again")
            else:
                try:
                    self._set(name, False)
                    record["uncordoned"] = True
                    self.say(f"{name} was not emptied ({len(pods)} pod(s) stay: {', '.join(pods[:3])}"
                             f"{', ...' if len(pods) > 3 else ''}): uncordoned")
                except (api_exception(), urllib3.exceptions.HTTPError, OSError) as e:
                    why = api_message(e) if is_api_exception(e) else type(e).__name__
                    record["error"] = why
                    self.say(f"error: {name} could not be uncordoned ({why}): `kubectl uncordon {name}`")
            self.records.append(record)
        self.cordoned = []
        return self.records
