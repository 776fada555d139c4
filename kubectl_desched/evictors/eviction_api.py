"""Evict through the policy/v1 Eviction subresource. The API server enforces PodDisruptionBudgets (429),
and a UID precondition makes sure a pod recreated under the same name is never evicted by mistake."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import urllib3
from kubernetes.client.exceptions import ApiException

from kubectl_desched.evictors.base import EvictionResult
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.kube.config import Connection
from kubectl_desched.kube.live import api_message, describe_api_error, request_json

REQUESTER = "kubectl-desched"


def eviction_body(c: Candidate, *, server_dry_run: bool, grace_period: int | None) -> dict:
    delete_options: dict = {}
    if c.pod.uid:
        delete_options["preconditions"] = {"uid": c.pod.uid}
    if grace_period is not None:
        delete_options["gracePeriodSeconds"] = grace_period
    if server_dry_run:
        delete_options["dryRun"] = ["All"]
    return {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {
            "name": c.pod.name,
            "namespace": c.pod.namespace,
            "annotations": {"requested-by": REQUESTER, "reason": f"{c.plugin}: {c.reason}"[:1000]},
        },
        "deleteOptions": delete_options,
    }


class EvictionApiEvictor:
    def __init__(self, conn: Connection, *, server_dry_run: bool = False, grace_period: int | None = None) -> None:
        self.conn = conn
        self.server_dry_run = server_dry_run
        self.grace_period = grace_period

    def evict(self, c: Candidate) -> EvictionResult:
        pod = c.pod
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/eviction"
        query = [("dryRun", "All")] if self.server_dry_run else []
        body = eviction_body(c, server_dry_run=self.server_dry_run, grace_period=self.grace_period)
        try:
            request_json(self.conn, "POST", path, query=query, body=body)
        except ApiException as e:
            return EvictionResult(c, *self._classify(e, pod.namespace))
        except (urllib3.exceptions.HTTPError, OSError) as e:
            return EvictionResult(c, "failed", str(describe_api_error(e, "eviction", self.conn.server)))
        return EvictionResult(c, "would evict" if self.server_dry_run else "evicted",
                              "server dry run accepted" if self.server_dry_run else "eviction accepted")

    @staticmethod
    def _classify(e: ApiException, namespace: str) -> tuple[str, str]:
        msg = api_message(e)
        if e.status == 429:
            return "blocked", f"PodDisruptionBudget: {msg}"
        if e.status == 404:
            return "gone", "pod no longer exists"
        if e.status == 409:
            return "changed", f"pod was replaced or changed, not evicted ({msg})"
        if e.status == 403:
            return "forbidden", f"missing permission: create pods/eviction in namespace {namespace} ({msg})"
        if e.status == 401:
            return "failed", "unauthorized: credentials rejected"
        return "failed", f"{msg} ({e.status})"

    def evict_all(self, candidates: Iterable[Candidate],
                  on_result: Callable[[EvictionResult], None] | None = None) -> list[EvictionResult]:
        results = []
        for c in candidates:
            r = self.evict(c)
            results.append(r)
            if on_result:
                on_result(r)
        return results
