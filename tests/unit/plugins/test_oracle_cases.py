"""The oracle cases without a cluster: each case's objects, as the API server would return them, go to our CLI as
a snapshot (--from-file) with the case's policy, and the candidates must be the ones upstream evicts (proven by
tests/integration/test_oracle_upstream.py), or the case's recorded deliberate difference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubectl_desched.cli.main import cli
from tests.oracle.cases import CASES_DIR, Case, all_cases, as_snapshot
from tests.oracle.upstream import parse_cycles

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_our_candidates_are_upstreams(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))  # a snapshot needs no cluster
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(yaml.safe_dump(as_snapshot(case)))
    # Upstream's dry run ignores PodDisruptionBudgets and plans futile moves: --keep-futile --no-respect-pdbs.
    result = CliRunner().invoke(cli, ["run", "--keep-futile", "--no-respect-pdbs", "--policy", str(case.policy),
                                      "--from-file", str(snapshot), "-o", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert not doc["errors"]
    ours = {f"{c['namespace']}/{c['pod']}" for c in doc["candidates"]}
    assert case.mismatch(ours, case.ours) is None, case.difference or case.why


def test_every_case_directory_is_complete() -> None:
    dirs = sorted(p.name for p in CASES_DIR.iterdir() if p.is_dir())
    assert dirs == [c.name for c in CASES]
    for case in CASES:
        assert case.why, f"{case.name}: expected.yaml must say which upstream behaviour it pins (why)"
        assert case.policy.exists(), case.name


def test_cases_cover_both_outcomes() -> None:
    """A suite where nothing, or everything, is evicted would prove little."""
    assert any(c.expected for c in CASES) and any(not c.expected for c in CASES)


LOG = "\n".join(json.dumps(e) for e in [
    {"msg": "Building a cached client from the cluster for the dry run", "v": 3},
    {"msg": "Resetting pod evictor counters", "v": 3},
    {"msg": "Skipping descheduling cycle: requires >=2 nodes", "v": 0, "found": 0},
    {"msg": "Number of evictions/requests", "v": 1, "totalEvicted": 0},
    {"msg": "Resetting pod evictor counters", "v": 3},
    {"msg": "Evicted pod in dry run mode", "v": 1, "pod": {"name": "p1", "namespace": "a"}, "strategy": "X"},
    {"msg": "Error evicting pod", "err": "maximum number of evicted pods per node reached", "limit": 1},
    {"msg": "eviction failed", "err": "maximum number of evicted pods per node reached", "plugin": "X"},
    {"msg": "Evicted pod in dry run mode", "v": 1, "pod": {"name": "p2", "namespace": "b"}, "strategy": "X"},
    {"msg": "Number of evictions/requests", "v": 1, "totalEvicted": 2},
    {"msg": "Resetting pod evictor counters", "v": 3},
    {"msg": "running balance extension point failed with error", "err": "boom", "profile": "p"},
]) + "\nnot json\n"


def test_upstream_log_is_read_per_cycle() -> None:
    first, second, third = parse_cycles(LOG)
    assert first.skipped and first.done and not first.evicted
    assert second.evicted == {"a/p1", "b/p2"} and second.done and not second.errors and not second.skipped
    assert not third.done and len(third.errors) == 1 and "boom" in third.errors[0]


def test_choose_groups_compare_only_the_count() -> None:
    case = next(c for c in CASES if c.choose)
    (count, group), = case.choose
    some = set(sorted(group)[:count])
    assert case.mismatch(case.expected | some) is None
    assert "instead of" in (case.mismatch(case.expected | group) or "")
    assert "instead of" in (case.mismatch(set(case.expected)) or "")
    assert "unexpected ['x/y']" in (case.mismatch(case.expected | some | {"x/y"}) or "")
