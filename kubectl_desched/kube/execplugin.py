"""A bound on how long an exec credential plugin may take. The kubernetes client runs the plugin
(kubernetes.config.exec_provider) and waits for it as long as it runs; here its Popen is replaced by one whose
communicate() gives up after the bound, kills the plugin and raises PluginTimeout, which names it. The rest of what
the client does with a plugin is left as it is."""

from __future__ import annotations

import subprocess
import types
from typing import Any

from kubectl_desched.sanitize import one_line

DEFAULT_BOUND = 30.0  # without --request-timeout; a plugin that may ask at the terminal gets INTERACTIVE_BOUND
INTERACTIVE_BOUND = 300.0  # a login in a browser, a second factor

_bound = DEFAULT_BOUND
_timeouts: list[PluginTimeout] = []


class PluginTimeout(Exception):
    def __init__(self, command: str, seconds: float) -> None:
        super().__init__(f"exec credential plugin {one_line(command, 300)} did not answer within {seconds:g}s")


class _BoundedPopen(subprocess.Popen):  # type: ignore[type-arg]
    def communicate(self, input: Any = None, timeout: float | None = None) -> Any:
        try:
            return super().communicate(input, _bound if timeout is None else timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            self.wait()
            # What the plugin started may still hold the pipes: they are closed, not read to their end.
            for pipe in (self.stdout, self.stderr):
                if pipe is not None:
                    pipe.close()
            command = self.args[0] if isinstance(self.args, list | tuple) else self.args
            _timeouts.append(PluginTimeout(str(command), _bound if timeout is None else timeout))
            raise _timeouts[-1] from None


class _Subprocess(types.ModuleType):
    """The subprocess module as exec_provider sees it: the same but for Popen."""

    Popen = _BoundedPopen

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)


def bound(seconds: float) -> None:
    """Every exec plugin the client runs from now on (refreshes too) has `seconds` to answer."""
    global _bound
    from kubernetes.config import exec_provider

    _bound = seconds
    exec_provider.subprocess = _Subprocess("subprocess")  # type: ignore[attr-defined]
    _timeouts.clear()


def timed_out() -> PluginTimeout | None:
    """The last plugin that did not answer in time since bound() or this was last called, if one did not (the client
    only logs it)."""
    late = _timeouts[-1] if _timeouts else None
    _timeouts.clear()
    return late
