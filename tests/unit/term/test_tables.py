"""Names that look like numbers are printed as given in every table (tabulate would print "1e3" as 1000), and the
count columns still align as numbers."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubectl_desched.cli.main import cli
from kubectl_desched.evictors.base import EvictionResult
from kubectl_desched.evictors.results import results_table
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.model.objects import pod_from_json
from kubectl_desched.term.color import Painter
from kubectl_desched.term.tables import plain_table
from kubectl_desched.ui.formats import custom_columns
from tests import builders as b

NAMES = ["1e3", "007", "12", "0x1f", "1e-5"]  # valid pod names; tabulate reads each as a number


def test_text_columns_keep_their_cells_and_count_columns_align_as_numbers() -> None:
    lines = plain_table([["1e3", 7], ["007", 12]], ["NAME", "COUNT"], numeric=[1]).splitlines()
    assert lines == ["NAME      COUNT", "1e3           7", "007          12"]
    assert plain_table([["1e3"], ["007"]]).splitlines() == ["1e3", "007"]
    assert plain_table([], ["NAME", "COUNT"], numeric=[1]).split() == ["NAME", "COUNT"]  # no rows: the headers


def _snapshot(tmp_path: Path) -> str:
    objs = [b.node("roomy", cpu="8"), b.node("1e3", cpu="4")]
    objs += [b.pod(name, "1e3", cpu="1", namespace="2024", priority=7) for name in NAMES]
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(b.cluster(*objs)))
    return str(path)


def test_the_plan_tables_print_numeric_looking_names_as_given(tmp_path: Path) -> None:
    snap = _snapshot(tmp_path)
    result = CliRunner().invoke(cli, ["balance", "--from-file", snap, "-A", "--no-pager", "-o", "wide",
                                      "--thresholds", "cpu=20", "--target-thresholds", "cpu=50"])
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.stdout.splitlines()]
    planned = [r for r in rows if r[:1] == ["2024"]]
    assert planned and {r[1] for r in planned} <= set(NAMES) and all(r[2] == "1e3" for r in planned)
    assert all(r[5] == "7" for r in planned)  # PRIORITY, still a number
    assert any(r[:1] == ["1e3"] for r in rows)  # the nodes table names the node as it is called


def test_custom_columns_and_results_print_names_as_given() -> None:
    items = [{"namespace": "2024", "pod": name} for name in NAMES]
    assert custom_columns("NS:.namespace,POD:.pod", items, headers=False).split() == \
        [word for name in NAMES for word in ("2024", name)]
    pod = pod_from_json(b.pod("1e3", "007", namespace="2024"))
    result = EvictionResult(Candidate(pod, "LowNodeUtilization", "test", "p"), "evicted", "")
    assert results_table([result], Painter(False)).splitlines()[1].split() == ["2024", "1e3", "007", "evicted"]
