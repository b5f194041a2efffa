"""The DStream lineage node: binding, the reaction rule, `getOrCompute` and bounded memory.

A DStream turns an event into (at most) one RDD. When a bound event fires, the graph asks the
bound streams for their RDD; each stream asks its parents through its dependencies, and stops
at a stream that does not react to the event (DESIGN §6).
"""

from __future__ import annotations

import logging
import operator
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from pyspark import RDD, StorageLevel

from reactive_spark._callbacks import adapt_callback, callable_name, require_callable
from reactive_spark._validation import require_int
from reactive_spark.dependencies import Dependency, EventDependency, Retention
from reactive_spark.dstream.output import OutputOperations
from reactive_spark.dstream.pair import PairOperations
from reactive_spark.dstream.windows import WindowOperations
from reactive_spark.errors import ForeignContextError, InvalidArgumentError
from reactive_spark.events import Event, EventSource
from reactive_spark.time import Duration, Time, to_duration, to_time

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext

__all__ = ["DStream", "Generated"]

T = TypeVar("T")
U = TypeVar("U")

log = logging.getLogger(__name__)

RDDFunction = Callable[[tuple[RDD[Any], ...], Event], "RDD[Any] | None"]


class Generated(NamedTuple):
    """An RDD a stream generated, with the event that produced it."""

    event: Event
    rdd: RDD[Any]

    @property
    def time(self) -> Time:
        """The event's time."""
        return self.event.time


