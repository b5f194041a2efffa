"""Recovery that loses nothing: catch-up across sources in order, window state, interrupted writes.

The crash-by-SIGKILL version of these runs in test_kill.py; here restarts happen in-process on
virtual time, which makes the expected order exact.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark import SparkContext

from reactive_spark import (
    Days,
    Event,
    Hours,
    Milliseconds,
    Minutes,
    Seconds,
    StreamingContext,
    StreamingListener,
    Time,
)
from reactive_spark.errors import InvalidArgumentError
from reactive_spark.log import FileLog

from .helpers import ran, virtual

T0 = Time.fromDatetime(datetime(2026, 1, 5, tzinfo=UTC))
WEEKS = 4


def day_of(event: Event) -> int:
    return (event.time - T0) // Days(1)


def stamp(path: Path, lines: list[str], at: Time) -> None:
    path.write_text("".join(f"{line}\n" for line in lines))
    os.utime(path, ns=(at.milliseconds * 1_000_000,) * 2)


def write_days(logs: Path, days: int) -> None:
    """One file per day; the daily tick of day d reads the file stamped during day d - 1."""
    logs.mkdir(exist_ok=True)
    for day in range(1, days + 1):
        stamp(logs / f"day{day:02d}.log", [str(day)], T0 + Days(day - 1) + Hours(1))


Fired = list[tuple[str, int, list[int]]]


def daily_weekly(
    ssc: StreamingContext, logs: Path, fired: Fired, daily_bound: int | None = None
) -> None:
    """The daily/weekly logs pipeline: the day's lines daily, the last 7 daily outputs weekly."""
    daily = ssc.timer(T0 + Days(1), None, Days(1), "daily").overflow(daily_bound)
    weekly = ssc.timer(T0 + Days(7), None, Days(7), "weekly")

    def record(kind: str) -> Any:
        def output(time: datetime, rdd: Any, event: Event) -> None:
            fired.append((kind, day_of(event), sorted(int(x) for x in rdd.collect())))

        return output

    (
        ssc.textFileStream(str(logs))
        .foreachRDD(record("daily"))
        .bind(daily)
        .tailWindow(7, 7)
        .foreachRDD(record("weekly"))
        .bind(weekly)
    )


def expected_run(last_day: int) -> Fired:
    fired: Fired = []
    for day in range(1, last_day + 1):
        fired.append(("daily", day, [day]))
        if day % 7 == 0:
            fired.append(("weekly", day, list(range(day - 6, day + 1))))
    return fired


async def test_missed_events_of_all_sources_fire_as_one_sequence_in_order(
    sc: SparkContext, tmp_path: Path
) -> None:
    logs, checkpoint = tmp_path / "logs", str(tmp_path / "checkpoint")
    write_days(logs, 7 * WEEKS)
    fired: Fired = []
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    daily_weekly(first, logs, fired)
    await first.start()
    await first.runUntil(T0 + Days(13))
    await first.stop(stopSparkContext=False, stopGracefully=True)
    assert fired == expected_run(13)

    # down from day 13 until day 15 + 6 h: daily 14, weekly 14 and daily 15 were missed
    restarted: Fired = []
    second = virtual(sc, start=T0 + Days(15) + Hours(6), checkpoint=checkpoint)
    daily_weekly(second, logs, restarted)
    await second.start()
    await second.runUntil(T0 + Days(15) + Hours(6))
    assert restarted == [
        ("daily", 14, [14]),
        ("weekly", 14, list(range(8, 15))),
        ("daily", 15, [15]),
    ]
    await second.runUntil(T0 + Days(7 * WEEKS))
    await second.stop(stopSparkContext=False)
    assert fired + restarted == expected_run(7 * WEEKS)


