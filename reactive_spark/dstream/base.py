"""The DStream lineage node: binding, the reaction rule and computing an RDD.

A DStream turns an event into (at most) one RDD. When a bound event fires, the event's plan
(`reactive_spark.planning`) has every stream that reacts to it compute its RDD from its
parents' (`compute_rdd`), parents first, and remember it (docs/architecture.md). What a
stream remembers, persists and checkpoints is the `StreamMemory` mixin's (`dstream/memory.py`).

Here too are the nodes DStream's operations create: `TransformedDStream` (every
transformation and window) and `ForEachDStream` (every output operation); `updateStateByKey`'s
is in `dstream/state.py`. The operations themselves are mixins (`transformations`, `output`,
`pair`, `windows`) that build on `_derive`, `_output` and `_windowed`.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pyspark import RDD

from reactive_spark._callbacks import callable_name
from reactive_spark.deadlines import Expectation
from reactive_spark.dependencies import (
    Dependency,
    EventDependency,
    LegacyWindowDependency,
    TailDependency,
)
from reactive_spark.dstream.files import remove_interrupted_writes
from reactive_spark.dstream.memory import StreamMemory
from reactive_spark.dstream.output import OutputOperations
from reactive_spark.dstream.pair import PairOperations
from reactive_spark.dstream.transformations import TransformOperations
from reactive_spark.dstream.windows import WindowOperations
from reactive_spark.errors import (
    ContextStateError,
    ForeignContextError,
    InvalidArgumentError,
    InvalidCallbackError,
)
from reactive_spark.events import Event, EventSource
from reactive_spark.events.source import require_source
from reactive_spark.offsets import HasOffsetRanges, union_log_rdds
from reactive_spark.running_output import output_of
from reactive_spark.runtime import Runtime
from reactive_spark.time import Duration, Time

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext
    from reactive_spark.planning import Reads

__all__ = [
    "DStream",
    "ForEachDStream",
    "TransformedDStream",
    "UnionDStream",
    "require_same_slide",
    "require_stream",
]

T = TypeVar("T")
U = TypeVar("U")

log = logging.getLogger(__name__)

RDDFunction = Callable[[tuple[RDD[Any], ...], Event], "RDD[Any] | None"]
#: The parents' RDDs for one event, one per dependency (None where a parent has none).
ParentRDDs = tuple["RDD[Any] | None", ...]
#: A stream's `compute_rdd`, or what the plan calls in its place (`DStream.computer`).
Computer = Callable[[Event, ParentRDDs, "Reads"], "RDD[Any] | None"]


class DStream(
    TransformOperations[T],
    OutputOperations,
    PairOperations,
    WindowOperations,
    StreamMemory[T],
    Generic[T],
):
    """A discretized stream: one RDD (at most) per event it reacts to.

    Streams are created by a StreamingContext (inputs) or by operations on other streams, and
    only before the context starts. The API is pyspark.streaming's, plus `bind`, `tailWindow`
    and `timeWindow`.

    Examples:
        >>> from reactive_spark import Days
        >>> daily = ssc.timer(t0, None, Days(1), "daily")
        >>> lines = ssc.queueStream([["ERROR disk full", "INFO ok"]])
        >>> errors = lines.filter(lambda line: "ERROR" in line)
        >>> saved = errors.saveAsTextFiles("errors").bind(daily)
    """

    #: Whether the stream's job commits what the streams reading it see (`aggregateExactlyOnce`):
    #: in a batch, their jobs then run after it, and only if it succeeded.
    commitsFirst = False

    #: For a window's stream: the last event its window computed for and had none due at
    #: (`between_slides`).
    idle_at: Event | None = None

    #: Whether a legacy window reads it: it counts its batches (`count_batch`), at a slide,
    #: whether it had an RDD or not, and a legacy window slides by them, as PySpark's by time.
    counts_batches = False
    #: How many batches it counted, and when the latest was (see `counts_batches`).
    batch_count = 0
    last_batch_time: Time | None = None

    #: For a stream whose parents must slide alike (a union, `ssc.transform`): PySpark's
    #: message when they do not. Checked when defined, and again at start (`check_slides`).
    same_slide: str | None = None

    #: Whether what it computes for an event carries to later ones (`updateStateByKey`): it
    #: computes wherever its parents may have new data (`DStreamGraph._fed_and_reaching`).
    carries_state = False

    #: The parents (by position) that must all have new data at an event for the stream to
    #: have any: an inner join's two, an outer join's kept side. Empty: any parent's new data
    #: may be its own (`DStreamGraph._producing_sources`).
    needs_parents: tuple[int, ...] = ()
    #: The sources at whose events it may have new data, settled at start (None: any). One
    #: that `needs_parents` has no RDD at the others' events: a join of a side that has none.
    new_data_at: frozenset[EventSource] | None = None

    #: Whether the stream may give the RDD it gave for an event to a later event of the same
    #: instant (a window or a state, and what derives from them): it is then not remembered
    #: twice (`StreamMemory.registrar`), so a window over it counts one RDD for the instant.
    repeats = False

    def __init__(
        self,
        ssc: StreamingContext,
        dependencies: Sequence[Dependency],
        operation: str,
        func: object = None,
    ) -> None:
        runtime = Runtime.of(ssc)
        runtime.require_not_started(f"create a {operation} stream")
        for dependency in dependencies:
            require_stream(dependency.parent, "parent", ssc)
        self._ssc = ssc
        self._runtime = runtime
        self._graph = ssc.graph
        self.dependencies = list(dependencies)
        #: The window whose slides this stream's follow (see `between_slides`): its own, else
        #: its first parent's, as PySpark's slide is; None without a window up that line.
        self.slide_window: DStream[Any] | None = None
        #: Whether that window is a legacy `window(...)`, whose slides a stream of several
        #: parents keeps to (`tailWindow` and `timeWindow` emit at their own events).
        self.legacy_slides = False
        if self.dependencies:
            first = self.dependencies[0]
            if type(first) is not EventDependency:
                self.slide_window = self
                self.legacy_slides = isinstance(first, LegacyWindowDependency)
            else:
                self.slide_window = first.parent.slide_window
                self.legacy_slides = first.parent.legacy_slides
        self.repeats = any(
            type(dependency) is not EventDependency or dependency.parent.repeats
            for dependency in self.dependencies
        )
        self._func_name = None if func is None else callable_name(func)
        self._bound: list[EventSource] = []
        StreamMemory.__init__(self)
        self.isOutput = False
        #: Its position among the context's output operations (PySpark's output operation
        #: id), from 0; -1 for a stream that is not an output.
        self.outputId = -1
        self._expectation: Expectation | None = None
        #: The operation that made the stream (`map`, `union`, `directStream(...)`, ...).
        self.operation = operation
        self._id = ssc.graph.add_stream(self)
        self._name = f"{operation}[{self._id}]" + (
            f"({self._func_name})" if self._func_name else ""
        )

    # -- identity ----------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """`operation[id]`, plus the user function's name where there is one."""
        return self._name

    def __repr__(self) -> str:
        return f"<DStream {self.name}>"

    def context(self) -> StreamingContext:
        """The StreamingContext this stream belongs to."""
        return self._ssc

    @property
    def id(self) -> int:
        """The stream's id: its position in the order streams were created (from 0)."""
        return self._id

    @property
    def functionName(self) -> str | None:
        """The name of the user function this stream applies, if it applies one."""
        return self._func_name

    @property
    def parents(self) -> list[DStream[Any]]:
        """The streams this one depends on."""
        return [dependency.parent for dependency in self.dependencies]

    # -- binding -----------------------------------------------------------------------------
    def bind(self, source: EventSource) -> DStream[T]:
        """Generate a job for this stream on every event of `source`; returns this stream.

        A stream may be bound to several sources. A stream reacts to an event when it is bound
        to the event's source or to nothing at all.

        Examples:
            >>> from reactive_spark import Days
            >>> daily = ssc.timer(t0, None, Days(1), "daily")
            >>> saved = ssc.queueStream([["a b"]]).map(str.upper).saveAsTextFiles("out").bind(daily)
            >>> [source.name for source in saved.boundSources]
            ['daily']
        """
        require_source(source, "source", self._ssc)
        self._runtime.require_not_started(f"bind {self.name} to {source.name!r}")
        if source not in self._bound:
            self._bound.append(source)
            self._ssc.graph.bind(self, source)
        return self

    @property
    def boundSources(self) -> list[EventSource]:
        """The sources this stream is bound to."""
        return list(self._bound)

    def reactsTo(self, event: Event) -> bool:
        """Whether this stream generates an RDD for `event` (bound to its source, or unbound)."""
        return self.reactsToSource(event.source)

    def reactsToSource(self, source: EventSource) -> bool:
        """Whether this stream generates an RDD for the events of `source` (see `reactsTo`).

        Examples:
            >>> from reactive_spark import Days
            >>> daily = ssc.timer(t0, None, Days(1), "daily")
            >>> weekly = ssc.timer(t0, None, Days(7), "weekly")
            >>> saved = ssc.queueStream([[1]]).foreachRDD(print).bind(daily)
            >>> saved.reactsToSource(daily), saved.reactsToSource(weekly)
            (True, False)
        """
        return not self._bound or source in self._bound

    # -- computing ---------------------------------------------------------------------------
    def compute_rdd(self, event: Event, parents: ParentRDDs, reads: Reads) -> RDD[Any] | None:
        """This stream's RDD for `event` from its parents' (one per dependency), if any.

        The event's plan calls it once per event, parents first, and remembers what it returns
        (`registrar`). A stream that reads something a re-run must read again records it in
        `reads` (and reads it back from there when the batch is planned again).
        """
        raise NotImplementedError

    def computer(self) -> Computer:
        """What the plan calls for `compute_rdd` (fixed at start, as `registrar` is).

        `compute_rdd` itself, unless a stream knows, from how it was defined, which of its
        branches every event takes: then that branch, so an event pays no call to choose it.
        """
        return self.compute_rdd

    def between_slides(self, event: Event) -> bool:
        """Whether `event` falls between this stream's slides: no RDD is due then.

        A stream slides as the nearest window up its line of first parents (PySpark's slide of
        a stream of several parents is its first parent's): the event is between its slides
        when that window computed for the event and had none due (a legacy window due and
        empty is at a slide). Always False for a stream without a window up that line, and for
        an event the window does not compute for.
        """
        window = self.slide_window
        return window is not None and window.idle_at is event

    def count_batch(self, event: Event) -> None:
        """Count `event` as one of its batches unless it falls between its slides.

        The plan calls it after the stream computed, for the events of the sources that may
        give it new data (`counts_batches`), RDD or not.
        """
        if not self.between_slides(event):
            self.batch_count += 1
            self.last_batch_time = event.time

    def record_count(self, read: dict[str, Any]) -> int | None:
        """How many records a read holds, for inputs (None: this stream is not an input)."""
        return None

    def remove_interrupted_writes(self) -> list[str]:
        """Delete what a write that a crash interrupted left behind (default: nothing)."""
        return []

    # -- deadlines ---------------------------------------------------------------------------
    def expect(
        self,
        every: Duration | timedelta | float,
        within: Duration | timedelta | float | None = None,
        origin: Time | datetime | None = None,
    ) -> DStream[T]:
        """Expect this stream's job to succeed in every period, by a deadline. Returns it.

        The stream must yield jobs: an output operation, or a bound stream. Periods start at
        `origin + k * every` (`origin` defaults to the Unix epoch: `Days(1)` periods start at
        midnight UTC); the period starting at `start` is met when a job of this stream, for an
        event whose time lies in `[start, start + within)`, succeeds before `start + within`
        (`within` defaults to `every`). Otherwise listeners get `onDeadlineMissed`,
        `reactive_spark_output_deadlines_missed_total{stream}` counts it and the console lists
        it. With a checkpoint, a deadline that passed while the
        process was down is reported at the restart, once.

        Examples:
            >>> from reactive_spark import Days, Hours
            >>> daily = ssc.timer(t0, None, Days(1), "daily")
            >>> report = ssc.queueStream([], default=[1]).count().pprint().bind(daily)
            >>> report = report.expect(Days(1), within=Hours(1))
        """
        self._runtime.require_not_started(f"set what is expected of {self.name}")
        self._expectation = Expectation.of(every, within, origin)
        return self

    @property
    def expectation(self) -> Expectation | None:
        """What `expect` said of this stream, if anything."""
        return self._expectation

    # -- building blocks ---------------------------------------------------------------------
    def _derive(
        self,
        compute: RDDFunction,
        operation: str,
        user: object = None,
        others: Sequence[DStream[Any]] = (),
        needs: tuple[int, ...] = (),
    ) -> DStream[Any]:
        streams = [
            self,
            *(require_stream(other, f"{operation}: other", self._ssc) for other in others),
        ]
        dependencies = [EventDependency(stream) for stream in streams]
        return TransformedDStream(self._ssc, dependencies, compute, operation, user, needs)

    def _union(self, others: Sequence[DStream[Any]]) -> DStream[Any]:
        streams = [self, *(require_stream(other, "union: other", self._ssc) for other in others)]
        return UnionDStream(self._ssc, streams, "the two DStream should have same slide duration")

    def check_slides(self) -> None:
        """Raise unless the parents slide alike, if they must (`same_slide`).

        At start, once every binding is known: one made after the stream was defined may
        change what drives a parent (`InvalidArgumentError`, naming this stream).
        """
        if self.same_slide is not None:
            require_same_slide(self.parents, self.same_slide, self)

    def _transform_rdd(
        self,
        func: Callable[[RDD[Any]], RDD[Any]],
        operation: str,
        user: object = None,
    ) -> DStream[Any]:
        return self._derive(lambda rdds, event: func(rdds[0]), operation, user)

    def _transform_rddwith(
        self,
        func: Callable[[RDD[Any], RDD[Any]], RDD[Any]],
        other: DStream[Any],
        operation: str,
        user: object = None,
        needs: tuple[int, ...] = (),
    ) -> DStream[Any]:
        return self._derive(
            lambda rdds, event: func(rdds[0], rdds[1]), operation, user, [other], needs
        )

    def _output(
        self,
        adapted: Callable[[tuple[RDD[Any], ...], Any], Any],
        operation: str,
        user: object = None,
        target: tuple[str, str | None] | None = None,
    ) -> DStream[Any]:
        return ForEachDStream(self, adapted, operation, user, target)

    def _windowed(
        self,
        dependency: Dependency,
        operation: str,
        over: Callable[[RDD[Any]], RDD[Any]] | None = None,
        user: object = None,
    ) -> DStream[Any]:
        """The windows of the dependency's parent, or `over` each (the user's function: `user`)."""
        dependency.parent.keep_for_windows()
        apply = over if over is not None else _unchanged
        return TransformedDStream(
            self._ssc, [dependency], lambda rdds, event: apply(rdds[0]), operation, user
        )


