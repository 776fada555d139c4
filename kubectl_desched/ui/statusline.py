"""One line on a terminal's stderr that says where the evictions stand, redrawn in place; other lines printed
while it shows clear it first, so nothing is drawn over."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from kubectl_desched.evictors.execute import Tick

CLEAR = "\r\x1b[K"


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m}:{s:02d}"


class StatusLine:
    def __init__(self, stream: TextIO, every: float = 0.1, clock: Callable[[], float] | None = None) -> None:
        self.stream = stream
        self.every = every
        self.clock = clock or time.monotonic
        self.started = self.clock()
        self.drawn_at: float | None = None
        self.shown = False

    @staticmethod
    def text(tick: Tick, elapsed: float) -> str:
        line = f"evicting: {tick.done}/{tick.total} done, {tick.in_flight} in flight, {_clock(elapsed)} elapsed"
        if tick.next_in is not None:
            line += f", next in {tick.next_in:.0f}s"
        return line

    def update(self, tick: Tick) -> None:
        now = self.clock()
        if self.drawn_at is not None and now - self.drawn_at < self.every:
            return  # 30,000 instant evictions must not mean 30,000 redraws
        self.drawn_at = now
        self.stream.write(CLEAR + self.text(tick, now - self.started))
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write(CLEAR)
            self.stream.flush()
            self.shown = False
