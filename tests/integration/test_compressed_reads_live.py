"""Reads ask for gzip as client-go does, and the real kube-apiserver compresses a LIST page over its 128 KiB
threshold: the page arrives compressed (Content-Encoding seen on the wire) and decodes to every pod. With
--disable-compression, or the cluster entry's disable-compression, nothing asks for it and nothing comes compressed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from localcluster import LocalCluster

from kubectl_desched.kube.config import Connection, KubeOptions, connect
from kubectl_desched.kube.live import read_cluster
from kubectl_desched.kube.overrides import ConnectionFlags

pytestmark = pytest.mark.integration

PODS = 300  # ~1.5 KiB each as JSON: one 500-pod page is well over 128 KiB


Seen = list[list[Any]]  # (path, asked, Content-Encoding, decoded bytes)


def _pods(cluster: LocalCluster, namespace: str) -> tuple[str, list[str]]:
    node = f"{namespace}-n"
    cluster.create_node(node, cpu="64", memory="256Gi", pods=str(PODS + 10))
    names = [f"p{i:03d}" for i in range(PODS)]
    for name in names:
        cluster.create_pod(namespace, name, node, owner_name="rs")
    return node, names


def _read(conn: Connection, node: str, namespace: str) -> tuple[list[str], Seen]:
    """The pods read, and what each request asked for and got."""
    seen: Seen = []
    call_api = conn.api.call_api

    def spy(method: str, url: str, header_params: dict[str, str] | None = None, **kw: Any) -> Any:
        resp = call_api(method, url, header_params=header_params, **kw)
        entry = [url, (header_params or {}).get("Accept-Encoding"), resp.getheader("Content-Encoding"), 0]
        seen.append(entry)
        read = resp.response.read  # counted as the reader reads it: its first bytes, then the rest

        def counted(*a: Any, **k: Any) -> bytes:
            data = read(*a, **k)
            entry[3] += len(data)
            return data

        resp.response.read = counted
        return resp

    conn.api.call_api = spy  # type: ignore[method-assign]
    state = read_cluster(conn, node_names=[node])
    return sorted(p.name for p in state.pods if p.namespace == namespace), seen


def test_a_large_list_page_comes_gzipped_and_reads_whole(cluster: LocalCluster, namespace: str) -> None:
    node, names = _pods(cluster, namespace)
    ours, seen = _read(connect(KubeOptions(kubeconfig=str(cluster.kubeconfig_for()))), node, namespace)
    assert ours == names
    assert all(asked == "gzip" for _, asked, _, _ in seen), seen
    pages = [(url, enc, size) for url, _, enc, size in seen if "/pods" in url]
    assert pages and pages[0][1] == "gzip", pages  # the apiserver compressed it and urllib3 decoded it
    assert pages[0][2] > 128 * 1024


def test_disabled_compression_reads_the_same_pods_uncompressed(cluster: LocalCluster, namespace: str,
                                                                tmp_path: Path) -> None:
    node, names = _pods(cluster, namespace)
    by_flag = connect(KubeOptions(kubeconfig=str(cluster.kubeconfig_for()),
                                  flags=ConnectionFlags(disable_compression=True)))
    config = yaml.safe_load(cluster.kubeconfig_for().read_text())
    for entry in config["clusters"]:
        entry["cluster"]["disable-compression"] = True
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    by_kubeconfig = connect(KubeOptions(kubeconfig=str(kubeconfig)))
    for conn in (by_flag, by_kubeconfig):
        ours, seen = _read(conn, node, namespace)
        assert ours == names
        assert all(asked is None and got is None for _, asked, got, _ in seen), seen
        pages = [size for url, _, _, size in seen if "/pods" in url]
        assert pages and pages[0] > 128 * 1024  # large enough that the server would have compressed it
