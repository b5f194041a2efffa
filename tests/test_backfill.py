"""Backfill: a daily/weekly pipeline fixed and re-run over two past weeks, outputs replaced
atomically, the live checkpoint untouched, the plan equal to what runs, exactly-once state
refusing to be overwritten unless told to, and mistakes named before anything runs."""

from __future__ import annotations

import hashlib
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark import SparkContext

from reactive_spark import Days, Minutes, StreamingContext, Time, VirtualClock
from reactive_spark.backfill import Backfill, BackfillConflictError, PlannedBatch
from reactive_spark.errors import ContextStateError, InvalidArgumentError
from reactive_spark.log import Database, FileLog, StateStore

from .helpers import Recorder

START = Time.fromDatetime(datetime(2026, 1, 5, tzinfo=UTC))  # a Monday
DAY = Days(1)
WEEKS = 4


def write_logs(directory: Path) -> None:
    """A log file per day, written (mtime) at 08:00 of its day; the same every time."""
    directory.mkdir(parents=True)
    levels = ["INFO", "WARN", "INFO", "ERROR", "DEBUG"]
    for day in range(7 * WEEKS):
        path = directory / f"app-{day:02d}.log"
        path.write_text("".join(f"day {day} {levels[(day + i) % 5]} line {i}\n" for i in range(20)))
        stamp = (START + DAY * day + Minutes(8 * 60)).milliseconds * 1_000_000
        os.utime(path, ns=(stamp, stamp))


def pipeline(ssc: StreamingContext, workdir: Path, *, fixed: bool) -> None:
    """Daily WARN/ERROR extracts (the fixed job marks its lines), rolled up weekly."""
    daily = ssc.timer(START + DAY, None, DAY, "daily")
    weekly = ssc.timer(START + DAY * 7, None, DAY * 7, "weekly")
    kept = ssc.textFileStream(str(workdir.parent / "logs")).filter(
        lambda line: "WARN" in line or "ERROR" in line
    )
    if fixed:
        kept = kept.map(lambda line: f"fixed {line}")
    (
        kept.saveAsTextFiles(str(workdir / "out" / "daily"))
        .bind(daily)
        .tailWindow(7, 7)
        .filter(lambda line: "ERROR" in line)
        .transform(lambda rdd: rdd.coalesce(1))
        .saveAsTextFiles(str(workdir / "out" / "weekly"))
        .bind(weekly)
    )


async def clean_run(
    sc: SparkContext, workdir: Path, *, fixed: bool, weeks: int = WEEKS, live: bool = True
) -> None:
    """`weeks` weeks from the start; a live run checkpoints to `workdir/checkpoint`."""
    checkpoint = str(workdir / "checkpoint") if live else None
    async with StreamingContext(sc, clock=VirtualClock(START), checkpoint=checkpoint) as ssc:
        pipeline(ssc, workdir, fixed=fixed)
        await ssc.start()
        await ssc.runUntil(START + DAY * (7 * weeks))


def outputs(workdir: Path) -> dict[str, dict[str, tuple[bytes, int]]]:
    """Every batch directory under `workdir/out`: its files' bytes and modification times."""
    return {
        batch.name: {
            part.name: (part.read_bytes(), part.stat().st_mtime_ns)
            for part in sorted(batch.iterdir())
        }
        for batch in sorted((workdir / "out").iterdir())
    }


def contents(batches: dict[str, dict[str, tuple[bytes, int]]]) -> dict[str, dict[str, bytes]]:
    """What each batch directory holds: Spark's files and the `_BATCH` file naming the event
    that wrote it (its source, time and index: a backfilled tick has the live one's)."""
    return {
        name: {part: data for part, (data, _) in files.items()} for name, files in batches.items()
    }


def digest(directory: Path) -> str:
    """A hash of every file under `directory`: names, bytes and modification times."""
    hashed = hashlib.sha256()
    for path in sorted(directory.rglob("*")):
        hashed.update(str(path.relative_to(directory)).encode())
        if path.is_file():
            hashed.update(path.read_bytes())
            hashed.update(str(path.stat().st_mtime_ns).encode())
    return hashed.hexdigest()


