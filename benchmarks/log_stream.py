"""Direct log streams: what the stream adds over reading the same offset ranges by hand, and
how rate control drains a backlog.

Overhead: 50 batches, each after 500 records were appended to a 3-partition file log: a plain
PySpark loop computes the offset ranges itself and counts pages with `createRDD`;
reactive-spark runs the same job in a direct stream bound to a timer, without and with a
checkpoint (ranges in the write-ahead log). Both arms read the same records per batch
(asserted: 500 each, the producer runs on the timer, and virtual time waits for each tick's
batch). Prints the wall times and their ratios to the plain loop (target <= 1.10).

Backlog drain: 100,000 records wait in a 4-partition file log, as after downtime, and a
direct stream on the system clock reads them on a timer (its interval three times the time
of an empty job here, at least 1 s), counting pages per batch; each task also spends 100 us
per record (a sleep), so a batch's processing grows with its size as real work does. Arms:
plain PySpark reading the whole backlog in one job (the baseline), a direct stream without
rate control, with `backpressure=True, initialRate=5_000`, and with
`maxRecordsPerBatch=20_000`. Prints the time to drain, the batches that read records, the
largest, the longest processing delay, and the longest scheduling delay up to the batch after
the drain (how long a fresh record would have waited); asserts that every arm counted the
same pages and that each stream's ranges cover the backlog once.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _spark import local_spark, median
from pyspark import SparkContext

from reactive_spark import (
    Milliseconds,
    Seconds,
    StreamingContext,
    StreamingListener,
    Time,
    VirtualClock,
)
from reactive_spark.log import FileLog, OffsetRange, createRDD

BATCHES = 50
RECORDS = 500
ROUNDS = 3
BACKLOG = 100_000
SECONDS_PER_RECORD = 100e-6


def produce(log: FileLog, batch: int) -> None:
    for n in range(RECORDS):
        log.append("clicks", {"page": f"/p{n % 7}"}, partition=(batch + n) % 3)


def records(ranges: list[OffsetRange]) -> int:
    return sum(r.untilOffset - r.fromOffset for r in ranges)


def count_pages(rdd: Any) -> list[tuple[str, int]]:
    pairs = rdd.map(lambda kv: (kv[1]["page"], 1)).reduceByKey(lambda a, b: a + b)
    return sorted(pairs.collect())


def fresh_log(root: Path) -> FileLog:
    log = FileLog(str(root / f"log-{time.monotonic_ns()}"))
    log.create_topic("clicks", partitions=3)
    return log


def plain_loop(sc: SparkContext, root: Path) -> float:
    log = fresh_log(root)
    positions = dict.fromkeys(range(3), 0)
    per_batch = []
    began = time.perf_counter()
    for batch in range(BATCHES):
        produce(log, batch)
        ranges = []
        for partition, start in positions.items():
            positions[partition] = log.latest_offset("clicks", partition)
            ranges.append(OffsetRange("clicks", partition, start, positions[partition]))
        count_pages(createRDD(sc, log, ranges))
        per_batch.append(records(ranges))
    elapsed = time.perf_counter() - began
    assert per_batch == [RECORDS] * BATCHES, per_batch
    return elapsed


async def reactive(sc: SparkContext, root: Path, checkpoint: str | None) -> float:
    log = fresh_log(root)
    origin = Time(0)
    ssc = StreamingContext(sc, None, clock=VirtualClock(origin), checkpoint=checkpoint)
    tick = ssc.timer(origin + Seconds(1), None, Seconds(1), "tick")
    produced = [0]

    def before_batch(event: Any) -> None:
        produce(log, produced[0])
        produced[0] += 1

    per_batch = []

    def job(rdd: Any) -> None:
        count_pages(rdd)
        per_batch.append(records(rdd.offsetRanges()))

    tick.addListener(before_batch)  # listeners run when the tick is accepted, before its batch
    ssc.directStream(log, ["clicks"], startingOffsets="earliest").foreachRDD(job).bind(tick)
    await ssc.start()
    began = time.perf_counter()
    await ssc.runUntil(origin + Seconds(BATCHES))
    elapsed = time.perf_counter() - began
    await ssc.stop(stopSparkContext=False)
    assert per_batch == [RECORDS] * BATCHES, per_batch  # the same work as the plain loop
    return elapsed


def work_pages(rdd: Any) -> Counter[str]:
    """Count pages, spending SECONDS_PER_RECORD per record in each task (the job's work)."""

    def count(records: Any) -> Any:
        pages: Counter[str] = Counter()
        for _, value in records:
            pages[value["page"]] += 1
        time.sleep(sum(pages.values()) * SECONDS_PER_RECORD)
        yield pages

    total: Counter[str] = Counter()
    for pages in rdd.mapPartitions(count).collect():
        total.update(pages)
    return total


def backlog_log(root: Path) -> FileLog:
    log = FileLog(str(root / "backlog"))
    log.create_topic("clicks", partitions=4)
    for n in range(BACKLOG):  # uneven partitions: 40 %, 30 %, 20 %, 10 %
        log.append(
            "clicks", {"page": f"/p{n % 7}"}, partition=(0, 0, 0, 0, 1, 1, 1, 2, 2, 3)[n % 10]
        )
    return log


def whole_backlog(log: FileLog) -> list[OffsetRange]:
    return [OffsetRange("clicks", p, 0, log.latest_offset("clicks", p)) for p in range(4)]


class Drain(StreamingListener):
    """Notes when the batches have read `total` records, then sets `done` after one more
    batch: how long the event after the drain waited shows what fresh records would have."""

    def __init__(self, total: int, done: asyncio.Event) -> None:
        self.total, self.done, self.loop = total, done, asyncio.get_running_loop()
        self.records = self.batches = self.largest = 0
        self.processing = self.waited = 0.0
        self.drained: float | None = None

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        self.waited = max(self.waited, batchCompleted.schedulingDelay() / 1000)
        if self.drained is not None:
            self.loop.call_soon_threadsafe(self.done.set)
            return
        records = batchCompleted.numRecords()
        if records:
            self.batches += 1
            self.records += records
            self.largest = max(self.largest, records)
            self.processing = max(self.processing, batchCompleted.processingDelay() / 1000)
        if self.records >= self.total:
            self.drained = time.perf_counter()


async def drain(
    sc: SparkContext, log: FileLog, interval: int, **options: Any
) -> tuple[float, Drain, Counter[str], float | None]:
    """Drain the backlog with a direct stream on the system clock; the time to drain (from
    the start until the batch that read the last record ended)."""
    ssc = StreamingContext(sc, None)
    tick = ssc.timer(ssc.clock.now() + Milliseconds(interval), None, Milliseconds(interval), "t")
    stream = ssc.directStream(log, ["clicks"], startingOffsets="earliest", **options)
    pages: Counter[str] = Counter()
    ranges: list[OffsetRange] = []

    def job(rdd: Any) -> None:
        pages.update(work_pages(rdd))
        ranges.extend(rdd.offsetRanges())

    stream.foreachRDD(job).bind(tick)
    drained = Drain(BACKLOG, asyncio.Event())
    ssc.addStreamingListener(drained)
    began = time.perf_counter()
    await ssc.start()
    await asyncio.wait_for(drained.done.wait(), timeout=1_800)
    assert drained.drained is not None
    elapsed = drained.drained - began
    estimate = stream.estimatedRate
    await ssc.stop(stopSparkContext=False)
    for partition, latest in enumerate(log.latest_offset("clicks", p) for p in range(4)):
        spans = [
            (r.fromOffset, r.untilOffset) for r in ranges if r.partition == partition and r.count()
        ]
        ends = [0] + [until for _, until in spans]
        assert [first for first, _ in spans] == ends[:-1] and ends[-1] == latest, spans
    return elapsed, drained, pages, estimate


async def backlog_drain(sc: SparkContext, root: Path) -> None:
    began = time.perf_counter()
    log = backlog_log(root)
    appended = time.perf_counter() - began
    empty = createRDD(sc, log, [OffsetRange("clicks", 0, 0, 1)])
    work_pages(empty)  # warm up
    overhead = median([timed(lambda: work_pages(empty)) for _ in range(5)])
    interval = max(1_000, int(round(3 * overhead * 1_000, -2)))
    pages: Counter[str] = Counter()
    plain = timed(lambda: pages.update(work_pages(createRDD(sc, log, whole_backlog(log)))))
    assert sum(pages.values()) == BACKLOG
    arms = [
        ("directStream, no rate control", {}),
        ("directStream, backpressure=True", {"backpressure": True, "initialRate": 5_000}),
        ("directStream, maxRecordsPerBatch", {"maxRecordsPerBatch": 20_000}),
    ]
    results = []
    for label, options in arms:
        elapsed, drained, counted, estimate = await drain(sc, log, interval, **options)
        assert counted == pages, (label, counted, pages)  # the same records as the baseline
        results.append((label, elapsed, drained, estimate))
    print(
        f"backlog drain: {BACKLOG:,} records in a 4-partition file log (appended in "
        f"{appended:.1f} s), page counts with {SECONDS_PER_RECORD * 1e6:.0f} us of work per "
        f"record; an empty job takes {overhead:.2f} s here, so a timer every {interval} ms"
    )
    print(
        f"  {'arm':34} {'drain s':>8} {'batches':>8} {'largest':>8} {'max proc s':>11}"
        f" {'max wait s':>11}"
    )
    baseline = "plain PySpark, one job (baseline)"
    print(f"  {baseline:34} {plain:8.2f} {1:8} {BACKLOG:8} {plain:11.2f} {'-':>11}")
    for label, elapsed, drained, estimate in results:
        print(
            f"  {label:34} {elapsed:8.2f} {drained.batches:8} {drained.largest:8}"
            f" {drained.processing:11.2f} {drained.waited:11.2f}"
            + ("" if estimate is None else f"   (estimate at the end: {estimate:,.0f} records/s)")
        )


def timed(action: Any) -> float:
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


async def main() -> None:
    sc = local_spark("bench-log-stream")
    plain, ours, logged = [], [], []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        plain_loop(sc, root)  # warm up the Python workers
        for round_number in range(ROUNDS):
            plain.append(plain_loop(sc, root))
            ours.append(await reactive(sc, root, None))
            logged.append(await reactive(sc, root, str(root / f"ckpt-{round_number}")))
    records = BATCHES * RECORDS
    print(f"direct log stream: {BATCHES} batches of {RECORDS} records, {ROUNDS} rounds")
    print(f"  plain PySpark (createRDD)   median {median(plain):.3f} s")
    print(f"  directStream                median {median(ours):.3f} s")
    print(f"  directStream + checkpoint   median {median(logged):.3f} s")
    print(
        f"  ratios to plain: {median(ours) / median(plain):.3f} and "
        f"{median(logged) / median(plain):.3f} (target <= 1.10); "
        f"{median(ours) / BATCHES * 1000:.0f} ms per batch of {records // BATCHES} records "
        "(appends included)"
    )
    with tempfile.TemporaryDirectory() as folder:
        await backlog_drain(sc, Path(folder))


if __name__ == "__main__":
    asyncio.run(main())
