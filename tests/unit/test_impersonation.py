"""--as, --as-group, --as-uid become kubectl's impersonation headers on the client (the live test proves the server
honours them); the malformed combinations are usage errors."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s_client

from kubectl_desched.errors import UsageError
from kubectl_desched.kube.config import KubeOptions, impersonate


def headers(**kw: object) -> dict[str, str]:
    api = impersonate(k8s_client.ApiClient(k8s_client.Configuration()), KubeOptions(**kw))  # type: ignore[arg-type]
    return {k: v for k, v in api.default_headers.items() if k.startswith("Impersonate-")}


def test_headers_follow_the_flags() -> None:
    assert headers() == {}
    assert headers(as_user="system:serviceaccount:team:deployer", as_groups=("team",), as_uid="42") == {
        "Impersonate-User": "system:serviceaccount:team:deployer", "Impersonate-Group": "team", "Impersonate-Uid": "42"}


@pytest.mark.parametrize("kw, message", [
    ({"as_groups": ("g",)}, "--as-group and --as-uid require --as"),
    ({"as_uid": "1"}, "--as-group and --as-uid require --as"),
    ({"as_user": "u", "as_groups": ("a", "b")}, "--as-group: only one group can be impersonated for now"),
])
def test_bad_combinations_are_usage_errors(kw: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        headers(**kw)
