"""Stopping: REST requests are either run (202) or refused (503), never both; a graceful stop
can be escalated; running jobs are cancelled quietly; a SparkContext stopped first leaves
nothing to cancel, and a part that fails to stop keeps no other from stopping."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from py4j.protocol import Py4JNetworkError
from pyspark import SparkContext
from reactivex import operators as rx_ops
from reactivex.subject import Subject

from reactive_spark import (
    EventSource,
    Seconds,
    StreamingContext,
    StreamingListener,
    SystemClock,
    Time,
    VirtualClock,
)
from reactive_spark.checkpoint_lock import CheckpointInUseError
from reactive_spark.errors import ContextStateError, ListenError, StopError

from .helpers import ROOT, Recorder, virtual


async def post_all(base: str, paths: list[str]) -> list[tuple[int, Any]]:
    """POST each path at once; a connection the stopped server refused counts as status 0."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as http:

        async def one(path: str) -> tuple[int, Any]:
            try:
                async with http.post(f"{base}{path}") as response:
                    return response.status, await response.json()
            except aiohttp.ClientConnectionError as exc:
                return 0, {"error": str(exc)}

        return await asyncio.gather(*(one(path) for path in paths))


async def test_during_a_graceful_stop_a_request_is_either_run_or_refused(
    sc: SparkContext,
) -> None:
    """The trigger is mounted in a host service, which keeps serving while the context stops."""
    ssc = StreamingContext(sc, None, clock=SystemClock())
    rest = ssc.restServer(None, name="triggers").post("/run")
    host = web.Application()
    host.add_subapp("/triggers", rest.app)
    ran: list[int] = []

    def job(time: Any, rdd: Any, event: Any) -> None:
        rdd.count()
        ran.append(event.instanceId)

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(rest)
    stopping: list[asyncio.Future[None]] = []

    def stop_in_the_middle(event: Any) -> None:  # while later requests are in flight
        if event.index == 10:
            stopping.append(asyncio.ensure_future(ssc.stop(False, stopGracefully=True)))

    rest.addListener(stop_in_the_middle)
    async with TestServer(host) as server:
        await ssc.start()
        base = str(server.make_url("/triggers"))
        answers = await post_all(base, ["/run"] * 5)
        for _ in range(6):
            answers += await post_all(base, ["/run"] * 5)
            await asyncio.sleep(0.05)
        await stopping[0]
    accepted = sorted(body["instanceId"] for status, body in answers if status == 202)
    refused = [body for status, body in answers if status != 202]
    assert {status for status, _ in answers} == {202, 503}
    assert len(accepted) >= 11 and len(accepted) + len(refused) == 35
    assert sorted(ran) == accepted  # every 202 ran, nothing else did
    assert all("stopped" in body["error"] for body in refused)


async def test_after_a_scheduler_crash_rest_refuses_requests(sc: SparkContext) -> None:
    class Crash(BaseException):
        pass

    ssc = StreamingContext(sc, None, clock=SystemClock())
    rest = ssc.restServer("127.0.0.1", 0, "triggers").post("/run")

    def die(rdd: Any) -> None:
        raise Crash("driver died")

    ssc.queueStream([], default=[1]).foreachRDD(die).bind(rest)
    await ssc.start()
    base = f"http://127.0.0.1:{rest.port}"
    [(status, _)] = await post_all(base, ["/run"])
    assert status == 202
    with pytest.raises(Crash):
        await ssc.awaitTerminationOrTimeout(10)
    [(status, body)] = await post_all(base, ["/run"])
    assert status == 503 and "stopped" in body["error"]
    await ssc.stop(stopSparkContext=False)


def slow_job(started: threading.Event) -> Any:
    def job(rdd: Any) -> None:
        started.set()
        rdd.map(lambda x: time.sleep(60)).count()

    return job


async def wait_until_running(sc: SparkContext, started: threading.Event) -> None:
    while not (started.is_set() and sc.statusTracker().getActiveJobsIds()):
        await asyncio.sleep(0.01)


