"""A backlog source: fires when enough records wait in a log for a direct stream.

Batches come when there is work, not on a fixed clock: bound to its direct stream, each
`LogEvent` makes the stream read everything waiting (or up to its rate limit).
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from reactivex import abc as rx_abc

from reactive_spark._validation import require_int
from reactive_spark.errors import ForeignContextError, InvalidArgumentError
from reactive_spark.events import EventSource, LogEvent
from reactive_spark.time import Duration, Time, to_duration

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext

__all__ = ["BacklogEventSource", "BackloggedStream"]


@runtime_checkable
class BackloggedStream(Protocol):
    """A stream that can say how many records wait for it: a direct log stream.

    Examples:
        >>> import tempfile
        >>> from reactive_spark.log import FileLog
        >>> log = FileLog(tempfile.mkdtemp())
        >>> log.create_topic("clicks")
        >>> isinstance(ssc.directStream(log, ["clicks"]), BackloggedStream)
        True
    """

    readCount: int

    @property
    def name(self) -> str:
        """The stream's name."""

    def backlog(self) -> int:
        """How many records wait past the stream's positions."""

    def context(self) -> StreamingContext:
        """The StreamingContext of the stream."""


class BacklogEventSource(EventSource):
    """Every `interval`, fires a `LogEvent(backlog)` if `threshold` records wait for `stream`.

    After firing it waits until the stream has read, or the batch it made ended without
    reading (it failed), before it fires again: a backlog that a batch is about to take does
    not fire twice, and one a batch failed to take fires again. On a virtual clock the log is
    checked at the exact tick; on the system clock the check runs in a worker thread.

    Examples:
        >>> import asyncio, tempfile
        >>> from reactive_spark import Seconds
        >>> from reactive_spark.log import FileLog
        >>> log = FileLog(tempfile.mkdtemp())
        >>> log.create_topic("clicks")
        >>> clicks = ssc.directStream(log, ["clicks"])
        >>> full = ssc.backlogSource(clicks, 3, "clicks-backlog", interval=Seconds(5))
        >>> job = clicks.foreachRDD(lambda t, rdd: print(t.time(), rdd.count())).bind(full)
        >>> async def run():
        ...     await ssc.start()
        ...     for n in range(4):
        ...         log.append("clicks", n)
        ...         await ssc.advanceTo(t0 + Seconds(5 * (n + 1)))
        ...     await ssc.stop(stopSparkContext=False)
        >>> asyncio.run(run())
        00:00:15 3
    """

    kind = "backlog"

    def __init__(
        self,
        context: StreamingContext,
        stream: BackloggedStream,
        threshold: int,
        name: str,
        interval: Duration | timedelta | float = 1.0,
    ) -> None:
        if not isinstance(stream, BackloggedStream):
            raise InvalidArgumentError(f"stream must be a direct log stream, got {stream!r}")
        if stream.context() is not context:
            raise ForeignContextError(f"stream {stream.name} belongs to another StreamingContext")
        self.threshold = require_int(threshold, "threshold")
        self.interval = to_duration(interval, "interval")
        if self.interval.milliseconds <= 0:
            raise InvalidArgumentError(f"interval must be positive, got {interval!r}")
        super().__init__(context, name)
        self.stream = stream
        self._pending: rx_abc.DisposableBase | None = None
        self._stopped = True
        self._fired_at_read: int | None = None
        self._fired: LogEvent | None = None  # the last event it fired
        self._checking: asyncio.Task[None] | None = None  # a check on the real clock

    def start(self) -> None:
        """Check the backlog every `interval` from now on."""
        self._stopped = False
        self._arm(self.context.clock.now() + self.interval)

    async def stop(self) -> None:
        """Stop checking; a check under way is cancelled."""
        self._stopped = True
        if self._pending is not None:
            self._pending.dispose()
            self._pending = None
        checking, self._checking = self._checking, None
        if checking is not None:
            checking.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await checking

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
            self._checking = asyncio.get_running_loop().create_task(self._check_in_thread(due))

    async def _check_in_thread(self, due: Time) -> None:
        self._decide(due, await self._runtime.run_blocking(self.stream.backlog))
        self._arm(max(due + self.interval, self.context.clock.now()))

    def _decide(self, due: Time, backlog: int) -> None:
        if backlog >= self.threshold and self._taken_care_of():
            self._fired_at_read = self.stream.readCount
            self._fired = LogEvent(self, None, due, backlog)
            self._runtime.post_from_loop(self._fired)

    def _taken_care_of(self) -> bool:
        """Whether the last event fired was taken care of.

        The stream read since, or the event's batch ended without reading (its read failed).
        """
        fired = self._fired
        if fired is None or self._fired_at_read != self.stream.readCount:
            return True
        return fired.instanceId is not None and self.context.processedThrough >= fired.instanceId

    def eventFromRecord(self, fields: dict[str, Any]) -> LogEvent:
        """The `LogEvent` a checkpoint recorded."""
        return LogEvent(
            self, fields["index"], Time(fields["time"]), fields["backlog"], fields.get("instanceId")
        )

    def toProduct(self) -> tuple[Any, ...]:
        """`(stream name, threshold, interval ms, name)`."""
        return (self.stream.name, self.threshold, self.interval.milliseconds, self.name)
