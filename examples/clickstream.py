"""Clicks counted per page exactly once, across a restart, from a log.

A producer appends clicks to the embedded file log every minute of virtual time. A direct
stream reads them whenever 200 clicks wait (a backlog source) and at least every hour; a
transactional sink commits the page counts and the offsets together in SQLite. The
application stops after six hours and is started again on its checkpoint for six more: every
click is counted once.

Run: `python examples/clickstream.py` (local Spark, files, virtual time). `reactive-spark run`
builds it on the system clock, a simulated hour lasting three seconds, in
`reactive-spark-examples/clickstream/`; stop it and run it again with the same checkpoint, and
every click is still counted once:

    reactive-spark run examples/clickstream.py --checkpoint reactive-spark-examples/ckpt
"""

from __future__ import annotations

import asyncio
import random
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _logs import WORKDIR, local_spark
from pyspark import SparkContext

from reactive_spark import Duration, Hours, Seconds, StreamingContext, Time, VirtualClock
from reactive_spark.log import Database, FileLog, TransactionalSink

START = Time.fromDatetime(datetime(2026, 1, 5, tzinfo=UTC))
PAGES = ["/", "/pricing", "/docs", "/blog", "/signup"]


def build(
    ssc: StreamingContext,
    root: Path = WORKDIR / "clickstream",
    produced: list[int] | None = None,
) -> TransactionalSink:
    """The producer, the stream and the sink; returns the sink.

    `produced[0]`, if given, counts the clicks produced. A simulated hour lasts an hour on a
    virtual clock, three seconds on the system clock (`reactive-spark run`).
    """
    virtual = isinstance(ssc.clock, VirtualClock)
    hour = Hours(1) if virtual else Seconds(3)
    minute = Duration(hour.milliseconds // 60)
    counted = [0] if produced is None else produced
    root.mkdir(parents=True, exist_ok=True)
    log = FileLog(str(root / "log"))
    log.create_topic("clicks", partitions=3)
    database = Database.sqlite(str(root / "pages.db"))
    with database.transaction() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS pages (page TEXT PRIMARY KEY, n INTEGER)")
    sink = TransactionalSink(database)

    rng = random.Random(7)
    producer = ssc.timer(START, None, minute, "producer")

    def produce(event: Any) -> None:
        for _ in range(rng.randint(0, 12)):
            user = f"user-{rng.randint(1, 40)}"
            log.append("clicks", {"page": rng.choice(PAGES)}, key=user)
            counted[0] += 1

    producer.addListener(produce)
    clicks = ssc.directStream(log, ["clicks"], startingOffsets="earliest", commitsTo=sink)
    full = ssc.backlogSource(clicks, 200, "backlog", interval=Seconds(30 if virtual else 0.25))
    hourly = ssc.timer(START + hour, None, hour, "hourly")

    def store(rdd: Any) -> None:
        counts = rdd.map(lambda kv: (kv[1]["page"], 1)).reduceByKey(lambda a, b: a + b).collect()
        sink.commit(
            rdd.offsetRanges(),
            lambda cursor: cursor.executemany(
                "INSERT INTO pages VALUES (?, ?) ON CONFLICT (page) DO UPDATE SET n = n + ?",
                [(page, n, n) for page, n in counts],
            ),
        )

    clicks.foreachRDD(store).bind(full).bind(hourly)
    print(f"page counts go to {root / 'pages.db'} (SQLite, table pages)", flush=True)
    return sink


async def run(sc: SparkContext, root: Path, start: Time, hours: int, produced: list[int]) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(start), checkpoint=str(root / "ckpt"))
    build(ssc, root, produced)
    await ssc.start()
    await ssc.runUntil(start + Hours(hours))
    await ssc.stop(stopSparkContext=False, stopGracefully=True)


async def main(sc: SparkContext, root: Path) -> dict[str, int]:
    """Six hours, a restart, six more hours; returns the page counts."""
    produced = [0]
    await run(sc, root, START, 6, produced)
    await run(sc, root, START + Hours(6), 6, produced)
    database = Database.sqlite(str(root / "pages.db"))
    with database.transaction() as cursor:
        cursor.execute("SELECT page, n FROM pages ORDER BY page")
        pages = {page: int(n) for page, n in cursor.fetchall()}
    print(f"{produced[0]} clicks produced, {sum(pages.values())} counted exactly once:")
    for page, count in pages.items():
        print(f"  {page:<10} {count}")
    return pages


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(main(local_spark("clickstream"), Path(folder)))
