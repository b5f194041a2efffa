"""Memory stays flat: 500 events through windows (a window needs 16 at most) leave a small,
fixed number of persisted RDDs and remembered events per stream, and nothing of the instants
they happened at; routed events and their batches leave nothing for the cyclic garbage
collector."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from pyspark import SparkContext
from reactivex.subject import Subject

import reactive_spark
from reactive_spark import Milliseconds, Seconds, StreamingContext, Time, VirtualClock

from .helpers import cycles_of_ours

T0 = Time(0)
EVENTS = 2_000
#: Events through the windows: many times the 16 batches the longest one needs.
WINDOW_EVENTS = 500


def persisted_rdds(sc: SparkContext) -> int:
    return int(sc._jsc.getPersistentRDDs().size())  # type: ignore[union-attr]


async def test_windows_remember_a_bounded_history(sc: SparkContext) -> None:
    before = persisted_rdds(sc)
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    tick = ssc.timer(T0 + Seconds(1), None, Seconds(1), "tick")
    base = sc.parallelize([1, 2, 3], 1)
    per_event = ssc.queueStream([], default=base).map(lambda x: x + 1)
    tail = per_event.tailWindow(7)
    timed = per_event.timeWindow(Seconds(10), Seconds(5))
    sizes: list[int] = []
    tail.foreachRDD(lambda rdd: None).bind(tick)
    timed.foreachRDD(lambda rdd: sizes.append(rdd.getNumPartitions())).bind(tick)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(WINDOW_EVENTS))
    assert ssc._scheduler.processed_events == WINDOW_EVENTS
    # the order's bookkeeping of what waits is bounded too: 500 instants leave no trace
    order = ssc._scheduler.order
    assert len(order.queue_of(tick).keys) <= 1  # type: ignore[union-attr]
    assert not order.has_pending
    # the map stream keeps what its windows need: 7 RDDs (tail), 15 s of RDDs (time window)
    assert per_event.rememberedCount <= 16
    assert tail.rememberedCount <= 1
    assert timed.rememberedCount <= 1
    assert persisted_rdds(sc) - before <= 16
    assert sizes[-1] == 10  # still a full 10 s window of single-partition RDDs
    await ssc.stop(stopSparkContext=False)


async def test_a_burst_at_one_instant_does_not_pile_up(sc: SparkContext) -> None:
    before = persisted_rdds(sc)
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    burst: Subject[int] = Subject()
    source = ssc.rxEventSource(burst, "burst")
    cached = ssc.queueStream([], default=[1]).map(lambda x: x + 1).cache()
    calls: list[int] = []
    cached.foreachRDD(lambda rdd: calls.append(1)).bind(source)
    await ssc.start()
    for value in range(2_000):
        burst.on_next(value)
    await ssc.runUntil(T0)  # every event happened at the same virtual instant
    assert len(calls) == 2_000
    assert cached.rememberedCount == 1
    assert persisted_rdds(sc) - before <= 1
    await ssc.stop(stopSparkContext=False)


async def test_thousands_of_instants_leave_the_heap_as_it_was(sc: SparkContext) -> None:
    # whatever the engine keeps per event or per instant must be let go once it is processed:
    # after 2,000 more instants, what the package allocated and still holds has not grown
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    tick = ssc.timer(T0 + Milliseconds(1), None, Milliseconds(1), "tick")
    even = tick.map(lambda e: e.index).filter(lambda e: e.value % 2 == 0)
    calls: list[int] = []
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: calls.append(1)).bind(even)
    await ssc.start()
    package = tracemalloc.Filter(True, str(Path(reactive_spark.__file__).parent / "*"))
    tracemalloc.start()
    try:
        await ssc.runUntil(T0 + Milliseconds(1_000))
        before = tracemalloc.take_snapshot().filter_traces([package])
        await ssc.runUntil(T0 + Milliseconds(3_000))
        after = tracemalloc.take_snapshot().filter_traces([package])
    finally:
        tracemalloc.stop()
    await ssc.stop(stopSparkContext=False)
    assert len(calls) == 1_500  # the even ticks' batches ran
    grown = sorted(after.compare_to(before, "lineno"), key=lambda d: -d.size_diff)
    assert sum(d.size_diff for d in grown) < 16_384, grown[:5]


async def test_routed_events_leave_nothing_for_the_cyclic_collector(sc: SparkContext) -> None:
    # events, derived events, batches and their jobs are freed as soon as they are processed:
    # none waits in a reference cycle (docs/architecture.md, "The host's collector")
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    left: Subject[int] = Subject()
    right: Subject[int] = Subject()
    routed = (
        ssc.rxEventSource(left, "left")
        .map(lambda e: e.value * 2)
        .filter(lambda e: e.value % 4 == 0)
        .merge(ssc.rxEventSource(right, "right"))
    )
    outputs: list[int] = []
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: outputs.append(1)).bind(routed)
    await ssc.start()
    with cycles_of_ours() as found:
        for value in range(EVENTS):
            left.on_next(value)
            right.on_next(value)
        failures = await ssc.advanceTo(T0)
    await ssc.stop(stopSparkContext=False)
    assert failures == []
    assert len(outputs) == EVENTS * 3 // 2  # every merged event's job ran
    assert len(found) < 10, found[:20]  # a cycle per event or batch would be thousands
