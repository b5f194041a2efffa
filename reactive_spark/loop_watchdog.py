"""A watchdog that warns when the event loop is blocked, naming where it is stuck.

A blocking call on the loop (`time.sleep`, a Spark action in a coroutine) holds up every
event, batch and HTTP request of the context; ported `pyspark.streaming` programs make this
mistake easily. A thread checks a heartbeat that the loop updates every `interval` seconds,
and logs one warning per stall longer than `threshold` seconds, with the innermost frame of
user code the loop is executing.

Examples:
    >>> import asyncio, time
    >>> async def main():
    ...     watchdog = LoopWatchdog(asyncio.get_running_loop(), threshold=0.1, interval=0.05)
    ...     watchdog.start()
    ...     time.sleep(0.5)  # blocks the loop: the watchdog logs a warning
    ...     await asyncio.sleep(0)
    ...     watchdog.stop()
    ...     return watchdog.stalls
    >>> asyncio.run(main())
    1
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
from types import FrameType

from reactive_spark.failures import frame_label, is_library_file

__all__ = ["LoopWatchdog"]

log = logging.getLogger(__name__)


class LoopWatchdog:
    """Warns once per stall of `loop` longer than `threshold` seconds (see module docs)."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, threshold: float = 1.0, interval: float = 0.25
    ) -> None:
        self.loop = loop
        self.threshold = threshold
        self.interval = interval
        #: How many stalls were reported.
        self.stalls = 0
        self._beat = time.monotonic()
        self._handle: asyncio.TimerHandle | None = None
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop_thread = 0

    def start(self) -> None:
        """Start watching; call on the loop's thread."""
        self._loop_thread = threading.get_ident()
        self._heartbeat()
        self._thread = threading.Thread(
            target=self._watch, name="reactive-spark-loop-watchdog", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop watching; the watching thread has ended when this returns."""
        self._stopped.set()
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._thread is not None:
            self._thread.join()  # it wakes at once: it waits on `_stopped`
            self._thread = None

    def _heartbeat(self) -> None:
        self._beat = time.monotonic()
        if not self._stopped.is_set():
            self._handle = self.loop.call_later(self.interval, self._heartbeat)

    def _watch(self) -> None:
        warned = False
        while not self._stopped.wait(self.interval / 2):
            stalled = time.monotonic() - self._beat - self.interval
            if stalled <= self.threshold:
                warned = False
            elif not warned:
                warned = True
                self.stalls += 1
                log.warning(
                    "the event loop has been blocked for %.1f s, in %s: a blocking call on the "
                    "loop (time.sleep, a Spark action) holds up every event and batch; use "
                    "`await asyncio.sleep(...)`, or run blocking work in a thread",
                    stalled,
                    self._where_stuck(),
                )

    def _where_stuck(self) -> str:
        # sys._current_frames is the documented way to see another thread's stack
        frame: FrameType | None = sys._current_frames().get(self._loop_thread)  # noqa: SLF001
        while frame is not None:
            path = frame.f_code.co_filename
            if not is_library_file(path):
                return frame_label(frame.f_code.co_name, path, frame.f_lineno)
            frame = frame.f_back
        return "code outside reactive-spark"
