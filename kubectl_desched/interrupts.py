"""Ctrl-C, SIGTERM and SIGHUP are one thing to this tool: the user (or their terminal, or a supervisor) wants it
to stop. All three must leave the same trail: the --report written, what was done said, and exit 128+N as a
shell reports a signal (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP).

Outside the acting phase a signal raises Interrupted (see `raising`); while acting, the runner
(evictors/execute.py) installs its own handlers that only set a flag, so no eviction is cut in half.

A stopped command leaves through `leave`, which does not wait long for reads still on their way (a server that
stops sending mid-page would otherwise hold the command until it gives up)."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import NoReturn

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


# Reads on helper threads that the process may end without waiting for (abandonable), and how long it waits.
_reads = threading.Condition()
_reads_on_their_way = 0
GRACE = 0.5  # a page of 500 pods from a working server arrives well within it


@contextlib.contextmanager
def abandonable() -> Iterator[None]:
    """A read on a helper thread (a list page) that `leave` may abandon: it only reads, so cutting it off loses
    nothing but its answer."""
    global _reads_on_their_way
    with _reads:
        _reads_on_their_way += 1
    try:
        yield
    finally:
        with _reads:
            _reads_on_their_way -= 1
            _reads.notify_all()


def leave(code: int) -> NoReturn:
    """Exit with `code`. Reads still on their way get GRACE seconds to end, as they do from a working server; then
    the process ends without the interpreter's teardown, which would wait for them without bound and, if ended
    under them, tears TLS down beneath a thread still inside it (seen as a SIGSEGV). The exit handlers run first:
    the kubernetes client's among them removes the certificate files it wrote."""
    try:
        with _reads:
            ended = _reads.wait_for(lambda: _reads_on_their_way == 0, timeout=GRACE)
    except (KeyboardInterrupt, Interrupted):  # asked again: no more waiting
        ended = False
    if ended:
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    atexit._run_exitfuncs()
    os._exit(code)
