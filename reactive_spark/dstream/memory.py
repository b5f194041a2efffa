"""What a stream remembers of the RDDs it generated, and how it persists and checkpoints them.

The event's plan hands each RDD a stream generates to its `registrar()`, batch by batch; after
batches, the graph has each stream `clear_metadata`: it forgets what no dependency or `remember`
needs any more (`require_retention`), so memory stays flat.

With a checkpoint, the streams whose RDDs reach back past their own event (windows, states and
what derives from them) also remember, with each RDD, the batches a restart must plan again to
rebuild it (`track_history`): the checkpoint's log keeps those (`history_reach`).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from pyspark import RDD, StorageLevel

from reactive_spark._validation import require_int
from reactive_spark.dependencies import Retention
from reactive_spark.dstream.reach import Reach, ReachWindow, merge_reach
from reactive_spark.errors import InvalidArgumentError
from reactive_spark.events import Event
from reactive_spark.time import Duration, Seconds, Time, to_duration, to_time

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext
    from reactive_spark.dependencies import Dependency
    from reactive_spark.dstream.base import DStream
    from reactive_spark.runtime import Runtime

__all__ = ["Generated", "StreamMemory"]

T = TypeVar("T")


def _reach_of_event(event: Event) -> Reach:
    """The batch of `event` alone."""
    return {event.source.name: event.instanceId or 0}


@dataclass(slots=True)
class Generated:
    """An RDD a stream generated, with the event that produced it."""

    event: Event
    rdd: RDD[Any]
    #: The batches a restart plans again to rebuild it (see `StreamMemory.reach_of`); None:
    #: its event's alone.
    reach: Reach | None = None

    @property
    def time(self) -> Time:
        """The event's time."""
        return self.event.time


