"""MkDocs hook: the Reference pages made from the code at build time, so they cannot disagree with the tool.

reference/commands/NAME.md, one page per command click has (groups walked: `explain node` is explain-node.md),
starts with the command's synopsis, then its help, its options under the headings `--help` shows with their
defaults, its examples and the exit codes it can end with; reference/commands.md links them and lists every code.
Each has a committed stand-in, which the page made here replaces (`python docs/hooks/reference.py` writes them).
reference/plugins.md lists the in-tree plugins as `kubectl desched plugins -o json` does (ui/plugins_table.rows),
with each plugin's extension points, args and defaults, flags, and the optional hooks it answers.
reference/model.md lists the model types a plugin reads, every field with its type and the docstring written under
it in the class body, and every property and method with its docstring (one missing fails the build).
Only in-tree plugins are listed, so the pages do not depend on what else is installed where the site is built."""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from mkdocs.structure.files import File, Files

from kubectl_desched import errors
from kubectl_desched.cli.help import option_sections
from kubectl_desched.cli.main import cli
from kubectl_desched.framework.types import BalancePlugin, Plugin
from kubectl_desched.model import objects
from kubectl_desched.model.state import ClusterState
from kubectl_desched.plugins import in_tree_registry
from kubectl_desched.ui import plugins_table as pluginstable

REGISTRY_KEY = "kubectl_desched.registry"  # where cli.plugin_flags.registry() keeps the loaded plugins


def _cell(text: str) -> str:
    """Text for a table cell: a pipe escaped outside backticks, and only there (see _code)."""
    parts = text.replace("\n", " ").split("`")
    return "`".join(part if inside else part.replace("|", "\\|").replace("<", "&lt;")
                    for part, inside in zip(parts, itertools.cycle((False, True)), strict=False))


def _code(text: str) -> str:
    """Text as inline code in a table cell: Python-Markdown's tables do not split a row at a pipe inside backticks,
    and would show an escape there as it is."""
    return f"`{text.replace(chr(10), ' ')}`"


def _commands(group: click.Group, parent: click.Context, path: str) -> list[tuple[str, click.Command, click.Context]]:
    found = []
    for name in sorted(group.list_commands(parent)):
        cmd = group.get_command(parent, name)
        if cmd is None or cmd.hidden:
            continue
        ctx = click.Context(cmd, info_name=name, parent=parent)
        if isinstance(cmd, click.Group):
            found += _commands(cmd, ctx, f"{path} {name}")
        else:
            found.append((f"{path} {name}", cmd, ctx))
    return found


PROG = "kubectl desched"
COMMANDS_DIR = "reference/commands"  # one page per command, beside the index reference/commands.md

# The exit codes of errors.TABLE each command can end with. A command that asks before it evicts can end not
# confirmed; one that reads a cluster or a snapshot can be interrupted; only apply checks a plan and leaves out what
# went stale. A command missing here fails the build, so a new command says its codes.
_ASKS = (errors.DONE, errors.ERROR, errors.USAGE, errors.NOT_CONFIRMED, errors.INTERRUPTED)
_READS = (errors.DONE, errors.ERROR, errors.USAGE, errors.INTERRUPTED)
_PRINTS = (errors.DONE, errors.USAGE)
EXIT_CODES: dict[str, tuple[int, ...]] = {
    "balance": _ASKS, "deschedule": _ASKS, "run": _ASKS,
    "apply": (errors.DONE, errors.ERROR, errors.USAGE, errors.NOT_CONFIRMED, errors.STALE, errors.INTERRUPTED),
    "explain node": _READS, "explain pod": _READS,
    "report": _PRINTS, "plugins": _PRINTS, "version": _PRINTS, "completion": _PRINTS}
_MEANING = dict(errors.TABLE)


def all_commands() -> list[tuple[str, click.Command, click.Context]]:
    """(name without the program, command, context) of every command click has, groups walked, in --help's order.
    The context shows every option's default, and carries the in-tree plugins, whose flags balance and the others
    list under *Plugins*."""
    root = click.Context(cli, info_name=PROG, show_default=True, **cli.context_settings)
    root.meta[REGISTRY_KEY] = in_tree_registry()
    return [(path.removeprefix(f"{PROG} "), cmd, ctx) for path, cmd, ctx in _commands(cli, root, PROG)]


