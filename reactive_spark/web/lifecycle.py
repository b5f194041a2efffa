"""The context's life with the service that serves its console: started with it, stopped in time.

The service's shutdown first tells its applications (`on_shutdown`), then waits for the requests
still running, then cleans up. The context's stop begins at the first step, so the requests
waiting on the context (a fire or a REST request waiting for room, for its event to be accepted)
are answered as the stop answers them, and the service does not wait for them; the cleanup waits
for the stop. The stop is graceful for at most `stop_timeout` seconds, then it stops as a
non-graceful stop does (see `StreamingContext.stop`). See docs/console.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext

__all__ = ["DEFAULT_STOP_TIMEOUT", "ContextLifecycle"]

log = logging.getLogger(__name__)

#: Seconds a service's shutdown lets the context's graceful stop take (Kubernetes' own grace).
DEFAULT_STOP_TIMEOUT = 30.0


class ContextLifecycle:
    """Start `ssc` with the service (unless it runs already); stop it when the service stops.

    `on_shutdown` begins the stop, `cleanup_ctx` waits for it (and begins it if the service
    skipped its shutdown step).
    """

    def __init__(self, ssc: StreamingContext, stop_timeout: float | None) -> None:
        self._ssc = ssc
        self._stop_timeout = stop_timeout
        self._stopping: asyncio.Task[None] | None = None
        self._awaited = False  # the cleanup waits for the stop, and raises what it raised
        self._left_to_cleanup = False  # `ended` waited: the console's cleanup raises what failed

    def attach(self, app: web.Application) -> None:
        """Have `app`'s start and shutdown start and stop the context."""
        app.on_shutdown.append(self._begin_stop)
        app.cleanup_ctx.append(self._run)

    async def _run(self, app: web.Application) -> AsyncIterator[None]:
        ssc = self._ssc
        started_here = ssc.state == "initialized"
        if started_here:
            await ssc.start()
        yield
        if ssc.state != "initialized":
            await self._begin_stop(app)
            assert self._stopping is not None
            self._awaited = True
            await self._stopping
        elif not started_here:
            log.warning("the console's StreamingContext was never started")

    async def _begin_stop(self, app: web.Application) -> None:
        self.begin_stop()

    def begin_stop(self) -> None:
        """Begin the context's stop, if it runs and no stop began (on the loop).

        The service's `on_shutdown` does; a console on its own port (`Console.stop`) does
        before its server stops, and waits for it (`stopped`).
        """
        if self._stopping is None and self._ssc.state != "initialized":
            self._stopping = asyncio.ensure_future(
                self._ssc.stop(
                    stopSparkContext=False, stopGracefully=True, timeout=self._stop_timeout
                )
            )
            self._stopping.add_done_callback(self._ended)

    async def ended(self) -> None:
        """Begin the stop if none began, and wait until it has ended (at once if never started).

        Raises nothing: what the stop raised stays the console's cleanup's to raise (if that
        never runs, asyncio reports it as a task exception never retrieved).
        """
        self.begin_stop()
        if self._stopping is not None:
            self._left_to_cleanup = True
            await asyncio.wait({self._stopping})

    async def stopped(self) -> None:
        """Wait until the stop begun has ended; what it raised is the cleanup's to raise."""
        if self._stopping is not None:
            self._awaited = True  # the cleanup raises its failure: not logged as orphaned
            await asyncio.wait({self._stopping})

    def _ended(self, stopping: asyncio.Task[None]) -> None:
        """Log how a stop failed that the cleanup never waited for (an earlier step raised).

        Nobody else can hear of it then: the service's cleanup already failed.
        """
        if stopping.cancelled() or self._awaited or self._left_to_cleanup:
            return
        failure = stopping.exception()
        if failure is not None:
            log.error("stopping the console's StreamingContext failed: %s", failure)
