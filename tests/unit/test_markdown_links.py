"""Every relative link in the Markdown files outside docs/ (README.md, examples/, bench/, krew/, plugins/) leads to a
file of the repository, and its #anchor to a heading there: `mkdocs build --strict` checks docs/ only, and these are
the pages read on the repository's own view. Issue 38: examples/README.md named a README section that had moved."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def tracked() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True)
    return listed.stdout.split()


def pages() -> list[str]:
    return [p for p in tracked() if not p.startswith("docs/")]


def prose(path: Path) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, numbered from 1."""
    out, fenced = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            out.append((number, line))
    return out


def headings(path: Path) -> list[str]:
    """The page's headings as text (inline code and links unwrapped)."""
    found = []
    for _number, line in prose(path):
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            found.append(re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1)).replace("`", ""))
    return found


def anchors(path: Path) -> set[str]:
    """The heading ids that work both on the docs site (Python-Markdown's toc) and on the repository's view, which
    slugs headings its own way (`--wait-ready` is `-wait-ready` on one and `--wait-ready` on the other)."""
    site = {slugify(text, "-") for text in headings(path)}
    repository = {re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-") for text in headings(path)}
    return site & repository


def broken(page: str, check_anchors: bool = True) -> list[str]:
    source = ROOT / page
    out = []
    for number, line in prose(source):
        for target in LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not a file of the repository
                continue
            file, _, anchor = target.partition("#")
            resolved = (source.parent / file).resolve() if file else source
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                out.append(f"{page}:{number}: {target}: no such file")
            elif check_anchors and anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                out.append(f"{page}:{number}: {target}: no heading #{anchor} there")
    return out


@pytest.mark.parametrize("page", pages())
def test_every_relative_link_resolves(page: str) -> None:
    assert not broken(page)


@pytest.mark.parametrize("page", [p for p in tracked() if p.startswith("docs/")])
def test_the_docs_pages_link_to_files_the_repository_has(page: str) -> None:
    """The site's links are checked by mkdocs --strict, against pages the hooks may add; read in the repository,
    each must reach a committed file too (the generated Reference pages have committed stand-ins)."""
    assert not broken(page, check_anchors=False)


def test_the_anchors_are_the_ones_both_views_make() -> None:
    assert "exit-codes" in anchors(ROOT / "docs/guide/evicting-safely.md")
    assert "two-operators-at-once" in anchors(ROOT / "docs/guide/evicting-safely.md")
    assert not {"-wait-ready", "--wait-ready"} & anchors(ROOT / "docs/guide/evicting-safely.md")  # slugged apart
    assert "README.md" in pages() and "examples/README.md" in pages()
