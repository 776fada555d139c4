"""A plugin's command-line surface, declared beside its args: the flags that set arg paths, the args a run from
flags starts from (where upstream has no default, or one that makes no sense for a one-shot run), and whether a
command runs it when no --plugin is named. The CLI builds its options from these declarations, so an
out-of-tree plugin gets flags exactly as an in-tree one does. Nothing here knows click: cli/ does."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubectl_desched.errors import ConfigError, UsageError
from kubectl_desched.model.durations import parse_duration
from kubectl_desched.sanitize import shown

INT32_MAX = 2**31 - 1  # counts are int32 fields in Kubernetes and in the descheduler's args


class FlagValue(Protocol):
    """How a flag's text becomes the value of its arg, and an arg value is written back as the flag."""

    @property
    def metavar(self) -> str: ...

    def parse(self, value: Any, flag: str) -> Any: ...

    def show(self, raw: Any) -> str: ...


@dataclass(frozen=True)
class Switch:
    """A flag without a value that sets its arg to `value`."""

    value: Any = True
    metavar: str = ""

    def parse(self, value: Any, flag: str) -> Any:
        return copy.deepcopy(self.value)

    def show(self, raw: Any) -> str:
        return "on" if raw == self.value else "off"


@dataclass(frozen=True)
class Integer:
    """A whole number in [low, high], checked when the flag is parsed (exit 2), never after a confirmation."""

    low: int = 0
    high: int = INT32_MAX
    note: str = ""  # appended to the range in the error, e.g. " (-1: the pod's own)"
    metavar: str = "N"

    def parse(self, value: Any, flag: str) -> Any:
        return value  # the CLI's integer type has checked the range already

    def show(self, raw: Any) -> str:
        return str(raw)


@dataclass(frozen=True)
class Percentages:
    """RESOURCE=PERCENT[,...], e.g. cpu=20,memory=20: a ResourceThresholds map."""

    metavar: str = "R=PCT,..."

    def parse(self, value: Any, flag: str) -> dict[str, float]:
        out = {}
        for part in str(value).split(","):
            name, sep, number_text = part.partition("=")
            try:
                number = float(number_text)
                if not sep or not name.strip() or not math.isfinite(number):  # nan and inf compare as nothing else
                    raise ValueError
                out[name.strip()] = number
            except ValueError:
                raise UsageError(f"{flag}: expected RESOURCE=PERCENT[,...] such as cpu=20,memory=20, "
                                 f"got {shown(part)}") from None
        return out

    def show(self, raw: Any) -> str:
        return ",".join(f"{k}={v:g}" for k, v in raw.items())


@dataclass(frozen=True)
class Seconds:
    """A duration (5m, 168h) as the whole seconds an int arg holds."""

    metavar: str = "DURATION"

    def parse(self, value: Any, flag: str) -> int:
        return int(parse_duration(str(value), flag))

    def show(self, raw: Any) -> str:
        hours, rest = divmod(int(raw), 3600)
        return f"{hours}h" if hours and not rest else f"{int(raw)}s"


@dataclass(frozen=True)
class DurationText:
    """A duration checked with the CLI's bounds and passed on as written, for a metav1.Duration arg."""

    metavar: str = "DURATION"

    def parse(self, value: Any, flag: str) -> str:
        parse_duration(str(value), flag)
        return str(value)

    def show(self, raw: Any) -> str:
        return str(raw)


@dataclass(frozen=True)
class Names:
    """A comma-separated list of non-empty words, for a list-of-strings arg."""

    metavar: str = "A,B"

    def parse(self, value: Any, flag: str) -> list[str]:
        items = [v.strip() for v in str(value).split(",")]
        if any(not v for v in items):
            raise UsageError(f"{flag}: empty item in {shown(value)}")
        return items

    def show(self, raw: Any) -> str:
        return ",".join(raw)


