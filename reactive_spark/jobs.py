"""What runs: a batch's jobs, and what became of them (the scheduler's, listeners' view).

A `Job` is one unit of work of an event's `Batch`; `JobInfo` and `BatchInfo` say what became of
them (a failed `JobInfo` is a `Failure`, see `reactive_spark.failures`).
"""

from __future__ import annotations

import traceback as _traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reactive_spark.events import Event
from reactive_spark.failures import Failure
from reactive_spark.listener import BatchTime, OutputOperationInfo, StreamInputInfo
from reactive_spark.time import now_ms

if TYPE_CHECKING:
    from pyspark import RDD

    from reactive_spark.dstream.base import DStream

__all__ = [
    "BatchInfo",
    "JobInfo",
]


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
    #: The position of the job's output among the context's outputs, from 0 (PySpark's output
    #: operation id); -1 for what no output ran (a stream whose RDD could not be computed).
    outputId: int = -1
    #: The Spark job group the job's Spark jobs ran in (`sc.statusTracker()` finds them).
    sparkJobGroup: str | None = None

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
    #: Whether a stop cancelled some of its jobs (or kept them from starting): it did not
    #: complete, and a restart from a checkpoint runs it again.
    cancelled: bool = False


@dataclass
class BatchInfo:
    """What happened to an event's batch; `jobs` fills in as jobs end.

    It also answers PySpark's accessors (`batchInfo()`, `batchTime()`, `submissionTime()`,
    `schedulingDelay()`, `processingDelay()`, `totalDelay()`, `numRecords()`,
    `outputOperationInfos()`, `streamIdToInputInfo()`), so a `pyspark.streaming` listener
    works unchanged; times and delays are milliseconds, -1 until known, as there.
    """

    event: Event
    inputs: dict[str, dict[str, Any]]
    plannedTime: float
    jobs: list[JobInfo] = field(default_factory=list)
    #: The batch's jobs as planned, from its submission; each fills in as it runs, and goes to
    #: `jobs` when the batch's jobs have ended.
    planned: list[JobInfo] = field(default_factory=list)
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
        """When the batch was planned, and so submitted (epoch ms), as a JobSet in Spark.

        This and the processing times are on the wall clock, also on a virtual clock, where
        `batchTime()` is the event's virtual time: use the delays, not their difference.
        """
        return int(self.plannedTime)

    def processingStartTime(self) -> int:
        """When its jobs started (epoch ms); -1 before that, as in PySpark."""
        return -1 if self.startedTime is None else int(self.startedTime)

    def processingEndTime(self) -> int:
        """When its jobs ended (epoch ms); -1 before that, as in PySpark."""
        return -1 if self.completedTime is None else int(self.completedTime)

    def schedulingDelay(self) -> int:
        """Milliseconds from the event's time until its jobs started; -1 before that.

        On a virtual clock it is 0: a batch runs at its event's instant, as time stands still
        while batches run (only the processing is measured on the wall clock).
        """
        if self.startedTime is None:
            return -1
        if self.event.source.context.clock.isVirtual:
            return 0
        return max(0, int(self.startedTime) - self.event.time.milliseconds)

    def processingDelay(self) -> int:
        """Milliseconds the jobs took; -1 until they ended."""
        if self.startedTime is None or self.completedTime is None:
            return -1
        return int(self.completedTime - self.startedTime)

    def totalDelay(self) -> int:
        """Milliseconds from the event's time until its jobs ended; -1 until they did.

        The scheduling delay plus the processing delay, as in PySpark.
        """
        if self.startedTime is None or self.completedTime is None:
            return -1
        return self.schedulingDelay() + self.processingDelay()

    def numRecords(self) -> int:
        """Records the batch's inputs received (sockets and logs count; files and queues: 0)."""
        return sum(info.numRecords() for info in self.inputInfos.values())

    def streamIdToInputInfo(self) -> dict[int, StreamInputInfo]:
        """What each input stream read, by stream id."""
        return dict(self.inputInfos)

    def outputOperationInfos(self) -> dict[int, OutputOperationInfo]:
        """The batch's output operations, by their id, as PySpark's (see `JobInfo.outputId`).

        Every one the batch runs, from its submission (not started yet: times -1). A stream
        whose RDD could not be computed is not an output operation: its failure is in `jobs`,
        and the outputs that needed it run no job.
        """
        return {job.outputId: OutputOperationInfo(job) for job in self.planned if job.outputId >= 0}


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