def command_uri(name: str) -> str:
    return f"{COMMANDS_DIR}/{name.replace(' ', '-')}.md"


def synopsis(name: str, cmd: click.Command, ctx: click.Context) -> str:
    """The usage line, as `--help` prints it first."""
    return " ".join([PROG, name, *cmd.collect_usage_pieces(ctx)])


def _said_help(cmd: click.Command) -> list[str]:
    """The command's help, one line per paragraph."""
    return [" ".join(part.split()) for part in inspect.cleandoc(cmd.help or "").split("\n\n") if part.strip()]


def _top(name: str, cmd: click.Command, ctx: click.Context) -> list[str]:
    return [f"# {PROG} {name}", "", "```text", synopsis(name, cmd, ctx), "```", ""]


def command_page(name: str, cmd: click.Command, ctx: click.Context) -> str:
    """The synopsis, what the command does, its options under the headings --help shows (each with its default),
    the examples --help ends with, and the exit codes it can end with."""
    if name not in EXIT_CODES:
        raise ValueError(f"`{PROG} {name}` has no exit codes in EXIT_CODES of docs/hooks/reference.py")
    out = _top(name, cmd, ctx)
    for paragraph in _said_help(cmd):
        out += [paragraph, ""]
    for heading, rows in option_sections(cmd, ctx).items():
        out += [f"## {heading}", "", "| flag | meaning |", "|---|---|"]
        out += [f"| {_code(flag)} | {_cell(meaning)} |" for flag, meaning in rows]
        out.append("")
    examples = getattr(cmd, "examples", [])
    if examples:
        out += ["## Examples", "", "```sh"]
        for comment, line in examples:
            out += [f"# {comment}", line]
        out += ["```", ""]
    out += ["## Exit codes", "", "| code | meaning |", "|---|---|"]
    out += [f"| `{code}` | {_cell(_MEANING[code])} |" for code in EXIT_CODES[name]]
    out += ["", "Every command ends with one of the codes of "
            "[Evicting safely](../../guide/evicting-safely.md#exit-codes); an error is one line on stderr starting "
            "with `error:`. [All the commands](../commands.md).", ""]
    return "\n".join(out)


def command_stand_in(name: str, cmd: click.Command, ctx: click.Context) -> str:
    """What is committed at the page's path: its synopsis, and where to read the rest."""
    return "\n".join([
        *_top(name, cmd, ctx),
        "This page is made from the command when the docs site is built (by `docs/hooks/reference.py`): what it",
        "does, every option under the headings `--help` shows with its default, the examples and the exit codes.",
        f"What is committed here only stands in for it. In a checkout, `{PROG} {name} --help` prints the same,",
        "and [Commands](../commands.md) lists every command.", ""])


def _index_rows(made: list[tuple[str, click.Command, click.Context]]) -> list[str]:
    rows = ["| command | what it does |", "|---|---|"]
    for name, cmd, ctx in made:
        link = command_uri(name).removeprefix("reference/")
        rows.append(f"| [{_code(synopsis(name, cmd, ctx))}]({link}) | {_cell(cmd.get_short_help_str(300))} |")
    return rows


def commands_page() -> str:
    made = all_commands()
    out = ["# Commands", "",
           "Made from the commands themselves when the site is built: one page per command, each starting with its",
           "synopsis, then what it does, every flag with its help and default under the headings `--help` shows,",
           "the examples and the exit codes. Installed out-of-tree plugins add their own flags under *Plugins* (the",
           "example plugin adds `--drain-taints` and `--include-tolerating`). Every command takes `-h`, `--help`.",
           "", *_index_rows(made), "", "## Exit codes", "",
           "The same for every command; each command's page lists the ones it can end with.", "",
           "| code | meaning |", "|---|---|"]
    out += [f"| `{code}` | {_cell(meaning)} |" for code, meaning in errors.TABLE]
    out += [""]
    return "\n".join(out)


def commands_stand_in() -> str:
    """What is committed at reference/commands.md: the commands, each linked to its own stand-in."""
    return "\n".join([
        "# Commands", "",
        "This page is made from the commands themselves when the docs site is built (by `docs/hooks/reference.py`):",
        "one page per command, starting with its synopsis, then what it does, every flag with its help and default",
        "under the headings `--help` shows, the examples and the exit codes. What is committed here only stands in",
        f"for it. In a checkout, `{PROG} COMMAND --help` prints the same for one command, and",
        "`.venv/bin/mkdocs serve` shows the whole site.", "",
        *(f"- [`{synopsis(name, cmd, ctx)}`]({command_uri(name).removeprefix('reference/')})"
          for name, cmd, ctx in all_commands()), ""])


