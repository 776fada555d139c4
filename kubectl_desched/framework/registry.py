"""Registry: plugin name -> how to build it. In-tree plugins register at import; out-of-tree ones come
from the `kubectl_desched.plugins` entry-point group, and a broken one is reported, not fatal."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, get_type_hints

from kubectl_desched.errors import ConfigError, UsageError
from kubectl_desched.framework.args import decode_args, encode_args, json_key
from kubectl_desched.framework.flags import CliSurface, Flag, Switch
from kubectl_desched.framework.types import BalancePlugin, DeschedulePlugin, EvictorPlugin, Handle, Plugin
from kubectl_desched.model.shapes import policy_value

ENTRY_POINT_GROUP = "kubectl_desched.plugins"


class RegistryError(UsageError):
    pass


@dataclass(frozen=True)
class PluginSpec:
    name: str
    factory: Callable[[Any, Handle], Plugin]
    args_type: type | None
    points: tuple[str, ...]  # deschedule, balance, filter, preEvictionFilter
    origin: str = "in-tree"
    description: str = ""
    cli: CliSurface = field(default_factory=CliSurface)

    @classmethod
    def of(cls, plugin: type[Plugin], origin: str = "in-tree", *, check: bool = True) -> PluginSpec:
        """The plugin's spec. `check` runs the checks of its args type and flags; only the in-tree plugins skip
        them at start (9 ms of every command, completion included), because a unit test runs them on each."""
        if not isinstance(plugin, type) or not issubclass(plugin, Plugin):
            raise TypeError(f"{plugin!r} is not a Plugin subclass")
        name = getattr(plugin, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"{plugin.__name__} has no name")
        points = []
        if issubclass(plugin, DeschedulePlugin):
            points.append("deschedule")
        if issubclass(plugin, BalancePlugin):
            points.append("balance")
        if issubclass(plugin, EvictorPlugin):
            points += ["filter", "preEvictionFilter"]
        if not points:
            raise TypeError(f"{plugin.__name__} implements no extension point")
        if check:
            if plugin.args_type is not None:
                _check_args_type(plugin.args_type, name)
            _check_cli(plugin.cli, plugin.args_type, name)
        doc = plugin.description or ((plugin.__doc__ or "").strip().splitlines() or [""])[0]
        return cls(name, plugin, plugin.args_type, tuple(points), origin, doc, plugin.cli)

    def default_text(self, flag: Flag) -> str | None:
        """The default --help shows for one of its flags: what a run without the flag gives that arg, from the
        CliSurface's defaults or else the args type's own, so a plugin need not repeat them in CliSurface."""
        text = self.cli.default_text(flag)
        if text is not None or flag.default_help is not None or self.args_type is None:
            return text
        try:
            value = _at(encode_args(self.args_type()), flag.path)
        except Exception:  # an args type that cannot be built from its defaults is reported when it loads
            return None
        if value is None or (isinstance(flag.value, Switch) and value != flag.value.value):
            return None  # unset, or a switch that is off: nothing worth a [default: ...]
        return flag.value.show(value) or None

    def args_from_flags(self) -> Any:
        """The args a run from flags gives it when none of its flags is given (what `plugins` lists); its
        args type's defaults when those need a value (such a plugin needs --args to run from flags)."""
        if self.args_type is None:
            return None
        try:
            return decode_args(self.args_type, self.cli.args({}, {}), "")
        except ConfigError:
            return self.args_type()


def _check_args_type(args_type: Any, plugin: str) -> None:
    """What loading a policy and `plugins` rely on: a dataclass whose field types resolve and which builds
    from its defaults alone into JSON-able args. Caught here, a broken one is reported when it loads
    instead of failing later with a traceback."""
    if not isinstance(args_type, type) or not dataclasses.is_dataclass(args_type):
        raise TypeError(f"{plugin}: args_type {args_type!r} is not a dataclass")
    where = f"{plugin}: args {args_type.__name__}"
    try:
        get_type_hints(args_type)
    except Exception as e:  # a typo in an annotation, a name the module forgot to import
        raise TypeError(f"{where}: field types do not resolve: {type(e).__name__}: {e}") from None
    try:
        json.dumps(encode_args(args_type()))
    except Exception as e:
        raise TypeError(f"{where}: cannot be built from its defaults: {type(e).__name__}: {e}") from None


