"""What runs, as the scheduler, listeners, the web console and metrics all see it.

A `Job` is one unit of work of an event's `Batch`; `JobInfo` and `BatchInfo` say what became of
them; `SourceErrorInfo` is a failure of an event source or operator. Every failure carries the
user's own exception (`UserError`): its type, message and Python traceback, taken from the
executor when the exception was raised inside a Spark task.

Examples:
    >>> error = UserError.of(ValueError("bad record"))
    >>> error.type, error.message
    ('ValueError', 'bad record')
"""

from __future__ import annotations

import re
import time as _time
import traceback as _traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reactive_spark.events import Event

if TYPE_CHECKING:
    from pyspark import RDD

    from reactive_spark.dstream.base import DStream

__all__ = [
    "Batch",
    "BatchInfo",
    "BatchTime",
    "Failure",
    "Job",
    "JobInfo",
    "OutputOperationInfo",
    "ReceiverInfo",
    "SourceErrorInfo",
    "StreamInputInfo",
    "StreamingListener",
    "StreamingStarted",
    "UserError",
    "materialize",
    "now_ms",
]


def now_ms() -> float:
    """Wall-clock epoch milliseconds (as a float), the unit of every timing here."""
    return _time.time() * 1000


# -- the user's exception ---------------------------------------------------------------------
_PYTHON_TRACEBACK = re.compile(
    r"Traceback \(most recent call last\):\n(?P<body>.*?)(?=\n(?: SQLSTATE|\tat )|\s*\Z)",
    re.DOTALL,
)
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')
_LIBRARY_PATHS = ("pyspark", "py4j", "reactive_spark", "/concurrent/", "/asyncio/", "/threading")


@dataclass(frozen=True)
class UserError:
    """The user's own exception behind a failure.

    For an exception raised inside a Spark task (a `map` function on an executor), PySpark's
    driver only sees a `Py4JJavaError`; the type, message and Python traceback are read from
    the executor's report inside it. `location` is the innermost frame of user code, when one
    can be told apart from pyspark's and reactive-spark's own.

    Examples:
        >>> try:
        ...     {}["day"]
        ... except KeyError as exc:
        ...     UserError.of(exc).summary
        "KeyError: 'day'"
    """

    type: str
    message: str
    traceback: str
    location: str | None = None

    @classmethod
    def of(cls, error: BaseException) -> UserError:
        """The user's exception behind `error` (itself, unless Spark wrapped it)."""
        remote = _executor_traceback(error)
        if remote is not None:
            return remote
        text = "".join(_traceback.format_exception(error))
        return cls(type(error).__name__, str(error), text, _user_location(text))

    @property
    def summary(self) -> str:
        """`Type: message`, as Python prints the last line of a traceback."""
        return f"{self.type}: {self.message}" if self.message else self.type


def _executor_traceback(error: BaseException) -> UserError | None:
    """The Python exception an executor reported inside `error`, if Spark wrapped one.

    A `Py4JJavaError` carries it in its Java exception; once a SparkSession exists, PySpark
    converts such errors into its own (`pyspark.errors.PythonException`), whose text holds it.
    """
    java = getattr(error, "java_exception", None)
    if java is None and not type(error).__module__.startswith("pyspark.errors"):
        return None
    try:
        text = str(java if java is not None else error)
    except Exception:  # a Py4J call that fails once the JVM is gone
        return None
    match = _PYTHON_TRACEBACK.search(text)
    if match is None:
        return None
    body = match["body"].rstrip()
    last = body.splitlines()[-1] if body else ""
    kind, _, message = last.partition(": ")
    trace = f"Traceback (most recent call last):\n{body}\n"
    return UserError(kind.strip() or "Exception", message.strip(), trace, _user_location(trace))


def _user_location(trace: str) -> str | None:
    """`function (file:line)` of the innermost frame outside the libraries, if any."""
    found = None
    for line in trace.splitlines():
        frame = _FRAME.match(line)
        if frame is not None and not any(part in frame["file"] for part in _LIBRARY_PATHS):
            name = frame["file"].rsplit("/", 1)[-1]
            found = f"{frame['function']} ({name}:{frame['line']})"
    return found


# -- failures ---------------------------------------------------------------------------------
class Failure:
    """Something that failed: a job, a plan, an event source or an operator.

    Subclasses set `error` (the exception) and implement `describe()`.
    """

    error: BaseException | None
    _user_error: UserError | None = None

    @property
    def failed(self) -> bool:
        """Whether it failed (a cancelled job did not)."""
        return self.error is not None and not getattr(self, "cancelled", False)

    @property
    def userError(self) -> UserError | None:
        """The user's own exception, once it failed."""
        if self.error is None:
            return None
        if self._user_error is None:
            self._user_error = UserError.of(self.error)
        return self._user_error

    def describe(self) -> str:
        """One line saying what failed and why."""
        raise NotImplementedError

    def _cause(self) -> str:
        user = self.userError
        if user is None:
            return "ok"
        where = f" (raised in {user.location})" if user.location else ""
        return f"{user.summary}{where}"


