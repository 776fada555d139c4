"""A real krew (v0.4.4, built from its Go module) installs the archives scripts/build-krew made, as a user would with
`kubectl krew install --manifest=dist/krew/desched.yaml --archive=...`, and the installed plugin runs, directly and
as `kubectl desched` through PATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kubectl_desched import __version__
from tests.packaging.conftest import ROOT, host_platform

DEMO = ROOT / "examples" / "demo-cluster.yaml"
BALANCE = ["balance", "--from-file", str(DEMO), "-A", "-o", "json"]


def archive_for(manifest: dict, dist: Path, os_name: str, arch: str) -> Path:
    for platform in manifest["spec"]["platforms"]:
        if platform["selector"]["matchLabels"] == {"os": os_name, "arch": arch}:
            return dist / platform["uri"].rsplit("/", 1)[1]
    raise AssertionError(f"no {os_name}/{arch} platform in the manifest")


def krew_env(root: Path, krew_bin: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "PYTHONPATH")}
    env.update(KREW_ROOT=str(root), KREW_NO_UPGRADE_CHECK="1", SHIV_ROOT=str(root.parent / "shiv"),
               PATH=os.pathsep.join([str(root / "bin"), str(krew_bin.parent), os.environ["PATH"]]))
    env.update(extra)
    return env


def krew(krew_bin: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([krew_bin, *args], capture_output=True, text=True, timeout=300, env=env, check=False)


@pytest.fixture(scope="module")
def installed(krew_dist: Path, krew_manifest: dict, krew_bin: Path,
              tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The host platform's archive installed by krew into a fresh KREW_ROOT; returns the environment to run in."""
    os_name, arch = host_platform()
    if (os_name, arch) not in {("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"), ("darwin", "arm64")}:
        pytest.skip(f"no archive for {os_name}/{arch}")
    root = tmp_path_factory.mktemp("krew") / "root"
    env = krew_env(root, krew_bin)
    archive = archive_for(krew_manifest, krew_dist, os_name, arch)
    proc = krew(krew_bin, env, "install", f"--manifest={krew_dist / 'desched.yaml'}", f"--archive={archive}")
    assert proc.returncode == 0, proc.stderr
    assert "python3" in proc.stderr + proc.stdout  # krew shows the caveats after installing
    return env


def test_krew_records_and_links_the_plugin(installed: dict[str, str]) -> None:
    root = Path(installed["KREW_ROOT"])
    store = root / "store" / "desched" / f"v{__version__}"
    assert sorted(p.name for p in store.iterdir()) == ["LICENSE", "kubectl-desched", "kubectl_complete-desched"]
    assert (store / "kubectl-desched").stat().st_mode & 0o777 == 0o755
    assert (store / "kubectl_complete-desched").stat().st_mode & 0o777 == 0o755
    link = root / "bin" / "kubectl-desched"
    assert link.is_symlink() and link.resolve() == (store / "kubectl-desched").resolve()
    receipt = yaml.safe_load((root / "receipts" / "desched.yaml").read_text())
    assert receipt["spec"]["version"] == f"v{__version__}"
    # Installed from a manifest, not an index: install needs no index (nor git); `krew list` would want one.
    assert receipt["status"]["source"]["name"] == "detached"


def test_installed_plugin_runs_version(installed: dict[str, str]) -> None:
    proc = subprocess.run(["kubectl-desched", "version"], capture_output=True, text=True, timeout=300,
                          env=installed, check=False)  # found on PATH in $KREW_ROOT/bin, as krew tells users
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"kubectl-desched v{__version__} (python 3.")


