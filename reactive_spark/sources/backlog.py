"""A backlog source: fires when enough records wait in a log for a direct stream.

Batches come when there is work, not on a fixed clock: bound to its direct stream, each
`LogEvent` makes the stream read everything waiting (or up to its rate limit).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from reactivex import abc as rx_abc

from reactive_spark._validation import require_int
from reactive_spark.errors import ForeignContextError, InvalidArgumentError
from reactive_spark.events import EventSource, LogEvent
from reactive_spark.scheduler import run_blocking
from reactive_spark.time import Duration, Time, to_duration

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext
    from reactive_spark.log.stream import DirectLogInputDStream

__all__ = ["BacklogEventSource"]


class BacklogEventSource(EventSource):
    """Every `interval`, fires a `LogEvent(backlog)` if `threshold` records wait for `stream`.

    After firing it waits until the stream has read before it fires again, so a backlog that
    a batch is about to take does not fire twice. On a virtual clock the log is checked at
    the exact tick; on the system clock the check runs in a worker thread.

    Example:
        >>> # clicks = ssc.directStream(log, ["clicks"])
        >>> # full = ssc.backlogSource(clicks, 1000, "clicks-backlog", interval=Seconds(5))
        >>> # clicks.map(parse).saveAsTextFiles("out/clicks").bind(full)
    """

    def __init__(
        self,
        context: StreamingContext,
        stream: DirectLogInputDStream,
        threshold: int,
        name: str,
        interval: Duration | timedelta | float = 1.0,
    ) -> None:
        from reactive_spark.log.stream import DirectLogInputDStream

        if not isinstance(stream, DirectLogInputDStream):
            raise InvalidArgumentError(f"stream must be a direct log stream, got {stream!r}")
        if stream.context() is not context:
            raise ForeignContextError(f"{stream.name} belongs to another StreamingContext")
        self.threshold = require_int(threshold, "threshold")
        self.interval = to_duration(interval, "interval")
        if self.interval.milliseconds <= 0:
            raise InvalidArgumentError(f"interval must be positive, got {interval!r}")
        super().__init__(context, name)
        self.stream = stream
        self._pending: rx_abc.DisposableBase | None = None
        self._stopped = True
        self._firedAtRead: int | None = None

    def start(self) -> None:
        """Check the backlog every `interval` from now on."""
        self._stopped = False
        self._arm(self.context.clock.now() + self.interval)

    def stop(self) -> None:
        """Stop checking."""
        self._stopped = True
        if self._pending is not None:
            self._pending.dispose()
            self._pending = None

    def _arm(self, due: Time) -> None:
        if not self._stopped:
            self._pending = self.context.clock.scheduleAt(due, lambda: self._check(due))

    def _check(self, due: Time) -> None:
        if self._stopped:
            return
        if self.context.clock.isVirtual:
            self._decide(due, self.stream.backlog())
            self._arm(due + self.interval)
        else:
            asyncio.get_running_loop().create_task(self._checkInThread(due))

    async def _checkInThread(self, due: Time) -> None:
        self._decide(due, await run_blocking(self.stream.backlog))
        self._arm(max(due + self.interval, self.context.clock.now()))

    def _decide(self, due: Time, backlog: int) -> None:
        if backlog >= self.threshold and self._firedAtRead != self.stream.readCount:
            self._firedAtRead = self.stream.readCount
            self.post(LogEvent(self, None, due, backlog))

    def eventFromRecord(self, fields: dict[str, Any]) -> LogEvent:
        """The `LogEvent` a checkpoint recorded."""
        return LogEvent(
            self, fields["index"], Time(fields["time"]), fields["backlog"], fields.get("instanceId")
        )

    def toProduct(self) -> tuple[Any, ...]:
        """`(stream name, threshold, interval ms, name)`."""
        return (self.stream.name, self.threshold, self.interval.milliseconds, self.name)