class TransformedDStream(DStream[Any]):
    """`compute(parent_rdds, event)` over the parents' RDDs for an event.

    With one parent, no parent RDD means no RDD. With several, the stream slides as its first
    parent, as PySpark's does: no RDD between that parent's slides (`between_slides`); at
    other events a parent without an RDD for the event contributes an empty RDD, and no parent
    RDD at all means no RDD. A stream that `needs_parents` (a join) has no RDD either at the
    events of a source where one of those has no new data (`new_data_at`): `days.join(names)`
    read hourly, with `days` bound to a daily timer.
    """

    def __init__(
        self,
        ssc: StreamingContext,
        dependencies: Sequence[Dependency],
        compute: RDDFunction,
        operation: str,
        func: object = None,
        needs_parents: tuple[int, ...] = (),
    ) -> None:
        super().__init__(ssc, dependencies, operation, func)
        self.needs_parents = needs_parents
        self._function = compute
        self._windows = any(type(d) is not EventDependency for d in self.dependencies)
        self._window_states = [
            dependency for dependency in self.dependencies if dependency.stateful
        ]
        #: With `repeats`: the instant, the parents' RDDs and the RDD of its latest event.
        self._instant: tuple[Time, ParentRDDs, RDD[Any] | None] | None = None

    def compute_rdd(self, event: Event, parents: ParentRDDs, reads: Reads) -> RDD[Any] | None:
        """The function over the parents' RDDs (see the class): None if no parent has one.

        Through windows, the function gets what each window's dependency makes of its parent.
        A stream that `repeats` gives, to an event of the instant of its previous one whose
        parents gave the very same RDDs again, the RDD it gave then (the function is not called
        again): one RDD per instant, as a PySpark batch has.
        """
        if self._windows:
            parents = self._through_windows(event, parents, reads)
        if not self.repeats:
            return self._applied(event, parents, reads)
        instant = self._instant
        if instant is not None and instant[0] == event.time and _same(instant[1], parents):
            return instant[2]
        rdd = self._applied(event, parents, reads)
        self._instant = (event.time, parents, rdd)
        return rdd

    def computer(self) -> Computer:
        """`_applied` itself when the stream reads no window and does not `repeats`.

        A subclass that computes otherwise (its own `compute_rdd`) is computed by that.
        """
        if (
            self._windows
            or self.repeats
            or type(self).compute_rdd is not TransformedDStream.compute_rdd
        ):
            return self.compute_rdd
        return self._applied

    def _through_windows(self, event: Event, parents: ParentRDDs, reads: Reads) -> ParentRDDs:
        """What each window's dependency makes of its parent's RDD for `event`."""
        self._restore_windows(reads)
        parents = tuple(
            dependency.rdd_for(event, rdd)
            for dependency, rdd in zip(self.dependencies, parents, strict=True)
        )
        first = self.dependencies[0]
        due = first.due if isinstance(first, TailDependency) else parents[0] is not None
        self.idle_at = None if due else event
        return parents

    def _applied(self, event: Event, parents: ParentRDDs, reads: Reads) -> RDD[Any] | None:
        """The function over the parents' RDDs, as `compute_rdd` says."""
        if len(parents) != 1:
            if self.legacy_slides and self.between_slides(event):
                return None
            if self.needs_parents and not self._may_have_new_data(event):
                return None
            present = self._present(parents)
            if present is None:
                return None
            parents = present
        elif parents[0] is None:
            return None
        result = self._function(parents, event)  # type: ignore[arg-type] # no None left
        if result is None or isinstance(result, RDD):
            return result
        raise InvalidCallbackError(
            f"{self.name} must produce an RDD or None for each event, got {type(result).__name__}",
        )

    def _restore_windows(self, reads: Reads) -> None:
        """Record the windows' state before they compute; restore it in a re-planned batch.

        So a batch planned again after a restart emits the windows it emitted the first time.
        """
        if not self._window_states:
            return
        replayed = reads.replayed_read(self)
        if replayed is not None:
            for dependency, state in zip(self._window_states, replayed["windows"], strict=True):
                dependency.restore_state(state)
        reads.record(self, {"windows": [d.save_state() for d in self._window_states]})

    def _may_have_new_data(self, event: Event) -> bool:
        """Whether `event`'s source is one at whose events the stream may have new data."""
        return self.new_data_at is None or event.source in self.new_data_at

    def _present(self, parents: ParentRDDs) -> tuple[RDD[Any], ...] | None:
        """The parents' RDDs, an empty RDD for each one missing; None if all are."""
        if all(rdd is None for rdd in parents):
            return None
        sc = self._ssc.sparkContext
        return tuple(sc.emptyRDD() if rdd is None else rdd for rdd in parents)