class Accepted(StreamingListener):
    """The events accepted, in the order they were, and their sources' deepest queues."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []
        self.deepest: dict[str, int] = {}

    def onEventFired(self, event: Event) -> None:
        self.events.append((event.source.name, day_of(event)))
        name, depth = event.source.name, event.source.queueDepth
        self.deepest[name] = max(self.deepest.get(name, 0), depth)


@pytest.mark.parametrize("bound", [1, 3])
async def test_catch_up_past_a_sources_bound_fires_in_order_and_loses_nothing(
    sc: SparkContext, tmp_path: Path, bound: int
) -> None:
    """Three weeks down, the daily timer bounded below the 20 ticks it missed: its missed ticks
    wait for room, and all sources' are accepted in the order an uninterrupted run fires them,
    so every weekly roll-up covers the same days as with the default bound."""
    logs = tmp_path / "logs"
    write_days(logs, 21)

    async def down_for_three_weeks(daily_bound: int | None) -> tuple[Fired, Accepted]:
        checkpoint = str(tmp_path / f"checkpoint-{daily_bound}")
        first = virtual(sc, start=T0, checkpoint=checkpoint)
        daily_weekly(first, logs, [], daily_bound)
        await first.start()
        await first.runUntil(T0 + Days(1))
        await first.stop(stopSparkContext=False, stopGracefully=True)
        restarted: Fired = []
        accepted = Accepted()
        second = virtual(sc, start=T0 + Days(21) + Hours(1), checkpoint=checkpoint)
        daily_weekly(second, logs, restarted, daily_bound)
        second.addStreamingListener(accepted)
        await second.start()
        await second.runUntil(T0 + Days(21) + Hours(1))
        await second.stop(stopSparkContext=False)
        return restarted, accepted

    unbounded, _ = await down_for_three_weeks(None)
    assert unbounded == expected_run(21)[1:]
    bounded, accepted = await down_for_three_weeks(bound)
    assert bounded == unbounded
    assert accepted.events == [(kind, day) for kind, day, _ in expected_run(21)[1:]]
    assert accepted.deepest["daily"] <= bound


async def test_a_window_emits_as_it_would_have_after_a_restart_beyond_its_history(
    sc: SparkContext, tmp_path: Path
) -> None:
    """tailWindow(4, 3, 2) over 20 events: the restart keeps only the last 6 batches."""
    checkpoint = str(tmp_path / "checkpoint")

    def build(ssc: StreamingContext, windows: list[tuple[int, list[int]]]) -> None:
        tick = ssc.timer(T0 + Minutes(1), None, Minutes(1), "tick")
        numbers = ssc.queueStream([[n] for n in range(1, 21)])
        numbers.foreachRDD(lambda rdd: None).bind(tick)
        numbers.tailWindow(4, 3, 2).foreachRDD(
            lambda t, rdd, e: windows.append((e.index + 1, sorted(rdd.collect())))
        ).bind(tick)

    uninterrupted: list[tuple[int, list[int]]] = []
    reference = virtual(sc, start=T0)
    build(reference, uninterrupted)
    await reference.start()
    await reference.runUntil(T0 + Minutes(20))
    await reference.stop(stopSparkContext=False)
    assert uninterrupted[:3] == [(3, [1]), (6, [1, 2, 3, 4]), (9, [4, 5, 6, 7])]

    windows: list[tuple[int, list[int]]] = []
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, windows)
    await first.start()
    await first.runUntil(T0 + Minutes(13))
    await first.stop(stopSparkContext=False, stopGracefully=True)
    second = virtual(sc, start=T0 + Minutes(13), checkpoint=checkpoint)
    build(second, windows)
    await second.start()
    await second.runUntil(T0 + Minutes(20))
    await second.stop(stopSparkContext=False)
    assert windows == uninterrupted


async def test_a_file_moved_in_late_is_read_once_across_a_restart(
    sc: SparkContext, tmp_path: Path
) -> None:
    """Files keep their mtime when moved in; the stream still reads each exactly once."""
    logs, staging, checkpoint = tmp_path / "logs", tmp_path / "staging", str(tmp_path / "ckpt")
    logs.mkdir()
    staging.mkdir()
    read: list[list[str]] = []

    def build(ssc: StreamingContext) -> Any:
        tick = ssc.timer(T0 + Minutes(1), None, Minutes(1), "tick")
        ssc.textFileStream(str(logs)).foreachRDD(
            lambda rdd: read.append(sorted(rdd.collect()))
        ).bind(tick)
        return tick

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first)
    stamp(logs / "a.log", ["a"], T0 + Minutes(1) - Minutes(0.5))
    await first.start()
    await first.runUntil(T0 + Minutes(1))
    # written before the last batch ran, moved in after it: an older mtime than that batch
    stamp(staging / "b.log", ["b"], T0 + Minutes(1) - Minutes(0.25))
    os.rename(staging / "b.log", logs / "b.log")
    await first.stop(stopSparkContext=False, stopGracefully=True)
    second = virtual(sc, start=T0 + Minutes(1), checkpoint=checkpoint)
    build(second)
    await second.start()
    await second.runUntil(T0 + Minutes(3))
    await second.stop(stopSparkContext=False)
    assert read == [["a"], ["b"], []]


async def test_interrupted_writes_are_removed_on_recovery_and_the_batch_written_once(
    sc: SparkContext, tmp_path: Path
) -> None:
    out, checkpoint = tmp_path / "out", str(tmp_path / "ckpt")

    def build(ssc: StreamingContext) -> None:
        tick = ssc.timer(T0 + Minutes(1), None, Minutes(1), "tick")
        ssc.queueStream([[1], [2], [3]]).saveAsTextFiles(str(out / "numbers"), "txt").bind(tick)
        ssc.queueStream([[9]]).saveAsTextFiles(str(out / "numbers-extra")).bind(tick)

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first)
    await first.start()
    await first.runUntil(T0 + Minutes(2))
    await first.stop(stopSparkContext=False, stopGracefully=True)
    # what a crash in the middle of writing minute 3 leaves, and someone else's directory
    leftover = out / f"_temporary-numbers-{(T0 + Minutes(3)).milliseconds}.txt-{'a' * 32}"
    (leftover / "_temporary").mkdir(parents=True)
    (leftover / "part-00000").write_text("3\n")
    others = out / "_temporary-unrelated"
    others.mkdir()
    second = virtual(sc, start=T0 + Minutes(2), checkpoint=checkpoint)
    build(second)
    await second.start()
    assert not leftover.exists()
    assert others.exists()
    await second.runUntil(T0 + Minutes(3))
    await second.stop(stopSparkContext=False)
    written = sorted(path.name for path in out.iterdir() if path.name.startswith("numbers-"))
    assert written == [f"numbers-{(T0 + Minutes(m)).milliseconds}.txt" for m in (1, 2, 3)] + [
        f"numbers-extra-{(T0 + Minutes(m)).milliseconds}" for m in (1, 2, 3)
    ]
    assert not [path for path in out.iterdir() if path.name.startswith("_temporary-numbers")]


async def test_two_sources_may_not_share_a_name(sc: SparkContext) -> None:
    ssc = virtual(sc, start=T0)
    ssc.timer(T0, None, Days(1), "daily")
    with pytest.raises(InvalidArgumentError, match="'daily' is already used"):
        ssc.timer(T0, None, Days(1), "daily")
    rest = ssc.restServer(None, name="triggers").post("/a").post("/b")
    # unnamed operator results get their own names, in creation order, so they survive restarts
    first = rest.filter(lambda e: e.path == "/a")
    second = rest.filter(lambda e: e.path == "/b")
    assert first.name != second.name and second.name == f"{first.name}#2"


async def test_a_restart_after_a_failed_read_goes_on_where_the_stream_stopped(
    sc: SparkContext, tmp_path: Path
) -> None:
    """The last batch before the stop failed to read the log: the restart neither reads the
    stream's earlier records again nor skips the ones that batch did not read."""
    log = FileLog(str(tmp_path / "log"))
    log.create_topic("clicks")
    checkpoint = str(tmp_path / "checkpoint")

    def build(ssc: StreamingContext) -> list[list[int]]:
        tick = ssc.timer(T0 + Minutes(1), None, Minutes(1), "tick")
        clicks = ssc.directStream(log, "clicks", startingOffsets="earliest")
        seen: list[list[int]] = []
        clicks.foreachRDD(lambda rdd: seen.append(sorted(v for _, v in rdd.collect()))).bind(tick)
        return seen

    def unreachable(topic: str, partition: int) -> int:
        raise ConnectionError("the log is unreachable")

    for n in range(3):
        log.append("clicks", n)
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    before = build(first)
    await first.start()
    assert await first.advanceTo(T0 + Minutes(1)) == []
    for n in range(3, 6):
        log.append("clicks", n)
    reachable, log.latest_offset = log.latest_offset, unreachable  # type: ignore[method-assign]
    [failure] = await first.advanceTo(T0 + Minutes(2))
    log.latest_offset = reachable  # type: ignore[method-assign]
    await first.stop(stopSparkContext=False)
    assert isinstance(failure.error, ConnectionError)

    for n in range(6, 9):
        log.append("clicks", n)
    second = virtual(sc, start=T0 + Minutes(2), checkpoint=checkpoint)
    after = build(second)
    await second.start()
    assert await second.advanceTo(T0 + Minutes(3)) == []
    await second.stop(stopSparkContext=False)
    assert before == [[0, 1, 2]]
    assert after == [[3, 4, 5, 6, 7, 8]]


