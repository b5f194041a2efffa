"""After a crash, derived sources take again what they had not derived at the last recorded
instant: each run with a crash (or a restart) gives what one uninterrupted run gives."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import reactivex.operators as ops
from pyspark import SparkContext

from reactive_spark import Event, EventSource, Hours, Minutes, StreamingContext, Time

from .helpers import ran, virtual

T0 = Time.fromDatetime(datetime(2024, 1, 1, tzinfo=UTC))
CRASH = T0 + Hours(2)
END = T0 + Hours(4) + Minutes(10)


class Crash(BaseException):
    """Stands for the driver dying in the middle of a batch."""


async def crashed(ssc: StreamingContext, until: Time) -> None:
    """Start `ssc` and run it until a batch raises `Crash` before `until`, then stop it."""
    await ssc.start()
    with pytest.raises(Crash):
        await ssc.advanceTo(until)
    await ssc.stop(stopSparkContext=False)


def derive(operator: str, hourly: EventSource, halves: EventSource) -> EventSource:
    """The derived source of `operator` over an hourly and a half-hourly timer."""
    if operator == "map":
        return hourly.map(lambda event: event.index * 10, name="derived")
    if operator == "filter":
        return hourly.filter(lambda event: event.index % 2 == 0, name="derived")
    if operator == "merge":
        return hourly.merge(halves, name="derived")
    if operator == "join":
        return hourly.join(halves, Minutes(1), name="derived")
    return hourly.pipe(ops.map(lambda event: event), name="derived")  # event-passing


def what(event: Event) -> tuple[Any, ...]:
    """What a derived event carries: its time, and its parents' sources and indexes."""
    parents = [event.left, event.right] if hasattr(event, "left") else [event.parent]
    value = getattr(event, "value", None)
    return (
        event.time,
        event.index,
        value if isinstance(value, int) else None,
        [(parent.source.name, parent.index) for parent in parents],
    )


def build(
    ssc: StreamingContext, operator: str, crash: bool, batches: list[Any], heard: list[Any]
) -> None:
    """An hourly timer and the derived source, both bound; the timer's 2:00 batch may crash."""
    hourly = ssc.timer(T0, None, Hours(1), "hourly")
    halves = ssc.timer(T0, None, Minutes(30), "halves")

    def hourly_batch(time: datetime, rdd: Any, event: Event) -> None:
        if crash and event.time == CRASH:
            raise Crash("the driver died in the 2:00 batch")
        batches.append(("hourly", event.time))

    derived = derive(operator, hourly, halves)
    derived.addListener(lambda event: heard.append(what(event)))
    ssc.queueStream([]).foreachRDD(hourly_batch).bind(hourly)
    ssc.queueStream([]).foreachRDD(
        lambda time, rdd, event: batches.append(("derived", what(event)))
    ).bind(derived)


async def uninterrupted(sc: SparkContext, operator: str) -> tuple[list[Any], list[Any]]:
    batches: list[Any] = []
    heard: list[Any] = []
    ssc = virtual(sc, start=T0)
    build(ssc, operator, False, batches, heard)
    await ran(ssc, END)
    return batches, heard


@pytest.mark.parametrize("operator", ["map", "filter", "merge", "join", "pipe"])
async def test_a_crash_in_a_parents_batch_loses_no_derived_batch(
    sc: SparkContext, tmp_path: Path, operator: str
) -> None:
    expected, _ = await uninterrupted(sc, operator)
    checkpoint = str(tmp_path / "checkpoint")
    batches: list[Any] = []
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, operator, True, batches, [])
    await crashed(first, END)
    # the derived source's 2:00 event waited behind the crashed batch: no record has it
    assert ("derived", CRASH) not in [(kind, seen[0]) for kind, seen in batches if kind != "hourly"]

    second = virtual(sc, start=CRASH + Minutes(10), checkpoint=checkpoint)
    build(second, operator, False, batches, [])
    await ran(second, END)
    if operator == "pipe":  # it stamps its events when it emits them: the 2:00 one at 2:10
        assert batches[5] == ("derived", (CRASH + Minutes(10), 2, None, [("hourly", 2)]))
        batches[5] = expected[5]
    assert batches == expected


