"""Scaling checked by CPU time at two sizes, not by a wall-clock limit: a shared, noisy machine makes any fixed
limit either flaky or too loose to catch a quadratic step, while the ratio of CPU times at 1x and 4x the input
stays near 4 for linear work (n log n: ~5) and near 16 for quadratic work."""

from __future__ import annotations

import time
from collections.abc import Callable

LINEAR_BOUND = 8.0  # 4x the input may cost at most this many times the CPU


def cpu_seconds(work: Callable[[], object], tries: int = 2) -> float:
    """The least process CPU time `work` took in `tries` runs: a burst elsewhere on the machine only ever adds."""
    best = float("inf")
    for _ in range(tries):
        began = time.process_time()
        work()
        best = min(best, time.process_time() - began)
    return best


def assert_grows_linearly(small: float, large: float, what: str) -> None:
    assert large / small < LINEAR_BOUND, (f"{what}: {small:.2f} s CPU at 1x, {large:.2f} s at 4x "
                                          f"({large / small:.1f}x; linear is ~4x, quadratic ~16x)")
