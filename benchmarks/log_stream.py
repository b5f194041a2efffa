"""Direct log streams: what the stream adds over reading the same offset ranges by hand.

50 batches, each after 500 records were appended to a 3-partition file log: a plain PySpark
loop computes the offset ranges itself and counts pages with `createRDD`; reactive-spark runs
the same job in a direct stream bound to a timer, without and with a checkpoint (ranges in the
write-ahead log). Both arms read the same records per batch (asserted: 500 each, the producer
runs on the timer, and virtual time waits for each tick's batch). Prints the wall times and
their ratios to the plain loop (target <= 1.10).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from _spark import local_spark, median
from pyspark import SparkContext

from reactive_spark import Seconds, StreamingContext, Time, VirtualClock
from reactive_spark.log import FileLog, OffsetRange, createRDD

BATCHES = 50
RECORDS = 500
ROUNDS = 3


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


if __name__ == "__main__":
    asyncio.run(main())
