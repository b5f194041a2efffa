"""Rate control for direct log streams: the split of a batch among partitions, the PID rate
estimator against Spark's formula, backpressure draining a backlog, exactly once."""

from __future__ import annotations

import asyncio
import random
import re
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark import SparkContext

from reactive_spark import (
    Hours,
    Milliseconds,
    Seconds,
    StreamingContext,
    StreamingListener,
    SystemClock,
    Time,
)
from reactive_spark.jobs import BatchInfo
from reactive_spark.log import FileLog, LogBackend, LogRecord, OffsetRange
from reactive_spark.log.rate import PIDRateEstimator, split_records

from .helpers import Recorder, virtual

T0 = Time(1_700_000_000_000)


def generated_log(partitions: int) -> Any:
    """A log of topic `clicks` whose records are made from their offsets: `grow` appends a
    backlog of any size at once (a file log appends 100,000 records one by one in tens of
    seconds on a busy machine).

    Record `n` of partition `p` has the value `[p, n]`. Defined here, in a function, so that
    Spark pickles the class itself and executors need not import this test module.
    """

    class GeneratedLog(LogBackend):
        def __init__(self) -> None:
            self.latest = [0] * partitions

        def __repr__(self) -> str:
            return f"GeneratedLog({partitions})"

        def grow(self, counts: list[int]) -> None:
            self.latest = [
                latest + count for latest, count in zip(self.latest, counts, strict=True)
            ]

        def partitions(self, topic: str) -> list[int]:
            return list(range(partitions)) if topic == "clicks" else []

        def earliest_offset(self, topic: str, partition: int) -> int:
            return 0

        def latest_offset(self, topic: str, partition: int) -> int:
            return self.latest[partition]

        def _read(self, offsets: OffsetRange) -> Any:
            for n in range(offsets.fromOffset, offsets.untilOffset):
                yield LogRecord(offsets.topic, offsets.partition, n, None, [offsets.partition, n])

        def _append(self, topic: str, partition: int, key: Any, value: Any, timestamp: int) -> int:
            self.latest[partition] += 1
            return self.latest[partition] - 1

    return GeneratedLog()


def covered(ranges: list[OffsetRange]) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """The non-empty ranges per partition, in the order read."""
    found: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for offsets in ranges:
        if offsets.count():
            found.setdefault((offsets.topic, offsets.partition), []).append(
                (offsets.fromOffset, offsets.untilOffset)
            )
    return found


def assert_exactly_once(ranges: list[OffsetRange], latest: dict[tuple[str, int], int]) -> None:
    """Each partition's ranges follow one another from 0 to `latest`: no gap, no overlap."""
    for partition, spans in covered(ranges).items():
        ends = [0] + [until for _, until in spans]
        assert [first for first, _ in spans] == ends[:-1], (partition, spans)
        assert ends[-1] == latest[partition], (partition, spans)
    assert set(covered(ranges)) == {p for p, offset in latest.items() if offset}


def test_split_records_takes_backlogs_in_proportion() -> None:
    assert split_records(100, [30, 0, 20]) == [30, 0, 20]  # all of it fits
    assert split_records(50, [30, 0, 20]) == [30, 0, 20]
    # one each, then 97 in proportion to [899, 89, 9]: 87.47, 8.66, 0.88 -> 87, 8, 0 and the
    # two left to the largest remainders
    assert split_records(100, [900, 90, 10]) == [88, 10, 2]
    assert split_records(3, [4, 4]) == [2, 1]  # a tie goes to the first partition
    assert split_records(10, [1_000_000, 1]) == [9, 1]  # a small backlog is not starved


def test_split_records_rotates_when_fewer_records_than_partitions_wait() -> None:
    batches = [split_records(2, [5, 0, 5, 5], rotation=n) for n in range(3)]
    assert batches == [[1, 0, 1, 0], [0, 0, 1, 1], [1, 0, 0, 1]]


