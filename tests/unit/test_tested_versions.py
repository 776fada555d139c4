"""The versions the compatibility page says are tested are the ones the test builds use (tests/cluster/build-*)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "compatibility" / "index.md"


def _default(script: str, variable: str) -> str:
    text = (ROOT / "tests" / "cluster" / script).read_text()
    m = re.search(rf"^{variable}=\$\{{{variable}:-(v[\d.]+)\}}", text, flags=re.M)
    assert m, f"{script} sets no default {variable}"
    return m.group(1)


@pytest.mark.parametrize(("script", "variable", "said"), [
    ("build-binaries", "K8S_VERSION", "Tested on {} only"),
    ("build-binaries", "ETCD_VERSION", "etcd {}"),
    ("build-descheduler", "DESCHEDULER_VERSION", "plans as {}"),
    ("build-koord-descheduler", "KOORD_VERSION", "koord-descheduler {}"),
    ("build-metrics-server", "METRICS_SERVER_VERSION", "metrics-server {}"),
    ("build-krew", "KREW_VERSION", "krew {}"),
    ("build-prometheus", "PROMETHEUS_VERSION", "Prometheus {}"),
])
def test_the_compatibility_page_names_the_tested_versions(script: str, variable: str, said: str) -> None:
    assert said.format(_default(script, variable)) in PAGE.read_text()


def test_the_simulated_cluster_runs_the_tested_kubernetes() -> None:
    assert _default("build-sim", "K8S_VERSION") == _default("build-binaries", "K8S_VERSION")
