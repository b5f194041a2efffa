"""Backpressure where operators look: the console's sources, its batches, Prometheus metrics,
and the console's and REST triggers' answers past a bound."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from pyspark import SparkContext

from reactive_spark import Seconds, StreamingContext, SystemClock, Time, VirtualClock
from reactive_spark.log import FileLog
from reactive_spark.web import create_app

T0 = Time(1_700_000_000_000)
JSON = {"Content-Type": "application/json"}


@pytest.fixture
async def overloaded(
    sc: SparkContext,
) -> AsyncIterator[tuple[StreamingContext, TestClient[Any, Any], threading.Event]]:
    """Three manual sources past their bounds (drop-newest, coalesce, reject); their jobs wait
    for the event the test sets."""
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    rerun = ssc.manualSource("rerun").overflow(2, "drop-newest")
    merged = ssc.manualSource("merged").overflow(2, "coalesce")
    jobs = ssc.manualSource("jobs").overflow(1, "reject")
    release = threading.Event()
    for source in (rerun, merged, jobs):
        ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: release.wait(10)).bind(source)
    async with TestClient(TestServer(create_app(ssc))) as client:
        for value in range(5):
            rerun.trigger(value)
            merged.trigger(value)
        try:
            yield ssc, client, release
        finally:
            release.set()


def metric(text: str, name: str, **labels: str) -> float | None:
    """The value of the sample `name{labels}` in Prometheus' text format, or None."""
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    found = re.search(rf"^{name}\{{{re.escape(wanted)}\}} (\S+)$", text, re.MULTILINE)
    return None if found is None else float(found.group(1))


async def test_sources_and_metrics_show_queue_depth_drops_and_coalesced(overloaded: Any) -> None:
    ssc, client, release = overloaded
    sources = {s["name"]: s for s in await (await client.get("/api/sources")).json()}
    rerun, merged = sources["rerun"], sources["merged"]
    assert (rerun["queueDepth"], rerun["maxQueued"], rerun["overflowPolicy"]) == (
        2,
        2,
        "drop-newest",
    )
    assert (rerun["dropped"], rerun["coalesced"]) == (3, 0)
    assert merged["overflowPolicy"] == "coalesce" and merged["dropped"] == 0
    assert merged["queueDepth"] <= 2 and merged["coalesced"] >= 3
    assert merged["queueDepth"] + merged["coalesced"] == 5  # each event waits or was merged

    text = await (await client.get("/metrics")).text()
    assert metric(text, "reactive_spark_queue_depth", source="rerun") == 2
    assert metric(text, "reactive_spark_queue_depth", source="jobs") == 0
    assert (
        metric(text, "reactive_spark_events_dropped_total", source="rerun", policy="drop-newest")
        == 3
    )
    coalesced = metric(
        text, "reactive_spark_events_coalesced_total", source="merged", policy="coalesce"
    )
    assert coalesced == merged["coalesced"]

    release.set()
    await ssc.advanceTo(T0)  # the jobs run: nothing waits any more
    text = await (await client.get("/metrics")).text()
    assert metric(text, "reactive_spark_queue_depth", source="rerun") == 0
    assert (
        metric(text, "reactive_spark_events_dropped_total", source="rerun", policy="drop-newest")
        == 3
    )


async def test_the_console_fires_past_a_reject_bound_with_503_and_retry_after(
    overloaded: Any,
) -> None:
    ssc, client, release = overloaded
    first = await client.post("/api/sources/jobs/fire", data="null", headers=JSON)
    assert first.status == 202, await first.text()
    refused = await client.post("/api/sources/jobs/fire", data="null", headers=JSON)
    assert refused.status == 503 and refused.headers["Retry-After"] == "1"
    error = (await refused.json())["error"]
    assert "'jobs' has 1 events waiting" in error and "maxQueued=1" in error
    release.set()
    await ssc.advanceTo(T0)
    again = await client.post("/api/sources/jobs/fire", data="null", headers=JSON)
    assert again.status == 202  # room once the queue drained


async def test_an_accepted_event_a_stop_drops_shows_as_dropped_in_its_batch(
    sc: SparkContext,
) -> None:
    """A 202 points at the event's batch: when a stop that does not wait drops the event, the
    batch says "dropped", and the console's live stream tells the viewers."""
    ssc = StreamingContext(sc, None, clock=SystemClock())
    rerun = ssc.manualSource("rerun")
    running, release = threading.Event(), threading.Event()

    def job(rdd: Any) -> None:
        running.set()
        release.wait(30)

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(rerun)
    async with TestClient(TestServer(create_app(ssc))) as client:
        answers = [
            await (await client.post("/api/sources/rerun/fire", data="1", headers=JSON)).json()
            for _ in range(3)
        ]
        live = await client.get("/api/events/stream")
        await asyncio.to_thread(running.wait, 30)  # the first batch runs, the others wait
        stopping = asyncio.ensure_future(ssc.stop(stopSparkContext=False))
        seen = ""
        while "event: dropped" not in seen:  # the stop dropped the two waiting events
            seen += (await asyncio.wait_for(live.content.readany(), 30)).decode()
        release.set()
        await stopping
        statuses = [(await (await client.get(a["status"])).json())["status"] for a in answers]
        assert statuses == ["succeeded", "dropped", "dropped"]
        dropped = json.loads(seen.split("event: dropped\ndata: ")[1].split("\n")[0])
        assert dropped == {"source": "rerun", "reason": "stop", "count": 2}
        live.close()


async def test_metrics_show_a_direct_streams_estimated_rate(
    sc: SparkContext, tmp_path: Path
) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    log = FileLog(str(tmp_path / "log"))
    log.create_topic("clicks", 1)
    clicks = ssc.directStream(log, ["clicks"], backpressure=True, initialRate=1000, minRate=10)
    every = ssc.timer(T0 + Seconds(1), None, Seconds(1), "every")
    clicks.count().foreachRDD(lambda rdd: rdd.collect()).bind(every)
    async with TestClient(TestServer(create_app(ssc))) as client:
        text = await (await client.get("/metrics")).text()
        assert "reactive_spark_estimated_rate{" not in text  # no estimate before two batches
        for second in range(1, 6):
            for n in range(50):
                log.append("clicks", f"click {n}")
            await ssc.advanceTo(T0 + Seconds(second))
        assert clicks.estimatedRate is not None
        text = await (await client.get("/metrics")).text()
        assert metric(text, "reactive_spark_estimated_rate", stream=clicks.name) == pytest.approx(
            clicks.estimatedRate
        )
