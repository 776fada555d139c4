"""Colour on a terminal: on unless NO_COLOR is set or the stream is not a terminal. The painter is handed to
whatever prints (plan text, results tables, live lines), which names colours and never checks the terminal itself."""

from __future__ import annotations

import os
import sys
from typing import Any

import click


def color_enabled(stream: Any = None) -> bool:
    stream = stream or sys.stdout
    return not os.environ.get("NO_COLOR") and hasattr(stream, "isatty") and stream.isatty()


class Painter:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, color: str | None, bold: bool = False) -> str:
        if not self.enabled or (color is None and not bold):
            return text
        return click.style(text, fg=color, bold=bold)
