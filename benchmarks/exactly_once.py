"""Exactly-once merging and state: what the guarantee costs per record.

40 batches; before each, 100 records are appended to each of 7 partitions of a file log. The
exactly-once arm reads three topics (2, 3 and 2 partitions), merges them with `ssc.union` and
counts records per key with `aggregateExactlyOnce` into a SQLite `StateStore` (values, offsets
and position in one transaction per batch). The at-least-once arm reads one 7-partition topic
with the same records and does the same count by hand in `foreachRDD`: collect, fold onto the
stored values, upsert them into a table of the same layout (no offsets, no position). Both
arms checkpoint to a write-ahead log. Asserted: 700 records in every batch of both arms and
equal final counts. Prints records/s and their ratio (target >= 0.8).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _spark import local_spark, median
from pyspark import SparkContext

from reactive_spark import DStream, Seconds, StreamingContext, Time, VirtualClock
from reactive_spark.log import Database, FileLog, StateStore
from reactive_spark.offsets import OffsetRange

BATCHES = 40
PER_PARTITION = 100
MERGED_TOPICS = {"views": 2, "clicks": 3, "buys": 2}
PARTITIONS = sum(MERGED_TOPICS.values())
KEYS = 50
ROUNDS = 3


def count(total: int, _: Any) -> int:
    return total + 1


def produce(log: FileLog, partitions: list[tuple[str, int]], batch: int) -> None:
    """`PER_PARTITION` records to every `(topic, partition)`, keys spread over `KEYS`."""
    for slot, (topic, partition) in enumerate(partitions):
        for n in range(PER_PARTITION):
            key = f"k{(batch * 31 + slot * 7 + n) % KEYS}"
            log.append(topic, n, key=key, partition=partition)


def records(ranges: list[OffsetRange]) -> int:
    return sum(r.count() for r in ranges)


async def run(
    root: Path, topics: dict[str, int], pipeline: Callable[[DStream[Any]], DStream[Any]]
) -> tuple[float, list[int]]:
    """Seconds for `BATCHES` batches of `pipeline` over `topics`, and the records per batch."""
    log = FileLog(str(root / "log"))
    partitions = [(topic, p) for topic, count in topics.items() for p in range(count)]
    for topic, count in topics.items():
        log.create_topic(topic, partitions=count)
    origin = Time(0)
    ssc = StreamingContext(
        SparkContext.getOrCreate(), None, clock=VirtualClock(origin), checkpoint=str(root / "ck")
    )
    tick = ssc.timer(origin + Seconds(1), None, Seconds(1), "tick")
    produced = [0]

    def before_batch(event: Any) -> None:
        produce(log, partitions, produced[0])
        produced[0] += 1

    tick.addListener(before_batch)  # listeners run when the tick is accepted, before its batch
    streams = [ssc.directStream(log, topic, startingOffsets="earliest") for topic in topics]
    merged = ssc.union(*streams) if len(streams) > 1 else streams[0]
    per_batch: list[int] = []
    merged.foreachRDD(lambda rdd: per_batch.append(records(rdd.offsetRanges()))).bind(tick)
    pipeline(merged).bind(tick)
    await ssc.start()
    began = time.perf_counter()
    await ssc.runUntil(origin + Seconds(BATCHES))
    elapsed = time.perf_counter() - began
    await ssc.stop(stopSparkContext=False)
    return elapsed, per_batch


def exactly_once(store: StateStore) -> Callable[[DStream[Any]], DStream[Any]]:
    def pipeline(merged: DStream[Any]) -> DStream[Any]:
        return merged.aggregateExactlyOnce(store, 0, count)

    return pipeline


def at_least_once(database: Database, table: str) -> Callable[[DStream[Any]], DStream[Any]]:
    """The same count by hand: fold each batch onto the stored values and upsert them."""
    with database.transaction() as cursor:
        cursor.execute(
            f"CREATE TABLE {table} (key TEXT PRIMARY KEY, value TEXT NOT NULL, "
            "batch BIGINT NOT NULL)"
        )
    batches = [0]

    def upsert(rdd: Any) -> None:
        batch = rdd.collect()
        batches[0] += 1
        with database.transaction() as cursor:
            codes = list(dict.fromkeys(json.dumps(key) for key, _ in batch))
            marks = ", ".join("?" * len(codes))
            cursor.execute(f"SELECT key, value FROM {table} WHERE key IN ({marks})", codes)
            totals = {code: json.loads(value) for code, value in cursor.fetchall()}
            for key, value in batch:
                code = json.dumps(key)
                totals[code] = count(totals.get(code, 0), value)
            cursor.executemany(
                f"INSERT INTO {table} (key, value, batch) VALUES (?, ?, ?) ON CONFLICT (key) "
                "DO UPDATE SET value = excluded.value, batch = excluded.batch",
                [(code, json.dumps(totals[code]), batches[0]) for code in codes],
            )

    def pipeline(merged: DStream[Any]) -> DStream[Any]:
        return merged.foreachRDD(upsert)

    return pipeline


def table_counts(database: Database, table: str) -> dict[str, int]:
    with database.transaction() as cursor:
        cursor.execute(f"SELECT key, value FROM {table}")
        return {json.loads(key): json.loads(value) for key, value in cursor.fetchall()}


async def main() -> None:
    local_spark("bench-exactly-once")
    merged_times, plain_times = [], []
    expected = [PARTITIONS * PER_PARTITION] * BATCHES
    with tempfile.TemporaryDirectory() as folder:
        for round_number in range(ROUNDS + 1):  # round 0 warms up the Python workers
            root = Path(folder) / f"round-{round_number}"
            root.mkdir()
            database = Database.sqlite(str(root / "state.db"))
            store = StateStore(database, "merged")
            merged, merged_batches = await run(root / "merged", MERGED_TOPICS, exactly_once(store))
            single = {"all": PARTITIONS}
            plain, plain_batches = await run(
                root / "single", single, at_least_once(database, "single_values")
            )
            assert merged_batches == plain_batches == expected, (merged_batches, plain_batches)
            assert store.items() == table_counts(database, "single_values")  # the same counts
            assert sum(store.items().values()) == sum(expected)
            if round_number:
                merged_times.append(merged)
                plain_times.append(plain)
    total = sum(expected)
    ours, theirs = total / median(merged_times), total / median(plain_times)
    print(
        f"exactly-once merge and state: {BATCHES} batches of {expected[0]} records "
        f"({PARTITIONS} partitions), SQLite, checkpointed, {ROUNDS} rounds"
    )
    print(f"  one input, at least once (foreachRDD + upsert)  {theirs:9.0f} records/s")
    print(f"  3 topics merged, aggregateExactlyOnce           {ours:9.0f} records/s")
    print(f"  ratio {ours / theirs:.3f} (target >= 0.8)")


if __name__ == "__main__":
    asyncio.run(main())
