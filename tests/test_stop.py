"""Stopping: REST requests are either run (202) or refused (503), never both; a graceful stop
can be escalated; running jobs are cancelled quietly."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from pyspark import SparkContext

from reactive_spark import Seconds, StreamingContext, SystemClock, Time, VirtualClock
from reactive_spark.errors import ListenError

from .helpers import Recorder, virtual


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
