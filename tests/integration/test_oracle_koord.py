"""The Koordinator oracle: every case under tests/oracle/koord-cases is created in a real kube-apiserver (with
Koordinator's CRDs from its module), then the real koord-descheduler v1.8.0 (LowNodeLoad in its dry run) and our
`run --policy --dry-run=client` both plan on it. Each of koord-descheduler's compared cycles must equal the fixture's
expected.yaml (where pods tie, a choose group fixes only how many of them), and ours must too (or the fixture's
`ours`, where a case records a deliberate difference that docs/compatibility/koordinator.md lists)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from desched import as_json, desched

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.oracle.cases import Case, koord_cases
from tests.oracle.koord import run_koord
from tests.oracle.upstream import create_objects, delete_objects

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("case", koord_cases(), ids=lambda c: c.name)
def test_koordinator_and_ours_agree(koord_cluster: Any, koord_descheduler: Path, case: Case, tmp_path: Path) -> None:
    kubeconfig = koord_cluster.kubeconfig_for()
    made = create_objects(koord_cluster, case)
    try:
        proc = desched(kubeconfig, "run", "--keep-futile", "--no-respect-pdbs", "--policy", str(case.policy),
                           "--dry-run=client", "-o", "json")
        theirs = run_koord(koord_descheduler, kubeconfig, case.policy, tmp_path,
                           cycles=6 if case.choose else 3)
    finally:
        delete_objects(koord_cluster, made)
    assert proc.returncode == 0, proc.stderr
    ours = {f"{c['namespace']}/{c['pod']}" for c in as_json(proc)["candidates"]}
    for i, cycle in enumerate(theirs.cycles):
        assert case.mismatch(cycle) is None, (
            f"koord-descheduler's cycle {i + 2} disagrees with expected.yaml: {sorted(cycle)} "
            f"(all cycles: {[sorted(c) for c in theirs.cycles]})")
    assert case.mismatch(ours, case.ours) is None, (
        f"ours disagrees with koord-descheduler: {sorted(ours)}; it chose {[sorted(c) for c in theirs.outcomes]}"
        if case.ours == case.expected else f"deliberate difference ({case.difference}): {sorted(ours)}")
    if case.choose and case.ours == case.expected:
        print(f"{case.name}: koord-descheduler chose {len(theirs.outcomes)} different sets in "
              f"{len(theirs.cycles)} cycles; ours was {'among them' if ours in theirs.outcomes else 'another'}")