class StreamMemory(Generic[T]):
    """What a DStream remembers of what it generated, and its storage (a mixin of DStream)."""

    if TYPE_CHECKING:
        _ssc: StreamingContext
        _runtime: Runtime
        dependencies: list[Dependency]
        repeats: bool

        @property
        def name(self) -> str:
            """The stream's name."""

    def __init__(self) -> None:
        # what it generated and still remembers, oldest first: (event, rdd) pairs, made without
        # a Python call per batch; `generated_up_to` gives them as `Generated`
        self._generated: deque[tuple[Event, RDD[Any]]] = deque()
        self.generatedCount = 0
        self._storage_level: StorageLevel | None = None
        self._checkpoint_interval: Duration | None = None
        self._checkpoint_count: int | None = None
        self._since_checkpoint: tuple[Time, int] | None = None
        self._retention = Retention()
        self._keep_count, self._keep_milliseconds = 1, 0
        #: With `track_history`, the reach of each RDD in `_generated`, in the same order.
        self._reaches: ReachWindow | None = None

    @property
    def checkpointed(self) -> bool:
        """Whether this stream's RDDs are checkpointed (`checkpoint(...)` was called)."""
        return self._checkpoint_interval is not None or self._checkpoint_count is not None

    @property
    def is_checkpointed(self) -> bool:
        """PySpark's name for `checkpointed`.

        Examples:
            >>> ssc.queueStream([[1]]).checkpoint(10).is_checkpointed
            True
        """
        return self.checkpointed

    @property
    def is_cached(self) -> bool:
        """Whether `persist` or `cache` was called (PySpark's attribute).

        Examples:
            >>> ssc.queueStream([[1]]).cache().is_cached
            True
        """
        return self._storage_level is not None

    # -- remembering what it generated -------------------------------------------------------
    def _register(self, event: Event, rdd: RDD[Any]) -> None:
        """Persist, checkpoint and remember a generated RDD; the graph clears it later."""
        if self._storage_level is not None and not rdd.is_cached:
            rdd.persist(self._storage_level)
        if self.checkpointed and self._checkpoint_due(event):
            rdd.checkpoint()
            self._since_checkpoint = (event.time, 0)
        self._keep_generated(event, rdd)

    def _keep_generated(self, event: Event, rdd: RDD[Any]) -> None:
        """Remember a generated RDD (what `_register` ends with); the graph clears it later."""
        self._generated.append((event, rdd))
        self.generatedCount += 1

    def _register_tracked(self, event: Event, rdd: RDD[Any]) -> None:
        """Remember the RDD's reach, then register it (see `track_history`)."""
        assert self._reaches is not None
        reach = self.reach_of(event)
        if self._storage_level is not None or self.checkpointed:
            self._register(event, rdd)
        else:
            self._keep_generated(event, rdd)
        self._reaches.append(reach)  # once remembered: the two stay the same length

    def registrar(self) -> Callable[[Event, RDD[Any]], None]:
        """What the plan calls with each RDD this stream generates (fixed at start).

        Persist, checkpoint and remember it; only remember it when the stream neither persists
        nor checkpoints. With `track_history`, remember its reach too. A stream that `repeats`
        does not remember again an RDD it gives again at the instant it gave it: once only.
        """
        if self._reaches is not None:
            register = self._register_tracked
        elif self._storage_level is not None or self.checkpointed:
            register = self._register
        else:
            register = self._keep_generated
        if not self.repeats:
            return register
        generated = self._generated

        def register_once(event: Event, rdd: RDD[Any]) -> None:
            if generated:
                last_event, last_rdd = generated[-1]
                if last_rdd is rdd and last_event.time == event.time:
                    return
            register(event, rdd)

        return register_once

    # -- what a restart rebuilds -------------------------------------------------------------
    @property
    def reaches_back(self) -> bool:
        """Whether an RDD of this stream may come from batches before its event's (a window)."""
        return any(not dependency.same_event for dependency in self.dependencies)

    def track_history(self) -> None:
        """Remember, with each RDD from now on, the batches a restart plans again to rebuild it.

        The graph asks it, before the plans are made, of the streams that reach back past
        their event and of every stream they feed, when the context has a checkpoint.
        """
        self._reaches = ReachWindow()

    def reach_of(self, event: Event) -> Reach:
        """The batches a restart plans again to rebuild this stream's RDD for `event`.

        The event's own, and those of what its dependencies passed on for it.
        """
        reach = _reach_of_event(event)
        for dependency in self.dependencies:
            for other in dependency.reaches(event):
                merge_reach(reach, other)
        return reach

    def latest_reach(self, event: Event) -> Reach | None:
        """The reach of the RDD generated for `event` if it is the latest, and tracked."""
        reaches, generated = self._reaches, self._generated
        if reaches is None or not generated:
            return None
        latest = generated[-1][0]
        if latest is event or (self.repeats and latest.time == event.time):
            return reaches[-1]  # (a stream that repeats gives its instant's RDD again)
        return None

    def history_reach(self, into: Reach) -> None:
        """Add to `into` the batches a restart plans again to rebuild what this stream keeps.

        What it remembers for windows, states and `remember` (a stream that only keeps its
        latest RDD, as every stream does, needs none of it rebuilt).
        """
        if not (self._retention.count or self._retention.duration.milliseconds):
            return
        if self._reaches is None:  # each RDD reaches its own event: a source's first counts
            sources = len(self._ssc.graph.reaching(self))  # type: ignore[arg-type]
            seen: set[str] = set()
            for event, _ in self._generated:
                name = event.source.name
                if name not in seen:
                    seen.add(name)
                    merge_reach(into, _reach_of_event(event))
                    if len(seen) == sources:
                        break
        else:
            self._reaches.reach_back(into)

    def _checkpoint_due(self, event: Event) -> bool:
        if self._since_checkpoint is None:
            self._since_checkpoint = (self._ssc.zeroTime, 0)
        last_time, count = self._since_checkpoint
        count += 1
        self._since_checkpoint = (last_time, count)
        by_time = (
            self._checkpoint_interval is not None
            and event.time - last_time >= self._checkpoint_interval
        )
        by_count = self._checkpoint_count is not None and count >= self._checkpoint_count
        return bool(by_time or by_count)

    def generated_up_to(self, time: Time) -> list[Generated]:
        """The remembered RDDs whose events happened at or before `time`, oldest first."""
        if self._reaches is None:
            return [
                Generated(event, rdd) for event, rdd in tuple(self._generated) if event.time <= time
            ]
        return [
            Generated(event, rdd, reach)
            for (event, rdd), reach in zip(
                tuple(self._generated), tuple(self._reaches), strict=True
            )
            if event.time <= time
        ]

    @property
    def rememberedCount(self) -> int:
        """How many generated RDDs this stream currently remembers."""
        return len(self._generated)

    def recovery_retention(self) -> Retention:
        """The batches a restart must re-plan for this stream (default: what it remembers)."""
        return self._retention

    def required_retention(self) -> Retention:
        """What this stream must remember (what `require_retention` asked of it)."""
        return self._retention

    def require_retention(self, retention: Retention) -> None:
        """Remember at least what `retention` asks (a dependency or `remember` needs it)."""
        self._retention = self._retention.merge(retention)
        # the latest RDD is always kept, as Spark's remember does
        self._keep_count = max(self._retention.count, 1)
        self._keep_milliseconds = self._retention.duration.milliseconds

    def remembered_rdds(self) -> list[RDD[Any]]:
        """The RDDs this stream remembers."""
        return [rdd for _, rdd in tuple(self._generated)]

    def clear_metadata(self, event: Event) -> Sequence[RDD[Any]]:
        """Forget the RDDs no dependency or `remember` needs any more.

        Returns the forgotten RDDs; the graph unpersists those no other stream still holds.
        """
        generated, keep, duration = self._generated, self._keep_count, self._keep_milliseconds
        if len(generated) <= keep:
            return ()
        horizon = event.time.milliseconds - duration
        forgotten = []
        reaches = self._reaches
        while len(generated) > keep and (
            not duration or generated[0][0].time.milliseconds < horizon
        ):
            forgotten.append(generated.popleft()[1])
            if reaches is not None:
                reaches.popleft()
        return forgotten

    def slice(self, begin: Time | datetime | float, end: Time | datetime | float) -> list[RDD[T]]:
        """The remembered RDDs whose events lie in `[begin, end]` (see `ssc.remember`).

        `begin` and `end` are `Time`s, datetimes or, as in PySpark, Unix timestamps in seconds;
        as PySpark does, it reads a naive datetime (`datetime.now()`) as local time, to the
        second. On a stream that slides (its batches a timer's period or a window's slide
        apart), a `begin` between two batches is rounded down to the batch before it, as
        PySpark rounds it to the stream's slide: `slice(time.time() - 5, time.time())` has the
        batch in effect 5 s ago.

        Examples:
            >>> import asyncio
            >>> from reactive_spark import Minutes, Seconds
            >>> ssc.remember(Minutes(1))
            >>> numbers = ssc.queueStream([[1], [2], [3]])
            >>> job = numbers.foreachRDD(lambda rdd: None)
            >>> async def run():
            ...     await ssc.start()
            ...     await ssc.advanceTo(t0 + Seconds(3))
            ...     sliced = numbers.slice(t0 + Seconds(2), t0 + Seconds(3))
            ...     await ssc.stop(stopSparkContext=False)
            ...     return [rdd.collect() for rdd in sliced]
            >>> asyncio.run(run())
            [[2], [3]]
        """
        first = _slice_time(begin, "begin")
        last = _slice_time(end, "end")
        if last < first:
            raise InvalidArgumentError(f"end must not be before begin, got {begin!r}, {end!r}")
        remembered = tuple(self._generated)  # a snapshot: the scheduler's thread may add to it
        slide = self._ssc.graph.slide_duration(self)  # type: ignore[arg-type]
        if slide is not None:
            before = [event.time for event, _ in remembered if first - slide < event.time <= first]
            first = max(before, default=first)
        return [rdd for event, rdd in remembered if first <= event.time <= last]

    # -- storage -----------------------------------------------------------------------------
    def persist(self, storageLevel: StorageLevel) -> DStream[T]:
        """Persist every RDD of this stream at `storageLevel`.

        Examples:
            >>> from pyspark import StorageLevel
            >>> kept = ssc.queueStream([[1]]).map(str).persist(StorageLevel.MEMORY_AND_DISK)
        """
        if not isinstance(storageLevel, StorageLevel):
            raise InvalidArgumentError(
                f"storageLevel must be a pyspark StorageLevel, got {storageLevel!r}",
            )
        self._runtime.require_not_started(f"persist {self.name}")
        self._storage_level = storageLevel
        return cast("DStream[T]", self)

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

        Examples:
            >>> from reactive_spark import Minutes
            >>> cut = ssc.queueStream([[1]]).map(str).checkpoint(Minutes(10), count=100)
            >>> cut.checkpointed
            True
        """
        if interval is None and count is None:
            raise InvalidArgumentError("checkpoint needs an interval, a count, or both")
        if count is not None:
            require_int(count, "count")
        self._runtime.require_not_started(f"checkpoint {self.name}")
        self._checkpoint_interval = None if interval is None else to_duration(interval, "interval")
        self._checkpoint_count = count
        return cast("DStream[T]", self)

    def keep_for_windows(self) -> None:
        """Persist this stream's RDDs in memory unless told otherwise: windows read them often."""
        if self._storage_level is None:
            self._storage_level = StorageLevel.MEMORY_ONLY


def _slice_time(value: Time | datetime | float, name: str) -> Time:
    """A bound of `slice`, as PySpark reads it.

    A number is a Unix timestamp in seconds; a naive datetime is local time, to the second
    (PySpark's `time.mktime`).
    """
    if isinstance(value, datetime) and value.tzinfo is None:
        return to_time(value, name).floor(Seconds(1))
    if isinstance(value, Time | datetime):
        return to_time(value, name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidArgumentError(
            f"{name} must be a Time, a datetime or a Unix timestamp in seconds, got {value!r}"
        )
    return Time(int(value * 1000))  # truncated, as PySpark's
