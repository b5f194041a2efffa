"""The one test on the system clock: a 200 ms timer runs real jobs for about a second."""

from __future__ import annotations

import asyncio

from pyspark import SparkContext

from reactive_spark import Milliseconds, StreamingContext, SystemClock

from .helpers import Recorder


async def test_timer_on_the_system_clock_runs_real_jobs(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None, clock=SystemClock())
    # leave room for defining the pipeline and starting: ticks before zero time are skipped
    start = ssc.clock.now() + Milliseconds(1000)
    timer = ssc.timer(start, start + Milliseconds(800), Milliseconds(200), "fast")
    counts: list[int] = []
    ssc.queueStream([], default=[1, 2, 3]).foreachRDD(lambda rdd: counts.append(rdd.count())).bind(
        timer
    )
    recorder = Recorder()
    done = asyncio.Event()
    loop = asyncio.get_running_loop()

    class Done(Recorder):
        def onBatchCompleted(self, batch):  # type: ignore[no-untyped-def]
            if batch.event.index == 4:  # called in the scheduler's worker thread
                loop.call_soon_threadsafe(done.set)

    ssc.addStreamingListener(recorder)
    ssc.addStreamingListener(Done())
    await ssc.start()
    await asyncio.wait_for(done.wait(), timeout=30)
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    assert counts == [3, 3, 3, 3, 3]
    times = [event.time for event in recorder.events]
    assert times == [start + Milliseconds(200 * k) for k in range(5)]
    for job in recorder.started:
        assert job.startTime is not None and job.startTime >= job.event.time.milliseconds
