"""Ctrl-C, SIGTERM and SIGHUP are one thing to this tool: the user (or their terminal, or a supervisor) wants it
to stop. All three must leave the same trail: the --report written, what was done said, and exit 128+N as a
shell reports a signal (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP).

Outside the acting phase a signal raises Interrupted (see `raising`); while acting, the runner
(evictors/execute.py) installs its own handlers that only set a flag, so no eviction is cut in half."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_NAMES = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}

Handler = Callable[[int, FrameType | None], None]


def signal_name(signum: int) -> str:
    """How the user knows the signal: Ctrl-C for SIGINT, else its name."""
    try:
        return _NAMES.get(signal.Signals(signum), signal.Signals(signum).name)
    except ValueError:
        return f"signal {signum}"


def exit_code(signum: int) -> int:
    return 128 + signum


class Interrupted(BaseException):
    """A signal arrived outside the acting phase. Not a KeyboardInterrupt on purpose: click.prompt turns a
    KeyboardInterrupt into Abort, which reads as "not confirmed" (exit 3), not as an interrupt."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal_name(signum))
        self.signum = signum

    @property
    def name(self) -> str:
        return signal_name(self.signum)

    @property
    def exit_code(self) -> int:
        return exit_code(self.signum)


def _raise(signum: int, _frame: FrameType | None) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def handling(handler: Handler) -> Iterator[None]:
    """`handler` for SIGINT, SIGTERM and SIGHUP inside the block (those not ignored), the previous handlers restored
    after. Only the
    main thread may install signal handlers: elsewhere (tests driving the app from a thread) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # A signal the process was started ignoring stays ignored: nohup's SIGHUP, a background job's SIGINT.
    previous = {s: signal.signal(s, handler) for s in SIGNALS if signal.getsignal(s) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, signal.SIG_DFL if h is None else h)  # None: a handler Python did not install


def raising() -> contextlib.AbstractContextManager[None]:
    """Inside the block each of the three signals raises Interrupted (SIGTERM and SIGHUP would otherwise kill
    the process on the spot, with no report)."""
    return handling(_raise)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """The three signals wait until the block is done (e.g. the report's write), then raise Interrupted."""
    got: list[int] = []
    with handling(lambda signum, _frame: got.append(signum)):
        yield
    if got:
        raise Interrupted(got[0])
