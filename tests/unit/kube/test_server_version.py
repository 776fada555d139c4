"""The API server's version, which tells the placement estimate which kube-scheduler to follow: read once a live
read succeeded, and never a reason to stop."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from kubectl_desched.kube import live
from kubectl_desched.model.state import ClusterState


@pytest.mark.parametrize(("answer", "version"), [
    ({"major": "1", "minor": "36", "gitVersion": "v1.36.3"}, "v1.36.3"),
    ({"gitVersion": 36}, ""),  # not a string
    (["v1.36.3"], ""),  # not an object
    (ApiException(status=403, reason="Forbidden"), ""),
    (OSError("connection refused"), ""),
])
def test_the_version_is_the_servers_or_nothing(monkeypatch: pytest.MonkeyPatch, answer: Any, version: str) -> None:
    def request_json(_conn: Any, method: str, path: str, **_kw: Any) -> Any:
        assert (method, path) == ("GET", "/version")
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(live, "request_json", request_json)
    assert live.server_version(object()) == version  # type: ignore[arg-type]


def test_the_server_says_the_minor_else_the_newest_kubelet_does() -> None:
    from kubectl_desched.model.objects import node_from_json
    from tests import builders as b

    nodes = [node_from_json(b.node("a", kubelet="v1.34.1")), node_from_json(b.node("b", kubelet="v1.35.0-eks-1"))]
    assert ClusterState(nodes, []).server_minor == 35
    assert ClusterState(nodes, [], server_version="v1.36.3").server_minor == 36
    assert ClusterState([node_from_json(b.node("k", kubelet="kwok-0.7.0"))], []).server_minor is None
