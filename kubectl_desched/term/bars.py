"""Bars for the nodes table: a node's share of its allocatable now and after the moves, in one line of plain
characters, with the plugins' targets marked.

One bar is `cells` cells from 0 to 100%: the part that stays, then the part that leaves (now > after) or lands
(after > now), then what is free; a mark stands between two cells at each target, so a bar that crosses it is over
that target and one that stops short is not, whatever the rounding. Past 100% the last cell says so. The glyphs are
blocks where the stream writes UTF-8, ASCII elsewhere; colour (red leaves, green lands, as a diff) only through the
Painter, so NO_COLOR and a pipe get the characters alone."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_desched.term.color import Painter


@dataclass(frozen=True)
class Glyphs:
    stays: str
    leaves: str
    lands: str
    free: str
    mark: str
    over: str  # the last cell of a bar past 100%


BLOCKS = Glyphs(stays="█", leaves="░", lands="▓", free="·", mark="│", over=">")
ASCII = Glyphs(stays="#", leaves="-", lands="+", free=".", mark="|", over=">")
CELLS = 20  # 5% a cell
_COLOR = {"leaves": "red", "lands": "green"}


def glyphs_for(stream: Any = None) -> Glyphs:
    """Blocks where the stream's encoding is UTF-8 (a pager is handed UTF-8 too), ASCII elsewhere."""
    encoding = getattr(stream or sys.stdout, "encoding", None) or ""
    return BLOCKS if encoding.lower().replace("-", "").replace("_", "") == "utf8" else ASCII


def room(choice: bool | None, stream: Any = None) -> int | None:
    """How wide a table with bars may be: None for no bars (--no-bars; unasked, when the stream is not a
    terminal), no limit when asked for (--bars), else the terminal's width (the table alone when they do not fit)."""
    if choice is False:
        return None
    if choice:
        return sys.maxsize
    stream = stream or sys.stdout
    if not (hasattr(stream, "isatty") and stream.isatty()):
        return None
    return shutil.get_terminal_size().columns


def boundaries(marks: Sequence[float], cells: int = CELLS) -> dict[int, float]:
    """Where each target's mark stands (between cell b-1 and cell b) -> the lowest target drawn there."""
    out: dict[int, float] = {}
    for t in sorted(marks):
        out.setdefault(_half_up(t / 100.0 * cells, cells), t)
    return out


def width(marks: Sequence[float], cells: int = CELLS) -> int:
    """A bar's printed width: its cells and one character per distinct mark."""
    return cells + len(boundaries(marks, cells))


def level(percent: float, marks: Sequence[float] = (), cells: int = CELLS) -> int:
    """The cells a value fills: rounded half up, at least one when it is above 0, past a mark exactly when the
    value is over that target."""
    n = _half_up(percent / 100.0 * cells, cells)
    if percent > 0 and n == 0:
        n = 1
    for b, t in boundaries(marks, cells).items():
        if percent > t and b < cells:
            n = max(n, b + 1)
        elif percent <= t:
            n = min(n, b)
    return n


def bar(now: float, after: float, marks: Sequence[float] = (), *, cells: int = CELLS, glyphs: Glyphs = BLOCKS,
        paint: Painter | None = None) -> str:
    """One bar: stays up to the lower of now and after, then leaves or lands up to the higher, then free."""
    lo, hi = level(min(now, after), marks, cells), level(max(now, after), marks, cells)
    change = "leaves" if now > after else "lands"
    roles = ["stays"] * lo + [change] * (hi - lo) + ["free"] * (cells - hi)
    text = [getattr(glyphs, role) for role in roles]
    if max(now, after) > 100.0 and cells:
        text[-1] = glyphs.over
    for b in sorted(boundaries(marks, cells), reverse=True):
        roles.insert(b, "mark")
        text.insert(b, glyphs.mark)
    return _painted(roles, text, paint)


def _painted(roles: list[str], text: list[str], paint: Painter | None) -> str:
    """Runs of one role painted together: one colour code per run, not per cell."""
    if paint is None or not paint.enabled:
        return "".join(text)
    out, i = [], 0
    while i < len(roles):
        j = i
        while j < len(roles) and roles[j] == roles[i]:
            j += 1
        run = "".join(text[i:j])
        out.append(paint(run, None, bold=True) if roles[i] == "mark" else paint(run, _COLOR.get(roles[i])))
        i = j
    return "".join(out)


def _half_up(x: float, cells: int) -> int:
    return max(0, min(cells, int(x + 0.5)))