class Crash(BaseException):
    """Stands for the driver dying in the middle of a batch."""


Windows = list[tuple[int, list[Any]]]
#: How long the runs that restart windows over a long history last, in days.
HISTORY_DAYS = 30


def reaching_back(
    ssc: StreamingContext, kind: str, windows: Windows, crash_day: int | None
) -> None:
    """A daily stream, a window over history that reaches back past the window, and a crash.

    `chained`: a window over a window, which reaches twice as far back as it counts;
    `sparse`: a window over a parent with an RDD every third day only; `state`: a window over
    an updateStateByKey state, which reaches back to its last save.
    """
    daily = ssc.timer(T0 + Days(1), None, Days(1), "daily")
    numbers = ssc.queueStream([[day] for day in range(1, HISTORY_DAYS + 1)])

    def beat(time: datetime, rdd: Any, event: Event) -> None:
        if day_of(event) == crash_day:
            raise Crash

    numbers.foreachRDD(beat).bind(daily)
    if kind == "chained":
        windowed = numbers.window(Days(2), Days(2)).window(Days(8), Days(4))
    elif kind == "sparse":
        windowed = numbers.transform(
            lambda time, rdd, event: rdd if day_of(event) % 3 == 0 else None
        ).tailWindow(4)
    else:
        windowed = (
            numbers.map(lambda day: ("total", day))
            .updateStateByKey(lambda new, total: sum(new) + (total or 0))
            .window(Days(4), Days(2))
        )
    windowed.foreachRDD(
        lambda time, rdd, event: windows.append((day_of(event), sorted(rdd.collect())))
    ).bind(daily)


