"""What a plan document says it acts on: the cluster (its server and the kube-system namespace's UID, which no other
cluster shares), when and by whom it was made, and the command line and policy that made it. `apply` compares the
cluster part with the cluster it reaches before it asks anything."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from kubectl_desched.errors import DeschedError
from kubectl_desched.evictors.base import now, timestamp
from kubectl_desched.framework.policy_decoder import Policy
from kubectl_desched.sanitize import LINE_LIMIT, one_line
from kubectl_desched.ui.report import policy_doc, redacted

if TYPE_CHECKING:
    from kubectl_desched.app.loading import Loaded
    from kubectl_desched.kube.config import Connection

KUBE_SYSTEM = "/api/v1/namespaces/kube-system"
REVIEWS = tuple(f"/apis/authentication.k8s.io/{v}/selfsubjectreviews" for v in ("v1", "v1beta1"))


def read_cluster_uid(conn: Connection) -> str:
    """The kube-system namespace's UID; a DeschedError when it cannot be read (apply cannot go on without it)."""
    from kubectl_desched.kube.live import request_json

    try:
        found = request_json(conn, "GET", KUBE_SYSTEM)
    except Exception as e:  # any failure reads the same to the user: which cluster this is stays unknown
        raise DeschedError(f"cannot read namespace kube-system to tell which cluster {conn.server} is: "
                           f"{one_line(getattr(e, 'reason', None) or e, LINE_LIMIT // 2)}") from None
    uid = ((found or {}).get("metadata") or {}).get("uid")
    if not isinstance(uid, str) or not uid:
        raise DeschedError(f"namespace kube-system of {conn.server} has no uid: cannot tell which cluster it is")
    return uid


def cluster_uid(conn: Connection) -> str | None:
    try:
        return read_cluster_uid(conn)
    except DeschedError:
        return None  # the plan says so (null); apply then refuses it


def made_by(conn: Connection) -> dict[str, Any] | None:
    """The user as the API server authenticates this connection (a SelfSubjectReview); None where the server does
    not serve it or does not allow it: the field is then left out, nothing is said."""
    from kubectl_desched.kube.live import request_json

    for path in REVIEWS:
        version = path.split("/")[3]
        body = {"apiVersion": f"authentication.k8s.io/{version}", "kind": "SelfSubjectReview"}
        try:
            answer = request_json(conn, "POST", path, body=body)
        except Exception as e:
            if getattr(e, "status", None) == 404:
                continue  # an older server: the beta version may be there
            return None
        info = ((answer or {}).get("status") or {}).get("userInfo") or {}
        name = info.get("username")
        if not isinstance(name, str) or not name:
            return None
        who: dict[str, Any] = {"username": name}
        groups = info.get("groups")
        if isinstance(groups, list) and all(isinstance(g, str) for g in groups):
            who["groups"] = groups
        if isinstance(info.get("uid"), str) and info["uid"]:
            who["uid"] = info["uid"]
        return who
    return None


def snapshot_uid(loaded: Loaded) -> str | None:
    """A snapshot names its cluster only when it holds the kube-system Namespace (`kubectl get ns,nodes,...`)."""
    for ns in loaded.state.extra.get("Namespace", ()):
        if getattr(ns, "name", None) == "kube-system" and getattr(ns, "uid", ""):
            return str(ns.uid)
    return None


def plan_identity(policy: Policy, loaded: Loaded) -> dict[str, Any]:
    conn = loaded.conn
    doc: dict[str, Any] = {
        "server": conn.server if conn else None,
        "context": conn.context if conn else None,
        "kubeSystemUID": cluster_uid(conn) if conn else snapshot_uid(loaded),
        "source": "cluster" if conn else "snapshot",
        "madeAt": timestamp(now()),
    }
    who = made_by(conn) if conn else None
    if who is not None:
        doc["madeBy"] = who
    doc["arguments"] = redacted(sys.argv[1:])  # a --token given on the command line is not written
    doc["policy"] = policy_doc(policy)
    return doc