def stand_ins() -> dict[str, str]:
    """Path under docs/ -> the stand-in committed there for a generated command page (`python
    docs/hooks/reference.py` writes them; tests/unit/test_docs_reference.py checks they are the ones committed)."""
    found = {"reference/commands.md": commands_stand_in()}
    found.update({command_uri(name): command_stand_in(name, cmd, ctx) for name, cmd, ctx in all_commands()})
    return found


def generated_pages() -> dict[str, Callable[[], str]]:
    """Path under docs/ -> what makes the page at build time."""
    pages: dict[str, Callable[[], str]] = {"reference/commands.md": commands_page, "reference/plugins.md": plugins_page,
                                           "reference/model.md": model_page}
    for name, cmd, ctx in all_commands():
        pages[command_uri(name)] = functools.partial(command_page, name, cmd, ctx)
    return pages


def _hooks(plugin: type[Plugin]) -> list[str]:
    """The optional hooks of framework/types.py that this plugin answers itself (not the base class's default)."""
    said = []
    if plugin.relocates and not issubclass(plugin, BalancePlugin):
        said.append("`relocates`")
    for hook in ("reads_one_node", "required_kinds", "estimate_node", "nearby_args", "landing_problem"):
        if inspect.getattr_static(plugin, hook, None) is not inspect.getattr_static(Plugin, hook):
            said.append(f"`{hook}`")
    return said


def _description(plugin: type[Plugin], short: str) -> str:
    doc = inspect.cleandoc(plugin.__doc__ or "")
    return " ".join(doc.split("\n\n")[0].split()) if doc else short


def plugins_page() -> str:
    registry = in_tree_registry()
    rows = {r["name"]: r for r in pluginstable.rows(registry)}
    out = ["# Plugins", "",
           "Made from the plugin registry when the site is built, as `kubectl desched plugins -o json` reports each",
           "in-tree plugin: its extension points, its flags, the args a run from flags uses, and the args a policy",
           "that names the plugin without args gets. Optional hooks are the ones of",
           "[Writing a plugin](../contributing/writing-a-plugin.md#optional-hooks) the plugin answers itself.",
           "`kubectl desched plugins` lists the out-of-tree plugins installed beside it too.", "",
           "| plugin | extension points |", "|---|---|"]
    out += [f"| [{name}](#{name.lower()}) | {', '.join(r['extensionPoints'])} |" for name, r in rows.items()]
    out.append("")
    for spec in registry:
        row = rows[spec.name]
        plugin: Any = spec.factory
        out += [f"## {spec.name}", "", _description(plugin, row["description"]), "",
                f"- extension points: {', '.join(row['extensionPoints'])}",
                f"- flags: {', '.join(f'`{f}`' for f in row['flags']) or 'none'}",
                f"- optional hooks: {', '.join(_hooks(plugin)) or 'none'}", ""]
        if not row["defaultArgs"]:
            out += ["No args.", ""]
            continue
        out += ["| arg | from flags | in a policy |", "|---|---|---|"]
        for key, value in row["flagDefaultArgs"].items():
            policy = row["defaultArgs"].get(key)
            out.append(f"| `{key}` | {_code(pluginstable.flow(value))} | "
                       f"{'same' if policy == value else _code(pluginstable.flow(policy))} |")
        out += ["", "<details><summary>as JSON (defaultArgs)</summary>", "", "```json",
                json.dumps(row["defaultArgs"], indent=2), "```", "", "</details>", ""]
    return "\n".join(out)


# The types of the model page, in its order: what a plugin is handed first, then what those hold.
MODEL_TYPES: tuple[type, ...] = (
    objects.Pod, objects.Node, objects.PodDisruptionBudget, ClusterState, objects.OwnerRef, objects.ContainerStatus,
    objects.PodCondition, objects.Taint, objects.Toleration, objects.Namespace, objects.PriorityClass,
    objects.PersistentVolumeClaim, objects.NodeMetrics, objects.NodeMetric, objects.PodMetrics)
# The metadata fields of an API kind say what they are without a docstring of their own.
_PLAIN = {"name": "metadata.name.", "namespace": "metadata.namespace.", "uid": "metadata.uid.",
          "labels": "metadata.labels.", "annotations": "metadata.annotations."}
