"""Recovery after a crash or a stop, from what the checkpoint's log recorded (`checkpoint.py`).

Which sources the log knows, the events of its records, what each source missed during the
downtime, what a stop records last, and `resume`: bringing the graph back to where it was.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from reactive_spark.checkpoint import Checkpoint, Record, Recovered, StopRecord, product_of
from reactive_spark.errors import ContextStateError
from reactive_spark.events import Event, EventSource
from reactive_spark.events.past import caught_up
from reactive_spark.rederive import held_by_source, unseen_by_source
from reactive_spark.runtime import Runtime
from reactive_spark.scheduler import JobScheduler
from reactive_spark.sources.derived import DerivedEventSource, report_rebuild_failure
from reactive_spark.time import Time

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext

__all__ = [
    "all_missed_events",
    "matching_sources",
    "missed_events",
    "recreate",
    "resume",
    "stop_record",
    "use_rdd_directory",
]

log = logging.getLogger(__name__)


def matching_sources(ssc: StreamingContext, recovered: Recovered) -> dict[str, EventSource]:
    """The sources of this run that the checkpoint knows, with unchanged parameters.

    A source that is new, or whose parameters changed (say a timer's period), starts afresh.
    """
    matched = {}
    for source in ssc.sources:
        product = recovered.products.get(source.name)
        if product is None:
            continue
        now = product_of(source)
        if product != now:
            moved_start = (
                source.kind == "timer"
                and isinstance(product, list)
                and isinstance(now, list)
                and len(product) == len(now)
                and product[1:] == now[1:]
            )
            log.warning(
                "checkpoint: event source %r changed (%r -> %r); it starts afresh: its "
                "unfinished batch is not re-run, and what it missed while the driver was down "
                "is not caught up%s",
                source.name,
                product,
                now,
                "; only its start moved: if it starts at `ssc.clock.now()`, it is a new timer "
                "at every start: give it a fixed start (`Time(0)`: ticks on whole periods) to "
                "keep its ticks across restarts, and a `catchUp` policy for what it misses"
                if moved_start
                else "",
            )
            continue
        matched[source.name] = source
    return matched


def recreate(record: Record, sources: dict[str, EventSource], rerun: bool) -> Event | None:
    """The event of a `planned` record, or None when its source is gone or changed."""
    source = sources.get(record["source"])
    if source is None:
        log.log(
            logging.WARNING if rerun else logging.DEBUG,
            "checkpoint: the batch of %s#%s is not %s: its source is gone or changed",
            record["source"],
            record["index"],
            "re-run" if rerun else "rebuilt",
        )
        return None
    fields = record["event"]
    event = source.eventFromRecord(fields)
    event.standsFor = fields.get("standsFor", 1)  # a coalesced event's, for every source
    return event


def missed_events(
    source: EventSource, since: Time, now: Time, dropped: set[int] | frozenset[int] = frozenset()
) -> list[Event]:
    """What `source` missed in `[since, now)`, shaped by its catch-up policy.

    Events at `dropped` times were dropped past the source's bound: they are not missed.
    """
    if source.catchUp == "skip" or since >= now:  # `caught_up` would keep none: no need to ask
        return []
    missed = source.between(since, Time(now.milliseconds - 1))
    if dropped:
        missed = [event for event in missed if event.time.milliseconds not in dropped]
    return caught_up(source, missed)


def all_missed_events(
    sources: list[EventSource],
    since: dict[str, Time],
    now: Time,
    dropped: dict[str, set[int]],
) -> list[Event]:
    """What every source in `sources` missed, from `since[name]` until `now` (may block).

    As one sequence in the order of live events: by time, then lineage rank (each source's in
    the order `between` gave them).
    """
    missed = [
        event
        for source in sources
        for event in missed_events(
            source, since[source.name], now, dropped.get(source.name, frozenset())
        )
    ]
    missed.sort(key=lambda event: (event.time.milliseconds, event.source.lineage_rank))
    return missed


def stop_record(settled: StopRecord | None, sources: list[EventSource]) -> StopRecord | None:
    """What a stop logs last (`Checkpoint.close`), from `EventOrder.settled_progress`.

    How far every source fired, and the last instance id. Nothing after a stop that left
    accepted events without their batch, nor while an operator may hold parent events it has
    not fired (a `pipe` buffering them: its parent fired since it last did), whose events no
    record shows: the restart goes as after a crash, from the last batch's progress, and
    fires the unbound sources' later events again.
    """
    if settled is None:
        return None
    progress = settled[0]
    for source in sources:
        if isinstance(source, DerivedEventSource) and source.holds_parent_events:
            own = progress.get(source.name, [-1])[0]
            if any(progress.get(parent.name, [-1])[0] > own for parent in source.parents):
                return None
    return settled


async def use_rdd_directory(ssc: StreamingContext) -> None:
    """Point Spark's RDD checkpoints (`DStream.checkpoint`) at the checkpoint's `rdds/`.

    Without a checkpoint directory, streams that checkpoint their RDDs need the SparkContext's.
    """
    run_blocking, spark = Runtime.of(ssc).run_blocking, ssc.sparkContext
    if ssc.checkpointDirectory is not None:
        rdds = os.path.join(ssc.checkpointDirectory, "rdds")
        await run_blocking(spark.setCheckpointDir, rdds)
    elif ssc.graph.checkpoints_rdds() and (await run_blocking(spark.getCheckpointDir) is None):
        raise ContextStateError(
            "streams are checkpointed but neither the StreamingContext (checkpoint=...) "
            "nor the SparkContext has a checkpoint directory",
        )


async def resume(
    ssc: StreamingContext,
    checkpoint: Checkpoint,
    recovered: Recovered | None,
    scheduler: JobScheduler,
    *,
    stoppable: Callable[[Awaitable[None]], Awaitable[None]],
) -> set[str]:
    """Open the write-ahead log and, after a crash, bring the graph back to where it was.

    Restores every known source's index sequence, removes what interrupted writes left behind,
    rebuilds the RDDs windows need from the completed batches, re-runs unfinished batches with
    their recorded inputs, and fires the events the primary sources missed, all sources' as one
    sequence in time order (the scheduler orders them as it orders live events, and posts
    each source's as its bound leaves room: `EventOrder.catch_up`). Returns the
    names of the sources to `restart()` (the others are new, or changed, and `start()` afresh).
    The replayed batches are awaited through `stoppable`, the one step a stop that does not
    wait may cancel (`Lifecycle._stoppable`: the worker thread runs them, and that stop ends
    them there); nothing else that runs in a thread here goes on after its await.
    """
    graph, runtime = ssc.graph, Runtime.of(ssc)
    known = {} if recovered is None else matching_sources(ssc, recovered)
    progress = {} if recovered is None else recovered.progress
    progress = {name: fired for name, fired in progress.items() if name in known}
    for name, (time, index) in progress.items():
        known[name].resume_indexes(index, Time(time))
    scheduler.order.track_progress(progress)
    if recovered is not None:
        scheduler.order.resume_after(recovered.last_instance_id)
    await runtime.run_blocking(
        checkpoint.open,
        ssc.zeroTime,
        ssc.sources,
        graph.retention(),
        recovered,
        graph.history_from,
    )
    scheduler.add_batch_hooks(checkpoint.planned, checkpoint.completed)
    scheduler.add_dropped_hook(checkpoint.dropped)
    if recovered is None:
        return set()
    await runtime.run_blocking(graph.remove_interrupted_writes)
    batches = []
    for records, rerun in ((checkpoint.history(), False), (recovered.unfinished, True)):
        for record in records:
            event = recreate(record, known, rerun)
            if event is not None:
                batches.append((event, record["inputs"], rerun))
    log.info(
        "checkpoint: rebuilding %d completed batches, re-running %d unfinished ones",
        sum(not rerun for *_, rerun in batches),
        sum(rerun for *_, rerun in batches),
    )
    await stoppable(scheduler.replay(batches))
    now = ssc.startedAt
    primaries = [source for source in known.values() if not source.parents]
    since = {
        source.name: Time(progress[source.name][0] + 1)
        if source.name in progress
        else recovered.zero_time
        for source in primaries
    }
    missed = await runtime.run_blocking(  # may walk files
        all_missed_events, primaries, since, now, recovered.dropped
    )
    derived = [source for source in known.values() if isinstance(source, DerivedEventSource)]
    unseen: dict[DerivedEventSource, dict[int, list[Event]]] = {}
    if not recovered.stopped:  # a clean stop left nothing underived: its log says so
        unseen, failed = await runtime.run_blocking(unseen_by_source, derived, progress)
        for parent, error in failed:  # an operator's function raised on what it rebuilt
            report_rebuild_failure(runtime, parent, error)
    held: dict[DerivedEventSource, dict[int, list[Event]]] = {}
    if derived:
        held, failed = await runtime.run_blocking(held_by_source, derived, unseen)
        for parent, error in failed:  # or the source whose held_spans raised
            report_rebuild_failure(runtime, parent, error)
    # from here on nothing awaits: every missed event is handed over before the first is
    # accepted; each source's are posted as room frees, in order with the others' (and with
    # what derived sources still hold), so no bound is passed and the loop never waits
    for source in derived:
        try:
            source.resume_pending(unseen.get(source, {}), held.get(source, {}))
        except Exception as exc:
            runtime.report_source_error(source, source.operation, exc, None, source.function)
    scheduler.order.catch_up(missed)
    if missed:
        log.info("checkpoint: catching up %d events missed during the downtime", len(missed))
    return set(known)