async def test_a_graceful_stop_that_timed_out_is_escalated(
    sc: SparkContext, caplog: pytest.LogCaptureFixture
) -> None:
    ssc = virtual(sc, Seconds(1))
    started = threading.Event()
    recorder = Recorder()
    ssc.addStreamingListener(recorder)
    ssc.queueStream([], default=[1]).foreachRDD(slow_job(started))
    await ssc.start()
    advancing = asyncio.ensure_future(ssc.advanceTo(ssc.clock.now() + Seconds(5)))
    await wait_until_running(sc, started)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(ssc.stop(stopSparkContext=False, stopGracefully=True), 0.5)
    assert sc.statusTracker().getActiveJobsIds()  # the graceful stop left it running
    caplog.clear()
    with caplog.at_level(logging.INFO):
        began = time.perf_counter()
        await ssc.stop(stopSparkContext=False, stopGracefully=False)
        assert time.perf_counter() - began < 20
        assert await advancing == []
    assert [job.status for job in recorder.jobs] == ["cancelled"]  # later ticks never ran
    cancelled = [
        r for r in caplog.records if r.getMessage().startswith("reactive-spark: cancelled")
    ]
    assert len(cancelled) == 1 and cancelled[0].levelno == logging.INFO
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not [r for r in caplog.records if "Py4J" in r.getMessage() or r.exc_info]
    await ssc.awaitTermination()  # stopped, nothing to raise


async def test_stops_called_together_stop_once_and_a_hard_one_escalates(
    sc: SparkContext, caplog: pytest.LogCaptureFixture
) -> None:
    """Two graceful stops at once: the second waits for the first (it ran every step again,
    beside it). A stop that does not wait, called meanwhile, still cuts the first short."""
    ssc = virtual(sc, Seconds(1))
    ran: list[int] = []
    ssc.queueStream([], default=[1]).foreachRDD(lambda t, rdd: ran.append(t.second))
    await ssc.start()
    for second in (1, 2, 3):
        ssc.clock.advanceTo(Time(second * 1000))  # three batches queued, none run yet
    with caplog.at_level(logging.INFO, logger="reactive_spark.lifecycle"):
        await asyncio.gather(
            ssc.stop(stopSparkContext=False, stopGracefully=True),
            ssc.stop(stopSparkContext=False, stopGracefully=True),
        )
    stopped = [r for r in caplog.records if r.getMessage() == "StreamingContext stopped"]
    assert len(stopped) == 1 and ran == [1, 2, 3]

    ssc = virtual(sc, Seconds(1))
    started = threading.Event()
    ssc.queueStream([], default=[1]).foreachRDD(slow_job(started))
    await ssc.start()
    advancing = asyncio.ensure_future(ssc.advanceTo(ssc.clock.now() + Seconds(5)))
    await wait_until_running(sc, started)
    graceful = asyncio.ensure_future(ssc.stop(stopSparkContext=False, stopGracefully=True))
    await asyncio.sleep(0.2)
    began = time.perf_counter()
    await ssc.stop(stopSparkContext=False, stopGracefully=False)
    await graceful
    assert time.perf_counter() - began < 20 and await advancing == []

    # a graceful stop within a timeout does not wait past it for one that has none
    ssc = virtual(sc, Seconds(1))
    gate, ran = threading.Event(), []

    def held(rdd: Any) -> None:
        ran.append(1)
        gate.wait(30)

    ssc.queueStream([], default=[1]).foreachRDD(held)
    await ssc.start()
    for second in (1, 2):
        ssc.clock.advanceTo(Time(second * 1000))  # the first runs (held), the second waits
    while not ran:
        await asyncio.sleep(0.01)
    unbounded = asyncio.ensure_future(ssc.stop(stopSparkContext=False, stopGracefully=True))
    await asyncio.sleep(0.1)
    threading.Timer(1.0, gate.set).start()  # the running batch ends once it is cancelled
    began = time.perf_counter()
    await ssc.stop(stopSparkContext=False, stopGracefully=True, timeout=0.5)
    assert time.perf_counter() - began < 5
    await unbounded
    assert ran == [1]  # the queued batch was dropped by the escalation


