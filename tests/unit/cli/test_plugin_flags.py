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
from kubectl_desched.errors import ConfigError, UsageError
from kubectl_desched.framework import DeschedulePlugin, PluginArgs, PluginSpec, Registry
from kubectl_desched.framework.flags import CliSurface, Flag, Integer, Switch, Text
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


def test_help_shows_the_args_own_defaults_without_repeating_them(monkeypatch: pytest.MonkeyPatch) -> None:
    @dataclass
    class TextArgs(PluginArgs):
        min_keep: int = 4
        zone_label: str = "topology.kubernetes.io/zone"
        strict: bool = False
        loose: bool = True
        note: str | None = None

    class Plain(AcmeKeep):
        name = "AcmePlain"
        args_type = TextArgs
        cli = CliSurface(flags=(Flag("--keep", "minKeep", "pods to keep per node", Integer()),
                                Flag("--zone-label", "zoneLabel", "the zone label", Text(metavar="KEY")),
                                Flag("--strict", "strict", "refuse more"),
                                Flag("--tight", "loose", "refuse less", Switch(False)),
                                Flag("--note", "note", "a note", Text())))

    monkeypatch.setattr(plugins, "full_registry", lambda: Registry([*full_registry(), PluginSpec.of(Plain)]))
    text = _help("deschedule")
    assert "--keep N AcmePlain: pods to keep per node [default: 4]." in text
    assert "--zone-label KEY AcmePlain: the zone label [default: topology.kubernetes.io/zone]." in text
    assert "--strict AcmePlain: refuse more." in text  # a switch that is off by default says nothing
    assert "--tight AcmePlain: refuse less." in text  # nor one whose arg is not yet what it sets
    assert "--note TEXT AcmePlain: a note." in text  # an unset arg has no default to show


def test_errors_name_the_flag_or_args_that_set_the_value(acme: Path) -> None:
    base = ["deschedule", "--from-file", "snap.yaml", "-A", "--plugin", "AcmeKeep"]
    by_flag = CliRunner().invoke(cli, [*base, "--min-keep", "11"])
    assert str(by_flag.exception) == "--min-keep: minKeep: must be at most 10, not 11"
    by_args = CliRunner().invoke(cli, [*base, "--args", 'AcmeKeep={"minKeep": 12}'])
    assert str(by_args.exception) == "--args AcmeKeep: minKeep: must be at most 10, not 12"
    out_of_range = CliRunner().invoke(cli, [*base, "--min-keep", "-1"])
    assert out_of_range.exit_code == 2 and "Invalid value for '--min-keep': must be from 0 to" in out_of_range.output


def test_an_arg_no_flag_set_is_not_blamed_on_its_flag(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    @dataclass
    class NeedsArgs(PluginArgs):
        min_keep: int = 0  # left empty: the user must give it

        def validate(self, path: str) -> None:
            if self.min_keep < 1:
                raise ConfigError("minKeep", f"must be at least 1, not {self.min_keep}")

    class Needs(AcmeKeep):
        name = "AcmeNeeds"
        args_type = NeedsArgs
        cli = CliSurface(flags=(Flag("--min-keep", "minKeep", "pods to keep per node", Integer()),))

    spec = PluginSpec.of(Needs)  # an empty default that fails is a value to give, not a broken plugin
    monkeypatch.setattr(plugins, "full_registry", lambda: Registry([*full_registry(), spec]))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump(b.cluster(b.node("n1"), b.node("n2"))))
    base = ["deschedule", "--from-file", "snap.yaml", "-A", "--plugin", "AcmeNeeds"]
    result = CliRunner().invoke(cli, base)
    assert str(result.exception) == "AcmeNeeds: minKeep: must be at least 1, not 0 (set it with --min-keep or " \
                                    "--args AcmeNeeds)"
    assert "keeping 2" in CliRunner().invoke(cli, [*base, "--min-keep", "2"]).output


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
    (tmp_path / "p.yaml").write_text(yaml.safe_dump({
        "apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", "profiles": [{
            "name": "p", "plugins": {"balance": {"enabled": ["LowNodeUtilization"]}},
            "pluginConfig": [{"name": "LowNodeUtilization",
                              "args": {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}}}]}]}))
    result = CliRunner().invoke(cli, ["balance", "--policy", "p.yaml", "--node-fit", "--from-file", "x", "-A"])
    assert str(result.exception) == ("--node-fit is a flag of plugin DefaultEvictor, which p.yaml enables: set "
                                     "nodeFit in its args there, or with --policy-patch")