class DStream(OutputOperations, PairOperations, WindowOperations, Generic[T]):
    """A discretized stream: one RDD (at most) per event it reacts to.

    Streams are created by a StreamingContext (inputs) or by operations on other streams, and
    only before the context starts. The API is pyspark.streaming's, plus `bind`, `tailWindow`
    and `timeWindow`.

    Example:
        >>> # lines = ssc.textFileStream("logs")
        >>> # lines.filter(lambda l: "ERROR" in l).saveAsTextFiles("errors").bind(daily)
    """

    def __init__(
        self,
        ssc: StreamingContext,
        dependencies: Sequence[Dependency],
        operation: str,
        func: object = None,
    ) -> None:
        ssc._requireNotStarted(f"create a {operation} stream")
        for dependency in dependencies:
            _require_same_context(ssc, dependency.parent, "parent")
        self._ssc = ssc
        self.dependencies = list(dependencies)
        self._funcName = None if func is None else callable_name(func)
        self._bound: list[EventSource] = []
        # the RDD of the event being planned (events are planned one at a time)
        self._memo: tuple[int, RDD[Any] | None] | None = None
        # what the stream read for the event being planned, for the checkpoint (`describeRead`)
        self._lastRead: tuple[int, dict[str, Any]] | None = None
        self._generated: deque[Generated] = deque()
        self.generatedCount = 0
        self._storageLevel: StorageLevel | None = None
        self._checkpointInterval: Duration | None = None
        self._checkpointCount: int | None = None
        self._sinceCheckpoint: tuple[Time, int] | None = None
        self._retention = Retention()
        self._keepCount, self._keepMilliseconds = 1, 0
        self.isOutput = False
        self._id = ssc._graph.addStream(self)
        self._name = f"{operation}[{self._id}]" + (f"({self._funcName})" if self._funcName else "")

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
    def parents(self) -> list[DStream[Any]]:
        """The streams this one depends on."""
        return [dependency.parent for dependency in self.dependencies]

    # -- binding -----------------------------------------------------------------------------
    def bind(self, source: EventSource) -> DStream[T]:
        """Generate a job for this stream on every event of `source`; returns this stream.

        A stream may be bound to several sources. A stream reacts to an event when it is bound
        to the event's source or to nothing at all.

        Example:
            >>> # lines.map(parse).saveAsTextFiles("daily").bind(ssc.timer(t0, None, Days(1), "d"))
        """
        if not isinstance(source, EventSource):
            raise InvalidArgumentError(f"source must be an EventSource, got {source!r}")
        self._ssc._requireNotStarted(f"bind {self.name} to {source.name!r}")
        if source.context is not self._ssc:
            raise ForeignContextError(
                f"source {source.name!r} belongs to another StreamingContext than {self.name}",
            )
        if source not in self._bound:
            self._bound.append(source)
            self._ssc._graph.bind(self, source)
        return self

    @property
    def boundSources(self) -> list[EventSource]:
        """The sources this stream is bound to."""
        return list(self._bound)

    def reactsTo(self, event: Event) -> bool:
        """Whether this stream generates an RDD for `event` (bound to its source, or unbound)."""
        return not self._bound or event.source in self._bound

    # -- computing ---------------------------------------------------------------------------
    def _compute(self, event: Event) -> RDD[Any] | None:
        raise NotImplementedError

    def getOrCompute(self, event: Event) -> RDD[Any] | None:
        """This stream's RDD for `event`, computing it (and its parents') once per event."""
        key = event.instanceId if event.instanceId is not None else id(event)
        memo = self._memo
        if memo is not None and memo[0] == key:
            return memo[1]
        rdd = self._compute(event) if self.reactsTo(event) else None
        if rdd is not None:
            self._register(event, rdd)
        self._memo = (key, rdd)
        self._ssc._graph.touched.add(self)
        return rdd

    def _register(self, event: Event, rdd: RDD[Any]) -> None:
        if self._storageLevel is not None and not rdd.is_cached:
            rdd.persist(self._storageLevel)
        if self._checkpointDue(event):
            rdd.checkpoint()
            self._sinceCheckpoint = (event.time, 0)
        self._generated.append(Generated(event, rdd))
        self.generatedCount += 1

    def _checkpointDue(self, event: Event) -> bool:
        if self._checkpointInterval is None and self._checkpointCount is None:
            return False
        if self._sinceCheckpoint is None:
            self._sinceCheckpoint = (self._ssc.zeroTime, 0)
        last_time, count = self._sinceCheckpoint
        count += 1
        self._sinceCheckpoint = (last_time, count)
        by_time = (
            self._checkpointInterval is not None
            and event.time - last_time >= self._checkpointInterval
        )
        by_count = self._checkpointCount is not None and count >= self._checkpointCount
        return bool(by_time or by_count)

    def generatedUpTo(self, time: Time) -> list[Generated]:
        """The remembered RDDs whose events happened at or before `time`, oldest first."""
        return [item for item in tuple(self._generated) if item.time <= time]

    @property
    def rememberedCount(self) -> int:
        """How many generated RDDs this stream currently remembers."""
        return len(self._generated)

    def describeRead(self, event: Event) -> dict[str, Any] | None:
        """What this stream read for `event` that a re-run must read again, if anything.

        Inputs record what they consume, `updateStateByKey` where it saved its state.
        """
        read = self._lastRead
        return read[1] if read is not None and read[0] == id(event) else None

    def _recordRead(self, event: Event, read: dict[str, Any]) -> None:
        """Keep `read` for `describeRead`; the stream must be a graph recorder (`addRecorder`)."""
        self._lastRead = (id(event), read)

    def recoveryRetention(self) -> Retention:
        """The batches a restart must re-plan for this stream (default: what it remembers)."""
        return self._retention

    def _requireRetention(self, retention: Retention) -> None:
        self._retention = self._retention.merge(retention)
        # the latest RDD is always kept, as Spark's remember does
        self._keepCount = max(self._retention.count, 1)
        self._keepMilliseconds = self._retention.duration.milliseconds

    def clearMetadata(self, event: Event) -> list[RDD[Any]]:
        """Forget per-event state and the RDDs no dependency or `remember` needs any more.

        Returns the forgotten RDDs; the graph unpersists those no other stream still holds.
        """
        self._memo = self._lastRead = None
        generated, keep, duration = self._generated, self._keepCount, self._keepMilliseconds
        if len(generated) <= keep:
            return []
        horizon = event.time.milliseconds - duration
        forgotten = []
        while len(generated) > keep and (not duration or generated[0].time.milliseconds < horizon):
            forgotten.append(generated.popleft().rdd)
        return forgotten

    # -- storage -----------------------------------------------------------------------------
    def persist(self, storageLevel: StorageLevel) -> DStream[T]:
        """Persist every RDD of this stream at `storageLevel`.

        Example:
            >>> # stream.persist(StorageLevel.MEMORY_AND_DISK)
        """
        if not isinstance(storageLevel, StorageLevel):
            raise InvalidArgumentError(
                f"storageLevel must be a pyspark StorageLevel, got {storageLevel!r}",
            )
        self._ssc._requireNotStarted(f"persist {self.name}")
        self._storageLevel = storageLevel
        return self

    def cache(self) -> DStream[T]:
        """Persist every RDD of this stream in memory (`MEMORY_ONLY`)."""
        return self.persist(StorageLevel.MEMORY_ONLY)

    def checkpoint(
        self,
        interval: Duration | timedelta | float | None = None,
        *,
        count: int | None = None,
    ) -> DStream[T]:
        """Checkpoint this stream's RDD when `interval` passed or `count` events occurred.

        Either criterion triggers a checkpoint; the context needs a checkpoint directory.

        Example:
            >>> # stream.checkpoint(Minutes(10), count=100)
        """
        if interval is None and count is None:
            raise InvalidArgumentError("checkpoint needs an interval, a count, or both")
        if count is not None:
            require_int(count, "count")
        self._ssc._requireNotStarted(f"checkpoint {self.name}")
        self._checkpointInterval = None if interval is None else to_duration(interval, "interval")
        self._checkpointCount = count
        return self

    # -- building blocks ---------------------------------------------------------------------
    def _derive(
        self,
        compute: RDDFunction,
        operation: str,
        user: object = None,
        others: Sequence[DStream[Any]] = (),
    ) -> DStream[Any]:
        from reactive_spark.dstream.transformed import TransformedDStream

        streams = [self, *others]
        for other in others:
            if not isinstance(other, DStream):
                raise InvalidArgumentError(f"{operation}: other must be a DStream, got {other!r}")
            _require_same_context(self._ssc, other, "other")
        dependencies = [EventDependency(stream) for stream in streams]
        return TransformedDStream(self._ssc, dependencies, compute, operation, user)

    def _transformRDD(
        self,
        func: Callable[[RDD[Any]], RDD[Any]],
        operation: str,
        user: object = None,
    ) -> DStream[Any]:
        return self._derive(lambda rdds, event: func(rdds[0]), operation, user)

    def _transformRDDWith(
        self,
        func: Callable[[RDD[Any], RDD[Any]], RDD[Any]],
        other: DStream[Any],
        operation: str,
        user: object = None,
    ) -> DStream[Any]:
        return self._derive(
            lambda rdds, event: func(rdds[0], rdds[1]),
            operation,
            user,
            [other],
        )

    # -- transformations ---------------------------------------------------------------------
    def transform(self, func: Callable[..., RDD[U]]) -> DStream[U]:
        """A stream of `func(rdd)` for every RDD.

        `func` may take `(rdd)`, `(time, rdd)` or `(time, rdd, event)`.

        Example:
            >>> # stream.transform(lambda rdd: rdd.sortBy(lambda x: x))
        """
        adapted = adapt_callback(func, 1, "func", "transform")
        return self._derive(adapted, "transform", func)

    def transformWith(
        self,
        func: Callable[..., RDD[U]],
        other: DStream[Any],
        keepSerializer: bool = False,
    ) -> DStream[U]:
        """A stream of `func(rdd_a, rdd_b)` over this stream and `other`.

        `func` may take `(a, b)`, `(time, a, b)` or `(time, a, b, event)`. When only one side has
        an RDD for an event, the other side is an empty RDD.

        Example:
            >>> # a.transformWith(lambda x, y: x.subtract(y), b)
        """
        adapted = adapt_callback(func, 2, "func", "transformWith")
        return self._derive(adapted, "transformWith", func, [other])

    def map(self, f: Callable[[T], U], preservesPartitioning: bool = False) -> DStream[U]:
        """Apply `f` to every element.

        Example:
            >>> # numbers.map(lambda x: x * 2)
        """
        require_callable(f, "f", "map")
        return self._transformRDD(lambda rdd: rdd.map(f, preservesPartitioning), "map", f)

    def flatMap(
        self,
        f: Callable[[T], Iterable[U]],
        preservesPartitioning: bool = False,
    ) -> DStream[U]:
        """Apply `f` to every element and flatten the results.

        Example:
            >>> # lines.flatMap(str.split)
        """
        require_callable(f, "f", "flatMap")
        return self._transformRDD(lambda rdd: rdd.flatMap(f, preservesPartitioning), "flatMap", f)

    def filter(self, f: Callable[[T], bool]) -> DStream[T]:
        """Keep the elements for which `f` is true.

        Example:
            >>> # lines.filter(lambda line: "ERROR" in line)
        """
        require_callable(f, "f", "filter")
        return self._transformRDD(lambda rdd: rdd.filter(f), "filter", f)

    def mapPartitions(
        self,
        f: Callable[[Iterable[T]], Iterable[U]],
        preservesPartitioning: bool = False,
    ) -> DStream[U]:
        """Apply `f` to every partition's iterator.

        Example:
            >>> # numbers.mapPartitions(lambda it: [sum(it)])
        """
        require_callable(f, "f", "mapPartitions")
        return self._transformRDD(
            lambda rdd: rdd.mapPartitions(f, preservesPartitioning), "mapPartitions", f
        )

    def mapPartitionsWithIndex(
        self,
        f: Callable[[int, Iterable[T]], Iterable[U]],
        preservesPartitioning: bool = False,
    ) -> DStream[U]:
        """Apply `f(partitionIndex, iterator)` to every partition.

        Example:
            >>> # numbers.mapPartitionsWithIndex(lambda i, it: [(i, sum(it))])
        """
        require_callable(f, "f", "mapPartitionsWithIndex")
        return self._transformRDD(
            lambda rdd: rdd.mapPartitionsWithIndex(f, preservesPartitioning),
            "mapPartitionsWithIndex",
            f,
        )

    def glom(self) -> DStream[list[T]]:
        """Turn every partition into a list.

        Example:
            >>> # numbers.glom()
        """
        return self._transformRDD(lambda rdd: rdd.glom(), "glom")

    def reduce(self, func: Callable[[T, T], T]) -> DStream[T]:
        """One element per RDD: the reduction of its elements with `func` (none when empty).

        Example:
            >>> # numbers.reduce(operator.add)
        """
        require_callable(func, "func", "reduce")
        return self._transformRDD(
            lambda rdd: rdd.map(lambda x: (None, x)).reduceByKey(func, 1).map(lambda kv: kv[1]),
            "reduce",
            func,
        )

    def count(self) -> DStream[int]:
        """One element per RDD: its number of elements (0 for an empty batch, as in Scala).

        Example:
            >>> # lines.count()
        """
        sc = self._ssc.sparkContext

        def count_rdd(rdd: RDD[Any]) -> RDD[Any]:
            counts = rdd.mapPartitions(lambda it: [(None, sum(1 for _ in it))])
            zero = sc.parallelize([(None, 0)], 1)
            return counts.union(zero).reduceByKey(operator.add, 1).map(lambda kv: kv[1])

        return self._transformRDD(count_rdd, "count")

    def countByValue(self) -> DStream[tuple[T, int]]:
        """`(value, count)` pairs for the distinct elements of every RDD.

        Example:
            >>> # words.countByValue()
        """
        return self.map(lambda x: (x, 1)).reduceByKey(operator.add)

    def repartition(self, numPartitions: int) -> DStream[T]:
        """Reshuffle every RDD into `numPartitions` partitions.

        Example:
            >>> # stream.repartition(8)
        """
        require_int(numPartitions, "numPartitions")
        return self._transformRDD(lambda rdd: rdd.repartition(numPartitions), "repartition")

    def union(self, other: DStream[U]) -> DStream[T | U]:
        """The elements of this stream and `other` (whichever have an RDD for the event).

        Example:
            >>> # errors.union(warnings)
        """

        def unite(rdds: tuple[RDD[Any], ...], event: Event) -> RDD[Any]:
            return self._ssc.sparkContext.union(list(rdds))

        return self._derive(unite, "union", None, [other])

    def slice(self, begin: Time | datetime, end: Time | datetime) -> list[RDD[T]]:
        """The remembered RDDs whose events lie in `[begin, end]` (see `ssc.remember`).

        Example:
            >>> # stream.slice(t0, t1)
        """
        first = to_time(begin, "begin")
        last = to_time(end, "end")
        if last < first:
            raise InvalidArgumentError(f"end must not be before begin, got {begin!r}, {end!r}")
        remembered = tuple(self._generated)  # a snapshot: the scheduler's thread may add to it
        return [item.rdd for item in remembered if first <= item.time <= last]


def _require_same_context(ssc: StreamingContext, stream: object, argument: str) -> None:
    if not isinstance(stream, DStream):
        raise InvalidArgumentError(f"{argument} must be a DStream, got {stream!r}")
    if stream._ssc is not ssc:
        raise ForeignContextError(
            f"{argument} {stream.name} belongs to another StreamingContext",
        )