@dataclass(frozen=True)
class Text:
    """Any one string, for a string arg; `check` (e.g. label_key_problem) says what is wrong with it, or None."""

    metavar: str = "TEXT"
    check: Callable[[str], str | None] | None = None

    def parse(self, value: Any, flag: str) -> str:
        text = str(value)
        problem = self.check(text) if self.check is not None else None
        if problem:
            raise UsageError(f"{flag}: {shown(text)}: {problem}")
        return text

    def show(self, raw: Any) -> str:
        return str(raw)


@dataclass(frozen=True)
class Flag:
    """One flag that sets one arg path of the plugin that declares it. Several plugins may declare the same
    flag (--thresholds, --number-of-nodes) with the same kind of value: the CLI shows it once and sets each."""

    name: str  # "--pod-restart-threshold"
    path: str  # the arg it sets, dotted into nested objects: "evictionLimits.node"
    help: str
    value: FlagValue = field(default_factory=Switch)
    default_help: str | None = None  # what [default: ...] says when the default is not one plain value

    @property
    def dest(self) -> str:
        return self.name.lstrip("-").replace("-", "_")

    @property
    def key(self) -> str:
        """The top-level arg the flag sets: an error on that arg is an error of this flag."""
        return self.path.split(".")[0]

    def set(self, args: dict[str, Any], value: Any) -> None:
        *parents, last = self.path.split(".")
        for part in parents:
            args = args.setdefault(part, {})
        args[last] = self.value.parse(value, self.name)


Defaults = Mapping[str, Any] | Callable[[Mapping[str, Any]], Mapping[str, Any]]


@dataclass(frozen=True)
class CliSurface:
    """What `kubectl desched` offers for a plugin besides --plugin and --args."""

    flags: tuple[Flag, ...] = ()
    # The args a run from flags starts from; a function gets the args the given flags set (so one threshold
    # flag can default the other for the same resources).
    defaults: Defaults = field(default_factory=dict)
    # Args that, set by a flag or --args, drop `defaults` as a whole (criteria that would otherwise combine).
    replaced_by: frozenset[str] = frozenset()
    by_default: bool = False  # `balance` or `deschedule` (its extension point) runs it when no --plugin is named
    explain: bool = False  # `explain` runs it when no --plugin is named

    def args(self, values: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        """The plugin's args from flags: our defaults, then what its flags set (values: flag name -> value, the
        flags given only), then --args on top, each replacing whole top-level args."""
        from_flags: dict[str, Any] = {}
        for flag in self.flags:
            if flag.name in values:
                flag.set(from_flags, values[flag.name])
        defaults = self.defaults(from_flags) if callable(self.defaults) else copy.deepcopy(dict(self.defaults))
        if self.replaced_by & (set(from_flags) | set(given)):
            defaults = {}
        return {**defaults, **from_flags, **given}

    def flag_error(self, plugin: str, error: ConfigError, given: Mapping[str, Any],
                   values: Mapping[str, Any] | None = None, *, warning: bool = False) -> str:
        """An error (or warning) in args built from flags, said as the flag that set that arg (values: the flags
        given), or as --args when --args set it (given); an arg neither set is the plugin's, with the ways to set
        it."""
        key = error.path.split(".")[0].split("[")[0]
        flag = None if key in given else next((f for f in self.flags if f.key == key), None)
        if flag is not None and (values is None or flag.name in values):
            return f"{flag.name}: {error.path}: {error.message}"
        if not warning and (flag is not None or key not in given):
            ways = f"{flag.name} or --args {plugin}" if flag is not None else f"--args {plugin}"
            return f"{plugin}: {error.path or 'args'}: {error.message} (set it with {ways})"
        return f"--args {plugin}: {error.path or 'args'}: {error.message}"

    def default_text(self, flag: Flag) -> str | None:
        """The default --help shows for one of its flags: what a run without the flag gives that arg."""
        if flag.default_help is not None:
            return flag.default_help
        value: Any = self.args({}, {})
        for part in flag.path.split("."):
            if not isinstance(value, Mapping) or part not in value:
                return None
            value = value[part]
        return flag.value.show(value)
