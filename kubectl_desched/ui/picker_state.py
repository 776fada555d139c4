"""Which of the planned pods to evict: the state behind the full-screen selector, kept apart from the screen so
every choice it offers (toggles, sorting, filtering, the final summary) is tested without a terminal."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kubectl_desched.framework.plan import Candidate

SORT_KEYS = ("node", "namespace", "owner", "plugin")


def owner_of(c: Candidate) -> str:
    """The controller as `Kind/name` (a ReplicaSet stands for its Deployment's generation), or `-` for a bare pod."""
    ref = c.pod.controller
    return f"{ref.kind}/{ref.name}" if ref is not None else "-"


@dataclass
class Row:
    candidate: Candidate
    index: int  # position in the plan: eviction order, and the order chosen pods are returned in
    chosen: bool = True

    def key(self, field: str) -> str:
        c = self.candidate
        if field == "node":
            return c.pod.node_name or ""
        if field == "namespace":
            return c.pod.namespace
        if field == "owner":
            return f"{c.pod.namespace}/{owner_of(c)}"
        return c.plugin

    def matches(self, words: list[str]) -> bool:
        """Every word must match: `node:`, `ns:`, `owner:`, `plugin:` restrict a word to one field; a bare word
        matches any of them or the pod's name. Case-insensitive substrings, as a quick filter should be."""
        for w in words:
            field, _, text = w.partition(":") if ":" in w else ("", "", w)
            field = {"ns": "namespace", "": ""}.get(field, field)
            if field and field not in SORT_KEYS:
                field, text = "", w  # not a field name: the colon is part of the text
            if field:
                if text.lower() not in self.key(field).lower():
                    return False
            elif not any(text.lower() in s.lower() for s in (*(self.key(f) for f in SORT_KEYS),
                                                              self.candidate.pod.name)):
                return False
        return True


@dataclass
class Line:
    """One line of the list: a group header (row is None) or a pod."""

    text: str
    row: Row | None
    group: str


class Selection:
    def __init__(self, candidates: Iterable[Candidate], chosen: bool = True) -> None:
        self.rows = [Row(c, i, chosen) for i, c in enumerate(candidates)]
        self.sort = "node"
        self.filter = ""

    def cycle_sort(self) -> None:
        self.sort = SORT_KEYS[(SORT_KEYS.index(self.sort) + 1) % len(SORT_KEYS)]

    def visible(self) -> list[Row]:
        words = self.filter.split()
        shown = [r for r in self.rows if r.matches(words)]
        return sorted(shown, key=lambda r: (r.key(self.sort), r.index))

    def lines(self) -> list[Line]:
        """The visible rows grouped under a header per value of the sort key (per node by default); a header
        counts every pod of its group, shown or not. One pass: each toggle and keystroke redraws the list, and
        counting per group over all rows took 23 s at 31,000 candidates on 2,000 nodes."""
        counts: dict[str, list[int]] = {}  # group -> [chosen, all]
        for x in self.rows:
            found = counts.setdefault(x.key(self.sort), [0, 0])
            found[0] += x.chosen
            found[1] += 1
        out: list[Line] = []
        group = None
        for r in self.visible():
            g = r.key(self.sort)
            if g != group:
                group = g
                n, total = counts[g]
                out.append(Line(f"{self.sort} {g or '-'}  ({n}/{total} chosen)", None, g))
            out.append(Line(self._row_text(r), r, g))
        return out

    def _row_text(self, r: Row) -> str:
        c = r.candidate
        mark = "[x]" if r.chosen else "[ ]"
        flag = " !" if c.warnings or c.pdb_refusals else ""
        method = "  (surge)" if c.method == "surge" else ""
        return f"  {mark} {c.pod.namespace}/{c.pod.name}  {c.plugin}{flag}{method}"

    def toggle(self, row: Row) -> None:
        row.chosen = not row.chosen

    def _toggle_group(self, rows: list[Row]) -> None:
        """All chosen becomes none chosen; anything else becomes all chosen."""
        value = not all(r.chosen for r in rows)
        for r in rows:
            r.chosen = value

    def toggle_same(self, row: Row, field: str) -> None:
        """Every shown pod sharing the row's node, owner, ...: a pod the filter hides is not touched, as with `a`."""
        self._toggle_group([r for r in self.visible() if r.key(field) == row.key(field)])

    def toggle_all(self) -> None:
        self._toggle_group(self.visible())

    def chosen(self) -> list[Candidate]:
        return [r.candidate for r in self.rows if r.chosen]

    def summary(self) -> str:
        chosen = self.chosen()
        nodes = {c.pod.node_name for c in chosen}
        return (f"evict {len(chosen)} pod{'s' if len(chosen) != 1 else ''} from {len(nodes)} "
                f"node{'s' if len(nodes) != 1 else ''}?")


def details(c: Candidate, destination: str | None = None) -> list[str]:
    """What the detail pane says about one candidate: why it was picked and what stands in its way."""
    p = c.pod
    out = [f"pod        {p.namespace}/{p.name}", f"node       {p.node_name or '-'}", f"owner      {owner_of(c)}",
           f"plugin     {c.plugin} (profile {c.profile})", f"reason     {c.reason}"]
    if c.method == "surge":
        out.append(f"method     surge: replacement first, as {c.why_surge}")
    if destination is not None:
        out.append(f"lands on   {destination} (estimate)")
    out += [f"warning    {w}" for w in c.warnings]
    out += [f"PDB        {w}" for w in c.pdb_refusals if w not in c.warnings]
    return out