def _check_cli(surface: Any, args_type: type | None, plugin: str) -> None:
    """A flag must set an arg the plugin has, and the args from flags must decode: caught when the plugin loads,
    a typo in an out-of-tree plugin's declaration is reported instead of silently setting nothing."""
    if not isinstance(surface, CliSurface):
        raise TypeError(f"{plugin}: cli {surface!r} is not a CliSurface")
    keys = {json_key(f) for f in dataclasses.fields(args_type)} if args_type else set()
    for flag in surface.flags:
        if not flag.name.startswith("--") or not flag.dest.replace("_", "").isalnum() or flag.name != flag.name.lower():
            raise TypeError(f"{plugin}: flag {flag.name!r} is not a --lower-case-name")
        if flag.key not in keys:
            raise TypeError(f"{plugin}: flag {flag.name} sets {flag.path}, which is not one of its args")
    if args_type is None:
        return
    warnings: list[str] = []
    from_flags = surface.args({}, {})
    try:
        decode_args(args_type, from_flags, "", warnings, strict=False)  # an unknown field: said below
    except ConfigError as e:
        if surface.defaults:
            raise TypeError(f"{plugin}: its defaults from flags do not decode: {e}") from None
        # Without declared defaults, an arg left empty may need a value (--args); a default that is set and fails
        # the plugin's own validation is a bug of the plugin, said now rather than blamed on a flag at run time.
        value = _at(encode_args({**encode_args(args_type()), **from_flags}), e.path)
        if value not in _UNSET:
            raise TypeError(f"{plugin}: args {args_type.__name__}: the default {e.path} {policy_value(value)} fails "
                            f"its own validation: {e.message}") from None
    if warnings:
        raise TypeError(f"{plugin}: its defaults from flags: {warnings[0]}")


_UNSET: tuple[Any, ...] = (None, "", 0, False, [], {})  # `value in _UNSET`: 0.0 and False match 0 too


def _at(value: Any, path: str) -> Any:
    """The value at a ConfigError's path (`a.b[2]`) in JSON-shaped args; None where there is none, or no path."""
    if not path:
        return None
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("[") and isinstance(value, list) and int(part[1:-1]) < len(value):
            value = value[int(part[1:-1])]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return None
    return value


class Registry:
    def __init__(self, specs: Iterable[PluginSpec] = ()) -> None:
        self._specs: dict[str, PluginSpec] = {}
        self.broken: list[str] = []  # one line per out-of-tree plugin that could not be loaded
        self._broken_names: dict[str, str] = {}  # plugin (or entry point) name -> that line
        for s in specs:
            self.register(s)

    def register(self, spec: PluginSpec) -> None:
        if spec.name in self._specs:
            raise RegistryError(f"a plugin named {spec.name} already exists ({self._specs[spec.name].origin})")
        self._specs[spec.name] = spec

    def unregister(self, name: str) -> None:
        if name not in self._specs:
            raise RegistryError(f"no plugin named {name} exists")
        del self._specs[name]

    def merge(self, other: Registry) -> None:
        for spec in other:
            self.register(spec)

    def get(self, name: str) -> PluginSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise RegistryError(self.why_unknown(name)) from None

    def why_unknown(self, name: str) -> str:
        """An unknown name: a plugin that failed to load says why, anything else lists the known ones."""
        if name in self._broken_names:
            return f"plugin {name} is installed but could not be loaded: {self._broken_names[name]}"
        return f"unknown plugin {name!r}; known: {', '.join(sorted(self._specs))}"

    def is_broken(self, name: str) -> bool:
        return name in self._broken_names and name not in self._specs

    def _broken(self, name: str, line: str) -> None:
        self.broken.append(line)
        self._broken_names.setdefault(name, line)

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[PluginSpec]:
        return iter(sorted(self._specs.values(), key=lambda s: s.name))

    def with_points(self, point: str) -> list[PluginSpec]:
        return [s for s in self if point in s.points]

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> None:
        """Register every plugin an installed distribution declares; record, don't raise, on failure."""
        for ep in sorted(entry_points(group=group), key=lambda e: e.name):
            origin = f"{ep.dist.name if ep.dist else '?'} (entry point {ep.name})"
            try:
                loaded = ep.load()
                items = loaded() if callable(loaded) and not isinstance(loaded, type) else loaded
                if not isinstance(items, list | tuple):
                    items = [items]
                specs = [i if isinstance(i, PluginSpec) else PluginSpec.of(i, origin) for i in items]
            except Exception as e:  # any import-time failure of third-party code
                self._broken(ep.name, f"out-of-tree plugin {ep.name} from {origin}: {type(e).__name__}: {e}")
                continue
            for spec in specs:
                try:
                    self.register(spec)
                except RegistryError as e:
                    self._broken(spec.name, f"out-of-tree plugin {spec.name} from {origin}: {e}")
