"""The order in which a context's parts start and stop (`Lifecycle`, run by `StreamingContext`)."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from reactive_spark._collector import hold_heap, release_heap
from reactive_spark.checkpoint import Checkpoint
from reactive_spark.checkpoint_lock import CheckpointLock
from reactive_spark.deadlines import DeadlineWatch, watch_expectations
from reactive_spark.errors import ContextStateError, StopError
from reactive_spark.listener import StreamingStarted
from reactive_spark.loop_watchdog import LoopWatchdog
from reactive_spark.recovery import resume, stop_record, use_rdd_directory
from reactive_spark.running_output import running_output
from reactive_spark.runtime import ACTIVE, INITIALIZED, STOPPED
from reactive_spark.time import Time, now_ms

if TYPE_CHECKING:
    from reactive_spark.blocking import BlockingCalls
    from reactive_spark.checkpoint import Recovered
    from reactive_spark.context import StreamingContext
    from reactive_spark.events import EventSource
    from reactive_spark.failures import FailureLedger
    from reactive_spark.graph import DStreamGraph
    from reactive_spark.listener import ListenerBus
    from reactive_spark.runtime import Runtime
    from reactive_spark.scheduler import JobScheduler
    from reactive_spark.sources.timer import TimerEventSource

__all__ = ["GRACEFUL_DRAIN_PERIODS", "Lifecycle"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: A graceful stop waits at most this many batch durations for batches to read what
#: receivers received (Spark's spark.streaming.gracefulStopTimeout default).
GRACEFUL_DRAIN_PERIODS = 10


class Lifecycle:
    """Starts a context's parts in order, and stops them in order (`start`, `stop`, `backfill`).

    Args:
        ssc: The context whose parts these are; it joins `active` while it runs.
        graph: Its lineage, receivers and inputs.
        runtime: Its state, sources and clock.
        scheduler: Its event order and worker thread.
        blocking: Where its blocking calls run.
        failures: Its failures ledger, attached to the loop at start and ended at stop.
        listeners: Its listeners, told when it started and stopped.
        active: The contexts started and not stopped, in start order (`getActive`).
        freeze_heap: Whether to freeze the heap while it runs (`freezeHeap`).
        watch_loop: Whether to watch the loop in any mode (`watchdog`).
    """

    def __init__(
        self,
        ssc: StreamingContext,
        *,
        graph: DStreamGraph,
        runtime: Runtime,
        scheduler: JobScheduler,
        blocking: BlockingCalls,
        failures: FailureLedger,
        listeners: ListenerBus,
        active: list[StreamingContext],
        freeze_heap: bool,
        watch_loop: bool,
        recovers_checkpoint: bool,
    ) -> None:
        self._ssc = ssc
        self._graph = graph
        self._runtime = runtime
        self._scheduler = scheduler
        self._blocking = blocking
        self._failures = failures
        self._listeners = listeners
        self._active = active
        self._freeze_heap = freeze_heap
        self._watch_loop = watch_loop
        #: The zero time once started: the start's, a checkpoint's, or a backfill's.
        self.zero_time: Time | None = None
        #: When `start` ran, once it ran.
        self.started_at: Time | None = None
        #: The timer unbound outputs go on, once started (if the context has a batch duration).
        self.default_timer: TimerEventSource | None = None
        #: Whether the start recovers from what the checkpoint directory holds: a directory
        #: given to the constructor or `getOrCreate` does; one `ssc.checkpoint` set alone is
        #: only where the log goes, as in pyspark.streaming.
        self.recovers_checkpoint = recovers_checkpoint
        #: Whether the start recovered from a checkpoint.
        self.recovered = False
        #: Whether `stop` has stopped every part (a stop before start included).
        self.stop_complete = False
        self._checkpoint: Checkpoint | None = None
        self._hold: CheckpointLock | None = None  # on the checkpoint directory, until stopped
        self._resumed = False  # the checkpoint brought the graph back: a stop may say so
        self._watchdog: LoopWatchdog | None = None
        self._deadlines: DeadlineWatch | None = None
        self._sources_stopped = False
        self._starting_source: EventSource | None = None
        self._stops: set[asyncio.Future[None]] = set()  # the stops under way
        self._launched = False
        self._loop: asyncio.AbstractEventLoop | None = None  # the one it started on
        self._started: asyncio.Future[None] | None = None  # done once the start ended
        self._starting: asyncio.Task[None] | None = None  # the start, which a stop may cancel
        # set while the start awaits what a stop may end (`_stoppable`): the batches it re-runs
        # and the sources' starts; only then may a stop cancel it (what it runs in threads
        # else, the checkpoint's log, goes on when an await of it is cancelled)
        self._awaiting_stoppable: asyncio.Event | None = None
        # done once the stop the start runs as it fails (or a stop ended it) returned
        self._start_stopping: asyncio.Future[None] | None = None

    async def launch(self, backfill_from: Time | None = None) -> None:
        """Start; a backfill gives its zero time, and fires the events: no source is started.

        Once: a start called while the context starts is refused, and stops nothing.
        """
        if self._launched:
            raise ContextStateError("cannot start: the StreamingContext is starting")
        self._launched = True
        loop = self._loop = asyncio.get_running_loop()
        started = self._started = loop.create_future()
        self._awaiting_stoppable = asyncio.Event()
        starting = self._starting = loop.create_task(self._start(backfill_from))
        try:
            try:
                await starting  # cancelled with its caller, or by a stop that does not wait
            finally:
                started.set_result(None)  # a stop that came meanwhile goes on (see `stop`)
        except BaseException as exc:
            if self._starting_source is not None and isinstance(exc, Exception):
                self._runtime.report_source_error(self._starting_source, "start", exc)
            stop_failure: StopError | None = None
            stopping = self._start_stopping = loop.create_future()
            try:
                await self.stop(stop_spark_context=False, graceful=False, timeout=None)
            except StopError as stop_error:  # the start's failure comes first, this after it
                stop_failure = stop_error
                exc.add_note(f"then stopping what had started failed too: {stop_error}")
            finally:
                stopping.set_result(None)
            current = asyncio.current_task()
            if isinstance(exc, asyncio.CancelledError) and not (current and current.cancelling()):
                raise ContextStateError(_ended_start(stop_failure)) from stop_failure
            raise
        assert self.zero_time is not None and self.started_at is not None
        if self.zero_time == self.started_at:
            log.info("StreamingContext started at %s", self.started_at.isoformat())
        else:  # a checkpoint's, or a backfill's
            log.info(
                "StreamingContext started at %s (its zero time %s)",
                self.started_at.isoformat(),
                self.zero_time.isoformat(),
            )

    def require_own_loop(self, action: str) -> None:
        """Refuse `action` awaited elsewhere than on the event loop the context started on.

        Its futures, timers and the worker's hand-offs belong to that loop: elsewhere it would
        wait forever, or fail deep inside asyncio. Awaited in a batch (`asyncio.run` in a
        `foreachRDD` function), a stop would wait for the very batch that waits for it.

        Raises:
            ContextStateError: the context started (and has not stopped) on another loop, or
                this runs in one of its batches.
        """
        loop = self._loop
        if loop is None or self.stop_complete or asyncio.get_running_loop() is loop:
            return
        output = running_output()
        in_output = output is not None and output.source.context is self._ssc
        if in_output or self._scheduler.on_worker_thread():
            raise ContextStateError(
                f"{action} was awaited in a batch of this StreamingContext, which it would wait "
                "for forever: hand it to the context's event loop without waiting for it, "
                f"asyncio.run_coroutine_threadsafe(ssc.{action}(...), loop), with the loop "
                "the context started on"
            )
        if loop.is_closed():
            raise ContextStateError(
                f"{action}: the event loop the StreamingContext started on closed without "
                "stopping it, and it cannot be stopped now; stop it before the asyncio.run "
                "that started it returns (run start and what follows in one asyncio.run)"
            )
        raise ContextStateError(
            f"{action} must be awaited on the event loop the StreamingContext started on, "
            "not another one: hand it to that loop with asyncio.run_coroutine_threadsafe"
        )

    async def _start(self, backfill_from: Time | None) -> None:
        ssc, clock = self._ssc, self._runtime.clock
        start_sources = backfill_from is None
        loop = asyncio.get_running_loop()
        self._graph.validate()
        clock.attach(loop)
        recovered = None
        if ssc.checkpointDirectory is not None:
            self._checkpoint = Checkpoint(ssc.checkpointDirectory)
            # before anything is read or written there: another driver may be writing it
            self._hold = CheckpointLock(self._checkpoint.directory)
            await self._blocking.run(self._hold.acquire)
            if self.recovers_checkpoint:
                recovered = await self._blocking.run(self._checkpoint.load)
            elif await self._blocking.run(self._checkpoint.exists):
                aside = await self._blocking.run(self._checkpoint.set_aside)
                log.warning(
                    "checkpoint: %s held a checkpoint this context does not recover from: "
                    "ssc.checkpoint(directory) sets where the log goes, as in "
                    "pyspark.streaming, and StreamingContext.getOrCreate(directory, setupFunc) "
                    "or StreamingContext(..., checkpoint=directory) recovers; starting afresh, "
                    "the earlier run's checkpoint is set aside in %s",
                    ssc.checkpointDirectory,
                    aside,
                )
        self.started_at = clock.now()
        self.zero_time = self.started_at if recovered is None else recovered.zero_time
        if recovered is not None and recovered.progress and clock.isVirtual:
            _warn_if_behind(self.started_at, recovered, ssc.checkpointDirectory)
        if backfill_from is not None:
            self.zero_time = backfill_from
        self.default_timer = self._graph.bind_default_timer(self.zero_time, ssc.batchDuration)
        await use_rdd_directory(ssc)
        if start_sources:  # a backfill re-runs the past: no deadline falls due in it
            self._deadlines = watch_expectations(
                ssc,
                {} if recovered is None else recovered.deadlines,
                None if self._checkpoint is None else self._checkpoint.deadline,
            )
        self._graph.start(
            self.zero_time, self._runtime.sources, checkpointed=self._checkpoint is not None
        )
        await self._blocking.run(self._graph.make_plans)
        await self._blocking.run(self._graph.start_inputs)
        self._failures.attach(loop)
        self._runtime.state = ACTIVE
        self.recovered = recovered is not None
        self._active.append(ssc)
        self._scheduler.start(loop, self._runtime.sources)
        if self._watch_loop or loop.get_debug():
            self._watchdog = LoopWatchdog(loop)
            self._watchdog.start()
        resumed: set[str] = set()
        if self._checkpoint is not None:
            resumed = await resume(
                ssc, self._checkpoint, recovered, self._scheduler, stoppable=self._stoppable
            )
            self._resumed = True
        self._graph.start_receivers(loop)
        for source in self._runtime.sources if start_sources else ():
            self._starting_source = source
            starting = source.restart() if source.name in resumed else source.start()
            await self._stoppable(_settle(starting))
        self._starting_source = None
        if self._deadlines is not None:
            self._deadlines.schedule(self.started_at, settle=self._accept_posted)
        if self._freeze_heap:
            hold_heap(ssc)  # what exists now, Spark and the lineage included, is not walked
        self._runtime.tell_listeners("onStreamingStarted", StreamingStarted(int(now_ms())))

    async def _stoppable(self, step: Awaitable[T]) -> T:
        """Await `step` of the start, which a stop that does not wait may end (`_end_start`).

        Only a step that nothing goes on from once its await is cancelled, or whose threads
        that stop ends: a source's start, the batches the scheduler re-runs after a crash (it
        leaves one stuck in a function of yours, and keeps the directory until it ends).
        """
        assert self._awaiting_stoppable is not None
        self._awaiting_stoppable.set()
        try:
            return await step
        finally:
            self._awaiting_stoppable.clear()

    def _accept_posted(self, then: Callable[[], None]) -> None:
        """Accept the events posted so far; `then()` once all missed during the downtime were.

        A deadline check after a restart counts them.
        """
        self._scheduler.order.flush()
        self._scheduler.order.when_caught_up(then)

    async def stop(
        self, *, stop_spark_context: bool, graceful: bool, timeout: float | None
    ) -> None:
        """Stop the parts (once), then the SparkContext if asked (see `StreamingContext.stop`).

        Every step runs even when one before it failed: the threads end, the context is
        stopped and `awaitTermination` returns; then `StopError` names each step that failed.
        A stop cancelled while it waits (a graceful one) is finished by the next. A graceful stop
        called while another runs waits for it, within its own `timeout` (then it stops as a
        non-graceful one does, beside it); the failures of the stop it waited for are that
        stop's to raise. A non-graceful stop runs beside the other: it escalates it. Either
        returns once the other stopped its parts too (each skips a part the other is stopping).
        A stop called while the context starts waits for the start (a graceful one, within
        its `timeout`), then stops it; a stop that does not wait ends the start once the start
        awaits the sources' starts, which may never return, or the batches it re-runs after a
        crash, which may be stuck in a function of yours (see `_end_start`). The start then
        stops what it started, without waiting, and this stop waits for that one, whose
        failures (a batch left stuck) the start raises.
        """
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        ended_start = False
        if self._started is not None and not self._started.done():
            if graceful:
                await asyncio.wait({self._started}, timeout=timeout)
            if not self._started.done():
                ended_start = await self._end_start()
                graceful = False
        steps = _StopSteps()
        if self._runtime.state == INITIALIZED:
            self._runtime.state = STOPPED
            self.stop_complete = True
        while not self.stop_complete:
            if ended_start and self._start_stopping is not None:  # the start's own stop (it
                await asyncio.wait({self._start_stopping})  # does not wait), not another
                continue
            if graceful and self._stops:  # another stop runs: this one waits for it
                left = None if deadline is None else max(0.0, deadline - loop.time())
                done, _ = await asyncio.wait(set(self._stops), timeout=left)
                graceful = bool(done)  # its own time is up: it escalates
                continue
            stopping = loop.create_future()
            self._stops.add(stopping)  # a stop that does not wait runs beside it (escalates)
            try:
                left = None if deadline is None else max(0.0, deadline - loop.time())
                await self._stop_parts(steps, graceful=graceful, timeout=left)
            finally:
                self._stops.discard(stopping)
                stopping.set_result(None)
            if not self.stop_complete:
                self.stop_complete = True
                log.info("StreamingContext stopped")
        if self._stops:  # one beside it still stops a part it found under way: not stopped yet
            await asyncio.wait(set(self._stops))
        # also after a start that failed before anything else started
        await steps.run(_RELEASING, self._release_checkpoint)
        if stop_spark_context:
            await steps.run(_SPARK_CONTEXT, lambda: self._blocking.run(self._ssc.sparkContext.stop))
        await steps.run(_BLOCKING_CALLS, self._blocking.close)
        self._failures.end()
        steps.raise_failures()

    async def _end_start(self) -> bool:
        """Cancel the start once it awaits a step a stop may end; return when it ended.

        Returns whether it cancelled the start (else the start ended by itself meanwhile).

        That is a source's start, or the batches it re-runs after a crash: the stop the start
        then runs ends those in the worker thread as it ends live batches (`_stoppable`). Not
        in another step: the checkpoint's log it opens goes on in its thread when an await of
        it is cancelled, and would write beside the next driver.
        """
        assert self._started is not None and self._awaiting_stoppable is not None
        started: asyncio.Future[Any] = self._started
        while not started.done() and not self._awaiting_stoppable.is_set():
            awaiting = asyncio.ensure_future(self._awaiting_stoppable.wait())
            try:
                await asyncio.wait({started, awaiting}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                awaiting.cancel()
        if started.done():
            return False
        assert self._starting is not None  # the start awaits that step now (it sets, clears it)
        self._starting.cancel()
        await asyncio.wait({started})
        return True

    async def _stop_parts(
        self, steps: _StopSteps, *, graceful: bool, timeout: float | None
    ) -> None:
        """Stop every part, in order, each step whatever the ones before it did."""
        scheduler = self._scheduler
        clock = asyncio.get_running_loop().time
        deadline = None if timeout is None else clock() + timeout
        if self._runtime.state == ACTIVE and graceful:
            graceful = await steps.run(_DRAINING, lambda: self._drain(deadline)) is not False
        self._runtime.state = STOPPED
        if self._deadlines is not None:
            await steps.run(_DEADLINES, self._deadlines.stop)
        scheduler.order.refuse_posts()  # dropped from now on; what was posted runs
        if self._ssc in self._active:
            self._active.remove(self._ssc)
        if graceful:  # while the sources still run: operators derive from what waits
            left = None if deadline is None else max(0.0, deadline - clock())
            graceful = await steps.run(_FINISHING, lambda: scheduler.finish(left)) is True
        if not graceful:  # what was posted and not accepted yet never runs
            await steps.run(_DROPPING, scheduler.abort)
        await steps.run(_RECEIVERS, self._graph.stop_receivers)
        await steps.run(_SOURCES, self._stop_sources)
        await steps.run(_SCHEDULER, lambda: scheduler.stop(graceful))
        await steps.run(_UNREAD, self._graph.drop_unread)  # no batch reads them now
        # after the last batch: tracing ends the spans still open
        await steps.run(_LISTENERS, self._listeners.stopped)
        checkpoint = self._checkpoint
        if checkpoint is not None:  # with how far every source fired, if nothing was left

            def close() -> Awaitable[None]:
                stopped = None  # a start that failed before the graph was back stopped nothing
                if self._resumed:
                    stopped = stop_record(scheduler.order.settled_progress(), self._ssc.sources)
                return self._blocking.run(checkpoint.close, stopped)

            await steps.run(_CHECKPOINT, close)
        if self._watchdog is not None:
            await steps.run(_WATCHDOG, self._watchdog.stop)
        await steps.run(_HEAP, lambda: release_heap(self._ssc))

    async def _release_checkpoint(self) -> None:
        """Let the checkpoint directory go, once every part stopped: another driver may start.

        A batch the stop left running in its thread may still write its outputs, which a
        driver started meanwhile would write again: the directory is let go as it ends.
        """
        hold, self._hold = self._hold, None
        if hold is None:
            return
        if self._scheduler.runner.abandoned and self._scheduler.when_worker_ends(
            lambda: _release_later(hold)
        ):
            log.warning(
                "the checkpoint directory %s stays held until the batch the stop left running "
                "ends: a context started on it meanwhile is refused",
                hold.directory,
            )
            return
        await self._blocking.run(hold.release)

    async def _drain(self, deadline: float | None) -> bool:
        """A graceful stop's first step: accept what was posted, and what receivers hold.

        False if the stop's `deadline` (the loop's time) came first: it goes on as one that is
        not graceful.
        """
        self._scheduler.order.flush()  # what was posted is accepted, and will run
        return await self._drain_receivers(deadline)

    async def _drain_receivers(self, deadline: float | None) -> bool:
        """Stop receiving, then let the sources fire until batches read what was received.

        As Spark's graceful stop, within `GRACEFUL_DRAIN_PERIODS` batch durations (10 s without
        one), and before the stop's `deadline`; on a virtual clock nothing fires by itself, so
        there is nothing to wait for. False if the deadline came first.
        """
        receivers = self._graph.receivers()
        if not receivers:
            return True
        await self._graph.stop_receivers()
        if self._runtime.clock.isVirtual:
            return True
        clock = asyncio.get_running_loop().time
        batch_duration = self._ssc.batchDuration
        period = batch_duration.totalSeconds() if batch_duration else 1.0
        give_up = clock() + GRACEFUL_DRAIN_PERIODS * period
        while any(receiver.pending for receiver in receivers):
            if deadline is not None and clock() > deadline:
                log.warning(
                    "the graceful stop's timeout passed while batches read what was received"
                )
                return False
            if clock() > give_up or not self._runtime.accepting:  # the rest are reported lost
                return True
            await asyncio.sleep(0.05)
        left = None if deadline is None else max(0.0, deadline - clock())
        return await self._scheduler.finish(left)

    async def _stop_sources(self) -> None:
        if self._sources_stopped:
            return
        self._sources_stopped = True
        for source in self._runtime.sources:
            try:
                await _settle(source.stop())
            except Exception as exc:
                self._runtime.report_source_error(source, "stop", exc)


def _warn_if_behind(now: Time, recovered: Recovered, directory: str | None) -> None:
    """Say so when a virtual clock restarts before where the checkpoint's sources got to.

    Then every source carries on from the checkpoint, so nothing fires until the clock passes
    there: a program run again as it was first run does nothing, silently but for this.
    """
    last = max(time for time, _ in recovered.progress.values())
    if now.milliseconds < last:
        log.warning(
            "recovered from the checkpoint in %s: its sources fired up to %s, and every source "
            "carries on from there, so nothing fires until the virtual clock (at %s) passes it; "
            "to run from the start again, use a new checkpoint directory",
            directory,
            Time(last).isoformat(),
            now.isoformat(),
        )


#: What each step of a stop is, and what to do when it fails: `(step, fix)` (see `StopError`).
_REPORT_IT = "a bug in reactive-spark: please report it, with the error"
_DRAINING = (
    "letting batches read what the receivers received (a graceful stop)",
    "lines received and not read by a batch are lost; fix what the error names",
)
_DEADLINES = ("stopping the deadline checks", _REPORT_IT)
_FINISHING = (
    "running what was posted (a graceful stop)",
    "what still waited was dropped and reported (onEventsDropped); fix what the error names",
)
_DROPPING = (
    "dropping the events not processed yet",
    "if an onEventsDropped listener raised, fix it; otherwise it is " + _REPORT_IT,
)
_RECEIVERS = (
    "stopping the receivers",
    "a receiver's connection or thread may be left open; fix what the error names",
)
_SOURCES = ("stopping the event sources", _REPORT_IT)
_SCHEDULER = (
    "stopping the scheduler (cancelling its running Spark jobs, ending its worker thread)",
    "Spark jobs may still run (is Spark's JVM gone?): stop the SparkContext and start a new one",
)
_UNREAD = ("reporting the lines receivers received and no batch read", _REPORT_IT)
_LISTENERS = ("telling the listeners the context stopped", _REPORT_IT)
_CHECKPOINT = (
    "closing the checkpoint's write-ahead log",
    "its last records may not be on disk: check the checkpoint directory (space, permissions);"
    " a restart from it runs again what was not recorded",
)
_RELEASING = (
    "letting the checkpoint directory go (emptying its lock file)",
    "it was let go all the same, but its lock file may still name this process: check the "
    "checkpoint directory (space, permissions)",
)
_WATCHDOG = ("stopping the loop watchdog", _REPORT_IT)
_HEAP = ("releasing the heap frozen while it ran (freezeHeap)", _REPORT_IT)
_SPARK_CONTEXT = (
    "stopping the SparkContext (stopSparkContext=True)",
    "Spark's JVM may be gone (see the error); nothing of reactive-spark is left running",
)
_BLOCKING_CALLS = ("ending the threads of blocking calls", _REPORT_IT)


class _StopSteps:
    """Runs the steps of a stop, each whatever the ones before it did, and keeps the failures.

    A cancellation (a `BaseException`) is not a failure: it is raised at once, as ever.
    """

    def __init__(self) -> None:
        self.failures: list[tuple[str, str, Exception]] = []

    async def run(self, step: tuple[str, str], call: Callable[[], object]) -> object:
        """`call()` (awaited if it returns an awaitable); its result, or None if it failed."""
        try:
            result = call()
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            what, fix = step
            log.debug("stopping the StreamingContext: %s failed", what, exc_info=True)
            self.failures.append((what, fix, exc))
            return None
        return result

    def raise_failures(self) -> None:
        """Raise `StopError` naming every step that failed, from the first one's error."""
        if self.failures:
            raise StopError(self.failures) from self.failures[0][2]


def _ended_start(stop_failure: StopError | None) -> str:
    """Why the start raises when a stop that does not wait ended it, in one line.

    With what stopping what it started failed at: a batch it re-ran after a crash, stuck in a
    function of yours and left in its thread, says so and how to fix it.
    """
    message = (
        "the StreamingContext was stopped while it started: a stop that does not wait ended "
        "the start"
    )
    if stop_failure is not None:
        failed = "; ".join(f"{step} failed: {error}" for step, _, error in stop_failure.failures)
        message += f"; then {failed}"
    return message


def _release_later(hold: CheckpointLock) -> None:
    """Let the checkpoint go from the thread of the batch a stop left running, as it ends.

    The stop returned long ago: a failure has nobody to raise to, so it is logged.
    """
    try:
        hold.release()
    except Exception:
        what, fix = _RELEASING
        log.exception("%s after the batch a stop left running ended failed: %s", what, fix)


async def _settle(result: Awaitable[None] | None) -> None:
    """Await what a source's lifecycle method returned, if it is awaitable."""
    if inspect.isawaitable(result):
        await result
