"""A plugin that raises: the error line names the file and line it raised at, and -v 6 and above show the whole
traceback; below that, no traceback ever reaches the terminal."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubectl_desched import plugins
from kubectl_desched.cli.main import cli
from kubectl_desched.framework import DeschedulePlugin, Handle, Node, PluginSpec, Registry
from kubectl_desched.framework.failures import PluginFailed
from kubectl_desched.plugins import full_registry
from tests import builders as b

HERE = Path(__file__).resolve()


def _divide(n: int) -> int:
    return 100 // n  # the failing line


class AcmeDivides(DeschedulePlugin):
    name = "AcmeDivides"

    def deschedule(self, nodes: list[Node]) -> None:
        _divide(len(nodes) - len(nodes))


class AcmeNoStart(DeschedulePlugin):
    name = "AcmeNoStart"

    def __init__(self, args: object, handle: Handle) -> None:
        super().__init__(args, handle)
        raise KeyError("zone")

    def deschedule(self, nodes: list[Node]) -> None:
        pass


def _line(text: str) -> int:
    return next(i for i, line in enumerate(HERE.read_text().splitlines(), 1) if text in line)


@pytest.fixture
def acme(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    extra = [PluginSpec.of(AcmeDivides), PluginSpec.of(AcmeNoStart)]
    monkeypatch.setattr(plugins, "full_registry", lambda: Registry([*full_registry(), *extra]))
    b.isolate_from_the_user(tmp_path, monkeypatch)
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump(b.cluster(b.node("n1"), b.node("n2"))))


def _run(plugin: str, *more: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["deschedule", "--from-file", "snap.yaml", "-A", "--plugin", plugin, *more])
    if isinstance(result.exception, PluginFailed):  # main() prints it as one line
        return result.exception.exit_code, f"{result.stderr}error: {result.exception}\n"
    return result.exit_code, result.stderr


def test_a_plugin_that_raises_names_its_file_and_line(acme: None) -> None:
    code, err = _run("AcmeDivides")
    assert code == 1
    assert err == (f"error: plugin AcmeDivides failed: ZeroDivisionError: integer division or modulo by zero "
                   f"(at {HERE}:{_line('# the failing line')} in _divide)\n")


def test_minus_v_6_shows_the_traceback_first(acme: None) -> None:
    assert "Traceback" not in _run("AcmeDivides", "-v", "5")[1]
    code, err = _run("AcmeDivides", "-v", "6")
    assert code == 1
    trace, last = err.rstrip("\n").rsplit("\n", 1)
    assert trace.startswith("Traceback (most recent call last):")
    assert "in deschedule" in trace and "_divide(len(nodes) - len(nodes))" in trace
    assert trace.endswith("ZeroDivisionError: integer division or modulo by zero")
    assert last.startswith("error: plugin AcmeDivides failed: ZeroDivisionError")


def test_a_plugin_that_cannot_start_names_its_file_and_line(acme: None) -> None:
    code, err = _run("AcmeNoStart")
    assert code == 1
    assert err == (f"error: plugin AcmeNoStart could not start: KeyError: 'zone' "
                   f"(at {HERE}:{_line('raise KeyError(')} in __init__)\n")
    code, err = _run("AcmeNoStart", "-v", "6")
    assert err.startswith("Traceback (most recent call last):") and "KeyError: 'zone'\nerror: plugin" in err
