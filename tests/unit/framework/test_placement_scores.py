"""The placement estimate's scores beyond resources and spreading, each in a case where it decides the landing:
TaintToleration (PreferNoSchedule taints) and InterPodAffinity (preferred terms, both ways)."""

from __future__ import annotations

from typing import Any

from kubectl_desched.framework.placement import estimate
from tests import builders as b
from tests.unit.framework.test_placement import pod, setup, where

AVOID = b.taint("spare", "yes", "PreferNoSchedule")


def spare_cluster(*taints: dict[str, Any], **mover: Any) -> list[dict[str, Any]]:
    """An empty node `spare` with the taints, a node `busy` with one pod on it, and the mover on a full node: by
    resources alone (174 against 149) the replacement goes to the spare."""
    return [b.node("spare", taints=list(taints)), b.node("busy"), b.node("src", cpu="1"),
            pod("resident", "busy"), pod("mover", "src", **mover)]


def test_a_prefer_no_schedule_taint_keeps_the_replacement_off_the_spare_node() -> None:
    # spare: 174 + 3 x 0 (its one untolerated taint is the most any node has); busy: 149 + 3 x 100. (Both get the
    # same 2 x 100 of default spreading: no other pod of the mover's ReplicaSet.)
    assert where(spare_cluster(AVOID), ["mover"]) == [("busy", ("busy",))]
    assert where(spare_cluster(), ["mover"]) == [("spare", ("spare",))]  # the control: untainted, it wins


def test_a_tolerated_or_other_effect_taint_costs_nothing() -> None:
    tolerates = [b.toleration("spare", "yes", "PreferNoSchedule")]
    assert where(spare_cluster(AVOID, tolerations=tolerates), ["mover"])[0][0] == "spare"
    exists = [b.toleration("spare", operator="Exists")]  # no effect: every effect of the key
    assert where(spare_cluster(AVOID, tolerations=exists), ["mover"])[0][0] == "spare"
    assert where(spare_cluster(b.taint("other", "x", "PreferNoSchedule"), tolerations=tolerates),
                 ["mover"])[0][0] == "busy"  # it tolerates another taint than the node has


def test_untolerated_taints_are_normalized_against_the_most_any_node_has() -> None:
    """The framework's reverse normalization: the node with the most untolerated taints (2) scores 0, one with 1
    scores 50, so of two tainted nodes the one with fewer wins by 150 even when it is fuller."""
    second = b.taint("old", "", "PreferNoSchedule")
    objs = [b.node("two", taints=[AVOID, second]), b.node("one", taints=[AVOID]), b.node("src", cpu="1"),
            pod("resident", "one"), pod("mover", "src")]
    state, cands = setup(objs, ["mover"])
    dest = estimate(state, cands).of(cands[0])
    assert dest is not None and (dest.node, dest.why) == ("one", "score 499")  # 149 + 3 x 50 + 200; two: 174 + 0 + 200
