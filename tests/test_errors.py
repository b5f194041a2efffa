"""Bad input raises at definition time naming the argument; failing jobs are reported and the
context keeps running (DESIGN §10)."""

from __future__ import annotations

import pytest
from pyspark import SparkContext

from reactive_spark import (
    ContextStateError,
    ForeignContextError,
    InvalidArgumentError,
    InvalidCallbackError,
    JobFailedError,
    Seconds,
    StreamingContext,
    SystemClock,
    Time,
)

from .helpers import Recorder, gather, virtual

T0 = Time(0)


def test_context_arguments(sc: SparkContext) -> None:
    with pytest.raises(InvalidArgumentError, match="sparkContext"):
        StreamingContext("local", Seconds(1))
    with pytest.raises(InvalidArgumentError, match="batchDuration must be positive"):
        StreamingContext(sc, 0)
    with pytest.raises(InvalidArgumentError, match="batchDuration must be a Duration"):
        StreamingContext(sc, "1s")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="maxConcurrentJobs"):
        StreamingContext(sc, 1, maxConcurrentJobs=0)
    with pytest.raises(InvalidArgumentError, match="clock"):
        StreamingContext(sc, 1, clock="virtual")  # type: ignore[arg-type]


def test_timer_arguments(sc: SparkContext) -> None:
    ssc = virtual(sc, Seconds(1))
    with pytest.raises(InvalidArgumentError, match="period must be positive"):
        ssc.timer(T0, None, Seconds(0), "t")
    with pytest.raises(InvalidArgumentError, match="end must not be before start"):
        ssc.timer(Time(10), Time(5), Seconds(1), "t")
    with pytest.raises(InvalidArgumentError, match="start must be a Time or a datetime"):
        ssc.timer(10, None, Seconds(1), "t")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="name"):
        ssc.timer(T0, None, Seconds(1), "")


def test_operation_arguments(sc: SparkContext) -> None:
    ssc = virtual(sc, Seconds(1))
    stream = ssc.queueStream([[1]])
    with pytest.raises(InvalidCallbackError, match="map: f must be callable, got 3"):
        stream.map(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidCallbackError, match=r"foreachRDD: func must take \(rdd\)"):
        stream.foreachRDD(lambda a, b, c, d: None)
    with pytest.raises(InvalidCallbackError, match="transformWith"):
        stream.transformWith(lambda a: a, stream)
    with pytest.raises(InvalidArgumentError, match="numPartitions must be a positive int"):
        stream.repartition(0)
    with pytest.raises(InvalidArgumentError, match="numPartitions"):
        stream.reduceByKey(max, numPartitions=-1)
    with pytest.raises(InvalidArgumentError, match="num must be a non-negative int"):
        stream.pprint(-1)
    with pytest.raises(InvalidArgumentError, match="prefix must be a non-empty str"):
        stream.saveAsTextFiles("")
    with pytest.raises(InvalidArgumentError, match="rdds must hold RDDs or lists"):
        ssc.queueStream(["abc"])
    with pytest.raises(InvalidArgumentError, match="rdds must be a sequence"):
        ssc.queueStream("abc")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="source must be an EventSource"):
        stream.bind("timer")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="storageLevel"):
        stream.persist("MEMORY")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="checkpoint needs an interval"):
        stream.checkpoint()
    with pytest.raises(InvalidArgumentError, match="count must be a positive int"):
        stream.checkpoint(count=0)
    with pytest.raises(InvalidArgumentError, match="end must not be before begin"):
        stream.slice(Time(10), Time(5))


def test_streams_of_another_context(sc: SparkContext) -> None:
    one, other = virtual(sc, Seconds(1)), virtual(sc, Seconds(1))
    a = one.queueStream([[1]])
    b = other.queueStream([[2]])
    with pytest.raises(ForeignContextError, match="another StreamingContext"):
        a.union(b)
    with pytest.raises(ForeignContextError):
        a.join(b)
    with pytest.raises(ForeignContextError):
        one.union(a, b)
    with pytest.raises(ForeignContextError, match="source 't'"):
        a.bind(other.timer(T0, None, Seconds(1), "t"))


async def test_nothing_may_be_defined_after_start(sc: SparkContext) -> None:
    ssc = virtual(sc, Seconds(1))
    stream = ssc.queueStream([[1]])
    stream.pprint()
    timer = ssc.timer(T0, None, Seconds(1), "t")
    await ssc.start()
    with pytest.raises(ContextStateError, match=r"cannot bind .* the StreamingContext is active"):
        stream.bind(timer)
    with pytest.raises(ContextStateError, match="cannot create a map stream"):
        stream.map(str)
    with pytest.raises(ContextStateError, match="cannot create event source"):
        ssc.timer(T0, None, Seconds(1), "late")
    with pytest.raises(ContextStateError, match="cannot start"):
        await ssc.start()
    with pytest.raises(InvalidArgumentError, match="time must not be before"):
        await ssc.advanceTo(Time(-5))
    await ssc.stop(stopSparkContext=False)
    with pytest.raises(ContextStateError, match="cannot advance"):
        await ssc.advanceTo(Time(5))