@pytest.mark.parametrize("died", [True, False])
async def test_a_delay_behind_an_unbound_map_fires_the_crashed_instants_event(
    sc: SparkContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, died: bool
) -> None:
    if died:  # the process dies: its stop records nothing more than the batches did
        monkeypatch.setattr("reactive_spark.lifecycle.stop_record", lambda *args: None)
    checkpoint = str(tmp_path / "checkpoint")
    fired: list[Time] = []

    def build(ssc: StreamingContext, crash: bool) -> None:
        def hourly_batch(time: datetime, rdd: Any, event: Event) -> None:
            if crash and event.time == CRASH:
                raise Crash("the driver died in the 2:00 batch")

        hourly = ssc.timer(T0, None, Hours(1), "hourly")
        later = hourly.map(lambda event: event.index, name="indexes").delay(Minutes(90))
        ssc.queueStream([]).foreachRDD(hourly_batch).bind(hourly)
        ssc.queueStream([]).foreachRDD(lambda t, rdd, e: fired.append(e.time)).bind(later)

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, crash=True)
    await crashed(first, END)
    second = virtual(sc, start=CRASH + Minutes(10), checkpoint=checkpoint)
    build(second, crash=False)
    await ran(second, END)
    assert fired == [T0 + Minutes(90) + Hours(hour) for hour in range(3)]  # as uninterrupted


async def test_a_function_raising_again_on_what_is_derived_again_is_reported(
    sc: SparkContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the process dies: its stop records nothing more than the batches did
    monkeypatch.setattr("reactive_spark.lifecycle.stop_record", lambda *args: None)
    checkpoint = str(tmp_path / "checkpoint")
    batches: list[int] = []

    def build(ssc: StreamingContext, crash: bool) -> None:
        def hourly_batch(time: datetime, rdd: Any, event: Event) -> None:
            if crash and event.time == CRASH:
                raise Crash("the driver died in the 2:00 batch")

        def index(event: Event) -> int:
            if event.index == 2:
                raise ValueError("no 2")
            return event.index

        hourly = ssc.timer(T0, None, Hours(1), "hourly")
        indexes = hourly.map(index, name="indexes")
        ssc.queueStream([]).foreachRDD(hourly_batch).bind(hourly)
        ssc.queueStream([]).foreachRDD(lambda t, rdd, e: batches.append(e.value)).bind(indexes)

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, crash=True)
    await crashed(first, END)
    second = virtual(sc, start=CRASH + Minutes(10), checkpoint=checkpoint)
    build(second, crash=False)
    await second.start()  # the map raises on hour 2 again: reported, not a failed start
    failures = await second.advanceTo(END)
    await second.stop(stopSparkContext=False)
    assert [
        (failure.sourceName, str(failure.error), failure.event.index) for failure in failures
    ] == [("indexes", "no 2", 2)]
    assert batches == [0, 1, 3, 4]


@pytest.mark.parametrize("pipe", [False, True])
async def test_a_graceful_restart_loses_nothing_and_tells_listeners_once_without_a_pipe(
    sc: SparkContext, tmp_path: Path, pipe: bool
) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    heard: list[int] = []
    delayed: list[Time] = []

    def build(ssc: StreamingContext) -> None:
        hourly = ssc.timer(T0, None, Hours(1), "hourly")
        indexes = hourly.map(lambda event: event.index, name="indexes")
        indexes.addListener(lambda event: heard.append(event.value))
        later = indexes.delay(Minutes(30))
        ssc.queueStream([]).foreachRDD(lambda rdd: None).bind(hourly)
        ssc.queueStream([]).foreachRDD(lambda t, rdd, e: delayed.append(e.time)).bind(later)
        if pipe:  # it may hold a tick: the stop records nothing more, as if the process died
            ssc.timer(T0, None, Hours(1), "other").pipe(
                ops.filter(lambda event: event.index % 2 == 1), name="odd"
            )

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first)
    await ran(first, CRASH + Minutes(10), graceful=True)
    second = virtual(sc, start=CRASH + Minutes(10), checkpoint=checkpoint)
    build(second)
    await ran(second, END)
    assert delayed == [T0 + Minutes(30) + Hours(hour) for hour in range(4)]
    # as after a crash, the listeners may hear the last instant's event again
    assert heard == ([0, 1, 2, 2, 3, 4] if pipe else [0, 1, 2, 3, 4])


