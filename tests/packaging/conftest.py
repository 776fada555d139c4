"""Session fixtures for the packaging tests: the krew archives (built once), krew and kubectl binaries,
and a clean copy of the source tree (so builds never read or write stale files in the checkout)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.gobuilds import built

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_DIR = ROOT / "tests" / "cluster"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(pytest.mark.packaging)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "packaging: builds the krew archives / installs the package (slow, network)")


def run(cmd: list[str | Path], timeout: float, **kwargs: object) -> subprocess.CompletedProcess[str]:
    began = time.monotonic()
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, check=False,
                          **kwargs)  # type: ignore[call-overload]
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed with exit code {proc.returncode} after "
                           f"{time.monotonic() - began:.0f}s:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


def host_platform() -> tuple[str, str]:
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
    return sys.platform, arch or platform.machine()


def commit_time() -> str:
    return run(["git", "-C", ROOT, "log", "-1", "--format=%ct"], timeout=30).stdout.strip()


@pytest.fixture(scope="session")
def source_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkout's tracked and new (not ignored) files, copied elsewhere: no build/, no egg-info, another path."""
    listed = run(["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard"], timeout=60)
    dest = tmp_path_factory.mktemp("source") / "kubectl-desched"
    for rel in filter(None, listed.stdout.split("\0")):
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    return dest


@pytest.fixture(scope="session")
def krew_dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """scripts/build-krew's output (archives + manifest), built once per session from the checkout."""
    out = tmp_path_factory.mktemp("krew-dist")
    run([ROOT / "scripts" / "build-krew", "--out", out], timeout=1800,
        env={**os.environ, "SOURCE_DATE_EPOCH": commit_time()})
    return out


@pytest.fixture(scope="session")
def krew_manifest(krew_dist: Path) -> dict:
    return yaml.safe_load((krew_dist / "desched.yaml").read_text())


@pytest.fixture(scope="session")
def krew_bin() -> Path:
    return built("build-krew", "kubectl-krew")


@pytest.fixture(scope="session")
def kubectl_bin() -> Path:
    return built("build-binaries", "kubectl")
