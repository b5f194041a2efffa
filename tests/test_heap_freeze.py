"""`freezeHeap` is opt-in: by default the collector is not touched. Asked for, the heap a context
starts with is frozen while it runs and unfrozen when the last such context stops, so garbage
cycles from before are collected then; a freeze the application made itself, before the start
or after it, is left in place."""

from __future__ import annotations

import gc
import weakref
from collections.abc import AsyncIterator

import pytest
from pyspark import SparkContext

from reactive_spark import InvalidArgumentError, Seconds, StreamingContext, Time

from .helpers import virtual

T0 = Time(0)


class Node:
    """A part of a garbage cycle."""

    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture(autouse=True)
async def nothing_frozen() -> AsyncIterator[None]:
    assert gc.get_freeze_count() == 0, "a context of an earlier test still holds the heap"
    yield
    left = []
    try:  # a context left running would hold the heap for the tests after this one
        while (active := StreamingContext.getActive()) is not None:
            left.append(active)
            await active.stop(stopSparkContext=False)
    finally:
        gc.unfreeze()  # whatever a failing test left frozen
    assert not left, f"the test left {len(left)} context(s) running"


def started_context(sc: SparkContext, **options: bool) -> StreamingContext:
    ssc = virtual(sc, **options)
    tick = ssc.timer(T0 + Seconds(1), None, Seconds(1), "tick")
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(tick)
    return ssc


async def test_by_default_the_collector_is_not_touched(sc: SparkContext) -> None:
    ssc = started_context(sc)
    threshold = gc.get_threshold()
    await ssc.start()
    assert gc.get_freeze_count() == 0
    await ssc.advanceTo(T0 + Seconds(2))
    assert gc.get_freeze_count() == 0
    await ssc.stop(stopSparkContext=False)
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == threshold


async def test_the_heap_is_frozen_while_the_context_runs(sc: SparkContext) -> None:
    ssc = started_context(sc, freezeHeap=True)
    cycle = Node()
    cycle.other = Node()
    cycle.other.other = cycle
    made_before_start = weakref.ref(cycle)
    await ssc.start()
    assert gc.get_freeze_count() > 0
    del cycle
    gc.collect()
    assert made_before_start() is not None  # frozen: the collector does not walk it
    await ssc.advanceTo(T0 + Seconds(2))
    await ssc.stop(stopSparkContext=False)
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert made_before_start() is None  # unfrozen at stop, and collected


async def test_the_heap_stays_frozen_until_the_last_context_stops(sc: SparkContext) -> None:
    first, second = started_context(sc, freezeHeap=True), started_context(sc, freezeHeap=True)
    await first.start()
    await second.start()
    await first.stop(stopSparkContext=False)
    assert gc.get_freeze_count() > 0
    await second.stop(stopSparkContext=False)
    assert gc.get_freeze_count() == 0


async def test_a_heap_the_application_froze_is_left_frozen(sc: SparkContext) -> None:
    ssc = started_context(sc, freezeHeap=True)
    gc.freeze()
    frozen = gc.get_freeze_count()
    await ssc.start()
    await ssc.stop(stopSparkContext=False)
    assert gc.get_freeze_count() > frozen * 0.9  # still frozen (less what died meanwhile)


async def test_a_freeze_the_application_made_after_the_start_survives_the_stop(
    sc: SparkContext,
) -> None:
    ssc = started_context(sc, freezeHeap=True)
    await ssc.start()
    ours = gc.get_freeze_count()
    made_after_start = [Node() for _ in range(50_000)]  # what a service keeps before forking
    gc.freeze()
    assert gc.get_freeze_count() > ours + 49_000  # less what of ours died meanwhile
    await ssc.stop(stopSparkContext=False)
    assert gc.get_freeze_count() > ours + 49_000  # still in place (less what died since)
    assert not any(  # the application's objects are still out of the collector's reach
        candidate is made_after_start[0]
        for generation in range(3)
        for candidate in gc.get_objects(generation)
    )


def test_freeze_heap_must_be_a_bool(sc: SparkContext) -> None:
    with pytest.raises(InvalidArgumentError, match="freezeHeap must be a bool, got 1"):
        StreamingContext(sc, None, freezeHeap=1)  # type: ignore[arg-type]
