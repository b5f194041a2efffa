"""StreamingContext: owns the graph, the scheduler and the event sources; see lifecycle.py."""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any, ClassVar

from pyspark import SparkContext

from reactive_spark._callbacks import require_callable, require_positional
from reactive_spark._validation import (
    require_bool,
    require_checkpoint_path,
    require_int,
    require_timeout,
)
from reactive_spark.backfill import Backfill, BackfillReport, Progress
from reactive_spark.blocking import BlockingCalls
from reactive_spark.checkpoint import Checkpoint
from reactive_spark.clock import Clock, SystemClock, VirtualClock
from reactive_spark.dstream.definitions import InputStreamDefinitions
from reactive_spark.errors import ContextStateError, InvalidArgumentError
from reactive_spark.events import EventSource
from reactive_spark.failures import Failure, FailureLedger
from reactive_spark.graph import DStreamGraph
from reactive_spark.lifecycle import Lifecycle
from reactive_spark.listener import ListenerBus, StreamingListener
from reactive_spark.runtime import INITIALIZED, Runtime
from reactive_spark.scheduler import JobScheduler
from reactive_spark.source_queue import DEFAULT_MAX_QUEUED
from reactive_spark.sources.definitions import EventSourceDefinitions
from reactive_spark.sources.timer import TimerEventSource
from reactive_spark.time import Duration, Time, to_duration
from reactive_spark.virtual_time import VirtualTimeDriver

__all__ = ["StreamingContext"]


#: The checkpoint directory `getOrCreate` is building a context for, so that the context
#: `setupFunc` creates knows it (and `ssc.recovered` can tell whether it recovers).
_BUILDING_FOR: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "reactive_spark_building_for", default=None
)


def _same_path(first: str | None, second: str | None) -> bool:
    """Whether two checkpoint paths name the same directory (`./cp` and `cp/` do)."""
    if first is None or second is None:
        return False
    return os.path.realpath(first) == os.path.realpath(second)


