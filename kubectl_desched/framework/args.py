"""Plugin args as dataclasses, decoded from policy YAML with the field path in every error.

A PluginArgs dataclass declares fields with upstream's JSON names (snake_case turned into camelCase, or
`field(metadata={"key": ...})`), defaults, and a `validate(path)` for rules across fields.

Args are decoded as upstream's strict decoder does (sigs.k8s.io/json with DisallowUnknownFields): a key that is
not a field, compared case-sensitively, is an error, at any depth. The policy decoder turns that off only where
upstream decodes a plugin's args leniently (koord-descheduler's copies of the upstream plugins); then the
field is warned about and ignored."""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ClassVar, Literal, get_args, get_origin, get_type_hints

from kubectl_desched.errors import ConfigError
from kubectl_desched.model.durations import MAX_DURATION_SECONDS, MAX_DURATION_TEXT, days_hint, duration_seconds
from kubectl_desched.model.label_selectors import Matcher, label_selector
from kubectl_desched.model.shapes import policy_value, yaml_hint


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def json_key(f: dataclasses.Field) -> str:
    return f.metadata.get("key") or camel(f.name)


class PluginArgs:
    """Base for args dataclasses; subclasses add fields and may override validate."""

    deprecated: ClassVar[Mapping[str, str]] = {}

    def validate(self, path: str) -> None:
        """Raise ConfigError(path + field, message) for values that are wrong together."""


def _type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if tp is bool:
        return "a boolean"
    if tp is int:
        return "an integer"
    if tp is float:
        return "a number"
    if tp is str:
        return "a string"
    if origin in (list, tuple):
        return "a list"
    if origin in (dict, Mapping) or (isinstance(tp, type) and dataclasses.is_dataclass(tp)):
        return "an object"
    return str(tp)


