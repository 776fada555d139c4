"""A plugin's exception as the one line the user reads, naming the file and line it came from, with the full
traceback kept for -v 6 and above: a plugin author can find the failing line without a debugger, and a user
sees no traceback unless they ask."""

from __future__ import annotations

import os
import sys
import traceback

from kubectl_desched.errors import DeschedError


class PluginFailed(DeschedError):
    """A plugin raised; `trace` is the traceback, shown at -v 6 and above."""

    def __init__(self, message: str, trace: str) -> None:
        super().__init__(message)
        self.trace = trace


def where(error: BaseException, plugin: type) -> str:
    """`file.py:42 in deschedule`: the innermost frame in the plugin's own package (its top-level package's
    folder), else the innermost frame of all."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return "unknown place"
    top = sys.modules.get(plugin.__module__.split(".")[0])
    home = os.path.dirname(getattr(top, "__file__", None) or "") or None
    own = [f for f in frames if home and os.path.abspath(f.filename).startswith(home + os.sep)]
    frame = (own or frames)[-1]
    return f"{frame.filename}:{frame.lineno} in {frame.name}"


def describe(error: BaseException, plugin: type) -> tuple[str, str]:
    """`ZeroDivisionError: division by zero (at file.py:42 in deschedule)`, and the traceback."""
    return (f"{type(error).__name__}: {error} (at {where(error, plugin)})",
            "".join(traceback.format_exception(error)).rstrip("\n"))
