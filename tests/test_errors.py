"""Bad input raises at definition time naming the argument; failing jobs are reported and the
context keeps running."""

from __future__ import annotations

import argparse
import ast
import builtins
import functools
import importlib
import inspect
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark import SparkContext

import reactive_spark
from reactive_spark import (
    ContextStateError,
    ForeignContextError,
    InvalidArgumentError,
    InvalidCallbackError,
    JobFailedError,
    ReactiveSparkError,
    Seconds,
    StreamingContext,
    StreamingListener,
    SystemClock,
    Time,
    VirtualClock,
)
from reactive_spark.errors import DirectoryNotFoundError

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


def test_a_stopped_spark_context_is_refused_at_once() -> None:
    """A SparkContext an earlier `ssc.stop()` stopped (its default) was accepted: the first
    `queueStream` or `start` then failed with PySpark's `'NoneType' object has no attribute`."""
    stopped = SparkContext.__new__(SparkContext)
    stopped._jsc = None  # what PySpark's `stop()` leaves (no JVM is started for this test)
    with pytest.raises(InvalidArgumentError, match="sparkContext is stopped"):
        StreamingContext(stopped, Seconds(1))


def test_timer_arguments(sc: SparkContext) -> None:
    ssc = virtual(sc, Seconds(1))
    with pytest.raises(InvalidArgumentError, match="period must be positive"):
        ssc.timer(T0, None, Seconds(0), "t")
    with pytest.raises(
        InvalidArgumentError,
        match=r"end must not be before start, got start=1970-01-01T00:00:00\.010Z, "
        r"end=1970-01-01T00:00:00\.005Z",
    ):
        ssc.timer(Time(10), Time(5), Seconds(1), "t")
    with pytest.raises(InvalidArgumentError, match="start must be a Time or a datetime"):
        ssc.timer(10, None, Seconds(1), "t")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="name"):
        ssc.timer(T0, None, Seconds(1), "")


async def _save(rdd: Any) -> None:
    """An output written `async def`, as a newcomer to an asyncio library may."""


class _Heard:
    async def __call__(self, event: Any) -> None:
        pass


class _Listening(StreamingListener):
    async def onBatchCompleted(self, batchCompleted: Any) -> None:  # type: ignore[override]
        pass


def test_an_async_function_is_refused_where_nothing_would_await_it(sc: SparkContext) -> None:
    """`async def` callbacks were accepted, and their bodies never ran: outputs, operators,
    event and streaming listeners alike, with only Python's "never awaited" warning."""
    ssc = virtual(sc, Seconds(1))
    stream = ssc.queueStream([[1]])
    timer = ssc.timer(T0, None, Seconds(1), "ticks")
    calls = [
        ("foreachRDD: func", lambda: stream.foreachRDD(_save)),
        ("transform: func", lambda: stream.transform(functools.partial(_save))),
        ("map: f", lambda: stream.map(_save)),
        ("map: f", lambda: timer.map(_save)),
        ("filter: predicate", lambda: timer.filter(_save)),
        ("addListener: listener must", lambda: timer.addListener(_Heard())),
        (
            "addStreamingListener: _Listening.onBatchCompleted",
            lambda: ssc.addStreamingListener(_Listening()),
        ),
    ]
    for named, call in calls:
        with pytest.raises(InvalidCallbackError, match="async function") as refused:
            call()
        assert str(refused.value).startswith(named), str(refused.value)


async def test_an_output_returning_a_coroutine_fails_its_job(sc: SparkContext) -> None:
    """`foreachRDD(lambda rdd: ssc.stop())` made a coroutine nothing awaited: the job counted
    as succeeded, and the stop never happened. It fails the job, saying why, and the
    coroutine is closed (no "never awaited" warning on top)."""
    ssc = virtual(sc, Seconds(1))
    made: list[Any] = []

    def stop_later(rdd: Any) -> Any:
        made.append(ssc.stop(stopSparkContext=False))
        return made[-1]

    ssc.queueStream([[1]]).foreachRDD(stop_later)
    await ssc.start()
    failures = await ssc.advanceTo(Time(1_000))
    await ssc.stop(stopSparkContext=False)
    assert [type(failure.error) for failure in failures] == [InvalidCallbackError]
    assert "which nothing awaits" in str(failures[0].error)
    assert [inspect.getcoroutinestate(coroutine) for coroutine in made] == ["CORO_CLOSED"]


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
    with pytest.raises(InvalidArgumentError, match=r"got the DStream .*: pass \[stream\]"):
        ssc.transform(stream, lambda rdds: rdds[0])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=r"got a list of them: call ssc.union\(\*st"):
        ssc.union([stream, stream])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="initialRDD must be an RDD or a list of"):
        stream.updateStateByKey(lambda values, state: state, None, 5)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=r"initialRDD .* got 'ab'"):
        stream.updateStateByKey(lambda values, state: state, initialRDD="ab")
    with pytest.raises(InvalidArgumentError, match=r"by keyword, .*\(updateFunc, initialRDD=rdd"):
        stream.updateStateByKey(lambda values, state: state, sc.parallelize([("a", 1)]))  # type: ignore[arg-type]


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
    with pytest.raises(
        InvalidArgumentError,
        match=r"time must not be before the clock's current time 1970-01-01T00:00:00Z, "
        r"got 1969-12-31T23:59:59\.995Z",
    ):
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
    with pytest.raises(ContextStateError, match=r"^advanceTo needs .* VirtualClock"):
        await ssc.advanceTo(Time(5))
    with pytest.raises(ContextStateError, match=r"^runUntil needs .* VirtualClock"):
        await ssc.runUntil(Time(5))  # it said advanceTo, which the caller had not called
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
    assert kinds == [("output", "foreachRDD"), ("plan", "transform")]  # where it failed
    plan = next(f for f in failures if f.kind == "plan")
    assert "cannot plan" in (plan.traceback or "")
    assert "bad_plan" in plan.traceback  # type: ignore[operator]
    output = next(f for f in failures if f.kind == "output")
    assert output.userError is not None and output.userError.type == "ZeroDivisionError"
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