def test_split_records_invariants() -> None:
    chance = random.Random(26)
    for _ in range(2_000):
        backlogs = [chance.choice([0, 1, 2, 7, 50, 999]) for _ in range(chance.randint(1, 6))]
        limit = chance.randint(1, 1_200)
        taken = split_records(limit, backlogs, rotation=chance.randint(0, 9))
        assert sum(taken) == min(limit, sum(backlogs)), (limit, backlogs, taken)
        assert all(0 <= n <= backlog for n, backlog in zip(taken, backlogs, strict=True))
        waiting = [n for n, backlog in zip(taken, backlogs, strict=True) if backlog]
        if limit >= len(waiting):
            assert all(waiting), (limit, backlogs, taken)  # every partition with a backlog
        if sum(backlogs) > limit >= len(waiting):  # within one record of the exact share
            rest, whole = limit - len(waiting), sum(backlogs) - len(waiting)
            for n, backlog in zip(taken, backlogs, strict=True):
                if backlog:
                    assert abs(n - 1 - rest * (backlog - 1) / whole) < 1, (limit, backlogs)


def test_pid_estimator_follows_sparks_formula() -> None:
    estimator = PIDRateEstimator()  # proportional 1.0, integral 0.2, derivative 0, minRate 100
    # time (ms), records, processing delay, scheduling delay, interval (ms)
    assert estimator.compute(1_000, 1_000, 500, 0, 1_000) is None  # measures 2,000/s only
    assert estimator.latestRate is None
    # 3,000/s: error 2,000 - 3,000; rate 2,000 - 1.0 * -1,000
    assert estimator.compute(2_000, 3_000, 1_000, 0, 1_000) == 3_000.0
    # 2,000/s after waiting 500 ms: error 1,000, historical error 500 * 2,000 / 1,000
    assert estimator.compute(3_000, 3_000, 1_500, 500, 1_000) == 3_000 - 1_000 - 0.2 * 1_000
    assert estimator.latestRate == 1_800.0
    # 10/s: 1,800 - 1,790 = 10, below minRate
    assert estimator.compute(4_000, 10, 1_000, 0, 1_000) == 100.0


def test_pid_estimator_gains_and_derivative() -> None:
    estimator = PIDRateEstimator(proportional=0.5, integral=0.1, derivative=0.2, minRate=1)
    assert estimator.compute(1_000, 1_000, 1_000, 0, 2_000) is None  # 1,000/s, error 0
    # 2,000/s: error -1,000; historical 1,000 * 2,000 / 2,000; dError -1,000 / 2 s
    assert estimator.compute(3_000, 4_000, 2_000, 1_000, 2_000) == (
        1_000 + 0.5 * 1_000 - 0.1 * 1_000 + 0.2 * 500
    )
    # 1,500/s: error 0; dError (0 - -1,000) / 1 s
    assert estimator.compute(4_000, 1_500, 1_000, 0, 1_000) == 1_500 - 0.2 * 1_000


def test_pid_estimator_skips_batches_that_say_nothing() -> None:
    estimator = PIDRateEstimator()
    estimator.compute(1_000, 1_000, 500, 0, 1_000)
    assert estimator.compute(2_000, 3_000, 1_000, 0, 1_000) == 3_000.0
    assert estimator.compute(2_000, 5_000, 1_000, 0, 1_000) is None  # not after the latest
    assert estimator.compute(3_000, 0, 1_000, 0, 1_000) is None  # no records
    assert estimator.compute(3_000, 1_000, 0, 0, 1_000) is None  # no processing time
    assert estimator.latestRate == 3_000.0
    assert estimator.compute(3_000, 6_000, 2_000, 0, 1_000) == 3_000.0  # the state held


def test_pid_estimator_arguments() -> None:
    with pytest.raises(ValueError, match="proportional must be a number >= 0, got -1"):
        PIDRateEstimator(proportional=-1)
    with pytest.raises(ValueError, match="derivative must be a number >= 0, got nan"):
        PIDRateEstimator(derivative=float("nan"))
    with pytest.raises(ValueError, match="minRate must be a positive number, got 0"):
        PIDRateEstimator(minRate=0)
    with pytest.raises(ValueError, match="batchInterval must be positive, got 0"):
        PIDRateEstimator().compute(1_000, 1, 1, 0, 0)


