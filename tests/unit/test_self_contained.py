"""Nothing tracked may depend on this machine or a git host: a fresh machine has neither, only the package registries.

The patterns are split so this file does not match itself.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = {
    "a path of one machine": r"(^|[\s\"'=:(])/(wo" r"rk|ro" r"ot|ho" r"me/[a-z_][\w.-]*|Us" r"ers/[\w.-]+)/",
    "a local mirror of a repository": r"\.mir" r"ror/",
    "a clone or fetch from a git host": r"\bgit\s+(-C\s+\S+\s+)?(cl" r"one|fe" r"tch|archive\s+--remote)\b",
    "a git URL": r"(https?|git|ssh)://[^\s\"']+\.g" r"it\b|git@[\w.-]+:",
    "a Go cache of this machine": r"/pkg/m" r"od/cache/|go-bui" r"ld/",
}


def tracked_files() -> list[Path]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
    return [ROOT / name for name in out.decode().split("\0") if name]


def offending_lines(text: str) -> list[tuple[int, str, str]]:
    return [(number, what, line.strip()[:160])
            for number, line in enumerate(text.splitlines(), 1)
            for what, pattern in FORBIDDEN.items() if re.search(pattern, line)]


@pytest.mark.parametrize("line, what", [
    ("MIRROR=/wo" "rk/.mir" "ror/x/repo", "a path of one machine"),
    ("cache=/ro" "ot/.cache/x", "a path of one machine"),
    ("git cl" "one https://example.org/x.git", "a clone or fetch from a git host"),
    ('git -C src.git fe' 'tch -q --depth 1 "$URL"', "a clone or fetch from a git host"),
    ("KREW_GIT=https://github.com/kubernetes-sigs/krew.g" "it", "a git URL"),
    ("ls /root/go/pkg/m" "od/cache/download", "a Go cache of this machine"),
])
def test_each_pattern_catches_its_kind(line: str, what: str) -> None:
    assert what in {found for _, found, _ in offending_lines(line)}


@pytest.mark.parametrize("line", [
    "cache=${KDESCHED_CACHE:-$HOME/.cache/kubectl-desched}",
    "import _ \"sigs.k8s.io/krew/cmd/krew\"",
    "kubernetes.io/config.mirror: abc",
    "IndexURI https://github.com/kubernetes-sigs/krew-index",
    "d=$(mktemp -d) && cd \"$d\"",
])
def test_ordinary_lines_pass(line: str) -> None:
    assert offending_lines(line) == []


def test_no_tracked_file_names_a_machine_path_or_a_git_host() -> None:
    found = []
    for path in tracked_files():
        if path == Path(__file__) or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found += [f"{path.relative_to(ROOT)}:{n}: {what}: {line}" for n, what, line in offending_lines(text)]
    assert not found, "tracked files depend on something a fresh machine lacks:\n" + "\n".join(found)
