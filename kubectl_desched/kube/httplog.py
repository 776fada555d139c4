"""kubectl's -v/--v=N for the requests we make, on stderr in klog's shape: at 6 each request's method, URL, status
and time; at 7 its headers too (credentials masked, as in URLs); at 8 the first KiB of each answer, at 9 the first
64 KiB. The one Secret the tool may read (a Prometheus token's) is not logged, tokens and client keys never reach
the log; what a server answered is made printable (a hostile server must not drive the terminal through the log
either)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from datetime import datetime

from kubectl_desched.sanitize import one_line

_BODY_LIMIT = {8: 1024, 9: 65536}
_MASKED = {"authorization", "proxy-authorization", "cookie"}

verbosity = 0


def set_verbosity(level: int) -> None:
    global verbosity
    verbosity = level


def enabled(level: int) -> bool:
    return verbosity >= level


def log(message: str) -> None:
    now = datetime.now()
    sys.stderr.write(f"I{now:%m%d %H:%M:%S.%f} {os.getpid():>7} {message}\n")


def headers(items: Iterable[tuple[str, str]]) -> str:
    shown = []
    for name, value in items:
        if name.lower() in _MASKED:
            scheme = value.split(" ", 1)[0] if " " in value else ""
            value = f"{scheme} <masked>".strip()
        # the bytes sent (header values go out as latin-1: see config._utf8), read as kubectl's log reads them
        value = value.encode("latin-1", "replace").decode("utf-8", "replace")
        shown.append(f'{name}="{one_line(value, 200)}"')
    return " ".join(shown)


def request(method: str, url: str, items: Iterable[tuple[str, str]]) -> None:
    log(f'"Request" verb="{method}" url="{one_line(url, 2000)}" headers: {headers(items)}')


def response(method: str, url: str, status: int, reason: str, seconds: float) -> None:
    log(f'"Response" verb="{method}" url="{one_line(url, 2000)}" status="{status} {one_line(reason, 100)}" '
        f"milliseconds={round(seconds * 1000)}")


def failure(method: str, url: str, error: BaseException, seconds: float) -> None:
    log(f'"Request failed" verb="{method}" url="{one_line(url, 2000)}" error="{one_line(error, 300)}" '
        f"milliseconds={round(seconds * 1000)}")


def body(data: bytes) -> None:
    limit = next((n for level, n in sorted(_BODY_LIMIT.items(), reverse=True) if verbosity >= level), 0)
    if limit:
        text = data[:limit].decode("utf-8", "replace")
        cut = f" [{len(data):,} bytes in all]" if len(data) > limit else ""
        log(f'"Response Body" body="{one_line(text, limit + 1000)}"{cut}')
