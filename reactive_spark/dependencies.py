"""Dependencies: given an event, which parent RDDs a stream receives (docs/concepts.md).

* `EventDependency`: the parent's RDD for the same event, or none.
* `TailDependency`: a window over the parent's last generated RDDs, counted in events.
* `TimeWindowDependency`: a window over the parent's RDDs, bounded in time.

Each dependency also says how much of the parent's history it needs (`retention`), so streams
forget everything else after each event and memory stays flat, and which of the parent's
batches what it passed on came from (`reaches`), so a checkpoint keeps what a restart rebuilds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reactive_spark._validation import require_int
from reactive_spark.errors import InvalidArgumentError
from reactive_spark.time import Duration, Time

if TYPE_CHECKING:
    from pyspark import RDD

    from reactive_spark.dstream.base import DStream
    from reactive_spark.dstream.memory import Generated
    from reactive_spark.dstream.reach import Reach
    from reactive_spark.events import Event
    from reactive_spark.graph import DStreamGraph

__all__ = [
    "Dependency",
    "EventDependency",
    "LegacyWindowDependency",
    "Retention",
    "TailDependency",
    "TimeWindowDependency",
]


@dataclass(frozen=True)
class Retention:
    """How much generated history a stream must keep.

    The last `count` RDDs, and the RDDs whose events lie within `duration` of the latest event.
    """

    count: int = 0
    duration: Duration = field(default_factory=lambda: Duration(0))

    def merge(self, other: Retention) -> Retention:
        """The retention that satisfies both."""
        return Retention(max(self.count, other.count), max(self.duration, other.duration))


class Dependency(ABC):
    """How a stream reads its parent for an event."""

    def __init__(self, parent: DStream[Any]) -> None:
        self.parent = parent

    @abstractmethod
    def rdd_for(self, event: Event, parent_rdd: RDD[Any] | None) -> RDD[Any] | None:
        """The RDD (or union of RDDs) this dependency passes on for `event`, if any.

        `parent_rdd` is the parent's RDD for `event` (None if it has none): the plan computed
        the parent before this dependency's stream, if the parent reacts to the event.
        """

    def retention(self) -> Retention:
        """What the parent must remember for this dependency (default: nothing past `event`)."""
        return Retention()

    def reaches(self, event: Event) -> list[Reach]:
        """The batches a restart plans again to rebuild what this passed on for `event`.

        Default: those of the parent's RDD for `event` (see `StreamMemory.reach_of`).
        """
        reach = self.parent.latest_reach(event)
        return [] if reach is None else [reach]

    def prepare(self, graph: DStreamGraph) -> None:  # noqa: B027
        """Finish configuration once the whole graph is known (at start; default: nothing)."""

    #: Whether it passes on nothing but the parent's RDD for the same event.
    same_event = False

    #: Whether the dependency keeps state across events that a restart must restore (windows
    #: remember what they emitted); such state is recorded with every batch.
    stateful = False

    #: Whether it reads what its parent generated for other events at the event's own instant
    #: (a window ending with the event): the sources of those events go first at the instant.
    reads_its_instant = False

    #: Whether it passed on, for the latest event, what it passed on for an earlier event at
    #: the same instant (a window read again by another source's event of that instant).
    again = False

    def save_state(self) -> Any:
        """The state before computing the current event, as JSON (see `stateful`)."""
        return None

    def restore_state(self, state: Any) -> None:  # noqa: B027
        """Restore what `saveState` returned for a batch re-planned after a restart."""

    def describe(self) -> str:
        """A short description for graphs and logs."""
        return type(self).__name__


class EventDependency(Dependency):
    """The parent's RDD for the same event, or none (every ordinary transformation)."""

    same_event = True

    def rdd_for(self, event: Event, parent_rdd: RDD[Any] | None) -> RDD[Any] | None:
        """The parent's RDD for `event`."""
        return parent_rdd


def _reaches(window: Sequence[Generated]) -> list[Reach]:
    """The batches a restart plans again to rebuild the parent RDDs of `window`."""
    return [
        {item.event.source.name: item.event.instanceId or 0} if item.reach is None else item.reach
        for item in window
    ]


@dataclass(frozen=True, slots=True)
class _Emitted:
    """A window a dependency passed on: when, over which parent RDDs, as which RDD."""

    time: Time
    window: Sequence[Generated]
    rdd: RDD[Any] | None


def _union(parent: DStream[Any], window: Sequence[Generated]) -> RDD[Any] | None:
    if not window:
        return None
    if len(window) == 1:
        return window[0].rdd
    return parent.context().sparkContext.union([item.rdd for item in window])


