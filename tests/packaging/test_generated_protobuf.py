"""kubectl_desched/kube/k8spb/ is what scripts/gen-protobuf makes: protoc (grpcio-tools from PyPI) over k8s.io/api's
and k8s.io/apimachinery's generated.proto at the tested Kubernetes version (from the Go module proxy). A change of
the version, the script or a hand edit of the committed modules fails here."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "kubectl_desched" / "kube" / "k8spb"


def test_the_committed_message_classes_are_what_the_script_makes(tmp_path: Path) -> None:
    if shutil.which("go") is None:
        pytest.skip("scripts/gen-protobuf needs Go, to fetch k8s.io/api from the Go module proxy")
    out = tmp_path / "k8spb"
    proc = subprocess.run([str(ROOT / "scripts" / "gen-protobuf"), "--out", str(out)], capture_output=True,
                          text=True, timeout=900, check=False)
    why = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    if proc.returncode == 3:  # what it needs could not be had here (the module proxy, PyPI)
        pytest.skip(f"scripts/gen-protobuf could not run here: {why}")
    assert proc.returncode == 0, proc.stderr
    made = sorted(p.name for p in out.iterdir())
    assert made == sorted(p.name for p in COMMITTED.iterdir() if p.suffix == ".py")
    for name in made:
        assert (out / name).read_bytes() == (COMMITTED / name).read_bytes(), f"{name} differs: run scripts/gen-protobuf"
