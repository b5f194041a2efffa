"""Overload: a producer thread at 1x, 2x and 10x the rate its jobs sustain, for each overflow
policy, beside the same load with no bound (the baseline, measured in the same run).

Jobs take 2 ms (500 events/s sustained). For each arm: events produced, run, dropped or
coalesced, refused; throughput (events run per second of the run); the lag from posting an
event to the start of its job (p50, p99); the deepest the source's queue got; how much the
driver's resident memory grew. Every arm asserts that each event it produced is accounted for
(run, dropped, coalesced or refused), and the bounded arms that their queue stayed within the
bound.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from typing import Any

import psutil
from _spark import local_spark, median, percentile
from pyspark import SparkContext
from reactivex.subject import Subject

from reactive_spark import (
    EventsDropped,
    QueueFullError,
    StreamingContext,
    StreamingListener,
    SystemClock,
)

JOB_SECONDS = 0.002
RUN_SECONDS = 3.0
BOUND = 200
FACTORS = (1, 2, 10)
POLICIES = ("block", "coalesce", "drop-oldest", "drop-newest", "reject")


class Drops(StreamingListener):
    def __init__(self) -> None:
        self.dropped = 0
        self.coalesced = 0

    def onEventsDropped(self, dropped: EventsDropped) -> None:
        if dropped.reason == "coalesce":
            self.coalesced += dropped.count
        else:
            self.dropped += dropped.count


@dataclass
class Arm:
    policy: str
    factor: int
    produced: int
    ran: int
    dropped: int
    coalesced: int
    refused: int
    seconds: float
    lags: list[float]
    deepest: int
    rss_mb: float


async def arm(sc: SparkContext, policy: str, factor: int, bound: int) -> Arm:
    ssc = StreamingContext(sc, None, clock=SystemClock())
    subject: Subject[float] = Subject()
    source = ssc.rxEventSource(subject, "producer").overflow(bound, policy)
    lags: list[float] = []
    stood_for = 0

    def job(time_: Any, rdd: Any, event: Any) -> None:
        nonlocal stood_for
        lags.append((time.perf_counter() - event.value) * 1000)
        stood_for += event.standsFor
        time.sleep(JOB_SECONDS)

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(source)
    drops = Drops()
    ssc.addStreamingListener(drops)
    process = psutil.Process()
    rss_before = process.memory_info().rss
    await ssc.start()
    interval = JOB_SECONDS / factor
    produced = refused = 0
    began = time.perf_counter()

    def produce() -> None:
        nonlocal produced, refused
        while time.perf_counter() - began < RUN_SECONDS:
            due = int((time.perf_counter() - began) / interval)
            while produced < due:
                try:
                    subject.on_next(time.perf_counter())
                except QueueFullError:
                    refused += 1
                produced += 1
            time.sleep(interval / 2)

    producer = threading.Thread(target=produce)
    producer.start()
    deepest = 0
    while producer.is_alive():
        deepest = max(deepest, source.queueDepth)
        await asyncio.sleep(0.01)
    producer.join()
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    seconds = time.perf_counter() - began
    ran = len(lags)
    assert ran + drops.dropped + drops.coalesced + refused == produced, (
        policy,
        factor,
        ran,
        drops.dropped,
        drops.coalesced,
        refused,
        produced,
    )
    assert stood_for == ran + drops.coalesced
    if bound < 10**9:
        assert deepest <= bound, (policy, factor, deepest)
    rss_mb = (process.memory_info().rss - rss_before) / 2**20
    return Arm(
        policy,
        factor,
        produced,
        ran,
        drops.dropped,
        drops.coalesced,
        refused,
        seconds,
        lags,
        deepest,
        rss_mb,
    )


def show(label: str, run: Arm, baseline: Arm | None) -> None:
    throughput = run.ran / run.seconds
    ratio = "" if baseline is None else f"  ({throughput / (baseline.ran / baseline.seconds):.2f}x"
    if baseline is not None:
        ratio += f" of unbounded; lag p99 {percentile(run.lags, 0.99):.0f} vs "
        ratio += f"{percentile(baseline.lags, 0.99):.0f} ms)"
    print(
        f"  {label:<24} produced {run.produced:6,}  ran {run.ran:6,}  dropped {run.dropped:6,}  "
        f"coalesced {run.coalesced:6,}  refused {run.refused:6,}  {throughput:6,.0f}/s  "
        f"lag p50 {median(run.lags):7.1f} ms p99 {percentile(run.lags, 0.99):7.1f} ms  "
        f"deepest {run.deepest:6,}  rss +{run.rss_mb:5.1f} MB{ratio}"
    )


async def main() -> None:
    sc = local_spark("bench-overload")
    sc.parallelize([1]).collect()
    print(
        f"overload: jobs of {JOB_SECONDS * 1000:.0f} ms ({1 / JOB_SECONDS:.0f}/s sustained), "
        f"{RUN_SECONDS:.0f} s per arm, bound {BOUND}"
    )
    for factor in FACTORS:
        baseline = await arm(sc, "block", factor, 10**9)
        print(f"{factor}x the sustainable rate:")
        show("no bound (baseline)", baseline, None)
        for policy in POLICIES:
            show(policy, await arm(sc, policy, factor, BOUND), baseline)


if __name__ == "__main__":
    asyncio.run(main())