def batch_name(prefix: str, day: int) -> str:
    return f"{prefix}-{(START + DAY * day).milliseconds}"


async def test_a_fixed_daily_job_backfilled_over_two_weeks_equals_a_clean_run_of_the_fix(
    sc: SparkContext, tmp_path: Path
) -> None:
    write_logs(tmp_path / "logs")
    live, reference = tmp_path / "live", tmp_path / "reference"
    await clean_run(sc, live, fixed=False)
    await clean_run(sc, reference, fixed=True, weeks=3, live=False)  # weeks 2 and 3 are compared
    before, checkpoint_before = outputs(live), digest(live / "checkpoint")
    assert len(before) == 7 * WEEKS + WEEKS  # the daily batches and the weekly roll-ups

    # weeks 2 and 3: the days' batches at days 8..21, their roll-ups at days 14 and 21
    first, last = START + DAY * 8, START + DAY * 21
    ssc = StreamingContext(sc, clock=VirtualClock(first), checkpoint=str(live / "checkpoint"))
    pipeline(ssc, live, fixed=True)
    recorder = Recorder()
    ssc.addStreamingListener(recorder)
    plan = Backfill(ssc, first, last).batches
    heard: list[tuple[int, int]] = []
    report = await ssc.backfill(
        first, last, progress=lambda done, total, _: heard.append((done, total))
    )

    assert report.failures == []
    assert [(e.source.name, e.time.toDatetime()) for e in recorder.events] == [
        (batch.source, batch.time) for batch in plan
    ]
    assert report.batches == plan and heard[-1] == (16, 16)
    rerun = {batch_name("daily", day) for day in range(8, 22)}
    rerun |= {batch_name("weekly", 14), batch_name("weekly", 21)}
    after = outputs(live)
    assert set(after) == set(before)  # nothing added, nothing left behind (no temporary dirs)
    expected = contents(outputs(reference))
    assert {name: contents(after)[name] for name in rerun} == {
        name: expected[name] for name in rerun
    }
    assert all(contents(before)[name] != contents(after)[name] for name in rerun)
    untouched = set(before) - rerun  # weeks 1 and 4: the same bytes, the same mtimes
    assert {name: after[name] for name in untouched} == {name: before[name] for name in untouched}
    assert digest(live / "checkpoint") == checkpoint_before


def test_the_plan_names_each_batch_its_source_and_streams(sc: SparkContext, tmp_path: Path) -> None:
    ssc = StreamingContext(sc, clock=VirtualClock(START))
    pipeline(ssc, tmp_path / "work", fixed=False)
    planned = Backfill(ssc, START + DAY * 6, START + DAY * 7, sources="daily").batches
    assert [str(batch) for batch in planned] == [
        f"2026-01-11T00:00:00Z  daily  saveAsTextFiles({tmp_path}/work/out/daily)[2]",
        f"2026-01-12T00:00:00Z  daily  saveAsTextFiles({tmp_path}/work/out/daily)[2]",
    ]
    both = Backfill(ssc, START + DAY * 7, START + DAY * 7).batches
    assert [batch.source for batch in both] == ["daily", "weekly"]  # the lineage order
    assert ssc.state == "initialized"  # nothing started


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((START + DAY, START), "start must not be after end, got start=2026-01-06T00:00:00Z"),
        ((START, START + DAY, ["hourly"]), "sources names no source of the program: 'hourly'"),
        ((START, START + DAY, ["rerun"]), "source 'rerun' (manual) cannot be backfilled"),
        ((START, START + DAY, ["nightly"]), "sources names 'nightly', which is derived from daily"),
        ((START, START + DAY, ["weekly", "rerun-daily"]), "source 'either' derives from sources"),
        ((START - DAY, START), "start must not be before the clock's time 2026-01-05T00:00:00Z"),
        (("2026-01-05", START), "start must be"),
        ((START, START + DAY, 123), "sources must name some sources, got 123"),
    ],
)
def test_mistakes_are_named_before_anything_runs(
    sc: SparkContext, arguments: tuple[Any, ...], message: str
) -> None:
    ssc = StreamingContext(sc, clock=VirtualClock(START))
    daily = ssc.timer(START, None, DAY, "daily")
    weekly = ssc.timer(START, None, DAY * 7, "weekly")
    rerun = ssc.manualSource("rerun")
    nightly = daily.filter(lambda event: True, name="nightly")
    either = weekly.merge(ssc.timer(START, None, DAY, "rerun-daily"), nightly, name="either")
    ssc.queueStream([], default=[1]).foreachRDD(print).bind(either).bind(rerun)
    with pytest.raises((InvalidArgumentError, TypeError), match=re.escape(message)):
        Backfill(ssc, *arguments)


