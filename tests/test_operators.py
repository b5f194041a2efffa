"""Operators on event sources, on a virtual clock: map, filter, delay, merge, join, pipe,
and `between` through each of them."""

from __future__ import annotations

from typing import Any

import pytest
import reactivex.operators as ops
from pyspark import SparkContext
from reactivex.subject import Subject

from reactive_spark import (
    Event,
    EventsDropped,
    EventSource,
    ForeignContextError,
    Hours,
    InvalidArgumentError,
    InvalidCallbackError,
    Minutes,
    Seconds,
    StreamingContext,
    StreamingListener,
    Time,
    operators,
)

from .helpers import gather, virtual

T0 = Time(0)


def record(source: EventSource) -> list[Event]:
    seen: list[Event] = []
    source.addListener(seen.append)
    return seen


async def run(ssc: StreamingContext, until: Time, anchor: EventSource) -> None:
    """Start with one cheap bound stream (a context needs one), run, stop."""
    ssc.queueStream([]).bind(anchor)
    await ssc.start()
    await ssc.runUntil(until)
    await ssc.stop(stopSparkContext=False)


def times(events: list[Event]) -> list[int]:
    return [event.time.milliseconds for event in events]


async def test_map_and_filter_have_their_own_indexes(sc: SparkContext) -> None:
    ssc = virtual(sc)
    tick = ssc.timer(T0 + Seconds(1), None, Seconds(1), "tick")
    tens = tick.map(lambda e: e.index * 10)
    even = operators.filter(lambda e: e.index % 2 == 0)(tick)
    seen_tens, seen_even = record(tens), record(even)
    await run(ssc, T0 + Seconds(5), tick)
    assert [e.value for e in seen_tens] == [0, 10, 20, 30, 40]
    assert [e.index for e in seen_even] == [0, 1, 2]
    assert [e.parent.index for e in seen_even] == [0, 2, 4]
    assert times(seen_even) == [1000, 3000, 5000]
    assert tens.name == "tick.map(test_map_and_filter_have_their_own_indexes.<locals>.<lambda>)"


async def test_derived_source_is_bindable(sc: SparkContext) -> None:
    ssc = virtual(sc)
    tick = ssc.timer(T0 + Seconds(1), None, Seconds(1), "tick")
    odd = tick.filter(lambda e: e.index % 2 == 1)
    out, seen = gather(ssc.queueStream([[k] for k in range(10)]))
    out.bind(odd)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(6))
    await ssc.stop(stopSparkContext=False)
    assert [(e.source.name, e.index, items) for e, items in seen] == [
        (odd.name, 0, [0]),
        (odd.name, 1, [1]),
        (odd.name, 2, [2]),
    ]


async def test_delay_is_exact_on_virtual_time(sc: SparkContext) -> None:
    ssc = virtual(sc)
    tick = ssc.timer(T0 + Seconds(1), T0 + Seconds(3), Seconds(1), "tick")
    late = tick.delay(Seconds(0.25))
    seen = record(late)
    await run(ssc, T0 + Seconds(10), tick)
    assert times(seen) == [1250, 2250, 3250]
    assert [e.parent.time.milliseconds for e in seen] == [1000, 2000, 3000]


class Drops(StreamingListener):
    """Keeps what `onEventsDropped` reports."""

    def __init__(self) -> None:
        self.dropped: list[EventsDropped] = []

    def onEventsDropped(self, dropped: EventsDropped) -> None:
        self.dropped.append(dropped)


@pytest.mark.parametrize("graceful", [False, True])
async def test_a_stop_reports_the_delayed_events_it_drops(sc: SparkContext, graceful: bool) -> None:
    """Without a checkpoint nothing fires what a delay still holds: a stop, graceful or not,
    reports every one of them dropped, once, as the delayed events that would have fired."""
    ssc = virtual(sc)
    tick = ssc.timer(T0 + Minutes(10), None, Minutes(10), "tick")
    late = tick.delay(Hours(1))
    seen = record(late)
    ssc.queueStream([]).bind(late)
    drops = Drops()
    ssc.addStreamingListener(drops)
    await ssc.start()
    await ssc.runUntil(T0 + Minutes(95))  # ticks 10..90 min; those of 10..30 fired an hour on
    await ssc.stop(stopSparkContext=False, stopGracefully=graceful)
    assert times(seen) == [Minutes(m).milliseconds for m in (70, 80, 90)]
    [dropped] = drops.dropped
    assert (dropped.sourceName, dropped.reason, dropped.count) == (late.name, "stop", 6)
    assert times(list(dropped.events)) == [Minutes(m).milliseconds for m in range(100, 160, 10)]
    assert [e.parent.time.milliseconds for e in dropped.events] == [
        Minutes(m).milliseconds for m in range(40, 100, 10)
    ]
    assert {e.source for e in dropped.events} == {late}


async def test_merge_fires_once_per_parent_event_in_argument_order(sc: SparkContext) -> None:
    ssc = virtual(sc)
    b = ssc.timer(T0 + Seconds(2), None, Seconds(2), "b")  # created first
    a = ssc.timer(T0 + Seconds(1), None, Seconds(1), "a")
    merged = a.merge(b)
    seen = record(merged)
    await run(ssc, T0 + Seconds(4), a)
    assert [(e.time.milliseconds, e.parent.source.name) for e in seen] == [
        (1000, "a"),
        (2000, "a"),
        (2000, "b"),
        (3000, "a"),
        (4000, "a"),
        (4000, "b"),
    ]
    assert [e.index for e in seen] == list(range(6))


