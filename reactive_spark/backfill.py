"""Backfill: the events a pipeline's sources would have fired over a past range, re-run.

A backfill runs on a virtual clock, as fast as Spark runs: it asks each chosen primary source
for the events it would have fired in `[start, end]` (`EventSource.between`: a timer's ticks, a
file watcher's files by modification time), numbered as a live run numbers them where that can
be known (`EventSource.numberPast`: a tick's number from the timer's start; sources derived
from them number theirs from 0), posts each on the clock at its own time, and
moves the clock instant by instant, so the streams bound to the sources, to the sources derived
from them and to windows over them run exactly as a live run would have (a weekly roll-up over
backfilled days included; a direct log stream reads, per batch, the records stamped in the
batch's span). Its primary sources are never started, so nothing else fires; the sources
derived from the chosen ones start at `start`, so a `pipe`'s operators run. File outputs
of the same batch times are replaced atomically; the live checkpoint is never written (a
backfill keeps its own, or none); outputs with exactly-once state (`aggregateExactlyOnce`)
that committed one of the batches refuse the backfill unless it may overwrite.

`Backfill(ssc, start, end, sources)` plans without running anything (`batches`); its `run`
runs the plan for `StreamingContext.backfill`. See docs/operations.md.
"""

from __future__ import annotations

import functools
import time as _time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import groupby
from typing import TYPE_CHECKING, Any

from reactive_spark._validation import require_bool, require_checkpoint_path
from reactive_spark.checkpoint import Checkpoint
from reactive_spark.clock import VirtualClock
from reactive_spark.dstream.base import ForEachDStream
from reactive_spark.errors import (
    ContextStateError,
    InvalidArgumentError,
    InvalidCallbackError,
    ReactiveSparkError,
)
from reactive_spark.events import Event, EventSource
from reactive_spark.events.past import fired_between
from reactive_spark.events.source import roots
from reactive_spark.planning import reached
from reactive_spark.runtime import INITIALIZED, Runtime
from reactive_spark.sources.derived import DerivedEventSource
from reactive_spark.sources.timer import TimerEventSource
from reactive_spark.time import Time, to_time

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext
    from reactive_spark.failures import Failure

__all__ = ["Backfill", "BackfillConflictError", "BackfillReport", "PlannedBatch", "Progress"]

#: `progress(done, total, time)`: after each instant, how many planned batches ran, of how many.
Progress = Callable[[int, int, datetime], Any]
#: `launch(zero_time)`: start the context at `zero_time` without starting its sources.
Launch = Callable[[Time], Awaitable[None]]


class BackfillConflictError(ReactiveSparkError):
    """A backfill would overwrite batches an exactly-once output committed already."""


@dataclass(frozen=True)
class PlannedBatch:
    """One batch a backfill runs: its source's event at `time`, and the streams bound to it.

    `index` is the event's, as the backfill numbers it (docs/operations.md).

    Examples:
        >>> from datetime import UTC, datetime
        >>> print(PlannedBatch(datetime(2026, 1, 12, tzinfo=UTC), "daily", ("saveAsTextFiles[2]",)))
        2026-01-12T00:00:00Z  daily  saveAsTextFiles[2]
    """

    time: datetime
    source: str
    streams: tuple[str, ...]
    index: int | None = None

    def __str__(self) -> str:
        streams = ", ".join(self.streams) or "(no stream bound)"
        return f"{Time.fromDatetime(self.time).isoformat()}  {self.source}  {streams}"


@dataclass
class BackfillReport:
    """What a backfill ran: its batches, the failures (the later batches still ran), the time."""

    batches: list[PlannedBatch]
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0


