"""The job scheduler: orders events, plans each event's batch, runs its jobs off the loop.

On the event loop, events are accepted in `(time, lineage rank, source order)` order and
numbered (`instanceId`, `index`) as they are accepted. Then, in a worker thread and one event
at a time, each batch is planned (`DStreamGraph.generateJobs`, which calls into Spark), handed
to the batch hooks (the place a write-ahead log goes), and its jobs run, at most
`maxConcurrentJobs` at once; the queued events are handed to the worker thread in runs, so the
loop is never blocked and pays one thread handoff per run, not per event. This module is the
one place that runs blocking work in threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import time as _time
import traceback
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread

from reactive_spark.events import Event

if TYPE_CHECKING:
    from pyspark import RDD

    from reactive_spark.context import StreamingContext
    from reactive_spark.dstream.base import DStream

__all__ = [
    "Batch",
    "BatchInfo",
    "Job",
    "JobInfo",
    "JobScheduler",
    "StreamingListener",
    "run_blocking",
]

log = logging.getLogger(__name__)

R = TypeVar("R")


async def run_blocking(func: Callable[..., R], *args: Any) -> R:
    """Run blocking `func(*args)` in anyio's worker threads, never on the event loop.

    Example:
        >>> # count = await run_blocking(rdd.count)
    """
    return await anyio.to_thread.run_sync(func, *args)


@dataclass
class Job:
    """One unit of work of a batch: a bound stream's output function or materialisation."""

    stream: DStream[Any]
    event: Event
    action: Callable[[], Any]
    kind: str = "output"

    @property
    def description(self) -> str:
        """`<stream> on <source>#<index>`, shown in logs and in the Spark UI."""
        return f"{self.stream.name} on {self.event.source.name}#{self.event.index}"


@dataclass
class JobInfo:
    """What happened to a job: timing (epoch ms, float) and the error, if it failed.

    `kind` is `"output"` (an output operation), `"materialize"` (a bound non-output stream) or
    `"plan"` (computing the stream's RDD failed before any job could run).
    """

    streamName: str
    event: Event
    kind: str
    submitTime: float
    startTime: float | None = None
    endTime: float | None = None
    error: BaseException | None = None
    traceback: str | None = None

    @property
    def failed(self) -> bool:
        """Whether the job raised."""
        return self.error is not None

    @property
    def duration(self) -> float | None:
        """Seconds the job ran, once it ended."""
        if self.startTime is None or self.endTime is None:
            return None
        return (self.endTime - self.startTime) / 1000

    def describe(self) -> str:
        """One line naming the stream, the event and the outcome."""
        event = f"{self.event.source.name}#{self.event.index} at {self.event.time}"
        if self.error is None:
            return f"{self.kind} job of {self.streamName} on {event}: ok"
        return f"{self.kind} job of {self.streamName} on {event} failed: {self.error!r}"


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


@dataclass
class BatchInfo:
    """What happened to an event's batch; `jobs` fills in as jobs end."""

    event: Event
    inputs: dict[str, dict[str, Any]]
    plannedTime: float
    jobs: list[JobInfo] = field(default_factory=list)
    completedTime: float | None = None

    @property
    def failures(self) -> list[JobInfo]:
        """The failed jobs of this batch."""
        return [job for job in self.jobs if job.failed]


class StreamingListener:
    """Receives scheduling events; override the methods you need (all default to no-ops).

    `onEventFired` is called on the event loop; the others in the scheduler's worker
    threads, so a listener that shares state with the loop must hand it over safely
    (`loop.call_soon_threadsafe`).

    Example:
        >>> class Failures(StreamingListener):
        ...     def __init__(self):
        ...         self.failed = []
        ...
        ...     def onJobCompleted(self, job):
        ...         if job.failed:
        ...             self.failed.append(job)
    """

    def onEventFired(self, event: Event) -> None:
        """An event was accepted (it has its `instanceId`)."""

    def onBatchStarted(self, batch: BatchInfo) -> None:
        """The event's batch was planned; its jobs are about to run."""

    def onJobStarted(self, job: JobInfo) -> None:
        """A job started running."""

    def onJobCompleted(self, job: JobInfo) -> None:
        """A job ended; `job.error` is set when it failed."""

    def onBatchCompleted(self, batch: BatchInfo) -> None:
        """Every job of the batch ended."""


