"""Ask before anything is evicted. On a terminal that can draw full screen, the selector (ui/picker.py); otherwise
line prompts: all, pod by pod, or nothing. Either way a final question names what will be sent."""

from __future__ import annotations

import sys
from collections.abc import Callable

import click

from kubectl_desched.framework.plan import Candidate
from kubectl_desched.ui.picker_state import Selection

Destination = Callable[[Candidate], str | None]


class NotConfirmed(Exception):
    """Nothing may be evicted: no terminal to ask on, or the user said no."""


def stdin_is_tty() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


def ask(candidates: list[Candidate], destination: Destination | None = None) -> tuple[list[Candidate], str]:
    """Prompt on stderr (stdout may carry -o json); returns the candidates the user confirmed and how:
    "all" or "select" (some of them)."""
    if not stdin_is_tty():
        raise NotConfirmed("standard input is not a terminal: pass --yes to evict, or --dry-run=client to preview")
    from kubectl_desched.ui import picker as selector

    if selector.can_open():
        return _on_screen(candidates, destination)
    return _by_lines(candidates)


def _final(selection: Selection) -> None:
    if not selection.chosen():
        raise NotConfirmed("no pod selected: nothing was evicted")
    if not click.confirm(selection.summary().capitalize(), default=False, err=True):
        raise NotConfirmed("aborted: nothing was evicted")


def _how(chosen: list[Candidate], candidates: list[Candidate]) -> str:
    return "all" if len(chosen) == len(candidates) else "select"


def _on_screen(candidates: list[Candidate], destination: Destination | None) -> tuple[list[Candidate], str]:
    from kubectl_desched.ui import picker as selector

    selection = Selection(candidates)
    if not selector.run(selection, destination):
        raise NotConfirmed("aborted: nothing was evicted")
    _final(selection)
    chosen = selection.chosen()
    return chosen, _how(chosen, candidates)


def _by_lines(candidates: list[Candidate]) -> tuple[list[Candidate], str]:
    n = len(candidates)
    answer = click.prompt(
        f"Evict {n} pod{'s' if n != 1 else ''}? [a]ll, [s]elect pod by pod, [n]o",
        type=click.Choice(["a", "all", "s", "select", "n", "no"], case_sensitive=False),
        show_choices=False, err=True,
    ).lower()
    if answer in ("n", "no"):
        raise NotConfirmed("aborted: nothing was evicted")
    if answer in ("a", "all"):
        return list(candidates), "all"
    selection = Selection(candidates, chosen=False)
    for i, row in enumerate(selection.rows, 1):
        c = row.candidate
        p = c.pod
        for w in (*c.warnings, *(r for r in c.pdb_refusals if r not in c.warnings)):
            click.echo(f"  warning: {w}", err=True)
        reply = click.prompt(
            f"[{i}/{n}] {'move (surge)' if c.method == 'surge' else 'evict'} {p.namespace}/{p.name} on "
            f"{p.node_name} ({c.plugin}: {c.reason})? [y]es, [n]o, [q]uit",
            type=click.Choice(["y", "yes", "n", "no", "q", "quit"], case_sensitive=False),
            show_choices=False, err=True,
        ).lower()
        if reply in ("q", "quit"):
            # Quitting early is not a yes to what was picked so far: say what that is and ask once more.
            _final(selection)
            break
        row.chosen = reply in ("y", "yes")
    if not selection.chosen():
        raise NotConfirmed("no pod selected: nothing was evicted")
    chosen = selection.chosen()
    return chosen, "select"
