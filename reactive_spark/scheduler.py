"""The job scheduler: orders events, plans each event's batch, runs its jobs off the loop.

On the event loop, events are accepted in `(time, lineage rank, source order)` order and
numbered (`instanceId`, `index`) as they are accepted; the events of one source and instant
are accepted as a run. Then, in the scheduler's worker thread and one event at a time, each
batch is planned (`DStreamGraph.generate_jobs`, which calls into Spark), handed to the batch
hooks (the place a write-ahead log goes), and its jobs run, at most `maxConcurrentJobs` at
once. The worker thread lives as long as the scheduler and takes queued events itself until
none is left, so the loop is never blocked and a steady stream of events pays no thread
hand-off per event. This module is the one place that runs blocking work in threads.

Every failure (a job, a plan, an event source) goes through `report`, which logs it once,
tells the listeners and the failure sinks (`advanceTo`, `awaitTermination`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import dataclasses
import heapq
import itertools
import logging
import sys
import threading
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread

from reactive_spark.errors import JobSkippedError
from reactive_spark.events import Event
from reactive_spark.jobs import (
    Batch,
    BatchInfo,
    Failure,
    Job,
    JobInfo,
    OutputOperationInfo,
    SourceErrorInfo,
    StreamingListener,
    now_ms,
)

if TYPE_CHECKING:
    from pyspark import SparkContext

    from reactive_spark.graph import DStreamGraph

__all__ = ["JobScheduler", "run_blocking"]

log = logging.getLogger(__name__)

R = TypeVar("R")


async def run_blocking(func: Callable[..., R], *args: Any) -> R:
    """Run blocking `func(*args)` in anyio's worker threads, never on the event loop.

    Examples:
        >>> import asyncio
        >>> asyncio.run(run_blocking(sum, [1, 2, 3]))
        6
    """
    return await anyio.to_thread.run_sync(func, *args)


BatchHook = Callable[[Batch], None]
OrderKey = tuple[int, int, int]

#: How many pending events the loop accepts before letting its other callbacks run.
EVENTS_PER_FLUSH = 1024
#: How many queued events the worker thread takes at once (see `_process_queued`).
EVENTS_PER_TAKE = 64


class JobScheduler:
    """Accepts events in order and processes them one at a time (see module docs)."""

    def __init__(
        self,
        graph: DStreamGraph,
        sparkContext: SparkContext,
        max_concurrent_jobs: int,
        onCrash: Callable[[BaseException], None],
        onFailure: Callable[[Failure], None],
    ) -> None:
        self._graph = graph
        self._sc = sparkContext
        self.max_concurrent_jobs = max_concurrent_jobs
        self._on_crash = onCrash
        self._on_failure = onFailure
        self._listeners: list[StreamingListener] = []
        self._before_jobs: list[BatchHook] = []
        self._after_jobs: list[BatchHook] = []
        # events waiting to be accepted, FIFO per order key; the heap holds the distinct keys
        self._pending: dict[OrderKey, deque[Event]] = {}
        self._pending_keys: list[OrderKey] = []
        self._instance_ids = itertools.count()
        self._flush_scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        # accepted events waiting for the worker thread, and how many are not processed yet
        self._ready: deque[Event] = deque()
        self._taking = threading.Lock()  # the worker takes from `_ready`, the loop may drop it
        self._taken = 0  # events the worker thread took in its busy period (its own count)
        self._unprocessed = 0
        self._work = threading.Event()  # wakes the worker thread: events are queued
        self._idle: asyncio.Event | None = None
        self._bound: frozenset[Any] = frozenset()
        # with a checkpoint: what every source fired so far, and its state at each bound event
        self._progress: dict[str, list[int]] | None = None
        self._progress_at: dict[int, dict[str, list[int]]] = {}
        self._worker: threading.Thread | None = None
        self._finished = False  # the worker thread is told to end
        self._job_threads: ThreadPoolExecutor | None = None
        self._closed = False  # no more events are accepted
        self._dropping = False  # queued events are dropped, running jobs cancelled
        #: Whether posted events will be processed (not closed, not crashed).
        self.accepting = True
        self._job_group = f"reactive-spark-{id(self):x}"
        self._announced = 0  # events without a batch, counted on the loop
        self._batches_processed = 0  # counted in the worker thread
        #: The instanceId of the last event whose batch was processed (events go in order).
        self.processed_through = -1
        self.crash: BaseException | None = None

    # -- listeners and hooks --------------------------------------------------
    def add_listener(self, listener: StreamingListener) -> None:
        """Notify `listener` of events, batches, jobs and source errors."""
        self._listeners.append(listener)

    def add_batch_hooks(
        self, before: BatchHook | None = None, after: BatchHook | None = None
    ) -> None:
        """Call `before(batch)` once a batch is planned and before its jobs, `after` once done.

        Hooks run in the scheduler's worker thread, like planning and jobs.
        """
        if before is not None:
            self._before_jobs.append(before)
        if after is not None:
            self._after_jobs.append(after)

    def track_progress(self, progress: dict[str, list[int]]) -> None:
        """Keep what every source fired (for the checkpoint), starting from `progress`."""
        self._progress = dict(progress)

    def resume_after(self, last_instance_id: int) -> None:
        """Number accepted events from `lastInstanceId + 1` (after a restart)."""
        self._instance_ids = itertools.count(last_instance_id + 1)

    def tell(self, method: str, argument: Any) -> None:
        """Call `method(argument)` on every listener; a listener that raises is logged."""
        if not self._listeners:
            return
        for listener in list(self._listeners):
            try:
                getattr(listener, method)(argument)
            except Exception:
                log.exception("streaming listener %r failed in %s", listener, method)

    def report(self, failure: Failure) -> None:
        """Log `failure` once, tell the listeners and `onFailure`. Any thread."""
        user = failure.userError
        trace = "" if user is None else user.traceback
        log.error("reactive-spark: %s\n%s", failure.describe(), trace)
        if isinstance(failure, SourceErrorInfo):
            self.tell("onSourceError", failure)
        else:
            self.tell("onJobCompleted", failure)
        self._on_failure(failure)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start processing events on `loop`."""
        self._loop = loop
        self._idle = asyncio.Event()
        self._idle.set()
        self._bound = frozenset(self._graph.bound_sources())
        if self.max_concurrent_jobs > 1:
            self._job_threads = ThreadPoolExecutor(
                self.max_concurrent_jobs, thread_name_prefix="reactive-spark-job"
            )
        # one long-lived thread, in the context `start` ran in (as a task's would be)
        self._worker = threading.Thread(
            target=contextvars.copy_context().run,
            args=(self._work_forever,),
            name="reactive-spark-worker",
            daemon=True,
        )
        self._worker.start()

    def _close(self, *, dropping: bool) -> None:
        self._closed = True
        self._dropping = self._dropping or dropping
        self.accepting = False

    def abort(self) -> None:
        """Accept nothing more and drop every queued event (on the loop).

        The running batch still ends; `stop(graceful=False)` also cancels its Spark jobs.
        """
        self._close(dropping=True)
        self._pending.clear()
        self._pending_keys.clear()
        self._done(self._drop_ready())

    async def stop(self, graceful: bool) -> None:
        """Stop processing: after the queued events (`graceful`), or after the running batch.

        A graceful stop that was cancelled or timed out can be escalated by calling
        `stop(graceful=False)`, which drops what is still queued and cancels running jobs.
        """
        if self._worker is None or self._idle is None:
            self._close(dropping=False)
            return
        if graceful and not self._dropping:
            await self.idle(raiseCrash=False)
            self._close(dropping=False)
        else:
            self.abort()
            await run_blocking(self._sc.cancelJobGroup, self._job_group)
            await self._idle.wait()
        self._finished = True
        self._work.set()
        await run_blocking(self._worker.join)
        if self._job_threads is not None:
            self._job_threads.shutdown(wait=True)
            self._job_threads = None

    # -- accepting events --------------------------------------------------------------------
    def accept(self, event: Event) -> None:
        """Queue `event` for ordering; must run on the loop (see `StreamingContext`).

        Events are accepted in order of time, then the source's lineage rank (fixed at start:
        a source whose streams feed another's goes first), then `tiebreak`; events still tied
        keep the order they were posted in.
        """
        if self._closed:
            log.warning("dropping %r: the scheduler is stopped", event)
            return
        self._tied(event).append(event)

    def accept_run(self, events: Sequence[Event]) -> None:
        """Queue events of one source, time and tiebreak, in order; must run on the loop."""
        if not events:
            return
        if self._closed:
            log.warning(
                "dropping %d events from %r: the scheduler is stopped", len(events), events[0]
            )
            return
        self._tied(events[0]).extend(events)

    def _tied(self, event: Event) -> deque[Event]:
        """The pending events `event` is tied with (same time, rank and tiebreak)."""
        key: OrderKey = (event.time.milliseconds, event.source.rank, event.tiebreak)
        tied = self._pending.get(key)
        if tied is None:
            self._pending[key] = tied = deque()
            heapq.heappush(self._pending_keys, key)
        if not self._flush_scheduled and self._loop is not None:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush_some)
        return tied

    def _flush_some(self) -> None:
        """Accept a slice of the pending events; the rest after the loop's other callbacks.

        So the worker thread starts on the first batches of a burst while the rest of the burst
        is accepted, and the loop stays responsive.
        """
        self._flush_scheduled = False
        self.flush(EVENTS_PER_FLUSH)
        if self._pending_keys and not self._flush_scheduled and self._loop is not None:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush_some)

    def flush(self, limit: int | None = None) -> None:
        """Number the pending events in order, notify listeners, and queue them for processing.

        Events tied on one key (one source and instant) are accepted as a run. Listeners may
        fire more events (derived sources do); they are accepted in order too. An event no
        stream is bound to has no batch: it is only numbered and announced. With `limit`, at
        most that many events are accepted.
        """
        pending, keys, bound = self._pending, self._pending_keys, self._bound
        budget = sys.maxsize if limit is None else limit
        queued = 0
        while keys and budget:
            key = keys[0]
            tied = pending[key]
            if tied:
                run = self._accept_run(_take(tied, budget), tied, key)
                budget -= len(run)
                if run[0].source in bound:
                    self._ready.extend(run)
                    queued += len(run)
                else:
                    self._announced += len(run)
            if not tied and keys[0] is key:
                heapq.heappop(keys)
                del pending[key]
        if queued:
            self._unprocessed += queued
            assert self._idle is not None
            self._idle.clear()
            self._work.set()

    def _accept_run(self, run: list[Event], tied: deque[Event], key: OrderKey) -> list[Event]:
        """Number `run` (events of one key, taken from `tied`) in order and hand it on.

        Listeners get each event as it is accepted; derived sources get the whole run, unless a
        listener is there too (then they are called with it, in the order they were added).
        Returns the events accepted: all of them, unless a listener posted an event that goes
        first; then the rest of the run goes back to wait behind it.
        """
        source = run[0].source
        listened = source.listened
        watched = listened or bool(self._listeners) or self._progress is not None
        index_sequence, instance_ids = source.index_sequence, self._instance_ids
        for event in run:
            if event.index is None:
                event.index = next(index_sequence)
            event.instanceId = next(instance_ids)
            if watched and self._announce(event, key, notify=listened):
                cut = run.index(event) + 1  # events are equal only to themselves
                tied.extendleft(reversed(run[cut:]))
                run = run[:cut]
                break
        if not listened:
            source.forward(run)
        return run

    def _announce(self, event: Event, key: OrderKey, *, notify: bool) -> bool:
        """Record and announce a numbered event; whether an event posted meanwhile goes first.

        The checkpoint's progress, `onEventFired`, and with `notify` the source's listeners.
        """
        source, progress = event.source, self._progress
        if progress is not None:
            assert event.index is not None and event.instanceId is not None  # numbered
            progress[source.name] = [event.time.milliseconds, event.index]
            if source in self._bound:
                self._progress_at[event.instanceId] = dict(progress)
        if self._listeners:
            self.tell("onEventFired", event)
        if notify:
            source.notify(event)
        return self._pending_keys[0] is not key

    @property
    def processed_events(self) -> int:
        """Events fully handled: announced (no batch), or their batch processed."""
        return self._announced + self._batches_processed

    @property
    def busy(self) -> bool:
        """Whether events wait to be accepted or accepted events wait to be processed."""
        return bool(self._pending_keys) or self._unprocessed > 0

    async def idle(self, *, raiseCrash: bool = True) -> None:
        """Wait until every posted event has been accepted and processed.

        Events that batches post while they run (at the same instant) are waited for too.
        """
        if self._idle is None:
            return
        while True:
            while self._pending_keys and not self._dropping:
                self.flush(EVENTS_PER_FLUSH)
                await asyncio.sleep(0)  # the worker thread may start on what was accepted
            await self._idle.wait()
            if not self._pending_keys or self._dropping:
                break
        if raiseCrash and self.crash is not None:
            raise self.crash

    @property
    def backlog(self) -> int:
        """Accepted events waiting to be processed."""
        return len(self._ready)

    @property
    def queue_depth(self) -> int:
        """Events waiting: posted and not accepted yet, or accepted and not processed yet."""
        return len(self._ready) + sum(len(tied) for tied in list(self._pending.values()))

    def _done(self, count: int) -> None:
        self._unprocessed -= count
        if self._unprocessed == 0 and self._idle is not None:
            self._idle.set()

    def _drop_ready(self) -> int:
        """Drop the accepted events no worker has taken; returns how many."""
        with self._taking:
            dropped = len(self._ready)
            self._ready.clear()
        return dropped

    # -- processing --------------------------------------------------------------------------
    def _work_forever(self) -> None:
        """The worker thread: whenever events are queued, process them all, in order.

        Each busy period ends by telling the loop how many events it took (`_done`); a crash
        (a `BaseException` from a batch) ends the thread and stops the scheduler (`_crashed`).
        """
        while True:
            self._work.wait()
            self._work.clear()  # before looking at the queue: what comes after wakes it again
            if self._finished:
                return
            with self._taking:
                first = self._ready[0] if self._ready else None
            self._taken = 0
            try:
                self._process_queued()
            except BaseException as exc:
                self._on_loop(self._crashed, exc, first, self._taken)
                return
            self._on_loop(self._done, self._taken)

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
        self._done(taken)
        self._on_crash(exc)

    def _process_queued(self) -> None:
        """Process queued events until none is left (worker thread).

        Events the loop queues meanwhile are taken too, so a steady stream of events costs no
        hand-off per event; they are taken a few at a time, as `abort` may drop the rest.
        """
        ready, process = self._ready, self._process
        while True:
            with self._taking:
                count = min(len(ready), EVENTS_PER_TAKE)
                if not count or self._dropping:
                    return
                events = [ready.popleft() for _ in range(count)]
                self._taken += count
            uncleared = None
            try:
                for event in events:
                    if self._dropping:
                        return
                    if process(event):  # Spark ran jobs: its cached RDDs go at once
                        self._graph.clear_metadata(event)
                        uncleared = None
                    else:
                        uncleared = event
            finally:
                if uncleared is not None:  # batches that ran nothing forget once per run
                    self._graph.clear_metadata(uncleared)

    async def replay(self, batches: list[tuple[Event, dict[str, Any], bool]]) -> None:
        """Re-plan batches from a checkpoint, in order, before any new event.

        Each entry is `(event, reads, rerun)`: the inputs read what `reads` recorded; with
        `rerun` the batch is processed as new (hooks and jobs), else only its RDDs are rebuilt
        for the windows that need them.
        """

        def run() -> None:
            for event, reads, rerun in batches:
                self._process(event, reads, rerun)
                self._graph.clear_metadata(event)

        await run_blocking(run)

    def _process(
        self, event: Event, reads: dict[str, Any] | None = None, runJobs: bool = True
    ) -> bool:
        """Plan the event's batch, run its hooks and jobs (worker thread); whether jobs ran.

        The caller then has the graph clear metadata: after a batch whose jobs ran, or once
        for a run of batches that ran none (no job computed what they generated).
        """
        hooked = bool(self._before_jobs or self._after_jobs)
        batch = self._graph.generate_jobs(event, reads, keepEmpty=hooked)
        progress = None
        if self._progress_at and event.instanceId is not None:
            progress = self._progress_at.pop(event.instanceId, None)
        if batch is not None:
            if progress is not None:
                batch.progress = progress
            if runJobs:
                self._run_batch(batch)
            else:
                for failure in batch.failures:  # a batch rebuilt for the windows failed to plan
                    self.report(failure)
        if runJobs:
            self._batches_processed += 1
            if event.instanceId is not None:
                self.processed_through = event.instanceId
        return batch is not None and runJobs and bool(batch.jobs)

    def _run_batch(self, batch: Batch) -> None:
        """Report planning failures, call the batch hooks around the jobs, run the jobs.

        The batch counts as submitted now, once planned (as a JobSet in Spark).
        """
        if not (batch.jobs or batch.failures):  # a batch with neither is not reported
            for hook in self._before_jobs:
                hook(batch)
            for hook in self._after_jobs:
                hook(batch)
            return
        info = BatchInfo(batch.event, batch.inputs, now_ms(), inputInfos=batch.inputInfos)
        if self._listeners:  # each callback gets the batch as it is then, as in PySpark
            self.tell("onBatchSubmitted", _snapshot(info))
        for hook in self._before_jobs:
            hook(batch)
        info.startedTime = now_ms()
        if self._listeners:
            self.tell("onBatchStarted", _snapshot(info))
        for failure in batch.failures:
            info.jobs.append(failure)
            self.report(failure)
        if batch.jobs:
            self._run_jobs(batch, info)
        info.completedTime = now_ms()
        for hook in self._after_jobs:
            hook(batch)
        self.tell("onBatchCompleted", info)
        if log.isEnabledFor(logging.INFO):
            log.info("%s", describe_batch(info))

    def _run_jobs(self, batch: Batch, info: BatchInfo) -> None:
        """Run the batch's jobs, at most `maxConcurrentJobs` at once; report each outcome."""
        infos = [
            JobInfo(
                job.stream.name,
                batch.event,
                job.kind,
                info.plannedTime,
                function=job.stream.functionName,
                streamId=job.stream.id,
            )
            for job in batch.jobs
        ]
        pairs = list(zip(batch.jobs, infos, strict=True))
        info_of = {id(job): job_info for job, job_info in pairs}
        if any(job.stream.commitsFirst for job in batch.jobs):
            # commits run first, one at a time; a job reading a failed one is skipped
            for job, job_info in pairs:
                if job.stream.commitsFirst:
                    self._execute_after(job, job_info, info_of)
            pairs = [(job, job_info) for job, job_info in pairs if not job.stream.commitsFirst]
        if self._job_threads is None or len(pairs) <= 1:
            for job, job_info in pairs:
                self._execute_after(job, job_info, info_of)
        else:
            running = [
                self._job_threads.submit(self._execute_after, job, job_info, info_of)
                for job, job_info in pairs
            ]
            wait(running)
            for future in running:  # a BaseException (a simulated crash) is never swallowed
                crash = future.exception()
                if crash is not None:
                    raise crash
        for job_info in infos:
            info.jobs.append(job_info)
            if job_info.failed:
                self.report(job_info)
            else:
                self.tell("onJobCompleted", job_info)
            if self._listeners:
                self.tell("onOutputOperationCompleted", OutputOperationInfo(copy.copy(job_info)))

    def _execute_after(self, job: Job, info: JobInfo, info_of: dict[int, JobInfo]) -> None:
        """Run `job`, unless a commit it reads (`job.after`) failed: then report it skipped."""
        for commit in job.after:
            commit_info = info_of[id(commit)]
            if commit_info.error is not None:
                info.startTime = info.endTime = now_ms()
                info.error = JobSkippedError(job.stream.name, commit.stream.name, commit_info.error)
                return
        self._execute(job, info)

    def _execute(self, job: Job, info: JobInfo) -> None:
        info.startTime = now_ms()
        if self._listeners:
            self.tell("onJobStarted", info)
            self.tell("onOutputOperationStarted", OutputOperationInfo(copy.copy(info)))
        try:
            self._sc.setJobGroup(self._job_group, job.description, True)
            job.action()
        except Exception as exc:
            info.error = exc
            if self._dropping:  # the context is stopping: Spark cancelled the job
                info.cancelled = True
                log.info("reactive-spark: cancelled %s (the context is stopping)", job.description)
            else:
                info.traceback = "".join(traceback.format_exception(exc))
        finally:
            info.endTime = now_ms()


def _take(tied: deque[Event], count: int) -> list[Event]:
    """The first `count` events of `tied` (all, if it holds fewer), removed from it."""
    if count >= len(tied):
        run = list(tied)
        tied.clear()
        return run
    return [tied.popleft() for _ in range(count)]


def _snapshot(info: BatchInfo) -> BatchInfo:
    """A copy of `info` that later changes to the batch do not touch."""
    return dataclasses.replace(info, jobs=list(info.jobs))


def describe_batch(info: BatchInfo) -> str:
    """One line for the log: source, UTC time, jobs, duration and each output's outcome."""
    event = info.event
    seconds = ((info.completedTime or 0) - (info.startedTime or info.plannedTime)) / 1000
    outcomes = ", ".join(
        f"{job.streamName} {job.status}" if job.status != "succeeded" else job.streamName
        for job in info.jobs
    )
    return (
        f"batch {event.source.name}#{event.index} at {event.time.isoformat()}: "
        f"{len(info.jobs)} job(s) in {seconds:.2f} s: {outcomes}"
    )