@pytest.mark.parametrize(
    ("progress", "message"),
    [
        ("not a function", "backfill: progress must be callable, got 'not a function'"),
        (lambda done: None, "backfill: progress must take 3 positional arguments; "),
        (lambda done, total, time, *, at: None, "<lambda> has required keyword-only parameters"),
    ],
)
async def test_a_progress_it_cannot_call_is_refused_before_anything_runs(
    sc: SparkContext, tmp_path: Path, progress: Any, message: str
) -> None:
    ssc = StreamingContext(sc, clock=VirtualClock(START))
    daily = ssc.timer(START + DAY, None, DAY, "daily")
    ssc.queueStream([], default=["new"]).saveAsTextFiles(str(tmp_path / "d")).bind(daily)
    with pytest.raises(TypeError, match=re.escape(message)):
        await ssc.backfill(START + DAY, START + DAY * 3, progress=progress)
    assert list(tmp_path.iterdir()) == []  # not one instant ran


def test_a_stream_read_from_a_socket_cannot_be_backfilled(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, clock=VirtualClock(START))
    lines = ssc.socketTextStream("127.0.0.1", 9)
    lines.foreachRDD(lambda rdd: None).bind(ssc.timer(START, None, DAY, "daily"))
    with pytest.raises(
        InvalidArgumentError, match=r"socketTextStream\(127\.0\.0\.1:9\)\[0\] read what"
    ):
        Backfill(ssc, START, START + DAY)


async def test_a_backfill_needs_a_new_context_on_a_virtual_clock(sc: SparkContext) -> None:
    ssc = StreamingContext(sc)
    ssc.queueStream([], default=[1]).foreachRDD(print).bind(ssc.timer(START, None, DAY, "d"))
    with pytest.raises(ContextStateError, match="a backfill runs on a virtual clock"):
        await ssc.backfill(START, START)


def add(total: int, n: int) -> int:
    return total + n


async def test_exactly_once_state_refuses_to_be_overwritten_unless_told_to(
    sc: SparkContext, tmp_path: Path
) -> None:
    log = FileLog(str(tmp_path / "log"))
    log.create_topic("clicks")
    database = Database.sqlite(str(tmp_path / "state.db"))

    def build(ssc: StreamingContext) -> StateStore:
        store = StateStore(database, "views")
        tick = ssc.timer(START + Minutes(1), None, Minutes(1), "tick")
        clicks = ssc.directStream(log, "clicks", store.committedOffsets(), "earliest")
        clicks.map(lambda kv: (kv[1], 1)).aggregateExactlyOnce(store, 0, add).bind(tick)
        return store

    async with StreamingContext(sc, clock=VirtualClock(START)) as live:
        store = build(live)
        await live.start()
        for minute in range(1, 4):
            log.append("clicks", f"/page{minute}")
            await live.runUntil(START + Minutes(minute))
    assert store.items() == {"/page1": 1, "/page2": 1, "/page3": 1}

    refused = StreamingContext(sc, clock=VirtualClock(START))
    build(refused)
    with pytest.raises(BackfillConflictError) as error:
        await refused.backfill(START + Minutes(2), START + Minutes(5))
    assert str(error.value).startswith(
        "aggregateExactlyOnce[2](add) (store 'views') committed the batch at "
        "2026-01-05T00:02:00Z and 1 more already: a backfill would not replace it; pass "
        "overwrite=True (--overwrite)"
    )
    assert refused.state == "initialized"  # refused before anything ran

    told = StreamingContext(sc, clock=VirtualClock(START))
    build(told)
    report = await told.backfill(START + Minutes(2), START + Minutes(5), overwrite=True)
    assert report.failures == [] and len(report.batches) == 4
    assert store.items() == {"/page1": 1, "/page2": 1, "/page3": 1}  # nothing folded twice


