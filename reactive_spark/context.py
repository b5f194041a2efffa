"""StreamingContext: owns the graph, the scheduler and the event sources' lifecycle."""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pyspark import RDD, SparkContext

from reactive_spark._callbacks import adapt_callback, require_callable
from reactive_spark._validation import require_int
from reactive_spark.checkpoint import Checkpoint, resume
from reactive_spark.dependencies import EventDependency
from reactive_spark.dstream.base import DStream
from reactive_spark.errors import (
    ContextStateError,
    ForeignContextError,
    InvalidArgumentError,
    JobFailedError,
)
from reactive_spark.events import Event, EventSource
from reactive_spark.graph import DStreamGraph
from reactive_spark.scheduler import JobInfo, JobScheduler, StreamingListener, run_blocking
from reactive_spark.sources.timer import TimerEventSource
from reactive_spark.time import (
    Clock,
    Duration,
    SystemClock,
    Time,
    VirtualClock,
    to_duration,
    to_time,
)

if TYPE_CHECKING:
    from reactive_spark.log.backend import LogBackend, LogRecord
    from reactive_spark.log.stream import DirectLogInputDStream
    from reactive_spark.sources.backlog import BacklogEventSource
    from reactive_spark.sources.file_watcher import FileWatcherEventSource
    from reactive_spark.sources.observable import ObservableEventSource
    from reactive_spark.sources.rest import RestEventSource

__all__ = ["StreamingContext"]

log = logging.getLogger(__name__)

INITIALIZED, ACTIVE, STOPPED = "initialized", "active", "stopped"

#: advanceTo lets the loop run other tasks every this many virtual instants, and waits for the
#: scheduler when this many accepted events are waiting.
YIELD_EVERY = 64
MAX_BACKLOG = 10_000


