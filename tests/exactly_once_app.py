"""Exactly-once merging and state under real crashes: run by tests/test_exactly_once_kill.py in
a child process that it kills with SIGKILL at random points and starts again until the logs are
drained.

`python -m tests.exactly_once_app <config.json> <restart time, epoch ms>`: three topics
(2, 3 and 2 partitions) on one log backend (file, Redis or Kafka) are merged with
`ssc.union`; an order-sensitive fold (a hash chain) and a keyed count are committed with
`aggregateExactlyOnce` to SQLite and to PostgreSQL (four stores). A virtual clock ticks every
minute from `T0`; each tick reads at most `RATE` records per partition, so every run, crashed
or not, cuts the same batches. Checkpoints go to `<workdir>/checkpoint`; `done <minute>` is
printed after every batch and `finished` at the end.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from reactive_spark import (
    BatchInfo,
    Minutes,
    StreamingContext,
    StreamingListener,
    Time,
    VirtualClock,
)
from reactive_spark.log import Database, FileLog, KafkaLog, LogBackend, RedisLog, StateStore

from .helpers import quiet_spark_context

T0 = Time(1_767_225_600_000)  # 2026-01-01
TOPICS = {"views": 2, "clicks": 3, "buys": 2}
RECORDS_PER_PARTITION = 60
RATE = 4  # records per partition and minute
MINUTES = RECORDS_PER_PARTITION // RATE + 2  # drained, then two idle batches
KEYS = 5


def chain(state: str, value: Any) -> str:
    """Order-sensitive: the same values in another order give another hash."""
    return hashlib.sha256(f"{state}|{value}".encode()).hexdigest()[:16]


def count(total: int, _: Any) -> int:
    return total + 1


def open_log(config: dict[str, Any]) -> LogBackend:
    backend = config["backend"]
    if backend == "file":
        return FileLog(config["log"], segmentRecords=16)
    if backend == "redis":
        return RedisLog(config["log"], prefix=config["prefix"])
    return KafkaLog(config["log"])


def topic_names(config: dict[str, Any]) -> dict[str, str]:
    """Each topic's name in the log, unique to the run (Kafka and Redis outlive a test)."""
    return {topic: f"{config['prefix']}-{topic}" for topic in TOPICS}


def write_records(config: dict[str, Any]) -> int:
    """Every topic's records, before the first run; returns how many."""
    log = open_log(config)
    written = 0
    for topic, name in topic_names(config).items():
        log.create_topic(name, partitions=TOPICS[topic])
        for partition in range(TOPICS[topic]):
            for n in range(RECORDS_PER_PARTITION):
                key = f"k{(n * 7 + partition) % KEYS}"
                log.append(name, f"{topic}/{partition}/{n}", key=key, partition=partition)
                written += 1
    return written


def stores(config: dict[str, Any]) -> dict[str, StateStore]:
    """`<database>_<fold>`: the hash chain and the count, on SQLite and on PostgreSQL."""
    databases = {
        "sqlite": Database.sqlite(config["sqlite"]),
        "postgres": Database.postgres(config["postgres"]),
    }
    return {
        f"{kind}_{fold}": StateStore(database, f"{config['prefix'].replace('-', '_')}_{fold}")
        for kind, database in databases.items()
        for fold in ("chain", "count")
    }


def build(ssc: StreamingContext, config: dict[str, Any]) -> dict[str, StateStore]:
    log = open_log(config)
    states = stores(config)
    tick = ssc.timer(T0 + Minutes(1), T0 + Minutes(MINUTES), Minutes(1), "tick")
    inputs = [
        ssc.directStream(
            log,
            topic,
            states["sqlite_chain"].committedOffsets(topic),
            startingOffsets="earliest",
            maxRatePerPartition=RATE / 60,
        )
        for topic in topic_names(config).values()
    ]
    pairs = ssc.union(*inputs)
    for name, store in states.items():
        if name.endswith("chain"):
            pairs.aggregateExactlyOnce(store, "", chain).bind(tick)
        else:
            pairs.aggregateExactlyOnce(store, 0, count).bind(tick)
    return states


class Progress(StreamingListener):
    def onBatchCompleted(self, batch: BatchInfo) -> None:
        minute = (batch.event.time - T0) // Minutes(1)
        print(f"done {minute}", flush=True)


async def main(config: dict[str, Any], restartAt: Time) -> None:
    sc = quiet_spark_context("exactly-once-app")
    checkpoint = str(Path(config["workdir"]) / "checkpoint")
    ssc = StreamingContext(sc, None, clock=VirtualClock(restartAt), checkpoint=checkpoint)
    build(ssc, config)
    ssc.addStreamingListener(Progress())
    await ssc.start()
    print("started", flush=True)
    await ssc.runUntil(T0 + Minutes(MINUTES))
    await ssc.stop()
    print("finished", flush=True)


if __name__ == "__main__":
    asyncio.run(main(json.loads(Path(sys.argv[1]).read_text()), Time(int(sys.argv[2]))))