class UnionDStream(TransformedDStream):
    """The elements of several streams for each event, in argument order.

    A union of direct log streams merges their records in argument order, then partition, then
    offset: its RDD is a `LogRDD` whose `offsetRanges()` are the inputs' in that order. The
    merged order is recorded with the batch (in the write-ahead log), so a batch re-run after a
    crash merges the same ranges in the same order; if the program now merges differently, the
    re-run fails instead of silently changing the order.
    """

    def __init__(
        self, ssc: StreamingContext, streams: Sequence[DStream[Any]], same_slide: str
    ) -> None:
        require_same_slide(streams, same_slide)
        super().__init__(
            ssc,
            [EventDependency(s) for s in streams],
            lambda rdds, e: union_log_rdds(rdds),
            "union",
        )
        self.same_slide = same_slide

    def _applied(self, event: Event, parents: ParentRDDs, reads: Reads) -> RDD[Any] | None:
        """The parents' RDDs united; a union of logs records its merged order."""
        if self.legacy_slides and self.between_slides(event):
            return None
        present = self._present(parents)
        if present is None:
            return None
        merged = union_log_rdds(present)
        if isinstance(merged, HasOffsetRanges):
            order = [offsets.toList() for offsets in merged.offsetRanges()]
            replayed = reads.replayed_read(self)
            if replayed is not None and replayed.get("merged") != order:
                raise ContextStateError(
                    f"{self.name} merged {replayed.get('merged')} for this batch before the "
                    f"restart and would now merge {order}: the program's union changed"
                )
            reads.record(self, {"merged": order})
        return merged