async def restarted_on(
    sc: SparkContext, checkpoint: str, kind: str, day: int, *, graceful: bool
) -> Windows:
    """The windows of a run that crashes on `day` (or stops then) and restarts at once."""
    windows: Windows = []
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    reaching_back(first, kind, windows, None if graceful else day)
    await first.start()
    if graceful:
        await first.runUntil(T0 + Days(day))
    else:
        with pytest.raises(Crash):
            await first.advanceTo(T0 + Days(HISTORY_DAYS))
    await first.stop(stopSparkContext=False, stopGracefully=graceful)
    second = virtual(sc, start=T0 + Days(day), checkpoint=checkpoint)
    reaching_back(second, kind, windows, None)
    await ran_and_stopped(second, T0 + Days(HISTORY_DAYS))
    return windows


async def ran_and_stopped(ssc: StreamingContext, until: Time) -> None:
    """Start `ssc` and run it until `until` (raising any failure); stop it whatever happened."""
    await ssc.start()
    try:
        await ssc.runUntil(until)
    finally:
        await ssc.stop(stopSparkContext=False)


@pytest.mark.parametrize(
    ("kind", "days"), [("chained", [9, 12, 17, 22]), ("sparse", [9, 12, 17]), ("state", [12, 22])]
)
async def test_windows_over_a_history_longer_than_they_count_survive_a_restart(
    sc: SparkContext, tmp_path: Path, kind: str, days: list[int]
) -> None:
    """A window over a window, over a sparse parent or over a state needs more past batches
    than it counts: after a crash or a stop, the log still held them all."""
    uninterrupted: Windows = []
    reference = virtual(sc, start=T0)
    reaching_back(reference, kind, uninterrupted, None)
    await ran(reference, T0 + Days(HISTORY_DAYS))
    assert len(uninterrupted) >= 7
    for day in days:
        for graceful in (False, True):
            checkpoint = str(tmp_path / f"checkpoint-{day}-{graceful}")
            restarted = await restarted_on(sc, checkpoint, kind, day, graceful=graceful)
            assert restarted == uninterrupted, (day, "stop" if graceful else "crash")


