"""socketTextStream: a receiver on the loop, lines by arrival, reconnects, listener reports;
and the watchdog that warns when a ported program blocks the loop."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pyspark import SparkContext

from reactive_spark import Seconds, StreamingContext, StreamingListener, SystemClock, Time
from reactive_spark.dstream import socket
from reactive_spark.dstream.socket import SocketInputDStream
from reactive_spark.errors import InvalidArgumentError

from .helpers import virtual

T0 = Time(1_700_000_000_000)


class LineServer:
    """A TCP server on a free loopback port that writes the lines it is given to its clients."""

    def __init__(self) -> None:
        self.clients: list[asyncio.StreamWriter] = []
        self.connected = asyncio.Event()
        self.server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> LineServer:
        self.server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.clients.append(writer)
        self.connected.set()

    async def send(self, *lines: str) -> None:
        await self.connected.wait()
        for writer in self.clients:
            writer.write("".join(f"{line}\n" for line in lines).encode())
            await writer.drain()

    async def drop_clients(self) -> None:
        for writer in self.clients:
            writer.close()
        self.clients.clear()
        self.connected.clear()

    async def close(self) -> None:
        await self.drop_clients()
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
            self.server = None


@pytest.fixture
async def server() -> AsyncIterator[LineServer]:
    async with LineServer() as running:
        yield running


async def until(condition: Any, timeout: float = 10) -> None:
    for _ in range(int(timeout * 100)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("timed out")


class Receivers(StreamingListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, bool]] = []

    def onReceiverStarted(self, receiverStarted: Any) -> None:
        self.calls.append(("started", receiverStarted.receiverInfo().active()))

    def onReceiverError(self, receiverError: Any) -> None:
        info = receiverError.receiverInfo()
        self.calls.append(("error", bool(info.lastErrorMessage())))

    def onReceiverStopped(self, receiverStopped: Any) -> None:
        self.calls.append(("stopped", receiverStopped.receiverInfo().active()))


async def test_a_batch_reads_the_lines_that_arrived_since_the_previous_one(
    sc: SparkContext, server: LineServer
) -> None:
    ssc = virtual(sc, Seconds(1), T0)
    lines = ssc.socketTextStream("127.0.0.1", server.port)
    assert isinstance(lines, SocketInputDStream)
    batches: list[list[str]] = []
    counted: list[int] = []
    lines.foreachRDD(lambda rdd: batches.append(rdd.collect()))

    class Records(StreamingListener):
        def onBatchCompleted(self, batch: Any) -> None:
            counted.append(batch.batchInfo().numRecords())

    ssc.addStreamingListener(Records())
    await ssc.start()
    await server.send("a b", "c")
    await until(lambda: lines.pending == 2)
    await ssc.runUntil(T0 + Seconds(1))
    await server.send("d")
    await until(lambda: lines.pending == 1)
    await ssc.runUntil(T0 + Seconds(3))
    await ssc.stop(stopSparkContext=False)
    assert batches == [["a b", "c"], ["d"], []]
    assert counted == [2, 1, 0]


async def test_lines_waiting_for_a_batch_are_bounded_and_none_is_lost(
    sc: SparkContext, server: LineServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(socket, "MAX_BUFFERED_BYTES", 1_000)  # 100 lines of 10 bytes
    ssc = virtual(sc, Seconds(1), T0)
    lines = ssc.socketTextStream("127.0.0.1", server.port)
    batches: list[list[str]] = []
    lines.foreachRDD(lambda rdd: batches.append(rdd.collect()))
    await ssc.start()
    sent = [f"{n:09d}" for n in range(1_000)]
    await server.send(*sent)  # the sockets' buffers hold it all
    for second in range(1, 11):
        await until(lambda: lines.pending == 100)
        await asyncio.sleep(0.05)  # a receiver past its bound would read on meanwhile
        assert lines.pending == 100
        await ssc.runUntil(T0 + Seconds(second))
    await ssc.stop(stopSparkContext=False)
    assert [len(batch) for batch in batches] == [100] * 10
    assert [line for batch in batches for line in batch] == sent


async def test_the_receiver_reconnects_and_reports_to_listeners(
    sc: SparkContext, server: LineServer
) -> None:
    ssc = StreamingContext(sc, 0.2, clock=SystemClock())
    listener = Receivers()
    ssc.addStreamingListener(listener)
    lines = ssc.socketTextStream("127.0.0.1", server.port)
    lines.restartDelay = 0.1  # type: ignore[attr-defined]
    received: list[str] = []
    lines.foreachRDD(lambda rdd: received.extend(rdd.collect()))
    await ssc.start()
    await server.send("first")
    await until(lambda: received == ["first"])
    await server.drop_clients()  # the server closes the connection: the receiver reconnects
    await server.send("second")
    await until(lambda: received == ["first", "second"])
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    assert listener.calls[:3] == [("started", True), ("stopped", False), ("started", True)]
    assert listener.calls[-1] == ("stopped", False)


async def test_a_receiver_without_a_server_reports_errors_and_retries(sc: SparkContext) -> None:
    async with LineServer() as gone:
        port = gone.port
    ssc = StreamingContext(sc, 0.2, clock=SystemClock())
    listener = Receivers()
    ssc.addStreamingListener(listener)
    lines = ssc.socketTextStream("127.0.0.1", port)
    lines.restartDelay = 0.05  # type: ignore[attr-defined]
    lines.foreachRDD(lambda rdd: rdd.count())
    await ssc.start()
    await until(lambda: len(listener.calls) >= 2)
    await ssc.stop(stopSparkContext=False)
    assert listener.calls[:2] == [("error", True), ("error", True)]


async def received_not_read(
    sc: SparkContext, server: LineServer, batch_seconds: float
) -> tuple[StreamingContext, list[str]]:
    """A running context whose receiver holds "x" and "y", which no batch has read yet; and
    what its batches will read."""
    ssc = StreamingContext(sc, batch_seconds, clock=SystemClock())
    lines = ssc.socketTextStream("127.0.0.1", server.port)
    received: list[str] = []
    lines.foreachRDD(lambda rdd: received.extend(rdd.collect()))
    await ssc.start()
    await server.send("x", "y")
    await until(lambda: lines.pending == 2)
    return ssc, received


async def test_a_graceful_stop_processes_what_was_received(
    sc: SparkContext, server: LineServer
) -> None:
    ssc, received = await received_not_read(sc, server, 0.5)
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    assert received == ["x", "y"]


async def test_a_graceful_stops_timeout_covers_reading_what_was_received(
    sc: SparkContext, server: LineServer
) -> None:
    # the next batch is 60 s away: without the timeout, the stop would wait for it to read
    ssc, received = await received_not_read(sc, server, 60)
    stopping = asyncio.create_task(
        ssc.stop(stopSparkContext=False, stopGracefully=True, timeout=0.2)
    )
    done, _ = await asyncio.wait([stopping], timeout=30)
    assert done, "the graceful stop waited past its timeout for a batch to read the lines"
    await stopping
    assert ssc.state == "stopped"
    assert received == []  # the timeout came first: it went on as a stop that does not wait


async def test_lines_no_batch_read_by_the_stop_are_reported_lost(
    sc: SparkContext, server: LineServer
) -> None:
    ssc = StreamingContext(sc, 60, clock=SystemClock())
    errors: list[str] = []

    class Lost(StreamingListener):
        def onReceiverError(self, receiverError: Any) -> None:
            errors.append(receiverError.receiverInfo().lastErrorMessage())

    ssc.addStreamingListener(Lost())
    lines = ssc.socketTextStream("127.0.0.1", server.port)
    lines.foreachRDD(lambda rdd: rdd.count())
    await ssc.start()
    await server.send("x", "y", "z")
    await until(lambda: lines.pending == 3)
    await ssc.stop(stopSparkContext=False)
    assert len(errors) == 1, errors
    assert "stopped with 3 received lines no batch read: they are lost" in errors[0]
    assert lines.pending == 0


def test_socket_arguments(sc: SparkContext) -> None:
    ssc = virtual(sc, Seconds(1))
    with pytest.raises(InvalidArgumentError, match="port must be an int from 1 to 65535"):
        ssc.socketTextStream("localhost", 0)
    with pytest.raises(InvalidArgumentError, match="hostname must be a non-empty str"):
        ssc.socketTextStream("", 9999)
    with pytest.raises(InvalidArgumentError, match="storageLevel must be a pyspark StorageLevel"):
        ssc.socketTextStream("localhost", 9999, "MEMORY")  # type: ignore[arg-type]


async def blocked_loop_warnings(
    sc: SparkContext, caplog: pytest.LogCaptureFixture, **options: bool
) -> list[str]:
    """What the loop watchdog logs while the loop is blocked for 1.6 s."""
    ssc = StreamingContext(sc, 1, clock=SystemClock(), **options)
    ssc.queueStream([[1]]).foreachRDD(lambda rdd: rdd.count())
    await ssc.start()
    with caplog.at_level(logging.WARNING, logger="reactive_spark.loop_watchdog"):
        time.sleep(1.6)  # the porting mistake: a blocking sleep on the loop
        await asyncio.sleep(0.1)
    await ssc.stop(stopSparkContext=False)
    return [r.getMessage() for r in caplog.records if "event loop" in r.getMessage()]


async def test_a_blocked_loop_is_reported_naming_the_blocking_call(
    sc: SparkContext, caplog: pytest.LogCaptureFixture
) -> None:
    [warning] = await blocked_loop_warnings(sc, caplog, watchdog=True)
    assert "blocked for" in warning
    assert "blocked_loop_warnings (test_socket.py:" in warning


async def test_the_watchdog_runs_only_in_debug_mode_or_when_asked(
    sc: SparkContext, caplog: pytest.LogCaptureFixture
) -> None:
    watching = "reactive-spark-loop-watchdog"
    assert await blocked_loop_warnings(sc, caplog) == []
    loop = asyncio.get_running_loop()
    loop.set_debug(True)
    try:
        assert len(await blocked_loop_warnings(sc, caplog)) == 1
    finally:
        loop.set_debug(False)
    assert watching not in {thread.name for thread in threading.enumerate()}
