"""A failed optional build skips only the tests that need it, with one line that says why (tests/gobuilds.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests import gobuilds


@pytest.fixture
def scripts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(gobuilds, "CLUSTER_DIR", tmp_path)
    monkeypatch.setattr(gobuilds, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(gobuilds.shutil, "which", lambda name: "/bin/true" if name == "go" else shutil.which(name))
    gobuilds.build.cache_clear()
    yield tmp_path
    gobuilds.build.cache_clear()


def _script(where: Path, name: str, body: str) -> None:
    (where / name).write_text("#!/usr/bin/env bash\n" + body)
    (where / name).chmod(0o755)


def test_a_failed_build_skips_with_its_last_error_line_and_keeps_the_log(scripts: Path) -> None:
    _script(scripts, "build-x", "echo 'lots of output'\necho 'go: module example.org/x@v9: 403 Forbidden' >&2\n"
            "printf '\\tserver response: not available\\n' >&2\nexit 1\n")
    with pytest.raises(pytest.skip.Exception) as info:
        gobuilds.built("build-x", "x")
    reason = str(info.value)
    assert "\n" not in reason
    assert reason.startswith("tests/cluster/build-x failed (exit 1): go: module example.org/x@v9: 403 Forbidden")
    log = scripts / "cache" / "logs" / "build-x.log"
    assert str(log) in reason and "lots of output" in log.read_text()


def test_a_build_is_tried_once_per_session(scripts: Path) -> None:
    counter = scripts / "runs"
    _script(scripts, "build-y", f"echo run >> {counter}\nexit 2\n")
    for _ in range(3):
        with pytest.raises(pytest.skip.Exception):
            gobuilds.built("build-y", "y")
    assert counter.read_text().count("run") == 1


def test_a_built_binary_is_found_in_the_directory_the_script_prints(scripts: Path) -> None:
    _script(scripts, "build-z", f"echo 'building...' >&2\necho {scripts / 'bin'}\n")
    assert gobuilds.built("build-z", "z") == scripts / "bin" / "z"


def test_without_go_every_build_skips_with_that_reason(scripts: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gobuilds.shutil, "which", lambda name: None)
    with pytest.raises(pytest.skip.Exception, match="needs the Go toolchain: `go` is not on PATH"):
        gobuilds.built("build-anything", "bin")
