"""A node's bar: 0-100% in cells, what stays, leaves and lands, the targets marked between cells, in blocks or in
ASCII, coloured only through the Painter; and when bars are drawn at all."""

from __future__ import annotations

import os
import sys
from typing import Any

import click
import pytest

from kubectl_desched.term import bars
from kubectl_desched.term.bars import ASCII, BLOCKS, bar, boundaries, level, width
from kubectl_desched.term.color import Painter


def test_the_demo_nodes_bars() -> None:
    """worker-a1 loses 25 points and stays over 50%; worker-a2 ends under it; worker-b2 fills up to it."""
    assert bar(81.2, 56.2, [50]) == "██████████│█░░░░░····"
    assert bar(82.5, 43.8, [50]) == "█████████░│░░░░░░░···"
    assert bar(3.8, 47.5, [50]) == "█▓▓▓▓▓▓▓▓▓│··········"
    assert bar(11.2, 11.2, [50]) == "██········│··········"
    assert bar(81.2, 56.2, [50], glyphs=ASCII) == "##########|#-----...."
    assert bar(10, 30, glyphs=ASCII) == "##++++.............."


@pytest.mark.parametrize(("percent", "cells"), [
    (0, 0), (0.1, 1), (2.4, 1), (2.5, 1), (7.4, 1), (7.5, 2), (50, 10), (97.4, 19), (97.5, 20), (100, 20),
    (250, 20)])
def test_levels_round_half_up_and_show_anything_above_zero(percent: float, cells: int) -> None:
    assert level(percent) == cells


@pytest.mark.parametrize(("percent", "target", "cells"), [
    (50.1, 50, 11),  # 10.02 cells rounds to 10: over the target, so past its mark
    (50, 50, 10),  # at the target is not over it
    (49.9, 50, 10),
    (47.4, 47, 10),  # the mark stands at 9 (9.4 cells); 9.48 rounds to 9 but the node is over
    (46.9, 47, 9),
    (1, 2, 0),  # under a mark at the start: nothing past it
    (100.5, 100, 20),  # the mark at the end cannot be passed; the last cell says "past 100%"
])
def test_a_bar_crosses_a_mark_exactly_when_the_value_is_over_its_target(percent: float, target: float,
                                                                        cells: int) -> None:
    assert level(percent, [target]) == cells


def test_width_is_the_cells_and_one_per_distinct_mark() -> None:
    assert width([]) == len(bar(30, 60)) == 20
    assert width([50]) == len(bar(30, 60, [50])) == 21
    assert boundaries([50, 51, 80]) == {10: 50, 16: 80}  # 50% and 51% share a boundary: one mark, the lower
    assert width([50, 51, 80]) == len(bar(30, 60, [50, 51, 80])) == 22
    assert width([40], cells=10) == len(bar(30, 60, [40], cells=10)) == 11
    assert bar(30, 30, [0, 100], glyphs=ASCII) == "|######..............|"


def test_over_100_percent_is_said_in_the_last_cell() -> None:
    assert bar(120, 80, [50], glyphs=ASCII) == "##########|######--->"
    assert bar(60, 130, glyphs=ASCII) == "############+++++++>"
    assert bar(100, 100, glyphs=ASCII) == "#" * 20  # full is not over


def test_nothing_requested_is_all_free() -> None:
    assert bar(0, 0, glyphs=ASCII) == "." * 20
    assert bar(0, 0, [50], cells=10, glyphs=ASCII) == ".....|....."


def test_colour_only_through_the_painter() -> None:
    plain = bar(81.2, 56.2, [50])
    assert bar(81.2, 56.2, [50], paint=Painter(False)) == plain
    painted = bar(81.2, 56.2, [50], paint=Painter(True))
    assert "\x1b[" in painted and click.unstyle(painted) == plain
    paint = Painter(True)
    assert paint("░░░░░", "red") in painted  # one code per run, as a diff colours what goes
    assert paint("▓▓", "green") in bar(10, 20, paint=paint)
    assert paint("│", None, bold=True) in painted


class Stream:
    def __init__(self, tty: bool = False, encoding: str | None = "utf-8") -> None:
        self.tty, self.encoding = tty, encoding

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(("encoding", "glyphs"), [
    ("utf-8", BLOCKS), ("UTF-8", BLOCKS), ("utf_8", BLOCKS), ("utf8", BLOCKS),
    ("ascii", ASCII), ("ANSI_X3.4-1968", ASCII), ("latin-1", ASCII), ("cp1252", ASCII), (None, ASCII)])
def test_blocks_only_where_the_stream_writes_utf8(encoding: str | None, glyphs: bars.Glyphs) -> None:
    assert bars.glyphs_for(Stream(encoding=encoding)) == glyphs


def test_ascii_glyphs_are_ascii_and_each_role_has_its_own() -> None:
    assert all(g.isascii() for g in vars(ASCII).values())
    assert len(set(vars(ASCII).values()) - {">"}) == len(set(vars(BLOCKS).values()) - {">"}) == 5  # distinct roles


def test_when_bars_are_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bars.shutil, "get_terminal_size", lambda: os.terminal_size((132, 40)))
    assert bars.room(None, Stream(tty=True)) == 132  # unasked, on a terminal: as wide as it is
    assert bars.room(None, Stream(tty=False)) is None  # a pipe or a file: never unasked
    assert bars.room(None, object()) is None  # not even a stream
    assert bars.room(False, Stream(tty=True)) is None  # --no-bars
    assert bars.room(True, Stream(tty=False)) == sys.maxsize  # --bars: whatever the width
    assert bars.room(True, Stream(tty=True)) == sys.maxsize


def test_room_reads_stdout_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    fake: Any = Stream(tty=False)
    monkeypatch.setattr(sys, "stdout", fake)
    assert bars.room(None) is None