class TailDependency(Dependency):
    """A window over the parent's last generated RDDs, counted in parent events.

    The window is emitted once at least `slideLength` parent RDDs were generated since the last
    window; it unites the last `windowLength` of the parent's generated RDDs after dropping the
    latest `skipLength`.
    """

    reads_its_instant = True

    def __init__(
        self,
        parent: DStream[Any],
        windowLength: int,
        slideLength: int = 1,
        skipLength: int = 0,
    ) -> None:
        super().__init__(parent)
        require_int(windowLength, "windowLength")
        require_int(slideLength, "slideLength")
        require_int(skipLength, "skipLength", minimum=0)
        self.windowLength = windowLength
        self.slideLength = slideLength
        self.skipLength = skipLength
        self._emitted_at = 0
        self._emitted: _Emitted | None = None
        #: The parent RDDs of the window emitted for the latest event (none if none was).
        self.united: Sequence[Generated] = ()
        #: Whether a window was due at the latest event (at a slide), empty or not.
        self.due = False

    stateful = True

    def save_state(self) -> int:
        """What the parent counted since the last emitted window (before this event's)."""
        return self._counted() - self._emitted_at

    def restore_state(self, state: Any) -> None:
        """Count since the last window from what the parent counted again so far."""
        self._emitted_at = self._counted() - int(state)

    def _counted(self) -> int:
        """What the window counts of its parent: its generated RDDs."""
        return self.parent.generatedCount

    def _window(self, event: Event) -> Sequence[Generated]:
        """The parent RDDs of the window due at `event`."""
        history = self.parent.generated_up_to(event.time)
        kept = history[: len(history) - self.skipLength] if self.skipLength else history
        return kept[-self.windowLength :]

    def _united(self, window: Sequence[Generated]) -> RDD[Any] | None:
        """The RDD of a window due: its parent RDDs united (None: none)."""
        return _union(self.parent, window)

    def rdd_for(self, event: Event, parent_rdd: RDD[Any] | None) -> RDD[Any] | None:
        """The window due at `event`, if one is due and non-empty.

        An event at the instant of the last window, with nothing counted since, gets that
        window again (`again`), the same RDD: every reader of an instant reads its one window.
        """
        counted, emitted = self._counted(), self._emitted
        self.again = (
            counted == self._emitted_at and emitted is not None and emitted.time == event.time
        )
        if self.again:
            assert emitted is not None
            self.due, self.united = True, emitted.window
            return emitted.rdd
        self.due = counted - self._emitted_at >= self.slideLength
        if not self.due:
            self.united = ()
            return None
        self._emitted_at = counted
        self.united = window = self._window(event)
        rdd = self._united(window)
        self._emitted = _Emitted(event.time, window, rdd)
        return rdd

    def reaches(self, event: Event) -> list[Reach]:
        """Those of the parent RDDs of the window emitted for `event`, if one was."""
        return _reaches(self.united)

    def retention(self) -> Retention:
        """The last `windowLength + skipLength` parent RDDs."""
        return Retention(count=self.windowLength + self.skipLength)

    def describe(self) -> str:
        """`TailDependency(window, slide, skip)`."""
        return f"TailDependency({self.windowLength}, {self.slideLength}, {self.skipLength})"


class LegacyWindowDependency(TailDependency):
    """The legacy `window(windowDuration, slideDuration)`: a tail window in parent batches.

    It equals `tailWindow(windowDuration / parentSlide, slideDuration / parentSlide)`, counted
    in the parent's batches rather than its RDDs (`DStream.count_batch`): a batch its parent
    gave no RDD for still counts, so the window slides with time and may be empty, as
    PySpark's does. Without a `slideDuration` the window slides by the parent's slide, one
    window per parent batch, as PySpark's does.

    `parentSlide` is the period of the timer driving the parent (times the slides of legacy
    windows in between). It is estimated when the window is defined, so bad durations raise at
    once, and settled when the context starts and every binding is known.
    """

    def __init__(
        self,
        parent: DStream[Any],
        windowDuration: Duration,
        slideDuration: Duration | None,
        estimatedParentSlide: Duration | None,
    ) -> None:
        super().__init__(parent, 1, 1, 0)
        parent.counts_batches = True
        self.windowDuration = windowDuration
        #: The slide asked for; None: the parent's.
        self.requested_slide = slideDuration
        #: The slide in force: the one asked for, else the parent's once it is known.
        self.slide_duration = slideDuration
        self._parent_slide: Duration | None = None
        if estimatedParentSlide is not None:
            self.resolve(estimatedParentSlide)

    def _counted(self) -> int:
        """What the window counts of its parent: its batches, RDD or not."""
        return self.parent.batch_count

    def _window(self, event: Event) -> Sequence[Generated]:
        """The parent RDDs of its latest `windowLength` batches."""
        last, slide = self.parent.last_batch_time, self._parent_slide
        assert last is not None and slide is not None  # a batch was counted; settled at start
        start = last - slide * self.windowLength
        return [item for item in self.parent.generated_up_to(last) if item.time > start]

    def _united(self, window: Sequence[Generated]) -> RDD[Any]:
        """The window's parent RDDs united; an empty RDD if its batches gave none."""
        rdd = _union(self.parent, window)
        return self.parent.context().sparkContext.emptyRDD() if rdd is None else rdd

    @staticmethod
    def check(windowDuration: Duration, slide_duration: Duration, parentSlide: Duration) -> None:
        """Raise unless both durations are multiples of the parent's slide."""
        for name, duration in (
            ("windowDuration", windowDuration),
            ("slideDuration", slide_duration),
        ):
            if not duration.isMultipleOf(parentSlide):
                raise InvalidArgumentError(
                    f"{name} must be a multiple of the parent stream's slide duration "
                    f"({parentSlide.milliseconds} ms), got {duration.milliseconds} ms",
                )

    def resolve(self, parentSlide: Duration) -> None:
        """Turn the durations into counts of parent batches."""
        slide = parentSlide if self.requested_slide is None else self.requested_slide
        self.check(self.windowDuration, slide, parentSlide)
        self.slide_duration = slide
        self._parent_slide = parentSlide
        self.windowLength = self.windowDuration // parentSlide
        self.slideLength = slide // parentSlide

    def prepare(self, graph: DStreamGraph) -> None:
        """Settle the counts from the timer that really drives the parent."""
        parent_slide = graph.slide_duration(self.parent)
        if parent_slide is None:
            raise InvalidArgumentError(
                f"window({self.windowDuration.milliseconds} ms, {self._slide()}) needs a "
                f"parent driven by one regular timer, but {self.parent.name} is not; use "
                "tailWindow (counts events) or timeWindow (any events) instead",
            )
        self.resolve(parent_slide)

    def _slide(self) -> str:
        slide = self.requested_slide
        return "the parent's slide" if slide is None else f"{slide.milliseconds} ms"

    def describe(self) -> str:
        """`LegacyWindowDependency(window, slide)`."""
        return f"LegacyWindowDependency({self.windowDuration.milliseconds} ms, {self._slide()})"


