"""No client can make a stop wait: half-sent and trickled requests, slow request heads."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import pytest
from pyspark import SparkContext

from reactive_spark import StreamingContext, Time, VirtualClock
from reactive_spark.sources import http, http_server

from .raw_http import address, exchange, half_sent

T0 = Time.fromDatetime(datetime(2026, 5, 4, tzinfo=UTC))


async def test_a_stopping_context_does_not_wait_for_a_trickled_body(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    rest = ssc.restServer("127.0.0.1", 0, "triggers").post("/run")
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(rest)
    await ssc.start()
    base = f"http://127.0.0.1:{rest.port}/"
    writer = await half_sent(base, "/run", declared=10_000)

    async def trickle() -> None:
        while not writer.is_closing():
            writer.write(b" ")
            await writer.drain()
            await asyncio.sleep(0.1)

    trickling = asyncio.create_task(trickle())
    await asyncio.sleep(0.5)
    started = time.monotonic()
    await ssc.stop(stopSparkContext=False, stopGracefully=False)
    assert time.monotonic() - started < 5
    writer.close()
    trickling.cancel()


async def test_slow_bodies_and_slow_heads_are_closed(
    sc: SparkContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http, "BODY_TIMEOUT", 0.5)
    monkeypatch.setattr(http_server, "IDLE_TIMEOUT", 1.0)
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    rest = ssc.restServer("127.0.0.1", 0, "triggers").post("/run")
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(rest)
    await ssc.start()
    base = f"http://127.0.0.1:{rest.port}/"
    try:
        started = time.monotonic()
        slow_body = await exchange(
            base,
            b"POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n[1,",
        )
        assert slow_body.status == 408
        assert slow_body.json() == {"error": "the body did not arrive within 0.5 s"}
        reader, writer = await asyncio.open_connection(*address(base))
        writer.write(b"POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # the head never ends
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed by the server
        assert time.monotonic() - started < 5
        writer.close()
    finally:
        await ssc.stop(stopSparkContext=False)
