"""`version`, `--help` and a command's `--help` start without the kubernetes client (about 0.5 s of a 1 s start) or
urllib3: both are imported where a request is made. bench/startup.py reports the times."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("args", [["version"], ["--help"], ["balance", "--help"], ["deschedule", "--help"]])
def test_no_kubernetes_client_at_start(args: list[str]) -> None:
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "kubectl_desched", *args],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}
    assert "kubectl_desched.cli" in imported  # the importtime output was read
    assert not {m for m in imported if m.split(".")[0] in ("kubernetes", "urllib3")}


def test_a_request_path_still_finds_the_client_errors() -> None:
    from kubernetes.client.exceptions import ApiException

    from kubectl_desched.kube.apierrors import api_exception, is_api_exception
    assert api_exception() is ApiException
    assert is_api_exception(ApiException(status=404)) and not is_api_exception(OSError())