class ForEachDStream(DStream[Any]):
    """An output operation: its job runs `function((rdd,), event)`.

    `target` is `(prefix, suffix)` for the outputs that save batch directories.
    """

    def __init__(
        self,
        parent: DStream[Any],
        function: Callable[[tuple[RDD[Any], ...], Any], Any],
        operation: str,
        user: object = None,
        target: tuple[str, str | None] | None = None,
    ) -> None:
        super().__init__(parent.context(), [EventDependency(parent)], operation, user)
        self.function = function
        self.target = target
        self.isOutput = True
        self.outputId = self._ssc.graph.add_output(self)
        #: With `repeats`: the instant, source and RDD of its latest job.
        self._last_job: tuple[Time, EventSource, RDD[Any]] | None = None

    def remove_interrupted_writes(self) -> list[str]:
        """Delete the temporary batch directories a crash left behind (see `target`)."""
        if self.target is None:
            return []
        return remove_interrupted_writes(self._ssc.sparkContext, *self.target)

    def compute_rdd(self, event: Event, parents: ParentRDDs, reads: Reads) -> RDD[Any] | None:
        """The parent's RDD, which the job's function receives.

        None for the RDD of an instant a parent that `repeats` gives again to another source's
        event of that instant: an output bound to sources that fire together runs once per
        instant, as once per PySpark batch. Each event of one source is a batch of its own.
        """
        rdd = parents[0]
        if self.repeats and rdd is not None:
            last = self._last_job
            if (
                last is not None
                and last[2] is rdd
                and last[0] == event.time
                and last[1] is not event.source
            ):
                return None
            self._last_job = (event.time, event.source, rdd)
        return rdd

    def computer(self) -> Computer:
        """Its parent's RDD as it is when no parent `repeats` (see `compute_rdd`).

        A subclass that computes otherwise (its own `compute_rdd`: `aggregateExactlyOnce`
        prepares its commit there) is computed by that.
        """
        if self.repeats or type(self).compute_rdd is not ForEachDStream.compute_rdd:
            return self.compute_rdd
        return _parent_rdd

    def output_action(self, event: Event, rdd: RDD[Any]) -> Callable[[], None]:
        """The job body for `event`: the function, with `running_output()` giving `event`."""
        return lambda: _run_output(self.function, rdd, event)

    def committedBatches(self, times: list[Time]) -> list[Time]:
        """Which of `times` this output committed already, as state a re-run would not replace.

        Exactly-once state does so (`aggregateExactlyOnce`); a backfill refuses those batches
        unless told to overwrite. File outputs are not among them: a backfill replaces their
        batch directories.
        """
        return []


