"""Durations as kubectl and metav1.Duration write them, and the API's timestamps."""

import math
import re
from datetime import datetime

from kubectl_desched.errors import UsageError
from kubectl_desched.sanitize import shown

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
# Every duration is at most 10 years: far beyond any real timeout, age or TTL, yet far below what a sleep, a
# deadline or a Go time.Duration (about 292 years) can hold, so no value can overflow after the user confirmed.
MAX_DURATION_SECONDS = 10 * 365 * 24 * 3600
MAX_DURATION_TEXT = "87600h (10 years)"


def duration_seconds(text: str) -> float:
    """A bare number of seconds or a Go duration such as 1m30s, signed as Go's time.ParseDuration allows (-1h),
    in seconds (no range check: see check_duration). Go has no `d` unit, and nor has this. ValueError when it is
    neither."""
    s = text.strip()
    sign = -1.0 if s.startswith("-") else 1.0
    s = s[1:] if s[:1] in ("-", "+") else s
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return sign * float(s)
    pos, total = 0, 0.0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
        pos = m.end()
    if pos != len(s) or not s:
        raise ValueError(text)
    return sign * total


_DAYS = re.compile(r"\s*([+-]?)(\d+)d\s*")


def days_hint(text: object) -> str:
    """What to write instead of days, which Go's durations (and so upstream's policies and kubectl) do not have."""
    if not isinstance(text, str) or not re.search(r"\dd", text):
        return ""
    m = _DAYS.fullmatch(text)
    if m is None or len(m.group(2)) > 9:  # a digit string too long to echo is said shortened elsewhere
        return " (no d unit: a day is 24h)"
    return f" (no d unit: write {m.group(1)}{int(m.group(2)) * 24}h)"


def parse_duration(text: str, flag: str = "--request-timeout") -> float:
    """kubectl-style duration: a bare number of seconds or a Go duration such as 1m30s. 0 means none.
    At most MAX_DURATION_SECONDS."""
    try:
        total = duration_seconds(text)
    except ValueError:
        raise UsageError(f"{flag}: {shown(text)} is not a duration{days_hint(text)}: use a number of seconds or "
                         "a duration such as 30s, 1m, 48h") from None
    check_duration(total, flag, text)
    return total


def check_duration(seconds: float, flag: str, text: object = None) -> None:
    """Range-check a duration in seconds (a digit string can be so long that it is infinite as a float)."""
    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_DURATION_SECONDS:
        raise UsageError(f"{flag}: {shown(seconds if text is None else text)} must be from 0 to {MAX_DURATION_TEXT}")


def parse_time(text: str | None) -> datetime | None:
    """An RFC 3339 timestamp as the API writes it; None when unset or unreadable."""
    if not text:
        return None
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else None


def format_duration(seconds: float) -> str:
    """A duration as Go's time.Duration prints it, which is how metav1.Duration is serialized: 5m0s, 1h0m0s,
    1m30s, 1.5s, 500ms, 0s. Koordinator writes spec.ttl this way."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return f"{sign}{_decimal(ns, size)}{unit}"
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = f"{_decimal(rest, 1_000_000_000)}s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _decimal(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}." + f"{frac:0{digits}d}".rstrip("0")
