"""`socketTextStream`: lines of text received over TCP by a receiver on the event loop.

As Spark's socket receiver, it connects to `hostname:port` and reads UTF-8 lines (each ending
in a newline character); when the connection fails or ends it tries again after a delay
(`spark.streaming.receiverRestartDelay`, 2 s). Each line is stamped with its arrival time on
the context's clock, and a batch reads the lines that arrived in (previous event, this event],
however late the batch runs. Lines are grouped into partitions by arrival, one per
`spark.streaming.blockInterval` (200 ms), as Spark's blocks are. The lines of each batch go into
the checkpoint's write-ahead log, so a batch re-run after a crash reads them again.

What waits for a batch is bounded: past `MAX_BUFFERED_BYTES` of received lines (give or take
the line that crossed it) the receiver stops reading until a batch takes them, so TCP pushes
back on the sender (Spark's receiver blocks the same way when its block queue is full).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from typing import TYPE_CHECKING, Any

from pyspark import RDD, StorageLevel

from reactive_spark.dstream.inputs import ReceiverInputDStream
from reactive_spark.errors import ContextStateError, InvalidArgumentError
from reactive_spark.events import Event

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext

__all__ = ["SocketInputDStream"]

log = logging.getLogger(__name__)

#: The longest line read; a longer one is an error of the connection (it reconnects).
MAX_LINE = 16 * 1024 * 1024
#: Bytes of received lines that may wait for a batch; past it the receiver stops reading.
MAX_BUFFERED_BYTES = 64 * 1024 * 1024


def _conf_milliseconds(sc: Any, key: str, default: int) -> int:
    text = str(sc.getConf().get(key, str(default))).strip().lower()
    for unit, factor in (("ms", 1), ("s", 1000)):
        if text.endswith(unit) and text[: -len(unit)].strip().isdigit():
            return int(text[: -len(unit)]) * factor
    if text.isdigit():
        return int(text)
    raise InvalidArgumentError(f"{key} must be a number of milliseconds, got {text!r}")


class SocketInputDStream(ReceiverInputDStream):
    """Lines received from `hostname:port` (`ssc.socketTextStream`).

    Examples:
        >>> lines = ssc.socketTextStream("127.0.0.1", 9999)
        >>> words = lines.flatMap(str.split)
    """

    def __init__(
        self,
        ssc: StreamingContext,
        hostname: str,
        port: int,
        storageLevel: StorageLevel = StorageLevel.MEMORY_AND_DISK_2,
    ) -> None:
        if not isinstance(hostname, str) or not hostname:
            raise InvalidArgumentError(f"hostname must be a non-empty str, got {hostname!r}")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port <= 65535:
            raise InvalidArgumentError(f"port must be an int from 1 to 65535, got {port!r}")
        if not isinstance(storageLevel, StorageLevel):
            raise InvalidArgumentError(
                f"storageLevel must be a pyspark StorageLevel, got {storageLevel!r}",
            )
        super().__init__(ssc, f"socketTextStream({hostname}:{port})")
        self.hostname = hostname
        self.port = port
        self.storageLevel = storageLevel
        sc = ssc.sparkContext
        self.blockInterval = _conf_milliseconds(sc, "spark.streaming.blockInterval", 200)
        self.restartDelay = (
            _conf_milliseconds(sc, "spark.streaming.receiverRestartDelay", 2000) / 1000
        )
        self._received: deque[tuple[int, str, int]] = deque()  # (arrival ms, line, bytes)
        self._buffered = 0  # bytes of the lines in _received (under the lock)
        self._buffer_bound = MAX_BUFFERED_BYTES
        self._room = asyncio.Event()  # set while the buffer is under its bound
        self._room.set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._task: asyncio.Task[None] | None = None

    @property
    def location(self) -> str:
        """`hostname:port`."""
        return f"{self.hostname}:{self.port}"

    # -- the receiver, on the event loop -----------------------------------------------------
    def start_receiver(self, loop: asyncio.AbstractEventLoop) -> None:
        """Connect and keep receiving until `stopReceiver`."""
        self._loop = loop
        self._task = loop.create_task(self._receive(), name=f"reactive-spark-{self.name}")

    async def stop_receiver(self) -> None:
        """Close the connection; lines received so far stay for the next batches."""
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
        self._report("onReceiverStopped", active=False)

    @property
    def pending(self) -> int:
        """Lines received that no batch has read yet."""
        with self._lock:
            return len(self._received)

    def drop_unread(self) -> int:
        """Forget the lines no batch read (the context stopped); how many.

        The listeners hear of them (`onReceiverError`): they are lost, as in Spark without a
        write-ahead log.
        """
        with self._lock:
            lost = len(self._received)
            self._received.clear()
            self._buffered = 0
        if lost:
            self._report(
                "onReceiverError",
                active=False,
                error=ContextStateError(
                    f"{self.name} stopped with {lost} received lines no batch read: they are "
                    "lost; a graceful stop (with a timeout long enough) lets batches read them"
                ),
            )
        return lost

    async def _receive(self) -> None:
        while True:
            try:
                reader, writer = await asyncio.open_connection(
                    self.hostname, self.port, limit=MAX_LINE
                )
            except OSError as exc:
                log.warning(
                    "%s cannot connect (%s); trying again in %.1f s",
                    self.name,
                    exc,
                    self.restartDelay,
                )
                self._report("onReceiverError", active=False, error=exc)
                await asyncio.sleep(self.restartDelay)
                continue
            self._report("onReceiverStarted", active=True)
            try:
                await self._read_lines(reader)
                log.info("%s: the connection was closed; reconnecting", self.name)
                self._report("onReceiverStopped", active=False)
            except (OSError, ValueError) as exc:  # ValueError: a line over MAX_LINE
                log.warning("%s lost its connection (%s); reconnecting", self.name, exc)
                self._report("onReceiverError", active=False, error=exc)
            finally:
                writer.close()
            await asyncio.sleep(self.restartDelay)

    async def _read_lines(self, reader: asyncio.StreamReader) -> None:
        clock = self._ssc.clock
        while True:
            await self._room.wait()  # past the bound: until a batch takes what waits
            raw = await reader.readline()
            if not raw:
                return
            line = raw.rstrip(b"\r\n").decode("utf-8", "replace")
            arrived = clock.now().milliseconds
            with self._lock:
                self._received.append((arrived, line, len(raw)))
                self._buffered += len(raw)
                if self._buffered >= self._buffer_bound:
                    self._room.clear()

    def _open_if_room(self) -> None:
        """Let the receiver read on, unless it filled the buffer again meanwhile (on the loop)."""
        with self._lock:
            if self._buffered < self._buffer_bound:
                self._room.set()

    def _report(self, callback: str, *, active: bool, error: BaseException | None = None) -> None:
        self._runtime.report_receiver(callback, self.id, self.name, self.location, active, error)

    # -- batches, in the scheduler's worker thread -------------------------------------------
    def _read(self, event: Event) -> tuple[RDD[Any] | None, dict[str, Any]]:
        until = event.time.milliseconds
        taken: list[tuple[int, str, int]] = []
        with self._lock:
            received = self._received
            while received and received[0][0] <= until:
                taken.append(received.popleft())
            self._buffered -= sum(size for _, _, size in taken)
            if taken and self._buffered < self._buffer_bound and self._loop is not None:
                with contextlib.suppress(RuntimeError):  # the loop closed: nobody reads
                    self._loop.call_soon_threadsafe(self._open_if_room)
        blocks: list[list[str]] = []
        block = None
        for arrived, line, _ in taken:
            number = arrived // self.blockInterval
            if number != block:
                blocks.append([])
                block = number
            blocks[-1].append(line)
        read = {"blocks": blocks}
        return self._load(blocks), read

    def _replay(self, event: Event, read: dict[str, Any]) -> RDD[Any] | None:
        return self._load(read["blocks"])

    def _load(self, blocks: list[list[str]]) -> RDD[Any]:
        sc = self._ssc.sparkContext
        if not blocks:
            return sc.emptyRDD()
        return sc.parallelize(blocks, len(blocks)).flatMap(lambda block: block)

    def record_count(self, read: dict[str, Any]) -> int:
        """The lines of the read."""
        return sum(len(block) for block in read["blocks"])
