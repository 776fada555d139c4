"""The oracle: every case under tests/oracle/cases is created in a real kube-apiserver, then the upstream
descheduler (built from sigs.k8s.io/descheduler) and our `run --policy --dry-run=client` both plan on it.
Upstream's evictions must equal the fixture's expected.yaml, and ours must equal upstream's (or, where a case
records a deliberate difference that docs/compatibility/upstream.md lists, the fixture's `ours`)."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from desched import as_json, desched

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.oracle.cases import Case, all_cases
from tests.oracle.upstream import create_objects, delete_objects, run_upstream

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("case", all_cases(), ids=lambda c: c.name)
def test_upstream_and_ours_agree(oracle_cluster: Any, upstream_descheduler: Path, case: Case) -> None:
    kubeconfig = oracle_cluster.kubeconfig_for()
    made = create_objects(oracle_cluster, case)
    try:
        # Both only read the cluster (dry runs), so they run side by side.
        with ThreadPoolExecutor(max_workers=1) as pool:
            theirs = pool.submit(run_upstream, upstream_descheduler, kubeconfig, case.policy)
            proc = desched(kubeconfig, "run", "--keep-futile", "--no-respect-pdbs", "--policy", str(case.policy),
                           "--dry-run=client", "-o", "json")
            upstream = theirs.result()
        assert proc.returncode == 0, proc.stderr
        ours = {f"{c['namespace']}/{c['pod']}" for c in as_json(proc)["candidates"]}
    finally:
        delete_objects(oracle_cluster, made)
    assert case.mismatch(upstream.evicted) is None, f"upstream disagrees with expected.yaml: {sorted(upstream.evicted)}"
    assert case.mismatch(ours, case.ours) is None, (
        f"ours disagrees with upstream: {sorted(ours)}" if case.ours == case.expected
        else f"deliberate difference ({case.difference}): {sorted(ours)}")
