"""The generated Reference pages (docs/hooks/reference.py) as the site builds them: the model page lists every
public field, property and method of every type a plugin reads, so a field added to the model is documented or
the build fails; every command click has its own page, starting with the synopsis its --help prints, with its
options and exit codes, and a committed stand-in."""

from __future__ import annotations

import importlib.util
import inspect
import re
from pathlib import Path
from types import ModuleType

import click
import pytest
from click.testing import CliRunner

import kubectl_desched.framework as face
from kubectl_desched import errors
from kubectl_desched.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference_hook", ROOT / "docs" / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOK = _hook()


def _sections(page: str) -> dict[str, str]:
    parts = re.split(r"^## (\w+)$", page, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _public(cls: type) -> set[str]:
    fields = set(getattr(cls, "__struct_fields__", ())) or set(inspect.get_annotations(cls))
    members = {n for n, v in vars(cls).items() if not n.startswith("_") and (callable(v) or isinstance(v, property))}
    return fields | members


def test_the_model_page_lists_every_public_field_of_every_model_type() -> None:
    sections = _sections(HOOK.model_page())
    assert list(sections) == [cls.__name__ for cls in HOOK.MODEL_TYPES]
    for cls in HOOK.MODEL_TYPES:
        listed = set(re.findall(r"^\| `(\w+)", sections[cls.__name__], flags=re.M))
        assert listed == _public(cls), cls.__name__
        for row in re.findall(r"^\| `.*", sections[cls.__name__], flags=re.M):
            assert not row.rstrip().endswith("|  |"), f"{cls.__name__}: a row says nothing: {row}"


def test_the_model_page_covers_the_model_types_of_the_face() -> None:
    model = {name for name in face.__all__ if face._MODULE_OF[name].startswith("kubectl_desched.model.")} - {"Matcher"}
    assert model == {cls.__name__ for cls in HOOK.MODEL_TYPES}


def test_a_field_without_a_docstring_fails_the_build() -> None:
    class Bare:
        """A type."""

        count: int

    with pytest.raises(ValueError, match=r"Bare\.count has no docstring"):
        HOOK.model_fields(Bare)


def _every_command(group: click.Group, ctx: click.Context, words: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None
        if isinstance(cmd, click.Group):
            found += _every_command(cmd, click.Context(cmd, info_name=name, parent=ctx), (*words, name))
        elif not cmd.hidden:
            found.append((*words, name))
    return found


COMMANDS = _every_command(cli, click.Context(cli, info_name="kubectl desched"))
PAGES = HOOK.generated_pages()


def test_every_command_click_has_its_own_page() -> None:
    assert ("explain", "node") in COMMANDS and ("version",) in COMMANDS
    command_pages = {uri for uri in PAGES if uri.startswith("reference/commands/")}
    assert command_pages == {f"reference/commands/{'-'.join(words)}.md" for words in COMMANDS}
    index = PAGES["reference/commands.md"]()
    for uri in command_pages:  # the index links each, with its synopsis
        assert f"]({uri.removeprefix('reference/')}) |" in index, uri


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_each_command_page_starts_with_the_synopsis_help_prints(words: tuple[str, ...]) -> None:
    usage = CliRunner().invoke(cli, [*words, "--help"], prog_name="kubectl desched").output.splitlines()[0]
    assert usage.startswith("Usage: kubectl desched ")
    page = PAGES[f"reference/commands/{'-'.join(words)}.md"]()
    title, blank, fence, synopsis, close, *_ = page.splitlines()
    assert (title, blank, fence, synopsis, close) == (
        f"# kubectl desched {' '.join(words)}", "", "```text", usage.removeprefix("Usage: "), "```")


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_each_command_page_lists_its_options_and_exit_codes(words: tuple[str, ...]) -> None:
    page = PAGES[f"reference/commands/{'-'.join(words)}.md"]()
    # `-h, --help` as the CLI's context gives it; click keeps a command's help option from the first context that
    # asked, and a test that invokes a subcommand alone gives it `--help` only
    assert re.search(r"^\| `(-h, )?--help` \| Show this message and exit\. \|$", page, flags=re.M)
    codes = re.findall(r"^\| `(\d+)` \| (.*) \|$", page.split("\n## Exit codes\n", 1)[1], flags=re.M)
    table = {str(code): meaning for code, meaning in errors.TABLE}
    assert codes and all(table[code] == meaning for code, meaning in codes)
    assert {"0", "2"} <= {code for code, _ in codes}


def test_the_defaults_the_help_leaves_out_are_on_the_pages() -> None:
    assert "| `-o, --output [text|json]` | [default: text] |" in PAGES["reference/commands/version.md"]()
    balance = PAGES["reference/commands/balance.md"]()
    assert "## Cluster access\n" in balance and "## Plugins\n" in balance and "## Acting\n" in balance
    assert "`--max-in-flight N` | Evictions sent at the same time.  [default: 1] |" in balance


def test_a_command_without_its_exit_codes_fails_the_build() -> None:
    quiet = click.Command("quiet", help="Says nothing.")
    with pytest.raises(ValueError, match="`kubectl desched quiet` has no exit codes"):
        HOOK.command_page("quiet", quiet, click.Context(quiet, info_name="quiet"))


def test_the_committed_stand_ins_are_the_ones_the_hook_replaces() -> None:
    """Each generated command page has its stand-in committed, so links to it resolve on the repository's view too
    (tests/unit/test_markdown_links.py); `.venv/bin/python docs/hooks/reference.py` writes them."""
    wanted = HOOK.stand_ins()
    committed = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs/reference/commands").glob("*.md")}
    assert committed | {"reference/commands.md"} == set(wanted)
    for uri, text in wanted.items():
        assert (ROOT / "docs" / uri).read_text(encoding="utf-8") == text, f"docs/{uri}: run docs/hooks/reference.py"
        if uri != "reference/commands.md":  # the title and synopsis, as on the site
            assert text.startswith(PAGES[uri]().split("\n```\n", 1)[0] + "\n```\n"), uri


def test_the_nav_lists_every_command_page() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for uri in PAGES:
        assert f" {uri}\n" in nav, uri
