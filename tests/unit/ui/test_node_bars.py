"""The nodes table with its bars: each after its own column where the table still fits, the main resource kept
when only one does, the table alone when none does, the line that reads them; and never in a document."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from kubectl_desched.cli.main import cli
from kubectl_desched.model.objects import node_from_json
from kubectl_desched.term import bars
from kubectl_desched.term.color import Painter
from kubectl_desched.ui import node_bars
from kubectl_desched.ui.node_bars import BarView, bar_view
from kubectl_desched.ui.plan_view import nodes_table
from tests import builders as b

DEMO = str(Path(__file__).resolve().parents[3] / "examples" / "demo-cluster.yaml")
LNU = {"LowNodeUtilization": {"cpu": 50.0, "memory": 50.0, "pods": 50.0}}
WIDE = sys.maxsize


def row(name: str, klass: str, now: dict[str, float], after: dict[str, float] | None = None, evictions: int = 0,
        basis: str = "requests") -> dict[str, Any]:
    full = {"cpu": 0.0, "memory": 0.0, "pods": 0.0}
    return {"name": name, "class": {"LowNodeUtilization": klass}, "detail": {}, "schedulable": True,
            "evictions": evictions, "landing": 0, "terminating": 0, "warnings": [], "basis": basis,
            "now": {**full, **now}, "after": {**full, **(after or now)}}


ROWS = [row("hot", "over-utilized", {"cpu": 81.2, "memory": 26.6}, {"cpu": 56.2, "memory": 14.1}, evictions=1),
        row("cold", "under-utilized", {"cpu": 3.8, "memory": 0.4}, {"cpu": 47.5, "memory": 17.6})]


def table(view: BarView | None, rows: list[dict[str, Any]] = ROWS, paint: Painter | None = None,
          headers: bool = True) -> list[str]:
    return nodes_table(rows, paint or Painter(False), headers=headers, bars=view)[0].splitlines()


def test_both_bars_after_their_columns_with_the_targets_marked_and_a_line_that_reads_them() -> None:
    lines = table(BarView(WIDE, targets=LNU))
    assert lines == [
        "NODE    CLASS           CPU                                    MEMORY                                 PODS"
        "      EVICT",
        "hot     over-utilized   81.2% -> 56.2%  ██████████│█░░░░░····  26.6% -> 14.1%  ███░░·····│··········  0%"
        "            1",
        "cold    under-utilized  3.8% -> 47.5%   █▓▓▓▓▓▓▓▓▓│··········  0.4% -> 17.6%   █▓▓▓······│··········  0%",
        "Bars: 0-100% of allocatable, 5% a cell: █ stays, ░ leaves, ▓ lands, · free; │ LowNodeUtilization's target "
        "(cpu 50%, memory 50%)."]


def test_the_width_worked_out_is_the_one_printed() -> None:
    plain = table(None)
    titles = ["NODE", "CLASS", "CPU", "MEMORY", "PODS", "EVICT"]
    cells = [["hot", "over-utilized", "81.2% -> 56.2%", "26.6% -> 14.1%", "0%", 1],
             ["cold", "under-utilized", "3.8% -> 47.5%", "0.4% -> 17.6%", "0%", ""]]
    assert node_bars.table_width(cells, titles) == max(map(len, plain))
    painted = [[c, click.style("x", fg="red")] for c in ("a", "bb")]
    assert node_bars.table_width(painted, ()) == 2 + 2 + 1  # colour codes take no room
    with_bars = table(BarView(WIDE, targets=LNU))
    assert max(map(len, with_bars[:-1])) == max(map(len, plain)) + 2 * (2 + 21)


def test_a_narrower_terminal_keeps_the_main_bar_then_a_coarser_one_then_the_table_alone() -> None:
    plain = table(None)
    base = max(map(len, plain))
    both, cpu20, cpu10 = base + 2 * 23, base + 23, base + 13
    assert table(BarView(both, targets=LNU))[:3] == table(BarView(WIDE, targets=LNU))[:3]
    one = table(BarView(both - 1, targets=LNU))
    assert one[1].split()[5] == "██████████│█░░░░░····" and one[1].split()[6] == "26.6%"
    assert " ".join(one[-2:]).endswith("LowNodeUtilization's target (cpu 50%).")
    assert table(BarView(cpu20, targets=LNU))[1] == one[1]
    coarse = table(BarView(cpu20 - 1, targets=LNU))
    assert coarse[1].split()[5] == "█████│█░░··"
    assert " ".join(coarse[3:]).startswith("Bars: 0-100% of allocatable, 10% a cell")
    assert max(map(len, coarse)) <= cpu20 - 1  # the line that reads the bars is folded to the width too
    narrowest = table(BarView(cpu10, targets=LNU))
    assert narrowest[:3] == coarse[:3] and max(map(len, narrowest)) <= cpu10
    assert table(BarView(cpu10 - 1, targets=LNU)) == plain  # too narrow: exactly the table without bars
    assert table(BarView(80, targets=LNU)) == plain


def test_the_main_resource_is_the_one_a_target_names() -> None:
    memory_only = {"LowNodeUtilization": {"memory": 40.0}}
    base = max(map(len, table(None)))
    lines = table(BarView(base + 23, targets=memory_only))
    assert lines[0].split() == ["NODE", "CLASS", "CPU", "MEMORY", "PODS", "EVICT"]
    assert lines[1].split()[8] == "███░░···│············" and lines[1].split()[5] == "26.6%"
    assert " ".join(lines[3:]).endswith("│ LowNodeUtilization's target (memory 40%).")


def test_without_targets_no_marks_and_several_plugins_name_theirs() -> None:
    lines = table(BarView(WIDE))
    assert lines[1].split()[5] == "███████████░░░░░····" and lines[-1].endswith("· free.")
    two = table(BarView(WIDE, targets={**LNU, "Other": {"cpu": 70.0}}))
    assert two[1].split()[5] == "██████████│█░░░│░░····"
    assert two[-1].endswith("│ targets: LowNodeUtilization cpu 50%, memory 50%; Other cpu 70%.")


def test_measured_usage_gets_bars_but_no_request_targets() -> None:
    rows = [row("hot", "over-utilized", {"cpu": 81.2, "memory": 26.6}, {"cpu": 56.2, "memory": 14.1}, 1,
                basis="load from NodeMetric"), ROWS[1]]
    lines = table(BarView(WIDE, targets=LNU), rows)
    assert "│" not in "\n".join(lines)  # the targets are request limits: no mark on a table of measured load
    assert lines[-1] == "Bars: 0-100% of allocatable, 5% a cell: █ stays, ░ leaves, ▓ lands, · free."


def test_over_100_percent_and_nothing_allocatable() -> None:
    rows = [row("full", "over-utilized", {"cpu": 130.0, "memory": 20.0}, {"cpu": 90.0, "memory": 20.0}, 2),
            row("virtual", "under-utilized", {"cpu": 0.0}, {"cpu": 0.0})]
    view = BarView(WIDE, bars.ASCII, LNU, frozenset({("virtual", "cpu"), ("virtual", "memory")}))
    lines = table(view, rows)
    assert lines[1].split()[5] == "##########|########->"
    assert lines[2].split()[3:6] == ["no", "allocatable", "0%"]
    assert lines[-1].startswith("Bars: 0-100% of allocatable, 5% a cell: # stays, - leaves, + lands, . free, "
                                "> past 100%; | LowNodeUtilization's target")


def test_no_headers_and_colour_keep_the_columns_aligned() -> None:
    lines = table(BarView(WIDE, targets=LNU), headers=False)
    assert lines[0].startswith("hot   over-utilized   81.2% -> 56.2%  ██████████│█░░░░░····")
    painted = table(BarView(WIDE, targets=LNU), paint=Painter(True))
    assert [click.unstyle(line) for line in painted] == table(BarView(WIDE, targets=LNU))


def test_bar_view_reads_the_choice_the_stream_and_the_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty:
        encoding = "ascii"

        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(bars.shutil, "get_terminal_size", lambda: __import__("os").terminal_size((100, 30)))
    nodes = [node_from_json(b.node("n1")), node_from_json(b.node("gone", cpu="0", memory="0"))]
    view = bar_view(None, LNU, nodes, Tty())
    assert view is not None and view.room == 100 and view.glyphs == bars.ASCII
    assert view.unscaled == {("gone", "cpu"), ("gone", "memory")}
    assert bar_view(False, LNU, nodes, Tty()) is None


def untimed(text: str) -> str:
    return re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z", "TIME", text)  # the plan's madeAt


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, ["balance", "--from-file", DEMO, "-A", "--no-pager", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_unasked_a_pipe_gets_no_bars_and_bars_asks_for_them() -> None:
    assert "Bars:" not in run() and "Bars:" not in run("--no-bars")
    shown = run("--bars")
    assert "\nBars: 0-100% of allocatable" in shown and "██████████│█░░░░░····" in shown
    assert [line for line in shown.splitlines() if not line.startswith("Bars:")] != run().splitlines()
    assert "Bars:" in run("--bars", "-o", "wide")


@pytest.mark.parametrize("output", ["json", "yaml", "name", "jsonpath={.nodes}", "custom-columns=POD:.pod"])
def test_documents_never_carry_bars_even_on_a_wide_terminal(output: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bars, "room", lambda choice, stream=None: None if choice is False else 500)
    assert "Bars:" in run()  # the text would have them here
    for asked in ((), ("--bars",)):
        out = run(*asked, "-o", output)
        assert untimed(out) == untimed(run("--no-bars", "-o", output))
        assert not {"█", "│", "·"} & set(out) and "Bars" not in out
    if output == "json":
        assert all(set(n) == set(json.loads(run("-o", "json"))["nodes"][0]) for n in json.loads(out)["nodes"])


def test_apply_draws_them_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without marks: apply checks the plan's pods again, it does not run the plugins that report targets."""
    b.isolate_from_the_user(tmp_path, monkeypatch)
    (tmp_path / "plan.json").write_text(run("-o", "json"))
    args = ["apply", "-f", str(tmp_path / "plan.json"), "--from-file", DEMO, "--no-pager"]
    shown = CliRunner().invoke(cli, [*args, "--bars"])
    assert shown.exit_code == 0, shown.output
    assert "\nBars: 0-100% of allocatable" in shown.output and "███████████░░░░░····" in shown.output
    assert "│" not in shown.output and "Bars:" not in CliRunner().invoke(cli, args).output
