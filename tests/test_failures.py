"""Failures reach the user: listeners, advanceTo/runUntil and awaitTermination, with the
user's own exception (type, message, executor traceback), the stream and the function."""

from __future__ import annotations

import asyncio
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import reactivex
import reactivex.operators as ops
from pyspark import SparkContext

from reactive_spark import (
    BatchInfo,
    JobFailedError,
    Milliseconds,
    Seconds,
    SourceErrorInfo,
    StreamingContext,
    StreamingListener,
    SystemClock,
    Time,
)
from reactive_spark.failures import MAX_UNRAISED, FailureLedger

from .helpers import Recorder, virtual

T0 = Time.fromDatetime(datetime(2026, 3, 1, tzinfo=UTC))


class Everything(Recorder):
    def __init__(self) -> None:
        super().__init__()
        self.startedBatches: list[BatchInfo] = []
        self.sourceErrors: list[SourceErrorInfo] = []

    def onBatchStarted(self, batch: BatchInfo) -> None:
        self.startedBatches.append(batch)

    def onSourceError(self, error: SourceErrorInfo) -> None:
        self.sourceErrors.append(error)


def special(x: int) -> int:
    if x == 2:
        raise ValueError("This is a special error")
    return x


async def test_a_failure_in_an_executor_shows_the_users_exception(sc: SparkContext) -> None:
    ssc = virtual(sc, Seconds(1), start=T0)
    listener = Everything()
    ssc.addStreamingListener(listener)
    counted: list[int] = []
    ssc.queueStream([[1], [2], [3]]).map(special).foreachRDD(
        lambda rdd: counted.append(rdd.count())
    )
    await ssc.start()
    with pytest.raises(JobFailedError) as caught:
        await ssc.runUntil(T0 + Seconds(3))
    await ssc.stop(stopSparkContext=False)
    assert counted == [1, 1]  # the later batch still ran
    [failure] = caught.value.failures
    message = str(caught.value)
    assert "ValueError: This is a special error" in message
    assert "foreachRDD[" in message and "DefaultTimer#1" in message
    assert "raised in special (test_failures.py:" in message
    assert 'raise ValueError("This is a special error")' in message  # the executor traceback
    assert "Py4JJavaError" not in failure.describe()
    user = failure.userError
    assert user is not None and (user.type, user.message) == (
        "ValueError",
        "This is a special error",
    )
    assert [job.status for job in listener.jobs] == ["succeeded", "failed", "succeeded"]
    assert listener.batches[1].failures == [failure]


async def test_a_failure_in_a_job_that_writes_files_shows_the_users_exception(
    sc: SparkContext, tmp_path: Path
) -> None:
    """Spark reports such a job as "Job aborted."; the executor's traceback is in its cause."""
    ssc = virtual(sc, Seconds(1), start=T0)
    ssc.queueStream([[1], [2]]).map(special).saveAsTextFiles(str(tmp_path / "out"))
    await ssc.start()
    failures = await ssc.advanceTo(T0 + Seconds(2))
    await ssc.stop(stopSparkContext=False)
    [failure] = failures
    user = failure.userError
    assert user is not None and (user.type, user.message) == (
        "ValueError",
        "This is a special error",
    )
    assert "raised in special (test_failures.py:" in failure.describe()


async def test_a_plan_failure_completes_its_batch_with_the_error(sc: SparkContext) -> None:
    ssc = virtual(sc, Seconds(1), start=T0)
    listener = Everything()
    ssc.addStreamingListener(listener)

    def broken_plan(rdd: Any) -> Any:
        raise KeyError("missing column")

    ssc.queueStream([[1]]).transform(broken_plan).foreachRDD(lambda rdd: rdd.count())
    await ssc.start()
    failures = await ssc.advanceTo(T0 + Seconds(1))
    await ssc.stop(stopSparkContext=False)
    [failure] = failures
    assert failure.describe().startswith("plan job of transform[1](")
    assert "KeyError: 'missing column' (raised in " in failure.describe()
    assert len(listener.startedBatches) == 1
    [batch] = listener.batches
    assert batch.failures == [failure] and batch.completedTime is not None


async def test_await_termination_raises_every_failure_once_in_order(sc: SparkContext) -> None:
    """Failures that came before anyone waited are each raised, earliest first: a second one
    that failed while the first was not raised yet was dropped (`reactive-spark run` printed
    only some of the batches that failed as it stopped)."""
    ssc = virtual(sc, Seconds(1), start=T0)

    def fails(time: Any, rdd: Any) -> None:
        raise ValueError(f"batch {time.second}")  # a datetime, as pyspark's

    ssc.queueStream([], default=[1]).foreachRDD(fails)
    await ssc.start()
    try:
        await ssc.advanceTo(T0 + Seconds(3))
        raised = []
        for _ in range(3):
            with pytest.raises(JobFailedError) as failed:
                await ssc.awaitTerminationOrTimeout(0)
            raised.append(str(failed.value.failures[0].userError.message))
        assert raised == ["batch 1", "batch 2", "batch 3"]
        assert await ssc.awaitTerminationOrTimeout(0) is False  # none left, and still running
    finally:
        await ssc.stop(stopSparkContext=False)