def _convert(tp: Any, value: Any, path: str, warnings: list[str]) -> Any:
    origin = get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        options = [a for a in get_args(tp) if a is not type(None)]
        if value is None:
            return None
        return _convert(options[0], value, path, warnings)
    if tp is Any:
        return value
    if origin is Literal:
        allowed = get_args(tp)
        if value not in allowed:
            raise ConfigError(path, f"must be one of {', '.join(map(str, allowed))}, not {policy_value(value)}"
                                    f"{yaml_hint('a string', value)}")
        return value
    if isinstance(tp, type) and hasattr(tp, "from_raw"):
        return tp.from_raw(value, path)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return decode_args(tp, value, path, warnings)
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(path, f"must be a boolean, not {policy_value(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise ConfigError(path, f"must be an integer, not {policy_value(value)}")
        if not -(2**63) <= value < 2**63:  # what upstream's Go integers hold
            raise ConfigError(path, f"must be an integer from -2^63 to 2^63-1, not {policy_value(value)}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(path, f"must be a number, not {policy_value(value)}")
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):  # JSON has no inf or NaN (YAML has .inf and .nan)
            raise ConfigError(path, f"must be a finite number, not {policy_value(value)}")
        return number
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(path, f"must be a string, not {policy_value(value)}{yaml_hint('a string', value)}")
        return value
    if origin in (list, tuple):
        if value is None:
            return []
        if not isinstance(value, list):
            raise ConfigError(path, f"must be a list, not {policy_value(value)}")
        (item_type, *_) = get_args(tp) or (Any,)
        return [_convert(item_type, v, f"{path}[{i}]", warnings) for i, v in enumerate(value)]
    if origin in (dict, Mapping):
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise ConfigError(path, f"must be an object, not {policy_value(value)}")
        _, value_type = get_args(tp) or (str, Any)
        for k in value:
            if not isinstance(k, str):  # a number or a YAML boolean: the API's maps have string keys
                raise ConfigError(path, f"keys must be strings, not {policy_value(k)}{yaml_hint('a string', k)}")
        return {k: _convert(value_type, v, f"{path}.{k}", warnings) for k, v in value.items()}
    raise ConfigError(path, f"cannot decode a value of type {tp}")


@dataclasses.dataclass
class _Decoding:
    strict: bool
    warnings: list[str]


_DECODING: ContextVar[_Decoding | None] = ContextVar("kubectl_desched_args_decoding", default=None)


@contextmanager
def _decoding(strict: bool | None, warnings: list[str] | None) -> Iterator[_Decoding]:
    """The strictness and the warnings list of the decoding under way: nested decode_args calls, a `from_raw`
    and a `validate` inherit them without passing them along."""
    outer = _DECODING.get()
    state = _Decoding(strict if strict is not None else (outer.strict if outer else True),
                      warnings if warnings is not None else (outer.warnings if outer else []))
    token = _DECODING.set(state)
    try:
        yield state
    finally:
        _DECODING.reset(token)


def unknown_field(path: str, key: str, known: Iterable[str]) -> None:
    """A key that is not a field at `path`: a ConfigError while decoding strictly (the default, as upstream's
    strict decoder refuses it), else a warning."""
    sub = f"{path}.{key}" if path else str(key)
    state = _DECODING.get()
    if state is not None and not state.strict:
        state.warnings.append(f"{sub}: unknown field, ignored")
        return
    raise ConfigError(sub, f"unknown field{field_hint(key, known)}")


def field_hint(key: Any, known: Iterable[str]) -> str:
    """What an unknown field may have meant: a known field spelled with other case (Go's strict decoding
    compares names case-sensitively), or a close one."""
    names = sorted(known)
    if not isinstance(key, str) or not names:
        return ""
    same = [n for n in names if n.lower() == key.lower()]
    if same:
        return f" (field names are case-sensitive: {same[0]})"
    close = difflib.get_close_matches(key, names, n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def check_fields(value: Mapping[Any, Any], known: Iterable[str], path: str) -> None:
    """Every key of an object decoded by hand (a selector, a map kept as is) must be one of `known`."""
    names = set(known)
    for key in value:
        if key not in names:
            unknown_field(path, key, names)


def decode_args(cls: type, raw: Any, path: str, warnings: list[str] | None = None, *,
                strict: bool | None = None) -> Any:
    """Build `cls` from a policy mapping. A key that is not a field of `cls` is an error, as in upstream's
    strict decoding (`strict=False`: a warning, the field ignored); wrong types and invalid values are errors.
    Nested args, `from_raw` and `validate` decode with the same strictness and warnings list (`None`: those of
    the decoding under way, else strict)."""
    with _decoding(strict, warnings) as state:
        return _decode(cls, raw, path, state.warnings)


def _decode(cls: type, raw: Any, path: str, warnings: list[str]) -> Any:
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(path, f"must be an object, not {policy_value(raw)}")
    hints = get_type_hints(cls)
    by_key = {json_key(f): f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    deprecated = getattr(cls, "deprecated", {})
    for key, value in raw.items():
        f = by_key.get(key)
        sub = f"{path}.{key}" if path else str(key)
        if f is None:
            if not path and key in ("apiVersion", "kind"):  # metav1.TypeMeta, inline at the top of every args type
                continue
            unknown_field(path, key, by_key)
            continue
        if key in deprecated:
            warnings.append(f"{sub}: deprecated, {deprecated[key]}")
        kwargs[f.name] = _convert(hints[f.name], value, sub, warnings)
    obj = cls(**kwargs)
    if isinstance(obj, PluginArgs):
        obj.validate(path)
    return obj


def encode_args(obj: Any) -> Any:
    """Args back to their JSON form (for `plugins -o json` and reports)."""
    if hasattr(obj, "to_raw"):  # before dataclasses: Duration and selectors have their own JSON form
        return obj.to_raw()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {json_key(f): encode_args(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, list | tuple):
        return [encode_args(v) for v in obj]
    if isinstance(obj, Mapping):
        return {k: encode_args(v) for k, v in obj.items()}
    return obj


@dataclasses.dataclass
class IncludeExclude:
    """`{include: [...]}` or `{exclude: [...]}`, never both (namespaces, owner kinds)."""

    include: list[str] = dataclasses.field(default_factory=list)
    exclude: list[str] = dataclasses.field(default_factory=list)

    @classmethod
    def from_raw(cls, value: Any, path: str) -> IncludeExclude:
        obj = decode_args(cls, value, path)
        if obj.include and obj.exclude:
            raise ConfigError(path, "only one of include and exclude can be set")
        return obj

    def to_raw(self) -> dict[str, list[str]]:
        return {k: v for k, v in (("include", self.include), ("exclude", self.exclude)) if v}

    def allows(self, name: str) -> bool:
        if self.include:
            return name in self.include
        return name not in self.exclude


class Namespaces(IncludeExclude):
    """A plugin's `namespaces` arg."""


def percent_map(value: Mapping[str, float], path: str) -> dict[str, float]:
    """ResourceThresholds: resource name -> percent in [0, 100]."""
    out = {}
    for name, pct in value.items():
        if not 0 <= pct <= 100:
            raise ConfigError(f"{path}.{name}", f"must be between 0 and 100, not {pct:g}")
        out[name] = pct
    return out


@dataclasses.dataclass
class Duration:
    """metav1.Duration: "90s", "5m", "1h30m"."""

    seconds: float = 0.0
    text: str = ""

    @classmethod
    def from_raw(cls, value: Any, path: str) -> Duration:
        if isinstance(value, int | float) and not isinstance(value, bool):
            try:
                seconds = float(value)  # an int too large for a float overflows
            except OverflowError:
                seconds = math.inf
            text = f"{value}s"
        elif isinstance(value, str):
            try:
                seconds, text = duration_seconds(value), value
            except ValueError:
                raise ConfigError(path, f"must be a duration such as 5m, not {policy_value(value)}"
                                        f"{days_hint(value)}") from None
        else:
            raise ConfigError(path, f"must be a duration such as 5m, not {policy_value(value)}")
        # The sign is the plugin's to check; the size is checked here, so nothing overflows later.
        if not math.isfinite(seconds) or abs(seconds) > MAX_DURATION_SECONDS:
            raise ConfigError(path, f"must be at most {MAX_DURATION_TEXT}, not {policy_value(value)}")
        return cls(seconds, text)

    def to_raw(self) -> str:
        return self.text


@dataclasses.dataclass
class LabelSelectorArg:
    """A metav1.LabelSelector in args, compiled once."""

    raw: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_raw(cls, value: Any, path: str) -> LabelSelectorArg:
        check_selector_fields(value, path)
        try:
            label_selector(value)
        except ValueError as e:
            raise ConfigError(path, str(e)) from None
        return cls(value or {})

    def matcher(self) -> Matcher:
        return label_selector(self.raw)

    def to_raw(self) -> Mapping[str, Any]:
        return self.raw


SELECTOR_FIELDS = ("matchLabels", "matchExpressions")
REQUIREMENT_FIELDS = ("key", "operator", "values")


def check_selector_fields(value: Any, path: str) -> None:
    """metav1.LabelSelector's fields, and its requirements', decoded as strictly as args are."""
    if not isinstance(value, Mapping):
        return  # label_selector says what is wrong with it
    check_fields(value, SELECTOR_FIELDS, path)
    expressions = value.get("matchExpressions")
    for i, expr in enumerate(expressions if isinstance(expressions, list) else []):
        if isinstance(expr, Mapping):
            check_fields(expr, REQUIREMENT_FIELDS, f"{path}.matchExpressions[{i}]")