async def test_a_graceful_stop_returns_once_a_stop_beside_it_has_stopped_every_part(
    sc: SparkContext,
) -> None:
    """A stop that does not wait, called beside a graceful one, stops a source that takes a
    while; the graceful stop found the source being stopped, and returned (and went on to
    close what the other still used) before it had stopped."""

    class SlowToStop(EventSource):
        stopped = False

        def start(self) -> None:
            pass

        async def stop(self) -> None:
            await asyncio.sleep(0.5)
            self.stopped = True

        def toProduct(self) -> tuple[Any, ...]:
            return (self.name,)

    ssc = virtual(sc, Seconds(1))
    slow = SlowToStop(ssc, "slow")
    running, gate = threading.Event(), threading.Event()

    def held(rdd: Any) -> None:
        running.set()
        gate.wait(30)

    ssc.queueStream([], default=[1]).foreachRDD(held)
    await ssc.start()
    ssc.clock.advanceTo(Time(1000))
    await asyncio.get_running_loop().run_in_executor(None, running.wait, 30)
    graceful = asyncio.ensure_future(ssc.stop(stopSparkContext=False, stopGracefully=True))
    await asyncio.sleep(0.1)  # it waits for the batch
    hard = asyncio.ensure_future(ssc.stop(stopSparkContext=False, stopGracefully=False))
    await asyncio.sleep(0.1)  # it stops the slow source
    gate.set()  # the batch ends: the graceful stop goes on
    await graceful
    assert slow.stopped
    await hard