async def test_join_pairs_within_inclusive_once(sc: SparkContext) -> None:
    ssc = virtual(sc)
    left = ssc.timer(T0 + Seconds(2), None, Seconds(2), "left")  # 2 4 6 8 10 12
    right = ssc.timer(T0 + Seconds(3), None, Seconds(3), "right")  # 3 6 9 12
    both = left.join(right, Seconds(1))
    seen = record(both)
    await run(ssc, T0 + Seconds(12), left)
    pairs = [
        (e.left.time.milliseconds, e.right.time.milliseconds, e.time.milliseconds) for e in seen
    ]
    assert pairs == [
        (2000, 3000, 3000),
        (4000, 3000, 4000),
        (6000, 6000, 6000),
        (8000, 9000, 9000),
        (10000, 9000, 10000),
        (12000, 12000, 12000),
    ]


async def test_pipe_with_rx_operators_on_virtual_time(sc: SparkContext) -> None:
    ssc = virtual(sc)
    tick = ssc.timer(T0 + Seconds(1), T0 + Seconds(4), Seconds(1), "tick")
    pairs = tick.pipe(ops.buffer_with_count(2))
    settled = tick.pipe(ops.debounce(0.5))
    evens = tick.pipe(ops.filter(lambda e: e.index % 2 == 0))
    seen_pairs, seen_settled, seen_evens = record(pairs), record(settled), record(evens)
    await run(ssc, T0 + Seconds(6), tick)
    assert [[e.index for e in e2.value] for e2 in seen_pairs] == [[0, 1], [2, 3]]
    assert times(seen_settled) == [1500, 2500, 3500, 4500]
    assert [e.index for e in seen_settled] == [0, 1, 2, 3]
    assert [e.parent.index for e in seen_evens] == [0, 2]


async def test_between_through_operators_matches_what_fires(sc: SparkContext) -> None:
    ssc = virtual(sc)
    a = ssc.timer(T0 + Seconds(1), None, Seconds(1), "a")
    b = ssc.timer(T0 + Seconds(1.5), None, Seconds(3), "b")
    derived: dict[str, EventSource] = {
        "map": a.map(lambda e: e.time.milliseconds),
        "filter": a.filter(lambda e: e.time.milliseconds % 2000 == 0),
        "delay": a.delay(Seconds(0.5)),
        "merge": a.merge(b),
        "join": a.join(b, Seconds(0.5)),
        "pipe": a.pipe(ops.debounce(0.25)),
        "chain": a.filter(lambda e: e.time.milliseconds % 2000 == 0).delay(Seconds(1)),
    }
    fired = {key: record(source) for key, source in derived.items()}
    await run(ssc, T0 + Seconds(10), a)
    window = (T0 + Seconds(3), T0 + Seconds(9))

    def inside(events: list[Event]) -> list[int]:
        return [t for t in times(events) if window[0].milliseconds <= t <= window[1].milliseconds]

    for key, source in derived.items():
        assert times(source.between(*window)) == inside(fired[key]), key
    mapped = derived["map"].between(*window)
    assert [e.value for e in mapped] == list(range(3000, 10000, 1000))


async def test_rx_event_source_from_other_threads(sc: SparkContext) -> None:
    import threading

    ssc = virtual(sc)
    subject: Subject[Any] = Subject()
    source = ssc.rxEventSource(subject, "manual")
    seen = record(source)
    ssc.queueStream([]).bind(source)
    await ssc.start()
    subject.on_next("first")
    worker = threading.Thread(target=lambda: [subject.on_next(k) for k in range(3)])
    worker.start()
    worker.join()
    await ssc.advanceTo(T0 + Seconds(1))
    assert [e.value for e in seen] == ["first", 0, 1, 2]
    assert [e.index for e in seen] == [0, 1, 2, 3]
    assert source.toProduct() == ("manual",)
    await ssc.stop(stopSparkContext=False)
    subject.on_next("after stop")
    assert len(seen) == 4


async def test_source_to_observable(sc: SparkContext) -> None:
    ssc = virtual(sc)
    tick = ssc.timer(T0 + Seconds(1), None, Seconds(1), "tick")
    indexes: list[int | None] = []
    subscription = tick.toObservable().pipe(ops.map(lambda e: e.index)).subscribe(indexes.append)
    await run(ssc, T0 + Seconds(3), tick)
    subscription.dispose()
    assert indexes == [0, 1, 2]


def test_operator_arguments(sc: SparkContext) -> None:
    ssc, other = virtual(sc), virtual(sc)
    a = ssc.timer(T0, None, Seconds(1), "a")
    elsewhere = other.timer(T0, None, Seconds(1), "elsewhere")
    with pytest.raises(InvalidCallbackError, match="map: f must be callable"):
        a.map(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidCallbackError, match="filter: predicate must be callable"):
        a.filter(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="duration must be positive"):
        a.delay(0)
    with pytest.raises(InvalidArgumentError, match="within must be positive"):
        a.join(elsewhere, -1)
    with pytest.raises(ForeignContextError, match="another StreamingContext"):
        a.merge(elsewhere)
    with pytest.raises(ForeignContextError):
        a.join(elsewhere, 1)
    with pytest.raises(InvalidArgumentError, match="two different sources"):
        a.join(a, 1)
    with pytest.raises(InvalidCallbackError, match=r"operators\[0\] must be callable"):
        a.pipe("not an operator")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="observable must be a reactivex Observable"):
        ssc.rxEventSource([1, 2], "list")