async def test_a_function_that_raised_before_a_graceful_stop_is_not_called_again(
    sc: SparkContext, tmp_path: Path
) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    called: list[int] = []

    def build(ssc: StreamingContext) -> None:
        def index(event: Event) -> int:
            called.append(event.index)
            if event.index == 2:
                raise ValueError("no 2")
            return event.index

        hourly = ssc.timer(T0, None, Hours(1), "hourly")
        indexes = hourly.map(index, name="indexes")
        ssc.queueStream([]).foreachRDD(lambda rdd: None).bind(hourly)
        ssc.queueStream([]).foreachRDD(lambda rdd: None).bind(indexes)

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first)
    await first.start()
    assert len(await first.advanceTo(CRASH + Minutes(10))) == 1
    await first.stop(stopSparkContext=False, stopGracefully=True)
    second = virtual(sc, start=CRASH + Minutes(10), checkpoint=checkpoint)
    build(second)
    await second.start()
    assert await second.advanceTo(END) == []
    await second.stop(stopSparkContext=False)
    assert called == [0, 1, 2, 3, 4]


async def test_what_a_chain_of_maps_derives_again_sees_the_indexes_it_saw(
    sc: SparkContext, tmp_path: Path
) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    copied: list[int] = []

    def build(ssc: StreamingContext, crash: bool) -> None:
        def indexes_batch(time: datetime, rdd: Any, event: Event) -> None:
            if crash and event.time == CRASH:
                raise Crash("the driver died in the 2:00 batch of indexes")

        hourly = ssc.timer(T0, None, Hours(1), "hourly")
        indexes = hourly.map(lambda event: event.index * 10, name="indexes")
        copies = indexes.map(lambda event: event.value + 1, name="copies")
        ssc.queueStream([]).foreachRDD(indexes_batch).bind(indexes)
        ssc.queueStream([]).foreachRDD(lambda t, rdd, e: copied.append(e.value)).bind(copies)

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, crash=True)
    await crashed(first, END)
    second = virtual(sc, start=CRASH + Minutes(10), checkpoint=checkpoint)
    build(second, crash=False)
    await second.start()
    assert await second.advanceTo(END) == []
    await second.stop(stopSparkContext=False)
    assert copied == [1, 11, 21, 31, 41]


async def test_a_join_takes_its_parents_events_again_in_their_lineage_order(
    sc: SparkContext, tmp_path: Path
) -> None:
    def build(ssc: StreamingContext, crash: bool, pairs: list[Any]) -> None:
        def halves_batch(time: datetime, rdd: Any, event: Event) -> None:
            if crash and event.time == CRASH:
                raise Crash("the driver died in the 2:00 batch of halves")

        hourly = ssc.timer(T0, None, Hours(1), "hourly")  # ranks before halves
        halves = ssc.timer(T0, None, Minutes(30), "halves")
        joined = halves.join(hourly, Minutes(60), name="pairs")
        ssc.queueStream([]).foreachRDD(halves_batch).bind(halves)
        ssc.queueStream([]).foreachRDD(
            lambda t, rdd, e: pairs.append((e.index, e.left.time, e.right.time))
        ).bind(joined)

    expected: list[Any] = []
    once = virtual(sc, start=T0)
    build(once, crash=False, pairs=expected)
    await ran(once, END)
    checkpoint = str(tmp_path / "checkpoint")
    pairs: list[Any] = []
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, crash=True, pairs=pairs)
    await crashed(first, END)
    second = virtual(sc, start=CRASH + Minutes(10), checkpoint=checkpoint)
    build(second, crash=False, pairs=pairs)
    await ran(second, END)
    assert pairs == expected


async def test_a_parent_whose_function_raises_as_it_is_rebuilt_is_reported_as_failing(
    sc: SparkContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("reactive_spark.lifecycle.stop_record", lambda *args: None)  # it dies
    checkpoint = str(tmp_path / "checkpoint")
    copied: list[int] = []

    def build(ssc: StreamingContext, restarted: bool) -> None:
        def indexes_batch(time: datetime, rdd: Any, event: Event) -> None:
            if not restarted and event.time == CRASH:
                raise Crash("the driver died in the 2:00 batch of indexes")

        def index(event: Event) -> int:
            if restarted and event.index == 2:
                raise ValueError("not today")
            return event.index

        hourly = ssc.timer(T0, None, Hours(1), "hourly")
        indexes = hourly.map(index, name="indexes")
        copies = indexes.map(lambda event: event.value, name="copies")
        ssc.queueStream([]).foreachRDD(indexes_batch).bind(indexes)
        ssc.queueStream([]).foreachRDD(lambda t, rdd, e: copied.append(e.value)).bind(copies)

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, restarted=False)
    await crashed(first, END)
    second = virtual(sc, start=CRASH + Minutes(10), checkpoint=checkpoint)
    build(second, restarted=True)
    await second.start()
    failures = await second.advanceTo(END)
    await second.stop(stopSparkContext=False)
    assert [(f.sourceName, f.operation, str(f.error)) for f in failures] == [
        ("indexes", "map", "not today")
    ]
    assert copied == [0, 1, 3, 4]  # copies' 2:00 event could not be derived again