def test_installed_plugin_balances_a_snapshot_like_the_source_tree(installed: dict[str, str]) -> None:
    proc = subprocess.run(["kubectl-desched", *BALANCE], capture_output=True, text=True, timeout=300,
                          env=installed, check=False)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["version"] == __version__ and plan["candidates"]
    from_source = subprocess.run([sys.executable, "-m", "kubectl_desched", *BALANCE], capture_output=True,
                                 text=True, timeout=300, cwd=ROOT, check=True,
                                 env={**os.environ, "PYTHONPATH": str(ROOT)})
    source_plan = json.loads(from_source.stdout)
    for doc in (plan, source_plan):  # when each was made: the one field two runs cannot share
        doc["identity"].pop("madeAt")
    assert plan == source_plan


def test_kubectl_finds_the_installed_plugin(installed: dict[str, str], kubectl_bin: Path) -> None:
    proc = subprocess.run([kubectl_bin, "desched", "version"], capture_output=True, text=True, timeout=300,
                          env=installed, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"kubectl-desched v{__version__} ")
    listed = subprocess.run([kubectl_bin, "plugin", "list"], capture_output=True, text=True, timeout=60,
                            env=installed, check=False)
    assert str(Path(installed["KREW_ROOT"]) / "bin" / "kubectl-desched") in listed.stdout, listed.stderr


def test_the_completion_script_copied_as_the_readme_says_completes_through_kubectl(
        installed: dict[str, str], kubectl_bin: Path) -> None:
    root = Path(installed["KREW_ROOT"])
    # The README's one-time step after a krew install: krew links only the plugin's main executable.
    subprocess.run(f"cp {root}/store/desched/*/kubectl_complete-desched {root}/bin/", shell=True, check=True)
    proc = subprocess.run([kubectl_bin, "__complete", "desched", "bal"], capture_output=True, text=True,
                          timeout=300, env=installed, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].split("\t")[0] == "balance" and proc.stdout.splitlines()[-1] == ":4"
    flags = subprocess.run([kubectl_bin, "__complete", "desched", "balance", "--no-p"], capture_output=True,
                           text=True, timeout=300, env=installed, check=False)
    assert [line.split("\t")[0] for line in flags.stdout.splitlines()] == ["--no-pager", ":4"]


@pytest.mark.parametrize(("os_name", "arch"), [("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"),
                                               ("darwin", "arm64")])
def test_krew_installs_every_platform(os_name: str, arch: str, krew_dist: Path, krew_manifest: dict,
                                      krew_bin: Path, tmp_path: Path) -> None:
    """What validate-krew-manifest does for each platform (KREW_OS/KREW_ARCH pick it), with the local archives.
    PATH holds nothing but krew: installing from a manifest needs no git and no plugin index."""
    env = krew_env(tmp_path / "root", krew_bin, KREW_OS=os_name, KREW_ARCH=arch,
                   PATH=os.pathsep.join([str(tmp_path / "root" / "bin"), str(krew_bin.parent)]))
    archive = archive_for(krew_manifest, krew_dist, os_name, arch)
    proc = krew(krew_bin, env, "install", f"--manifest={krew_dist / 'desched.yaml'}", f"--archive={archive}")
    assert proc.returncode == 0, proc.stderr
    store = tmp_path / "root" / "store" / "desched" / f"v{__version__}"
    assert (store / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
    assert (store / "kubectl-desched").read_bytes().startswith(b"#!/usr/bin/env python3\n")
    assert not (tmp_path / "root" / "index" / "default").exists()


def test_krew_refuses_another_platforms_archive(krew_dist: Path, krew_manifest: dict, krew_bin: Path,
                                                tmp_path: Path) -> None:
    """The digests are per archive and krew checks them even for a local --archive."""
    env = krew_env(tmp_path / "root", krew_bin, KREW_OS="linux", KREW_ARCH="amd64")
    wrong = archive_for(krew_manifest, krew_dist, "darwin", "arm64")
    proc = krew(krew_bin, env, "install", f"--manifest={krew_dist / 'desched.yaml'}", f"--archive={wrong}")
    assert proc.returncode != 0
    assert "checksum does not match" in proc.stderr
    assert not (tmp_path / "root" / "receipts" / "desched.yaml").exists()
