"""Fixtures that run a real kube-apiserver + etcd on 127.0.0.1 (see tests/cluster/localcluster.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

CLUSTER_DIR = Path(__file__).resolve().parents[1] / "cluster"
sys.path.insert(0, str(CLUSTER_DIR))

from localcluster import LocalCluster  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: needs a local kube-apiserver + etcd (built with Go)")


def build_binaries() -> Path:
    """Build (or reuse from the cache) kube-apiserver, kubectl and etcd; return their directory."""
    if shutil.which("go") is None:
        pytest.skip("integration tests need the Go toolchain to build kube-apiserver/etcd: `go` is not on PATH")
    began = time.monotonic()
    proc = subprocess.run(
        [str(CLUSTER_DIR / "build-binaries")], capture_output=True, text=True, timeout=3600, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"tests/cluster/build-binaries failed with exit code {proc.returncode} "
            f"after {time.monotonic() - began:.0f}s:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    return Path(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    bin_dir = build_binaries()
    local = LocalCluster(bin_dir, tmp_path_factory.mktemp("cluster"))
    try:
        local.start()
        yield local
    finally:
        local.stop()


@pytest.fixture
def namespace(cluster: LocalCluster) -> str:
    name = f"t-{uuid.uuid4().hex[:10]}"
    cluster.create_namespace(name)
    return name


def build_descheduler() -> Path:
    """Build (or reuse from the cache) the upstream descheduler; return the binary."""
    if shutil.which("go") is None:
        pytest.skip("the oracle tests need the Go toolchain to build the upstream descheduler: `go` is not on PATH")
    proc = subprocess.run(
        [str(CLUSTER_DIR / "build-descheduler")], capture_output=True, text=True, timeout=3600, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"tests/cluster/build-descheduler failed with exit code {proc.returncode}:\n"
                           f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return Path(proc.stdout.strip().splitlines()[-1]) / "descheduler"


@pytest.fixture(scope="session")
def upstream_descheduler() -> Path:
    return build_descheduler()


@pytest.fixture(scope="session")
def oracle_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A control plane of its own for the oracle cases: the upstream descheduler sees every node of the cluster,
    so the nodes other tests leave behind must not be there."""
    bin_dir = build_binaries()
    local = LocalCluster(bin_dir, tmp_path_factory.mktemp("oracle-cluster"))
    try:
        local.start()
        yield local
    finally:
        local.stop()
