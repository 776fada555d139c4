"""The plan document's identity: the cluster it was made on, when and by whom, and each candidate's version."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from kubectl_desched.app import plan_identity
from kubectl_desched.app.loading import Loaded
from kubectl_desched.kube import live
from kubectl_desched.kube.config import Connection
from kubectl_desched.model import pod_from_json
from kubectl_desched.model.state import ClusterState
from tests import builders as b


def _conn() -> Connection:
    return Connection(api=None, server="https://api", context="c", namespace="default")  # type: ignore[arg-type]


def _server(review: Any) -> Any:
    """GET kube-system and POST a SelfSubjectReview; `review` is the answer, or the status code to refuse with."""
    def request(_conn: Any, method: str, path: str, **_kw: Any) -> Any:
        if path == plan_identity.KUBE_SYSTEM:
            return {"metadata": {"name": "kube-system", "uid": "ks-uid-1"}}
        if isinstance(review, int):
            e = ApiException(status=review, reason="x")
            e.body = json.dumps({"kind": "Status", "message": "no"})
            raise e
        return review
    return request


def test_made_by_is_the_reviewed_user_where_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live, "request_json", _server(
        {"status": {"userInfo": {"username": "alice", "groups": ["ops", "system:authenticated"], "uid": "u-1"}}}))
    assert plan_identity.made_by(_conn()) == {"username": "alice", "groups": ["ops", "system:authenticated"],
                                              "uid": "u-1"}
    assert plan_identity.cluster_uid(_conn()) == "ks-uid-1"


@pytest.mark.parametrize("status", [403, 404, 500])
def test_made_by_is_silently_absent_where_forbidden_or_not_served(monkeypatch: pytest.MonkeyPatch,
                                                                   status: int) -> None:
    monkeypatch.setattr(live, "request_json", _server(status))
    assert plan_identity.made_by(_conn()) is None


def test_a_snapshot_names_its_cluster_only_with_the_kube_system_namespace() -> None:
    ns = {**b.namespace("kube-system"), "metadata": {"name": "kube-system", "uid": "ks-uid-9"}}
    with_ns = Loaded(ClusterState([], [], extra={"Namespace": [ns]}), None, None, "")  # type: ignore
    assert plan_identity.snapshot_uid(with_ns) == "ks-uid-9"
    without = Loaded(ClusterState([], []), None, None, "")  # type: ignore[arg-type]
    assert plan_identity.snapshot_uid(without) is None


def test_a_pod_keeps_its_resource_version() -> None:
    obj = b.pod("web-1", "n1")
    obj["metadata"]["resourceVersion"] = "4711"
    assert pod_from_json(obj).resource_version == "4711"
