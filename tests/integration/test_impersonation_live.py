"""kubectl's --as against the real kube-apiserver: the admin's kubeconfig impersonating the limited user is refused
by the RBAC preflight exactly as the limited user's own kubeconfig is, and the admin alone is not."""

from __future__ import annotations

from typing import Any

import pytest
from desched import desched
from test_safe_eviction import READ, rbac, tainted

pytestmark = pytest.mark.integration


def test_as_limited_user_is_refused_by_the_preflight_while_admin_is_not(cluster: Any, namespace: str) -> None:
    args = tainted(cluster, namespace, ["web-0"])
    cluster.create_node(f"{namespace}-spare")
    admin = cluster.kubeconfig_for()
    cleanup = rbac(cluster, f"read-as-{namespace}", READ)  # the limited user may read, not evict
    try:
        refused = desched(admin, *args, "--as", "limited", "--yes")
        assert refused.returncode == 1, refused.stderr
        assert refused.stderr == (f"error: not allowed to create pods/eviction in namespace {namespace} "
                                  "(checked before asking: nothing was evicted)\n")
        group = desched(admin, *args, "--as", "limited", "--as-group", "system:masters", "--yes")
        assert group.returncode == 0, group.stderr  # impersonating the admins' group grants the eviction
    finally:
        cleanup()
    pod = cluster.get_pod(namespace, "web-0")
    assert pod is None or pod["metadata"].get("deletionTimestamp")


def test_as_group_without_as_is_a_usage_error(cluster: Any, namespace: str) -> None:
    proc = desched(cluster.kubeconfig_for(), "deschedule", "-n", namespace, "--as-group", "x")
    assert proc.returncode != 0
    assert proc.stderr == "error: --as-group and --as-uid require --as\n"
