"""A small pool of reused daemon worker threads for the runner (evictors/execute.py).

Starting a thread per eviction cost most of the runner's bookkeeping at 30,000 candidates. concurrent.futures'
pool would reuse threads too, but its workers are joined when the interpreter exits: an eviction abandoned by a
second Ctrl-C (a request hung on a dead connection) would then hold the process open. These workers are daemons,
started only when every existing one is busy, and never more than `limit`."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

Task = tuple[Callable[..., Any], tuple[Any, ...]] | None  # None tells one worker to end


class DaemonPool:
    def __init__(self, name: str, limit: int | None = None) -> None:
        self.name = name
        self.limit = limit  # None: grow to whatever the caller runs at once (the caller bounds it)
        self._tasks: queue.SimpleQueue[Task] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self.threads = 0

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        with self._lock:
            grow = self._idle == 0 and (self.limit is None or self.threads < self.limit)
            if grow:
                self.threads += 1
            elif self._idle:
                self._idle -= 1  # an idle worker takes this task
        self._tasks.put((fn, args))
        if grow:
            threading.Thread(target=self._loop, daemon=True, name=f"{self.name}-{self.threads}").start()

    def close(self) -> None:
        """Let every worker end once its current task (if any) returns; never waits."""
        for _ in range(self.threads):
            self._tasks.put(None)

    def _loop(self) -> None:
        while (task := self._tasks.get()) is not None:
            fn, args = task
            try:
                fn(*args)
            finally:
                with self._lock:
                    self._idle += 1
