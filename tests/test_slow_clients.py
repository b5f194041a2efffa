"""No client can make a stop wait or slow the pipeline: open and unread event streams,
half-sent and trickled requests, slow request heads, hundreds of viewers that never read."""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from pyspark import SparkContext

from reactive_spark import Days, StreamingContext, SystemClock, Time, VirtualClock
from reactive_spark.sources import http, http_server
from reactive_spark.web import Console
from reactive_spark.web.keys import HISTORY_KEY

from .raw_http import address, exchange, half_sent, trickle, unread_stream

T0 = Time.fromDatetime(datetime(2026, 5, 4, tzinfo=UTC))
ANSWER_BYTES = 20_000_000  # far more than a socket's buffers hold


async def reading_stream(url: str) -> tuple[aiohttp.ClientSession, aiohttp.ClientResponse]:
    session = aiohttp.ClientSession()
    response = await session.get(f"{url}api/events/stream")
    assert await response.content.readline() == b": connected\n"
    return session, response


async def test_stops_return_within_seconds_whatever_clients_do(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None, clock=SystemClock())
    rerun = ssc.manualSource("rerun")
    rest = ssc.restServer("127.0.0.1", 0, "triggers").post("/run")
    ssc.queueStream([], default=[1]).count().foreachRDD(lambda rdd: rdd.collect()).bind(rerun).bind(
        rest
    )
    flood = ssc.manualSource("flood")  # bound to nothing: a graceful stop has no jobs to wait for
    console = await Console(ssc, port=0).start()
    session, reader = await reading_stream(console.url)
    unread = [await unread_stream(console.url, "/api/events/stream") for _ in range(3)]
    for index in range(300):  # enough to fill the unread streams' socket buffers
        flood.trigger("x" * 2000 + str(index))  # type: ignore[attr-defined]
    half_console = await half_sent(console.url, "/api/sources/rerun/fire")
    half_rest = await half_sent(f"http://127.0.0.1:{rest.port}/", "/run")
    await asyncio.sleep(0.5)

    started = time.monotonic()
    await console.stop()
    console_stopped = time.monotonic() - started
    assert console_stopped < 5, f"Console.stop() took {console_stopped:.1f} s"
    assert await asyncio.wait_for(reader.content.read(), 5) is not None  # its stream ended
    started = time.monotonic()
    await ssc.stop(stopSparkContext=False, stopGracefully=False)
    context_stopped = time.monotonic() - started
    assert context_stopped < 5, f"ssc.stop() took {context_stopped:.1f} s"
    assert ssc.state == "stopped"
    for writer in [*unread, half_console, half_rest]:
        writer.close()
    reader.close()
    await session.close()


