"""Flat memory: 10,000 events through tail and time windows on a virtual clock.

Prints the driver's RSS growth after a warm-up (target <= 50 MB), the JVM's for information,
and how many RDDs / events each stream remembers at the end. Baseline: the same pipeline's
RSS right after its first 1,000 events, in the same run.
"""

from __future__ import annotations

import asyncio
import os
import time

import psutil
from _spark import local_spark

from reactive_spark import Seconds, StreamingContext, Time, VirtualClock

EVENTS = 10_000
WARMUP = 1_000


def rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 2**20


async def main() -> None:
    sc = local_spark("bench-memory")
    jvm_pid = int(sc._jvm.ProcessHandle.current().pid())  # type: ignore[union-attr]
    origin = Time(0)
    ssc = StreamingContext(sc, None, clock=VirtualClock(origin))
    tick = ssc.timer(origin + Seconds(1), None, Seconds(1), "tick")
    base = sc.parallelize(range(100), 2)
    per_event = ssc.queueStream([], default=base).map(lambda x: x + 1)
    tail = per_event.tailWindow(7, 1)
    timed = per_event.timeWindow(Seconds(30), Seconds(10))
    tail.foreachRDD(lambda rdd: None).bind(tick)
    timed.foreachRDD(lambda rdd: None).bind(tick)
    await ssc.start()
    await ssc.runUntil(origin + Seconds(WARMUP))
    driver_before, jvm_before = rss_mb(os.getpid()), rss_mb(jvm_pid)
    began = time.perf_counter()
    await ssc.runUntil(origin + Seconds(EVENTS))
    elapsed = time.perf_counter() - began
    driver_after, jvm_after = rss_mb(os.getpid()), rss_mb(jvm_pid)
    persisted = sc._jsc.getPersistentRDDs().size()  # type: ignore[union-attr]
    print(f"memory: {EVENTS} events ({EVENTS - WARMUP} measured, {elapsed:.1f} s)")
    print(
        f"  driver RSS {driver_before:.1f} MB -> {driver_after:.1f} MB: "
        f"growth {driver_after - driver_before:+.1f} MB (target <= 50 MB)"
    )
    print(f"  JVM RSS    {jvm_before:.1f} MB -> {jvm_after:.1f} MB (information)")
    print(f"  persisted RDDs in Spark: {persisted}")
    for stream in ssc.graph.streams:
        print(f"  {stream.name:<40} remembers {stream.rememberedCount} RDDs/events")
    await ssc.stop()


if __name__ == "__main__":
    asyncio.run(main())
