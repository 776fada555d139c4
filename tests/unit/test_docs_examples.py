"""The examples in README.md and docs/ are run, so a changed output fails here until the docs say it.

A fenced block whose first line starts with `$ ` is a session: each `$ kubectl desched ...` (or `kubectl-desched`)
line is run from the repository's top and what it prints (stdout and stderr, in the order written) must equal the
lines after it. A line `...` alone stands for any number of lines. A session that needs a live cluster is marked
with `<!-- example: live -->` on the line before its fence and skipped here (the live tests cover what it shows).
Every ```python block of a page is run, in order, in one namespace per page, and the `test_*` functions the page
defines are called: the plugin author's guide is tested this way. And every Python file a page names in backticks
must exist, so a moved module cannot leave the docs pointing at nothing."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIVE = "<!-- example: live -->"
FENCE = re.compile(r"^(```|~~~)\s*([\w+-]*)\s*$")


@dataclass
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    lang: str
    body: list[str]
    live: bool


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, fence, lang = i, m.group(1), m.group(2)
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        before = next((ln.strip() for ln in reversed(lines[:start]) if ln.strip()), "")
        found.append(Block(str(path.relative_to(ROOT)), start + 1, lang, body, before == LIVE))
        i += 1
    return found


def sessions() -> list[Block]:
    return [b for p in pages() for b in blocks(p) if b.body and b.body[0].startswith("$ ")]


def python_pages() -> list[str]:
    return sorted({b.page for p in pages() for b in blocks(p) if b.lang == "python"})


def commands(block: Block) -> list[tuple[str, list[str]]]:
    """Each `$ ` line with the lines it should print."""
    said: list[tuple[str, list[str]]] = []
    for line in block.body:
        if line.startswith("$ "):
            said.append((line[2:], []))
        else:
            said[-1][1].append(line)
    return said


def matches(expected: list[str], got: list[str]) -> bool:
    """Line by line, right-trimmed; `...` matches any run of lines (also none)."""
    expected = [e.rstrip() for e in expected]
    got = [g.rstrip() for g in got]
    while expected and not expected[-1]:
        expected.pop()
    while got and not got[-1]:
        got.pop()

    def at(e: int, g: int) -> bool:
        if e == len(expected):
            return g == len(got)
        if expected[e] == "...":
            return any(at(e + 1, k) for k in range(g, len(got) + 1))
        return g < len(got) and expected[e] == got[g] and at(e + 1, g + 1)

    return at(0, 0)


def run(command: str, tmp: Path) -> list[str]:
    argv = shlex.split(command)
    if argv[:2] == ["kubectl", "desched"]:
        argv = argv[2:]
    elif argv[:1] == ["kubectl-desched"]:
        argv = argv[1:]
    else:
        raise AssertionError(f"an example runs kubectl desched or kubectl-desched, not {command!r}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBECTL_DESCHED", "KUBECONFIG", "PAGER", "LESS"))}
    env.update(NO_COLOR="1", PYTHONUNBUFFERED="1", TERM="dumb", HOME=str(tmp), KUBECONFIG=str(tmp / "no-kubeconfig"),
               PYTHONIOENCODING="utf-8")  # as a UTF-8 terminal shows it (--bars draws blocks), whatever the locale
    done = subprocess.run([sys.executable, "-m", "kubectl_desched", *argv], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, encoding="utf-8", timeout=120,
                          check=False)
    return done.stdout.splitlines()


@pytest.mark.parametrize("block", sessions(), ids=lambda b: f"{b.page}:{b.line}")
def test_session_prints_what_the_docs_show(block: Block, tmp_path: Path) -> None:
    if block.live:
        pytest.skip("needs a live cluster (marked live)")
    for command, expected in commands(block):
        got = run(command, tmp_path)
        assert matches(expected, got), (
            f"{block.page}:{block.line}: `{command}` printed something else; update the example.\n"
            "--- the docs show\n" + "\n".join(expected) + "\n--- it printed now\n" + "\n".join(got))


@pytest.mark.parametrize("page", python_pages())
def test_python_snippets_run(page: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType(f"docs_example_{Path(page).stem.replace('-', '_')}")
    monkeypatch.setitem(sys.modules, module.__name__, module)  # dataclasses look their module up
    namespace = module.__dict__
    for block in blocks(ROOT / page):
        if block.lang != "python":
            continue
        before = set(namespace)
        code = compile("\n" * block.line + "\n".join(block.body), page, "exec")  # tracebacks name the page's line
        exec(code, namespace)
        for name in sorted(set(namespace) - before):
            if name.startswith("test_") and callable(namespace[name]):
                namespace[name]()


def test_a_snippet_that_imports_an_example_plugin_says_to_install_it() -> None:
    """A reader who runs a snippet that imports plugins/<dist>'s package needs that distribution installed: the page
    says how before the block."""
    packages = {p.parent.name: p.parent.parent.relative_to(ROOT) for p in ROOT.glob("plugins/*/*/__init__.py")}
    missing = []
    for page in python_pages():
        text = (ROOT / page).read_text(encoding="utf-8").splitlines()
        for block in blocks(ROOT / page):
            imported = {m.group(1) for line in block.body if (m := re.match(r"\s*(?:from|import) (\w+)", line))}
            for package in sorted(imported & set(packages)):
                before = "\n".join(text[:block.line])
                if f"pip install -e {packages[package]}" not in before:
                    missing.append(f"{page}:{block.line}: imports {package}; say `pip install -e {packages[package]}`")
    assert not missing, "\n".join(missing)


def python_files() -> set[str]:
    skip = {".venv", "site", "build", "dist", ".git", "__pycache__"}
    return {str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py") if not skip & set(p.relative_to(ROOT).parts)}


def test_every_python_file_the_docs_name_exists() -> None:
    files = python_files()
    named = re.compile(r"`([\w./-]+\.py)`")
    missing = []
    for page in pages():
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for m in named.finditer(line):
                path = m.group(1)
                if not any(f == path or f.endswith("/" + path) for f in files):
                    missing.append(f"{page.relative_to(ROOT)}:{number}: {path}")
    assert not missing, "pages name Python files that do not exist:\n" + "\n".join(missing)


def test_the_collector_finds_the_readme_demo_and_runs_it() -> None:
    run_here = [b for b in sessions() if not b.live]
    assert any(b.page == "README.md" and "balance --from-file examples/demo-cluster.yaml" in b.body[0]
               for b in run_here)
    assert "docs/contributing/writing-a-plugin.md" in python_pages()


def test_matching_lines_with_an_ellipsis() -> None:
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert matches(["a", "...", "b"], ["a", "b"])
    assert not matches(["a", "...", "d"], ["a", "b", "c"])
    assert not matches(["a", "b"], ["a", "b", "c"])
    assert matches(["a  ", ""], ["a"])
