"""Planning a batch: the streams an event's source makes compute, parents first, compiled once.

A `Plan` is fixed for each bound source when the context starts. The streams that compute for
the source's events are those reached from its bound streams, walking up the dependencies,
through streams that react to the source; they run in creation order, which puts every parent
before its children, so each computes once per event however many streams read it, and a
lineage of any depth plans without recursion. Each bound stream with an RDD becomes a job.
The steps are compiled into one straight-line Python function per plan (`Plan.code`), which
calls each stream's own `compute_rdd` (`computer`): what a step does is written once, in `_STEP`.

Live batches and batches re-planned from a checkpoint run the same plan: a re-planned batch
only hands its streams what they read before (`Reads.replayed`). See docs/architecture.md.
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reactive_spark.dstream.base import ForEachDStream
from reactive_spark.jobs import Batch, Job, JobInfo, commits_first, materialize, plan_failure
from reactive_spark.listener import StreamInputInfo

if TYPE_CHECKING:
    from pyspark import RDD

    from reactive_spark.dstream.base import DStream
    from reactive_spark.events import Event, EventSource

__all__ = ["Plan", "Reads", "reached"]


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

    def __init__(
        self,
        source: EventSource,
        bound: list[DStream[Any]],
        feeds: Sequence[DStream[Any]] = (),
        counted: frozenset[int] = frozenset(),
    ) -> None:
        #: The streams that compute for the source's events, in the order they do: those the
        #: bound streams read, and those the source `feeds` to windows and states.
        self.streams = reached(source, [*bound, *feeds])
        computing = {stream.id for stream in self.streams}
        # a fed state is materialised as it moves: a job computes it before its lineage is cut
        bound = [
            stream
            for stream in [*bound, *(fed for fed in feeds if fed.carries_state)]
            if stream.id in computing
        ]
        #: The source code of the plan's function (see `_compile`), made once; the streams
        #: whose ids are `counted` count its events as their batches (`DStream.count_batch`).
        self.code = _compile(self.streams, bound, counted)
        self._plan = _function(self.code, self.streams, bound, source)
        self._reads = Reads()  # one for every batch: batches are planned one at a time

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
        jobs: list[Job] = []
        failures = self._plan(event, reads, jobs)
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


def reached(source: EventSource, bound: list[DStream[Any]]) -> list[DStream[Any]]:
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


class _Failed:
    """What a stream whose computation raised leaves for its children: they compute nothing."""

    def __repr__(self) -> str:
        return "FAILED"


#: Typed `Any`: it stands where an RDD would, in the plan's locals only.
_FAILED: Any = _Failed()

#: A step of a plan's function: the stream's RDD from its parents', remembered if it has one.
_STEP = """\
try:
    rdd{slot} = compute{slot}(event, ({parents}), reads)
    if rdd{slot} is not None:
        register{slot}(event, rdd{slot})
except Exception as error:
    rdd{slot} = FAILED
    failures = failed(failures, stream{slot}, event, error)
"""


def _compile(
    streams: list[DStream[Any]], bound: list[DStream[Any]], counted: frozenset[int] = frozenset()
) -> str:
    """The source of the plan's function, `plan(event, reads, jobs) -> failures or None`.

    Straight-line code: one step per stream, parents first, each stream's RDD a local
    variable (so a batch keeps nothing of the one before). A step whose stream raises adds the
    stream's failure and leaves FAILED; a step with a FAILED parent is FAILED without
    computing. A parent that does not react to the source has no RDD for its events: None.
    A stream among `counted` then counts the event as its batch. Then a job for each bound
    stream with an RDD. The names it uses are `_function`'s;
    docs/architecture.md says why plans are compiled.
    """
    slots = {stream.id: slot for slot, stream in enumerate(streams)}
    lines = ["def plan(event, reads, jobs):", "    failures = None"]
    for slot, stream in enumerate(streams):
        parents = [slots.get(parent.id) for parent in stream.parents]
        rdds = "".join("None, " if at is None else f"rdd{at}, " for at in parents)
        step = textwrap.indent(_STEP.format(slot=slot, parents=rdds), "    ")
        computed = [f"rdd{at} is FAILED" for at in dict.fromkeys(parents) if at is not None]
        lines.append(f"    # {stream.name!r}")
        if computed:
            lines += [
                f"    if {' or '.join(computed)}:",
                f"        rdd{slot} = FAILED",
                "    else:",
            ]
            step = textwrap.indent(step, "    ")
        lines.append(step.rstrip("\n"))
        if stream.id in counted:
            lines.append(f"    stream{slot}.count_batch(event)")
    for index, stream in enumerate(bound):
        rdd = f"rdd{slots[stream.id]}"
        lines.append(f"    if {rdd} is not None and {rdd} is not FAILED:")
        lines.append(f"        jobs.append(job(bound{index}, event, {rdd}))")
    lines.append("    return failures")
    return "\n".join(lines) + "\n"


def _function(
    code: str, streams: list[DStream[Any]], bound: list[DStream[Any]], source: EventSource
) -> Callable[[Event, Reads, list[Job]], list[JobInfo] | None]:
    """The function `code` defines, calling the streams' computers and registrars."""
    names: dict[str, Any] = {"FAILED": _FAILED, "failed": _failed, "job": _job}
    for slot, stream in enumerate(streams):
        names[f"stream{slot}"] = stream
        names[f"compute{slot}"] = stream.computer()
        names[f"register{slot}"] = stream.registrar()
    for index, stream in enumerate(bound):
        names[f"bound{index}"] = stream
    # a file name in this package, so that failures look past its frames for the user's code
    # (docs/architecture.md, "The path of one event"); `!a`, as a source's name may hold anything
    filename = str(Path(__file__).parent / f"<plan of {source.name!a}>")
    exec(compile(code, filename, "exec"), names)
    return names["plan"]  # type: ignore[no-any-return]


def _failed(
    failures: list[JobInfo] | None, stream: DStream[Any], event: Event, error: Exception
) -> list[JobInfo]:
    """`failures` (made if None) with `stream`'s planning failure."""
    failures = failures or []
    failures.append(plan_failure(stream, event, error))
    return failures


def _job(stream: DStream[Any], event: Event, rdd: RDD[Any]) -> Job:
    """A bound stream's job: its output function, else computing its RDD."""
    if isinstance(stream, ForEachDStream):
        return Job(stream, event, stream.output_action(event, rdd), "output")
    return Job(stream, event, functools.partial(materialize, rdd), "materialize")
