"""Memory stays flat: 2,000 events through windows leave a small, fixed number of persisted
RDDs and remembered events per stream, and nothing of the instants they happened at."""

from __future__ import annotations

from pyspark import SparkContext
from reactivex.subject import Subject

from reactive_spark import Seconds, StreamingContext, Time, VirtualClock

T0 = Time(0)
EVENTS = 2_000


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
    await ssc.runUntil(T0 + Seconds(EVENTS))
    assert ssc._scheduler.processed_events == EVENTS
    # the order's bookkeeping of what waits is bounded too: 2,000 instants leave no trace
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
