"""MkDocs hook: the Reference pages made from the code at build time, so they cannot disagree with the tool.

reference/commands.md walks the click commands as `--help` lays them out (headings, defaults, examples);
reference/plugins.md lists the in-tree plugins as `kubectl desched plugins -o json` does (ui/plugins_table.rows),
with each plugin's extension points, args and defaults, flags, and the optional hooks it answers.
reference/model.md lists the model types a plugin reads, every field with its type and the docstring written under
it in the class body, and every property and method with its docstring (one missing fails the build).
Only in-tree plugins are listed, so the pages do not depend on what else is installed where the site is built."""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import textwrap
from typing import Any

import click
from mkdocs.structure.files import File, Files

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


def commands_page() -> str:
    root = click.Context(cli, info_name="kubectl desched")
    root.meta[REGISTRY_KEY] = in_tree_registry()
    out = ["# Commands", "",
           "Made from the commands themselves when the site is built: every command, its arguments and every flag",
           "with its help and default, under the headings `--help` shows. Installed out-of-tree plugins add their",
           "own flags under *Plugins* (the example plugin adds `--drain-taints` and `--include-tolerating`).", ""]
    for path, cmd, ctx in _commands(cli, root, "kubectl desched"):
        out += [f"## {path}", "", (cmd.help or "").strip().replace("\n", " "), "", "```text",
                " ".join(cmd.collect_usage_pieces(ctx)).join((f"{path} ", "")), "```", ""]
        for heading, rows in option_sections(cmd, ctx).items():
            out += [f"**{heading}**", "", "| flag | meaning |", "|---|---|"]
            out += [f"| {_code(flag)} | {_cell(meaning)} |" for flag, meaning in rows]
            out.append("")
        examples = getattr(cmd, "examples", [])
        if examples:
            out += ["Examples:", "", "```sh"]
            for comment, line in examples:
                out += [f"# {comment}", line]
            out += ["```", ""]
    return "\n".join(out)


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
    for uri, make in (("reference/commands.md", commands_page), ("reference/plugins.md", plugins_page),
                      ("reference/model.md", model_page)):
        stub = files.get_file_from_path(uri)  # the committed page, so links to it resolve in the repository too
        if stub is not None:
            files.remove(stub)
        files.append(File.generated(config, uri, content=make()))
    return files
