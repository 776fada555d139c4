"""Plain text tables, as kubectl prints them: each cell as given.

tabulate reads every cell that looks like a number as one: a pod named "1e3" printed as 1000, a column of
namespaces such as "007" right-aligned. Here only the columns named numeric (counts, priorities) are read as
numbers; the rest are text, which also spares tabulate a number check per cell (a plan of 30,000 pods has
150,000 of them)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def plain_table(rows: Sequence[Sequence[Any]], headers: Sequence[str] = (), *, numeric: Iterable[int] = (),
                maxcolwidths: Sequence[int | None] | None = None) -> str:
    """The rows under the headers, columns separated by two spaces; `numeric` are the indices of the columns
    aligned as numbers."""
    from tabulate import tabulate  # here: most commands start without it

    numbers = set(numeric)
    text = [i for i in range(max((len(r) for r in rows), default=0)) if i not in numbers]  # the data's columns
    return tabulate(rows, headers=headers, tablefmt="plain", disable_numparse=text if numbers and rows else True,
                    maxcolwidths=maxcolwidths)
