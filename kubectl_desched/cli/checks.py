"""What can be refused from a flag alone is refused when it is parsed, before anything is read, asked or sent
(exit 2), as one line that quotes the bad value shortened."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import click

from kubectl_desched.errors import UsageError
from kubectl_desched.framework.flags import INT32_MAX
from kubectl_desched.model.durations import parse_duration
from kubectl_desched.model.label_selectors import parse_selector
from kubectl_desched.model.names import dns1123_label_problem, dns1123_subdomain_problem
from kubectl_desched.sanitize import short, shown

MAX_IN_FLIGHT = 1000  # each eviction in flight is a thread and a connection


class Count(click.ParamType):
    """An integer flag checked against its range when it is parsed (exit 2), never after the user confirmed;
    a 400-digit value is refused without being echoed whole."""

    name = "integer"

    def __init__(self, low: int, high: int, note: str = "") -> None:
        self.low, self.high, self.note = low, high, note

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            text = str(value).strip()
            if not re.fullmatch(r"[+-]?[0-9]+", text):
                self.fail(f"{shown(value)} is not an integer", param, ctx)
            # Python refuses int() of more than 4300 digits; anything past 19 is out of range anyway.
            digits = text.lstrip("+-").lstrip("0")
            number = int(text) if len(digits) <= 19 else (-1 if text.startswith("-") else 1) * 10**20
        if not self.low <= number <= self.high:
            self.fail(f"must be from {self.low} to {self.high}{self.note}, not {shown(value)}", param, ctx)
        return number


COUNT = Count(0, INT32_MAX)


def name(what: str, value: str, problem: Callable[[str], str | None], given: str | None = None) -> None:
    if not value:  # `-n "$NS"` with NS unset must not fall back to another namespace
        raise UsageError(f"{what}: empty name in {shown(given if given is not None else value)}")
    why = problem(value)
    if why:
        raise UsageError(f"{what}: {shown(value)} {why}")


def names(flag: str, values: tuple[str, ...] | str | None, problem: Callable[[str], str | None]) -> tuple[str, ...]:
    """Every comma-separated name of a (repeatable) flag, each non-empty and valid, or one error naming it."""
    out = []
    for item in (values,) if isinstance(values, str) else values or ():
        for part in item.split(","):
            name(flag, part.strip(), problem, item)
            out.append(part.strip())
    return tuple(out)


def selector(flag: str, text: str | None) -> str | None:
    if text is not None:
        try:
            parse_selector(text)
        except ValueError as e:
            raise UsageError(f"{flag}: {e}") from None
    return text


def duration(flag: str, text: str | None, default: float | None = None) -> float | None:
    return default if text is None else parse_duration(text, flag)


def server_url(value: str | None) -> str | None:
    """-s/--server: an http(s) URL, or a bare host[:port] (kube/serverurl.py). Only why it is refused is said: the
    URL may hold a password."""
    if value is None or not value.strip():
        return value  # none given, or empty: ConnectionFlags.check says so
    from kubectl_desched.kube import serverurl

    if (why := serverurl.problem(value)) is not None:
        raise UsageError(f"-s/--server: {why}")
    return value


def file_name(flag: str, path: str | None) -> str | None:
    if path is not None and not path.strip():
        raise UsageError(f"{flag}: the file name must not be empty")
    return path


def plugin_args(values: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """--args PLUGIN=JSON|YAML, repeatable; later keys of the same plugin win."""
    from kubectl_desched import safeload  # yaml: only a command given --args loads it

    out: dict[str, dict[str, Any]] = {}
    for v in values:
        plugin, sep, text = v.partition("=")
        try:  # YAML 1.1 as upstream reads policies, bounded in size and depth
            parsed = safeload.yaml_value(text, f"--args {plugin.strip()}") if sep else None
        except safeload.InputError as e:
            if "not valid YAML" not in str(e):
                raise  # too big or too deep: say so
            parsed = None
        if not sep or not isinstance(parsed, dict):
            raise UsageError(f"--args: expected PLUGIN={{...}} with a JSON/YAML object, got {short(repr(v))}")
        out.setdefault(plugin.strip(), {}).update(parsed)
    return out


POD_TYPES = ("pod", "pods", "po")


def pod_reference(value: str, namespaces: tuple[str, ...]) -> tuple[str | None, str]:
    """`NAME`, `pod/NAME` (kubectl's TYPE/NAME) or `NAMESPACE/NAME`, as (namespace or None, name). A namespace in
    the argument must agree with -n, as a second source of truth would otherwise win silently."""
    first, sep, rest = value.partition("/")
    if not sep:
        namespace, pod = None, value
    elif first in POD_TYPES:
        namespace, pod = None, rest
    else:
        namespace, pod = first, rest
        name("POD", namespace, dns1123_label_problem, value)
        if namespaces and namespaces != (namespace,):
            raise UsageError(f"POD: {shown(value)} names namespace {namespace}, but -n says {', '.join(namespaces)}")
    name("POD", pod, dns1123_subdomain_problem, value)
    return namespace, pod
