"""Direct log streams in a backfill, on every log backend: each batch reads the records stamped
in its span (after the previous batch, up to its own time), once each, as the live run read
them; rate limits and starting offsets do not apply; records without a time fail loudly."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark import SparkContext

from reactive_spark import Days, Hours, Milliseconds, StreamingContext, Time
from reactive_spark.log import FileLog, MissingTimestampError, OffsetRange

from .helpers import virtual

START = Time.fromDatetime(datetime(2026, 1, 5, tzinfo=UTC))
DAY = Days(1)

#: `(time, values, offset ranges)` of each batch a pipeline ran.
Batches = list[tuple[Time, list[str], list[OffsetRange]]]


def daily_pipeline(ssc: StreamingContext, log: Any, **options: Any) -> Batches:
    """A daily batch of the clicks log; returns the list its batches are recorded in."""
    daily = ssc.timer(START + DAY, None, DAY, "daily")
    clicks = ssc.directStream(log, ["clicks"], messageHandler=lambda r: r.value, **options)
    seen: Batches = []

    def record(time: datetime, rdd: Any) -> None:
        seen.append((Time.fromDatetime(time), sorted(rdd.collect()), rdd.offsetRanges()))

    clicks.foreachRDD(record).bind(daily)
    return seen


def stamped_over_four_days(log: Any) -> dict[str, Time]:
    """Records of days 0..3 in both partitions, stamped on and beside the daily batch times;
    returns each value's time. Partition 1 has nothing in day 2."""
    times = {}
    for day in range(4):
        begins = START + DAY * day
        stamps = {
            "first": begins + Milliseconds(1),  # just after the batch before
            "six-a": begins + Hours(6),
            "six-b": begins + Hours(6),  # the same time as the one before
            "last": begins + DAY,  # at the batch's own time: still in its span
        }
        for partition in (0, 1):
            if partition == 1 and day == 2:
                continue
            for label, stamp in stamps.items():
                value = f"day{day}-p{partition}-{label}"
                log.append("clicks", value, partition=partition, timestamp=stamp)
                times[value] = stamp
    return times


def in_span(times: dict[str, Time], after: Time, until: Time) -> list[str]:
    return sorted(value for value, stamp in times.items() if after < stamp <= until)


async def test_a_backfill_reads_each_batch_the_records_stamped_in_its_span(
    sc: SparkContext, log: Any
) -> None:
    times = stamped_over_four_days(log)
    first, last = START + DAY * 2, START + DAY * 3
    ssc = virtual(sc, start=first)
    seen = daily_pipeline(  # none of these limit or place what a backfill reads
        ssc,
        log,
        fromOffsets={("clicks", 0): 0},
        maxRatePerPartition=0.001,
        maxRecordsPerBatch=1,
        backpressure=True,
        initialRate=1,
    )
    report = await ssc.backfill(first, last)
    assert report.failures == []
    assert [time for time, _, _ in seen] == [first, last]
    assert seen[0][1] == in_span(times, START + DAY, first)  # day 1's records
    assert seen[1][1] == in_span(times, first, last)  # day 2's
    read = [value for _, values, _ in seen for value in values]
    assert len(read) == len(set(read)) == 12  # once each
    assert seen[0][2] == [OffsetRange("clicks", 0, 4, 8), OffsetRange("clicks", 1, 4, 8)]
    assert seen[1][2] == [OffsetRange("clicks", 0, 8, 12), OffsetRange("clicks", 1, 8, 8)]


async def test_beside_a_slower_timer_the_first_batch_reads_its_own_timers_span(
    sc: SparkContext, log: Any
) -> None:
    times = stamped_over_four_days(log)
    first, last = START + DAY * 2, START + DAY * 3
    ssc = virtual(sc, start=first)
    seen = daily_pipeline(ssc, log)
    weekly = ssc.timer(START - DAY * 3, None, Days(7), "weekly")  # last ticked 5 days before
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(weekly)
    report = await ssc.backfill(first, last)
    assert report.failures == []
    assert [time for time, _, _ in seen] == [first, last]
    assert seen[0][1] == in_span(times, START + DAY, first)  # day 1's: not since the weekly tick
    assert seen[1][1] == in_span(times, first, last)


async def test_a_backfill_reads_what_the_live_run_read(sc: SparkContext, log: Any) -> None:
    live = virtual(sc, start=START)
    lived = daily_pipeline(live, log)
    await live.start()
    for hour in range(1, 4 * 24, 7):  # producers stamp records with the time they append them
        now = START + Hours(hour)
        await live.advanceTo(now)
        log.append("clicks", f"h{hour:02d}", key=f"user-{hour % 3}", timestamp=now)
    await live.advanceTo(START + DAY * 4)
    await live.stop(stopSparkContext=False)

    first, last = START + DAY * 2, START + DAY * 3
    backfill = virtual(sc, start=first)
    backfilled = daily_pipeline(backfill, log)
    report = await backfill.backfill(first, last)
    assert report.failures == []
    assert [time for time, _, _ in lived] == [START + DAY * day for day in range(1, 5)]
    assert backfilled == lived[1:3]
    assert all(values for _, values, _ in backfilled)


async def test_a_backfill_over_records_without_a_time_fails_saying_where(
    sc: SparkContext, tmp_path: Path
) -> None:
    log = FileLog(str(tmp_path / "log"))
    log.create_topic("clicks")
    segment = Path(log.directory) / "clicks" / "0" / f"{0:020d}.jsonl"
    segment.write_text('{"k":null,"v":"old"}\n')  # a line written before records had times
    log.append("clicks", "new", timestamp=START + Hours(30))
    ssc = virtual(sc, start=START + DAY * 2)
    seen = daily_pipeline(ssc, log)
    report = await ssc.backfill(START + DAY * 2, START + DAY * 2)
    assert seen == []
    assert [failure.kind for failure in report.failures] == ["plan"]
    assert isinstance(report.failures[0].error, MissingTimestampError)
    assert "topic 'clicks' partition 0: the record at offset 0 has no timestamp" in str(
        report.failures[0].error
    )
