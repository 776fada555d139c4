"""Long output on a terminal goes through a pager, as git does: $PAGER, else `less` with LESS=FRX (quit at once when
it fits, keep colours, leave the text on the screen), never when stdout is a pipe or a file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import click


def _command() -> str | None:
    cmd = os.environ.get("KUBECTL_DESCHED_PAGER", os.environ.get("PAGER"))
    if cmd is None:
        return "less" if shutil.which("less") else None
    return None if cmd.strip() in ("", "cat") else cmd


def show(text: str, enabled: bool = True) -> None:
    """Print `text` on stdout; through the pager when stdout and stdin are a terminal and it is taller than it."""
    rows = shutil.get_terminal_size().lines
    cmd = _command() if enabled and sys.stdout.isatty() and sys.stdin.isatty() else None
    if cmd is None or text.count("\n") + 1 < rows:
        click.echo(text)
        return
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    sys.stdout.flush()
    try:
        proc = subprocess.Popen(cmd, shell=True, stdin=subprocess.PIPE, env=env)  # a shell command, as git runs it
    except OSError:
        click.echo(text)
        return
    assert proc.stdin is not None
    try:
        proc.stdin.write(text.encode() + b"\n")
        proc.stdin.close()
    except BrokenPipeError:  # the user quit the pager before the end
        pass
    if proc.wait() == 127:  # the shell did not find it: the text must still be seen
        click.echo(text)