class Backfill:
    """The plan of a backfill of `ssc`'s sources over `[start, end]`; nothing runs here.

    `sources` names the primary sources to backfill (default: all of them); the sources derived
    from them (`map`, `filter`, `merge`, `delay`, ...) fire from their events as in a live run.
    Planning calls the operators' functions with the events the run hands them, numbered as
    the run numbers them (`fired_between` while `Runtime.backfill_from` is set).
    A name the program does not define, a derived source, a source that knows no past events
    (no `between`: REST, manual, observable and backlog sources), a derived source whose parents
    are only partly chosen and an output bound to no source are errors naming them. `ssc` must
    be new (not started), on a `VirtualClock` not after `start`.

    Examples:
        >>> from reactive_spark import Days
        >>> daily = ssc.timer(t0, None, Days(1), "daily")
        >>> saved = ssc.queueStream([], default=["x"]).saveAsTextFiles("out/x").bind(daily)
        >>> for batch in Backfill(ssc, t0 + Days(3), t0 + Days(4)).batches:
        ...     print(batch)
        2024-01-04T00:00:00Z  daily  saveAsTextFiles(out/x)[1]
        2024-01-05T00:00:00Z  daily  saveAsTextFiles(out/x)[1]
    """

    def __init__(
        self,
        ssc: StreamingContext,
        start: Time | datetime,
        end: Time | datetime,
        sources: str | Iterable[str] | None = None,
        *,
        overwrite: bool = False,
    ) -> None:
        self.start = to_time(start, "start")
        self.end = to_time(end, "end")
        if self.start > self.end:
            raise InvalidArgumentError(
                f"start must not be after end, got start={self.start.isoformat()}, "
                f"end={self.end.isoformat()}"
            )
        self.overwrite = require_bool(overwrite, "overwrite")
        self._ssc = ssc
        clock = ssc.clock
        if not isinstance(clock, VirtualClock):
            raise ContextStateError(
                "a backfill runs on a virtual clock: "
                "StreamingContext(sc, clock=VirtualClock(start))"
            )
        if clock.now() > self.start:
            raise InvalidArgumentError(
                f"start must not be before the clock's time {clock.now().isoformat()}, got "
                f"{self.start.isoformat()}"
            )
        if Runtime.of(ssc).state != INITIALIZED:
            raise ContextStateError(
                f"a backfill needs a new StreamingContext, not a {ssc.state} one"
            )
        unbound = ssc.graph.unbound_outputs()
        if unbound:
            raise InvalidArgumentError(
                f"outputs {', '.join(stream.name for stream in unbound)} are bound to no source: "
                "a backfill fires named sources only; bind them (stream.bind(source))"
            )
        live = ssc.graph.receivers()
        if live:
            raise InvalidArgumentError(
                f"{', '.join(stream.name for stream in live)} read what a socket sends now: a "
                "backfill cannot replay the past from it; build the program without it"
            )
        self.sources = self._chosen(sources)
        self._events = self._events_in_range()
        #: The batches the backfill runs, in the order it runs them.
        self.batches = [self._planned(event) for event in self._events]

    # -- planning ----------------------------------------------------------------------------
    def _chosen(self, names: str | Iterable[str] | None) -> list[EventSource]:
        primaries = [source for source in self._ssc.sources if not source.parents]
        by_name = {source.name: source for source in self._ssc.sources}
        if names is None:
            chosen, argument = primaries, None
        else:
            iterable = isinstance(names, Iterable)  # else it is refused, naming it
            listed = [names] if isinstance(names, str) else list(names) if iterable else []
            if not listed or not all(isinstance(name, str) for name in listed):
                raise InvalidArgumentError(f"sources must name some sources, got {names!r}")
            chosen, argument = [], ", ".join(listed)
            for name in dict.fromkeys(listed):
                source = by_name.get(name)
                if source is None:
                    known = ", ".join(source.name for source in primaries) or "none"
                    raise InvalidArgumentError(
                        f"sources names no source of the program: {name!r} (its sources: {known})"
                    )
                if source.parents:
                    named = ", ".join(sorted(root.name for root in roots(source)))
                    raise InvalidArgumentError(
                        f"sources names {name!r}, which is derived from {named}: name those; "
                        "derived sources fire from their events"
                    )
                chosen.append(source)
        for source in chosen:
            if not backfillable(source):
                fix = (
                    "leave it out of --sources / sources="
                    if argument is not None
                    else "name the sources to backfill with --sources / sources="
                )
                raise InvalidArgumentError(
                    f"source {source.name!r} ({source.kind}) cannot be backfilled: it cannot tell "
                    f"which events it would have fired in the past (it has no between()); {fix}"
                )
        picked = set(chosen)
        for source in self._ssc.sources:
            origins = roots(source)
            if source.parents and picked & origins and not origins <= picked:
                missing = ", ".join(sorted(root.name for root in origins - picked))
                raise InvalidArgumentError(
                    f"source {source.name!r} derives from sources backfilled and not ({missing}): "
                    "name all of its sources in sources=, or none"
                )
        return chosen

    def _events_in_range(self) -> list[Event]:
        """What the chosen sources and those derived from them fire, numbered, in order."""
        picked = set(self.sources)
        fired = [source for source in self._ssc.sources if roots(source) <= picked]
        runtime = Runtime.of(self._ssc)
        runtime.backfill_from = self.start
        events: list[Event] = []
        try:
            for source in fired:
                events.extend(_planned_events(source, self.start, self.end))
        finally:
            runtime.backfill_from = None
        ranks = self._ssc.graph.lineage_ranks(self._ssc.sources)
        positions = {id(event): position for position, event in enumerate(events)}
        return sorted(
            events,
            key=lambda e: (e.time, ranks.get(e.source, e.source.creation_order), positions[id(e)]),
        )

    def _planned(self, event: Event) -> PlannedBatch:
        streams = tuple(stream.name for stream in self._ssc.graph.bound_streams(event.source))
        return PlannedBatch(event.time.toDatetime(), event.source.name, streams, event.index)

    @property
    def _zero_time(self) -> Time:
        """The context's zero time in the backfill: where the batch before the first one ran.

        The previous tick of the chosen timers (the earliest of them), else `start`: so an input
        bound to a timer (`textFileStream`) reads in the first batch what it read live, and a
        direct log stream the records stamped after it.
        """
        return min([self.start, *self._ticks_before().values()])

    def _ticks_before(self) -> dict[EventSource, Time]:
        """Each chosen timer's tick before the range, if it ticked before `start`."""
        ticks: dict[EventSource, Time] = {}
        for source in self.sources:
            if isinstance(source, TimerEventSource) and source.startTime < self.start:
                first = -((source.startTime - self.start) // source.period)  # ticks at or after
                ticks[source] = source.tickAt(first - 1)
        return ticks

    # -- checks ------------------------------------------------------------------------------
    def check(self, checkpoint: str | None = None) -> None:
        """Raise what running the backfill would raise before its first batch; run nothing.

        What `run` refuses (a `checkpoint` that is not a new directory, `BackfillConflictError`),
        then what starting the context checks, the inputs included: a legacy window over a
        parent without one regular timer (`InvalidArgumentError`), an input whose directory
        does not exist (`DirectoryNotFoundError`). So a plan (`--plan`) is printed only for a
        backfill that would run. It fixes the graph's start as the run's start does: define
        nothing after it.

        Examples:
            >>> from reactive_spark import Days
            >>> from reactive_spark.errors import DirectoryNotFoundError
            >>> daily = ssc.timer(t0, None, Days(1), "daily")
            >>> lines = ssc.textFileStream("/no/such/landing").count().pprint().bind(daily)
            >>> try:
            ...     Backfill(ssc, t0 + Days(1), t0 + Days(2)).check()
            ... except DirectoryNotFoundError as error:
            ...     print(str(error).split(";")[0])
            textFileStream(/no/such/landing)[0]: directory /no/such/landing does not exist
        """
        self._own_checkpoint(checkpoint)
        self._refuse_conflicts()
        graph = self._ssc.graph
        graph.start(self._zero_time, self._ssc.sources)
        graph.start_inputs()

    def _own_checkpoint(self, checkpoint: str | None) -> str | None:
        """`checkpoint` as a path if it is a new directory of the backfill's own, else raise.

        None is taken where no stream checkpoints RDDs. Raises `InvalidArgumentError`.
        """
        if checkpoint is not None:
            checkpoint = require_checkpoint_path(checkpoint, "checkpoint")
            if checkpoint == self._ssc.checkpointDirectory or Checkpoint(checkpoint).exists():
                raise InvalidArgumentError(
                    f"checkpoint must be a new directory of the backfill's own, got {checkpoint!r}"
                )
        elif self._ssc.graph.checkpoints_rdds():
            raise InvalidArgumentError(
                "checkpoint must name a new directory of the backfill's own: its streams "
                "checkpoint RDDs, and the live run's directory is not written; got None"
            )
        return checkpoint

    def _refuse_conflicts(self) -> None:
        """Raise `BackfillConflictError` if an exactly-once output committed a planned batch.

        Unless `overwrite`. It names the output, its store and the first such batch time;
        nothing has run yet.
        """
        if self.overwrite:
            return
        graph = self._ssc.graph
        times: dict[ForEachDStream, list[Time]] = {}
        for source, events in groupby(
            sorted(self._events, key=lambda e: e.source.creation_order), lambda e: e.source
        ):
            bound = graph.bound_streams(source)
            at = [event.time for event in events]
            for stream in reached(source, bound):
                if isinstance(stream, ForEachDStream):
                    times.setdefault(stream, []).extend(at)
        for stream, at in times.items():
            committed = stream.committedBatches(sorted(set(at)))
            if committed:
                store = getattr(stream, "store", None)
                named = (
                    f"{stream.name} (store {store.name!r})" if store is not None else stream.name
                )
                raise BackfillConflictError(
                    f"{named} committed the batch at {committed[0].isoformat()}"
                    f"{f' and {len(committed) - 1} more' if len(committed) > 1 else ''} already: "
                    "a backfill would not replace it; pass overwrite=True (--overwrite) to run "
                    "those batches anyway"
                )

    # -- running -----------------------------------------------------------------------------
    async def run(
        self, checkpoint: str | None, progress: Progress | None, launch: Launch
    ) -> BackfillReport:
        """Start the context, fire the planned events, stop it; report (`ssc.backfill`).

        `checkpoint` is a new directory of the backfill's own, or None; the live run's is
        never written. `launch(zero_time)` starts the context without starting its sources.
        """
        ssc = self._ssc
        checkpoint = self._own_checkpoint(checkpoint)
        self._refuse_conflicts()
        ssc.checkpointDirectory = checkpoint  # the live run's, if any, is not touched
        Runtime.of(ssc).replaces_outputs = True
        await launch(self._zero_time)
        try:
            return await self._fire(progress)
        finally:
            await ssc.stop(stopSparkContext=False, stopGracefully=True)

    async def _fire(self, progress: Progress | None) -> BackfillReport:
        """Fire the planned events on the context's clock, instant by instant; report."""
        began = _time.perf_counter()
        ssc = self._ssc
        clock = ssc.clock
        picked = set(self.sources)
        runtime = Runtime.of(ssc)
        runtime.backfilling = True  # direct log streams read each batch's span by time
        runtime.ticks_before_backfill = self._ticks_before()
        # first at `start`: the derived sources of the chosen ones start (the others, as the
        # primary sources, do not), so a `pipe` subscribes where its `between` planned it from
        clock.scheduleAt(self.start, functools.partial(self._start_derived, runtime))
        for instant, events in groupby(
            (event for event in self._events if event.source in picked), lambda e: e.time
        ):
            clock.scheduleAt(instant, _poster(list(events)))
        failures: list[Failure] = []
        done, total = 0, len(self._events)
        for instant, events in groupby(self._events, lambda e: e.time):
            failures.extend(await ssc.advanceTo(instant))
            done += sum(1 for _ in events)
            if progress is not None:
                progress(done, total, instant.toDatetime())
        failures.extend(await ssc.advanceTo(max(self.end, clock.now())))
        return BackfillReport(self.batches, failures, _time.perf_counter() - began)

    def _start_derived(self, runtime: Runtime) -> None:
        """Start the sources derived from the chosen ones only; a failure is theirs to report."""
        picked = set(self.sources)
        for source in self._ssc.sources:
            if isinstance(source, DerivedEventSource) and roots(source) <= picked:
                try:
                    source.start()
                except Exception as exc:
                    runtime.report_source_error(source, "start", exc)


def backfillable(source: EventSource) -> bool:
    """Whether `source` can tell the events it would have fired in a past range.

    Examples:
        >>> from reactive_spark import Days
        >>> backfillable(ssc.timer(t0, None, Days(1), "daily"))
        True
        >>> backfillable(ssc.manualSource("rerun"))
        False
    """
    return type(source).between is not EventSource.between


def _planned_events(source: EventSource, start: Time, end: Time) -> list[Event]:
    """What `source` fires in the backfill; a function of the user's that raises is named.

    Run live, its event would be dropped and the failure reported (`onSourceError`): a plan
    cannot say so of a batch it lists, so it refuses.
    """
    try:
        return fired_between(source, start, end)
    except ReactiveSparkError:
        raise
    except Exception as exc:
        raise InvalidCallbackError(
            f"source {source.name!r}: a function of yours raised {type(exc).__name__}: {exc} "
            "as the backfill planned its events; fix it, or backfill without this source"
        ) from exc


def _poster(events: Sequence[Event]) -> Callable[[], None]:
    def post() -> None:
        for event in events:
            event.source.post(event)

    return post