async def test_max_records_per_batch_caps_batches_on_every_backend(
    sc: SparkContext, log: Any
) -> None:
    for n in range(23):
        log.append("clicks", n, partition=0 if n < 17 else 1)
    ssc = virtual(sc, start=T0)
    tick = ssc.timer(T0 + Seconds(1), None, Seconds(1), "tick")
    batches: list[tuple[list[int], list[OffsetRange]]] = []
    capped = ssc.directStream(log, ["clicks"], startingOffsets="earliest", maxRecordsPerBatch=5)
    capped.foreachRDD(
        lambda rdd: batches.append((sorted(v for _, v in rdd.collect()), rdd.offsetRanges()))
    ).bind(tick)
    both: list[list[OffsetRange]] = []
    ssc.directStream(
        log, ["clicks"], startingOffsets="earliest", maxRatePerPartition=2, maxRecordsPerBatch=3
    ).foreachRDD(lambda rdd: both.append(rdd.offsetRanges())).bind(tick)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(6))
    await ssc.stop(stopSparkContext=False)
    assert [len(values) for values, _ in batches] == [5, 5, 5, 5, 3, 0]
    # backlogs 17 and 6: one record each, then 3 in proportion to 16 and 5 (2.29, 0.71)
    assert batches[0][1] == [OffsetRange("clicks", 0, 0, 3), OffsetRange("clicks", 1, 0, 2)]
    ranges = [offsets for _, read in batches for offsets in read]
    assert_exactly_once(ranges, {("clicks", 0): 17, ("clicks", 1): 6})
    assert sorted(v for values, _ in batches for v in values) == list(range(23))
    # 2 records/s per partition over 1 s, then 3 in all: [2, 1] while both partitions wait
    assert [[r.count() for r in read] for read in both[:3]] == [[2, 1], [2, 1], [2, 1]]


async def test_initial_rate_without_backpressure_bounds_the_first_batch(sc: SparkContext) -> None:
    log = generated_log(2)
    log.grow([600, 400])
    ssc = virtual(sc, start=T0)
    tick = ssc.timer(T0 + Seconds(1), None, Seconds(1), "tick")
    batches: list[list[int]] = []
    stream = ssc.directStream(log, ["clicks"], startingOffsets="earliest", initialRate=100)
    stream.foreachRDD(lambda rdd: batches.append([r.count() for r in rdd.offsetRanges()])).bind(
        tick
    )
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(3))
    await ssc.stop(stopSparkContext=False)
    # 100 records/s over a second, split by backlog; then nothing bounds the batches
    assert batches == [[60, 40], [540, 360], [0, 0]]
    assert stream.estimatedRate is None  # no backpressure, no estimate


