"""Scheduling overhead: 200 timer events, each a small RDD job, versus a plain PySpark loop.

Prints (1) wall time of reactive-spark on a virtual clock over a plain PySpark loop doing the
same RDD work in the same process (target ratio <= 1.05; both arms assert 200 equal job
results), measured in alternating rounds, and
(2) scheduling latency on the system clock, from an event's due time to its job's start
(targets: p50 <= 1 ms, p99 <= 5 ms).
"""

from __future__ import annotations

import asyncio
import time

from _spark import local_spark, median, percentile
from pyspark import RDD, SparkContext

from reactive_spark import (
    JobInfo,
    Milliseconds,
    Seconds,
    StreamingContext,
    StreamingListener,
    SystemClock,
    Time,
    VirtualClock,
)

EVENTS = 200
ROUNDS = 3


def work(rdd: RDD[int]) -> int:
    return rdd.map(lambda x: x * x).sum()


#: What `work` returns on the benchmarks' base RDD (`range(1000)`): every job's result.
EXPECTED = sum(x * x for x in range(1000))


def plain_loop(base: RDD[int]) -> float:
    began = time.perf_counter()
    results = [work(base) for _ in range(EVENTS)]
    elapsed = time.perf_counter() - began
    assert results == [EXPECTED] * EVENTS, results  # the work the reactive arm does
    return elapsed


async def reactive_virtual(
    sc: SparkContext, base: RDD[int], checkpoint: str | None = None
) -> float:
    origin = Time(0)
    ssc = StreamingContext(sc, None, clock=VirtualClock(origin), checkpoint=checkpoint)
    timer = ssc.timer(origin + Seconds(1), origin + Seconds(EVENTS), Seconds(1), "tick")
    results: list[int] = []
    ssc.queueStream([], default=base).foreachRDD(lambda rdd: results.append(work(rdd))).bind(timer)
    await ssc.start()
    began = time.perf_counter()
    await ssc.runUntil(origin + Seconds(EVENTS))
    elapsed = time.perf_counter() - began
    await ssc.stop(stopSparkContext=False)
    assert results == [EXPECTED] * EVENTS, results  # the work the plain loop does
    return elapsed


class Latency(StreamingListener):
    def __init__(self) -> None:
        self.delays: list[float] = []

    def onJobStarted(self, job: JobInfo) -> None:
        assert job.startTime is not None
        self.delays.append(job.startTime - job.event.time.milliseconds)


async def reactive_latency(sc: SparkContext, base: RDD[int], period_ms: int) -> list[float]:
    ssc = StreamingContext(sc, None, clock=SystemClock())
    first = ssc.clock.now() + Milliseconds(500)
    last = first + Milliseconds(period_ms * (EVENTS - 1))
    timer = ssc.timer(first, last, Milliseconds(period_ms), "tick")
    ssc.queueStream([], default=base).foreachRDD(work).bind(timer)
    latency = Latency()
    ssc.addStreamingListener(latency)
    await ssc.start()
    while len(latency.delays) < EVENTS:
        await asyncio.sleep(0.2)
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    return latency.delays


async def main() -> None:
    sc = local_spark("bench-overhead")
    base = sc.parallelize(range(1000), 2).cache()
    base.count()
    for _ in range(20):  # warm up the Python workers
        work(base)
    plain, reactive = [], []
    for _ in range(ROUNDS):
        plain.append(plain_loop(base))
        reactive.append(await reactive_virtual(sc, base))
    job_ms = median(plain) / EVENTS * 1000
    period = max(50, int(job_ms * 3))
    delays = await reactive_latency(sc, base, period)
    print(f"overhead: {EVENTS} events x {ROUNDS} rounds, plain PySpark job {job_ms:.1f} ms")
    print(f"  plain PySpark loop   median {median(plain):.3f} s  {sorted(plain)}")
    print(f"  reactive-spark       median {median(reactive):.3f} s  {sorted(reactive)}")
    ratio = median(reactive) / median(plain)
    print(f"  ratio reactive/plain {ratio:.3f}  (target <= 1.05)")
    print(f"latency (system clock, {EVENTS} events every {period} ms), due -> job start:")
    print(
        f"  p50 {percentile(delays, 0.5):.2f} ms  p90 {percentile(delays, 0.9):.2f} ms  "
        f"p99 {percentile(delays, 0.99):.2f} ms  max {max(delays):.2f} ms  "
        "(targets p50 <= 1 ms, p99 <= 5 ms)"
    )


if __name__ == "__main__":
    asyncio.run(main())
