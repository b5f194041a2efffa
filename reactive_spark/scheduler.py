"""The job scheduler: plans each accepted event's batch and runs its jobs, off the loop.

Events are accepted in order on the event loop (`EventOrder`, in `ordering.py`); the runs of
bound sources come here. In the scheduler's worker thread and one event at a time, each
batch is planned by its source's plan (`DStreamGraph.plan_of(source).batch`, which calls into
Spark) and run by the `BatchRunner` (`batch_runner.py`): the batch hooks (the place a
write-ahead log goes) around its jobs, at most `maxConcurrentJobs` at once. The worker thread
lives as long as the scheduler and takes queued events itself until none is left, so the loop
is never blocked and a steady stream of events pays no thread hand-off per event. The other
blocking calls a context makes run in its `BlockingCalls` (`blocking.py`).

Every failure (a job, a plan, an event source) goes through the `ListenerBus`'s `report`, which
logs it once and tells the listeners and the context (`advanceTo`, `awaitTermination`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from reactive_spark.batch_runner import BatchHook, BatchRunner
from reactive_spark.errors import ContextStateError
from reactive_spark.events import Event, EventSource
from reactive_spark.jobs import Batch
from reactive_spark.listener import EventsDropped, ListenerBus
from reactive_spark.ordering import EVENTS_PER_FLUSH, EventOrder
from reactive_spark.overflow import WAIT_SLICE
from reactive_spark.source_queue import DEFAULT_MAX_QUEUED

if TYPE_CHECKING:
    from pyspark import SparkContext

    from reactive_spark.blocking import BlockingCalls
    from reactive_spark.graph import DStreamGraph

__all__ = ["JobScheduler"]

log = logging.getLogger(__name__)

#: Batches that ran no job forget what they generated at least once per this many.
EVENTS_PER_CLEAR = 64
#: Seconds a stop that does not wait gives the running batch to end once its Spark jobs are
#: cancelled (Spark's job scheduler gives its job threads 2 s, then interrupts them). A batch
#: still running then (a function of yours stuck in a call that does not return) is left to
#: end in its thread, and the stop goes on.
ABANDON_AFTER = 2.0
#: Seconds between the stop's cancels of the running batch's Spark jobs: a job the batch
#: submits after one (its first call to Spark still on its way) is cancelled by the next.
CANCEL_EVERY = 0.1


class JobScheduler:
    """Accepts events in order and processes them one at a time (see module docs)."""

    def __init__(
        self,
        graph: DStreamGraph,
        sparkContext: SparkContext,
        max_concurrent_jobs: int,
        listeners: ListenerBus,
        on_crash: Callable[[BaseException], None],
        blocking: BlockingCalls,
        max_queued: int = DEFAULT_MAX_QUEUED,
    ) -> None:
        self._graph = graph
        self._blocking = blocking
        self._listeners = listeners
        self._on_crash = on_crash
        #: Runs each planned batch: hooks, jobs, listeners told.
        self.runner = BatchRunner(sparkContext, listeners, max_concurrent_jobs)
        self._dropped_hooks: list[Callable[[str, list[int]], None]] = []
        #: Where events wait to be accepted, in order, on the loop.
        self.order = EventOrder(listeners, self._enqueue, self._note_dropped, max_queued)
        self._loop: asyncio.AbstractEventLoop | None = None
        # runs of accepted events waiting for the worker thread, and how many accepted events
        # are not processed yet
        self._ready: deque[list[Event]] = deque()
        self._taking = threading.Lock()  # the worker takes from `_ready`, the loop may drop it
        self._taken = 0  # events the worker thread took in its busy period (its own count)
        self._run_taken: list[Event] = []  # the run it works on (a stop may abandon it)
        self._running: Event | None = None  # the event whose batch it runs, or ran last
        # accepted events queued for the worker (counted on the loop), and those of them it
        # processed (counted by the worker): all are done when the two are equal
        self._enqueued = 0
        self._completed = 0
        self._idle_waiters = 0  # coroutines waiting for that (the worker wakes them)
        self._completed_seen = 0  # `_completed` as of the worker's last wake, on the loop
        self._work = threading.Event()  # wakes the worker thread: events are queued
        self._idle: asyncio.Event | None = None
        self._worker: threading.Thread | None = None
        self._finished = False  # the worker thread is told to end
        # what the worker thread calls as it ends (None once it has ended); under `_taking`
        self._at_worker_end: list[Callable[[], None]] | None = []
        # the batches a checkpoint replays, which the worker takes before any run (`replay`)
        self._replay: Callable[[], None] | None = None
        # what the replay raised after a stop ended the start that awaited it: that stop's
        self._replay_failure: BaseException | None = None
        #: Whether posted events will be processed (not closed, not crashed).
        self.accepting = True
        self._batches_processed = 0  # counted in the worker thread
        #: The instanceId of the last event whose batch was processed (events go in order).
        self.processed_through = -1
        self.crash: BaseException | None = None

    # -- hooks -------------------------------------------------------------------------------
    def add_batch_hooks(
        self, before: BatchHook | None = None, after: BatchHook | None = None
    ) -> None:
        """Call `before(batch)` once a batch is planned and before its jobs, `after` once done.

        Hooks run in the scheduler's worker thread, like planning and jobs.
        """
        self.runner.add_hooks(before, after)

    def add_dropped_hook(self, hook: Callable[[str, list[int]], None]) -> None:
        """Call `hook(source name, times)` (on the loop) for events dropped past a bound.

        So a checkpoint can record them, and recovery never fires them again.
        """
        self._dropped_hooks.append(hook)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, loop: asyncio.AbstractEventLoop, sources: list[EventSource]) -> None:
        """Start processing events of `sources` on `loop` (call it there); posts are taken."""
        self._loop = loop
        self._idle = asyncio.Event()
        self._idle.set()
        graph = self._graph
        self.order.start(
            loop,
            frozenset(graph.bound_sources()),
            graph.downstream_bound,
            graph.accepted_after(sources),
            sources,
        )
        self.runner.start(self.order.never_wait)
        # one long-lived thread, in the context `start` ran in (as a task's would be)
        self._worker = threading.Thread(
            target=contextvars.copy_context().run,
            args=(self._work_forever,),
            name="reactive-spark-worker",
            daemon=True,
        )
        self._worker.start()
        assert self._worker.ident is not None
        self.order.never_wait(self._worker.ident)  # it makes the room others wait for

    def _close(self, *, dropping: bool) -> None:
        # not accepting first: the producers that `close` lets go find the context stopped
        self.accepting = False
        self.order.close()
        self.runner.dropping = self.runner.dropping or dropping

    def abort(self) -> None:
        """Accept nothing more and drop every queued event (on the loop).

        The running batch still ends; `stop(graceful=False)` also cancels its Spark jobs.
        """
        self._close(dropping=True)
        dropped = self.order.drop()  # posted, not accepted yet
        runs = self._drop_ready()  # accepted, not processed yet
        self._settle(_count(runs))
        for run in runs:
            self.order.dropped_accepted(run[0].source, len(run))  # none of them waits any more
            dropped.setdefault(run[0].source, []).extend(run)
        for source, events in dropped.items():
            self._listeners.tell("onEventsDropped", EventsDropped.of(source.name, "stop", events))

    async def stop(self, graceful: bool) -> None:
        """Stop processing: after the queued events (`graceful`), or after the running batch.

        A graceful stop that was cancelled or timed out can be escalated by calling
        `stop(graceful=False)`, which drops what is still queued and cancels running jobs.
        Should cancelling fail, the worker thread still ends (after the batch it runs), and
        then the failure is raised. A batch that has not ended `ABANDON_AFTER` seconds after
        its jobs were cancelled is left to end in its thread, and `ContextStateError` says so.
        A stop that finds the batch left so by another (escalated beside it) ends at once,
        before or after its own cancels: that one said so.
        """
        if self._worker is None or self._idle is None:
            self._close(dropping=False)
            return
        if self.runner.abandoned:
            return
        failure: BaseException | None = None
        abandoned = False
        if graceful and not self.runner.dropping:
            await self.idle(raise_crash=False)
            self._close(dropping=False)
        else:
            self.abort()
            ended, failure = await self._cancel_until_processed()
            if self.runner.abandoned:  # a stop beside this one left it (and said so): this
                if failure is not None:  # one must not wait for the worker thread, nor say so
                    raise failure
                return
            if not ended:
                abandoned = True
                self._abandon()
                self._wake_idle()  # who waits for it (advanceTo) returns: the context stopped
        replay_failure, self._replay_failure = self._replay_failure, None
        if replay_failure is not None and failure is None:
            failure = replay_failure
        self._finished = True
        self._work.set()
        if not abandoned:
            await self._blocking.run(self._worker.join)
        self.runner.shutdown(wait=not abandoned)
        if abandoned:
            raise ContextStateError(
                f"the running batch did not end {ABANDON_AFTER:g} s after its Spark jobs were "
                "cancelled (is a function of yours stuck in a call that does not return?): it "
                "is left to end in its thread, its later jobs never start, and its end is "
                "neither told nor recorded (a restart from a checkpoint runs it again); the "
                "context is stopped"
            ) from failure
        if failure is not None:
            raise failure

    async def _cancel_until_processed(self) -> tuple[bool, Exception | None]:
        """Cancel the running batch's Spark jobs until it ends, for up to `ABANDON_AFTER` s.

        Spark cancels only the jobs it already runs, so the cancel is repeated: a job submitted
        just after one (a first job, slow to reach a cold JVM) ran whole and held the stop.
        Returns whether the batch ended, and what cancelling raised (it is not tried again).
        """
        processed = asyncio.ensure_future(self._processed())
        deadline = asyncio.get_running_loop().time() + ABANDON_AFTER
        failure: Exception | None = None
        cancelling = True
        try:
            while not processed.done():
                if cancelling:
                    try:
                        cancelling = await self._blocking.run(self.runner.cancel_spark_jobs)
                    except Exception as exc:
                        failure, cancelling = exc, False
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    break
                await asyncio.wait({processed}, timeout=min(CANCEL_EVERY, left))
        finally:
            processed.cancel()
        return processed.done() and not processed.cancelled(), failure

    async def finish(self, timeout: float | None) -> bool:
        """Let what was posted run, within `timeout` seconds if given; whether it all did.

        How a graceful stop waits; what did not run by then is dropped (`abort`).
        """
        try:
            await asyncio.wait_for(self.idle(raise_crash=False), timeout)
        except TimeoutError:
            log.warning("the graceful stop's timeout passed: dropping what still waits")
            return False
        return True

    def _enqueue(self, runs: list[list[Event]]) -> None:
        """Queue runs of accepted events for the worker thread (on the loop)."""
        self._ready.extend(runs)
        self._enqueued += sum(len(run) for run in runs)
        self._work.set()

    @property
    def processed_events(self) -> int:
        """Events fully handled: announced (no batch), or their batch processed."""
        return self.order.announced + self._batches_processed

    @property
    def busy(self) -> bool:
        """Whether events wait to be accepted or accepted events wait to be processed."""
        return self.order.has_pending or self._enqueued != self._completed

    async def idle(self, *, raise_crash: bool = True) -> None:
        """Wait until every posted event has been accepted and processed.

        Events that batches post while they run (at the same instant) are waited for too.
        """
        if self._idle is None:
            return
        order = self.order
        while True:
            while order.has_pending and not self.runner.dropping:
                accepted = order.flush(EVENTS_PER_FLUSH)
                # the worker may start on what was accepted; if nothing could be (the queues
                # downstream are full), it makes room meanwhile
                await asyncio.sleep(0 if accepted else WAIT_SLICE)
            await self._processed()
            if not order.has_pending or self.runner.dropping:
                break
        if raise_crash and self.crash is not None:
            raise self.crash

    @property
    def queue_depth(self) -> int:
        """Events waiting: posted and not accepted yet, or accepted and not processed yet."""
        return _count(self._ready) + self.order.pending

    async def _processed(self) -> None:
        """Wait until the worker processed every event queued for it (or they were dropped).

        What its batches posted meanwhile reaches the loop first: those events went through
        `call_soon_threadsafe` before the worker counted, so one turn of the loop brings them
        when no wake (queued after them) has.
        """
        assert self._idle is not None
        # registered before looking, as the worker counts before it looks for waiters: with
        # the GIL each thread sees the other's writes in order (free-threaded, it would not)
        self._idle_waiters += 1
        try:
            while not self.runner.abandoned:
                completed = self._completed
                if self._enqueued != completed:
                    self._idle.clear()
                    await self._idle.wait()
                elif completed != self._completed_seen:
                    self._completed_seen = completed
                    await asyncio.sleep(0)
                else:
                    return
        finally:
            self._idle_waiters -= 1

    def _wake_idle(self, completed: int | None = None) -> None:
        """Let `_processed` look again (on the loop); the worker says what it had counted."""
        if completed is not None:
            self._completed_seen = completed
        if self._idle is not None:
            self._idle.set()

    def _settle(self, count: int) -> None:
        """`count` queued events will never be processed: dropped, or lost in a crash."""
        self._enqueued -= count
        self._wake_idle()

    def _drop_ready(self) -> list[list[Event]]:
        """Drop the accepted events no worker has taken; returns their runs."""
        with self._taking:
            runs = list(self._ready)
            self._ready.clear()
        return runs

    def _abandon(self) -> None:
        """Leave the running batch to end in the worker thread (on the loop).

        Nothing the worker does after is told or recorded (`runner.abandoned`), so the rest of
        the run it works on, which it would drop between batches, is reported dropped now.
        """
        with self._taking:
            self.runner.abandoned = True
            through, running = self.processed_through, self._running
            dropped = [
                event
                for event in self._run_taken
                if event.instanceId is not None
                and event.instanceId > through
                and event is not running  # left to end in its thread
            ]
            self._run_taken = []
        if dropped:
            self.order.dropped_accepted(dropped[0].source, len(dropped))
            self._dropped_at_stop(dropped)

    def _dropped_in_worker(self, events: list[Event]) -> None:
        """The worker drops the rest of its run at a stop, unless the stop abandoned it."""
        with self._taking:
            if not self.runner.abandoned and events:
                self.order.processed(events[0].source, len(events))  # none of them waits
                self._dropped_at_stop(events)
                self._run_taken = []

    def _dropped_at_stop(self, events: list[Event]) -> None:
        """Report accepted events of one source a stop dropped before their batch ran."""
        self._listeners.tell(
            "onEventsDropped", EventsDropped.of(events[0].source.name, "stop", events)
        )

    def _note_dropped(self, source: str, times: list[int]) -> None:
        """Have events dropped past a bound recorded (on the loop), before they are reported."""
        for hook in self._dropped_hooks:
            hook(source, times)

    # -- processing --------------------------------------------------------------------------
    def on_worker_thread(self) -> bool:
        """Whether the caller runs in the worker thread: in a batch of this context."""
        worker = self._worker
        return worker is not None and worker.ident == threading.get_ident()

    def when_worker_ends(self, callback: Callable[[], None]) -> bool:
        """Have the worker thread call `callback` as it ends; False if it ended or never began.

        What a batch that a stop left running may still write to waits for it so.
        """
        with self._taking:
            if self._worker is None or self._at_worker_end is None:
                return False
            self._at_worker_end.append(callback)
            return True

    def _work_forever(self) -> None:
        """The worker thread: whenever events are queued, process them all, in order.

        Each busy period ends by counting the events it took, and wakes the loop only if
        something waits for them (`_processed`); a crash (a `BaseException` from a batch) ends
        the thread and stops the scheduler (`_crashed`). As it ends, the thread calls what
        waits for that (`when_worker_ends`).
        """
        try:
            self._work_until_finished()
        finally:
            with self._taking:
                callbacks, self._at_worker_end = self._at_worker_end or [], None
            for callback in callbacks:
                callback()

    def _work_until_finished(self) -> None:
        while True:
            self._work.wait()
            self._work.clear()  # before looking at the queue: what comes after wakes it again
            if self._finished:
                return
            with self._taking:
                replay, self._replay = self._replay, None
                first = self._ready[0][0] if self._ready else None
            self._taken = 0
            try:
                if replay is not None:  # counted as one event queued (`replay`)
                    self._taken += 1
                    replay()
                    replay = None  # its batches are freed now, not at the next wake
                self._process_queued()
            except BaseException as exc:
                # the stop said so, and what the batch did is not recorded
                if self.runner.abandoned:
                    log.info("the batch a stop left running ended with %r", exc)
                    return
                self._on_loop(self._crashed, exc, first, self._taken)
                return
            self._completed += self._taken  # before looking for waiters: see `_processed`
            if self._idle_waiters:
                self._on_loop(self._wake_idle, self._completed)

    def _on_loop(self, callback: Callable[..., None], *args: Any) -> None:
        """Have the loop call `callback(*args)` (from the worker thread), unless it is closed."""
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits for it
            self._loop.call_soon_threadsafe(callback, *args)

    def _crashed(self, exc: BaseException, first: Event | None, taken: int) -> None:
        """The worker thread crashed: nothing more is accepted or runs (on the loop)."""
        log.error(
            "reactive-spark scheduler crashed in a run of events from %r; no further batch "
            "runs (restart the context, from its checkpoint if it has one)",
            first,
            exc_info=exc,
        )
        self.crash = exc
        self.abort()  # what was queued meanwhile, or posted and not accepted, never runs
        self._settle(taken)
        self._on_crash(exc)

    def _process_queued(self) -> None:
        """Process queued events until none is left (worker thread).

        Events the loop queues meanwhile are taken too, a run at a time, so a steady stream of
        events costs no hand-off per event; `abort` drops the runs not taken yet, and stops
        this one between batches.
        """
        ready, runner = self._ready, self.runner
        while True:
            with self._taking:
                if not ready or runner.dropping:
                    return
                run = self._run_taken = ready.popleft()
            self._taken += len(run)
            for first in range(0, len(run), EVENTS_PER_CLEAR):
                if runner.dropping:
                    self._dropped_in_worker(run[first:])
                    return
                self._process_run(run[first : first + EVENTS_PER_CLEAR])
            self._run_taken = []

    def _process_run(self, events: list[Event]) -> None:
        """Plan and run the batches of `events`, in order (worker thread).

        The graph clears metadata after a batch whose jobs ran, and once at the end for the
        batches that ran none (no job computed what they generated).
        """
        graph, runner = self._graph, self.runner
        plan_batch, run = graph.plan_of(events[0].source).batch, self._run  # one source a run
        keep_empty = runner.has_hooks
        uncleared = None
        done = 0
        try:
            for event in events:
                if runner.dropping:
                    self._dropped_in_worker(events[done:])
                    return
                self._running = event  # a stop abandoning it drops the others (`_abandon`)
                batch = plan_batch(event, keep_empty=keep_empty)
                if batch is not None and run(event, batch):
                    graph.clear_metadata(event)
                    uncleared = None
                else:
                    uncleared = event
                done += 1
                self._batches_processed += 1
                self.processed_through = event.instanceId  # type: ignore[assignment] # numbered
        finally:
            if uncleared is not None:
                graph.clear_metadata(uncleared)
            self.order.processed(events[0].source, done)

    def _run(self, event: Event, batch: Batch) -> bool:
        """Run a planned batch with its checkpoint progress; whether jobs ran."""
        progress = self.order.progress_at(event.instanceId)  # type: ignore[arg-type]
        if progress is not None:
            batch.progress = progress
        self.runner.run(batch)
        return bool(batch.jobs)

    async def replay(self, batches: list[tuple[Event, dict[str, Any], bool]]) -> None:
        """Re-plan batches from a checkpoint, in order, before any new event (worker thread).

        Each entry is `(event, reads, rerun)`: the inputs read what `reads` recorded; with
        `rerun` the batch is processed as new (hooks and jobs), else only its RDDs are rebuilt
        for the windows that need them. They run as live batches do, so a stop that does not
        wait (`stop(graceful=False)`) ends them between two batches, and leaves one stuck in a
        function of yours to end in its thread: when this await is cancelled, the batches go on
        until such a stop ends them, and what they do after it is neither told nor recorded.
        """
        assert self._loop is not None
        loop = self._loop
        replayed: asyncio.Future[None] = loop.create_future()

        def run() -> None:
            failure: BaseException | None = None
            try:
                self._replay_batches(batches)
            except BaseException as exc:  # the start raises it, as if it had run there
                if self.runner.abandoned:  # the stop said so, and what it did is not recorded
                    log.info("the batch a stop left running ended with %r", exc)
                    return
                failure = exc
            self._on_loop(self._replayed, replayed, failure)

        with self._taking:
            self._replay = run
        self._enqueued += 1
        self._work.set()
        await replayed

    def _replayed(self, replayed: asyncio.Future[None], failure: BaseException | None) -> None:
        """End the replay's future with `failure`, if any (on the loop).

        Once a stop ended the start that awaited it, the failure is that stop's to raise (the
        start raises it with its own): unless it is the stop's own doing (`_ReplayEndedError`).
        """
        if not replayed.done():
            if failure is None:
                replayed.set_result(None)
            else:
                replayed.set_exception(failure)
        elif failure is not None and not isinstance(failure, _ReplayEndedError):
            self._replay_failure = failure

    def _replay_batches(self, batches: list[tuple[Event, dict[str, Any], bool]]) -> None:
        """Plan the replayed batches, running those to re-run (worker thread; see `replay`).

        A stop that does not wait ends them between two batches (`_ReplayEndedError`): the others
        stay unfinished in the checkpoint's log, and the next start runs them.
        """
        graph, runner = self._graph, self.runner
        keep_empty = runner.has_hooks
        for done, (event, reads, rerun) in enumerate(batches):
            if runner.dropping:
                raise _ReplayEndedError(
                    f"the StreamingContext was stopped while a restart planned again the "
                    f"batches of its checkpoint, {done} of {len(batches)} done: the next start "
                    "plans the others again"
                )
            batch = graph.plan_of(event.source).batch(event, reads, keep_empty=keep_empty)
            if rerun:
                if batch is not None:
                    self._run(event, batch)
                self._batches_processed += 1
                if event.instanceId is not None:
                    self.processed_through = event.instanceId
            elif batch is not None and not runner.abandoned:
                for failure in batch.failures:  # a batch rebuilt for the windows failed
                    self._listeners.report(failure)
            graph.clear_metadata(event)


def _count(runs: Iterable[list[Event]]) -> int:
    """How many events `runs` hold (a snapshot: another thread may change them)."""
    return sum(len(run) for run in list(runs))


class _ReplayEndedError(ContextStateError):
    """A stop ended the batches a restart planned again, before the last (see `replay`)."""