def _run_output(
    function: Callable[[tuple[RDD[Any], ...], Any], Any], rdd: RDD[Any], event: Event
) -> None:
    with output_of(event):
        result = function((rdd,), event)
    if inspect.isawaitable(result):
        if inspect.iscoroutine(result):
            result.close()  # it never runs: no "never awaited" warning on top of this error
        raise InvalidCallbackError(
            f"the output's function returned {result!r}, which nothing awaits: it runs in "
            "a batch's thread; hand a coroutine to the event loop with "
            "asyncio.run_coroutine_threadsafe(coroutine, loop)"
        )


def _parent_rdd(event: Event, parents: ParentRDDs, reads: Reads) -> RDD[Any] | None:
    return parents[0]


def _unchanged(rdd: RDD[Any]) -> RDD[Any]:
    return rdd


def _same(before: ParentRDDs, now: ParentRDDs) -> bool:
    """Whether the parents gave the very RDDs (or None) they gave before."""
    return all(a is b for a, b in zip(before, now, strict=True))


def require_same_slide(
    streams: Sequence[DStream[Any]], message: str, reader: DStream[Any] | None = None
) -> None:
    """Raise `InvalidArgumentError` (a ValueError, as PySpark's) if `streams` slide differently.

    A union's streams must slide alike, as in PySpark, and so must `ssc.transform`'s. Only
    streams driven by the same sources are compared (PySpark's all run on one clock): a union
    of streams bound to a daily and a weekly timer unites what each source's events give.
    `message` is PySpark's; the error adds the slides. `reader`: the stream reading them,
    checked again at start.
    """
    graph = streams[0].context().graph
    first: dict[frozenset[EventSource], tuple[DStream[Any], Duration]] = {}
    for stream in streams:
        slide = graph.slide_duration(stream)
        if slide is None:
            continue
        other, other_slide = first.setdefault(graph.driving_sources(stream), (stream, slide))
        if slide != other_slide:
            where = (
                ""
                if reader is None
                else f" (as bound at start, read by {reader.name}: a binding made after it "
                "was defined changed what drives them)"
            )
            raise InvalidArgumentError(
                f"{message}: {other.name} slides every {other_slide.milliseconds} ms, "
                f"{stream.name} every {slide.milliseconds} ms{where}; give them the same "
                "slide (bind them to the same timers, or window the faster one)"
            )


def require_stream(value: object, argument: str, context: StreamingContext) -> DStream[Any]:
    """`value` if it is a DStream of `context`, else raise naming `argument`.

    The one check that an argument is a stream of the right context (operations, `union`,
    `transform`, a backlog source).
    """
    if not isinstance(value, DStream):
        raise InvalidArgumentError(f"{argument} must be a DStream, got {value!r}")
    if value.context() is not context:
        raise ForeignContextError(f"{argument} {value.name} belongs to another StreamingContext")
    return value