def test_failures_past_those_waiting_to_be_raised_are_counted_with_the_next() -> None:
    """At most `MAX_UNRAISED` wait: what comes past them is not lost without a word."""
    ledger = FailureLedger(returns_failures=False)
    failures = [
        SourceErrorInfo(f"source{n}", "map", ValueError(n)) for n in range(MAX_UNRAISED + 3)
    ]
    for failure in failures:
        ledger.note(failure)
    with pytest.raises(JobFailedError) as first:
        ledger.raise_pending()
    assert first.value.failures == [failures[0]]
    assert first.value.__notes__ == [
        f"3 more failures came while {MAX_UNRAISED} waited to be raised: they are not raised "
        "here (they were logged and told to listeners)"
    ]
    for failure in failures[1:MAX_UNRAISED]:
        with pytest.raises(JobFailedError) as raised:
            ledger.raise_pending()
        assert raised.value.failures == [failure] and not hasattr(raised.value, "__notes__")
    ledger.raise_pending()  # none left


async def test_operator_functions_listeners_and_observables_that_fail_are_reported(
    sc: SparkContext,
) -> None:
    ssc = virtual(sc, None, start=T0)
    listener = Everything()
    ssc.addStreamingListener(listener)
    tick = ssc.timer(T0 + Seconds(1), T0 + Seconds(3), Seconds(1), "tick")

    def odd_only(event: Any) -> bool:
        if event.index == 1:
            raise RuntimeError("cannot decide")
        return True

    def scale(event: Any) -> int:
        return 10 // event.index  # the first event divides by zero

    kept = tick.filter(odd_only, name="kept")
    scaled = tick.map(scale, name="scaled")
    piped = tick.pipe(ops.map(lambda e: 1 // 0), name="piped")
    broken = ssc.rxEventSource(reactivex.throw(OSError("feed is down")), "feed")
    seen: list[str] = []
    for source in (kept, scaled, piped, broken):
        source.addListener(lambda event: seen.append(event.source.name))
    tick.addListener(lambda event: 1 / 0 if event.index == 2 else None)
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(tick)
    await ssc.start()
    failures = await ssc.advanceTo(T0 + Seconds(3))
    await ssc.stop(stopSparkContext=False)
    described = sorted(f.describe() for f in failures)
    assert [f.operation for f in listener.sourceErrors] == [
        "observable",
        "map",
        "pipe",
        "filter",
        "listener",
    ]
    assert sorted(f.describe() for f in listener.sourceErrors) == described
    assert any(
        d.startswith("map ") and ".scale of source 'scaled' on tick#0" in d and "ZeroDivision" in d
        for d in described
    )
    assert any("filter" in d and "RuntimeError: cannot decide" in d for d in described)
    assert any("of source 'feed' failed: OSError: feed is down" in d for d in described)
    assert seen.count("kept") == 2 and seen.count("scaled") == 2  # later events still flow


class Crash(BaseException):
    """A simulated driver crash."""


async def test_a_base_exception_in_concurrent_jobs_is_a_crash_not_swallowed(
    sc: SparkContext,
) -> None:
    ssc = StreamingContext(sc, Seconds(1), clock=virtual(sc).clock, maxConcurrentJobs=2)
    data = ssc.queueStream([[1], [2]])
    data.foreachRDD(lambda rdd: rdd.count())

    def die(rdd: Any) -> None:
        raise Crash("driver died")

    data.foreachRDD(die)
    await ssc.start()
    with pytest.raises(Crash):
        await ssc.runUntil(Time(0) + Seconds(2))
    assert not ssc.acceptingEvents
    with pytest.raises(Crash):
        await ssc.awaitTerminationOrTimeout(1)
    await ssc.stop(stopSparkContext=False)


async def test_max_concurrent_jobs_runs_jobs_of_one_event_together(sc: SparkContext) -> None:
    import threading
    import time

    ssc = StreamingContext(sc, Seconds(1), clock=virtual(sc).clock, maxConcurrentJobs=2)
    running: list[tuple[float, float]] = []
    lock = threading.Lock()

    def slow(rdd: Any) -> None:
        began = time.perf_counter()
        rdd.map(lambda x: time.sleep(0.5)).count()
        with lock:
            running.append((began, time.perf_counter()))

    data = ssc.queueStream([[1]])
    data.foreachRDD(slow)
    data.foreachRDD(slow)
    await ssc.start()
    await ssc.runUntil(Time(0) + Seconds(1))
    await ssc.stop(stopSparkContext=False)
    (start_a, end_a), (start_b, end_b) = running
    assert max(start_a, start_b) < min(end_a, end_b)  # both ran at once


async def test_a_watched_directory_that_vanishes_is_reported_and_watched_again(
    sc: SparkContext, tmp_path: Path
) -> None:
    watched = tmp_path / "incoming"
    ssc = StreamingContext(sc, None, clock=SystemClock())
    listener = Everything()
    ssc.addStreamingListener(listener)
    watcher = ssc.fileWatcher(str(watched), "uploads", settle=0.02)
    fired: list[tuple[str, ...]] = []
    watcher.addListener(lambda event: fired.append(event.paths))
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(watcher)
    await ssc.start()
    try:
        await watcher.ready()  # type: ignore[attr-defined]
        shutil.rmtree(watched)
        with pytest.raises(JobFailedError, match=r"watched directory .* vanished"):
            await ssc.awaitTerminationOrTimeout(10)
        watched.mkdir()
        (watched / "late.csv").write_text("1\n")
        for _ in range(200):
            if fired:
                break
            await asyncio.sleep(0.05)
    finally:
        await ssc.stop(stopSparkContext=False)
    assert [e.operation for e in listener.sourceErrors] == ["watch"]
    assert fired and os.path.basename(fired[0][0]) == "late.csv"


async def test_a_source_that_fails_to_start_is_reported_and_raised(sc: SparkContext) -> None:
    ssc = virtual(sc, None, start=T0)
    listener = Everything()
    ssc.addStreamingListener(listener)
    rest = ssc.restServer("256.0.0.1", 0, "unreachable").post("/x")
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(rest)
    with pytest.raises(OSError):
        await ssc.start()
    assert ssc.state == "stopped"
    assert [(e.sourceName, e.operation) for e in listener.sourceErrors] == [
        ("unreachable", "start")
    ]


async def test_a_listener_on_the_loop_sees_every_earlier_batch_done(sc: SparkContext) -> None:
    """Virtual time is a simulation: the clock waits for each instant's batches."""
    ssc = virtual(sc, None, start=T0)
    hourly = ssc.timer(T0 + Milliseconds(3_600_000), None, Milliseconds(3_600_000), "hourly")
    halves = ssc.timer(T0 + Milliseconds(5_400_000), None, Milliseconds(3_600_000), "halves")
    done: list[int] = []

    class Done(StreamingListener):
        def onBatchCompleted(self, batch: BatchInfo) -> None:
            done.append(batch.event.index)  # type: ignore[arg-type]

    ssc.addStreamingListener(Done())
    seen_at_half: list[list[int]] = []
    halves.addListener(lambda event: seen_at_half.append(list(done)))
    ssc.queueStream([], default=[1]).map(lambda x: x).foreachRDD(lambda rdd: rdd.count()).bind(
        hourly
    )
    await ssc.start()
    await ssc.runUntil(T0 + Milliseconds(4 * 3_600_000))
    await ssc.stop(stopSparkContext=False)
    assert seen_at_half == [[0], [0, 1], [0, 1, 2]]


async def test_a_producer_on_a_timer_feeds_the_batch_of_that_tick(
    sc: SparkContext, tmp_path: Path
) -> None:
    from reactive_spark.log import FileLog

    log = FileLog(str(tmp_path / "log"))
    log.create_topic("clicks", partitions=2)
    ssc = virtual(sc, None, start=T0)
    tick = ssc.timer(T0 + Seconds(1), None, Seconds(1), "tick")
    tick.addListener(lambda event: [log.append("clicks", n, partition=n % 2) for n in range(10)])
    sizes: list[int] = []
    stream = ssc.directStream(log, ["clicks"], startingOffsets="earliest")
    stream.foreachRDD(lambda rdd: sizes.append(rdd.count())).bind(tick)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(5))
    await ssc.stop(stopSparkContext=False)
    assert sizes == [10] * 5


def test_the_users_exception_is_read_from_pysparks_converted_errors_too(sc: SparkContext) -> None:
    """Once a SparkSession exists, PySpark raises its own PythonException instead of Py4J's."""
    from pyspark.errors.exceptions.captured import PythonException

    from reactive_spark import UserError

    report = (
        "An exception was thrown from the Python worker:\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/spark/python/pyspark/worker.py", line 1, in main\n'
        '  File "/app/jobs.py", line 3, in parse\n'
        '    raise ValueError("bad record")\n'
        "ValueError: bad record"
    )
    user = UserError.of(PythonException(desc=report, stackTrace=""))
    assert (user.type, user.message, user.location) == (
        "ValueError",
        "bad record",
        "parse (jobs.py:3)",
    )
    assert user.traceback.startswith("Traceback (most recent call last):")
