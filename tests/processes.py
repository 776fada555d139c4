"""Ending the components tests start (koord-descheduler, the upstream descheduler): ask, then insist."""

from __future__ import annotations

import subprocess


def end(proc: subprocess.Popen, grace: float = 10) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
