"""Durations as kubectl and metav1.Duration write them, and the API's timestamps."""

import re
from datetime import datetime

from kubectl_desched.errors import UsageError

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str, flag: str = "--request-timeout") -> float:
    """kubectl-style duration: a bare number of seconds or a Go duration such as 1m30s. 0 means none."""
    s = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return float(s)
    pos, total = 0, 0.0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
        pos = m.end()
    if pos != len(s) or not s:
        raise UsageError(f"invalid {flag} {text!r}: use a number of seconds or a duration such as 30s, 1m")
    return total


def parse_time(text: str | None) -> datetime | None:
    """An RFC 3339 timestamp as the API writes it; None when unset or unreadable."""
    if not text:
        return None
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else None
