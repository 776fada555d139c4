"""--record-events: a Normal event on each evicted pod, as the descheduler records one (events.k8s.io/v1,
action Descheduled, reason = the plugin), so `kubectl describe pod` and event-watching tools show who evicted it
and why. Falls back to core/v1 Events where events.k8s.io/v1 is not served, as client-go's recorder does."""

from __future__ import annotations

import socket
import time
from datetime import datetime
from typing import TYPE_CHECKING

from kubectl_desched.evictors.base import now
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.kube.access import Permission
from kubectl_desched.kube.apierrors import api_exception
from kubectl_desched.kube.live import bounded_timeout, request_json

if TYPE_CHECKING:
    from kubectl_desched.kube.config import Connection  # it imports the kubernetes client

CONTROLLER = "kubectl-desched"
ACTION = "Descheduled"
EVENT_PERMISSION = Permission("create", "events", "events.k8s.io")


def _micro_time(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def instance() -> str:
    """reportingInstance: who on which machine; at most 128 characters."""
    return f"{CONTROLLER}@{socket.gethostname()}"[:128]


def event_body(c: Candidate, when: datetime, reporter: str) -> dict:
    p = c.pod
    name = f"{p.name}.{time.time_ns():x}"[:253]
    note = f"evicted from node {p.node_name} by {CONTROLLER}: {c.plugin}: {c.reason}"[:1024]
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": p.namespace},
        "eventTime": _micro_time(when),
        "reportingController": CONTROLLER,
        "reportingInstance": reporter,
        "action": ACTION,
        "reason": c.plugin[:128],
        "type": "Normal",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": p.namespace, "name": p.name, "uid": p.uid},
        "note": note,
    }


def core_event_body(new: dict) -> dict:
    """The same event as a core/v1 Event, for clusters without events.k8s.io/v1."""
    stamp = new["eventTime"][:19] + "Z"
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": new["metadata"],
        "involvedObject": new["regarding"],
        "reason": new["reason"],
        "message": new["note"],
        "type": new["type"],
        "action": new["action"],
        "eventTime": new["eventTime"],
        "reportingComponent": new["reportingController"],
        "reportingInstance": new["reportingInstance"],
        "source": {"component": new["reportingController"]},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


class EventRecorder:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.timeout = bounded_timeout(conn)
        self.reporter = instance()
        self.core_only = False

    def descheduled(self, c: Candidate) -> None:
        """Post the event; raises (ApiException, urllib3 or OS errors) when it could not be recorded."""
        body = event_body(c, now(), self.reporter)
        ns = c.pod.namespace
        if not self.core_only:
            try:
                request_json(self.conn, "POST", f"/apis/events.k8s.io/v1/namespaces/{ns}/events", body=body,
                             timeout=self.timeout)
                return
            except api_exception() as e:
                if e.status != 404:
                    raise
                self.core_only = True
        request_json(self.conn, "POST", f"/api/v1/namespaces/{ns}/events", body=core_event_body(body),
                     timeout=self.timeout)