async def test_stop_names_a_bad_stop_spark_context(sc: SparkContext) -> None:
    """`stop("no")` stopped the SparkContext: a string is truthy."""
    ssc = virtual(sc, Seconds(1))
    with pytest.raises(InvalidArgumentError, match="stopSparkContext must be a bool, got 'no'"):
        await ssc.stop("no")  # type: ignore[arg-type]
    for bad in (float("nan"), 10**400):  # NaN ended the graceful part at once; 10**400 no float
        with pytest.raises(InvalidArgumentError, match="timeout must be a non-negative number"):
            await ssc.stop(stopSparkContext=False, stopGracefully=True, timeout=bad)
    await ssc.stop(stopSparkContext=False)
    assert sc.parallelize([1]).count() == 1  # still running


async def test_run_batches_names_a_bad_argument(sc: SparkContext) -> None:
    """It raised whatever its bad argument made Python raise, or returned nothing for zero
    batches."""
    from reactive_spark.errors import InvalidCallbackError
    from reactive_spark.testing import run_batches

    with pytest.raises(InvalidCallbackError, match="run_batches: build must be callable, got None"):
        await run_batches(sc, None, [[1]])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=r"inputs\[0\] must be a list of batches.*got 5"):
        await run_batches(sc, lambda s: s, 5)  # type: ignore[arg-type]
    for one_batch in ([1, 2], ["ab", "cd"]):  # the inner list forgotten
        with pytest.raises(InvalidArgumentError, match=r"inputs\[0\]\[0\] must be a batch"):
            await run_batches(sc, lambda s: s, one_batch)
    with pytest.raises(InvalidArgumentError, match="numBatches must be a positive int, got 0"):
        await run_batches(sc, lambda s: s, [[1]], numBatches=0)
    with pytest.raises(InvalidArgumentError, match="build must return a DStream, got None"):
        await run_batches(sc, lambda s: None, [[1]])  # type: ignore[arg-type,return-value]
    assert await run_batches(sc, lambda s: s.map(str), [[1], [2]]) == [["1"], ["2"]]


def test_collect_names_a_bad_argument(sc: SparkContext) -> None:
    """A stream that was not one failed on its missing foreachRDD; a sort that was not a bool
    was taken as one."""
    from reactive_spark.testing import collect

    ssc = StreamingContext(sc, clock=VirtualClock(T0))
    with pytest.raises(InvalidArgumentError, match="collect: stream must be a DStream, got None"):
        collect(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="sort must be a bool, got 'yes'"):
        collect(ssc.queueStream([[1]]), sort="yes")  # type: ignore[arg-type]


