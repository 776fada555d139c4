"""Shell completion entry points: `kubectl_complete-desched`, which kubectl (>= 1.26) runs for `kubectl desched
<TAB>`, and the scripts of `kubectl desched completion bash|zsh|fish` for the standalone `kubectl-desched`. The
values themselves come from completion.py, through the options that name it."""

from __future__ import annotations

import sys

import click

from kubectl_desched.cli.completers import COMPLETE_VAR, DEFAULT, NO_FILE_COMP, PROG


def kubectl_main(cli: click.Group) -> None:
    """`kubectl_complete-desched ARGS... WORD`: what kubectl runs to complete `kubectl desched ARGS... WORD`. Prints
    cobra's __complete answer: one candidate per line (value, tab, help), then `:DIRECTIVE`."""
    from click.shell_completion import ShellComplete

    args = sys.argv[1:]
    if args[:1] == ["__complete"]:  # the cobra form, as some wrappers call it
        args = args[1:]
    incomplete = args[-1] if args else ""
    try:
        items = ShellComplete(cli, {}, PROG, COMPLETE_VAR).get_completions(args[:-1], incomplete)
    except Exception:
        print(":1")  # ShellCompDirectiveError: kubectl then offers nothing
        return
    directive = NO_FILE_COMP
    for item in items:
        if item.type in ("file", "dir"):
            directive = DEFAULT  # let the shell complete file names
            continue
        print(f"{item.value}\t{item.help}" if item.help else item.value)
    print(f":{directive}")


def script(cli: click.Group, shell: str) -> str:
    """The completion script for the standalone `kubectl-desched`, as click writes it for that program name."""
    from click.shell_completion import get_completion_class

    kind = get_completion_class(shell)
    if kind is None:
        raise click.UsageError(f"unknown shell {shell!r}: bash, zsh or fish")
    return kind(cli, {}, PROG, COMPLETE_VAR).source()
