"""Following a run's PodMigrationJobs: one daemon thread lists them, then watches from that list, and hands every
change to the evictor, which updates its JobTracks (jobs.py). The thread knows the evictor only as `Followed`, the
few calls it makes, so the evictor (evictor.py) imports this module and not the other way round."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import urllib3

from kubectl_desched.evictors.migration.jobs import CREATOR, JOBS_PATH, MANAGED_BY, RUN_LABEL
from kubectl_desched.kube.apierrors import api_exception
from kubectl_desched.kube.live import TooLarge, answer_limit, bounded_timeout, request_json

if TYPE_CHECKING:
    from kubectl_desched.kube.config import Connection


class Followed(Protocol):
    """What the follower reads from and hands to the evictor whose jobs it follows."""

    conn: Connection
    run_id: str

    def registered_names(self) -> set[str]: ...

    def apply_list(self, jobs: Sequence[Mapping[str, Any]], registered_before: set[str]) -> None: ...

    def apply_event(self, kind: str, job: Mapping[str, Any]) -> None: ...


class Follower(threading.Thread):
    """LIST this run's jobs, then WATCH from that list's resourceVersion; list again whenever the watch ends
    (server timeout, 410 Gone, a dropped connection). Every ADDED/MODIFIED/DELETED goes to the evictor."""

    def __init__(self, evictor: Followed) -> None:
        super().__init__(daemon=True, name="pmj-follow")
        self.evictor = evictor
        self.selector = f"{MANAGED_BY}={CREATOR},{RUN_LABEL}={evictor.run_id}"
        self.stopped = threading.Event()
        self.listed = threading.Event()  # the first LIST is done: the watch will replay everything after it
        self._response: Any = None

    def run(self) -> None:
        ev = self.evictor
        while not self.stopped.is_set():
            before = ev.registered_names()
            try:
                doc = request_json(ev.conn, "GET", JOBS_PATH, query=[("labelSelector", self.selector)],
                                   timeout=bounded_timeout(ev.conn))
            except (api_exception(), urllib3.exceptions.HTTPError, OSError):
                self.stopped.wait(1.0)  # a blip while waiting: try again until settle() gives up
                continue
            ev.apply_list(doc.get("items") or [], before)
            self.listed.set()
            try:
                self._watch((doc.get("metadata") or {}).get("resourceVersion", ""))
            except Exception:  # a broken or refused watch only means: list again, a second later
                self.stopped.wait(1.0)

    def _watch(self, version: str) -> None:
        api, conn = self.evictor.conn.api, self.evictor.conn
        query = [("watch", "true"), ("labelSelector", self.selector), ("allowWatchBookmarks", "true"),
                 ("timeoutSeconds", 300)]
        if version:
            query.append(("resourceVersion", version))
        method, url, headers, body, post = api.param_serialize(
            "GET", JOBS_PATH, query_params=query, header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"])
        # The read stays unbounded unless --request-timeout says otherwise: a quiet watch is normal, the server
        # ends it (timeoutSeconds), and settle() stops waiting at its deadline whatever this thread does.
        resp = api.call_api(method, url, header_params=headers, body=body, post_params=post,
                            _request_timeout=conn.timeout)
        self._response = resp.response
        if resp.status != 200:
            raise api_exception()(http_resp=resp)
        if self.stopped.is_set():
            return
        limit = answer_limit(conn)  # one event is one object: a line without end is a broken watch
        buffer = bytearray()
        for chunk in self._response.stream(4096, decode_content=True):
            buffer += chunk
            while (end := buffer.find(b"\n")) >= 0:
                line = bytes(buffer[:end])
                del buffer[:end + 1]
                if not line.strip():
                    continue
                event = json.loads(line)
                kind = event.get("type")
                if kind == "ERROR":  # 410 Gone and friends: list again
                    return
                if kind in ("ADDED", "MODIFIED", "DELETED"):
                    self.evictor.apply_event(kind, event.get("object") or {})
            if len(buffer) > limit:
                raise TooLarge("GET", f"{JOBS_PATH}?watch=true", limit)

    def halt(self) -> None:
        self.stopped.set()
        r = self._response
        if r is not None:
            # Closing a half-read stream may fail; the thread ends anyway.
            with contextlib.suppress(Exception):
                (getattr(r, "shutdown", None) or r.close)()