def _now_ms() -> float:
    return _time.time() * 1000


BatchHook = Callable[[Batch], None]
OrderKey = tuple[int, int, int]

#: The most queued events one worker thread processes before yielding back to the loop.
MAX_EVENTS_PER_HANDOFF = 256


class JobScheduler:
    """Accepts events in order and processes them one at a time (see module docs)."""

    def __init__(self, ssc: StreamingContext, maxConcurrentJobs: int) -> None:
        self._ssc = ssc
        self._graph = ssc._graph
        self.maxConcurrentJobs = maxConcurrentJobs
        self._listeners: list[StreamingListener] = []
        self._beforeJobs: list[BatchHook] = []
        self._afterJobs: list[BatchHook] = []
        # events waiting to be accepted, FIFO per order key; the heap holds the distinct keys
        self._pending: dict[OrderKey, deque[Event]] = {}
        self._pendingKeys: list[OrderKey] = []
        self._instanceIds = itertools.count()
        self._flushScheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        # accepted events waiting for the worker thread, and how many are not processed yet
        self._ready: deque[Event] = deque()
        self._unprocessed = 0
        self._wake: asyncio.Event | None = None
        self._idle: asyncio.Event | None = None
        self._bound: frozenset[Any] = frozenset()
        # with a checkpoint: what every source fired so far, and its state at each bound event
        self._progress: dict[str, list[int]] | None = None
        self._progressAt: dict[int, dict[str, list[int]]] = {}
        self._processor: asyncio.Task[None] | None = None
        self._jobThreads: ThreadPoolExecutor | None = None
        self._dropping = False
        self._collectors: list[list[JobInfo]] = []
        self._jobGroup = f"reactive-spark-{id(self):x}"
        self.processedEvents = 0
        self.crash: BaseException | None = None

    # -- listeners and hooks -----------------------------------------------------------------
    def addListener(self, listener: StreamingListener) -> None:
        """Notify `listener` of events, batches and jobs."""
        self._listeners.append(listener)

    def addBatchHooks(
        self, before: BatchHook | None = None, after: BatchHook | None = None
    ) -> None:
        """Call `before(batch)` once a batch is planned and before its jobs, `after` once done.

        Hooks run in the scheduler's worker thread, like planning and jobs.
        """
        if before is not None:
            self._beforeJobs.append(before)
        if after is not None:
            self._afterJobs.append(after)

    def trackProgress(self, progress: dict[str, list[int]]) -> None:
        """Keep what every source fired (for the checkpoint), starting from `progress`."""
        self._progress = dict(progress)

    def resumeAfter(self, lastInstanceId: int) -> None:
        """Number accepted events from `lastInstanceId + 1` (after a restart)."""
        self._instanceIds = itertools.count(lastInstanceId + 1)

    def _tell(self, method: str, argument: Any) -> None:
        if not self._listeners:
            return
        for listener in list(self._listeners):
            try:
                getattr(listener, method)(argument)
            except Exception:
                log.exception("streaming listener %r failed in %s", listener, method)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start processing events on `loop`."""
        self._loop = loop
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._bound = frozenset(self._graph.boundSources())
        if self.maxConcurrentJobs > 1:
            self._jobThreads = ThreadPoolExecutor(
                self.maxConcurrentJobs, thread_name_prefix="reactive-spark-job"
            )
        self._processor = loop.create_task(self._process_forever(), name="reactive-spark-jobs")

    async def stop(self, graceful: bool) -> None:
        """Stop processing: after the queued events (`graceful`), or after the running batch."""
        if self._processor is None or self._idle is None:
            return
        if graceful:
            await self.idle()
        else:
            self._pending.clear()
            self._pendingKeys.clear()
            self._dropping = True
            self._done(len(self._ready))
            self._ready.clear()
            await run_blocking(self._ssc.sparkContext.cancelJobGroup, self._jobGroup)
            await self._idle.wait()
        self._processor.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._processor
        if self._jobThreads is not None:
            self._jobThreads.shutdown(wait=True)

    # -- accepting events --------------------------------------------------------------------
    def accept(self, event: Event) -> None:
        """Queue `event` for ordering; must run on the loop (see `StreamingContext`).

        Events are accepted in order of time, then the source's lineage rank (fixed at start:
        a source whose streams feed another's goes first), then `tiebreak`; events still tied
        keep the order they were posted in.
        """
        key: OrderKey = (event.time._ms, event.source._rank, event.tiebreak)
        tied = self._pending.get(key)
        if tied is None:
            self._pending[key] = tied = deque()
            heapq.heappush(self._pendingKeys, key)
        tied.append(event)
        if not self._flushScheduled and self._loop is not None:
            self._flushScheduled = True
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        """Number the pending events in order, notify listeners, and queue them for processing.

        Listeners may fire more events (derived sources do); they are accepted in order too.
        An event no stream is bound to has no batch: it is only numbered and announced.
        """
        self._flushScheduled = False
        pending, keys, ready, bound = self._pending, self._pendingKeys, self._ready, self._bound
        instance_ids = self._instanceIds
        queued = 0
        while keys:
            key = keys[0]
            tied = pending[key]
            event = tied.popleft()
            if not tied:
                heapq.heappop(keys)
                del pending[key]
            source = event.source
            if event.index is None:
                event.index = next(source._indexes)
            event.instanceId = next(instance_ids)
            if self._progress is not None:
                self._progress[source.name] = [event.time._ms, event.index]
            if self._listeners:
                self._tell("onEventFired", event)
            source._notify(event)
            if source in bound:
                if self._progress is not None:
                    self._progressAt[event.instanceId] = dict(self._progress)
                ready.append(event)
                queued += 1
            else:
                self.processedEvents += 1
        if queued:
            self._unprocessed += queued
            assert self._idle is not None and self._wake is not None
            self._idle.clear()
            self._wake.set()

    async def idle(self) -> None:
        """Wait until every accepted event has been processed."""
        if self._idle is None:
            return
        self.flush()
        await self._idle.wait()
        if self.crash is not None:
            raise self.crash

    @property
    def backlog(self) -> int:
        """Accepted events waiting to be processed."""
        return len(self._ready)

    def _done(self, count: int) -> None:
        self._unprocessed -= count
        if self._unprocessed == 0 and self._idle is not None:
            self._idle.set()

    def collectFailures(self) -> list[JobInfo]:
        """Start collecting failed jobs into the returned list (see `stopCollecting`)."""
        collected: list[JobInfo] = []
        self._collectors.append(collected)
        return collected

    def stopCollecting(self, collected: list[JobInfo]) -> None:
        """Stop filling a list made by `collectFailures`."""
        self._collectors.remove(collected)

    # -- processing --------------------------------------------------------------------------
    async def _process_forever(self) -> None:
        """Hand the queued events, in order, to one worker thread at a time."""
        assert self._wake is not None
        ready = self._ready
        while True:
            if not ready:
                self._wake.clear()
                await self._wake.wait()
                continue
            events = [ready.popleft() for _ in range(min(len(ready), MAX_EVENTS_PER_HANDOFF))]
            try:
                await run_blocking(self._process_run, events)
            except BaseException as exc:
                if isinstance(exc, asyncio.CancelledError):
                    raise
                log.exception(
                    "reactive-spark scheduler crashed in a run of %d events from %r; no "
                    "further batch runs (restart the context, from its checkpoint if it has one)",
                    len(events),
                    events[0],
                )
                self.crash = exc
                self._dropping = True
                self._done(len(ready))
                ready.clear()
                self._ssc._onCrash(exc)
            finally:
                self._done(len(events))

    def _process_run(self, events: list[Event]) -> None:
        for event in events:
            if self._dropping:
                return
            self._process(event)

    async def replay(self, batches: list[tuple[Event, dict[str, Any], bool]]) -> None:
        """Re-plan batches from a checkpoint, in order, before any new event.

        Each entry is `(event, reads, rerun)`: the inputs read what `reads` recorded; with
        `rerun` the batch is processed as new (hooks and jobs), else only its RDDs are rebuilt
        for the windows that need them.
        """

        def run() -> None:
            for event, reads, rerun in batches:
                self._process(event, reads, rerun)

        await run_blocking(run)

    def _process(
        self, event: Event, reads: dict[str, Any] | None = None, runJobs: bool = True
    ) -> None:
        """Plan the event's batch, run its hooks and jobs, then clear metadata (worker thread)."""
        submitted = _now_ms()
        batch = self._graph.generateJobs(event, reads)
        if event.instanceId is not None and self._progressAt:
            batch.progress = self._progressAt.pop(event.instanceId, batch.progress)
        if runJobs:
            self._runBatch(batch, submitted)
            self.processedEvents += 1
        elif batch.failures:
            log.warning("rebuilding %s: %s", batch.event, batch.failures[0].describe())
        self._graph.clearMetadata(event)

    def _runBatch(self, batch: Batch, submitted: float) -> None:
        """Report planning failures, call the batch hooks around the jobs, run the jobs."""
        if not (batch.jobs or batch.failures):  # a batch with neither is not reported
            for hook in self._beforeJobs:
                hook(batch)
            for hook in self._afterJobs:
                hook(batch)
            return
        info = BatchInfo(batch.event, batch.inputs, submitted)
        for failure in batch.failures:
            self._report(info, failure)
        for hook in self._beforeJobs:
            hook(batch)
        if batch.jobs:
            self._tell("onBatchStarted", info)
            self._runJobs(batch, info)
            info.completedTime = _now_ms()
        for hook in self._afterJobs:
            hook(batch)
        if batch.jobs:
            self._tell("onBatchCompleted", info)

    def _runJobs(self, batch: Batch, info: BatchInfo) -> None:
        """Run the batch's jobs, at most `maxConcurrentJobs` at once; report each outcome."""
        infos = [
            JobInfo(job.stream.name, batch.event, job.kind, info.plannedTime) for job in batch.jobs
        ]
        if self._jobThreads is None or len(batch.jobs) == 1:
            for job, job_info in zip(batch.jobs, infos, strict=True):
                self._execute(job, job_info)
        else:
            running = [
                self._jobThreads.submit(self._execute, job, job_info)
                for job, job_info in zip(batch.jobs, infos, strict=True)
            ]
            wait(running)
        for job_info in infos:
            if job_info.failed:
                self._report(info, job_info)
            else:
                info.jobs.append(job_info)
                self._tell("onJobCompleted", job_info)

    def _execute(self, job: Job, info: JobInfo) -> None:
        info.startTime = _now_ms()
        self._tell("onJobStarted", info)
        try:
            self._ssc.sparkContext.setJobGroup(self._jobGroup, job.description, True)
            job.action()
        except Exception as exc:
            info.error = exc
            info.traceback = traceback.format_exc()
        finally:
            info.endTime = _now_ms()

    def _report(self, batch: BatchInfo, info: JobInfo) -> None:
        batch.jobs.append(info)
        log.error("reactive-spark: %s\n%s", info.describe(), info.traceback or "")
        for collected in self._collectors:
            collected.append(info)
        self._tell("onJobCompleted", info)


def plan_failure(stream: DStream[Any], event: Event, error: BaseException) -> JobInfo:
    """A `JobInfo` for a stream whose RDD could not be computed for `event`."""
    now = _now_ms()
    return JobInfo(
        stream.name,
        event,
        "plan",
        now,
        now,
        now,
        error,
        "".join(traceback.format_exception(error)),
    )


def materialize(rdd: RDD[Any]) -> None:
    """Compute every partition of `rdd` (and cache it, if persisted), keeping nothing."""

    def drain(iterator: Any) -> None:  # nested, so executors need not import reactive_spark
        for _ in iterator:
            pass

    rdd.foreachPartition(drain)