@dataclass(eq=False)
class Job:
    """One unit of work of a batch: a bound stream's output function or materialisation.

    `after` are the jobs of the same batch that commit what this one reads (see
    `commits_first`): it runs after them, and only if they succeeded.
    """

    stream: DStream[Any]
    event: Event
    action: Callable[[], Any]
    kind: str = "output"
    after: list[Job] = field(default_factory=list)

    @property
    def description(self) -> str:
        """`<stream> on <source>#<index>`, shown in logs and in the Spark UI."""
        return f"{self.stream.name} on {self.event.source.name}#{self.event.index}"


def commits_first(jobs: list[Job]) -> list[Job]:
    """The jobs of committing streams first, each after the commits it reads; then the rest.

    Every job's `after` lists the committing jobs whose streams it reads from (directly or
    through other streams).
    """
    committing = [job for job in jobs if job.stream.commitsFirst]
    if not committing:
        return jobs
    for job in jobs:
        upstream = ancestors(job.stream)
        job.after = [other for other in committing if other.stream in upstream]
    committing.sort(key=lambda job: len(job.after))  # a commit reading another comes later
    return committing + [job for job in jobs if not job.stream.commitsFirst]


def ancestors(stream: DStream[Any]) -> set[DStream[Any]]:
    """Every stream `stream` reads from, directly or not."""
    found: set[DStream[Any]] = set()
    pending = [dependency.parent for dependency in stream.dependencies]
    while pending:
        parent = pending.pop()
        if parent not in found:
            found.add(parent)
            pending.extend(dependency.parent for dependency in parent.dependencies)
    return found


@dataclass(eq=False)
class JobInfo(Failure):
    """What happened to a job: timing (epoch ms, float) and the error, if it failed.

    `kind` is `"output"` (an output operation), `"materialize"` (a bound non-output stream) or
    `"plan"` (computing the stream's RDD failed before any job could run). `function` names
    the user function of the job's stream, where it has one.
    """

    streamName: str
    event: Event
    kind: str
    submitTime: float
    startTime: float | None = None
    endTime: float | None = None
    error: BaseException | None = None
    traceback: str | None = None
    function: str | None = None
    cancelled: bool = False
    streamId: int = -1

    @property
    def status(self) -> str:
        """`"queued"`, `"running"`, `"succeeded"`, `"failed"` or `"cancelled"`."""
        if self.cancelled:
            return "cancelled"
        if self.error is not None:
            return "failed"
        if self.endTime is not None:
            return "succeeded"
        return "running" if self.startTime is not None else "queued"

    @property
    def duration(self) -> float | None:
        """Seconds the job ran, once it ended."""
        if self.startTime is None or self.endTime is None:
            return None
        return (self.endTime - self.startTime) / 1000

    def describe(self) -> str:
        """One line naming the stream, the function, the event and the outcome."""
        event = self.event
        where = f"{event.source.name}#{event.index} at {event.time.isoformat()}"
        if self.cancelled:
            return f"{self.kind} job of {self.streamName} on {where}: cancelled"
        if self.error is None:
            return f"{self.kind} job of {self.streamName} on {where}: ok"
        return f"{self.kind} job of {self.streamName} on {where} failed: {self._cause()}"


@dataclass(eq=False)
class SourceErrorInfo(Failure):
    """A failure of an event source or operator (reported through `onSourceError`).

    `operation` says what failed: `"map"`, `"filter"`, `"pipe"`, `"listener"` (a function
    handed an event), `"observable"` (the observable errored), `"watch"` (a file watcher),
    `"start"` (the source could not start). `event` is the event being handled, if any.
    """

    sourceName: str
    operation: str
    error: BaseException
    event: Event | None = None
    function: str | None = None
    time: float = field(default_factory=now_ms)

    @property
    def traceback(self) -> str:
        """The Python traceback of the error."""
        user = self.userError
        return "" if user is None else user.traceback

    def describe(self) -> str:
        """One line naming the source, the operation, the function and the error."""
        function = f" {self.function}" if self.function else ""
        on = ""
        if self.event is not None:
            on = f" on {self.event.source.name}#{self.event.index} at {self.event.time.isoformat()}"
        return (
            f"{self.operation}{function} of source {self.sourceName!r}{on} failed: {self._cause()}"
        )