def test_rate_control_arguments(sc: SparkContext, tmp_path: Path) -> None:
    log = FileLog(str(tmp_path / "log"))
    log.create_topic("clicks")
    ssc = StreamingContext(sc, None)
    for bad in (0, -5, 2.5, True, "10"):
        message = f"maxRecordsPerBatch must be a positive int, got {bad!r}"
        with pytest.raises(ValueError, match=re.escape(message)):
            ssc.directStream(log, ["clicks"], maxRecordsPerBatch=bad)  # type: ignore[arg-type]
    for name, bad in (("initialRate", 0), ("initialRate", "fast"), ("minRate", -1.0)):
        with pytest.raises(ValueError, match=f"{name} must be a positive number, got {bad!r}"):
            ssc.directStream(log, ["clicks"], backpressure=True, **{name: bad})
    with pytest.raises(ValueError, match="minRate must be a positive number, got inf"):
        ssc.directStream(log, ["clicks"], minRate=float("inf"))
    with pytest.raises(ValueError, match="backpressure must be a bool, got 'yes'"):
        ssc.directStream(log, ["clicks"], backpressure="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):  # the new options are keyword-only
        ssc.directStream(log, ["clicks"], None, "latest", None, None, 5)  # type: ignore[misc]


async def test_initial_rate_bounds_the_first_batch_after_a_restart_not_the_downtime(
    sc: SparkContext, tmp_path: Path
) -> None:
    log = generated_log(2)
    log.grow([30, 30])
    checkpoint = str(tmp_path / "checkpoint")
    paced: list[list[OffsetRange]] = []
    bounded: list[list[OffsetRange]] = []

    def build(ssc: StreamingContext) -> None:
        tick = ssc.timer(T0 + Seconds(1), None, Seconds(1), "tick")
        tick.catchUp = "latest"  # after the downtime, one batch for the last tick missed
        for read, options in ((paced, {}), (bounded, {"initialRate": 20})):
            ssc.directStream(
                log, ["clicks"], startingOffsets="earliest", maxRatePerPartition=10, **options
            ).foreachRDD(lambda rdd, read=read: read.append(rdd.offsetRanges())).bind(tick)

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first)
    await first.start()
    await first.runUntil(T0 + Seconds(2))
    await first.stop(stopSparkContext=False)
    log.grow([100_000, 100_000])  # arrived during an hour of downtime
    second = virtual(sc, start=T0 + Hours(1) + Milliseconds(500), checkpoint=checkpoint)
    build(second)
    await second.start()
    await second.runUntil(T0 + Hours(1) + Seconds(3))
    await second.stop(stopSparkContext=False)
    counts = [[[r.count() for r in read] for read in reads] for reads in (paced, bounded)]
    # before the stop: 10 records per partition and second; initialRate=20 (in all) bounds the
    # first batch to [10, 10] too
    assert counts[0][:2] == counts[1][:2] == [[10, 10], [10, 10]]
    # after it: the tick missed at 1 h, caught up, then those at 1 h + 1 s ... + 3 s. A rate
    # alone covers the event time since the previous batch: the caught-up tick stands for the
    # 3,598 s since the batch before the stop, as it would have without a stop.
    # initialRate covers at most the time since the restart (500 ms, counted as a second)
    assert counts[0][2:] == [[35_980, 35_980]] + [[10, 10]] * 3
    assert counts[1][2:] == [[10, 10]] * 4
    read_until = {("clicks", 0): 36_030, ("clicks", 1): 36_030}
    assert_exactly_once([r for read in paced for r in read], read_until)
    assert_exactly_once([r for read in bounded for r in read], dict.fromkeys(read_until, 60))


#: The job of the backpressure test costs 100 ms a batch and 25 us a record (a fixed cost and
#: work per record, as Spark jobs have, without the noise of a shared machine's Spark jobs).
BATCH_SECONDS, RECORD_SECONDS = 0.1, 25e-6


async def test_backpressure_drains_a_backlog_at_the_rate_batches_sustain(
    sc: SparkContext, tmp_path: Path
) -> None:
    """100,000 records arrive while the application is down; after the restart the first batches
    read `initialRate`'s worth, the estimator finds the rate at which a batch takes as long as
    the time it covers, and every record is read once."""
    log = generated_log(4)
    log.grow([10, 10, 10, 10])
    checkpoint, span = str(tmp_path / "checkpoint"), Milliseconds(500)
    batches: list[tuple[int, float | None, list[OffsetRange]]] = []

    def build(ssc: StreamingContext) -> Any:
        tick = ssc.timer(T0 + span, None, span, "tick")
        tick.catchUp = "skip"
        stream = ssc.directStream(
            log, ["clicks"], startingOffsets="earliest", backpressure=True, initialRate=2_000
        )

        def job(rdd: Any) -> None:
            records = sum(offsets.count() for offsets in rdd.offsetRanges())
            batches.append((records, stream.estimatedRate, rdd.offsetRanges()))
            time.sleep(BATCH_SECONDS + records * RECORD_SECONDS)

        stream.foreachRDD(job).bind(tick)
        return stream

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first)
    await first.start()
    await first.runUntil(T0 + Seconds(1))
    await first.stop(stopSparkContext=False)
    before = len(batches)
    log.grow([40_000, 30_000, 20_000, 10_000])  # 100,000 records during an hour down
    restart = T0 + Hours(1) + Milliseconds(250)
    second = virtual(sc, start=restart, checkpoint=checkpoint)
    stream = build(second)
    recorder = Recorder()
    second.addStreamingListener(recorder)
    await second.start()
    ticks = 0
    while stream.backlog() and ticks < 60:
        ticks += 1
        await second.advanceTo(restart + span * ticks)
    await second.stop(stopSparkContext=False)
    drained = batches[before:]
    sizes = [size for size, _, _ in drained]
    assert stream.backlog() == 0, f"not drained after {ticks} batches: {sizes}"

    # the estimator measures the first batch and estimates after the second: until then
    # initialRate bounds them, over the 500 ms each covers (the first: since the restart, 250
    # ms before it, counted as a second; not the hour since the batch before the stop)
    assert [rate for _, rate, _ in drained[:2]] == [None, None]
    assert sizes[:2] == [2_000, 1_000], sizes
    # then batches as large as the estimate allows, but the last, which takes what is left
    for size, rate, _ in drained[2:-1]:
        assert rate is not None and size == int(rate * 0.5), sizes
    steady = list(zip(drained[-4:-1], recorder.batches[-4:-1], strict=True))
    records = sum(info.numRecords() for _, info in steady)
    seconds = sum(info.processingDelay() for _, info in steady) / 1000
    sustained = records / seconds  # records per second of processing, measured
    final = steady[-1][0][1]
    assert final is not None and 0.7 * sustained <= final <= 1.3 * sustained, (final, sustained)
    # the rate at which a batch takes as long as the time it covers: at most
    # (0.5 s - 0.1 s) / (0.5 s * 25 us) = 32,000 records/s, less what batches cost beside the job
    # (delays are whole milliseconds: one truncated off ~500 ms is 0.2%)
    assert 0.6 * 32_000 <= final <= 32_000 * 1.002, final
    for _, info in steady:
        assert 0.7 * span.milliseconds <= info.processingDelay() <= 1.3 * span.milliseconds
    # exactly once: the ranges follow one another from offset 0 to the latest, and the jobs
    # counted 100,040 records in all (the 40 before the stop included)
    ranges = [offsets for _, _, read in batches for offsets in read]
    latest = {("clicks", p): log.latest_offset("clicks", p) for p in range(4)}
    assert_exactly_once(ranges, latest)
    assert sum(size for size, _, _ in batches) == sum(latest.values()) == 100_040


