"""The suite's own process: signals a test sends must be delivered, however the suite was started."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from kubectl_desched import sanitize


def pytest_configure(config: pytest.Config) -> None:
    # Started as a background job (SIGINT ignored) or under nohup (SIGHUP ignored), the suite and every process it
    # starts would inherit the ignoring, and the tests of Ctrl-C, SIGTERM and SIGHUP would test nothing. The tool
    # itself keeps an ignored signal ignored (kubectl_desched/interrupts.py); its tests say so on their own.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_IGN:
            signal.signal(sig, signal.SIG_DFL)


@pytest.fixture(autouse=True)
def _forget_held_credentials() -> Iterator[None]:
    """What one test's connect() held (sanitize.hold) must not take words out of the next test's output."""
    yield
    sanitize.forget_held()