POLICY = {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", "profiles": [{
    "name": "p", "plugins": {"deschedule": {"enabled": ["AcmeKeep"]}}, "pluginConfig": [{"name": "AcmeKeep"}]}]}


@pytest.mark.parametrize(("args", "message"), [
    (["deschedule", "--min-keep", "2"], "--min-keep is a flag of plugin AcmeKeep, which is not enabled: add "
                                        "--plugin AcmeKeep"),
    (["explain", "node", "n1", "--plugin", "PodLifeTime", "--min-keep", "2"],
     "--min-keep is a flag of plugin AcmeKeep, which is not enabled: add --plugin AcmeKeep"),
    (["balance", "--plugin", "HighNodeUtilization", "--target-thresholds", "cpu=50"],
     "--target-thresholds is a flag of plugins LowNodeLoad and LowNodeUtilization, none of which is enabled: add "
     "--plugin LowNodeLoad or --plugin LowNodeUtilization"),
    (["run", "--policy", "p.yaml", "--min-keep", "2"], "--min-keep is a flag of plugin AcmeKeep, which p.yaml "
     "enables: set minKeep in its args there, or with --policy-patch"),
    (["deschedule", "--policy", "p.yaml", "--min-keep", "2"], "--min-keep is a flag of plugin AcmeKeep, which p.yaml "
     "enables: set minKeep in its args there, or with --policy-patch"),
    (["run", "--policy", "other.yaml", "--min-keep", "2"], "--min-keep is a flag of plugin AcmeKeep, which "
                                                           "other.yaml does not enable"),
    (["run", "--policy", "other.yaml", "--thresholds", "cpu=2"], "--thresholds is a flag of plugins "
     "HighNodeUtilization, LowNodeLoad and LowNodeUtilization, none of which other.yaml enables"),
])
def test_a_plugin_flag_without_its_plugin_says_whose_it_is(acme: Path, args: list[str], message: str) -> None:
    (acme / "p.yaml").write_text(yaml.safe_dump(POLICY))
    other = {**POLICY, "profiles": [{"name": "p", "plugins": {"deschedule": {"enabled": ["PodLifeTime"]}},
                                     "pluginConfig": [{"name": "PodLifeTime", "args": {"states": ["Pending"]}}]}]}
    (acme / "other.yaml").write_text(yaml.safe_dump(other))
    result = CliRunner().invoke(cli, [*args, "--from-file", "snap.yaml", "-A"])
    assert isinstance(result.exception, UsageError) and result.exception.exit_code == 2
    assert str(result.exception) == message
    assert "--min-keep" not in _help("run")  # accepted by run only to say whose flag it is


def test_help_groups_flags_under_headings_and_ends_with_examples() -> None:
    text = CliRunner().invoke(cli, ["balance", "--help"]).output
    headings = [line for line in text.splitlines() if line and not line.startswith(" ") and line.endswith(":")]
    assert headings == ["Cluster access:", "Scope:", "Plugins:", "Evictor filters:", "Acting:", "Output:", "Options:",
                        "Examples:"]
    assert text.index("--node-fit") > text.index("Evictor filters:") > text.index("--thresholds")
    assert "  kubectl desched balance -A\n" in text
    explain = CliRunner().invoke(cli, ["explain", "pod", "--help"]).output
    assert "Acting:" not in explain and "--yes" not in explain and "--max-pod-lifetime" in explain


@pytest.mark.parametrize(("args", "message"), [
    ('AcmeKeep={"minKep": 2}', "--args AcmeKeep: minKep: unknown field (did you mean minKeep?)"),
    ('DefaultEvictor={"nodeFitt": true}', "--args DefaultEvictor: nodeFitt: unknown field (did you mean nodeFit?)"),
])
def test_a_misspelled_args_key_is_said_as_the_args_given(acme: Path, args: str, message: str) -> None:
    """Refused as upstream's strict decoding refuses it in the policy the flags describe."""
    base = ["deschedule", "--from-file", "snap.yaml", "-A", "--plugin", "AcmeKeep", "-o", "name"]
    result = CliRunner().invoke(cli, [*base, "--args", args])
    assert isinstance(result.exception, UsageError) and result.exception.exit_code == 2
    assert str(result.exception) == message