async def test_a_start_that_fails_before_the_graph_is_back_records_no_clean_stop(
    sc: SparkContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    tens: list[int] = []

    def build(ssc: StreamingContext, crash: bool) -> None:
        def hourly_batch(time: datetime, rdd: Any, event: Event) -> None:
            if crash and event.time == CRASH:
                raise Crash("the driver died in the 2:00 batch")

        hourly = ssc.timer(T0, None, Hours(1), "hourly")
        times_ten = hourly.map(lambda event: event.index * 10, name="tens")
        ssc.queueStream([]).foreachRDD(hourly_batch).bind(hourly)
        ssc.queueStream([]).foreachRDD(lambda t, rdd, e: tens.append(e.value)).bind(times_ten)

    with monkeypatch.context() as dying:  # the process dies: its stop records nothing more
        dying.setattr("reactive_spark.lifecycle.stop_record", lambda *args: None)
        first = virtual(sc, start=T0, checkpoint=checkpoint)
        build(first, crash=True)
        await crashed(first, END)
    second = virtual(sc, start=CRASH + Minutes(10), checkpoint=checkpoint)
    build(second, crash=True)
    with pytest.raises(Crash):  # the re-run of the 2:00 batch dies again: the start fails
        await second.start()
    third = virtual(sc, start=CRASH + Minutes(10), checkpoint=checkpoint)
    build(third, crash=False)
    await ran(third, END)
    assert tens == [0, 10, 20, 30, 40]


async def test_a_parent_that_fired_several_events_at_the_instant_gives_none_again(
    sc: SparkContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which of them had fired when the record was written is not recorded: none is handed
    again (a limit), rather than events numbered wrong or never fired."""

    def build(ssc: StreamingContext, crash: bool, seen: list[Any]) -> None:
        def both_batch(time: datetime, rdd: Any, event: Event) -> None:
            if crash and event.time == CRASH:
                raise Crash("the driver died in the first 2:00 batch of both")

        hourly = ssc.timer(T0, None, Hours(1), "hourly")
        halves = ssc.timer(T0, None, Minutes(30), "halves")
        both = hourly.merge(halves, name="both")
        indexes = both.map(lambda event: event.index, name="indexes")
        ssc.queueStream([]).foreachRDD(both_batch).bind(both)
        ssc.queueStream([]).foreachRDD(lambda t, rdd, e: seen.append((e.time, e.value))).bind(
            indexes
        )

    expected: list[Any] = []
    once = virtual(sc, start=T0)
    build(once, crash=False, seen=expected)
    await ran(once, END)
    monkeypatch.setattr("reactive_spark.lifecycle.stop_record", lambda *args: None)  # it dies
    checkpoint = str(tmp_path / "checkpoint")
    seen: list[Any] = []
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, crash=True, seen=seen)
    await crashed(first, END)
    second = virtual(sc, start=CRASH + Minutes(10), checkpoint=checkpoint)
    build(second, crash=False, seen=seen)
    await ran(second, END)
    # the merge lost its second 2:00 event (a limit): its later indexes are one less
    assert [time for time, _ in seen] == [time for time, _ in expected if time != CRASH]


async def test_a_join_whose_parent_cannot_be_rebuilt_keeps_the_other_side(
    sc: SparkContext, tmp_path: Path
) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    pairs: list[tuple[Time, Time]] = []

    def build(ssc: StreamingContext, restarted: bool) -> None:
        def tens(event: Event) -> int:
            if restarted and event.time == T0 + Hours(1):
                raise ValueError("not today")
            return event.time.milliseconds

        hourly = ssc.timer(T0, None, Hours(1), "hourly")
        times_ten = hourly.map(tens, name="tens")
        joined = hourly.join(times_ten, Minutes(90), name="joined")
        ssc.queueStream([]).foreachRDD(lambda rdd: None).bind(hourly)
        ssc.queueStream([]).foreachRDD(
            lambda t, rdd, e: pairs.append((e.left.time, e.right.time))
        ).bind(joined)

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, restarted=False)
    await ran(first, CRASH + Minutes(10), graceful=True)
    second = virtual(sc, start=CRASH + Minutes(10), checkpoint=checkpoint)
    build(second, restarted=True)
    await second.start()  # rebuilding tens' 1:00 and 2:00 events raises: it gives none
    failures = await second.advanceTo(T0 + Hours(3))
    await second.stop(stopSparkContext=False)
    assert [(f.sourceName, f.operation, str(f.error)) for f in failures] == [
        ("tens", "map", "not today")
    ]
    # hourly's 2:00 tick is still remembered: it pairs with tens' 3:00 event
    assert (CRASH, CRASH + Hours(1)) in pairs[-4:]


async def test_a_pipe_gives_nothing_again_to_what_derives_from_it(
    sc: SparkContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pipe's `between` replays one instant through a fresh pipeline, not what it held."""
    monkeypatch.setattr("reactive_spark.lifecycle.stop_record", lambda *args: None)  # it dies
    checkpoint = str(tmp_path / "checkpoint")
    counts: list[Any] = []

    def build(ssc: StreamingContext, crash: bool) -> None:
        def counted_batch(time: datetime, rdd: Any, event: Event) -> None:
            if crash and event.time == CRASH:
                raise Crash("the driver died in the 2:00 batch of counted")

        hourly = ssc.timer(T0, None, Hours(1), "hourly")
        counted = hourly.pipe(ops.scan(lambda total, event: total + 1, 0), name="counted")
        seen = counted.map(lambda event: event.value, name="seen")
        ssc.queueStream([]).foreachRDD(counted_batch).bind(counted)
        ssc.queueStream([]).foreachRDD(lambda t, rdd, e: counts.append(e.value)).bind(seen)

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, crash=True)
    await crashed(first, END)
    second = virtual(sc, start=CRASH + Minutes(10), checkpoint=checkpoint)
    build(second, crash=False)
    await ran(second, T0 + Hours(3))
    # 2:00's count (3) is lost, not replaced by one from a fresh pipeline (1); the pipeline
    # itself restarts, its count with it (a documented limit): 3:00 counts 1
    assert counts == [1, 2, 1]


@pytest.mark.parametrize("operator", ["delay", "join"])
async def test_a_restart_rebuilds_what_a_delay_or_join_held_off_the_event_loop(
    sc: SparkContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, operator: str
) -> None:
    """A parent's `between` may block (a file watcher walks its directory): a restart called
    it on the event loop to rebuild the events a `delay` or a `join` held at the stop."""
    checkpoint = str(tmp_path / "checkpoint")
    threads: list[int] = []

    def build(ssc: StreamingContext, fired: list[Time], *, recorded: bool) -> None:
        hourly = ssc.timer(T0, None, Hours(1), "hourly")
        halves = ssc.timer(T0, None, Minutes(30), "halves")
        if recorded:
            between = hourly.between

            def recording(start: Any, end: Any) -> list[Event]:
                threads.append(threading.get_ident())
                return between(start, end)

            monkeypatch.setattr(hourly, "between", recording)
        derived = (
            hourly.delay(Minutes(90))
            if operator == "delay"
            else hourly.join(halves, Minutes(90), name="joined")
        )
        ssc.queueStream([]).foreachRDD(lambda rdd: None).bind(hourly)
        ssc.queueStream([]).foreachRDD(lambda t, rdd, e: fired.append(e.time)).bind(derived)

    expected: list[Time] = []
    whole = virtual(sc, start=T0)
    build(whole, expected, recorded=False)
    await ran(whole, END)
    fired: list[Time] = []
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, fired, recorded=False)
    await ran(first, CRASH + Minutes(10), graceful=True)
    second = virtual(sc, start=CRASH + Minutes(10), checkpoint=checkpoint)
    build(second, fired, recorded=True)
    await ran(second, END)
    assert fired == expected  # what it held was rebuilt
    assert threads and threading.get_ident() not in threads