async def test_a_job_reaching_spark_after_the_stops_first_cancel_is_cancelled_too(
    sc: SparkContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark cancels only the jobs it runs: one submitted just after the stop's cancel (a
    first job on a cold JVM takes a while to get there) is cancelled by the next one."""
    from reactive_spark.batch_runner import BatchRunner

    cancelled = threading.Event()
    cancel = BatchRunner.cancel_spark_jobs

    def cancel_and_tell(self: Any) -> bool:
        cancelling = cancel(self)
        cancelled.set()
        return cancelling

    monkeypatch.setattr(BatchRunner, "cancel_spark_jobs", cancel_and_tell)
    started = threading.Event()

    def late_job(rdd: Any) -> None:
        started.set()
        cancelled.wait(30)  # the stop cancelled what ran: nothing yet
        rdd.map(lambda x: time.sleep(60)).count()

    ssc = virtual(sc, Seconds(1))
    recorder = Recorder()
    ssc.addStreamingListener(recorder)
    ssc.queueStream([], default=[1]).foreachRDD(late_job)
    await ssc.start()
    advancing = asyncio.ensure_future(ssc.advanceTo(ssc.clock.now() + Seconds(1)))
    await asyncio.get_running_loop().run_in_executor(None, started.wait, 30)
    await ssc.stop(stopSparkContext=False, stopGracefully=False)  # no StopError: it ended
    assert await asyncio.wait_for(advancing, 10) == []
    assert [job.status for job in recorder.jobs] == ["cancelled"]


async def test_stop_accepts_pysparks_spelling(sc: SparkContext) -> None:
    ssc = virtual(sc, Seconds(1))
    seen: list[int] = []
    ssc.queueStream([[1, 2]]).foreachRDD(lambda rdd: seen.append(rdd.count()))
    await ssc.start()
    await ssc.advanceTo(ssc.clock.now() + Seconds(1))
    await ssc.stop(False, stopGraceFully=True)
    assert seen == [2] and ssc.state == "stopped"


async def test_a_jobs_spark_group_and_tag_do_not_outlive_it(sc: SparkContext) -> None:
    """Spark work after a job, on the same thread (the next batch's planning), is not the job's:
    it is neither counted in the job's group nor cancelled with the context's jobs."""
    ssc = virtual(sc, Seconds(1))
    seen: list[tuple[str | None, list[str]]] = []

    def look(rdd: Any) -> Any:  # runs while the batch is planned, where the last job ran
        seen.append((sc.getLocalProperty("spark.jobGroup.id"), sorted(sc.getJobTags())))
        return rdd

    ssc.queueStream([[1], [2]]).transform(look).foreachRDD(lambda rdd: rdd.count())
    await ssc.start()
    await ssc.advanceTo(ssc.zeroTime + Seconds(2))
    await ssc.stop(stopSparkContext=False)
    assert seen == [(None, []), (None, [])]


async def test_a_start_that_fails_stops_every_part_it_started(sc: SparkContext) -> None:
    # the REST trigger starts last: by then the worker, the watchdog and the freeze's holder
    # are in place, and the failed start takes them all down again
    ssc = StreamingContext(sc, None, clock=VirtualClock(Time(0)), freezeHeap=True, watchdog=True)
    rest = ssc.restServer("256.256.256.256", 0, "nowhere", token="t").post("/x")
    ssc.queueStream([]).bind(rest)
    with pytest.raises(ListenError):
        await ssc.start()
    assert ssc.state == "stopped"
    assert StreamingContext.getActive() is None
    assert gc.get_freeze_count() == 0
    ours = [t.name for t in threading.enumerate() if t.name.startswith("reactive-spark")]
    assert ours == [], ours  # the worker, the watchdog, the blocking calls: all ended
    await ssc.stop(stopSparkContext=False)  # a second stop is a no-op
    assert ssc.state == "stopped"


def values_run(ssc: StreamingContext, source: Any) -> list[Any]:
    """The values of `source`'s events whose batch ran, in order (bound to a queue stream)."""
    ran: list[Any] = []
    ssc.queueStream([], default=[1]).foreachRDD(lambda t, rdd, event: ran.append(event.value)).bind(
        source
    )
    return ran


@pytest.mark.parametrize("timeout", [None, 60.0])
async def test_a_graceful_stop_runs_what_derived_sources_make_of_waiting_events(
    sc: SparkContext, timeout: float | None
) -> None:
    """Events still waiting behind a full queue when a graceful stop begins go through their
    operators too: every one of them, and what map, filter and merge make of it, runs."""
    ssc = StreamingContext(sc, None, clock=VirtualClock(Time(0)), maxQueuedEvents=20)
    left: Subject[int] = Subject()
    right: Subject[int] = Subject()
    a, b = ssc.rxEventSource(left, "a"), ssc.rxEventSource(right, "b")
    routed = a.map(lambda e: e.value * 2).filter(lambda e: e.value % 4 == 0).merge(b)
    ran = values_run(ssc, routed)
    await ssc.start()
    for value in range(200):
        left.on_next(value)
        right.on_next(-value - 1)
    await ssc.stop(stopSparkContext=False, stopGracefully=True, timeout=timeout)
    assert sorted(v for v in ran if v < 0) == sorted(-v - 1 for v in range(200))
    assert sorted(v for v in ran if v >= 0) == [v * 2 for v in range(0, 200, 2)]


async def test_a_graceful_stop_runs_what_pipe_makes_of_waiting_events(
    sc: SparkContext, caplog: pytest.LogCaptureFixture
) -> None:
    # `pipe` posts what its RxPY operators emit: a stop that drains lets those posts in
    ssc = StreamingContext(sc, None, clock=VirtualClock(Time(0)), maxQueuedEvents=20)
    left: Subject[int] = Subject()
    piped = ssc.rxEventSource(left, "a").pipe(rx_ops.map(lambda event: event))
    ran = values_run(ssc, piped)
    await ssc.start()
    for value in range(200):
        left.on_next(value)
    with caplog.at_level(logging.WARNING):
        await ssc.stop(stopSparkContext=False, stopGracefully=True)
    assert ran == list(range(200))
    assert not [record for record in caplog.records if "dropping" in record.getMessage()]


async def test_a_request_a_graceful_stop_refuses_never_runs(sc: SparkContext) -> None:
    # 202 means it runs, 503 that it does not: a request waiting for room when a graceful stop
    # begins is let through by the drain, and answered 202
    ssc = StreamingContext(sc, None, clock=SystemClock())
    rest = ssc.restServer("127.0.0.1", 0, "jobs").post("/run")
    mapped = rest.map(lambda event: event.index).overflow(1)
    release = threading.Event()
    ran: list[Any] = []

    def job(time: Any, rdd: Any, event: Any) -> None:
        release.wait(30)
        ran.append(event.value)

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(mapped)
    await ssc.start()
    url = f"http://127.0.0.1:{rest.port}/run"
    async with aiohttp.ClientSession() as session:
        first = await session.post(url)
        assert first.status == 202
        second = asyncio.ensure_future(session.post(url))
        deadline = asyncio.get_running_loop().time() + 30
        while rest.queueDepth < 1 and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)  # the second waits: the first holds the worker
        stopping = asyncio.ensure_future(
            ssc.stop(stopSparkContext=False, stopGracefully=True, timeout=30)
        )
        await asyncio.sleep(0.2)
        release.set()
        answer = await asyncio.wait_for(second, 30)
        await stopping
    assert (answer.status, ran) == (202, [0, 1])