_KINDS = {objects.Pod, objects.Node, objects.PodDisruptionBudget, objects.Namespace, objects.PriorityClass,
          objects.PersistentVolumeClaim, objects.NodeMetrics, objects.NodeMetric, objects.PodMetrics}


def _said(doc: str | None) -> str:
    return " ".join(inspect.cleandoc(doc or "").split("\n\n")[0].split())


def model_fields(cls: type) -> list[tuple[str, str, str]]:
    """(name, type, doc) of each attribute annotated in the class body, the doc being the string under it."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
    assert isinstance(body, ast.ClassDef)
    found = []
    for stmt, after in zip(body.body, [*body.body[1:], None], strict=True):
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            doc = after.value.value if (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                                        and isinstance(after.value.value, str)) else ""
            name = stmt.target.id
            said = _said(doc) or (_PLAIN.get(name, "") if cls in _KINDS else "")
            if not said:
                raise ValueError(f"{cls.__name__}.{name} has no docstring for the model reference")
            found.append((name, ast.unparse(stmt.annotation), said))
    return found


def model_members(cls: type) -> list[tuple[str, str]]:
    """(how it is called, doc) of each public property and method defined in the class body."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
    assert isinstance(body, ast.ClassDef)
    found: dict[str, tuple[str, str]] = {}
    for stmt in body.body:
        if not isinstance(stmt, ast.FunctionDef) or stmt.name.startswith("_") or stmt.name in found:
            continue
        doc = _said(ast.get_docstring(stmt))
        if not doc:
            raise ValueError(f"{cls.__name__}.{stmt.name} has no docstring for the model reference")
        decorators = {ast.unparse(d) for d in stmt.decorator_list}
        params = [a.arg for a in stmt.args.args[1:]]
        call = stmt.name if "property" in decorators else f"{stmt.name}({', '.join(params)})"
        found[stmt.name] = (call, doc)
    return list(found.values())


def model_page() -> str:
    out = ["# Model types", "",
           "What a plugin reads: the nodes its `deschedule` or `balance` is given, and `self.handle.state` with the",
           "nodes, pods and PodDisruptionBudgets of the run (and in `state.extra`, the other kinds it asked for).",
           "Every type is imported from `kubectl_desched.framework`. They are read-only: equal values are shared",
           "between objects, so never change one. In a test, `kubectl_desched.testing`'s `pod()`, `node()` and",
           "`pdb()` take an argument for every field",
           "([Writing a plugin](../contributing/writing-a-plugin.md#4-test-it)). Made from the code when the site",
           "is built.", ""]
    out += [" · ".join(f"[{cls.__name__}](#{cls.__name__.lower()})" for cls in MODEL_TYPES), ""]
    for cls in MODEL_TYPES:
        out += [f"## {cls.__name__}", "", _said(cls.__doc__), "", "| field | type | what it holds |", "|---|---|---|"]
        out += [f"| `{name}` | {_code(kind)} | {_cell(doc)} |" for name, kind, doc in model_fields(cls)]
        members = model_members(cls)
        if members:
            out += ["", "| property or method | what it answers |", "|---|---|"]
            out += [f"| {_code(call)} | {_cell(doc)} |" for call, doc in members]
        out.append("")
    return "\n".join(out)


def on_files(files: Files, config: Any) -> Files:
    for uri, make in generated_pages().items():
        stub = files.get_file_from_path(uri)  # the committed page, so links to it resolve in the repository too
        if stub is not None:
            files.remove(stub)
        files.append(File.generated(config, uri, content=make()))
    return files


def write_stand_ins(docs: Path) -> list[str]:
    """Write the command pages' stand-ins under docs/ and remove those of commands that are gone; the paths changed."""
    wanted = stand_ins()
    changed = []
    for uri, text in wanted.items():
        path = docs / uri
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            changed.append(uri)
    for path in sorted((docs / COMMANDS_DIR).glob("*.md")):
        uri = path.relative_to(docs).as_posix()
        if uri not in wanted:
            path.unlink()
            changed.append(uri)
    return changed


if __name__ == "__main__":  # after adding or renaming a command: .venv/bin/python docs/hooks/reference.py
    for written in write_stand_ins(Path(__file__).resolve().parents[1]):
        print(f"docs/{written}")
