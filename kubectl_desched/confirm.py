"""Ask before anything is evicted: all, pod by pod, or nothing."""

from __future__ import annotations

import sys

import click

from kubectl_desched.framework.plan import Candidate


class NotConfirmed(Exception):
    """Nothing may be evicted: no terminal to ask on, or the user said no."""


def stdin_is_tty() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


def ask(candidates: list[Candidate]) -> tuple[list[Candidate], str]:
    """Prompt on stderr (stdout may carry -o json); returns the candidates the user confirmed and how:
    "all" or "select" (pod by pod)."""
    if not stdin_is_tty():
        raise NotConfirmed("standard input is not a terminal: pass --yes to evict, or --dry-run=client to preview")
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
    chosen = []
    for i, c in enumerate(candidates, 1):
        p = c.pod
        reply = click.prompt(
            f"[{i}/{n}] evict {p.namespace}/{p.name} on {p.node_name} ({c.plugin}: {c.reason})? [y]es, [n]o, [q]uit",
            type=click.Choice(["y", "yes", "n", "no", "q", "quit"], case_sensitive=False),
            show_choices=False, err=True,
        ).lower()
        if reply in ("q", "quit"):
            break
        if reply in ("y", "yes"):
            chosen.append(c)
    if not chosen:
        raise NotConfirmed("no pod selected: nothing was evicted")
    return chosen, "select"
