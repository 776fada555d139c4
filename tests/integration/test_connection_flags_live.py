"""kubectl's connection flags, --field-selector, --chunk-size and -v against the real kube-apiserver: a run with no
kubeconfig at all, only -s/--token and a CA (or --insecure-skip-tls-verify); the server's own answer for a wrong
token or TLS name; both impersonated groups as the server sees them; the server matching the field selector; the
page size and the request log as kubectl shows them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from desched import as_json, desched
from test_safe_eviction import tainted

from kubectl_desched import __version__
from kubectl_desched.kube.config import KubeOptions, connect
from kubectl_desched.kube.live import request_json

pytestmark = pytest.mark.integration


def candidates_on_a_tainted_node(cluster: Any, namespace: str, pods: list[str]) -> list[str]:
    """The CLI arguments that preview these pods; a spare node, as upstream plans nothing with fewer than two."""
    args = tainted(cluster, namespace, pods)
    cluster.create_node(f"{namespace}-spare")
    return [*args, "--dry-run=client"]


def flags_only(cluster: Any, tmp_path: Path, *args: str, token: str | None = None) -> Any:
    """The CLI with KUBECONFIG naming a file that does not exist and HOME empty: the flags are all it has."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return desched(tmp_path / "no-kubeconfig", *args, "-s", cluster.server, "--token",
                   token or cluster.tokens["admin"], HOME=str(home))


def test_server_and_token_without_any_kubeconfig(cluster: Any, namespace: str, tmp_path: Path) -> None:
    args = [*candidates_on_a_tainted_node(cluster, namespace, ["web-0", "web-1"]), "-o", "json"]
    verified = flags_only(cluster, tmp_path, *args, "--certificate-authority", str(cluster.ca_file))
    assert verified.returncode == 0, verified.stderr
    assert sorted(c["pod"] for c in as_json(verified)["candidates"]) == ["web-0", "web-1"]
    unverified = flags_only(cluster, tmp_path, *args, "--insecure-skip-tls-verify")
    assert unverified.returncode == 0, unverified.stderr
    assert as_json(unverified)["candidates"] == as_json(verified)["candidates"]
    # No CA at all: the server's self-signed certificate is refused, in one line.
    untrusted = flags_only(cluster, tmp_path, *args)
    assert untrusted.returncode == 1
    assert untrusted.stderr.startswith(f"error: reading the cluster: TLS error talking to {cluster.server}")
    assert untrusted.stderr.count("\n") == 1


def test_a_wrong_token_is_refused_by_the_server_and_never_echoed(cluster: Any, namespace: str,
                                                                 tmp_path: Path) -> None:
    proc = flags_only(cluster, tmp_path, "deschedule", "-n", namespace, "--certificate-authority",
                      str(cluster.ca_file), token="wrong-token-0123456789")
    assert proc.returncode == 1
    assert proc.stderr == (f"error: reading the cluster: unauthorized (401): the server at {cluster.server} "
                           "rejected your credentials\n")


def test_tls_server_name_is_the_name_the_certificate_is_checked_against(cluster: Any, namespace: str,
                                                                        tmp_path: Path) -> None:
    base = ["deschedule", "-n", namespace, "--certificate-authority", str(cluster.ca_file)]
    right = flags_only(cluster, tmp_path, *base, "--tls-server-name", "kubernetes.default.svc")
    assert right.returncode == 0, right.stderr
    wrong = flags_only(cluster, tmp_path, *base, "--tls-server-name", "not-the-apiserver.example")
    assert wrong.returncode == 1
    assert wrong.stderr.startswith(f"error: reading the cluster: TLS error talking to {cluster.server}")
    assert "not-the-apiserver.example" in wrong.stderr


def test_the_server_sees_every_impersonated_group(cluster: Any) -> None:
    conn = connect(KubeOptions(kubeconfig=str(cluster.kubeconfig_for()), as_user="limited",
                               as_groups=("team-a", "team-b")))
    review = request_json(conn, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                          body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    info = review["status"]["userInfo"]
    assert info["username"] == "limited"
    assert {"team-a", "team-b"} <= set(info["groups"])


def test_the_server_matches_the_field_selector(cluster: Any, namespace: str) -> None:
    args = candidates_on_a_tainted_node(cluster, namespace, ["web-0", "web-1", "api-0"])
    proc = desched(cluster.kubeconfig_for(), *args, "--field-selector", "metadata.name!=web-1", "-o", "name")
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.split()) == ["pod/api-0", "pod/web-0"]
    explained = desched(cluster.kubeconfig_for(), "explain", "node", f"{namespace}-n", "-n", namespace, "--plugin",
                        "RemovePodsViolatingNodeTaints", "--field-selector", "metadata.name!=web-1")
    assert explained.returncode == 0, explained.stderr
    verdicts = {line.split()[1]: line for line in explained.stdout.splitlines() if line.startswith(namespace)}
    assert "fields do not match --field-selector metadata.name!=web-1" in verdicts["web-1"]
    assert "EVICT" in verdicts["web-0"].split()
    refused = desched(cluster.kubeconfig_for(), *args, "--field-selector", "spec.hostname=x")
    assert refused.returncode == 2  # the flag's value: a usage error
    assert refused.stderr.startswith("error: reading the pods that match --field-selector: ")
    assert "spec.hostname" in refused.stderr and refused.stderr.count("\n") == 1


def test_chunk_size_and_the_request_log(cluster: Any, namespace: str) -> None:
    args = candidates_on_a_tainted_node(cluster, namespace, ["web-0", "web-1", "web-2"])
    proc = desched(cluster.kubeconfig_for(), *args, "--chunk-size", "1", "-v", "7", "-o", "name")
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.split()) == ["pod/web-0", "pod/web-1", "pod/web-2"]
    lines = proc.stderr.splitlines()
    pages = [line for line in lines if '"Response" verb="GET"' in line and "fieldSelector=spec.nodeName" in line
             and "/api/v1/pods?" in line]
    # one page per pod, and an empty last one when a field selector keeps the server from knowing it was the end
    assert len(pages) in (3, 4) and all("limit=1" in line and 'status="200 OK"' in line for line in pages)
    assert any('"Request" verb="GET"' in line and 'authorization="Bearer <masked>"' in line for line in lines)
    assert f'User-Agent="kubectl-desched/{__version__}' in proc.stderr
    assert cluster.tokens["admin"] not in proc.stderr
    quiet = desched(cluster.kubeconfig_for(), *args, "-o", "name")
    assert quiet.stderr == "" and quiet.stdout == proc.stdout
