"""What a checkpoint costs: the write-ahead log per batch, and the time a restart takes.

Prints (1) wall time of 200 timer events, each a small RDD job, with and without a checkpoint
directory, over a plain PySpark loop doing the same RDD work in the same run (alternating
rounds), and the log's cost per batch; (2) how long a restart takes on a checkpoint of 2,000
daily batches with a 7-day window (the rebuild) after a day of downtime on a 15-minute timer
(the catch-up), next to the same day run live from a fresh checkpoint.
"""

from __future__ import annotations

import asyncio
import tempfile
import time

from _spark import local_spark, median
from overhead import EVENTS, plain_loop, reactive_virtual, work
from pyspark import SparkContext

from reactive_spark import Days, Minutes, StreamingContext, Time, VirtualClock

ROUNDS = 3
HISTORY = 2_000


def history_graph(sc: SparkContext, start: Time, directory: str) -> StreamingContext:
    """Daily jobs with a 7-day window, and 15-minute ticks over the last day of the history."""
    ssc = StreamingContext(sc, None, clock=VirtualClock(start), checkpoint=directory)
    daily = ssc.timer(Time(0), None, Days(1), "daily")
    quarterly = ssc.timer(Time(0) + Days(HISTORY - 1), None, Minutes(15), "quarterly")
    numbers = ssc.queueStream([], default=sc.parallelize([1, 2, 3]))
    numbers.foreachRDD(lambda rdd: None).bind(daily)
    numbers.tailWindow(7).foreachRDD(lambda rdd: None).bind(daily)
    numbers.foreachRDD(lambda rdd: None).bind(quarterly)
    return ssc


async def timed_start(ssc: StreamingContext, until: Time) -> float:
    began = time.perf_counter()
    await ssc.start()
    await ssc.advanceTo(until)
    elapsed = time.perf_counter() - began
    await ssc.stop(stopSparkContext=False)
    return elapsed


async def restart_times(sc: SparkContext) -> tuple[float, float]:
    """A restart that rebuilds and catches up the last day, and the same day run live."""
    last_day, end = Time(0) + Days(HISTORY - 1), Time(0) + Days(HISTORY)
    with tempfile.TemporaryDirectory() as directory:
        live = await timed_start(history_graph(sc, last_day, directory), end)
    with tempfile.TemporaryDirectory() as directory:
        first = history_graph(sc, Time(0), directory)
        await first.start()
        await first.runUntil(last_day)
        await first.stop(stopSparkContext=False, stopGracefully=True)
        restarted = await timed_start(history_graph(sc, end, directory), end)
    return live, restarted


async def main() -> None:
    sc = local_spark("bench-checkpoint")
    base = sc.parallelize(range(1000), 2).cache()
    base.count()
    for _ in range(20):
        work(base)
    plain, without, with_log = [], [], []
    for _ in range(ROUNDS):
        plain.append(plain_loop(base))
        without.append(await reactive_virtual(sc, base))
        with tempfile.TemporaryDirectory() as directory:
            with_log.append(await reactive_virtual(sc, base, directory))
    per_batch = (median(with_log) - median(without)) / EVENTS * 1000
    print(f"checkpoint: {EVENTS} events x {ROUNDS} rounds")
    print(f"  plain PySpark loop       median {median(plain):.3f} s")
    print(f"  reactive, no checkpoint  median {median(without):.3f} s")
    print(f"  reactive, checkpointed   median {median(with_log):.3f} s")
    print(
        f"  ratio checkpointed/plain {median(with_log) / median(plain):.3f}, "
        f"write-ahead log {per_batch:.2f} ms per batch"
    )
    live, restarted = await restart_times(sc)
    print(
        f"restart after {HISTORY:,} days (7-day window) and a day of downtime (96 missed "
        f"15-minute ticks, caught up): {restarted:.3f} s; that day run live on a fresh "
        f"checkpoint {live:.3f} s; ratio {restarted / live:.2f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
