"""`ReachWindow`: what a tracked stream's remembered RDDs reach back to, kept as they come and
go, equals merging every remembered reach (what `history_reach` did per batch before)."""

from __future__ import annotations

import random

from reactive_spark.dstream.reach import Reach, ReachWindow, merge_reach


def merged(reaches: list[Reach]) -> Reach:
    into: Reach = {}
    for reach in reaches:
        merge_reach(into, reach)
    return into


def test_reach_back_is_the_merge_of_what_is_remembered_as_rdds_come_and_go() -> None:
    rng = random.Random(7)
    window, kept = ReachWindow(), []
    for step in range(5_000):
        if kept and rng.random() < 0.45:
            assert window.popleft() == kept.pop(0)
        else:
            names = rng.sample(["daily", "hourly", "weekly"], rng.randint(1, 3))
            reach = {name: rng.randint(max(0, step - 50), step) for name in names}
            window.append(reach)
            kept.append(reach)
        assert window.reach_back({}) == merged(kept), step
        assert list(window) == kept and len(window) == len(kept)
    assert window.reach_back({"daily": -1})["daily"] == -1  # never moves what is given later


def test_a_window_that_forgot_everything_reaches_back_to_nothing() -> None:
    window = ReachWindow()
    window.append({"daily": 3})
    window.append({"daily": 3})  # an equal reach: the newer one outlives the older
    window.popleft()
    assert window.reach_back({}) == {"daily": 3}
    window.popleft()
    assert window.reach_back({}) == {} and len(window) == 0