async def test_demo_run_refuses_a_launch_without_the_context_it_starts(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """It made a context of its own, and launch() could not start that one."""
    from reactive_spark.demo import Demo

    async def launch() -> None:
        raise AssertionError("never called")

    with pytest.raises(InvalidArgumentError, match="launch starts the context given as ssc"):
        await Demo(workdir=tmp_path).run(launch=launch)
    assert list(tmp_path.iterdir()) == []  # before it wrote anything


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
    recorder = Recorder()
    ssc.addStreamingListener(recorder)
    await ssc.start()
    advancing = asyncio.ensure_future(ssc.advanceTo(T0 + Seconds(5)))
    while not (started.is_set() and sc.statusTracker().getActiveJobsIds()):
        await asyncio.sleep(0.01)
    began = time.perf_counter()
    await ssc.stop(stopSparkContext=False, stopGracefully=False)
    assert time.perf_counter() - began < 30
    assert ran == [1]
    failures = await advancing
    assert failures == []  # a job cancelled by stop() is not a failure of the user's code
    assert [job.status for job in recorder.jobs] == ["cancelled"]


# -- every error is a ReactiveSparkError -------------------------------------------------------
PACKAGE = Path(reactive_spark.__file__).parent
#: Raising these is part of a protocol, not an error of reactive-spark's own.
PROTOCOL = (NotImplementedError, AttributeError, SystemExit, argparse.ArgumentTypeError)
#: Functions that build aiohttp's HTTP answers (raised to answer a request, never to a caller).
HTTP_ANSWERS = {
    "_error",
    "_retry_later",
    "_too_large",
    "_read_elsewhere",
    "json_error",
    "stopped_answer",
}


def raised_names(tree: ast.AST) -> list[tuple[str, int]]:
    """`(name, line)` of what every `raise X(...)` / `raise X` in a module raises."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name):
                found.append((target.id, node.lineno))
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                found.append((f"{target.value.id}.{target.attr}", node.lineno))
    return found


def test_every_error_the_package_raises_is_a_reactive_spark_error() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__main__.py":  # running it is the command line
            continue
        module_name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        module = importlib.import_module(module_name.removesuffix(".__init__"))
        for name, line in raised_names(ast.parse(path.read_text())):
            head, _, attr = name.partition(".")
            value = getattr(module, head, getattr(builtins, head, None))
            if attr:
                value = getattr(value, attr, None)
            if name in HTTP_ANSWERS or (name.startswith("web.HTTP")):
                continue
            if isinstance(value, type) and issubclass(value, BaseException):
                if not issubclass(value, (ReactiveSparkError, *PROTOCOL)):
                    offenders.append(f"{path.name}:{line} raises {name}")
            elif value is not None or not name.islower():
                offenders.append(f"{path.name}:{line} raises {name} (not an exception class)")
    assert offenders == []


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_durations_name_the_argument(sc: SparkContext, bad: float) -> None:
    ssc = virtual(sc, Seconds(1))
    with pytest.raises(InvalidArgumentError, match="period must be a finite number"):
        ssc.timer(T0, None, bad, "t")
    with pytest.raises(InvalidArgumentError, match="batchDuration must be a finite number"):
        StreamingContext(sc, bad)
    with pytest.raises(InvalidArgumentError, match="seconds must be a finite number"):
        Seconds(bad)


def test_operator_arguments_name_the_argument(sc: SparkContext) -> None:
    ssc = virtual(sc, Seconds(1))
    tick = ssc.timer(T0, None, Seconds(1), "tick")
    with pytest.raises(InvalidArgumentError, match=r"merge: others\[0\] must be an EventSource"):
        tick.merge("x")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="join: other must be an EventSource"):
        tick.join("x", Seconds(1))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="within must be positive"):
        tick.join(ssc.timer(T0, None, Seconds(1), "other"), 0)


def test_window_durations_are_checked_before_callbacks(sc: SparkContext) -> None:
    """pyspark's test_reduce_by_invalid_window: a 0.5 s batch, 0.1 s windows."""
    ssc = virtual(sc, 0.5)
    stream = ssc.queueStream([[1]])
    with pytest.raises(ValueError, match="windowDuration must be a multiple"):
        stream.reduceByKeyAndWindow(None, None, 0.1, 0.1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="slideDuration must be a multiple"):
        stream.reduceByKeyAndWindow(None, None, 1, 0.1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="windowDuration must be a multiple"):
        stream.reduceByWindow(None, None, 0.1, 0.1)  # type: ignore[arg-type]


def test_between_of_every_source_accepts_datetimes(sc: SparkContext, tmp_path: Path) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    ssc = virtual(sc, Seconds(1), start=Time.fromDatetime(start))
    tick = ssc.timer(start, None, Seconds(1), "tick")
    other = ssc.timer(start, None, Seconds(2), "other")
    watcher = ssc.fileWatcher(str(tmp_path), "files")
    sources = [
        tick,
        watcher,
        tick.map(lambda e: 1),
        tick.filter(lambda e: True),
        tick.delay(Seconds(1)),
        tick.merge(other),
        tick.join(other, Seconds(1)),
        tick.pipe(),
        ssc.restServer(None, name="rest"),
    ]
    end = start + timedelta(seconds=4)
    for source in sources:
        assert source.between(start, end) == source.between(
            Time.fromDatetime(start), Time.fromDatetime(end)
        ) or all(
            a.time == b.time
            for a, b in zip(
                source.between(start, end),
                source.between(Time.fromDatetime(start), Time.fromDatetime(end)),
                strict=True,
            )
        )
    assert [e.time for e in tick.between(start, end)] == [
        Time.fromDatetime(start) + Seconds(k) for k in range(5)
    ]


async def test_a_missing_input_directory_raises_at_start_naming_it(
    sc: SparkContext, tmp_path: Path
) -> None:
    """The README's quick example without its logs/ directory."""
    missing = tmp_path / "logs"
    ssc = virtual(sc, Seconds(1))
    ssc.textFileStream(str(missing)).saveAsTextFiles(str(tmp_path / "out"))
    with pytest.raises(DirectoryNotFoundError, match=re.escape(str(missing))):
        await ssc.start()
    assert ssc.state == "stopped"
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob("out-*"))