def our_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("reactive-spark")]


@pytest.mark.parametrize("how", ["host", "jvm"])
def test_a_context_whose_spark_context_stopped_first_stops_completely(how: str) -> None:
    """The host stops Spark before the context (tests/stopped_spark_app.py, on a SparkContext
    of its own): there are no Spark jobs left to cancel, and every part of the context stops."""
    child = subprocess.run(
        [sys.executable, "-m", "tests.stopped_spark_app", how],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    lines = [line for line in child.stdout.splitlines() if line.startswith("seen: ")]
    assert child.returncode == 0 and lines, child.stderr[-3000:]
    seen = json.loads(lines[0].removeprefix("seen: "))
    assert {"reactive-spark-worker", "reactive-spark-loop-watchdog"} <= set(seen["threads before"])
    assert seen["stop"] == "returned"
    assert seen["state"] == "stopped"
    assert seen["awaitTermination"] == "returned"
    assert seen["threads"] == []
    assert seen["second stop"] == "returned"
    assert seen["threads after"] == []


async def test_a_part_that_fails_to_stop_keeps_no_other_from_stopping(
    sc: SparkContext, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Spark cannot cancel the running jobs (its JVM is gone): every other part stops all the
    same, then that failure is raised as a `StopError` naming it; a second stop does nothing."""
    lost = Py4JNetworkError("Answer from Java side is empty")

    def unreachable(tag: str) -> None:
        raise lost

    ssc = virtual(
        sc, Seconds(1), freezeHeap=True, watchdog=True, checkpoint=str(tmp_path / "checkpoint")
    )
    ssc.queueStream([[1]]).foreachRDD(lambda rdd: rdd.count())
    await ssc.start()
    await ssc.advanceTo(ssc.zeroTime + Seconds(1))
    terminated = asyncio.ensure_future(ssc.awaitTermination())
    assert "reactive-spark-worker" in our_threads()
    monkeypatch.setattr(sc, "cancelJobsWithTag", unreachable)
    with pytest.raises(StopError, match="cancelling its running Spark jobs") as raised:
        await ssc.stop(stopSparkContext=False)
    assert raised.value.__cause__ is lost
    assert [error for _, _, error in raised.value.failures] == [lost]
    assert "stop the SparkContext and start a new one" in str(raised.value)
    assert ssc.state == "stopped"
    assert StreamingContext.getActive() is None
    await asyncio.wait_for(terminated, 10)  # returned: nothing to raise
    assert our_threads() == []  # the worker, the watchdog, the blocking calls: all ended
    assert gc.get_freeze_count() == 0  # the heap is released
    await asyncio.wait_for(ssc.stop(stopSparkContext=False), 10)  # a no-op, as PySpark's


async def test_a_stop_does_not_wait_for_a_batch_stuck_in_a_function_of_yours(
    sc: SparkContext, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A foreachRDD stuck in a call that never returns (a webhook that never answers) is left
    to end in its thread: the stop goes on, says so, and nothing the batch does later counts."""
    stuck, release = threading.Event(), threading.Event()
    checkpoint = str(tmp_path / "checkpoint")

    def hangs(rdd: Any) -> None:
        stuck.set()
        release.wait(60)

    counted: list[int] = []
    ssc = virtual(sc, Seconds(1), checkpoint=checkpoint)
    recorder = Recorder()
    ssc.addStreamingListener(recorder)
    inputs = ssc.queueStream([], default=[1])
    inputs.foreachRDD(hangs)
    inputs.foreachRDD(lambda rdd: counted.append(rdd.count()))  # the batch's next job
    await ssc.start()
    advancing = asyncio.ensure_future(ssc.advanceTo(ssc.zeroTime + Seconds(1)))
    await asyncio.get_running_loop().run_in_executor(None, stuck.wait, 30)
    try:
        stopping = asyncio.ensure_future(ssc.stop(stopSparkContext=False, timeout=0.1))
        done, _ = await asyncio.wait([stopping], timeout=30)
        assert done, "the stop waited for the stuck batch"
        with pytest.raises(StopError, match="did not end 2 s after its Spark jobs") as raised:
            await stopping
        assert "stuck in a call that does not return" in str(raised.value)
        assert ssc.state == "stopped"
        await asyncio.wait_for(ssc.awaitTermination(), 10)
        assert await asyncio.wait_for(advancing, 10) == []
    finally:
        release.set()
    with caplog.at_level(logging.WARNING):
        for _ in range(100):  # the worker ends once the batch returns
            if "reactive-spark-worker" not in our_threads():
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.1)  # what the worker handed to the loop, if anything, ran
    assert "reactive-spark-worker" not in our_threads()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    assert counted == []  # its next job never started
    assert recorder.jobs == [] and recorder.batches == []  # nor were listeners told of it
    # the batch was planned and never recorded done: a restart runs it again
    again: list[int] = []
    second = virtual(sc, Seconds(1), checkpoint=checkpoint)
    second.queueStream([], default=[1]).foreachRDD(lambda t, rdd: again.append(1))
    await second.start()
    await second.stop(stopSparkContext=False)
    assert again == [1]


async def test_the_checkpoint_stays_held_until_a_batch_a_stop_left_running_ends(
    sc: SparkContext, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A batch a stop left stuck in a function of yours may still write its outputs: a driver
    started on the checkpoint meanwhile, which runs that batch again, is refused until the
    batch ends; then it starts and runs it again."""
    stuck, release = threading.Event(), threading.Event()
    checkpoint = str(tmp_path / "checkpoint")

    def hangs(rdd: Any) -> None:
        stuck.set()
        release.wait(60)

    ssc = virtual(sc, Seconds(1), checkpoint=checkpoint)
    ssc.queueStream([], default=[1]).foreachRDD(hangs)
    await ssc.start()
    advancing = asyncio.ensure_future(ssc.advanceTo(ssc.zeroTime + Seconds(1)))
    await asyncio.get_running_loop().run_in_executor(None, stuck.wait, 30)
    again: list[int] = []
    second = virtual(sc, Seconds(1), checkpoint=checkpoint)
    second.queueStream([], default=[1]).foreachRDD(lambda t, rdd: again.append(1))
    try:
        with caplog.at_level(logging.WARNING), pytest.raises(StopError, match="did not end"):
            await asyncio.wait_for(ssc.stop(stopSparkContext=False), 30)
        assert "stays held until the batch the stop left running ends" in caplog.text
        assert await asyncio.wait_for(advancing, 10) == []
        with pytest.raises(CheckpointInUseError, match=f"pid {os.getpid()}"):
            await second.start()
    finally:
        release.set()
    for _ in range(100):  # the worker ends once the batch returns, and lets the directory go
        if "reactive-spark-worker" not in our_threads():
            break
        await asyncio.sleep(0.05)
    third = virtual(sc, Seconds(1), checkpoint=checkpoint)
    third.queueStream([], default=[1]).foreachRDD(lambda t, rdd: again.append(1))
    await third.start()
    await third.stop(stopSparkContext=False)
    assert again == [1]  # the batch never recorded done runs again


async def stuck_in_its_first_batch(
    sc: SparkContext,
) -> tuple[StreamingContext, threading.Event, asyncio.Future[Any]]:
    """A started context whose first batch is stuck in a function of yours until the event
    returned is set; and the `advanceTo` that runs the batch."""
    stuck, release = threading.Event(), threading.Event()

    def hangs(rdd: Any) -> None:
        stuck.set()
        release.wait(60)

    ssc = virtual(sc, Seconds(1))
    ssc.queueStream([], default=[1]).foreachRDD(hangs)
    await ssc.start()
    advancing = asyncio.ensure_future(ssc.advanceTo(ssc.zeroTime + Seconds(1)))
    await asyncio.get_running_loop().run_in_executor(None, stuck.wait, 30)
    return ssc, release, advancing


async def the_worker_ended() -> None:
    """Wait until the worker thread ended (once the batch left in it returned)."""
    for _ in range(100):
        if "reactive-spark-worker" not in our_threads():
            break
        await asyncio.sleep(0.05)
    assert "reactive-spark-worker" not in our_threads()


async def test_a_graceful_stop_escalated_beside_it_ends_when_the_stuck_batch_is_left(
    sc: SparkContext,
) -> None:
    """A graceful stop waits for a batch stuck in a function of yours; a stop that does not
    wait, called beside it (a second SIGTERM), leaves the batch in its thread and says so. The
    graceful stop then ends too, rather than waiting for the thread it left."""
    ssc, release, advancing = await stuck_in_its_first_batch(sc)
    try:
        graceful = asyncio.ensure_future(ssc.stop(stopSparkContext=False, stopGracefully=True))
        await asyncio.sleep(0.2)
        assert not graceful.done()  # it waits for the batch
        with pytest.raises(StopError, match="did not end 2 s after its Spark jobs"):
            await asyncio.wait_for(ssc.stop(stopSparkContext=False), 30)
        done, _ = await asyncio.wait([graceful], timeout=10)
        assert done, "the graceful stop waited for the batch the other stop left"
        await graceful  # the stop that left the batch said so
        assert ssc.state == "stopped"
        assert await asyncio.wait_for(advancing, 10) == []
    finally:
        release.set()
    await the_worker_ended()


@pytest.mark.parametrize("apart", [0.05, 0.0])
async def test_stops_that_do_not_wait_called_together_leave_a_stuck_batch_once(
    sc: SparkContext, apart: float
) -> None:
    """Two stops that do not wait, called one beside the other (a second and a third SIGTERM)
    while a batch is stuck in a function of yours: the one whose 2 s passed first left the
    batch, and the other then waited for the worker thread to end, and so did the first,
    which waits for the other to stop its parts: both waited for the function to return.
    Called at once, both found their 2 s passed before either left it, and both said so."""
    ssc, release, advancing = await stuck_in_its_first_batch(sc)
    try:
        first = asyncio.ensure_future(ssc.stop(stopSparkContext=False))
        await asyncio.sleep(apart)
        second = asyncio.ensure_future(ssc.stop(stopSparkContext=False))
        done, _ = await asyncio.wait([first, second], timeout=15)
        assert done == {first, second}, "a stop waited for the stuck batch"
        raised = [error for error in (first.exception(), second.exception()) if error]
        assert len(raised) == 1, raised  # the one that left the batch says so
        assert isinstance(raised[0], StopError) and "did not end 2 s" in str(raised[0])
        assert ssc.state == "stopped"
        assert await asyncio.wait_for(advancing, 10) == []
    finally:
        release.set()
    await the_worker_ended()


async def test_a_stop_abandoning_a_stuck_batch_reports_the_rest_of_its_run_dropped(
    sc: SparkContext,
) -> None:
    """Events accepted together reach the worker as one run: a stop that leaves the first one's
    batch stuck in a function of yours reports the others dropped now, once, and nothing waits
    any more (they were reported only when the function returned, if it ever did)."""
    stuck, release = threading.Event(), threading.Event()

    def hangs(rdd: Any) -> None:
        stuck.set()
        release.wait(60)

    dropped: list[tuple[str, int]] = []

    class Drops(StreamingListener):
        def onEventsDropped(self, events: Any) -> None:
            dropped.append((events.reason, events.count))

    ssc = virtual(sc)
    ssc.addStreamingListener(Drops())
    source = ssc.manualSource("m")
    ssc.queueStream([], default=[1]).foreachRDD(hangs).bind(source)
    await ssc.start()
    for value in range(3):
        source.trigger(value)
    await asyncio.get_running_loop().run_in_executor(None, stuck.wait, 30)
    try:
        with pytest.raises(StopError, match="did not end 2 s after its Spark jobs"):
            await ssc.stop(stopSparkContext=False, stopGracefully=True, timeout=0.5)
        assert dropped == [("stop", 2)]
        assert source.queueDepth == 1  # the batch left running
    finally:
        release.set()
    for _ in range(100):  # the worker ends once the batch returns
        if "reactive-spark-worker" not in our_threads():
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.1)  # what the worker handed to the loop, if anything, ran
    assert dropped == [("stop", 2)]  # not again when the batch returned
    assert source.queueDepth == 0


@pytest.mark.parametrize("jobs", [1, 2])
async def test_a_stop_awaited_in_a_batch_is_refused_at_once(sc: SparkContext, jobs: int) -> None:
    """`asyncio.run(ssc.stop())` in a `foreachRDD` function, as ported from PySpark's
    `ssc.stop()` there, waited for the batch it ran in: `advanceTo`, later stops and the
    process hung. It is refused at once, as the batch's failure, saying how to ask for it,
    whether the output runs in the worker or in a pool of its own (`maxConcurrentJobs`)."""
    ssc = virtual(sc, Seconds(1), maxConcurrentJobs=jobs)

    def stop_here(rdd: Any) -> None:
        asyncio.run(ssc.stop(stopSparkContext=False))

    ssc.queueStream([[1]]).foreachRDD(stop_here)
    ssc.queueStream([[2]]).foreachRDD(lambda rdd: None)  # two jobs: a pool runs them at 2
    await ssc.start()
    failures = await asyncio.wait_for(ssc.advanceTo(Time(1_000)), 60)
    assert [type(failure.error).__name__ for failure in failures] == ["ContextStateError"]
    assert "awaited in a batch" in str(failures[0].error)
    assert ssc.state == "active"
    await asyncio.wait_for(ssc.stop(stopSparkContext=False), 60)


def test_a_context_awaited_on_another_loop_than_its_start_says_so(sc: SparkContext) -> None:
    """A second `asyncio.run` after `asyncio.run(ssc.start())`: `runUntil` raised asyncio's
    "Event loop is closed" from deep inside, and `awaitTerminationOrTimeout` waited out its
    timeout on a context that could run nothing, still saying it was active."""
    ssc = virtual(sc, Seconds(1))
    ssc.queueStream([[1]]).foreachRDD(lambda rdd: None)
    started_on = asyncio.new_event_loop()
    try:
        started_on.run_until_complete(ssc.start())
        for awaited in (
            ssc.runUntil(Time(1_000)),
            ssc.awaitTerminationOrTimeout(3),
            ssc.stop(stopSparkContext=False),
        ):
            with pytest.raises(ContextStateError, match="on the event loop the StreamingContext"):
                asyncio.run(asyncio.wait_for(awaited, 30))  # they hung, or failed elsewhere
        assert ssc.state == "active"
        started_on.run_until_complete(ssc.stop(stopSparkContext=False))
    finally:
        started_on.close()
    assert ssc.state == "stopped"
