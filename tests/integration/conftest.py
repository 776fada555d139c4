"""Fixtures that run a real kube-apiserver + etcd on 127.0.0.1 (see tests/cluster/localcluster.py), and a cluster
that also has the real scheduler, controllers and kwok's simulated kubelets (tests/cluster/simcluster.py)."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

CLUSTER_DIR = Path(__file__).resolve().parents[1] / "cluster"
sys.path.insert(0, str(CLUSTER_DIR))

from localcluster import LocalCluster  # noqa: E402
from simcluster import SimCluster  # noqa: E402

from tests.gobuilds import built  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: needs a local kube-apiserver + etcd (built with Go)")


def build_binaries() -> Path:
    """kube-apiserver, kubectl and etcd (built or cached); skips the caller when they cannot be had."""
    return built("build-binaries", "kube-apiserver").parent


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    bin_dir = build_binaries()
    local = LocalCluster(bin_dir, tmp_path_factory.mktemp("cluster"))
    with local:
        yield local


@pytest.fixture
def namespace(cluster: LocalCluster) -> str:
    name = f"t-{uuid.uuid4().hex[:10]}"
    cluster.create_namespace(name)
    return name


def build_descheduler() -> Path:
    """The upstream descheduler (built or cached); skips the caller when it cannot be had."""
    return built("build-descheduler", "descheduler")


@pytest.fixture(scope="session")
def upstream_descheduler() -> Path:
    return build_descheduler()


@pytest.fixture(scope="session")
def oracle_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A control plane of its own for the oracle cases: the upstream descheduler sees every node of the cluster,
    so the nodes other tests leave behind must not be there."""
    bin_dir = build_binaries()
    local = LocalCluster(bin_dir, tmp_path_factory.mktemp("oracle-cluster"))
    with local:
        yield local


@pytest.fixture(scope="session")
def koord_descheduler() -> Path:
    """koord-descheduler (built or cached); skips the caller when it cannot be had."""
    return built("build-koord-descheduler", "koord-descheduler")


@pytest.fixture(scope="session")
def koord_cluster(tmp_path_factory: pytest.TempPathFactory, koord_descheduler: Path) -> Iterator[LocalCluster]:
    """A control plane of its own where the real koord-descheduler runs, with Koordinator's CRDs from its module:
    it sees every node and every PodMigrationJob of the cluster, so no other test's objects may be there."""
    from koordinator import install_koordinator

    from tests.oracle.koord import crd_files

    files, why = crd_files()
    if files is None:
        pytest.skip(why)
    local = LocalCluster(build_binaries(), tmp_path_factory.mktemp("koord-cluster"))
    with local:
        install_koordinator(local)
        yield local


def build_sim() -> Path:
    """kube-scheduler, kube-controller-manager and kwok (built or cached); skips the caller when they cannot be had."""
    return built("build-sim", "kwok").parent


@pytest.fixture(scope="session")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimCluster]:
    """One simulated cluster for the session: every test adds its own labelled nodes and pins its workloads there
    with a nodeSelector, and scopes the CLI with --node-selector, so tests do not see each other's pods."""
    bin_dir, sim_dir = build_binaries(), build_sim()
    local = SimCluster(bin_dir, sim_dir, tmp_path_factory.mktemp("sim"))
    with local:
        yield local


@pytest.fixture
def sim_namespace(sim: SimCluster) -> str:
    name = f"s-{uuid.uuid4().hex[:10]}"
    sim.create_namespace(name)
    return name
