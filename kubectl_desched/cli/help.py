"""--help as kubectl lays it out: a command lists only its own flags, under headings, then examples."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

CLUSTER_ACCESS = "Cluster access"
SCOPE = "Scope"
PLUGINS = "Plugins"
EVICTOR_FILTERS = "Evictor filters"
ACTING = "Acting"
OUTPUT = "Output"
OTHER = "Options"
HEADINGS = (CLUSTER_ACCESS, SCOPE, PLUGINS, EVICTOR_FILTERS, ACTING, OUTPUT, OTHER)


class GroupedOption(click.Option):
    """An option that knows the heading it is listed under."""

    def __init__(self, *decls: str, heading: str = OTHER, **attrs: Any) -> None:
        super().__init__(decls, **attrs)
        self.heading = heading


def option(heading: str, *decls: str, **attrs: Any) -> GroupedOption:
    return GroupedOption(*decls, heading=heading, **attrs)


class Command(click.Command):
    """A command whose help groups its options by heading and ends with examples (comment, command line).
    `extra_params` adds options known only when the command runs (the installed plugins' flags)."""

    def __init__(self, *args: Any, examples: Sequence[tuple[str, str]] = (),
                 extra_params: Callable[[click.Context], list[click.Parameter]] | None = None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.examples = list(examples)
        self.extra_params = extra_params

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        params = [*self.params, *(self.extra_params(ctx) if self.extra_params else [])]
        help_option = self.get_help_option(ctx)
        return [*params, help_option] if help_option is not None else params

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        for heading, rows in option_sections(self, ctx).items():
            with formatter.section(heading):
                formatter.write_dl(rows)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_epilog(ctx, formatter)
        if self.examples:
            formatter.write_paragraph()
            formatter.write_text("Examples:")
            for comment, line in self.examples:
                formatter.write(f"  # {comment}\n  {line}\n\n")


def option_sections(cmd: click.Command, ctx: click.Context) -> dict[str, list[tuple[str, str]]]:
    """Each heading that has options, in --help's order, with their (flags, help) records; the docs' generated
    Commands page lists the same."""
    sections: dict[str, list[tuple[str, str]]] = {h: [] for h in HEADINGS}
    for param in cmd.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is not None:
            sections[getattr(param, "heading", OTHER)].append(record)
    return {heading: rows for heading, rows in sections.items() if rows}


def command(group: click.Group, name: str | None = None, *, examples: Sequence[tuple[str, str]] = (),
            **attrs: Any) -> Callable[[Callable[..., Any]], Command]:
    """group.command with headings and examples; takes the plugin flags a plugins group left on the callback."""
    def decorate(f: Callable[..., Any]) -> Command:
        extra = f.__dict__.get("extra_params")
        made = group.command(name, cls=Command, examples=examples, extra_params=extra, **attrs)(f)
        assert isinstance(made, Command)
        return made
    return decorate
