"""A daily job that a test runs in a child process and kills mid-batch (a real crash).

`python -m tests.crash_app <checkpoint> <out>` processes days 0-9 on a virtual clock and dies
with `os._exit` while day 3's batch runs, after its file output is committed and before the
batch is completed in the write-ahead log.
"""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import UTC, datetime
from typing import Any

from pyspark import SparkConf, SparkContext

from reactive_spark import Days, StreamingContext, Time, VirtualClock

T0 = Time.fromDatetime(datetime(2024, 1, 1, tzinfo=UTC))
CRASH_DAY = 3


def build(ssc: StreamingContext, out: str, crash: bool) -> None:
    """Days' numbers saved as text, then a step that kills the driver on the crash day."""
    daily = ssc.timer(T0, None, Days(1), "daily")
    numbers = ssc.queueStream([[day, day * 100] for day in range(10)])
    numbers.saveAsTextFiles(os.path.join(out, "day")).bind(daily)

    def check(time: datetime, rdd: Any) -> None:
        if crash and time == (T0 + Days(CRASH_DAY)).toDatetime():
            os._exit(3)

    numbers.foreachRDD(check).bind(daily)


async def main(checkpoint: str, out: str) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = (
        SparkConf().setMaster("local[1]").setAppName("crash-app").set("spark.ui.enabled", "false")
    )
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0), checkpoint=checkpoint)
    build(ssc, out, crash=True)
    await ssc.start()
    await ssc.runUntil(T0 + Days(9))
    raise SystemExit("the crash day passed without a crash")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
