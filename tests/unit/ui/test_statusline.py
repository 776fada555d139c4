"""The progress line while evicting: what it says, how often it is drawn, and that the runner feeds it."""

from __future__ import annotations

import io
import threading
from typing import Any

from kubectl_desched.evictors.base import EvictionResult
from kubectl_desched.evictors.execute import EvictionRunner, Pacing, Tick
from kubectl_desched.ui.statusline import CLEAR, StatusLine
from tests.unit.evictors.test_eviction_api_fake_server import cand


class Instant:
    name = "instant"

    def evict(self, c: Any, stop: threading.Event) -> EvictionResult:
        return EvictionResult(c, "evicted", "")

    def settle(self, results: list[EvictionResult], stop: threading.Event) -> list[EvictionResult]:
        return results


def test_the_line_says_done_in_flight_elapsed_and_the_interval_countdown() -> None:
    assert StatusLine.text(Tick(12, 40, 2, None), 75.4) == "evicting: 12/40 done, 2 in flight, 1:15 elapsed"
    assert StatusLine.text(Tick(3, 40, 0, 4.2), 5) == "evicting: 3/40 done, 0 in flight, 0:05 elapsed, next in 4s"


def test_redraws_are_rate_limited_and_clear_leaves_a_clean_line() -> None:
    out, t = io.StringIO(), [100.0]
    line = StatusLine(out, every=0.5, clock=lambda: t[0])
    line.update(Tick(0, 3, 1, None))
    line.update(Tick(1, 3, 1, None))  # too soon: not drawn
    t[0] += 1
    line.update(Tick(2, 3, 1, None))
    assert out.getvalue() == (CLEAR + "evicting: 0/3 done, 1 in flight, 0:00 elapsed"
                              + CLEAR + "evicting: 2/3 done, 1 in flight, 0:01 elapsed")
    line.clear()
    line.clear()  # once is enough
    assert out.getvalue().endswith("elapsed" + CLEAR)


def test_the_runner_ticks_with_the_interval_countdown() -> None:
    ticks: list[Tick] = []
    t = [0.0]

    def clock() -> float:
        t[0] += 0.05  # each look at the clock moves time on: the interval passes without sleeping
        return t[0]

    runner = EvictionRunner(Instant(), Pacing(interval=1.0), clock=clock, on_tick=ticks.append)  # type: ignore[arg-type]
    outcome = runner.run([cand(f"p{i}") for i in range(3)])
    assert [r.outcome for r in outcome.results] == ["evicted"] * 3
    assert ticks[0] == Tick(0, 3, 0, None)
    assert any(tk.next_in is not None and 0 < tk.next_in <= 1.0 for tk in ticks)  # waiting on --interval
    assert max(tk.done for tk in ticks) >= 2 and all(tk.total == 3 for tk in ticks)
