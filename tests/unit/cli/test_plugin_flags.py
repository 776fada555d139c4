"""Flags come from the plugins' declarations (framework/flags.py): a plugin the CLI has never heard of gets its
flag, its default in --help, its errors named after the flag, and only the commands that run it show it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubectl_desched import plugins
from kubectl_desched.cli.main import cli
from kubectl_desched.errors import ConfigError
from kubectl_desched.framework import DeschedulePlugin, PluginArgs, PluginSpec, Registry
from kubectl_desched.framework.flags import CliSurface, Flag, Integer
from kubectl_desched.model.objects import Node
from kubectl_desched.plugins import full_registry
from tests import builders as b


@dataclass
class KeepArgs(PluginArgs):
    min_keep: int = 0

    def validate(self, path: str) -> None:
        if self.min_keep > 10:
            raise ConfigError(f"{path}.minKeep" if path else "minKeep", f"must be at most 10, not {self.min_keep}")


class AcmeKeep(DeschedulePlugin):
    """Evicts nothing; says how many it would keep."""

    name = "AcmeKeep"
    args_type = KeepArgs
    cli = CliSurface(flags=(Flag("--min-keep", "minKeep", "pods to keep per node", Integer()),),
                     defaults={"minKeep": 3})

    def deschedule(self, nodes: list[Node]) -> None:
        self.handle.info(f"keeping {self.args.min_keep}")


@pytest.fixture
def acme(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    def registry() -> Registry:
        found = full_registry()
        found.register(PluginSpec.of(AcmeKeep, "acme (entry point AcmeKeep)"))
        return found

    monkeypatch.setattr(plugins, "full_registry", registry)  # where the CLI finds it when a command runs
    monkeypatch.chdir(tmp_path)
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump(b.cluster(b.node("n1"), b.node("n2"))))
    return tmp_path


def _help(*command: str) -> str:
    result = CliRunner().invoke(cli, [*command, "--help"])
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_a_declared_flag_sets_the_arg_and_its_default_shows_in_help(acme: Path) -> None:
    assert "--min-keep N AcmeKeep: pods to keep per node [default: 3]." in _help("deschedule")
    assert "--min-keep" in _help("explain", "pod") and "--min-keep" not in _help("balance")
    run = ["deschedule", "--from-file", "snap.yaml", "-A", "--plugin", "AcmeKeep", "-o", "json"]
    assert "AcmeKeep: keeping 3" in CliRunner().invoke(cli, run[:-2]).output
    assert "AcmeKeep: keeping 7" in CliRunner().invoke(cli, [*run[:-2], "--min-keep", "7"]).output


def test_errors_name_the_flag_or_args_that_set_the_value(acme: Path) -> None:
    base = ["deschedule", "--from-file", "snap.yaml", "-A", "--plugin", "AcmeKeep"]
    by_flag = CliRunner().invoke(cli, [*base, "--min-keep", "11"])
    assert str(by_flag.exception) == "--min-keep: minKeep: must be at most 10, not 11"
    by_args = CliRunner().invoke(cli, [*base, "--args", 'AcmeKeep={"minKeep": 12}'])
    assert str(by_args.exception) == "--args AcmeKeep: minKeep: must be at most 10, not 12"
    out_of_range = CliRunner().invoke(cli, [*base, "--min-keep", "-1"])
    assert out_of_range.exit_code == 2 and "Invalid value for '--min-keep': must be from 0 to" in out_of_range.output


def test_a_flag_another_option_or_plugin_has_is_left_out_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    class Clash(AcmeKeep):
        name = "AcmeClash"
        cli = CliSurface(flags=(Flag("--max-pods", "minKeep", "clashes with the limit flag", Integer()),))

    class OtherKind(AcmeKeep):
        name = "AcmeOtherKind"
        cli = CliSurface(flags=(Flag("--min-keep", "minKeep", "a switch this time"),))

    def registry() -> Registry:
        found = full_registry()
        for plugin in (AcmeKeep, Clash, OtherKind):
            found.register(PluginSpec.of(plugin))
        return found

    monkeypatch.setattr(plugins, "full_registry", registry)  # where the CLI finds it when a command runs
    result = CliRunner().invoke(cli, ["deschedule", "--help"])
    assert result.exit_code == 0
    assert "warning: plugin AcmeClash: flag --max-pods is taken by another option; left out" in result.output
    assert "warning: plugin AcmeOtherKind: flag --min-keep takes another kind of value than AcmeKeep's; left out" \
        in result.output
    text = " ".join(result.output.split())
    assert "maxNoOfPodsToEvictTotal" in text and "clashes with" not in text and "a switch this time" not in text
    assert "--min-keep N AcmeKeep: pods to keep per node [default: 3]." in text


@pytest.mark.parametrize(("surface", "message"), [
    (CliSurface(flags=(Flag("--min-keep", "minKep", "typo", Integer()),)),
     "flag --min-keep sets minKep, which is not one of its args"),
    (CliSurface(flags=(Flag("min-keep", "minKeep", "no dashes", Integer()),)), "is not a --lower-case-name"),
    (CliSurface(defaults={"minKep": 3}), "its defaults from flags: minKep: unknown field, ignored"),
    (CliSurface(defaults={"minKeep": 30}), "its defaults from flags do not decode: minKeep: must be at most 10"),
])
def test_a_broken_declaration_is_refused_when_the_plugin_loads(surface: CliSurface, message: str) -> None:
    class Broken(AcmeKeep):
        name = "AcmeBroken"
        cli = surface

    with pytest.raises(TypeError) as err:
        PluginSpec.of(Broken)
    assert message in str(err.value)


@pytest.mark.parametrize(("args", "message"), [
    (["deschedule", "--thresholds", "cpu=10"], "No such option '--thresholds'"),  # a Balance plugin's flag
    (["balance", "--max-pod-lifetime", "1h"], "No such option '--max-pod-lifetime'"),
    (["run", "--plugin", "PodLifeTime"], "No such option '--plugin'"),
])
def test_a_command_takes_only_the_flags_of_the_plugins_it_runs(args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and message in result.output


def test_evictor_filter_flags_do_not_combine_with_a_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.yaml").write_text("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles: []\n")
    result = CliRunner().invoke(cli, ["balance", "--policy", "p.yaml", "--node-fit", "--from-file", "x", "-A"])
    assert str(result.exception) == "--node-fit does not combine with --policy; use --policy-patch"


def test_help_groups_flags_under_headings_and_ends_with_examples() -> None:
    text = CliRunner().invoke(cli, ["balance", "--help"]).output
    headings = [line for line in text.splitlines() if line and not line.startswith(" ") and line.endswith(":")]
    assert headings == ["Cluster access:", "Scope:", "Plugins:", "Evictor filters:", "Acting:", "Output:", "Options:",
                        "Examples:"]
    assert text.index("--node-fit") > text.index("Evictor filters:") > text.index("--thresholds")
    assert "  kubectl desched balance -A\n" in text
    explain = CliRunner().invoke(cli, ["explain", "pod", "--help"]).output
    assert "Acting:" not in explain and "--yes" not in explain and "--max-pod-lifetime" in explain