async def test_a_stopping_context_does_not_wait_for_a_trickled_body(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    rest = ssc.restServer("127.0.0.1", 0, "triggers").post("/run")
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(rest)
    await ssc.start()
    base = f"http://127.0.0.1:{rest.port}/"
    writer = await half_sent(base, "/run", declared=10_000)
    trickling = asyncio.create_task(trickle(writer))
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


async def fire_all(ssc: StreamingContext, console: Console, count: int) -> float:
    """Seconds until `count` triggers of `rerun` were all accepted and recorded."""
    rerun = next(source for source in ssc.sources if source.name == "rerun")
    history = console.app[HISTORY_KEY]  # type: ignore[index]
    before = len(history.events(1000))
    started = time.monotonic()
    for index in range(count):
        rerun.trigger({"n": index, "pad": "x" * 300})  # type: ignore[attr-defined]
    while history.sources()[0]["events"] < before + count:  # rerun is the first source
        await asyncio.sleep(0.01)
    return time.monotonic() - started


async def test_viewers_that_never_read_are_dropped_and_do_not_slow_the_pipeline(
    sc: SparkContext,
) -> None:
    ssc = StreamingContext(sc, None, clock=SystemClock())
    ssc.manualSource("rerun")  # bound to nothing: only the console sees its events
    daily = ssc.timer(ssc.clock.now() + Days(1), None, Days(1), "daily")
    ssc.queueStream([]).foreachRDD(lambda rdd: None).bind(daily)
    console = await Console(ssc, port=0).start()
    history = console.app[HISTORY_KEY]  # type: ignore[index]
    try:
        await fire_all(ssc, console, 200)  # warm up
        alone = await fire_all(ssc, console, 1500)
        unread: list[Any] = [
            await unread_stream(console.url, "/api/events/stream") for _ in range(200)
        ]
        while len(history.live) < 200:
            await asyncio.sleep(0.01)
        watched = await fire_all(ssc, console, 1500)
        assert watched < alone * 3 + 0.5, (
            f"{watched:.2f} s with 200 unread viewers, {alone:.2f} s alone"
        )
        deadline = time.monotonic() + 10
        while len(history.live) and time.monotonic() < deadline:
            await fire_all(ssc, console, 200)
        assert len(history.live) == 0  # every viewer that never read was dropped
        for writer in unread:
            writer.close()
    finally:
        await console.stop()
        await ssc.stop(stopSparkContext=False, stopGracefully=False)


async def test_a_stop_drops_answers_a_client_does_not_read() -> None:
    # on Python 3.12+ a connection left open holds asyncio's Server.wait_closed, so the stop
    async def large(request: web.Request) -> web.Response:
        return web.json_response("x" * ANSWER_BYTES)

    app = web.Application()
    app.router.add_get("/large", large)
    server = http_server.HttpServer(app)
    port = await server.start("127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET /large HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    await writer.drain()
    await asyncio.sleep(0.5)  # the answer fills the sockets' buffers; the client reads nothing

    started = time.monotonic()
    await server.stop()
    stopped = time.monotonic() - started
    assert stopped < http_server.SHUTDOWN_TIMEOUT + 3, f"stop() took {stopped:.1f} s"
    received = 0
    with contextlib.suppress(ConnectionResetError):
        while chunk := await asyncio.wait_for(reader.read(1 << 20), 5):
            received += len(chunk)
    writer.close()
    assert received < ANSWER_BYTES, "the connection stayed open until the client read it all"


@pytest.mark.parametrize(
    "path", ["/triggers/run", "/reactive/api/sources/triggers/fire"], ids=["trigger", "fire"]
)
async def test_a_body_trickling_to_a_mounted_trigger_holds_no_service_shutdown(
    sc: SparkContext, path: str
) -> None:
    """Mounted in a service, a trigger's request (or a console fire) is the service's to wait
    for: one trickling its body held the service's shutdown until the body timed out (10 s).
    The stop answers it 503 at once (its event never runs), so the shutdown goes on."""
    from reactive_spark.web import setup

    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    rest = ssc.restServer(None, name="triggers").post("/run")
    ran: list[Any] = []
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: ran.append(1)).bind(rest)
    service = web.Application()
    service.add_subapp("/triggers", rest.app)
    setup(service, ssc)
    runner = web.AppRunner(service, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Content-Length: 1000\r\n\r\n[".encode()
    )
    trickling = asyncio.create_task(trickle(writer))
    await asyncio.sleep(0.5)
    trickling.cancel()  # the body is still short (so the answer comes before it ends), and no
    # byte sent after the server closed makes it reset the connection (losing the answer)
    began = time.monotonic()
    await runner.cleanup()
    took = time.monotonic() - began
    answer = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    assert took < 3, took
    assert answer.startswith(b"HTTP/1.1 503"), answer[:200]
    assert b'"the StreamingContext stopped"' in answer
    assert ran == [] and ssc.state == "stopped"


async def test_a_console_on_its_own_port_answers_a_trickling_fire_503_as_it_stops(
    sc: SparkContext,
) -> None:
    """On its own port, the console's stop is the service's shutdown: a fire whose body still
    arrives is answered 503 at once, as mounted, not cut off without an answer 1 s later (a
    client could not tell a refused fire from one whose event may have fired)."""
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    ran: list[Any] = []
    rerun = ssc.manualSource("rerun")
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: ran.append(1)).bind(rerun)
    console = await Console(ssc, port=0).start()
    reader, writer = await asyncio.open_connection(*address(console.url))
    writer.write(
        b"POST /api/sources/rerun/fire HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n["
    )
    trickling = asyncio.create_task(trickle(writer))
    await asyncio.sleep(0.5)
    trickling.cancel()  # the body is still short, and no byte follows the server's close
    began = time.monotonic()
    await console.stop()
    took = time.monotonic() - began
    answer = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 503"), answer[:200]
    assert b'"the StreamingContext stopped"' in answer
    assert took < 3, took
    assert ran == [] and ssc.state == "stopped"
