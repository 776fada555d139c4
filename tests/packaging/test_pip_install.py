"""`pip install .` into a clean virtualenv gives a working kubectl-desched (the pip/pipx route of the README)."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

from kubectl_desched import __version__
from tests.packaging.conftest import ROOT, run


def test_pip_install_into_a_clean_venv(source_copy: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", source_copy], timeout=1200,
        cwd=tmp_path)
    location = run([python, "-c", "import kubectl_desched; print(kubectl_desched.__file__)"], timeout=60,
                   cwd=tmp_path).stdout
    assert location.startswith(str(env_dir))  # installed, not picked up from a source tree

    version = run([env_dir / "bin" / "kubectl-desched", "version"], timeout=120, cwd=tmp_path)
    assert version.stdout.startswith(f"kubectl-desched v{__version__} (python {sys.version_info[0]}.")
    balance = run([env_dir / "bin" / "kubectl-desched", "balance", "--from-file", ROOT / "examples" /
                   "demo-cluster.yaml", "-A", "-o", "json"], timeout=120, cwd=tmp_path)
    assert json.loads(balance.stdout)["candidates"]
    assert subprocess.run([env_dir / "bin" / "kubectl-desched", "balance", "--bogus"], capture_output=True,
                          timeout=120, check=False).returncode == 2
