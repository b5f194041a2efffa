"""Deadlines on virtual time: a missing daily event or a failing daily output is reported
once at its deadline, also when the deadline passed while the process was down."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pyspark import SparkContext

from reactive_spark import (
    Days,
    Hours,
    Milliseconds,
    Minutes,
    StreamingContext,
    StreamingListener,
    SystemClock,
    Time,
)
from reactive_spark.checkpoint import Checkpoint, CheckpointError
from reactive_spark.clock import VirtualClock
from reactive_spark.deadlines import AHEAD, MAX_TOLD, DeadlineWatch, Expectation
from reactive_spark.errors import ContextStateError, InvalidArgumentError
from reactive_spark.failures import SourceErrorInfo
from reactive_spark.listener import DeadlineMissed

from .helpers import virtual

T0 = Time.fromDatetime(datetime(2026, 3, 2, tzinfo=UTC))  # a midnight UTC


class Misses(StreamingListener):
    def __init__(self) -> None:
        self.missed: list[DeadlineMissed] = []

    def onDeadlineMissed(self, missed: DeadlineMissed) -> None:
        self.missed.append(missed)

    def days(self) -> list[tuple[str, int, bool]]:
        """`(name, day since T0, during downtime)` of each miss, in order."""
        return [
            (m.name, (Time.fromDatetime(m.periodStart) - T0) // Days(1), m.duringDowntime)
            for m in self.missed
        ]


def uploads_pipeline(ssc: StreamingContext) -> Any:
    """A manual 'uploads' source expected daily by 02:00, with a job per upload."""
    uploads = ssc.manualSource("uploads").expect(Days(1), within=Hours(2))
    ssc.queueStream([], default=[1]).count().foreachRDD(lambda rdd: None).bind(uploads)
    return uploads


async def test_a_missing_daily_event_is_reported_once_at_its_deadline(sc: SparkContext) -> None:
    misses = Misses()
    async with virtual(sc, start=T0) as ssc:
        uploads = uploads_pipeline(ssc)
        ssc.addStreamingListener(misses)
        await ssc.start()
        await ssc.advanceTo(T0 + Hours(1))
        uploads.trigger("day 0, on time")
        await ssc.advanceTo(T0 + Days(1) + Hours(1))
        assert misses.missed == []  # day 0 was met; day 1's deadline has not come
        await ssc.advanceTo(T0 + Days(1) + Hours(2) - Minutes(1))
        assert misses.missed == []
        await ssc.advanceTo(T0 + Days(1) + Hours(2))
        assert misses.days() == [("uploads", 1, False)]
        uploads.trigger("day 1, late: meets nothing")
        await ssc.advanceTo(T0 + Days(2) + Hours(1))
        uploads.trigger("day 2, on time")
        await ssc.advanceTo(T0 + Days(3))
    assert misses.days() == [("uploads", 1, False)]
    [missed] = misses.missed
    assert (missed.kind, missed.deadline) == ("source", (T0 + Days(1) + Hours(2)).toDatetime())
    assert "uploads" in missed.describe()


async def test_a_daily_timer_meets_its_deadline(sc: SparkContext) -> None:
    misses = Misses()
    async with virtual(sc, start=T0) as ssc:
        daily = ssc.timer(T0, None, Days(1), "daily").expect(Days(1), within=Minutes(5))
        ssc.queueStream([], default=[1]).count().foreachRDD(lambda rdd: None).bind(daily)
        ssc.addStreamingListener(misses)
        await ssc.start()
        await ssc.advanceTo(T0 + Days(10))
    assert misses.missed == []


async def test_a_failing_daily_output_misses_its_deadline(sc: SparkContext) -> None:
    misses = Misses()
    day_two = (T0 + Days(2)).toDatetime()

    def save(time: datetime, rdd: Any) -> None:
        if time == day_two:
            raise ValueError("disk full")

    async with virtual(sc, start=T0) as ssc:
        daily = ssc.timer(T0, None, Days(1), "daily")
        report = ssc.queueStream([], default=[1]).foreachRDD(save).bind(daily)
        report.expect(Days(1), within=Hours(1))
        ssc.addStreamingListener(misses)
        await ssc.start()
        failures = await ssc.advanceTo(T0 + Days(4))
    assert len(failures) == 1
    assert [(m.kind, m.name) for m in misses.missed] == [("output", report.name)]
    assert misses.days() == [(report.name, 2, False)]


async def test_a_deadline_missed_while_down_is_reported_once_at_the_restart(
    sc: SparkContext, tmp_path: Path
) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    misses = Misses()
    async with virtual(sc, start=T0, checkpoint=checkpoint) as ssc:
        uploads = uploads_pipeline(ssc)
        ssc.addStreamingListener(misses)
        await ssc.start()
        uploads.trigger("day 0")
        await ssc.advanceTo(T0 + Days(1) + Hours(1))
        uploads.trigger("day 1, before the process goes down")
        await ssc.advanceTo(T0 + Days(1) + Hours(1))
    assert misses.missed == []

    # down from day 1 01:00 to day 4 01:00: days 2 and 3 had no upload
    for attempt in range(2):  # the second restart reports nothing again
        misses = Misses()
        restart = T0 + Days(4 + attempt) + Hours(1)
        async with virtual(sc, start=restart, checkpoint=checkpoint) as ssc:
            uploads = uploads_pipeline(ssc)
            ssc.addStreamingListener(misses)
            await ssc.start()
            uploads.trigger("after the restart: on time")
            await ssc.advanceTo(restart + Hours(2))
        if attempt == 0:
            assert misses.days() == [("uploads", 2, True), ("uploads", 3, True)]
        else:  # day 4 was met; day 5's upload came at 01:00
            assert misses.days() == []


async def test_an_expectation_added_at_a_restart_is_kept_from_that_restart(
    sc: SparkContext, tmp_path: Path
) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    async with virtual(sc, start=T0, checkpoint=checkpoint) as ssc:
        ssc.manualSource("uploads")  # nothing expected yet
        ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(ssc.sources[0])
        await ssc.start()
    async with virtual(sc, start=T0 + Days(1), checkpoint=checkpoint) as ssc:
        uploads_pipeline(ssc)  # expected from here on; stopped before any period was decided
        await ssc.start()
    misses = Misses()
    async with virtual(sc, start=T0 + Days(3), checkpoint=checkpoint) as ssc:
        uploads_pipeline(ssc)
        ssc.addStreamingListener(misses)
        await ssc.start()
        await ssc.advanceTo(T0 + Days(3))
    assert misses.days() == [("uploads", 1, True), ("uploads", 2, True)]


@pytest.mark.parametrize(
    ("catch_up", "missed", "bound"),
    [
        ("all", [], None),
        ("all", [], 1),  # caught up one tick at a time, as room frees: all count
        ("latest", [1, 2], None),
        ("skip", [1, 2, 3], None),
    ],
)
async def test_ticks_caught_up_after_downtime_meet_the_source_deadline(
    sc: SparkContext, tmp_path: Path, catch_up: str, missed: list[int], bound: int | None
) -> None:
    checkpoint = str(tmp_path / "checkpoint")

    def build(ssc: StreamingContext) -> None:
        daily = ssc.timer(T0, None, Days(1), "daily").expect(Days(1), within=Hours(2))
        daily.catchUp = catch_up
        if bound is not None:
            daily.overflow(bound)
        ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(daily)

    async with virtual(sc, start=T0, checkpoint=checkpoint) as ssc:
        build(ssc)
        await ssc.start()
        await ssc.advanceTo(T0 + Hours(12))
    misses = Misses()
    async with virtual(sc, start=T0 + Days(3) + Hours(12), checkpoint=checkpoint) as ssc:
        build(ssc)
        ssc.addStreamingListener(misses)
        await ssc.start()
        await ssc.advanceTo(T0 + Days(5))
    # with "all" every tick fired, if late; "latest" fired day 3's only, "skip" none
    assert misses.days() == [("daily", day, True) for day in missed]


async def test_ticks_caught_up_past_a_bound_on_the_system_clock_meet_their_deadlines(
    sc: SparkContext, tmp_path: Path
) -> None:
    """The first check after a restart waits until the missed ticks, posted as room frees,
    were all accepted: none is told as missed for being still on its way."""
    checkpoint = str(tmp_path / "checkpoint")

    def build() -> StreamingContext:
        ssc = StreamingContext(sc, None, clock=SystemClock(), checkpoint=checkpoint)
        every = Milliseconds(50)
        ticks = ssc.timer(Time(0), None, every, "ticks").expect(every, within=every)
        ticks.overflow(3)  # the downtime's 20 ticks take many rounds of room
        ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: time.sleep(0.01)).bind(ticks)
        return ssc

    ssc = build()
    await ssc.start()
    await asyncio.sleep(0.5)
    await ssc.stop(stopSparkContext=False)
    await asyncio.sleep(1)  # the downtime
    ssc, misses = build(), Misses()
    ssc.addStreamingListener(misses)
    await ssc.start()
    await asyncio.sleep(1)
    await ssc.stop(stopSparkContext=False)
    assert [m for m in misses.missed if m.duringDowntime] == []


async def test_a_long_downtime_is_told_in_a_few_misses_and_one_count(
    sc: SparkContext, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    checkpoint = str(tmp_path / "checkpoint")

    def build(ssc: StreamingContext) -> Any:
        pings = ssc.manualSource("pings").expect(Minutes(1))
        ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(pings)
        return pings

    async with virtual(sc, start=T0, checkpoint=checkpoint) as ssc:
        pings = build(ssc)
        await ssc.start()
        pings.trigger("the first minute's")
        await ssc.advanceTo(T0 + Minutes(0.5))
    for attempt in range(2):  # a second restart tells nothing again
        misses = Misses()
        caplog.clear()
        restart = T0 + Days(7) + Minutes(attempt)
        async with virtual(sc, start=restart, checkpoint=checkpoint) as ssc:
            pings = build(ssc)
            ssc.addStreamingListener(misses)
            with caplog.at_level(logging.WARNING, logger="reactive_spark.deadlines"):
                await ssc.start()
                await ssc.advanceTo(restart)
            pings.trigger("on time again: meets its minute, however long the downtime")
            await ssc.advanceTo(restart + Minutes(1))
        if attempt == 1:
            assert misses.missed == []
            continue
        # a week of minutes, the first met: 10079 missed, the first few told one by one, the
        # rest in one report that counts them
        *one_by_one, rest = misses.missed
        assert len(one_by_one) == MAX_TOLD
        assert [m.periodsMissed for m in one_by_one] == [1] * MAX_TOLD
        assert misses.missed[0].periodStart == (T0 + Minutes(1)).toDatetime()
        assert rest.periodStart == (T0 + Minutes(1 + MAX_TOLD)).toDatetime()
        assert rest.deadline.isoformat().startswith("2026-03-09T00:00:00")
        assert rest.periodsMissed == 10079 - MAX_TOLD
        assert sum(m.periodsMissed for m in misses.missed) == 10079
        assert all(m.duringDowntime for m in one_by_one)  # the last deadline is the restart
        assert f"missed {10079 - MAX_TOLD} deadlines, the last 2026-03-09T00:00:00" in caplog.text
    recovered = Checkpoint(checkpoint).load()
    assert recovered is not None
    assert recovered.deadlines["source:pings"]["met"] == []


async def test_the_states_of_expectations_gone_are_dropped(
    sc: SparkContext, tmp_path: Path
) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    async with virtual(sc, start=T0, checkpoint=checkpoint) as ssc:
        uploads_pipeline(ssc)
        await ssc.start()
    async with virtual(sc, start=T0 + Days(1), checkpoint=checkpoint) as ssc:
        ssc.manualSource("uploads")  # expected no more
        ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(ssc.sources[0])
        await ssc.start()
    recovered = Checkpoint(checkpoint).load()
    assert recovered is not None
    assert recovered.deadlines == {}


def _watch(record: Any = None) -> tuple[DeadlineWatch, VirtualClock, list[tuple[str, Any]]]:
    """A watch of an hourly 'pings' source on a virtual clock, and what it tells."""
    told: list[tuple[str, Any]] = []
    clock = VirtualClock()
    watch = DeadlineWatch(clock, lambda name, info: told.append((name, info)), record)
    watch.add("source", "pings", Expectation.of(Hours(1)))
    watch.begin(Time(0), {})
    watch.schedule(Time(0), settle=lambda: None)
    return watch, clock, told


def _ping(time: Time) -> Any:
    """An event of 'pings' at `time`, as the watch sees one."""
    return SimpleNamespace(source=SimpleNamespace(name="pings"), time=time)


def test_a_state_that_cannot_be_kept_is_reported_and_the_periods_still_checked() -> None:
    failing = [True]

    def record(name: str, state: dict[str, Any], durable: bool = False) -> None:
        if failing.pop() if failing else False:
            raise CheckpointError("disk full")

    _, clock, told = _watch(record)
    clock.advanceTo(Time(Hours(1).milliseconds))
    assert [name for name, _ in told] == ["onDeadlineMissed", "onSourceError"]
    error = told[1][1]
    assert isinstance(error, SourceErrorInfo)
    assert (error.sourceName, error.operation, str(error.error)) == ("pings", "expect", "disk full")
    clock.advanceTo(Time(Hours(2).milliseconds))  # checked again
    assert [name for name, _ in told][2:] == ["onDeadlineMissed"]


def test_states_are_logged_under_the_lock_and_durably_before_a_miss_is_told() -> None:
    logged: list[tuple[bool, bool, int]] = []

    def record(name: str, state: dict[str, Any], durable: bool = False) -> None:
        logged.append((watch._lock.locked(), durable, len(told)))

    watch, clock, told = _watch(record)
    watch.onEventFired(_ping(Time(5)))
    clock.advanceTo(Time(Hours(2).milliseconds))
    # met (not synced), hour 0 decided as met (nothing to tell), hour 1 missed: synced, then told
    assert logged == [(True, False, 0), (True, False, 0), (True, True, 0)]
    assert len(told) == 1


def test_an_event_stamped_far_in_the_future_meets_nothing() -> None:
    watch, _, _ = _watch()
    for hours in (AHEAD - 1, AHEAD, 10_000):
        watch.onEventFired(_ping(Time(hours * 3_600_000)))
    assert watch.states()["source:pings"]["met"] == [(AHEAD - 1) * 3_600_000]


def test_expect_checks_its_arguments(sc: SparkContext) -> None:
    ssc = virtual(sc, start=T0)
    source = ssc.manualSource("uploads")
    with pytest.raises(InvalidArgumentError, match="within must not be longer than every"):
        source.expect(Hours(1), within=Hours(2))
    with pytest.raises(InvalidArgumentError, match="every must be positive"):
        source.expect(0)
    with pytest.raises(InvalidArgumentError, match="origin must be"):
        source.expect(Days(1), origin="midnight")  # type: ignore[arg-type]


async def test_an_expected_stream_must_run_jobs(sc: SparkContext) -> None:
    ssc = virtual(sc, start=T0)
    daily = ssc.timer(T0, None, Days(1), "daily")
    numbers = ssc.queueStream([], default=[1])
    numbers.count().foreachRDD(lambda rdd: None).bind(daily)
    numbers.map(str).expect(Days(1))
    with pytest.raises(ContextStateError, match="runs no job"):
        await ssc.start()


async def test_the_console_counts_and_lists_missed_deadlines(sc: SparkContext) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    from reactive_spark.web import create_app

    ssc = virtual(sc, start=T0)
    uploads_pipeline(ssc)
    daily = ssc.timer(T0, None, Days(1), "daily")
    day_one = (T0 + Days(1)).toDatetime()

    def save(time: datetime, rdd: Any) -> None:
        if time == day_one:
            raise ValueError("disk full")

    report = ssc.queueStream([], default=[1]).foreachRDD(save).bind(daily)
    report.expect(Days(1), within=Hours(1))
    async with TestClient(TestServer(create_app(ssc))) as client:
        await ssc.advanceTo(T0 + Days(2))
        metrics = await (await client.get("/metrics")).text()
        response = await client.get("/api/deadlines?limit=10")
        assert response.status == 200
        listed = await response.json()
        bad = await client.get("/api/deadlines?limit=0")
        assert bad.status == 400
        batch = await (await client.get("/api/batches")).json()
    assert 'reactive_spark_deadlines_missed_total{source="uploads"} 2.0' in metrics
    assert f'output_deadlines_missed_total{{stream="{report.name}"}} 1.0' in metrics
    assert [(m["kind"], m["name"], m["deadlineUtc"]) for m in listed] == [
        ("source", "uploads", "2026-03-03T02:00:00Z"),
        ("output", report.name, "2026-03-03T01:00:00Z"),
        ("source", "uploads", "2026-03-02T02:00:00Z"),
    ]
    assert listed[0]["description"].startswith("source uploads missed its deadline")
    assert batch[0]["jobs"][0]["sparkJobGroup"].startswith("reactive-spark-")


async def test_the_console_links_a_job_to_its_spark_jobs(sc: SparkContext) -> None:
    from reactive_spark.web.api import _with_spark_jobs
    from reactive_spark.web.history import job_record

    from .helpers import Recorder

    recorder = Recorder()
    async with virtual(sc, start=T0) as ssc:
        daily = ssc.timer(T0, None, Days(1), "daily")
        ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: rdd.count()).bind(daily)
        ssc.addStreamingListener(recorder)
        await ssc.start()
        await ssc.advanceTo(T0)

    class WithUi:  # the session's SparkContext has its UI off
        sparkContext = type("Spark", (), {"uiWebUrl": "http://driver:4040/"})()
        sparkContext.statusTracker = sc.statusTracker  # type: ignore[attr-defined]

    [job] = _with_spark_jobs(WithUi(), [job_record(recorder.jobs[0])])  # type: ignore[arg-type]
    [spark] = job["sparkJobs"]
    assert spark["url"] == f"http://driver:4040/jobs/job/?id={spark['id']}"


async def test_a_batch_of_a_stopped_context_is_shown_without_asking_spark(
    sc: SparkContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once stopped, Spark (maybe stopped too) is not asked, and no thread starts for it."""
    from aiohttp.test_utils import TestClient, TestServer

    from reactive_spark.web import create_app

    monkeypatch.setattr(type(sc), "uiWebUrl", property(lambda self: "http://driver:4040/"))
    ssc = virtual(sc, start=T0)
    daily = ssc.timer(T0, None, Days(1), "daily")
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: rdd.count()).bind(daily)
    async with TestClient(TestServer(create_app(ssc))) as client:  # it starts the context
        await ssc.advanceTo(T0)
        await ssc.stop(stopSparkContext=False)
        [listed] = await (await client.get("/api/batches")).json()
        shown = await client.get(f"/api/batches/{listed['instanceId']}")
        assert shown.status == 200
        [job] = (await shown.json())["jobs"]
        assert job["status"] == "succeeded" and "sparkJobs" not in job


def test_the_report_counting_the_rest_starts_at_a_period_missed() -> None:
    """Past the first MAX_TOLD misses, one report counts the rest: it starts at the first of
    them that was missed, not at a period met in between (it named the met day 10)."""
    daily = Expectation.of(Days(1), Hours(2))
    clock = VirtualClock(Time(Days(15).milliseconds + 1))
    told: list[DeadlineMissed] = []
    watch = DeadlineWatch(clock, lambda name, info: told.append(info))
    watch.add("source", "daily", daily)
    expect = [Days(1).milliseconds, Hours(2).milliseconds, 0]  # every, within, origin
    state = {"expect": expect, "next": 0, "met": [Days(MAX_TOLD).milliseconds]}
    watch.begin(clock.now(), {"source:daily": state})
    watch.schedule(clock.now(), settle=lambda then: then())
    clock.advanceTo(clock.now() + Milliseconds(1))
    *one_by_one, rest = told
    assert [miss.periodStart.day for miss in one_by_one] == list(range(1, MAX_TOLD + 1))
    assert rest.periodStart == Time(Days(MAX_TOLD + 1).milliseconds).toDatetime()
    assert rest.periodsMissed == 15 - MAX_TOLD - 1  # days 0 to 14, day 10 met
