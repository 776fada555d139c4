"""The CPU-time scaling check itself (tests/scaling.py) tells linear work from quadratic work."""

from __future__ import annotations

import pytest

from tests.scaling import assert_grows_linearly, cpu_seconds


def pairs(n: int) -> int:
    items = list(range(n))
    return sum(1 for a in items for b in items if a < b)


def sorted_sum(n: int) -> int:
    return sum(sorted(range(n, 0, -1)) * 50)


def test_linear_work_passes_and_quadratic_work_fails() -> None:
    assert_grows_linearly(cpu_seconds(lambda: sorted_sum(200_000)), cpu_seconds(lambda: sorted_sum(800_000)), "sum")
    with pytest.raises(AssertionError, match="quadratic ~16x"):
        assert_grows_linearly(cpu_seconds(lambda: pairs(600)), cpu_seconds(lambda: pairs(2_400)), "pairs")
