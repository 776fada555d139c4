"""The published JSON Schema of the plan document (kubectl_desched/schemas/plan-v1.schema.json) holds for every
form the document is printed in: balance, deschedule and run, -o json and -o yaml, from a snapshot and live, after
evictions and landings, and apply's."""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests import builders as b
from tests.unit.app.test_apply import TAINTS, World, make_plan, run_cli, world  # noqa: F401  (a fixture)

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SNAPSHOT = str(EXAMPLES / "demo-cluster.yaml")


def schema() -> dict[str, Any]:
    return json.loads((resources.files("kubectl_desched") / "schemas" / "plan-v1.schema.json").read_text())


def check(doc: Any) -> None:
    jsonschema.validate(doc, schema(), cls=jsonschema.Draft202012Validator)


def parse(fmt: str, out: str) -> Any:
    return json.loads(out) if fmt == "json" else yaml.safe_load(out)


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(schema())


@pytest.mark.parametrize("fmt", ["json", "yaml"])
@pytest.mark.parametrize("command", [
    ["balance", "-A"],
    ["balance", "-A", "--plugin", "HighNodeUtilization"],
    ["deschedule", "-A"],
    ["run", "--policy", str(EXAMPLES / "descheduler-policy.yaml")],
])
def test_every_snapshot_plan_matches_the_schema(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                                command: list[str], fmt: str) -> None:
    code, out, err = run_cli(monkeypatch, capsys, *command, "--from-file", SNAPSHOT, "-o", fmt)
    assert code == 0, err
    doc = parse(fmt, out)
    check(doc)
    assert doc["identity"]["source"] == "snapshot"


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_live_plans_with_evictions_landings_and_apply_match_the_schema(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        world: Callable[[list[str]], World], fmt: str) -> None:  # noqa: F811
    w = world(["web-0", "web-1", "web-2"])
    path, planned = make_plan(monkeypatch, capsys, tmp_path, fmt)
    check(planned)
    assert "madeBy" in planned["identity"]
    del w.pods["web-2"]
    code, out, err = run_cli(monkeypatch, capsys, "apply", "-f", str(path), "--yes", "-o", fmt)
    assert code == 4, err
    applied = parse(fmt, out)
    check(applied)
    assert [e["pod"] for e in applied["evictions"]] == ["web-0", "web-1"] and applied["landings"]["bound"] == 2
    assert [s["pod"] for s in applied["stale"]] == ["web-2"]
    # a new pod of the workload, which deschedule itself evicts
    w.pods["web-2"] = b.pod("web-2", "n1", labels={"app": "web"}, uid="uid-web-2", owner_name="web-rs")
    w.api.pods["web-2"] = {"metadata": {"name": "web-2", "uid": "uid-web-2", "resourceVersion": "7"},
                           "spec": {"nodeName": "n1"}}
    code, out, err = run_cli(monkeypatch, capsys, *TAINTS, "--yes", "-o", fmt)
    assert code == 0, err
    check(parse(fmt, out))


@pytest.mark.parametrize(("change", "where"), [
    (lambda d: d.pop("identity"), "'identity' is a required property"),
    (lambda d: d["identity"].pop("kubeSystemUID"), "'kubeSystemUID' is a required property"),
    (lambda d: d["candidates"][0].pop("resourceVersion"), "'resourceVersion' is a required property"),
    (lambda d: d.update(apiVersion="kubectl-desched/v2"), "'kubectl-desched/v1' was expected"),
])
def test_the_schema_refuses_a_plan_missing_what_apply_reads(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str],
                                                            change: Callable[[dict[str, Any]], None],
                                                            where: str) -> None:
    _code, out, _err = run_cli(monkeypatch, capsys, "balance", "-A", "--from-file", SNAPSHOT, "-o", "json")
    doc = json.loads(out)
    change(doc)
    with pytest.raises(jsonschema.ValidationError, match=where):
        check(doc)
