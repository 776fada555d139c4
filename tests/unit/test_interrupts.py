"""interrupts.leave: an exit that waits a moment for reads on their way, then abandons them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest

from kubectl_desched import interrupts


def test_with_no_read_on_its_way_it_exits_as_sys_exit_does() -> None:
    began = time.monotonic()
    with pytest.raises(SystemExit) as e:
        interrupts.leave(3)
    assert e.value.code == 3
    assert time.monotonic() - began < interrupts.GRACE


def test_a_read_that_ends_within_the_grace_is_waited_for() -> None:
    inside, done = threading.Event(), threading.Event()

    def read() -> None:
        with interrupts.abandonable():
            inside.set()
            time.sleep(interrupts.GRACE / 5)
            done.set()

    threading.Thread(target=read).start()
    assert inside.wait(5)
    with pytest.raises(SystemExit) as e:
        interrupts.leave(5)
    assert e.value.code == 5 and done.is_set()  # it left only once the read had ended


_HELD = textwrap.dedent("""
    import atexit, sys, threading, time
    from kubectl_desched import interrupts
    started = threading.Event()
    def held():  # a page whose server never sends the rest
        with interrupts.abandonable():
            started.set()
            time.sleep(600)
    threading.Thread(target=held).start()  # not a daemon: the interpreter's exit would join it
    started.wait()
    atexit.register(lambda: print("exit handler ran", flush=True))
    sys.stdout.write("written, not yet flushed")
    interrupts.leave(130)
""")


def test_a_read_that_does_not_end_is_abandoned_after_the_grace_with_the_exit_handlers_run() -> None:
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", _HELD], capture_output=True, text=True, timeout=60)
    took = time.monotonic() - began
    assert proc.returncode == 130, proc.stderr
    assert proc.stdout == "written, not yet flushedexit handler ran\n"
    assert took < 10, f"took {took:.1f} s"
    assert proc.stderr == ""
