"""The full-screen selector: every candidate with a checkbox, grouped, sortable, filterable, with a detail pane.
Drawn on stderr (stdout may carry -o json) with prompt_toolkit, imported only when the selector opens."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kubectl_desched.interrupts import Interrupted
from kubectl_desched.ui.picker_state import Line, Selection, details

if TYPE_CHECKING:
    from prompt_toolkit.application import Application

KEYS = ("space: pod   n: node   o: owner   a: all shown   s: sort   /: filter   "
        "enter: done   q: cancel")
Destination = Callable[[Any], str | None]


def can_open(stdin: Any = None, stderr: Any = None) -> bool:
    """Full screen needs a terminal to read keys from and one to draw on; `TERM=dumb` (Emacs shells, some CI
    consoles) and KUBECTL_DESCHED_PROMPT=lines keep the line prompts."""
    stdin = stdin or sys.stdin
    stderr = stderr or sys.stderr
    if os.environ.get("KUBECTL_DESCHED_PROMPT") == "lines" or os.environ.get("TERM", "dumb") in ("", "dumb"):
        return False
    return bool(stdin is not None and stdin.isatty() and stderr is not None and stderr.isatty())


class Screen:
    """The selector's state on screen: which line the cursor is on and whether the filter is being typed."""

    def __init__(self, selection: Selection, destination: Destination | None = None) -> None:
        self.sel = selection
        self.destination = destination
        self.cursor = 0  # index into the pod lines (headers are skipped)
        self.top = 0  # the first line drawn
        self.lines: list[Line] = []
        self._pods: list[int] = []
        self.refresh()

    def refresh(self) -> None:
        """Rebuild the lines; the cursor stays on its pod when that is still shown (after a sort it moves with
        it), else on the same row number."""
        line = self.current() if self._pods else None
        self.lines = self.sel.lines()
        self._pods = [i for i, ln in enumerate(self.lines) if ln.row is not None]
        if line is not None:
            self.cursor = next((n for n, i in enumerate(self._pods) if self.lines[i].row is line.row), self.cursor)
        self.cursor = max(0, min(self.cursor, len(self._pods) - 1))

    def pod_lines(self) -> list[int]:
        return self._pods

    def window(self, height: int) -> tuple[list[Line], int]:
        """The lines a list `height` lines tall shows, scrolled just enough to hold the cursor (with its group's
        header when the cursor is on the group's first pod), and the cursor's row among them. Only these are
        drawn: a plan of 31,000 pods has 33,000 lines, and laying them all out took 0.14-0.23 s a key."""
        pods = self._pods
        at = pods[self.cursor] if pods else 0
        height = max(1, height)
        if at < self.top:
            self.top = at - 1 if at > 0 and self.lines[at - 1].row is None else at
        elif at >= self.top + height:
            self.top = at - height + 1
        self.top = max(0, min(self.top, len(self.lines) - height))
        return self.lines[self.top:self.top + height], at - self.top

    def current(self) -> Line | None:
        pods = self.pod_lines()
        return self.lines[pods[self.cursor]] if pods else None

    def move(self, by: int) -> None:
        self.cursor = max(0, min(self.cursor + by, len(self.pod_lines()) - 1))

    def status(self) -> str:
        shown = len(self.pod_lines())
        total = len(self.sel.rows)
        where = f"{shown} of {total} shown" if shown != total else f"{total} candidates"
        filt = f"   filter: {self.sel.filter}" if self.sel.filter else ""
        chosen = self.sel.chosen()
        nodes = len({c.pod.node_name for c in chosen})
        return f" chosen: {len(chosen)} pods on {nodes} nodes   ({where}; sort: {self.sel.sort}){filt}"

    def detail(self) -> list[str]:
        line = self.current()
        if line is None or line.row is None:
            return ["no pod matches the filter"]
        c = line.row.candidate
        return details(c, self.destination(c) if self.destination else None)


