"""The plugin registry: in-tree registration and out-of-tree entry points."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest

from kubectl_desched.errors import ConfigError
from kubectl_desched.framework import registry as registry_module
from kubectl_desched.framework.args import decode_args, encode_args
from kubectl_desched.framework.registry import ENTRY_POINT_GROUP, PluginSpec, Registry, RegistryError
from kubectl_desched.framework.types import BalancePlugin, DeschedulePlugin, EvictorPlugin, Plugin
from kubectl_desched.model.objects import Node
from kubectl_desched.plugins import full_registry, in_tree_registry


class Balancer(BalancePlugin):
    """Moves things around.

    More text that is not the description."""

    name = "Balancer"

    def balance(self, nodes: list[Node]) -> None:
        pass


class Descheduler(DeschedulePlugin):
    name = "Descheduler"
    description = "explicit description"

    def deschedule(self, nodes: list[Node]) -> None:
        pass


class Both(BalancePlugin, DeschedulePlugin):
    name = "Both"

    def balance(self, nodes: list[Node]) -> None:
        pass

    def deschedule(self, nodes: list[Node]) -> None:
        pass


class Filter(EvictorPlugin):
    name = "Filter"


class NoPoint(Plugin):
    name = "NoPoint"


class NoName(BalancePlugin):
    def balance(self, nodes: list[Node]) -> None:
        pass


class ClashesWithInTree(BalancePlugin):
    name = "LowNodeUtilization"

    def balance(self, nodes: list[Node]) -> None:
        pass


# --- PluginSpec.of -----------------------------------------------------------------------------------------------


def test_spec_points_and_description() -> None:
    assert PluginSpec.of(Balancer).points == ("balance",)
    assert PluginSpec.of(Balancer).description == "Moves things around."
    assert PluginSpec.of(Descheduler).description == "explicit description"
    assert PluginSpec.of(Both).points == ("deschedule", "balance")
    assert PluginSpec.of(Filter).points == ("filter", "preEvictionFilter")
    spec = PluginSpec.of(Balancer, origin="my-dist")
    assert (spec.name, spec.factory, spec.args_type, spec.origin) == ("Balancer", Balancer, None, "my-dist")


@pytest.mark.parametrize(
    ("obj", "message"),
    [(NoPoint, "implements no extension point"), (NoName, "has no name"), (object, "is not a Plugin subclass"),
     (Balancer(None, None), "is not a Plugin subclass")],
)
def test_spec_of_rejects(obj: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        PluginSpec.of(obj)


# --- Registry ----------------------------------------------------------------------------------------------------


def test_register_get_unregister() -> None:
    reg = Registry([PluginSpec.of(Balancer)])
    reg.register(PluginSpec.of(Descheduler))
    assert "Balancer" in reg and "Descheduler" in reg and "Nope" not in reg
    assert [s.name for s in reg] == ["Balancer", "Descheduler"]
    assert reg.get("Descheduler").factory is Descheduler
    assert [s.name for s in reg.with_points("balance")] == ["Balancer"]
    reg.unregister("Balancer")
    assert "Balancer" not in reg
    assert [s.name for s in reg] == ["Descheduler"]


def test_register_duplicate_fails() -> None:
    reg = Registry([PluginSpec.of(Balancer, origin="first-dist")])
    with pytest.raises(RegistryError, match=r"a plugin named Balancer already exists \(first-dist\)"):
        reg.register(PluginSpec.of(Balancer))
    with pytest.raises(RegistryError, match="already exists"):
        Registry([PluginSpec.of(Balancer), PluginSpec.of(Balancer)])


def test_unregister_missing_fails() -> None:
    with pytest.raises(RegistryError, match="no plugin named Ghost exists"):
        Registry().unregister("Ghost")


def test_get_unknown_lists_known_plugins() -> None:
    reg = Registry([PluginSpec.of(Descheduler), PluginSpec.of(Balancer)])
    with pytest.raises(RegistryError) as info:
        reg.get("Ghost")
    assert str(info.value) == "unknown plugin 'Ghost'; known: Balancer, Descheduler"
    assert info.value.exit_code == 2


def test_merge() -> None:
    reg = Registry([PluginSpec.of(Balancer)])
    reg.merge(Registry([PluginSpec.of(Descheduler), PluginSpec.of(Filter)]))
    assert [s.name for s in reg] == ["Balancer", "Descheduler", "Filter"]
    with pytest.raises(RegistryError, match="Balancer already exists"):
        reg.merge(Registry([PluginSpec.of(Balancer)]))


def test_every_in_tree_plugin_passes_the_checks_its_registry_skips_at_start() -> None:
    """in_tree_registry() builds its specs unchecked (start-up time); the checks run here instead, on each plugin,
    as they run on an out-of-tree one when it loads."""
    from kubectl_desched.plugins import IN_TREE

    for plugin in IN_TREE:
        checked = PluginSpec.of(plugin)  # raises TypeError on a broken args type or flag declaration
        assert checked == PluginSpec.of(plugin, check=False)
    assert {p.name for p in IN_TREE} == {s.name for s in in_tree_registry()}


def test_in_tree_registry() -> None:
    reg = in_tree_registry()
    names = [s.name for s in reg]
    assert names == sorted(names)  # listed by name
    assert {"DefaultEvictor", "HighNodeUtilization", "LowNodeUtilization", "MigrationController"} <= set(names)
    assert reg.get("HighNodeUtilization").points == ("balance",)
    assert reg.get("LowNodeUtilization").points == ("balance",)
    assert reg.get("DefaultEvictor").points == ("filter", "preEvictionFilter")
    assert reg.broken == []


# --- entry points ------------------------------------------------------------------------------------------------


@dataclass
class FakeEntryPoint:
    name: str
    loader: Callable[[], Any]
    dist: Any = None

    def load(self) -> Any:
        return self.loader()


def _raise(exc: Exception) -> Callable[[], Any]:
    def load() -> Any:
        raise exc
    return load


@pytest.fixture
def fake_entry_points(monkeypatch: pytest.MonkeyPatch) -> Callable[[list[FakeEntryPoint]], list[str]]:
    groups: list[str] = []

    def install(eps: list[FakeEntryPoint]) -> list[str]:
        def entry_points(*, group: str) -> list[FakeEntryPoint]:
            groups.append(group)
            return eps
        monkeypatch.setattr(registry_module, "entry_points", entry_points)
        return groups

    return install


def test_entry_points_good_and_broken(fake_entry_points: Callable[[list[FakeEntryPoint]], list[str]]) -> None:
    dist = SimpleNamespace(name="acme-plugins")
    groups = fake_entry_points([
        FakeEntryPoint("balancer", lambda: Balancer, dist),  # a class
        FakeEntryPoint("several", lambda: [Descheduler, PluginSpec.of(Filter, "custom-origin")], dist),  # a list
        FakeEntryPoint("factory", lambda: (lambda: (Both,)), dist),  # a callable returning a tuple
        FakeEntryPoint("missing", _raise(ImportError("No module named 'acme.gone'")), dist),
        FakeEntryPoint("clash", lambda: ClashesWithInTree, dist),  # duplicates an in-tree name
        FakeEntryPoint("nopoint", lambda: NoPoint, None),  # not a usable plugin; no distribution
        FakeEntryPoint("crashes", lambda: (lambda: 1 / 0), dist),
    ])
    reg = in_tree_registry()
    reg.load_entry_points()
    assert groups == [ENTRY_POINT_GROUP]
    names = [s.name for s in reg]
    assert {"Balancer", "Descheduler", "Filter", "Both"} <= set(names)
    assert "NoPoint" not in names
    assert reg.get("Balancer").origin == "acme-plugins (entry point balancer)"
    assert reg.get("Filter").origin == "custom-origin"  # a PluginSpec is registered as given
    assert reg.get("LowNodeUtilization").origin == "in-tree"  # the clash did not replace it

    broken = {line.split()[2]: line for line in reg.broken}
    assert set(broken) == {"missing", "LowNodeUtilization", "nopoint", "crashes"}
    assert broken["missing"] == ("out-of-tree plugin missing from acme-plugins (entry point missing): "
                                 "ImportError: No module named 'acme.gone'")
    assert "already exists (in-tree)" in broken["LowNodeUtilization"]
    assert "from ? (entry point nopoint): TypeError" in broken["nopoint"]
    assert "ZeroDivisionError" in broken["crashes"]


def test_duplicate_between_two_entry_points(fake_entry_points: Callable[[list[FakeEntryPoint]], list[str]]) -> None:
    fake_entry_points([FakeEntryPoint("b-second", lambda: Balancer, SimpleNamespace(name="two")),
                       FakeEntryPoint("a-first", lambda: Balancer, SimpleNamespace(name="one"))])
    reg = Registry()
    reg.load_entry_points()
    assert reg.get("Balancer").origin == "one (entry point a-first)"  # entry points load sorted by name
    assert reg.broken == ["out-of-tree plugin Balancer from two (entry point b-second): "
                          "a plugin named Balancer already exists (one (entry point a-first))"]


def test_full_registry_loads_entry_points(fake_entry_points: Callable[[list[FakeEntryPoint]], list[str]]) -> None:
    fake_entry_points([FakeEntryPoint("x", lambda: Descheduler, SimpleNamespace(name="dist")),
                       FakeEntryPoint("y", _raise(ImportError("boom")), SimpleNamespace(name="dist"))])
    reg = full_registry()
    assert "Descheduler" in reg and "LowNodeUtilization" in reg
    assert len(reg.broken) == 1 and "ImportError: boom" in reg.broken[0]


# --- args types ----------------------------------------------------------------------------------------------------


@dataclass
class NeedsValue:
    value: int


@dataclass
class Unresolvable:
    value: NoSuchType = None  # type: ignore[name-defined]  # noqa: F821


@dataclass
class NotJson:
    value: object = dataclass


class _WithArgs(DeschedulePlugin):
    def deschedule(self, nodes: list[Node]) -> None:
        pass


@pytest.mark.parametrize(("args_type", "message"), [
    (dict, "WithArgs: args_type <class 'dict'> is not a dataclass"),
    (NeedsValue, "WithArgs: args NeedsValue: cannot be built from its defaults: TypeError: "),
    (Unresolvable, "WithArgs: args Unresolvable: field types do not resolve: NameError: name 'NoSuchType'"),
    (NotJson, "WithArgs: args NotJson: cannot be built from its defaults: TypeError: Object of type function"),
])
def test_spec_of_rejects_args_types_that_cannot_work(args_type: type, message: str) -> None:
    plugin = type("WithArgs", (_WithArgs,), {"name": "WithArgs", "args_type": args_type})
    with pytest.raises(TypeError) as err:
        PluginSpec.of(plugin)
    assert str(err.value).startswith(message)


def test_every_in_tree_args_type_defaults_as_an_empty_policy_entry_and_round_trips() -> None:
    """The defaults a plugin's args class builds are those an empty `args: {}` decodes to, and what `plugins -o
    json` shows (encode_args) decodes back to the same args."""
    checked = 0
    for spec in in_tree_registry():
        if spec.args_type is None:
            continue
        try:
            defaults = spec.args_type()
        except TypeError:  # args with a required field: no defaults to compare (decoding {} must refuse them)
            with pytest.raises(ConfigError):
                decode_args(spec.args_type, {}, "")
            continue
        try:
            decoded = decode_args(spec.args_type, {}, "")
        except ConfigError:  # an empty entry is refused (a threshold is required): then the defaults are too
            with pytest.raises(ConfigError):
                defaults.validate("")
            continue
        assert decoded == defaults, spec.name
        assert decode_args(spec.args_type, encode_args(defaults), "") == defaults, spec.name
        checked += 1
    assert checked >= 8  # most in-tree args default as a whole; the others refuse an empty entry (above)


def test_broken_plugin_name_says_why(fake_entry_points: Callable[[list[FakeEntryPoint]], list[str]]) -> None:
    fake_entry_points([FakeEntryPoint("Gone", _raise(ImportError("No module named 'gone'")),
                                      SimpleNamespace(name="gone-dist"))])
    reg = in_tree_registry()
    reg.load_entry_points()
    assert reg.is_broken("Gone") and not reg.is_broken("LowNodeUtilization") and not reg.is_broken("Other")
    with pytest.raises(RegistryError) as err:
        reg.get("Gone")
    assert str(err.value) == ("plugin Gone is installed but could not be loaded: out-of-tree plugin Gone from "
                              "gone-dist (entry point Gone): ImportError: No module named 'gone'")
    assert reg.why_unknown("Other").startswith("unknown plugin 'Other'; known: DefaultEvictor, ")