async def test_a_backfill_reports_no_deadline_of_the_past_it_re_runs(sc: SparkContext) -> None:
    """Expectations watch a live run: sources left out of a backfill miss nothing in it."""
    from reactive_spark import StreamingListener

    ssc = StreamingContext(sc, clock=VirtualClock(START))
    daily = ssc.timer(START, None, DAY, "daily").expect(DAY)
    uploads = ssc.manualSource("uploads").expect(DAY)
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(daily).bind(uploads)
    missed: list[Any] = []

    class Deadlines(StreamingListener):
        def onDeadlineMissed(self, deadlineMissed: Any) -> None:
            missed.append(deadlineMissed)

    ssc.addStreamingListener(Deadlines())
    report = await ssc.backfill(START + DAY, START + DAY * 5, sources="daily")
    assert len(report.batches) == 5
    assert missed == []


async def test_what_a_delay_holds_at_a_backfills_end_falls_past_its_range(
    sc: SparkContext, caplog: pytest.LogCaptureFixture
) -> None:
    """Not planned, so not dropped: the backfill's stop reports none of it (it logs it)."""
    from reactive_spark import EventsDropped, StreamingListener

    ssc = StreamingContext(sc, clock=VirtualClock(START))
    daily = ssc.timer(START, None, DAY, "daily")
    settled = daily.delay(Minutes(12 * 60))
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(settled)
    dropped: list[EventsDropped] = []

    class Drops(StreamingListener):
        def onEventsDropped(self, eventsDropped: EventsDropped) -> None:
            dropped.append(eventsDropped)

    ssc.addStreamingListener(Drops())
    with caplog.at_level("INFO", logger="reactive_spark.operators._delay"):
        report = await ssc.backfill(START + DAY, START + DAY * 5, sources="daily")
    # days 1 to 4 at noon; day 5's would fall due after the range
    assert [batch.time for batch in report.batches if batch.source == settled.name] == [
        (START + DAY * day + Minutes(12 * 60)).toDatetime() for day in range(1, 5)
    ]
    assert dropped == []
    assert "1 delayed events fall past the backfill" in caplog.text


async def test_the_pipes_of_the_chosen_sources_run_in_a_backfill_as_planned(
    sc: SparkContext,
) -> None:
    """Sources derived from the chosen ones start at the backfill's start (its primary sources
    never): a `pipe`'s RxPY operators get the backfilled events on the clock, from where its
    `between` planned them (a time buffer lines up), so what runs is what was planned; a pipe
    of a source not chosen never subscribes, so it fires nothing."""
    from datetime import timedelta

    import reactivex.operators as ops

    ssc = StreamingContext(sc, clock=VirtualClock(START))
    daily = ssc.timer(START, None, DAY, "daily")
    hourly = ssc.timer(START, None, Minutes(60), "hourly")
    later = daily.pipe(
        ops.map(lambda event: event.time.milliseconds), ops.delay(timedelta(hours=1)), name="later"
    )
    buffered = daily.pipe(ops.buffer_with_time(timedelta(days=2)), ops.filter(len), name="two")
    greeted = hourly.pipe(ops.start_with("hello"), name="greeted")
    ran: list[tuple[str, int, Any]] = []
    for piped in (later, buffered, greeted):
        ssc.queueStream([], default=[1]).transform(
            lambda time, rdd, event: (
                ran.append((event.source.name, event.time.milliseconds, event.value)) or rdd
            )
        ).foreachRDD(lambda rdd: None).bind(piped)
    first, last = START + DAY * 3, START + DAY * 6
    planned = [
        (batch.source, Time.fromDatetime(batch.time).milliseconds)
        for batch in Backfill(ssc, first, last, "daily").batches
        if batch.streams  # daily's own events run no stream
    ]
    report = await ssc.backfill(first, last, sources="daily")
    assert report.failures == []
    assert [(source, at) for source, at, _ in ran] == planned
    hour = Minutes(60)
    # the ticks of days 3 to 5, an hour late (day 6's falls past the range)
    assert [(at, value) for source, at, value in ran if source == "later"] == [
        ((START + DAY * day + hour).milliseconds, (START + DAY * day).milliseconds)
        for day in (3, 4, 5)
    ]
    # two-day buffers from day 3: days 3 and 4 at day 5, then day 5 and 6 at day 7 (past it)
    assert [(at, [e.time for e in value]) for source, at, value in ran if source == "two"] == [
        ((START + DAY * 5).milliseconds, [START + DAY * 3, START + DAY * 4])
    ]


