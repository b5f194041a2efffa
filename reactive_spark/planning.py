"""Planning a batch: the streams an event's source makes compute, parents first, in one loop.

A `Plan` is fixed for each bound source when the context starts. The streams that compute for
the source's events are those reached from its bound streams, walking up the dependencies,
through streams that react to the source; they run in creation order, which puts every parent
before its children, so each computes once per event however many streams read it, and a
lineage of any depth plans without recursion. Each bound stream with an RDD becomes a job.

Live batches and batches re-planned from a checkpoint run the same plan: a re-planned batch
only hands its streams what they read before (`Reads.replayed`). See docs/architecture.md.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from reactive_spark.dstream.base import ForEachDStream
from reactive_spark.jobs import Batch, Job, JobInfo, commits_first, materialize, plan_failure
from reactive_spark.listener import StreamInputInfo

if TYPE_CHECKING:
    from pyspark import RDD

    from reactive_spark.dstream.base import DStream
    from reactive_spark.events import Event, EventSource

__all__ = ["Plan", "Reads"]


class Reads:
    """What the streams of one batch read, and what they read the first time it was planned.

    Inputs (what files, offsets, queue items), windows (their state), `updateStateByKey` (where
    its state was saved) and unions of logs (their merged order) record what they read, so the
    checkpoint can log it with the batch. `replayed` is what the checkpoint logged for a batch
    planned again after a restart (stream name -> read): a stream that finds its read there
    reads the same again.

    Examples:
        >>> reads = Reads(replayed={"queueStream[0]": {"queue": [0, 1]}})
        >>> reads.recorded
        {}
    """

    __slots__ = ("recorded", "replayed")

    def __init__(self, replayed: dict[str, dict[str, Any]] | None = None) -> None:
        self.replayed = replayed
        #: What each stream read for this batch, in the order they read.
        self.recorded: dict[DStream[Any], dict[str, Any]] = {}

    def replayed_read(self, stream: DStream[Any]) -> dict[str, Any] | None:
        """What `stream` read the first time this batch was planned, if it is planned again."""
        replayed = self.replayed
        return None if replayed is None else replayed.get(stream.name)

    def record(self, stream: DStream[Any], read: dict[str, Any]) -> None:
        """Keep what `stream` read for this batch (the checkpoint logs it)."""
        self.recorded[stream] = read

    def read_of(self, stream: DStream[Any]) -> dict[str, Any] | None:
        """What `stream` recorded for this batch, if it read anything."""
        return self.recorded.get(stream)


class Plan:
    """How the events of one source are planned: the streams that compute, parents first.

    Examples:
        >>> from reactive_spark import Days
        >>> daily = ssc.timer(t0, None, Days(1), "daily")
        >>> numbers = ssc.queueStream([[1]])
        >>> job = numbers.map(str).foreachRDD(print).bind(daily)
        >>> [stream.name for stream in Plan(daily, [job]).streams]
        ['queueStream[0]', 'map[1](str)', 'foreachRDD[2](print)']
    """

    def __init__(self, source: EventSource, bound: list[DStream[Any]]) -> None:
        #: The streams that compute for the source's events, in the order they do.
        self.streams = _reached(source, bound)
        slots = {stream.id: slot for slot, stream in enumerate(self.streams)}
        # per stream: how it computes and remembers an RDD, and where its parents' RDDs are
        # (the slot of its one parent, else INPUT or MANY); apart, for the rarer cases: every
        # parent's slot, and the slots of the parents this plan computes (a failure spreads)
        self._steps: list[tuple[int, Any, Any, int]] = []
        self._parent_slots: list[tuple[int, ...]] = []
        self._computed_parents: list[frozenset[int]] = []
        for slot, stream in enumerate(self.streams):
            parent_slots = tuple(slots.get(parent.id, ABSENT) for parent in stream.parents)
            only = parent_slots[0] if len(parent_slots) == 1 else MANY if parent_slots else INPUT
            self._steps.append(
                (slot, stream.compute_rdd, stream.registrar(), MANY if only == ABSENT else only)
            )
            self._parent_slots.append(parent_slots)
            self._computed_parents.append(
                frozenset(slot for slot in parent_slots if slot != ABSENT)
            )
        self._bound = [(stream, slots[stream.id]) for stream in bound if stream.id in slots]
        self._reads = Reads()  # one for every batch: batches are planned one at a time
        # each stream's RDD for the batch being planned, in plan order; every step writes its
        # own slot (None if it has no RDD) before a child reads it, so the list is reused
        # without clearing. It keeps the last batch's RDDs alive until this source's next
        # event (if none comes, as long as the plan: until the graph starts again or is
        # dropped), which only delays their cleanup in the JVM: unpersisting does not wait
        self._rdds: list[RDD[Any] | None] = [None] * len(self.streams)

    def batch(
        self,
        event: Event,
        replayed: dict[str, dict[str, Any]] | None = None,
        *,
        keep_empty: bool = True,
    ) -> Batch | None:
        """Plan the batch of `event`: every stream computes once, then one job per bound RDD.

        `replayed` is what the batch's streams read the first time it was planned, for a batch
        planned again after a restart. A stream whose computation raises is a planning failure
        naming it; the streams that read it compute nothing for the event. Without
        `keep_empty`, a batch with neither jobs nor failures is not built (None): nothing would
        run, report or record it.
        """
        reads = self._reads
        reads.replayed, reads.recorded = replayed, {}
        rdds = self._rdds
        failed: set[int] | None = None  # made when needed: most batches fail nowhere
        failures: list[JobInfo] | None = None
        for slot, compute, register, only in self._steps:
            rdd = None
            if failed is not None and not failed.isdisjoint(self._computed_parents[slot]):
                failed.add(slot)
            else:
                try:
                    if only >= 0:  # most streams: one parent, computed before in this plan
                        rdd = compute(event, (rdds[only],), reads)
                    elif only == INPUT:
                        rdd = compute(event, (), reads)
                    else:
                        parents = tuple(_rdd_at(rdds, i) for i in self._parent_slots[slot])
                        rdd = compute(event, parents, reads)
                    if rdd is not None:
                        register(event, rdd)
                except Exception as exc:
                    rdd = None
                    failed = failed or set()
                    failed.add(slot)
                    failures = failures or []
                    failures.append(plan_failure(self.streams[slot], event, exc))
            rdds[slot] = rdd  # the one write: nothing of an earlier batch is left to read
        jobs = []
        for stream, slot in self._bound:
            rdd = rdds[slot]
            if rdd is not None:
                jobs.append(_job(stream, event, rdd))
        if not (jobs or failures or keep_empty):
            return None
        recorded = reads.recorded
        return Batch(
            event,
            commits_first(jobs),
            {stream.name: read for stream, read in recorded.items()},
            failures or [],
            inputInfos={
                stream.id: StreamInputInfo(stream.id, stream.name, records, read)
                for stream, read in recorded.items()
                if (records := stream.record_count(read)) is not None
            },
        )


def _reached(source: EventSource, bound: list[DStream[Any]]) -> list[DStream[Any]]:
    """The streams that compute for `source`'s events, in creation order (no recursion).

    From the bound streams up through the dependencies; a stream that does not react to the
    source computes nothing, and asks nothing of its own parents.
    """
    found: dict[int, DStream[Any]] = {}
    waiting = list(bound)
    while waiting:
        stream = waiting.pop()
        if stream.id in found or not stream.reactsToSource(source):
            continue
        found[stream.id] = stream
        waiting.extend(stream.parents)
    return [found[key] for key in sorted(found)]


#: The slot of a parent that does not react to the plan's source (it has no RDD for its events).
ABSENT = -1
#: A step's `only` parent slot when it has no parents (an input) ...
INPUT = -2
#: ... or when its parents must be looked up one by one (several, or one that is ABSENT).
MANY = -3


def _rdd_at(rdds: list[Any], slot: int) -> Any:
    return None if slot == ABSENT else rdds[slot]


def _job(stream: DStream[Any], event: Event, rdd: RDD[Any]) -> Job:
    """A bound stream's job: its output function, else computing its RDD."""
    if isinstance(stream, ForEachDStream):
        return Job(stream, event, stream.output_action(event, rdd), "output")
    return Job(stream, event, functools.partial(materialize, rdd), "materialize")
