"""The guide is for the people who run the tool (issue 38): what backs a claim there (the commit it was measured
against, the issue it came from, the test that pins it, a benchmark's medians) belongs to Contributing
(docs/contributing/guide-evidence.md) or bench/, linked from the page. A page under docs/guide fails here with
- a commit hash: 7 to 40 hex digits, with a digit and a letter, as a word of prose or inline code. Pod names
  (`cart-757b97df4f-9pfch`), UIDs and digests are not words of their own, and fenced blocks, which show what the
  tool prints (pod names, run ids), are not read for it;
- an issue or pull request number: `issue 29`, `issues 13 and 29`, `PR 7`, `#38`;
- a path under tests/, anywhere on the page;
- a benchmark's median: a paragraph of prose that says "median" and gives a time, a size or a percentage."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = sorted((ROOT / "docs" / "guide").glob("*.md"))
FENCE = re.compile(r"^\s*(```|~~~)")

HASH = re.compile(r"(?<![\w.:/-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w.:/-])")
ISSUE = re.compile(r"\b(?:issues?|PRs?|pull requests?)\s+#?\d+\b|(?<![\w&#/])#\d+\b", re.IGNORECASE)
TESTS_PATH = re.compile(r"(?<![\w.-])tests/\w[\w./-]*")
MEDIAN = re.compile(r"\bmedians?\b", re.IGNORECASE)
FIGURE = re.compile(r"\b\d+(?:\.\d+)?\s?(?:s|ms|µs|min|seconds|minutes|KiB|MiB|GiB|MB|GB)\b|\d%")


def paragraphs(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each paragraph outside fenced blocks."""
    out: list[tuple[int, str]] = []
    lines: list[str] = []
    start, fenced = 0, False
    for number, line in enumerate([*text.splitlines(), ""], 1):
        if FENCE.match(line):
            fenced = not fenced
        if fenced or FENCE.match(line) or not line.strip():
            if lines:
                out.append((start, "\n".join(lines)))
            lines = []
            continue
        if not lines:
            start = number
        lines.append(line)
    return out


def problems(text: str) -> list[str]:
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        found += [f"{number}: a path under tests/: {m.group(0)}" for m in TESTS_PATH.finditer(line)]
    for start, paragraph in paragraphs(text):
        for offset, line in enumerate(paragraph.splitlines()):
            found += [f"{start + offset}: a commit hash: {m.group(0)}" for m in HASH.finditer(line)]
            found += [f"{start + offset}: an issue number: {m.group(0)}" for m in ISSUE.finditer(line)]
        if MEDIAN.search(paragraph) and FIGURE.search(paragraph):
            found.append(f"{start}: a benchmark's median: {' '.join(paragraph.split())[:100]}...")
    return found


@pytest.mark.parametrize("page", GUIDE, ids=lambda p: p.name)
def test_a_guide_page_says_nothing_only_contributors_need(page: Path) -> None:
    said = problems(page.read_text(encoding="utf-8"))
    assert not said, (f"docs/guide/{page.name}: move these to docs/contributing/guide-evidence.md (or bench/) and "
                      "link there:\n" + "\n".join(said))


def test_what_it_flags_and_what_it_leaves() -> None:
    assert len(GUIDE) > 10
    flagged = [
        "Before (main e4ba1f3), rebuilding the list took 30 s.",
        "as `c1e1d47` ran them",
        "see issue 29 for why",
        "Issues 13 and #29: the targets.",
        "(`tests/integration/test_selector_live.py`)",
        "run tests/unit/ui with pytest",
        "balance took 18.81 s against 17.64 s\n(medians of 3 interleaved rounds)",
        "peak RSS 455 against 421 MiB, medians of 3",
    ]
    for text in flagged:
        assert problems(text), text
    left = [
        "shop         cart-757b97df4f-9pfch  worker-2  LowNodeUtilization",
        "```yaml\nkubectl-desched/run: 3f2a9c0d1e4b5a67\n```",
        "uid 3f2a9c0d-1e4b-4a67-9c0d-1e4b5a673f2a, image sha256:0123456789abcdef0123",
        "priority 2000000000, 150000 pods, a deadbeef value is all letters",
        "The [exit codes](evicting-safely.md#exit-codes) and `&#124;`; step 2 of 3.",
        "It answers in about 0.3 s on 150,000 pods.",
        "the median pod is young",
        "kubectl_desched/errors.py and docs/contributing/testing.md",
    ]
    for text in left:
        assert not problems(text), (text, problems(text))