Numbered = list[tuple[str, datetime, int | None]]


def numbered(plan: list[PlannedBatch]) -> Numbered:
    """Each planned batch's source, time and index."""
    return [(batch.source, batch.time, batch.index) for batch in plan]


def indexed(source: str, batches: Numbered) -> list[tuple[datetime, int | None]]:
    """The times and indexes of `source`'s batches."""
    return [(at, index) for name, at, index in batches if name == source]


def ran_as_planned(plan: list[PlannedBatch], recorder: Recorder) -> Numbered:
    """The plan's batches, once checked that the run fired exactly their events."""
    fired = [(event.source.name, event.datetime, event.index) for event in recorder.events]
    assert fired == numbered(plan)
    return fired


async def test_a_backfilled_tick_has_its_live_index_so_a_source_derived_by_index_fires_as_live(
    sc: SparkContext,
) -> None:
    """A tick carries its number from the timer's start, as in a live run from that start: a
    weekly source taken from the daily timer by index fires on the live run's days, and the
    plan calls its predicate with those indexes (never None) and lists what then runs. The
    weekly source's own events are numbered from the backfill's start."""

    def build(ssc: StreamingContext, ran: Numbered) -> None:
        daily = ssc.timer(START, None, DAY, "daily")
        weekly = daily.filter(lambda event: event.index % 7 == 6, name="weekly")
        for source in (daily, weekly):
            ssc.queueStream([], default=[1]).foreachRDD(
                lambda time, rdd, event: ran.append(
                    (event.source.name, event.datetime, event.index)
                )
            ).bind(source)

    live: Numbered = []
    async with StreamingContext(sc, clock=VirtualClock(START)) as ssc:
        build(ssc, live)
        await ssc.start()
        await ssc.runUntil(START + DAY * 24)

    first, last = START + DAY * 9, START + DAY * 24
    backfilled: Numbered = []
    ssc = StreamingContext(sc, clock=VirtualClock(first))
    build(ssc, backfilled)
    recorder = Recorder()
    ssc.addStreamingListener(recorder)
    plan = Backfill(ssc, first, last).batches
    report = await ssc.backfill(first, last)

    assert report.failures == [] and report.batches == plan
    assert ran_as_planned(plan, recorder) == backfilled
    in_range = [(source, at, index) for source, at, index in live if at >= first.toDatetime()]
    daily = [(at, index) for source, at, index in in_range if source == "daily"]
    assert indexed("daily", numbered(plan)) == daily and daily[0] == (first.toDatetime(), 9)
    weekly_days = [at for source, at, _ in in_range if source == "weekly"]
    assert weekly_days == [(START + DAY * day).toDatetime() for day in (13, 20)]
    assert indexed("weekly", numbered(plan)) == list(zip(weekly_days, range(2), strict=True))


async def test_a_backfilled_file_has_its_position_among_the_watched_files_whatever_the_range(
    sc: SparkContext, tmp_path: Path
) -> None:
    """A file watcher's live index cannot be known (files noticed together share an event): a
    backfilled file carries its position among the files by modification time, the same in
    any range, and a source derived from it by index plans and runs on it."""
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    for day in range(10):
        path = incoming / f"upload-{day}.csv"
        path.write_text(f"{day}\n")
        noon = (START + DAY * day + Minutes(12 * 60)).milliseconds * 1_000_000
        os.utime(path, ns=(noon, noon))

    async def backfill(first_day: int, last_day: int) -> Numbered:
        ssc = StreamingContext(sc, clock=VirtualClock(START + DAY * first_day))
        uploads = ssc.fileWatcher(str(incoming), "uploads")
        evens = uploads.filter(lambda event: event.index % 2 == 0, name="evens")
        ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(uploads).bind(evens)
        recorder = Recorder()
        ssc.addStreamingListener(recorder)
        first, last = START + DAY * first_day, START + DAY * last_day
        plan = Backfill(ssc, first, last).batches
        report = await ssc.backfill(first, last)
        assert report.failures == [] and report.batches == plan
        return ran_as_planned(plan, recorder)

    def at_noon(day: int) -> datetime:
        return (START + DAY * day + Minutes(12 * 60)).toDatetime()

    four_days = await backfill(4, 8)
    assert indexed("uploads", four_days) == [(at_noon(day), day) for day in range(4, 8)]
    assert indexed("evens", four_days) == [(at_noon(4), 0), (at_noon(6), 1)]
    two_days = await backfill(5, 7)
    assert indexed("uploads", two_days) == [(at_noon(5), 5), (at_noon(6), 6)]
    assert indexed("evens", two_days) == [(at_noon(6), 0)]