class StreamingContext:
    """The entry point: event sources, input streams, and the loop that runs their jobs.

    Args:
        sparkContext: The SparkContext jobs run on (a SparkSession is accepted too).
        batchDuration: Period of the default timer that drives unbound outputs, as in
            pyspark.streaming (a Duration, timedelta or seconds); None if every output is bound.
        clock: `SystemClock()` (default) or a `VirtualClock(start)` for simulation and tests.
        checkpoint: Directory for checkpoints: a write-ahead log of batches, from which a
            restarted context recovers (see `reactive_spark.checkpoint`), and the RDD
            checkpoints of `DStream.checkpoint`.
        maxConcurrentJobs: How many jobs of one event may run at once.

    Example:
        >>> # async with StreamingContext(sc, Seconds(1), clock=VirtualClock(t0)) as ssc:
        >>> #     ssc.queueStream([[1, 2], [3]]).map(lambda x: x * 10).pprint()
        >>> #     await ssc.start()
        >>> #     await ssc.runUntil(t0 + Seconds(2))
    """

    def __init__(
        self,
        sparkContext: SparkContext | Any,
        batchDuration: Duration | timedelta | float | None = None,
        *,
        clock: Clock | None = None,
        checkpoint: str | None = None,
        maxConcurrentJobs: int = 1,
    ) -> None:
        spark = getattr(sparkContext, "sparkContext", sparkContext)
        if not isinstance(spark, SparkContext):
            raise InvalidArgumentError(
                f"sparkContext must be a SparkContext or SparkSession, got {sparkContext!r}",
            )
        if clock is not None and not isinstance(clock, Clock):
            raise InvalidArgumentError(f"clock must be a Clock, got {clock!r}")
        require_int(maxConcurrentJobs, "maxConcurrentJobs")
        if checkpoint is not None and (not isinstance(checkpoint, str) or not checkpoint):
            raise InvalidArgumentError(
                f"checkpoint must be a directory path, got {checkpoint!r}",
            )
        self._sc = spark
        self.batchDuration = (
            None if batchDuration is None else to_duration(batchDuration, "batchDuration")
        )
        self.clock = clock or SystemClock()
        self.checkpointDirectory = checkpoint
        self._graph = DStreamGraph(self)
        self._scheduler = JobScheduler(self, maxConcurrentJobs)
        self._sources: list[EventSource] = []
        self._state = INITIALIZED
        self._zeroTime: Time | None = None
        self._checkpoint: Checkpoint | None = None
        self._resumedAt: Time | None = None  # when a restart from a checkpoint caught up
        self.defaultTimer: TimerEventSource | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loopThread: int | None = None
        self._terminated: asyncio.Event | None = None
        self._crash: BaseException | None = None
        self._advancing = False

    # -- properties --------------------------------------------------------------------------
    @property
    def sparkContext(self) -> SparkContext:
        """The SparkContext jobs run on."""
        return self._sc

    @property
    def state(self) -> str:
        """`"initialized"`, `"active"` or `"stopped"`."""
        return self._state

    @property
    def zeroTime(self) -> Time:
        """When the context started (before start: the clock's current time)."""
        return self._zeroTime if self._zeroTime is not None else self.clock.now()

    @property
    def graph(self) -> DStreamGraph:
        """The lineage graph."""
        return self._graph

    @property
    def sources(self) -> list[EventSource]:
        """Every event source of this context, in creation order."""
        return list(self._sources)

    async def __aenter__(self) -> StreamingContext:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Stop the context (not the SparkContext it was given) on leaving the block."""
        if self._state == ACTIVE:
            await self.stop(stopSparkContext=False)

    # -- definitions -------------------------------------------------------------------------
    def _requireNotStarted(self, action: str) -> None:
        if self._state != INITIALIZED:
            raise ContextStateError(f"cannot {action}: the StreamingContext is {self._state}")

    def _registerSource(self, source: EventSource) -> int:
        if self._state != INITIALIZED:
            raise ContextStateError(
                f"cannot create event source {source.name!r}: the StreamingContext is "
                f"{self._state}",
            )
        self._sources.append(source)
        return len(self._sources) - 1

    def timer(
        self,
        start: Time | datetime,
        end: Time | datetime | None,
        period: Duration | timedelta | float,
        name: str,
    ) -> TimerEventSource:
        """A timer firing at `start + k * period` while `<= end` (`end=None`: forever).

        Example:
            >>> # daily = ssc.timer(datetime(2024, 1, 1, tzinfo=UTC), None, Days(1), "daily")
        """
        return TimerEventSource(self, start, end, period, name)

    def fileWatcher(
        self,
        path: str,
        name: str,
        pattern: str | None = None,
        *,
        recursive: bool = True,
        settle: Duration | timedelta | float = 0.05,
        maxDelay: Duration | timedelta | float = 1.6,
    ) -> FileWatcherEventSource:
        """A source firing `FileEvent`s for files that appear or change under `path`.

        Example:
            >>> # uploads = ssc.fileWatcher("incoming", "uploads", pattern="*.csv")
        """
        from reactive_spark.sources.file_watcher import FileWatcherEventSource

        return FileWatcherEventSource(
            self, path, name, pattern=pattern, recursive=recursive, settle=settle, maxDelay=maxDelay
        )

    def restServer(
        self,
        host: str | None = "127.0.0.1",
        port: int = 4140,
        name: str = "rest",
        *,
        token: str | None = None,
        maxBodySize: int = 1024 * 1024,
    ) -> RestEventSource:
        """A source firing `RestEvent`s for HTTP requests on its routes (`.get` / `.post`).

        Example:
            >>> # rest = ssc.restServer(port=4140, name="triggers").post("/jobs/report")
        """
        from reactive_spark.sources.rest import RestEventSource

        return RestEventSource(self, host, port, name, token=token, maxBodySize=maxBodySize)

    def rxEventSource(self, observable: Any, name: str) -> ObservableEventSource:
        """A source firing an `ObservableEvent` for every value `observable` emits.

        Example:
            >>> # source = ssc.rxEventSource(reactivex.interval(60.0), "minutely")
        """
        from reactive_spark.sources.observable import ObservableEventSource

        return ObservableEventSource(self, observable, name)

    def queueStream(
        self,
        rdds: Iterable[RDD[Any] | Iterable[Any]],
        oneAtATime: bool = True,
        default: RDD[Any] | Iterable[Any] | None = None,
    ) -> DStream[Any]:
        """A stream of RDDs (or lists) from a queue, one per event or all at once.

        Once the queue is empty each event gets `default`, or an empty RDD.

        Example:
            >>> # ssc.queueStream([[1, 2], [3]]).count().pprint()
        """
        from reactive_spark.dstream.inputs import QueueInputDStream

        if isinstance(rdds, str | bytes) or not isinstance(rdds, Iterable):
            raise InvalidArgumentError(f"rdds must be a sequence of RDDs or lists, got {rdds!r}")
        return QueueInputDStream(self, rdds, oneAtATime, default)

    def textFileStream(self, directory: str) -> DStream[str]:
        """Lines of the files that appear in `directory`.

        Bound to a file watcher it reads the event's files; otherwise the files modified
        between the stream's previous event and this one.

        Example:
            >>> # ssc.textFileStream("logs").filter(lambda l: "ERROR" in l).pprint()
        """
        from reactive_spark.dstream.inputs import FileInputDStream

        return FileInputDStream(self, directory)

    def binaryRecordsStream(self, directory: str, recordLength: int) -> DStream[bytes]:
        """Fixed-length records (`recordLength` bytes) of the files that appear in `directory`.

        Files are picked as by `textFileStream`.

        Example:
            >>> # ssc.binaryRecordsStream("frames", 16).map(lambda r: r[:4]).pprint()
        """
        from reactive_spark.dstream.inputs import FileInputDStream

        return FileInputDStream(self, directory, recordLength)

    def directStream(
        self,
        log: LogBackend,
        topics: Iterable[str],
        fromOffsets: Mapping[tuple[str, int], int] | None = None,
        startingOffsets: str = "latest",
        maxRatePerPartition: float | None = None,
        messageHandler: Callable[[LogRecord], Any] | None = None,
    ) -> DirectLogInputDStream:
        """Records of `topics` in `log`, each batch an exact offset range per partition.

        Each batch reads, per partition, from where the previous one stopped (first from
        `fromOffsets[(topic, partition)]`, else the `startingOffsets` end of the log) up to
        the latest offset, or `maxRatePerPartition` records per second since the previous
        batch. Elements are `messageHandler(record)`, by default `(key, value)`; the batch's
        RDD has `offsetRanges()`.

        Example:
            >>> # clicks = ssc.directStream(FileLog("data/log"), ["clicks"]).bind(every_minute)
        """
        from reactive_spark.log.stream import DirectLogInputDStream

        return DirectLogInputDStream(
            self, log, topics, fromOffsets, startingOffsets, maxRatePerPartition, messageHandler
        )

    def backlogSource(
        self,
        stream: DirectLogInputDStream,
        threshold: int,
        name: str,
        *,
        interval: Duration | timedelta | float = 1.0,
    ) -> BacklogEventSource:
        """A source firing a `LogEvent` when `threshold` records wait for a direct stream.

        Example:
            >>> # full = ssc.backlogSource(clicks, 1000, "backlog", interval=Seconds(5))
        """
        from reactive_spark.sources.backlog import BacklogEventSource

        return BacklogEventSource(self, stream, threshold, name, interval)

    def union(self, *dstreams: DStream[Any]) -> DStream[Any]:
        """The elements of all `dstreams`, for each event.

        Example:
            >>> # ssc.union(errors, warnings).pprint()
        """
        if not dstreams:
            raise InvalidArgumentError("union needs at least one DStream, got none")
        return self.transform(list(dstreams), lambda rdds: self._sc.union(list(rdds)))

    def transform(
        self, dstreams: Sequence[DStream[Any]], transformFunc: Callable[..., Any]
    ) -> DStream[Any]:
        """A stream of `transformFunc(rdds)` over the RDDs of several streams.

        `transformFunc` may take `(rdds)`, `(time, rdds)` or `(time, rdds, event)`; `rdds` is
        in the order of `dstreams` (an empty RDD for a stream without one for the event).

        Example:
            >>> # ssc.transform([a, b], lambda rdds: rdds[0].subtract(rdds[1]))
        """
        from reactive_spark.dstream.transformed import TransformedDStream

        streams = list(dstreams)
        if not streams:
            raise InvalidArgumentError("dstreams must hold at least one DStream, got none")
        for stream in streams:
            if not isinstance(stream, DStream):
                raise InvalidArgumentError(f"dstreams must hold DStreams, got {stream!r}")
            if stream.context() is not self:
                raise ForeignContextError(f"{stream.name} belongs to another StreamingContext")
        adapted = adapt_callback(transformFunc, 1, "transformFunc", "StreamingContext.transform")
        return TransformedDStream(
            self,
            [EventDependency(stream) for stream in streams],
            lambda rdds, event: adapted((list(rdds),), event),
            "transform",
            transformFunc,
        )

    def checkpoint(self, directory: str) -> None:
        """Checkpoint to `directory` (as `StreamingContext(..., checkpoint=directory)`).

        Example:
            >>> # ssc.checkpoint("/data/checkpoint")
        """
        self._requireNotStarted("set the checkpoint directory")
        if not isinstance(directory, str) or not directory:
            raise InvalidArgumentError(f"directory must be a directory path, got {directory!r}")
        self.checkpointDirectory = directory

    @classmethod
    def getOrCreate(
        cls, checkpointPath: str, setupFunc: Callable[[], StreamingContext]
    ) -> StreamingContext:
        """The context `setupFunc()` builds, checkpointing to `checkpointPath`.

        As in pyspark.streaming, but the graph is code, not data: `setupFunc` runs on every
        start, and `start()` recovers from what `checkpointPath` holds (see docs/checkpoints.md).

        Example:
            >>> # ssc = StreamingContext.getOrCreate("/data/checkpoint", build)
        """
        if not isinstance(checkpointPath, str) or not checkpointPath:
            raise InvalidArgumentError(
                f"checkpointPath must be a directory path, got {checkpointPath!r}",
            )
        require_callable(setupFunc, "setupFunc", "getOrCreate")
        ssc = setupFunc()
        if not isinstance(ssc, StreamingContext):
            raise InvalidArgumentError(
                f"setupFunc must return a StreamingContext, got {ssc!r}",
            )
        if ssc.checkpointDirectory not in (None, checkpointPath):
            raise InvalidArgumentError(
                f"setupFunc's context checkpoints to {ssc.checkpointDirectory!r}, not to "
                f"checkpointPath {checkpointPath!r}",
            )
        ssc.checkpoint(checkpointPath)
        return ssc

    def remember(self, duration: Duration | timedelta | float) -> None:
        """Keep every stream's RDDs for `duration` (for `slice`); may be set once.

        Example:
            >>> # ssc.remember(Minutes(5))
        """
        self._requireNotStarted("set the remember duration")
        self._graph.remember(to_duration(duration, "duration"))

    def addStreamingListener(self, listener: StreamingListener) -> None:
        """Notify `listener` of fired events, batches and jobs.

        Example:
            >>> # ssc.addStreamingListener(MyListener())
        """
        if not isinstance(listener, StreamingListener):
            raise InvalidArgumentError(
                f"listener must be a StreamingListener, got {listener!r}",
            )
        self._scheduler.addListener(listener)

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the sources and the scheduler; no stream may be created or bound after this.

        Unbound outputs are bound to the default timer `timer(zeroTime + batchDuration, None,
        batchDuration)`.
        """
        self._requireNotStarted("start")
        loop = asyncio.get_running_loop()
        self._graph.validate()
        self.clock.attach(loop)
        recovered = None
        if self.checkpointDirectory is not None:
            self._checkpoint = Checkpoint(self.checkpointDirectory)
            recovered = await run_blocking(self._checkpoint.load)
        self._zeroTime = self.clock.now() if recovered is None else recovered.zeroTime
        unbound = self._graph.unboundOutputs()
        if unbound:
            if self.batchDuration is None:
                raise ContextStateError(
                    f"outputs {[s.name for s in unbound]} are bound to no source and the "
                    "context has no batchDuration for the default timer; bind them or pass one",
                )
            self.defaultTimer = TimerEventSource(
                self, self._zeroTime + self.batchDuration, None, self.batchDuration, "DefaultTimer"
            )
            for stream in unbound:
                stream._bound.append(self.defaultTimer)
                self._graph.bind(stream, self.defaultTimer)
        if self.checkpointDirectory is not None:
            rdds = os.path.join(self.checkpointDirectory, "rdds")
            await run_blocking(self._sc.setCheckpointDir, rdds)
        elif any(s._checkpointInterval or s._checkpointCount for s in self._graph.streams) and (
            await run_blocking(self._sc.getCheckpointDir) is None
        ):
            raise ContextStateError(
                "streams are checkpointed but neither the StreamingContext (checkpoint=...) "
                "nor the SparkContext has a checkpoint directory",
            )
        self._graph.start(self._zeroTime, self._sources)
        await run_blocking(self._graph.startInputs)
        self._loop = loop
        self._loopThread = threading.get_ident()
        self._terminated = asyncio.Event()
        self._state = ACTIVE
        self._scheduler.start(loop)
        try:
            resumed: set[str] = set()
            if self._checkpoint is not None:
                resumed = await resume(self, self._checkpoint, recovered)
            for source in self._sources:
                await _settle(source.restart() if source.name in resumed else source.start())
        except BaseException:
            log.exception("an event source failed to start; stopping the StreamingContext")
            await self.stop(stopSparkContext=False)
            raise
        log.info("StreamingContext started at %s", self._zeroTime)

    async def stop(self, stopSparkContext: bool = True, stopGracefully: bool = False) -> None:
        """Stop the sources and the scheduler, then (by default) the SparkContext.

        With `stopGracefully` every accepted event is processed first; otherwise queued events
        are dropped and running Spark jobs cancelled.
        """
        if self._state == STOPPED:
            return
        was_active = self._state == ACTIVE
        self._state = STOPPED
        if was_active:
            for source in self._sources:
                try:
                    await _settle(source.stop())
                except Exception:
                    log.exception("event source %r failed to stop", source)
            await self._scheduler.stop(graceful=stopGracefully)
            if self._checkpoint is not None:
                await run_blocking(self._checkpoint.close)
        if stopSparkContext:
            await run_blocking(self._sc.stop)
        if self._terminated is not None:
            self._terminated.set()
        log.info("StreamingContext stopped")

    def _onCrash(self, error: BaseException) -> None:
        self._crash = error
        if self._terminated is not None:
            self._terminated.set()

    async def awaitTermination(self, timeout: float | None = None) -> None:
        """Wait until the context is stopped (or `timeout` seconds pass); re-raise a crash."""
        await self.awaitTerminationOrTimeout(timeout)

    async def awaitTerminationOrTimeout(self, timeout: float | None) -> bool:
        """Wait up to `timeout` seconds for the context to stop; True if it stopped."""
        if self._state == INITIALIZED or self._terminated is None:
            raise ContextStateError("cannot await termination: the StreamingContext is not started")
        try:
            await asyncio.wait_for(self._terminated.wait(), timeout)
        except TimeoutError:
            return False
        if self._crash is not None:
            raise self._crash
        return True

    # -- events ------------------------------------------------------------------------------
    def _postEvent(self, event: Event) -> None:
        if self._state != ACTIVE or self._loop is None:
            log.warning("dropping %r: the StreamingContext is %s", event, self._state)
            return
        if threading.get_ident() == self._loopThread:
            self._scheduler.accept(event)
        else:
            self._loop.call_soon_threadsafe(self._scheduler.accept, event)

    async def advanceTo(self, time: Time | datetime) -> list[JobInfo]:
        """Move a virtual clock to `time`, firing every event due on the way, in order.

        Events are accepted instant by instant and their batches processed in that order;
        when it returns every job has completed. Returns the failed jobs (later events still
        ran).

        Example:
            >>> # failures = await ssc.advanceTo(t0 + Days(7))
        """
        target = to_time(time, "time")
        clock = self.clock
        if not isinstance(clock, VirtualClock):
            raise ContextStateError("advanceTo needs a StreamingContext with a VirtualClock")
        if self._state != ACTIVE:
            raise ContextStateError(f"cannot advance: the StreamingContext is {self._state}")
        if target < clock.now():
            raise InvalidArgumentError(
                f"time must not be before the clock's current time {clock.now()}, got {target}",
            )
        if self._advancing:
            raise ContextStateError("advanceTo is already running on this context")
        self._advancing = True
        failures = self._scheduler.collectFailures()
        try:
            await self._scheduler.idle()
            steps = 0
            while True:
                due = clock.nextDue()
                if due is None or due > target:
                    break
                clock.advanceTo(due)
                # accepting each instant's events before moving on keeps them in time order;
                # their batches are processed meanwhile, in that order, by the scheduler
                self._scheduler.flush()
                steps += 1
                if self._scheduler.backlog > MAX_BACKLOG:
                    await self._scheduler.idle()
                elif steps % YIELD_EVERY == 0:
                    await asyncio.sleep(0)
            clock.advanceTo(target)
            await self._scheduler.idle()
        finally:
            self._advancing = False
            self._scheduler.stopCollecting(failures)
        return failures

    async def runUntil(self, time: Time | datetime) -> None:
        """`advanceTo(time)`, then raise `JobFailedError` with every failure, if any.

        Example:
            >>> # await ssc.runUntil(datetime(2024, 12, 31, tzinfo=UTC))
        """
        failures = await self.advanceTo(time)
        if failures:
            raise JobFailedError(failures)


async def _settle(result: Awaitable[None] | None) -> None:
    """Await what a source's lifecycle method returned, if it is awaitable."""
    if inspect.isawaitable(result):
        await result
