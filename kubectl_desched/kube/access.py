"""Ask the API server what the user may do (SelfSubjectAccessReview, authorization.k8s.io/v1), so a missing
permission is named before the prompt instead of failing pod after pod after the user said yes."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import urllib3

from kubectl_desched.errors import DeschedError
from kubectl_desched.kube.apierrors import api_exception
from kubectl_desched.kube.live import NotJSON, bounded_timeout, describe_api_error, json_type, request_json

if TYPE_CHECKING:
    from kubectl_desched.kube.config import Connection  # it imports the kubernetes client

SSAR_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


class AccessCheckUnavailable(DeschedError):
    """The server does not answer access reviews (not served, or forbidden to this user)."""


@dataclass(frozen=True)
class Permission:
    verb: str
    resource: str
    group: str = ""
    subresource: str = ""
    namespace: str = ""  # "" is cluster-wide (or a cluster-scoped resource)

    def __str__(self) -> str:
        what = self.resource + (f".{self.group}" if self.group else "") + (
            f"/{self.subresource}" if self.subresource else "")
        return f"{self.verb} {what}" + (f" in namespace {self.namespace}" if self.namespace else "")

    def in_namespace(self, namespace: str) -> Permission:
        return Permission(self.verb, self.resource, self.group, self.subresource, namespace)


def allowed(conn: Connection, p: Permission) -> bool:
    attrs = {"verb": p.verb, "resource": p.resource, "group": p.group}
    if p.subresource:
        attrs["subresource"] = p.subresource
    if p.namespace:
        attrs["namespace"] = p.namespace
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attrs}}
    review = request_json(conn, "POST", SSAR_PATH, body=body, timeout=bounded_timeout(conn))
    status = (review or {}).get("status")
    if not isinstance(status, dict):  # a review always comes back with a status: this answer is not one
        raise NotJSON("POST", SSAR_PATH, f"was not a SelfSubjectAccessReview: its status is {json_type(status)}")
    return status.get("allowed") is True


def missing_permissions(conn: Connection, needed: Iterable[Permission], namespaces: Iterable[str]) -> list[str]:
    """Which of `needed` the user lacks in any of `namespaces`, one phrase per permission. A permission granted
    cluster-wide is asked once, not once per namespace (thousands of namespaces stay two requests).
    No namespaces: the permissions are cluster-wide (cluster-scoped resources such as PodMigrationJobs)."""
    namespaces = sorted(set(namespaces))
    needed = list(dict.fromkeys(needed))
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            wide = dict(zip(needed, pool.map(lambda p: allowed(conn, p), needed), strict=True))
            narrow = [p.in_namespace(ns) for p in needed if not wide[p] for ns in namespaces]
            verdicts = dict(zip(narrow, pool.map(lambda p: allowed(conn, p), narrow), strict=True))
    except api_exception() as e:
        if e.status in (403, 404):
            raise AccessCheckUnavailable(f"cannot check permissions: SelfSubjectAccessReview answered {e.status}") \
                from None
        raise DeschedError(str(describe_api_error(e, "checking permissions (SelfSubjectAccessReview)",
                                                  conn.server))) from None
    except (urllib3.exceptions.HTTPError, OSError) as e:
        raise DeschedError(str(describe_api_error(e, "checking permissions (SelfSubjectAccessReview)",
                                                  conn.server))) from None
    denied: dict[Permission, list[str]] = {p: [] for p in needed if not wide[p] and not namespaces}
    for p, ok in verdicts.items():
        if not ok:
            denied.setdefault(p.in_namespace(""), []).append(p.namespace)
    return [_phrase(p, nss) for p, nss in denied.items()]


def _phrase(p: Permission, namespaces: list[str], limit: int = 5) -> str:
    """"create pods/eviction in namespace a, b and 3 more": one phrase per permission, however many namespaces."""
    shown = ", ".join(namespaces[:limit]) + (f" and {len(namespaces) - limit} more" if len(namespaces) > limit else "")
    if not namespaces or namespaces == [""]:
        return str(p)
    return f"{p} in namespace{'s' if len(namespaces) > 1 else ''} {shown}"