def derived_from(operator: str, ssc: StreamingContext, daily: Any) -> Any:
    """A source derived from `daily` by `operator` (with a second timer where it takes two)."""
    import reactivex.operators as ops

    if operator == "map":
        return daily.map(lambda event: event.index * 10, name="derived")
    if operator == "delay":  # looks back past the backfill's start: its ticks are not fired
        return daily.delay(Minutes(36 * 60), name="derived")
    if operator == "merge":
        return daily.merge(ssc.timer(START, None, DAY * 2, "every-2-days"), name="derived")
    if operator == "join":
        half_past = ssc.timer(START + Minutes(30), None, DAY, "half-past")
        return daily.join(half_past, Minutes(60), name="derived")
    return daily.pipe(ops.filter(lambda event: event.index % 3 != 0), name="derived")


@pytest.mark.parametrize("operator", ["map", "delay", "merge", "join", "pipe"])
async def test_operators_see_in_the_plan_the_numbered_events_they_see_in_the_run(
    sc: SparkContext, operator: str
) -> None:
    """Each operator's function sees in the plan exactly the events it sees in the run, each
    with its index: the backfilled ones only, never a parent's event before the start (a
    `delay`'s look back)."""
    ssc = StreamingContext(sc, clock=VirtualClock(START))
    daily = ssc.timer(START, None, DAY, "daily")
    derived = derived_from(operator, ssc, daily)
    seen: list[tuple[Time, int | None]] = []

    def even(event: Any) -> bool:
        seen.append((event.time, event.index))
        return bool(event.index % 2 == 0)

    evens = derived.filter(even, name="evens")
    for source in (daily, derived, evens):
        ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(source)
    recorder = Recorder()
    ssc.addStreamingListener(recorder)
    first, last = START + DAY * 3, START + DAY * 8
    plan = Backfill(ssc, first, last).batches
    seen_in_plan, seen[:] = list(seen), []
    report = await ssc.backfill(first, last)

    assert report.failures == [] and report.batches == plan
    ran_as_planned(plan, recorder)
    assert seen_in_plan and seen == seen_in_plan * 2  # `backfill` plans again, then runs
    planned = numbered(plan)
    assert [index for _, index in indexed("derived", planned)] == list(range(len(seen_in_plan)))
    assert indexed("daily", planned) == [((START + DAY * d).toDatetime(), d) for d in range(3, 9)]


def test_a_source_numbering_its_past_events_wrongly_is_named(sc: SparkContext) -> None:
    from reactive_spark import Event, EventSource

    class Replayed(EventSource):
        """A custom source whose `between` gives its events an index of its own."""

        def start(self) -> None: ...

        def stop(self) -> None: ...

        def toProduct(self) -> tuple[Any, ...]:
            return (self.name,)

        def between(self, start: Any, end: Any) -> list[Event]:
            return [Event(self, -1, START + DAY)]

    ssc = StreamingContext(sc, clock=VirtualClock(START))
    replayed = Replayed(ssc, "replayed")
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(replayed)
    with pytest.raises(InvalidArgumentError) as error:
        Backfill(ssc, START, START + DAY)
    assert str(error.value) == (
        "source 'replayed': numberPast must give each event an int >= 0 as its index, got -1 "
        "for its event at 2026-01-06T00:00:00Z"
    )
