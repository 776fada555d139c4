"""What is inside the krew archives: one zipapp per platform with the compiled modules of that platform for every
supported CPython, nothing machine-specific, and a preamble that turns an unsupported python3 into one error line."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

PYTHONS = ("311", "312", "313", "314")
SUFFIX = {("linux", "amd64"): "x86_64-linux-gnu.so", ("linux", "arm64"): "aarch64-linux-gnu.so",
          ("darwin", "amd64"): "darwin.so", ("darwin", "arm64"): "darwin.so"}


def zipapp(archive: Path) -> zipfile.ZipFile:
    with tarfile.open(archive, "r:gz") as tar:
        data = tar.extractfile("kubectl-desched").read()  # type: ignore[union-attr]
    assert data.startswith(b"#!/usr/bin/env python3\n")
    return zipfile.ZipFile(io.BytesIO(data))


@pytest.mark.parametrize(("os_name", "arch"), list(SUFFIX))
def test_each_archive_carries_its_platforms_extension_modules(os_name: str, arch: str, krew_dist: Path) -> None:
    app = zipapp(next(krew_dist.glob(f"*_{os_name}_{arch}.tar.gz")))
    names = app.namelist()
    so = sorted(n for n in names if n.endswith(".so"))
    per_version = [f"site-packages/{module}.cpython-{py}-{SUFFIX[os_name, arch]}" for py in PYTHONS
                   for module in ("msgspec/_core", "pydantic_core/_pydantic_core", "yaml/_yaml")]
    assert so == sorted([*per_version, "site-packages/google/_upb/_message.abi3.so"])  # protobuf's: stable ABI
    # Pure-Python wheels for the rest (their optional accelerators are not needed), our package, shiv's runtime.
    assert "site-packages/kubectl_desched/cli/main.py" in names and "__main__.py" in names
    assert "site-packages/aiohttp/__init__.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert [n for n in names if n.startswith("site-packages/bin/")] == ["site-packages/bin/check_python.py"]
    assert {(i.date_time, i.external_attr >> 16) for i in app.infolist()} == {(app.infolist()[0].date_time,
                                                                                 0o100644)}


def test_preamble_refuses_an_unsupported_python_in_one_line(krew_dist: Path, tmp_path: Path) -> None:
    preamble = tmp_path / "check_python.py"
    app = zipapp(next(krew_dist.glob("*_linux_amd64.tar.gz")))
    preamble.write_bytes(app.read("site-packages/bin/check_python.py"))
    fake = "import runpy, sys; sys.version_info = (3, {minor}, 0, 'final', 0); runpy.run_path(sys.argv[1])"
    ok = subprocess.run([sys.executable, "-c", fake.format(minor=11), preamble], capture_output=True, text=True,
                        timeout=60, check=False)
    assert (ok.returncode, ok.stderr) == (0, "")
    refused = subprocess.run([sys.executable, "-c", fake.format(minor=15), preamble], capture_output=True,
                             text=True, timeout=60, check=False)
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: this kubectl-desched build needs CPython 3.11, 3.12, 3.13, 3.14; "
                                     "python3 on PATH is cpython 3.15")
    assert refused.stderr.count("\n") == 1
