"""The Koordinator oracle cases without a cluster: each case's objects, as the API server would return them, go to
our CLI as a snapshot (--from-file) with the case's DeschedulerConfiguration; the candidates must be the pods
koord-descheduler picks (proven by tests/integration/test_oracle_koord.py), or the case's recorded difference. The
log reader of tests/oracle/koord.py is tested here too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubectl_desched.cli.main import cli
from tests.oracle.cases import KOORD_CASES_DIR, Case, as_snapshot, koord_cases
from tests.oracle.koord import config_for, parse_log

CASES = koord_cases()


def _run(case: Case, tmp_path: Path, *args: str) -> dict:
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(yaml.safe_dump(as_snapshot(case)))
    result = CliRunner().invoke(cli, [*args, "--keep-futile", "--no-respect-pdbs", "--policy", str(case.policy),
                                      "--from-file", str(snapshot), "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_our_candidates_are_koordinators(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))  # a snapshot needs no cluster
    doc = _run(case, tmp_path, "run")
    assert not doc["errors"]
    ours = {f"{c['namespace']}/{c['pod']}" for c in doc["candidates"]}
    assert case.mismatch(ours, case.ours) is None, case.difference or case.why


def test_every_case_directory_is_complete() -> None:
    dirs = sorted(p.name for p in KOORD_CASES_DIR.iterdir() if p.is_dir())
    assert dirs == [c.name for c in CASES]
    for case in CASES:
        assert case.why, f"{case.name}: expected.yaml must say which Koordinator behaviour it pins (why)"
        doc = yaml.safe_load(case.policy.read_text())
        assert doc["kind"] == "DeschedulerConfiguration", case.name


def test_cases_cover_both_outcomes_and_the_migration_controller_checks() -> None:
    assert any(c.expected for c in CASES) and any(not c.expected for c in CASES)
    kinds = {o["kind"] for c in CASES for o in c.objects}
    assert {"PodMigrationJob", "ReplicaSet", "Deployment", "NodeMetric"} <= kinds


def test_explain_names_the_check_that_keeps_a_pod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    case = next(c for c in CASES if c.name == "mc-existing-job")
    doc = _run(case, tmp_path, "explain", "pod", "-n", "koord-job", "hot-1")
    assert "PodMigrationJob" in json.dumps(doc) and "already exists for the pod" in json.dumps(doc)


LOG = """\
I1123 21:52:27.439829   16907 server.go:146] "Starting Koordinator Descheduler" version="v1.8.0"
I1123 21:52:28.546671   16907 low_node_load.go:447] "Criteria for nodes under low thresholds and above high thresholds" nodePool="__default_node_pool__" nodesUnderLowThresholds=0
I1123 21:52:28.650905   16907 utilization_util.go:523] "Evict pod in dry run mode" pod="t/p0" node="n1" nodePool="__default_node_pool__"
E1123 21:52:28.700000   16907 utilization_util.go:170] "NodeMetric has expired" err=null node="n3" effective period="3m0s"
I1123 21:52:30.546771   16907 low_node_load.go:447] "Criteria for nodes under low thresholds and above high thresholds" nodePool="a"
I1123 21:52:30.546800   16907 low_node_load.go:163] "No nodes to process LowNodeLoad" nodePool="b"
I1123 21:52:30.547663   16907 utilization_util.go:523] "Evict pod in dry run mode" pod="t/p5" node="n1" nodePool="a"
I1123 21:52:30.547768   16907 utilization_util.go:523] "Evict pod in dry run mode" pod="t/p0" node="n1" nodePool="a"
E1123 21:52:31.000000   16907 descheduler.go:250] "Error descheduling pods: boom"
I1123 21:52:32.547119   16907 low_node_load.go:447] "Criteria for nodes under low thresholds and above high thresholds" nodePool="a"
"""  # noqa: E501


def test_the_koord_log_is_read_per_cycle() -> None:
    cycles, errors = parse_log(LOG)
    assert [c.evicted for c in cycles] == [{"t/p0"}, {"t/p5", "t/p0"}, set()]
    assert len(errors) == 1 and "boom" in errors[0]  # an expired NodeMetric is part of a scenario


def test_the_configuration_runs_koord_descheduler_in_its_own_dry_run(tmp_path: Path) -> None:
    case = CASES[0]
    doc = config_for(case.policy, tmp_path / "kubeconfig")
    assert doc["leaderElection"] == {"leaderElect": False}
    assert doc["clientConnection"] == {"kubeconfig": str(tmp_path / "kubeconfig")}
    assert doc["deschedulingInterval"] == "2s"
    args = [c["args"] for p in doc["profiles"] for c in p["pluginConfig"] if c["name"] == "LowNodeLoad"]
    assert args and all(a["dryRun"] is True for a in args)
