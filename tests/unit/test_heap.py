"""One malloc heap for a live read's threads (heap.py): checked in a child process with glibc's own arena report."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's arena limit is glibc's")

CHILD = """
import ctypes, sys, threading
from kubectl_desched import heap
if sys.argv[1] == "one":
    heap.one_heap()
def work():
    kept = [bytes(1000) for _ in range(1000)]
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
ctypes.CDLL(None).malloc_stats()  # one "Arena N:" block per heap, on stderr
"""


def _heaps(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, check=True)
    return sum(line.startswith("Arena ") for line in done.stderr.splitlines())


def test_threads_started_after_it_share_the_one_heap() -> None:
    assert _heaps("default") > 1  # glibc's own way: a heap per thread that allocates
    assert _heaps("one") == 1
