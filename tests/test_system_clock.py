"""On the system clock: a 200 ms timer runs real jobs for about a second; timed actions are
never early, and leave no reference cycles behind."""

from __future__ import annotations

import asyncio
import functools
import time

from pyspark import SparkContext

from reactive_spark import Milliseconds, StreamingContext, SystemClock

from .helpers import Recorder, cycles_of_ours


async def test_timer_on_the_system_clock_runs_real_jobs(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None, clock=SystemClock())
    defined = ssc.clock.now()
    period = Milliseconds(200)
    timer = ssc.timer(defined, None, period, "fast")
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
    # ticks before zero time are not fired: the first is the first one at or after the start
    first = defined + period * -((defined - ssc.zeroTime) // period)
    assert ssc.zeroTime <= first < ssc.zeroTime + period
    await asyncio.wait_for(done.wait(), timeout=30)
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    assert counts[:5] == [3, 3, 3, 3, 3]
    times = [event.time for event in recorder.events][:5]
    assert times == [first + period * k for k in range(5)]
    for job in recorder.started:
        assert job.startTime is not None and job.startTime >= job.event.time.milliseconds


async def test_timed_actions_never_run_before_their_time() -> None:
    # woken early by PRECISION (asyncio sleeps whole milliseconds, rounded up), then yielding
    # until due: never early, and on an idle loop late by well under a millisecond or two
    clock = SystemClock()
    clock.attach(asyncio.get_running_loop())
    lateness: list[float] = []
    finished = asyncio.Event()
    count = 60

    def ran(due: float) -> None:
        lateness.append(time.time() - due)
        if len(lateness) == count:
            finished.set()

    start = clock.now()
    for k in range(count):
        due = start + Milliseconds(5 + 3 * k)
        clock.scheduleAt(due, functools.partial(ran, due.milliseconds / 1000))
    await asyncio.wait_for(finished.wait(), timeout=10)
    assert min(lateness) >= 0, min(lateness)
    assert sorted(lateness)[count // 2] < 0.002, sorted(lateness)


async def test_timed_actions_leave_no_reference_cycles() -> None:
    # a timer ticking every few milliseconds would otherwise hand the cyclic collector a cycle
    # per tick (docs/architecture.md, "The host's collector")
    clock = SystemClock()
    clock.attach(asyncio.get_running_loop())
    count = 300
    ran: list[int] = []
    finished = asyncio.Event()

    def run(k: int) -> None:
        ran.append(k)
        if len(ran) == count:
            finished.set()

    start = clock.now()
    with cycles_of_ours() as found:
        for k in range(count):  # cancelled ones due first: one that ran would show
            clock.scheduleAt(start + Milliseconds(1), functools.partial(run, -1)).dispose()
            clock.scheduleAt(start + Milliseconds(5 + k % 20), functools.partial(run, k))
        await asyncio.wait_for(finished.wait(), timeout=10)
    assert sorted(ran) == list(range(count))  # each once; none of the cancelled ones
    assert len(found) < 10, found[:20]  # a cycle per action held two of our functions
