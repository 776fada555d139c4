"""The nodes table's bars: which resources get one, how many cells, where they fit, and the line that reads them.

Shown only in the plan's text: on a terminal when the table with them fits its width, always with --bars, never
with --no-bars; the documents (-o json, yaml, name, ...) never carry them."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import click

from kubectl_desched.model.objects import Node
from kubectl_desched.model.quantity import fmt_pct
from kubectl_desched.term import bars
from kubectl_desched.term.color import Painter

BARRED = ("cpu", "memory")  # the resources a bar is drawn for; pods is a count, its percentage stays in the table
CELL_COUNTS = (bars.CELLS, 10)  # 5% a cell, else 10% a cell before giving up


@dataclass(frozen=True)
class BarView:
    room: int  # how wide the table may grow with its bars
    glyphs: bars.Glyphs = bars.BLOCKS
    targets: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # plugin -> resource -> percent
    unscaled: frozenset[tuple[str, str]] = frozenset()  # (node, resource) with nothing allocatable


@dataclass(frozen=True)
class Layout:
    resources: tuple[str, ...]
    cells: int


def bar_view(choice: bool | None, targets: Mapping[str, Mapping[str, float]], nodes: Iterable[Node],
             stream: Any = None) -> BarView | None:
    """None when no bars are to be drawn (see term/bars.py's room)."""
    room = bars.room(choice, stream)
    if room is None:
        return None
    unscaled = frozenset((n.name, r) for n in nodes for r in BARRED if n.allocatable.get(r, 0.0) <= 0)
    return BarView(room, bars.glyphs_for(stream), targets, unscaled)


def marks(view: BarView, resource: str, rows: Sequence[Mapping[str, Any]]) -> list[float]:
    """The plugins' targets for the resource: request limits, so none on a table that shows measured usage."""
    if any(r["basis"] != "requests" for r in rows):
        return []
    return sorted({limits[resource] for limits in view.targets.values() if resource in limits})


def layout(view: BarView, table_width: int, rows: Sequence[Mapping[str, Any]]) -> Layout | None:
    """Both bars at 5% a cell, else the main one (the resource a target names first, else cpu), coarser if need
    be; None when even that does not fit."""
    targeted = {r for limits in view.targets.values() for r in limits}
    first = sorted(BARRED, key=lambda r: r not in targeted)[0]
    for resources, cells in ((BARRED, CELL_COUNTS[0]), *(((first,), c) for c in CELL_COUNTS)):
        extra = sum(2 + bars.width(marks(view, r, rows), cells) for r in resources)
        if table_width + extra <= view.room:
            return Layout(resources, cells)
    return None


def column(view: BarView, chosen: Layout, resource: str, rows: Sequence[Mapping[str, Any]],
           paint: Painter) -> list[str]:
    """The resource's bar for each row, in order."""
    at = marks(view, resource, rows)  # once: every row reads the same
    return ["no allocatable" if (r["name"], resource) in view.unscaled else
            bars.bar(r["now"][resource], r["after"][resource], at, cells=chosen.cells, glyphs=view.glyphs,
                     paint=paint) for r in rows]


def legend(view: BarView, chosen: Layout, rows: Sequence[Mapping[str, Any]]) -> str:
    """What the glyphs say and whose targets the marks are."""
    g = view.glyphs
    text = (f"Bars: 0-100% of allocatable, {fmt_pct(100 / chosen.cells)} a cell: {g.stays} stays, {g.leaves} leaves, "
            f"{g.lands} lands, {g.free} free")
    if any(max(r["now"][res], r["after"][res]) > 100 for r in rows for res in chosen.resources):
        text += f", {g.over} past 100%"
    drawn = {p: {r: v for r, v in limits.items() if r in chosen.resources and marks(view, r, rows)}
             for p, limits in sorted(view.targets.items())}
    drawn = {p: limits for p, limits in drawn.items() if limits}
    if len(drawn) == 1:
        (plugin, limits), = drawn.items()
        text += f"; {g.mark} {plugin}'s target ({_listed(limits)})"
    elif drawn:
        text += f"; {g.mark} targets: " + "; ".join(f"{p} {_listed(limits)}" for p, limits in drawn.items())
    # as wide as the terminal, like the table it reads (sys.maxsize with --bars: one line)
    return textwrap.fill(text + ".", view.room, break_on_hyphens=False)


def table_width(shown: Sequence[Sequence[Any]], titles: Sequence[str]) -> int:
    """How wide plain_table prints these cells: each column as its widest cell or its title and two spaces (as
    tabulate pads titles), two spaces between."""
    columns = max([len(titles), *(len(r) for r in shown)])
    widths = [len(t) + 2 for t in titles] + [0] * (columns - len(titles))
    for row in shown:
        for i, c in enumerate(row):
            widths[i] = max(widths[i], len(click.unstyle(str(c))))
    return sum(widths) + 2 * (columns - 1) if columns else 0


def _listed(limits: Mapping[str, float]) -> str:
    return ", ".join(f"{r} {fmt_pct(v)}" for r, v in limits.items())