async def test_a_state_over_a_file_stream_restarts_after_its_saves_moved_on(
    sc: SparkContext, tmp_path: Path
) -> None:
    """A file stream remembers its last 60 s of batches, so the log keeps them, and the state
    saves they read: a crash at second 45 restarts from them. Saves no kept batch reads go."""
    logs, checkpoint = tmp_path / "logs", str(tmp_path / "checkpoint")
    logs.mkdir()
    for second in range(0, 80, 7):
        stamp(logs / f"at-{second}.log", ["all", f"some-{second % 3}"], T0 + Seconds(second + 0.5))
    end, crash_second = T0 + Seconds(90), 45

    def build(ssc: StreamingContext, totals: list[tuple[int, list[Any]]], crash: bool) -> None:
        tick = ssc.timer(T0 + Seconds(1), None, Seconds(1), "tick")

        def record(time: datetime, rdd: Any, event: Event) -> None:
            second = (event.time - T0) // Seconds(1)
            if crash and second == crash_second:
                raise Crash
            totals.append((second, sorted(rdd.collect())))

        ssc.textFileStream(str(logs)).map(lambda line: (line, 1)).updateStateByKey(
            lambda new, total: sum(new) + (total or 0)
        ).foreachRDD(record).bind(tick)

    uninterrupted: list[tuple[int, list[Any]]] = []
    reference = virtual(sc, start=T0)
    build(reference, uninterrupted, crash=False)
    await ran(reference, end)

    totals: list[tuple[int, list[Any]]] = []
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, totals, crash=True)
    await first.start()
    with pytest.raises(Crash):
        await first.advanceTo(end)
    await first.stop(stopSparkContext=False)
    second = virtual(sc, start=T0 + Seconds(crash_second), checkpoint=checkpoint)
    build(second, totals, crash=False)
    await ran_and_stopped(second, end)
    assert totals == uninterrupted
    saves = os.listdir(tmp_path / "checkpoint" / "state")
    assert 2 <= len(saves) <= 8  # the last minute's, read by the batches the log keeps


@pytest.mark.parametrize("fixed", [False, True])
async def test_a_timer_started_at_now_says_it_starts_afresh_and_a_fixed_start_catches_up(
    sc: SparkContext, tmp_path: Path, caplog: pytest.LogCaptureFixture, fixed: bool
) -> None:
    """The docs' `ssc.timer(ssc.clock.now(), ...)` with a checkpoint is a new timer at every
    start: the ticks of the downtime were never caught up, and the log said only "changed". It
    says what is lost and how to keep it; a fixed start (`Time(0)`) catches up."""
    checkpoint = str(tmp_path / "checkpoint")

    async def run(at: Time, until: Time) -> list[float]:
        ssc = virtual(sc, None, at, checkpoint=checkpoint)
        start = Time(0) if fixed else ssc.clock.now()
        tick = ssc.timer(start, None, Seconds(1), "tick")
        seen: list[float] = []
        stream = ssc.queueStream([], default=[1])
        stream.foreachRDD(lambda t, rdd: seen.append(t.timestamp())).bind(tick)
        await ssc.start()
        await ssc.advanceTo(until)
        await ssc.stop(stopSparkContext=False)
        return seen

    begin = T0 + Milliseconds(500)
    assert len(await run(begin, begin + Milliseconds(2700))) == 3
    after = await run(begin + Milliseconds(6200), begin + Milliseconds(6600))
    warned = [r.getMessage() for r in caplog.records if "changed" in r.getMessage()]
    seconds = T0.milliseconds // 1000
    if fixed:  # the downtime's ticks caught up, on whole seconds
        assert after == [float(seconds + k) for k in (4, 5, 6, 7)] and warned == []
    else:
        assert after == [(begin + Milliseconds(6200)).milliseconds / 1000]
        assert len(warned) == 1
        assert "what it missed while the driver was down is not caught up" in warned[0]
        assert "give it a fixed start (`Time(0)`: ticks on whole periods)" in warned[0]


async def test_a_timer_whose_period_changed_starts_afresh_without_the_start_hint(
    sc: SparkContext, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    for period in (Seconds(1), Seconds(2)):
        ssc = virtual(sc, None, T0, checkpoint=checkpoint)
        tick = ssc.timer(T0, None, period, "tick")
        ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(tick)
        await ran(ssc, T0 + Seconds(2))
    [warned] = [r.getMessage() for r in caplog.records if "changed" in r.getMessage()]
    assert "what it missed while the driver was down is not caught up" in warned
    assert "only its start moved" not in warned