class StreamingContext(EventSourceDefinitions, InputStreamDefinitions):
    """The entry point: event sources, input streams, and the loop that runs their jobs.

    Args:
        sparkContext: The SparkContext jobs run on (a SparkSession is accepted too).
        batchDuration: Period of the default timer that drives unbound outputs, as in
            pyspark.streaming (a Duration, timedelta or seconds); None if every output is bound.
        clock: `SystemClock()` (default) or a `VirtualClock(start)` for simulation and tests.
        checkpoint: Directory for checkpoints: a write-ahead log of batches, from which a
            restarted context recovers (see `reactive_spark.checkpoint`), and the RDD
            checkpoints of `DStream.checkpoint`. A started context holds it until it stops:
            one driver at a time writes it.
        maxConcurrentJobs: How many jobs of one event may run at once.
        freezeHeap: While the context runs, keep the garbage collector off the objects that
            exist when it starts (`gc.freeze`). Off by default: the collector is the
            process's. A program that owns its process may turn it on (`reactive-spark run`
            and `demo` do): without it every full collection walks Spark's, every module's and
            the application's objects, tens of milliseconds in which no event moves. The last
            such context to stop unfreezes the heap, unless the application froze objects
            itself since; a heap the application froze before is left alone (see
            docs/concepts.md).
        maxQueuedEvents: The bound on each source's waiting events unless the source says
            otherwise (`EventSource.overflow`); past it, the source's overflow policy decides.
        watchdog: Warn when the event loop is blocked for over a second (a `time.sleep` in a
            coroutine, say), naming where. On by itself when the loop is in asyncio debug
            mode; True starts it in any mode. It is a thread of its own while the context runs.

    Examples:
        >>> import asyncio
        >>> from reactive_spark import Seconds, StreamingContext, VirtualClock
        >>> async def main():
        ...     async with StreamingContext(sc, Seconds(1), clock=VirtualClock(t0)) as ssc:
        ...         ssc.queueStream([[1, 2], [3]]).map(lambda x: x * 10).pprint()
        ...         await ssc.start()
        ...         await ssc.runUntil(t0 + Seconds(2))
        >>> asyncio.run(main())
        -------------------------------------------
        Time: 2024-01-01 00:00:01+00:00
        -------------------------------------------
        10
        20
        <BLANKLINE>
        -------------------------------------------
        Time: 2024-01-01 00:00:02+00:00
        -------------------------------------------
        30
        <BLANKLINE>
    """

    #: Started and not stopped, in start order (`getActive`); PySpark keeps one per process.
    _active: ClassVar[list[StreamingContext]] = []

    def __init__(
        self,
        sparkContext: SparkContext | Any,
        batchDuration: Duration | timedelta | float | None = None,
        *,
        clock: Clock | None = None,
        checkpoint: str | None = None,
        maxConcurrentJobs: int = 1,
        freezeHeap: bool = False,
        watchdog: bool = False,
        maxQueuedEvents: int = DEFAULT_MAX_QUEUED,
    ) -> None:
        spark = getattr(sparkContext, "sparkContext", sparkContext)
        if not isinstance(spark, SparkContext):
            raise InvalidArgumentError(
                f"sparkContext must be a SparkContext or SparkSession, got {sparkContext!r}",
            )
        if spark._jsc is None:  # noqa: SLF001 # PySpark's stop() clears it; no public test
            raise InvalidArgumentError(
                "sparkContext is stopped (a StreamingContext's stop() stops it unless given "
                "stopSparkContext=False): make a new SparkContext, or stop the earlier "
                "StreamingContext with stopSparkContext=False to keep using this one"
            )
        if clock is not None and not isinstance(clock, Clock):
            raise InvalidArgumentError(f"clock must be a Clock, got {clock!r}")
        require_int(maxConcurrentJobs, "maxConcurrentJobs")
        freeze_heap = require_bool(freezeHeap, "freezeHeap")
        watch_loop = require_bool(watchdog, "watchdog")
        require_int(maxQueuedEvents, "maxQueuedEvents")
        if checkpoint is not None:
            checkpoint = require_checkpoint_path(checkpoint, "checkpoint")
        if checkpoint is None:
            checkpoint = _BUILDING_FOR.get()
        self._sc = spark
        self.batchDuration = (
            None if batchDuration is None else to_duration(batchDuration, "batchDuration")
        )
        self.clock = clock or SystemClock()
        """The clock that stamps events and schedules timers (`VirtualClock` in simulations)."""
        self.checkpointDirectory = checkpoint
        self._graph = DStreamGraph(self)
        self._blocking = BlockingCalls()
        # the failures awaitTermination has not raised and advanceTo not returned yet
        self._failures = FailureLedger(returns_failures=isinstance(self.clock, VirtualClock))
        self._listeners = ListenerBus(on_failure=self._failures.note)
        self._scheduler = JobScheduler(
            self._graph,
            spark,
            maxConcurrentJobs,
            self._listeners,
            self._failures.crashed,
            self._blocking,
            maxQueuedEvents,
        )
        # what its sources, operators and streams may ask of the engine (docs/architecture.md)
        self._runtime = Runtime(
            self,
            self.clock,
            post=self._scheduler.order.post,
            accept_run=self._scheduler.order.accept_run,
            report=self._listeners.report,
            tell=self._listeners.tell,
            run_blocking=self._blocking.run,
            accepting=lambda: self._scheduler.accepting,
            order=self._scheduler.order,
        )
        self._virtual_time = VirtualTimeDriver(self._runtime, self._scheduler, self._failures)
        # the order in which those parts start and stop
        self._lifecycle = Lifecycle(
            self,
            graph=self._graph,
            runtime=self._runtime,
            scheduler=self._scheduler,
            blocking=self._blocking,
            failures=self._failures,
            listeners=self._listeners,
            active=StreamingContext._active,
            freeze_heap=freeze_heap,
            watch_loop=watch_loop,
            recovers_checkpoint=checkpoint is not None,
        )

    # -- properties --------------------------------------------------------------------------
    @property
    def sparkContext(self) -> SparkContext:
        """The SparkContext jobs run on."""
        return self._sc

    @property
    def state(self) -> str:
        """`"initialized"`, `"active"` or `"stopped"`."""
        return self._runtime.state

    @property
    def zeroTime(self) -> Time:
        """When the context started (before start: the clock's current time)."""
        zero_time = self._lifecycle.zero_time
        return zero_time if zero_time is not None else self.clock.now()

    @property
    def queueDepth(self) -> int:
        """Events waiting: posted and not accepted yet, or accepted and not processed yet."""
        return self._scheduler.queue_depth

    @property
    def processedThrough(self) -> int:
        """The `instanceId` of the last event whose batch was processed (-1: none yet)."""
        return self._scheduler.processed_through

    @property
    def defaultTimer(self) -> TimerEventSource | None:
        """The timer that outputs bound to no source go on: made at start from `batchDuration`.

        None before start, and when every output is bound.
        """
        return self._lifecycle.default_timer

    @property
    def startedAt(self) -> Time:
        """When `start()` ran (before that: the clock's current time).

        The zero time, except for a context restarted from a checkpoint: then the restart, from
        which sources new to the application start.
        """
        if self._lifecycle.started_at is not None:
            return self._lifecycle.started_at
        return self.zeroTime

    @property
    def recovered(self) -> bool:
        """Whether this context recovers (or recovered) from a checkpoint.

        Before `start()`: whether it will, its checkpoint directory (given to the constructor
        or `getOrCreate`, not `checkpoint()` alone) holding a checkpoint to recover from;
        after: whether `start()` did. `getOrCreate` runs `setupFunc` on every start (the graph
        is code, not checkpoint data), and a context created inside it already knows its
        checkpoint directory, so `setupFunc` can skip what only a new application should do.

        Examples:
            >>> import tempfile
            >>> def setup():
            ...     ssc = StreamingContext(sc, 1)
            ...     if not ssc.recovered:
            ...         print("a new application")
            ...     ssc.queueStream([[1]]).pprint()
            ...     return ssc
            >>> created = StreamingContext.getOrCreate(tempfile.mkdtemp(), setup)
            a new application
        """
        if self._runtime.state != INITIALIZED:
            return self._lifecycle.recovered
        return (
            self._lifecycle.recovers_checkpoint
            and self.checkpointDirectory is not None
            and Checkpoint(self.checkpointDirectory).exists()
        )

    @property
    def graph(self) -> DStreamGraph:
        """The lineage graph."""
        return self._graph

    @property
    def sources(self) -> list[EventSource]:
        """Every event source of this context, in creation order."""
        return list(self._runtime.sources)

    async def __aenter__(self) -> StreamingContext:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Stop the context (not the SparkContext it was given) on leaving the block."""
        if self._runtime.state != INITIALIZED and not self._lifecycle.stop_complete:
            await self.stop(stopSparkContext=False)

    # -- definitions (and see EventSourceDefinitions, InputStreamDefinitions) -------------
    def checkpoint(self, directory: str) -> None:
        """Checkpoint to `directory`: where the write-ahead log goes, as in pyspark.streaming.

        As there, this alone does not recover from what `directory` holds: the context starts
        afresh, and an earlier run's checkpoint there is set aside (with a warning) in
        `directory/replaced/`.
        `StreamingContext.getOrCreate(directory, setupFunc)` and `StreamingContext(...,
        checkpoint=directory)` recover from it (see docs/checkpoints.md).

        Examples:
            >>> ssc.checkpoint("/data/checkpoint")
            >>> ssc.checkpointDirectory
            '/data/checkpoint'
        """
        self._runtime.require_not_started("set the checkpoint directory")
        directory = require_checkpoint_path(directory, "directory")
        self._lifecycle.recovers_checkpoint = _same_path(_BUILDING_FOR.get(), directory) or (
            self._lifecycle.recovers_checkpoint and _same_path(self.checkpointDirectory, directory)
        )
        self.checkpointDirectory = directory

    @classmethod
    def getOrCreate(
        cls, checkpointPath: str, setupFunc: Callable[[], StreamingContext]
    ) -> StreamingContext:
        """The context `setupFunc()` builds, checkpointing to `checkpointPath`.

        As in pyspark.streaming, but the graph is code, not data: `setupFunc` runs on every
        start, and `start()` recovers from what `checkpointPath` holds (see docs/checkpoints.md).
        Inside `setupFunc`, `ssc.recovered` says whether it is recovering.

        Examples:
            >>> def build():
            ...     ssc = StreamingContext(sc, 1)
            ...     ssc.queueStream([[1]]).pprint()
            ...     return ssc
            >>> recoverable = StreamingContext.getOrCreate("/data/checkpoint", build)
            >>> recoverable.checkpointDirectory
            '/data/checkpoint'
        """
        directory = require_checkpoint_path(checkpointPath, "checkpointPath")
        require_callable(setupFunc, "setupFunc", "getOrCreate")
        building = _BUILDING_FOR.set(directory)
        try:
            ssc = setupFunc()
            if not isinstance(ssc, StreamingContext):
                raise InvalidArgumentError(
                    f"setupFunc must return a StreamingContext, got {ssc!r}",
                )
            if ssc.checkpointDirectory is not None and not _same_path(
                ssc.checkpointDirectory, directory
            ):
                raise InvalidArgumentError(
                    f"setupFunc's context checkpoints to {ssc.checkpointDirectory!r}, not to "
                    f"checkpointPath {directory!r}",
                )
            # while building for it: the context recovers from it, also one made before
            ssc.checkpoint(directory)
        finally:
            _BUILDING_FOR.reset(building)
        return ssc

    @classmethod
    def getActive(cls) -> StreamingContext | None:
        """The context started most recently and not stopped yet, or None (as in PySpark).

        Examples:
            >>> StreamingContext.getActive() is None
            True
        """
        return cls._active[-1] if cls._active else None

    @classmethod
    def getActiveOrCreate(
        cls, checkpointPath: str | None, setupFunc: Callable[[], StreamingContext]
    ) -> StreamingContext:
        """The active context, else `getOrCreate(checkpointPath, setupFunc)` (or `setupFunc()`).

        Examples:
            >>> def setup():
            ...     ssc = StreamingContext(sc, 1)
            ...     ssc.queueStream([[1]]).pprint()
            ...     return ssc
            >>> StreamingContext.getActiveOrCreate(None, setup).state
            'initialized'
        """
        require_callable(setupFunc, "setupFunc", "getActiveOrCreate")
        active = cls.getActive()
        if active is not None:
            return active
        if checkpointPath is not None:
            return cls.getOrCreate(checkpointPath, setupFunc)
        ssc = setupFunc()
        if not isinstance(ssc, StreamingContext):
            raise InvalidArgumentError(f"setupFunc must return a StreamingContext, got {ssc!r}")
        return ssc

    def remember(self, duration: Duration | timedelta | float) -> None:
        """Keep every stream's RDDs for `duration` (for `slice`); may be set once.

        Examples:
            >>> from reactive_spark import Minutes
            >>> ssc.remember(Minutes(5))
        """
        self._runtime.require_not_started("set the remember duration")
        self._graph.remember(to_duration(duration, "duration"))

    def addStreamingListener(self, streamingListener: StreamingListener) -> None:
        """Notify `listener` of fired events, batches, jobs, source errors and receivers.

        Examples:
            >>> from reactive_spark import StreamingListener
            >>> class Failures(StreamingListener):
            ...     def onJobCompleted(self, job):
            ...         if job.failed:
            ...             print(job.describe())
            >>> ssc.addStreamingListener(Failures())
        """
        if not isinstance(streamingListener, StreamingListener):
            raise InvalidArgumentError(
                f"streamingListener must be a StreamingListener, got {streamingListener!r}",
            )
        for name in dir(StreamingListener):
            method = getattr(streamingListener, name)
            if name.startswith("on") and callable(method):
                argument = f"{type(streamingListener).__name__}.{name}"
                require_callable(method, argument, "addStreamingListener")
        self._listeners.add(streamingListener)

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the sources and the scheduler; no stream may be created or bound after this.

        Unbound outputs are bound to the default timer `timer(zeroTime + batchDuration, None,
        batchDuration)`. A source that fails to start is reported (`onSourceError`) and its
        error raised, after the context stopped again.

        Raises:
            CheckpointInUseError: another context, in this process or another, holds the
                checkpoint directory (it started on it and has not stopped); the message names
                its pid and host. Nothing was read or written there.
            ContextStateError: the context is starting already, or a stop that does not wait
                came while it started and ended the start (see `stop`).
        """
        self._runtime.require_not_started("start")
        await self._lifecycle.launch()

    async def backfill(
        self,
        start: Time | datetime,
        end: Time | datetime,
        sources: str | Iterable[str] | None = None,
        *,
        overwrite: bool = False,
        checkpoint: str | None = None,
        progress: Progress | None = None,
    ) -> BackfillReport:
        """Re-run what `sources` would have fired in `[start, end]`, then stop; returns a report.

        For a new context on a `VirtualClock` (not after `start`), with its graph built: each
        chosen primary source (default: all) fires the events it would have fired in the range
        (`between`: a timer's ticks, a file watcher's files by modification time), each at its
        time, instant by instant, as fast as Spark runs; the streams bound to them and to what
        derives from them run as they would have live. Nothing else fires: the primary sources
        are not started (the sources derived from the chosen ones start at `start`, so a
        `pipe`'s operators run). File outputs of those batch times are replaced atomically; the
        context's own checkpoint directory (the live run's) is not touched: the backfill writes
        `checkpoint` (a directory of its own, new) or none. An output with exactly-once state
        that committed one of the batches refuses (`BackfillConflictError`, before anything
        runs) unless `overwrite`. `progress(done, total, time)` hears each instant. Job failures
        are in the report; the later batches still ran. See docs/operations.md.

        Examples:
            >>> import asyncio, tempfile
            >>> from pathlib import Path
            >>> from reactive_spark import Days
            >>> out = Path(tempfile.mkdtemp())
            >>> daily = ssc.timer(t0, None, Days(1), "daily")
            >>> fixed = ssc.queueStream([], default=["fixed"])
            >>> saved = fixed.saveAsTextFiles(str(out / "d")).bind(daily)
            >>> report = asyncio.run(ssc.backfill(t0 + Days(1), t0 + Days(2), ["daily"]))
            >>> [str(batch.time.date()) for batch in report.batches], report.failures
            (['2024-01-02', '2024-01-03'], [])
        """
        if progress is not None:  # before anything runs, not after the first instant did
            require_positional(progress, 3, "progress", "backfill")
        planned = Backfill(self, start, end, sources, overwrite=overwrite)
        return await planned.run(checkpoint, progress, self._lifecycle.launch)

    async def stop(
        self,
        stopSparkContext: bool = True,
        stopGraceFully: bool = False,
        *,
        stopGracefully: bool | None = None,
        timeout: float | None = None,
    ) -> None:
        """Stop the sources and the scheduler, then (by default) the SparkContext.

        With `stopGraceFully` (PySpark's spelling; `stopGracefully` is accepted too) every
        event posted so far is processed first: a REST request answered 202 runs, later ones
        get 503. Otherwise queued events are dropped (their REST requests get 503), reported
        to listeners (`onEventsDropped`), and running Spark jobs cancelled. A graceful stop
        with a `timeout` (seconds) that has not finished by then goes on as one that is not:
        what still waits is dropped and reported. A stop that does not wait gives the running
        batch 2 s once its Spark jobs are cancelled; a batch still running then (a function of
        yours stuck in a call) is left to end in its thread, and `StopError` says so. A
        graceful stop that was cancelled is finished by calling `stop(stopGracefully=False)`,
        which cancels what still runs. A stop called while the context starts waits for the
        start to end (a graceful one, within its `timeout`), then stops it; a stop that does
        not wait, or whose `timeout` passed, ends a start that waits for a source's start,
        which may never come, or for the batches a restart re-runs from a checkpoint, leaving
        one stuck in a function of yours in its thread (`start` then raises
        `ContextStateError`, saying so); before those, what the start runs (the checkpoint's
        log) goes on, and the stop waits for it.

        Raises:
            InvalidArgumentError: an argument is not what it should be (a flag not a bool, a
                negative `timeout`); nothing was stopped.
            ContextStateError: awaited on another event loop than the one the context
                started on, or in one of its batches (a stop would wait for that batch):
                nothing was stopped; `asyncio.run_coroutine_threadsafe` hands it to that loop.
            StopError: a step failed (say, the host stopped Spark first and cancelling its jobs
                failed); every other step still ran, and the context is stopped.

        Examples:
            >>> import asyncio
            >>> async def main():
            ...     ssc.queueStream([[1]]).foreachRDD(lambda rdd: print(rdd.count()))
            ...     await ssc.start()
            ...     await ssc.advanceTo(t0)
            ...     # finish what is queued, but give up after a minute
            ...     await ssc.stop(False, stopGracefully=True, timeout=60)
            ...     print(ssc.state)
            >>> asyncio.run(main())
            stopped
        """
        require_bool(stopSparkContext, "stopSparkContext")
        require_bool(stopGraceFully, "stopGraceFully")
        if stopGracefully is not None:
            require_bool(stopGracefully, "stopGracefully")
        graceful = stopGraceFully if stopGracefully is None else stopGracefully
        if stopGracefully is not None and stopGraceFully and not stopGracefully:
            raise InvalidArgumentError(
                "stopGraceFully=True and stopGracefully=False disagree: pass one of them"
            )
        require_timeout(timeout)
        self._lifecycle.require_own_loop("stop")
        await self._lifecycle.stop(
            stop_spark_context=stopSparkContext, graceful=graceful, timeout=timeout
        )

    async def awaitTermination(self, timeout: float | None = None) -> None:
        """Wait until the context is stopped (or `timeout` seconds pass).

        As in PySpark, a job failure (or a failed source) raises `JobFailedError` here: the
        earliest failure not raised yet, each once (the first 100 waiting are kept for it); the
        context keeps running, so a caller that catches it may wait again and get the next. A
        scheduler crash is re-raised.

        Examples:
            >>> import asyncio
            >>> from reactive_spark import JobFailedError, Seconds
            >>> async def main():
            ...     ssc.queueStream([[0]]).map(lambda x: 1 // x).pprint()
            ...     await ssc.start()
            ...     await ssc.advanceTo(t0 + Seconds(1))
            ...     try:
            ...         await ssc.awaitTerminationOrTimeout(5)
            ...     except JobFailedError as failed:
            ...         print(failed.failures[0].userError.summary)
            ...     await ssc.stop(stopSparkContext=False)
            >>> asyncio.run(main())
            ZeroDivisionError: integer division or modulo by zero
        """
        await self.awaitTerminationOrTimeout(timeout)

    async def awaitTerminationOrTimeout(self, timeout: float | None) -> bool:
        """Wait up to `timeout` seconds for the context to stop; True if it stopped.

        Raises the earliest failure not raised yet, as `awaitTermination` does.

        Raises:
            ContextStateError: the context is not started, or started on another event loop
                than this one awaits on (see `stop`).
        """
        if self._runtime.state == INITIALIZED or not self._failures.attached:
            raise ContextStateError("cannot await termination: the StreamingContext is not started")
        require_timeout(timeout)
        self._lifecycle.require_own_loop("awaitTermination")
        return await self._failures.wait(timeout)

    async def serve(self, host: str = "127.0.0.1", port: int = 4040) -> None:
        """Serve the web console on `host:port` until the context stops; starts it if needed.

        The console (`reactive_spark.web`) shows the sources, the batches and jobs as they run,
        their errors and the lineage; failed jobs do not end it.

        Examples:
            ```python
            # a fragment, inside a coroutine
            ssc = StreamingContext(sc, 1)
            ssc.socketTextStream("localhost", 9999).flatMap(str.split).countByValue().pprint()
            await ssc.serve(port=4040)  # http://127.0.0.1:4040/
            ```
        """
        # the console (aiohttp, prometheus-client) loads when it is asked for, not with the package
        from reactive_spark.web.app import serve  # noqa: PLC0415

        await serve(self, host, port)

    # -- events ------------------------------------------------------------------------------
    @property
    def acceptingEvents(self) -> bool:
        """Whether an event posted now will be processed (active, and no scheduler crash)."""
        return self._runtime.accepting

    async def advanceTo(self, time: Time | datetime) -> list[Failure]:
        """Move a virtual clock to `time`, firing every event due on the way, in order.

        The clock moves past an instant only when the batches of every event at or before it
        have completed, as in a real run with an infinitely fast Spark. When it returns every
        job has completed. Returns the failures (jobs, plans, sources) since the previous call
        returned, or since `start` (which re-runs what a crash interrupted); later events
        still ran.

        Raises:
            ContextStateError: the clock is not a `VirtualClock`, the context is not active,
                another advance runs, or it is awaited on another event loop than the start's
                or in one of its batches.

        Examples:
            >>> import asyncio
            >>> from reactive_spark import Seconds
            >>> async def main():
            ...     ssc.queueStream([[1], [2]]).foreachRDD(lambda rdd: print(rdd.collect()))
            ...     await ssc.start()
            ...     failures = await ssc.advanceTo(t0 + Seconds(2))
            ...     await ssc.stop(stopSparkContext=False)
            ...     return failures
            >>> asyncio.run(main())
            [1]
            [2]
            []
        """
        self._lifecycle.require_own_loop("advanceTo")
        return await self._virtual_time.advance_to(time)

    async def runUntil(self, time: Time | datetime) -> None:
        """`advanceTo(time)`, then raise `JobFailedError` with every failure, if any.

        Raises:
            JobFailedError: a job, plan or source failed on the way.
            ContextStateError: as `advanceTo`.

        Examples:
            >>> import asyncio
            >>> from reactive_spark import JobFailedError, Seconds
            >>> async def main():
            ...     numbers = ssc.queueStream([[1], [0]]).map(lambda x: 1 // x)
            ...     numbers.foreachRDD(lambda rdd: print(rdd.collect()))
            ...     await ssc.start()
            ...     try:
            ...         await ssc.runUntil(t0 + Seconds(2))
            ...     except JobFailedError as failed:
            ...         print(len(failed.failures), failed.failures[0].event.index)
            ...     await ssc.stop(stopSparkContext=False)
            >>> asyncio.run(main())
            [1]
            1 1
        """
        self._lifecycle.require_own_loop("runUntil")
        await self._virtual_time.run_until(time)