async def test_advance_needs_a_virtual_clock(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, Seconds(1), clock=SystemClock())
    ssc.queueStream([[1]]).foreachRDD(lambda rdd: None)
    with pytest.raises(ContextStateError, match="not started"):
        await ssc.awaitTermination()
    await ssc.start()
    with pytest.raises(ContextStateError, match="VirtualClock"):
        await ssc.advanceTo(Time(5))
    await ssc.stop(stopSparkContext=False)


async def test_failing_job_is_reported_and_later_events_still_run(sc: SparkContext) -> None:
    ssc = virtual(sc, Seconds(1))
    recorder = Recorder()
    ssc.addStreamingListener(recorder)
    data = ssc.queueStream([[1], [2], [3]])

    def explode_on_two(rdd):  # type: ignore[no-untyped-def]
        if rdd.collect() == [2]:
            raise RuntimeError("boom on two")

    data.foreachRDD(explode_on_two)
    _, seen = gather(data)
    await ssc.start()
    with pytest.raises(JobFailedError) as caught:
        await ssc.runUntil(T0 + Seconds(3))
    failures = caught.value.failures
    assert len(failures) == 1
    assert "foreachRDD" in failures[0].streamName
    assert "explode_on_two" in failures[0].streamName
    assert "boom on two" in str(caught.value)
    assert [items for _, items in seen] == [[1], [2], [3]]
    assert [job.failed for job in recorder.jobs].count(True) == 1
    assert len(recorder.batches) == 3
    # the context is still alive
    assert await ssc.advanceTo(T0 + Seconds(4)) == []
    assert len(recorder.batches) == 4
    await ssc.stop(stopSparkContext=False)


async def test_failure_inside_executors_and_during_planning(sc: SparkContext) -> None:
    ssc = virtual(sc, Seconds(1))
    data = ssc.queueStream([[1, 0]])
    data.map(lambda x: 1 // x).foreachRDD(lambda rdd: rdd.collect())

    def bad_plan(rdd):  # type: ignore[no-untyped-def]
        raise ValueError("cannot plan")

    data.transform(bad_plan).foreachRDD(lambda rdd: None)
    _, seen = gather(data)
    await ssc.start()
    failures = await ssc.advanceTo(T0 + Seconds(1))
    await ssc.stop(stopSparkContext=False)
    kinds = sorted((f.kind, f.streamName.split("[")[0]) for f in failures)
    assert kinds == [("output", "foreachRDD"), ("plan", "foreachRDD")]
    plan = next(f for f in failures if f.kind == "plan")
    assert "cannot plan" in (plan.traceback or "")
    assert "bad_plan" in plan.traceback  # type: ignore[operator]
    output = next(f for f in failures if f.kind == "output")
    assert "ZeroDivisionError" in str(output.error)
    assert seen[0][1] == [1, 0]


async def test_await_termination(sc: SparkContext) -> None:
    ssc = virtual(sc, Seconds(1))
    ssc.queueStream([[1]]).pprint()
    await ssc.start()
    assert await ssc.awaitTerminationOrTimeout(0.01) is False
    await ssc.stop(stopSparkContext=False)
    assert await ssc.awaitTerminationOrTimeout(0.01) is True
    await ssc.awaitTermination()
    assert ssc.state == "stopped"


async def test_async_with_stops_context_not_spark(sc: SparkContext) -> None:
    async with virtual(sc, Seconds(1)) as ssc:
        _, seen = gather(ssc.queueStream([[5]]))
        await ssc.start()
        await ssc.runUntil(T0 + Seconds(1))
    assert ssc.state == "stopped"
    assert seen[0][1] == [5]
    assert sc.parallelize([1]).count() == 1


async def test_stop_without_grace_cancels_running_jobs_and_drops_queued_events(
    sc: SparkContext,
) -> None:
    import asyncio
    import threading
    import time

    ssc = virtual(sc, Seconds(1))
    tick = ssc.timer(T0 + Seconds(1), None, Seconds(1), "tick")
    started = threading.Event()
    ran: list[int] = []

    def slow(rdd):  # type: ignore[no-untyped-def]
        ran.append(1)
        started.set()
        rdd.map(lambda x: time.sleep(60)).count()

    ssc.queueStream([], default=[1]).foreachRDD(slow).bind(tick)
    await ssc.start()
    advancing = asyncio.ensure_future(ssc.advanceTo(T0 + Seconds(5)))
    while not (started.is_set() and sc.statusTracker().getActiveJobsIds()):
        await asyncio.sleep(0.01)
    began = time.perf_counter()
    await ssc.stop(stopSparkContext=False, stopGracefully=False)
    assert time.perf_counter() - began < 30
    assert ran == [1]
    failures = await advancing
    assert len(failures) == 1 and "cancel" in str(failures[0].error).lower()