def build(screen: Screen, input: Any = None, output: Any = None) -> Application[str]:
    """The application; it exits with "done" (Enter) or "cancel" (q, Esc)."""
    from prompt_toolkit.application import Application, get_app
    from prompt_toolkit.buffer import Buffer
    from prompt_toolkit.filters import Condition
    from prompt_toolkit.formatted_text import StyleAndTextTuples
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.layout import ConditionalContainer, HSplit, Layout, VSplit, Window
    from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl
    from prompt_toolkit.layout.dimension import Dimension
    from prompt_toolkit.styles import Style

    filtering = [False]
    query = Buffer(multiline=False)

    def on_query(_buf: Buffer) -> None:
        screen.sel.filter = query.text
        screen.refresh()

    query.on_text_changed += on_query

    def list_height() -> int:
        """The list's height when last drawn; before that, the terminal's."""
        info = listing_window.render_info
        return info.window_height if info is not None else get_app().output.get_size().rows

    def list_text() -> StyleAndTextTuples:
        out: StyleAndTextTuples = []
        shown, at = screen.window(list_height())
        if not screen.pod_lines():
            at = -1
        for i, ln in enumerate(shown):
            style = "class:group" if ln.row is None else ("class:cursor" if i == at else "")
            if ln.row is not None and i != at and not ln.row.chosen:
                style = "class:off"
            out.append((style, ln.text + "\n"))
        return out

    def cursor_pos() -> Any:
        from prompt_toolkit.data_structures import Point
        pods = screen.pod_lines()
        return Point(0, pods[screen.cursor] - screen.top if pods else 0)

    listing = FormattedTextControl(list_text, focusable=True, get_cursor_position=cursor_pos, show_cursor=False)
    listing_window = Window(listing, width=Dimension(weight=3))
    detail = FormattedTextControl(lambda: "\n".join(screen.detail()))
    keys = KeyBindings()
    in_list = Condition(lambda: not filtering[0])

    @keys.add("up", filter=in_list)
    @keys.add("k", filter=in_list)
    def _up(_e: Any) -> None:
        screen.move(-1)

    @keys.add("down", filter=in_list)
    @keys.add("j", filter=in_list)
    def _down(_e: Any) -> None:
        screen.move(1)

    @keys.add("pageup", filter=in_list)
    def _pgup(_e: Any) -> None:
        screen.move(-10)

    @keys.add("pagedown", filter=in_list)
    def _pgdn(_e: Any) -> None:
        screen.move(10)

    def on_row(act: Callable[[Any], None]) -> None:
        line = screen.current()
        if line is not None and line.row is not None:
            act(line.row)
            screen.refresh()

    @keys.add("space", filter=in_list)
    def _pod(_e: Any) -> None:
        on_row(screen.sel.toggle)

    @keys.add("n", filter=in_list)
    def _node(_e: Any) -> None:
        on_row(lambda r: screen.sel.toggle_same(r, "node"))

    @keys.add("o", filter=in_list)
    def _owner(_e: Any) -> None:
        on_row(lambda r: screen.sel.toggle_same(r, "owner"))

    @keys.add("a", filter=in_list)
    def _all(_e: Any) -> None:
        screen.sel.toggle_all()
        screen.refresh()

    @keys.add("s", filter=in_list)
    def _sort(_e: Any) -> None:
        screen.sel.cycle_sort()
        screen.refresh()

    @keys.add("/", filter=in_list)
    def _filter(e: Any) -> None:
        filtering[0] = True
        e.app.layout.focus(query)

    @keys.add("enter", filter=~in_list)
    def _filter_done(e: Any) -> None:
        filtering[0] = False
        e.app.layout.focus(listing)

    @keys.add("escape", filter=~in_list, eager=True)
    def _filter_clear(e: Any) -> None:
        query.text = ""
        filtering[0] = False
        e.app.layout.focus(listing)

    @keys.add("enter", filter=in_list)
    def _done(e: Any) -> None:
        e.app.exit(result="done")

    @keys.add("q", filter=in_list)
    @keys.add("escape", filter=in_list, eager=True)
    def _cancel(e: Any) -> None:
        e.app.exit(result="cancel")

    @keys.add("c-c")
    @keys.add("<sigint>")
    def _interrupt(e: Any) -> None:
        # Raw mode turns Ctrl-C into a key, and prompt_toolkit turns a SIGINT sent from outside (kill -INT) into
        # the <sigint> key: make both the interrupt they are everywhere else in the tool.
        e.app.exit(exception=Interrupted(signal.SIGINT))

    title = Window(FormattedTextControl(lambda: [("class:title", " Choose the pods to evict   "), ("", KEYS)]),
                   height=1)
    status = Window(FormattedTextControl(lambda: [("class:status", screen.status())]), height=1)
    prompt = ConditionalContainer(
        VSplit([Window(FormattedTextControl("filter> "), width=8), Window(BufferControl(query), height=1)]),
        filter=~in_list)
    body = VSplit([listing_window, Window(width=1, char="│"),
                   Window(detail, width=Dimension(weight=2), wrap_lines=True)])
    layout = Layout(HSplit([title, body, status, prompt]), focused_element=listing)
    style = Style.from_dict({"title": "reverse bold", "group": "bold", "cursor": "reverse", "off": "#888888",
                             "status": "reverse"})
    return Application(layout=layout, key_bindings=keys, style=style, full_screen=True, mouse_support=False,
                       input=input, output=output, erase_when_done=True)


def run(selection: Selection, destination: Destination | None = None) -> bool:
    """Open the selector on the terminal; True when the user finished with Enter, False when they cancelled."""
    from prompt_toolkit.input import create_input
    from prompt_toolkit.output import create_output

    app = build(Screen(selection, destination), input=create_input(sys.stdin), output=create_output(sys.stderr))
    return app.run() == "done"
