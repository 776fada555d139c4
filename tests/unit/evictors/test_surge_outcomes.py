"""A surge's outcomes beside the Eviction API's: the same word "moved" says two things. For the Eviction API it is
a pod found on another node and not evicted (a failure, nothing to wait for); for --surge it is the replacement
Ready and the pod removed by its ReplicaSet (a success, whose replacement the landing check reads)."""

from __future__ import annotations

from dataclasses import replace

from kubectl_desched.app.text import results_summary
from kubectl_desched.evictors.base import EvictionResult
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.model.objects import pod_from_json
from tests import builders as b


def _result(outcome: str, method: str = "evict", attempts: int = 1) -> EvictionResult:
    pod = pod_from_json(b.pod("web", "n1", owner_name="web-rs", uid="uid-web"))
    c = Candidate(pod, "LowNodeUtilization", "over target", "p")
    return EvictionResult(replace(c, method=method), outcome, "", attempts=attempts)


def test_the_eviction_apis_moved_is_a_failure_and_leaves_nothing_to_land() -> None:
    r = _result("moved")
    assert not r.ok and not r.gone and not r.disruptive


def test_a_surges_moved_is_a_success_whose_replacement_lands() -> None:
    r = _result("moved", "surge")
    assert r.ok and r.gone and not r.disruptive
    assert _result("would surge", "surge").ok and not _result("would surge", "surge").gone


def test_a_surge_that_did_not_finish_fails_and_never_waits_for_its_workload() -> None:
    for outcome in ("timed out", "interrupted", "refused", "changed", "failed", "evicted"):
        r = _result(outcome, "surge")
        assert not r.ok and not r.gone and not r.disruptive, outcome


def test_after_an_interrupt_a_surged_pod_is_said_moved_not_unevicted() -> None:
    got = results_summary([_result("evicted"), _result("moved", "surge"), _result("interrupted", "surge"),
                           _result("interrupted", attempts=0)], True, "Ctrl-C")
    assert got == ("interrupted: 1 evicted, 1 moved replacement first, 1 not evicted, 1 not attempted. "
                   "4 confirmed: 1 evicted, 1 moved, 2 interrupted")