class TimeWindowDependency(Dependency):
    """A window `[end - windowDuration, end)` over the parent's RDDs, ends at `origin + k*slide`.

    On each event, the candidate is the window that ends just after the latest parent event
    before the last window end at or before the event; it is emitted once, unless empty.
    """

    def __init__(
        self,
        parent: DStream[Any],
        windowDuration: Duration,
        slide_duration: Duration,
        origin: Time | None,
    ) -> None:
        super().__init__(parent)
        self.windowDuration = windowDuration
        self.slide_duration = slide_duration
        self._origin = origin
        self._last_emitted_end: Time | None = None
        self._emitted: _Emitted | None = None
        #: The parent RDDs of the window emitted for the latest event (none if none was).
        self.united: Sequence[Generated] = ()

    stateful = True

    def save_state(self) -> int | None:
        """The end of the last emitted window (ms), if any."""
        return None if self._last_emitted_end is None else self._last_emitted_end.milliseconds

    def restore_state(self, state: Any) -> None:
        """Restore the end of the last emitted window."""
        self._last_emitted_end = None if state is None else Time(int(state))

    @property
    def origin(self) -> Time:
        """The instant window ends are aligned to (default: the context's zero time)."""
        if self._origin is not None:
            return self._origin
        return self.parent.context().zeroTime

    def rdd_for(self, event: Event, parent_rdd: RDD[Any] | None) -> RDD[Any] | None:
        """The latest complete window not emitted yet, if any and non-empty.

        An event at the instant the last window was emitted at gets it again (`again`), the
        same RDD: every reader of an instant reads its one window.
        """
        self.united, self.again = (), False
        last_end = event.time.floor(self.slide_duration, self.origin)
        before = [item for item in self.parent.generated_up_to(event.time) if item.time < last_end]
        if not before:
            return None
        latest = before[-1].time
        end = latest.floor(self.slide_duration, self.origin) + self.slide_duration
        if self._last_emitted_end is not None and end <= self._last_emitted_end:
            emitted = self._emitted
            if emitted is None or emitted.time != event.time or end != self._last_emitted_end:
                return None
            self.again, self.united = True, emitted.window
            return emitted.rdd
        start = end - self.windowDuration
        window = [item for item in before if start <= item.time < end]
        if not window:
            return None
        self._last_emitted_end = end
        self.united = window
        rdd = _union(self.parent, window)
        self._emitted = _Emitted(event.time, window, rdd)
        return rdd

    def reaches(self, event: Event) -> list[Reach]:
        """Those of the parent RDDs of the window emitted for `event`, if one was."""
        return _reaches(self.united)

    def retention(self) -> Retention:
        """The parent RDDs within one window and one slide of the latest event."""
        return Retention(duration=self.windowDuration + self.slide_duration)

    def describe(self) -> str:
        """`TimeWindowDependency(window, slide)`."""
        return (
            f"TimeWindowDependency({self.windowDuration.milliseconds} ms, "
            f"{self.slide_duration.milliseconds} ms)"
        )
