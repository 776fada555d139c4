"""MkDocs hook: the Reference pages made from the code at build time, so they cannot disagree with the tool.

reference/commands.md walks the click commands as `--help` lays them out (headings, defaults, examples);
reference/plugins.md lists the in-tree plugins as `kubectl desched plugins -o json` does (ui/plugins_table.rows),
with each plugin's extension points, args and defaults, flags, and the optional hooks it answers.
Only in-tree plugins are listed, so the pages do not depend on what else is installed where the site is built."""

from __future__ import annotations

import inspect
import json
from typing import Any

import click
from mkdocs.structure.files import File, Files

from kubectl_desched.cli.help import option_sections
from kubectl_desched.cli.main import cli
from kubectl_desched.framework.types import BalancePlugin, Plugin
from kubectl_desched.plugins import in_tree_registry
from kubectl_desched.ui import plugins_table as pluginstable

REGISTRY_KEY = "kubectl_desched.registry"  # where cli.plugin_flags.registry() keeps the loaded plugins


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")


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
            out += [f"| `{_cell(flag)}` | {_cell(meaning)} |" for flag, meaning in rows]
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
            out.append(f"| `{key}` | `{_cell(pluginstable.flow(value))}` | "
                       f"{'same' if policy == value else '`' + _cell(pluginstable.flow(policy)) + '`'} |")
        out += ["", "<details><summary>as JSON (defaultArgs)</summary>", "", "```json",
                json.dumps(row["defaultArgs"], indent=2), "```", "", "</details>", ""]
    return "\n".join(out)


def on_files(files: Files, config: Any) -> Files:
    for uri, make in (("reference/commands.md", commands_page), ("reference/plugins.md", plugins_page)):
        stub = files.get_file_from_path(uri)  # the committed page, so links to it resolve in the repository too
        if stub is not None:
            files.remove(stub)
        files.append(File.generated(config, uri, content=make()))
    return files