@dataclass
class Batch:
    """An event's planned batch: its jobs, what each input read, and planning failures.

    `progress` (kept only with a checkpoint) says, per source name, the `[time, index]` of the
    last event accepted up to this batch's event: what need not be fired again after a crash.
    """

    event: Event
    jobs: list[Job]
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: list[JobInfo] = field(default_factory=list)
    progress: dict[str, list[int]] = field(default_factory=dict)
    inputInfos: dict[int, StreamInputInfo] = field(default_factory=dict)


@dataclass
class BatchInfo:
    """What happened to an event's batch; `jobs` fills in as jobs end.

    It also answers PySpark's accessors (`batchInfo()`, `batchTime()`, `submissionTime()`,
    `schedulingDelay()`, `processingDelay()`, `totalDelay()`, `numRecords()`,
    `outputOperationInfos()`, `streamIdToInputInfo()`), so a `pyspark.streaming` listener
    works unchanged; delays are milliseconds, -1 until known, as there.
    """

    event: Event
    inputs: dict[str, dict[str, Any]]
    plannedTime: float
    jobs: list[JobInfo] = field(default_factory=list)
    startedTime: float | None = None
    completedTime: float | None = None
    inputInfos: dict[int, StreamInputInfo] = field(default_factory=dict)

    @property
    def failures(self) -> list[JobInfo]:
        """The failed jobs of this batch."""
        return [job for job in self.jobs if job.failed]

    # -- PySpark's accessors -----------------------------------------------------------------
    def batchInfo(self) -> BatchInfo:
        """This object (PySpark's callbacks receive a wrapper whose `batchInfo()` this is)."""
        return self

    def batchTime(self) -> BatchTime:
        """The batch's time: the event's (`batchTime().milliseconds()`, as in PySpark)."""
        return BatchTime(self.event.time.milliseconds)

    def submissionTime(self) -> int:
        """When the batch was planned, and so submitted (epoch ms), as a JobSet in Spark."""
        return int(self.plannedTime)

    def processingStartTime(self) -> int | None:
        """When its jobs started (epoch ms), once they did."""
        return None if self.startedTime is None else int(self.startedTime)

    def processingEndTime(self) -> int | None:
        """When its jobs ended (epoch ms), once they did."""
        return None if self.completedTime is None else int(self.completedTime)

    def schedulingDelay(self) -> int:
        """Milliseconds from the event's time until its jobs started; -1 before that."""
        if self.startedTime is None:
            return -1
        return max(0, int(self.startedTime) - self.event.time.milliseconds)

    def processingDelay(self) -> int:
        """Milliseconds the jobs took; -1 until they ended."""
        if self.startedTime is None or self.completedTime is None:
            return -1
        return int(self.completedTime - self.startedTime)

    def totalDelay(self) -> int:
        """Milliseconds from the event's time until its jobs ended; -1 until they did."""
        if self.completedTime is None:
            return -1
        return max(0, int(self.completedTime) - self.event.time.milliseconds)

    def numRecords(self) -> int:
        """Records the batch's inputs received (sockets and logs count; files and queues: 0)."""
        return sum(info.numRecords() for info in self.inputInfos.values())

    def streamIdToInputInfo(self) -> dict[int, StreamInputInfo]:
        """What each input stream read, by stream id."""
        return dict(self.inputInfos)

    def outputOperationInfos(self) -> dict[int, OutputOperationInfo]:
        """The batch's jobs as PySpark's output operations, by the id of their stream."""
        return {job.streamId: OutputOperationInfo(job) for job in self.jobs}


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
        """The id of the job's stream."""
        return self.job.streamId

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
class StreamingStarted:
    """PySpark's `onStreamingStarted` argument: `time` is the start, in epoch ms."""

    time: int


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
        """The context started (`streamingStarted.time`: epoch ms)."""

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


def plan_failure(stream: DStream[Any], event: Event, error: BaseException) -> JobInfo:
    """A `JobInfo` for a stream whose RDD could not be computed for `event`."""
    now = now_ms()
    return JobInfo(
        stream.name,
        event,
        "plan",
        now,
        now,
        now,
        error,
        "".join(_traceback.format_exception(error)),
        stream.functionName,
        streamId=stream.id,
    )


def materialize(rdd: RDD[Any]) -> None:
    """Compute every partition of `rdd` (and cache it, if persisted), keeping nothing."""

    def drain(iterator: Any) -> None:  # nested, so executors need not import reactive_spark
        for _ in iterator:
            pass

    rdd.foreachPartition(drain)