async def test_backpressure_on_the_system_clock_counts_the_scheduling_delay(
    sc: SparkContext,
) -> None:
    """Batches that take longer than the 200 ms between them make the next ones wait: the
    estimate is Spark's formula on the batches' records, processing and scheduling delays."""
    log = generated_log(2)
    log.grow([20_000, 20_000])
    ssc = StreamingContext(sc, None, clock=SystemClock())
    period = Milliseconds(200)
    tick = ssc.timer(ssc.clock.now() + period, None, period, "tick")
    stream = ssc.directStream(
        log, ["clicks"], startingOffsets="earliest", backpressure=True, initialRate=20_000
    )
    stream.foreachRDD(
        lambda rdd: time.sleep(sum(offsets.count() for offsets in rdd.offsetRanges()) * 100e-6)
    ).bind(tick)
    recorder, done = Recorder(), asyncio.Event()
    loop = asyncio.get_running_loop()
    estimates: list[float | None] = []

    class Done(StreamingListener):
        def onBatchCompleted(self, batchCompleted: BatchInfo) -> None:
            if batchCompleted.event.index == 5:  # in the scheduler's worker thread, after the
                estimates.append(stream.estimatedRate)  # stream's listener, added before
                loop.call_soon_threadsafe(done.set)

    ssc.addStreamingListener(recorder)
    ssc.addStreamingListener(Done())
    await ssc.start()
    await asyncio.wait_for(done.wait(), timeout=60)
    await ssc.stop(stopSparkContext=False)
    shadow = PIDRateEstimator()
    previous = ssc.startedAt.milliseconds
    for info in recorder.batches[:6]:
        covered_ms = info.event.time.milliseconds - previous
        previous = info.event.time.milliseconds
        expected = shadow.compute(
            info.processingEndTime(),
            info.numRecords(),
            info.processingDelay(),
            info.schedulingDelay(),
            covered_ms,
        )
    assert estimates == [expected]
    # 4,000 records a batch (20,000/s over 200 ms) sleep 400 ms: the next batches waited
    first, second = (info.numRecords() for info in recorder.batches[:2])
    assert first <= 4_000 and second == 4_000, (first, second)
    assert max(info.schedulingDelay() for info in recorder.batches[1:6]) >= 100
