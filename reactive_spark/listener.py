"""The streaming listener and PySpark's info objects its callbacks receive.

`StreamingListener` has PySpark's callbacks, beside reactive-spark's own; the objects handed to
them answer PySpark's accessors, so a `pyspark.streaming` listener works unchanged.

Examples:
    >>> StreamInputInfo(0, "socketTextStream[0]", 3, {"lines": 3}).numRecords()
    3
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from reactive_spark.failures import Failure, SourceErrorInfo, UserError
from reactive_spark.time import Time, now_ms

if TYPE_CHECKING:
    from reactive_spark.events import Event
    from reactive_spark.jobs import BatchInfo, JobInfo

__all__ = [
    "BatchTime",
    "DeadlineMissed",
    "EventsDropped",
    "OutputOperationInfo",
    "ReceiverInfo",
    "StreamInputInfo",
    "StreamingListener",
    "StreamingStarted",
]


log = logging.getLogger(__name__)


class BatchTime(int):
    """An instant in epoch milliseconds that also answers PySpark's `milliseconds()`.

    Examples:
        >>> BatchTime(1500).milliseconds()
        1500
    """

    def milliseconds(self) -> int:
        """The instant in epoch milliseconds."""
        return int(self)


@dataclass(frozen=True)
class StreamInputInfo:
    """What an input stream read for a batch (PySpark's `StreamInputInfo` accessors).

    Examples:
        >>> StreamInputInfo(0, "socketTextStream[0]", 3, {"lines": 3}).numRecords()
        3
    """

    streamId: int
    name: str
    records: int
    read: dict[str, Any]

    def inputStreamId(self) -> int:
        """The input stream's id."""
        return self.streamId

    def numRecords(self) -> int:
        """How many records it read (0 where records are not counted: files, queues)."""
        return self.records

    def metadata(self) -> dict[str, Any]:
        """What it read, as recorded in the write-ahead log."""
        return dict(self.read)

    def metadataDescription(self) -> str:
        """`metadata()` in one line."""
        return f"{self.name}: {self.read}"


@dataclass(frozen=True)
class OutputOperationInfo:
    """A job seen as PySpark's `OutputOperationInfo` (times in epoch ms, -1 when unknown).

    Examples:
        >>> # listener.onOutputOperationCompleted(done): done.outputOperationInfo().duration()
    """

    job: JobInfo

    def outputOperationInfo(self) -> OutputOperationInfo:
        """This object (PySpark's callbacks receive a wrapper whose accessor this is)."""
        return self

    def batchTime(self) -> BatchTime:
        """The batch's time."""
        return BatchTime(self.job.event.time.milliseconds)

    def id(self) -> int:
        """The output operation's id: its position among the context's outputs, from 0."""
        return self.job.outputId

    def name(self) -> str:
        """The job's stream."""
        return self.job.streamName

    def description(self) -> str:
        """The job's stream, the kind of job and the user function."""
        function = f" ({self.job.function})" if self.job.function else ""
        return f"{self.job.kind} job of {self.job.streamName}{function}"

    def startTime(self) -> int:
        """When the job started (epoch ms), or -1."""
        return -1 if self.job.startTime is None else int(self.job.startTime)

    def endTime(self) -> int:
        """When the job ended (epoch ms), or -1."""
        return -1 if self.job.endTime is None else int(self.job.endTime)

    def duration(self) -> int:
        """Milliseconds the job ran, or -1."""
        if self.job.startTime is None or self.job.endTime is None:
            return -1
        return int(self.job.endTime - self.job.startTime)

    def failureReason(self) -> str | None:
        """The failure in one line (the user's exception), or None."""
        return None if not self.job.failed else self.job.describe()


@dataclass(frozen=True)
class EventsDropped:
    """Events of one source that will not run (`onEventsDropped`): never silent.

    `reason` is the overflow policy that dropped them (`"drop-oldest"`, `"drop-newest"`), or
    `"coalesce"` (merged into a later event that runs and whose `standsFor` counts them), or
    `"stop"` (a stop that did not wait for them, or a `delay`'s not due yet: the delayed
    events). `count` says how many; `events` are the events themselves where they are known
    (a stop's: accepted ones carry their instanceId). With a checkpoint, a restart fires again
    what recovery re-creates of a stop's (docs/checkpoints.md).

    Examples:
        >>> EventsDropped("uploads", "drop-oldest", 3).count
        3
    """

    sourceName: str
    reason: str
    count: int
    events: tuple[Event, ...] = ()

    @classmethod
    def of(cls, sourceName: str, reason: str, events: Sequence[Event]) -> EventsDropped:
        """The report of `events` dropped for `reason`, counted as every report counts them.

        A dropped event takes what it stood for with it (`standsFor`: a coalesced event); an
        event merged away (`"coalesce"`) counts once, as what it stood for goes on in the event
        that replaced it.

        Examples:
            >>> from reactive_spark.events import Event
            >>> from reactive_spark.time import Time
            >>> stand_in = Event(None, None, Time(5))
            >>> stand_in.standsFor = 4
            >>> EventsDropped.of("uploads", "stop", [stand_in]).count
            4
        """
        merged = reason == "coalesce"
        count = len(events) if merged else sum(event.standsFor for event in events)
        return cls(sourceName, reason, count, tuple(events))


@dataclass(frozen=True)
class DeadlineMissed:
    """A period passed without what was expected of a source or a stream (`onDeadlineMissed`).

    `kind` is `"source"` (no event of the source `name` in `[periodStart, deadline)`) or
    `"output"` (no job of the stream `name` for an event in that window succeeded by the
    deadline); see `EventSource.expect` and `DStream.expect`. `duringDowntime` says the
    deadline passed while the process was down: it is reported when the context restarts from
    its checkpoint, once. After a long downtime the misses past the first few come in one
    report: `periodsMissed` counts them, from the period starting at `periodStart` to the one
    whose deadline is `deadline`.

    Examples:
        >>> from datetime import UTC, datetime
        >>> day = datetime(2024, 1, 2, tzinfo=UTC)
        >>> print(DeadlineMissed("source", "daily", day, day.replace(hour=2)).describe())
        source daily missed its deadline 2024-01-02T02:00:00Z (period from 2024-01-02T00:00:00Z)
        >>> print(DeadlineMissed("source", "m", day, day.replace(microsecond=500_000)).describe())
        source m missed its deadline 2024-01-02T00:00:00.500Z (period from 2024-01-02T00:00:00Z)
    """

    kind: str
    name: str
    periodStart: datetime
    deadline: datetime
    duringDowntime: bool = False
    periodsMissed: int = 1

    def describe(self) -> str:
        """The miss in one line."""
        start = Time.fromDatetime(self.periodStart).isoformat()  # milliseconds, if any
        deadline = Time.fromDatetime(self.deadline).isoformat()
        downtime = ", while the process was down" if self.duringDowntime else ""
        if self.periodsMissed > 1:
            return (
                f"{self.kind} {self.name} missed {self.periodsMissed} deadlines, the last "
                f"{deadline} (periods from {start}{downtime})"
            )
        return (
            f"{self.kind} {self.name} missed its deadline {deadline} (period from {start}"
            f"{downtime})"
        )


class StreamingStarted:
    """PySpark's `onStreamingStarted` argument: `time()` is the start, in epoch ms.

    Examples:
        >>> StreamingStarted(1_500).time()
        1500
    """

    __slots__ = ("_time",)

    def __init__(self, time: int) -> None:
        self._time = time

    def time(self) -> int:
        """When the context started, in epoch milliseconds."""
        return self._time

    def __repr__(self) -> str:
        return f"StreamingStarted(time={self._time})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StreamingStarted):
            return NotImplemented
        return other.time() == self._time

    def __hash__(self) -> int:
        return hash(self._time)


class ReceiverInfo:
    """A receiver-based input (`socketTextStream`) as PySpark's `ReceiverInfo` sees it.

    Examples:
        >>> ReceiverInfo(0, "socketTextStream[0]", "127.0.0.1:9999", active=True).active()
        True
    """

    def __init__(
        self,
        streamId: int,
        name: str,
        location: str,
        *,
        active: bool,
        error: BaseException | None = None,
    ) -> None:
        self._stream_id = streamId
        self._name = name
        self._location = location
        self._active = active
        self._error = error
        self._error_time = int(now_ms()) if error is not None else -1

    def receiverInfo(self) -> ReceiverInfo:
        """This object (PySpark's callbacks receive a wrapper whose accessor this is)."""
        return self

    def streamId(self) -> int:
        """The input stream's id."""
        return self._stream_id

    def name(self) -> str:
        """The input stream's name."""
        return self._name

    def active(self) -> bool:
        """Whether it is connected and receiving."""
        return self._active

    def location(self) -> str:
        """Where it receives from (`host:port`)."""
        return self._location

    def executorId(self) -> str:
        """`"driver"`: receivers run on the driver's event loop."""
        return "driver"

    def lastErrorMessage(self) -> str:
        """The last error in one line (empty if none)."""
        return "" if self._error is None else UserError.of(self._error).summary

    def lastError(self) -> str:
        """The last error's traceback (empty if none)."""
        return "" if self._error is None else UserError.of(self._error).traceback

    def lastErrorTime(self) -> int:
        """When the last error happened (epoch ms), or -1."""
        return self._error_time

    def __repr__(self) -> str:
        state = "active" if self._active else "inactive"
        return f"ReceiverInfo({self._name}, {self._location}, {state})"


class StreamingListener:
    """Receives scheduling events; override the methods you need (all default to no-ops).

    PySpark's callbacks are here, with the objects they receive answering PySpark's accessors
    (`onBatchCompleted(info)`: `info.batchInfo().processingDelay()`), beside reactive-spark's
    own (`onEventFired`, `onJobStarted`, `onJobCompleted`, `onSourceError`). A batch is
    reported when it has jobs or failures: submitted, started, each job (as a job and as an
    output operation), completed.

    `onEventFired`, `onSourceError`, `onStreamingStarted` and the receiver callbacks are called
    on the event loop (or the thread a source failed in); the others in the scheduler's worker
    threads, so a listener that shares state with the loop must hand it over safely
    (`loop.call_soon_threadsafe`).

    Examples:
        >>> class Failures(StreamingListener):
        ...     def __init__(self):
        ...         self.failed = []
        ...
        ...     def onJobCompleted(self, job):
        ...         if job.failed:
        ...             self.failed.append(job)
        ...
        ...     def onSourceError(self, error):
        ...         self.failed.append(error)
    """

    def onStreamingStarted(self, streamingStarted: StreamingStarted) -> None:
        """The context started (`streamingStarted.time()`: epoch ms)."""

    def onReceiverStarted(self, receiverStarted: ReceiverInfo) -> None:
        """A receiver (`socketTextStream`) connected (`.receiverInfo()`)."""

    def onReceiverError(self, receiverError: ReceiverInfo) -> None:
        """A receiver failed to connect or lost its connection; it will retry."""

    def onReceiverStopped(self, receiverStopped: ReceiverInfo) -> None:
        """A receiver stopped with the context."""

    def onEventFired(self, event: Event) -> None:
        """An event was accepted (it has its `instanceId`)."""

    def onBatchSubmitted(self, batchSubmitted: BatchInfo) -> None:
        """The event's batch was planned (PySpark: submitted)."""

    def onBatchStarted(self, batchSubmitted: BatchInfo) -> None:
        """The event's batch's jobs are about to run (the argument has PySpark's name)."""

    def onOutputOperationStarted(self, outputOperationStarted: OutputOperationInfo) -> None:
        """A job started (`.outputOperationInfo()`, PySpark's view of `onJobStarted`)."""

    def onOutputOperationCompleted(self, outputOperationCompleted: OutputOperationInfo) -> None:
        """A job ended (PySpark's view of `onJobCompleted`)."""

    def onJobStarted(self, job: JobInfo) -> None:
        """A job started running."""

    def onJobCompleted(self, job: JobInfo) -> None:
        """A job ended; `job.error` is set when it failed (also for a failed plan)."""

    def onBatchCompleted(self, batchCompleted: BatchInfo) -> None:
        """Every job of the batch ended; `batchCompleted.failures` lists those that failed."""

    def onSourceError(self, error: SourceErrorInfo) -> None:
        """An event source or operator failed (`error.userError` is the exception)."""

    def onEventsDropped(self, dropped: EventsDropped) -> None:
        """Events of a source will not run: its overflow policy or a stop dropped them."""

    def onDeadlineMissed(self, missed: DeadlineMissed) -> None:
        """A source or stream missed what it was expected to do by a deadline (on the loop).

        See `EventSource.expect` and `DStream.expect`.
        """


class HoldsUntilStop:
    """A listener of the library's own that holds something until its context stops.

    PySpark's listener has no callback for the stop; the context tells these ones.
    """

    def context_stopped(self) -> None:
        """Let go of what is held: nothing more is told after."""


class ListenerBus:
    """The streaming listeners of one context, and the one place failures are reported.

    `on_failure` hears every failure too (the context keeps them for `advanceTo` and
    `awaitTermination`).

    Examples:
        >>> bus = ListenerBus(on_failure=lambda failure: None)
        >>> bus.active
        False
    """

    def __init__(self, on_failure: Callable[[Failure], None]) -> None:
        self._listeners: list[StreamingListener] = []
        self._on_failure = on_failure

    def add(self, listener: StreamingListener) -> None:
        """Notify `listener` of events, batches, jobs and source errors."""
        self._listeners.append(listener)

    @property
    def active(self) -> bool:
        """Whether any listener listens (else nothing need be made for them)."""
        return bool(self._listeners)

    def tell(self, method: str, argument: Any) -> None:
        """Call `method(argument)` on every listener; a listener that raises is logged."""
        if not self._listeners:
            return
        for listener in list(self._listeners):
            try:
                getattr(listener, method)(argument)
            except Exception:
                log.exception("streaming listener %r failed in %s", listener, method)

    def stopped(self) -> None:
        """Tell the library's own listeners that hold something until the stop to let go of it.

        Nothing more is told after (tracing ends its open spans).
        """
        for listener in list(self._listeners):
            if not isinstance(listener, HoldsUntilStop):
                continue
            try:
                listener.context_stopped()
            except Exception:
                log.exception("streaming listener %r failed at the context's stop", listener)

    def report(self, failure: Failure) -> None:
        """Log `failure` once, tell the listeners and `on_failure`. Any thread."""
        user = failure.userError
        trace = "" if user is None else user.traceback
        log.error("reactive-spark: %s\n%s", failure.describe(), trace)
        if isinstance(failure, SourceErrorInfo):
            self.tell("onSourceError", failure)
        else:
            self.tell("onJobCompleted", failure)
        self._on_failure(failure)
