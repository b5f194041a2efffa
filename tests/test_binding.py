"""Binding, reaction, the default timer, cascades, ordering and event fields."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from pyspark import SparkContext
from reactivex.subject import Subject

from reactive_spark import (
    Days,
    Milliseconds,
    Seconds,
    StreamingContext,
    Time,
    TimerEvent,
    VirtualClock,
)

from .helpers import Recorder, gather, virtual

T0 = Time(1_000_000)


async def test_stream_bound_to_one_source_ignores_another(sc: SparkContext) -> None:
    ssc = virtual(sc, start=T0)
    a = ssc.timer(T0, None, Seconds(1), "a")
    b = ssc.timer(T0, None, Seconds(2), "b")
    data = ssc.queueStream([], default=[1])
    out_a, seen_a = gather(data.map(lambda x: ("a", x)))
    out_b, seen_b = gather(data.map(lambda x: ("b", x)))
    out_a.bind(a)
    out_b.bind(b)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(4))
    await ssc.stop(stopSparkContext=False)
    assert [e.source.name for e, _ in seen_a] == ["a"] * 5
    assert [e.source.name for e, _ in seen_b] == ["b"] * 3
    assert all(items == [("a", 1)] for _, items in seen_a)
    assert ssc.defaultTimer is None


async def test_unbound_chain_reacts_to_every_event(sc: SparkContext) -> None:
    ssc = virtual(sc, start=T0)
    a = ssc.timer(T0, None, Seconds(1), "a")
    b = ssc.timer(T0 + Seconds(0.5), None, Seconds(1), "b")
    mapped = ssc.queueStream([[1], [2], [3], [4]]).map(lambda x: x * 10)
    out_a, seen_a = gather(mapped)
    out_b, seen_b = gather(mapped)
    out_a.bind(a)
    out_b.bind(b)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(1.5))
    await ssc.stop(stopSparkContext=False)
    assert [items for _, items in seen_a] == [[10], [30]]
    assert [items for _, items in seen_b] == [[20], [40]]


async def test_stream_bound_to_two_sources(sc: SparkContext) -> None:
    ssc = virtual(sc, start=T0)
    a = ssc.timer(T0, T0, Seconds(1), "a")
    b = ssc.timer(T0 + Seconds(1), T0 + Seconds(1), Seconds(1), "b")
    out, seen = gather(ssc.queueStream([[1], [2]]))
    out.bind(a).bind(b)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(5))
    await ssc.stop(stopSparkContext=False)
    assert [(e.source.name, items) for e, items in seen] == [("a", [1]), ("b", [2])]


async def test_default_timer_drives_unbound_outputs(sc: SparkContext) -> None:
    ssc = virtual(sc, Seconds(1), T0)
    bound_timer = ssc.timer(T0, None, Seconds(10), "slow")
    out_free, seen_free = gather(ssc.queueStream([[1], [2], [3]]))
    out_bound, seen_bound = gather(ssc.queueStream([[9]]))
    out_bound.bind(bound_timer)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(3))
    await ssc.stop(stopSparkContext=False)
    assert ssc.defaultTimer is not None
    assert ssc.defaultTimer.toProduct() == (T0.milliseconds + 1000, None, 1000, "DefaultTimer")
    assert [e.time for e, _ in seen_free] == [T0 + Seconds(k) for k in (1, 2, 3)]
    assert [items for _, items in seen_free] == [[1], [2], [3]]
    assert [items for _, items in seen_bound] == [[9]]
    assert out_free.boundSources == [ssc.defaultTimer]


async def test_unbound_output_without_batch_duration_raises(sc: SparkContext) -> None:
    ssc = virtual(sc, start=T0)
    ssc.queueStream([[1]]).pprint()
    with pytest.raises(RuntimeError, match="batchDuration"):
        await ssc.start()


async def test_start_without_outputs_or_bindings_raises(sc: SparkContext) -> None:
    ssc = virtual(sc, Seconds(1), T0)
    ssc.queueStream([[1]]).map(str)
    with pytest.raises(RuntimeError, match="no output operation and no bound stream"):
        await ssc.start()


async def test_bound_non_output_stream_is_materialised(sc: SparkContext) -> None:
    ssc = virtual(sc, start=T0)
    tick = ssc.timer(T0, T0 + Seconds(1), Seconds(1), "tick")
    counter = sc.accumulator(0)

    def touch(x: int) -> int:
        counter.add(1)
        return x

    ssc.queueStream([[1, 2, 3], [4]]).map(touch).bind(tick)
    recorder = Recorder()
    ssc.addStreamingListener(recorder)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(2))
    await ssc.stop(stopSparkContext=False)
    assert counter.value == 4
    assert [job.kind for job in recorder.jobs] == ["materialize", "materialize"]


async def test_outputs_cascade_on_the_same_event(sc: SparkContext) -> None:
    ssc = virtual(sc, start=T0)
    tick = ssc.timer(T0, T0, Seconds(1), "tick")
    first: list[list[int]] = []
    saved = ssc.queueStream([[1, 2]]).foreachRDD(lambda rdd: first.append(rdd.collect()))
    out, seen = gather(saved.map(lambda x: x + 100))
    saved.bind(tick)
    out.bind(tick)
    await ssc.start()
    await ssc.runUntil(T0)
    await ssc.stop(stopSparkContext=False)
    assert first == [[1, 2]]
    assert [items for _, items in seen] == [[101, 102]]


async def test_event_dependency_across_sources_passes_nothing_but_tail_window_does(
    sc: SparkContext,
) -> None:
    ssc = virtual(sc, start=T0)
    timer1 = ssc.timer(T0, None, Seconds(1), "timer1")
    timer2 = ssc.timer(T0 + Seconds(0.5), None, Seconds(1), "timer2")
    output = ssc.queueStream([[1], [2], [3]]).foreachRDD(lambda rdd: None).bind(timer1)
    ignored, seen_ignored = gather(output.map(lambda x: x))
    ignored.bind(timer2)
    fixed, seen_fixed = gather(output.tailWindow(1, 1, 0).map(lambda x: x))
    fixed.bind(timer2)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(2.5))
    await ssc.stop(stopSparkContext=False)
    assert seen_ignored == []
    assert [(e.time, items) for e, items in seen_fixed] == [
        (T0 + Seconds(0.5), [1]),
        (T0 + Seconds(1.5), [2]),
        (T0 + Seconds(2.5), [3]),
    ]


async def test_event_fields_and_ordering(sc: SparkContext) -> None:
    ssc = virtual(sc, start=T0)
    weekly = ssc.timer(T0, None, Days(7), "weekly")
    daily = ssc.timer(T0, None, Days(1), "daily")
    daily_out = ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(daily)
    weekly_out, seen = gather(daily_out.tailWindow(7, 7))
    weekly_out.bind(weekly)
    recorder = Recorder()
    ssc.addStreamingListener(recorder)
    await ssc.start()
    await ssc.runUntil(T0 + Days(14))
    await ssc.stop(stopSparkContext=False)
    events = recorder.events
    assert [e.instanceId for e in events] == list(range(len(events)))
    assert [e.index for e in events if e.source is daily] == list(range(15))
    assert [e.index for e in events if e.source is weekly] == [0, 1, 2]
    assert all(isinstance(e, TimerEvent) for e in events)
    assert events == sorted(events)
    # at an instant shared by both timers the daily (upstream) event goes first
    same_instant = [e.source.name for e in events if e.time == T0 + Days(7)]
    assert same_instant == ["daily", "weekly"]
    assert [len(items) for _, items in seen] == [7, 7]
    assert events[0].datetime == datetime.fromtimestamp(T0.milliseconds / 1000, UTC)


async def test_timer_skips_ticks_before_zero_time_and_stops_at_end(sc: SparkContext) -> None:
    ssc = virtual(sc, start=T0)
    early = ssc.timer(T0 - Seconds(10), T0 + Seconds(3), Seconds(4), "early")
    out, seen = gather(ssc.queueStream([], default=[0]))
    out.bind(early)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(60))
    await ssc.stop(stopSparkContext=False)
    assert [e.time for e, _ in seen] == [T0 + Seconds(2)]
    assert [e.index for e, _ in seen] == [0]
    assert [t.time for t in early.between(T0 - Seconds(10), T0 + Seconds(100))] == [
        T0 - Seconds(10),
        T0 - Seconds(6),
        T0 - Seconds(2),
        T0 + Seconds(2),
    ]
    assert early.toProduct() == (T0.milliseconds - 10_000, T0.milliseconds + 3000, 4000, "early")


async def test_source_listeners_and_observable(sc: SparkContext) -> None:
    ssc = virtual(sc, start=T0)
    tick = ssc.timer(T0, T0 + Seconds(2), Seconds(1), "tick")
    heard: list[int | None] = []
    observed: list[int | None] = []

    class Listener:
        def onEvent(self, event):  # type: ignore[no-untyped-def]
            heard.append(event.instanceId)

    tick.addListener(Listener())
    tick.toObservable().subscribe(lambda e: observed.append(e.index))
    ssc.queueStream([[1]]).foreachRDD(lambda rdd: None).bind(tick)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(5))
    await ssc.stop(stopSparkContext=False)
    assert heard == [0, 1, 2]
    assert observed == [0, 1, 2]


async def test_remember_and_slice(sc: SparkContext) -> None:
    ssc = virtual(sc, Seconds(1), T0)
    ssc.remember(Seconds(10))
    stream = ssc.queueStream([[1], [2], [3], [4]])
    stream.foreachRDD(lambda rdd: None)
    with pytest.raises(RuntimeError, match="already set"):
        ssc.graph.remember(Seconds(5))
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(4))
    sliced = stream.slice(T0 + Seconds(2), T0 + Seconds(3))
    assert [rdd.collect() for rdd in sliced] == [[2], [3]]
    unix = (T0 + Seconds(2)).milliseconds / 1000  # PySpark's Unix timestamps (seconds) too
    assert [rdd.collect() for rdd in stream.slice(unix, unix + 1)] == [[2], [3]]
    await ssc.stop(stopSparkContext=False)


async def test_slice_rounds_a_begin_between_batches_down_as_pyspark(sc: SparkContext) -> None:
    """pyspark.streaming rounds `begin` down to the stream's slide: `slice(t1 + 0.5, t3)` has
    the batch of t1; a port's `slice(time.time() - 5, time.time())` missed its first batch.
    Batches an irregular source drives have no interval: `begin` is exact there."""
    ssc = virtual(sc, Seconds(1), T0)
    ssc.remember(Seconds(10))
    stream = ssc.queueStream([[1], [2], [3], [4]])
    stream.foreachRDD(lambda rdd: None)
    values: Subject[int] = Subject()
    irregular = ssc.queueStream([[10], [20]])
    irregular.foreachRDD(lambda rdd: None).bind(ssc.rxEventSource(values, "values"))
    windowed = stream.window(Seconds(2), Seconds(2))  # slides every 2 s: rounds to those
    windowed.foreachRDD(lambda rdd: None)
    await ssc.start()
    await ssc.advanceTo(T0 + Milliseconds(1200))  # within a second before `between`
    values.on_next(1)
    await ssc.advanceTo(T0 + Milliseconds(2500))
    values.on_next(2)
    await ssc.runUntil(T0 + Seconds(4))
    between = T0 + Milliseconds(1500)
    assert [rdd.collect() for rdd in stream.slice(between, T0 + Seconds(3))] == [[1], [2], [3]]
    assert [rdd.collect() for rdd in stream.slice(T0 + Seconds(1), T0 + Seconds(2))] == [[1], [2]]
    assert [rdd.collect() for rdd in irregular.slice(between, T0 + Seconds(3))] == [[20]]
    assert [rdd.collect() for rdd in windowed.slice(T0 + Seconds(3), T0 + Seconds(4))] == [
        [1, 2],
        [3, 4],
    ]
    await ssc.stop(stopSparkContext=False)


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process's local time zone is New York's for the test (UTC-5 in winter)."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("new_york")
async def test_slice_reads_a_naive_datetime_in_local_time_as_pyspark(sc: SparkContext) -> None:
    """pyspark.streaming's slice takes a naive datetime (`datetime.now()`) as local time, to
    the second: a port on a host outside UTC found nothing in a slice that has batches."""
    ssc = virtual(sc, Seconds(1), T0)
    ssc.remember(Seconds(10))
    stream = ssc.queueStream([[1], [2], [3], [4]])
    stream.foreachRDD(lambda rdd: None)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(4))
    second = (T0 + Seconds(2)).milliseconds / 1000
    begin, end = datetime.fromtimestamp(second), datetime.fromtimestamp(second + 1.5)
    assert begin.tzinfo is None and begin != datetime.fromtimestamp(second, UTC).replace(
        tzinfo=None
    )
    assert [rdd.collect() for rdd in stream.slice(begin, end)] == [[2], [3]]
    aware = datetime.fromtimestamp(second, UTC)  # an aware one is its instant
    assert [rdd.collect() for rdd in stream.slice(aware, aware)] == [[2]]
    await ssc.stop(stopSparkContext=False)


async def test_rdd_checkpoint_by_count(sc: SparkContext, tmp_path) -> None:  # type: ignore[no-untyped-def]
    ssc = StreamingContext(sc, Seconds(1), clock=VirtualClock(T0), checkpoint=str(tmp_path))
    checked: list[bool] = []
    stream = ssc.queueStream([[1], [2], [3], [4]]).map(lambda x: x).checkpoint(count=2)
    stream.foreachRDD(lambda rdd: (rdd.count(), checked.append(rdd.isCheckpointed())))
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(4))
    await ssc.stop(stopSparkContext=False)
    assert checked == [False, True, False, True]
