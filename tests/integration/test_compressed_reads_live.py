"""Reads ask for gzip as client-go does, and the real kube-apiserver compresses a LIST page over its 128 KiB
threshold: the page arrives compressed (Content-Encoding seen on the wire) and decodes to every pod."""

from __future__ import annotations

from typing import Any

import pytest
from localcluster import LocalCluster

from kubectl_desched.kube.config import KubeOptions, connect
from kubectl_desched.kube.live import read_cluster

pytestmark = pytest.mark.integration

PODS = 300  # ~1.5 KiB each as JSON: one 500-pod page is well over 128 KiB


def test_a_large_list_page_comes_gzipped_and_reads_whole(cluster: LocalCluster, namespace: str) -> None:
    node = f"{namespace}-n"
    cluster.create_node(node, cpu="64", memory="256Gi", pods=str(PODS + 10))
    names = [f"p{i:03d}" for i in range(PODS)]
    for name in names:
        cluster.create_pod(namespace, name, node, owner_name="rs")
    conn = connect(KubeOptions(kubeconfig=str(cluster.kubeconfig_for())))
    seen: list[tuple[str, str | None, str | None, int]] = []  # (path, asked, Content-Encoding, decoded bytes)
    call_api = conn.api.call_api

    def spy(method: str, url: str, header_params: dict[str, str] | None = None, **kw: Any) -> Any:
        resp = call_api(method, url, header_params=header_params, **kw)
        seen.append((url, (header_params or {}).get("Accept-Encoding"), resp.getheader("Content-Encoding"),
                     len(resp.read())))
        return resp

    conn.api.call_api = spy  # type: ignore[method-assign]
    state = read_cluster(conn, node_names=[node])
    ours = sorted(p.name for p in state.pods if p.namespace == namespace)
    assert ours == names
    assert all(asked == "gzip" for _, asked, _, _ in seen), seen
    pages = [(url, enc, size) for url, _, enc, size in seen if "/pods" in url]
    assert pages and pages[0][1] == "gzip", pages  # the apiserver compressed it and urllib3 decoded it
    assert pages[0][2] > 128 * 1024

