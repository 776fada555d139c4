"""The cycle collector is off while the command starts. Importing the CLI, the plugins and the kubernetes client
makes objects that live as long as the process, and the collector scanned them again and again: 33-36 ms of a
live `explain node`, 9-15 ms of a completion request. The console scripts (cli/launch.py) turn it off before the CLI
is imported. The first read of a cluster or a snapshot turns it back on, with everything made so far frozen out
of its reach (model.cycle_collector_paused). A command that reads nothing is short, and ends with it still off."""

from __future__ import annotations

import gc

_paused_for_start = False


def pause_for_start() -> None:
    global _paused_for_start
    if gc.isenabled():
        gc.disable()
        _paused_for_start = True


def end_start_pause() -> bool:
    """Whether the collector was off for starting: then it is the caller's to turn back on (once)."""
    global _paused_for_start
    was, _paused_for_start = _paused_for_start, False
    return was
