"""A driver that holds its checkpoint directory until it is killed (test_checkpoint_lock.py).

`python -m tests.holding_app <checkpoint>` starts `program` on a virtual clock at `T0`,
checkpointing to `<checkpoint>`, prints `started`, and waits for a termination that never
comes: the test kills it with SIGKILL.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime

from reactive_spark import Days, StreamingContext, Time, VirtualClock

from .helpers import quiet_spark_context

T0 = Time.fromDatetime(datetime(2026, 1, 5, tzinfo=UTC))


def program(ssc: StreamingContext) -> list[int]:
    """A daily batch of one number; returns the days whose batch ran, as they run."""
    days: list[int] = []
    daily = ssc.timer(T0 + Days(1), None, Days(1), "daily")
    ssc.queueStream([], default=[1]).foreachRDD(
        lambda time, rdd, event: days.append((event.time - T0) // Days(1))
    ).bind(daily)
    return days


async def main(checkpoint: str) -> None:
    sc = quiet_spark_context("holding-app", "local[1]")
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0), checkpoint=checkpoint)
    program(ssc)
    await ssc.start()
    await ssc.advanceTo(T0 + Days(2))
    print("started", flush=True)
    await ssc.awaitTermination()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
