"""Rate control for direct log streams: the split of a batch among partitions, the PID rate
estimator against Spark's formula, backpressure draining a backlog, exactly once."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest
from pyspark import SparkContext

from reactive_spark import Seconds, StreamingContext, Time
from reactive_spark.log import FileLog, OffsetRange
from reactive_spark.log.rate import PIDRateEstimator, split_records

from .helpers import virtual

T0 = Time(1_700_000_000_000)


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
    """Each partition's ranges follow one another from 0 to its latest: no gap, no overlap."""
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


def test_rate_control_arguments(sc: SparkContext, tmp_path: Path) -> None:
    log = FileLog(str(tmp_path / "log"))
    log.create_topic("clicks")
    ssc = StreamingContext(sc, None)
    for bad in (0, -5, 2.5, True, "10"):
        message = f"maxRecordsPerBatch must be a positive int, got {bad!r}"
        with pytest.raises(ValueError, match=re.escape(message)):
            ssc.directStream(log, ["clicks"], maxRecordsPerBatch=bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):  # the new options are keyword-only
        ssc.directStream(log, ["clicks"], None, "latest", None, None, 5)  # type: ignore[misc]
