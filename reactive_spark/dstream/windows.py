"""Windows over events and over time (DESIGN §7), and pyspark's legacy window family on top.

`tailWindow` counts parent RDDs, `timeWindow` bounds them in time. The legacy operations
(`window`, `reduceByWindow`, `countByWindow`, `countByValueAndWindow`, `reduceByKeyAndWindow`,
`groupByKeyAndWindow`) count parent batches: `window(w, s)` is `tailWindow(w / parentSlide,
s / parentSlide)`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pyspark import StorageLevel

from reactive_spark._callbacks import require_callable
from reactive_spark.dependencies import (
    Dependency,
    LegacyWindowDependency,
    TailDependency,
    TimeWindowDependency,
)
from reactive_spark.time import Duration, Time, to_duration, to_time

if TYPE_CHECKING:
    from reactive_spark.dstream.base import DStream

__all__ = ["WindowOperations"]

DurationLike = Duration | timedelta | float


class WindowOperations:
    """The window operations of DStream (a mixin)."""

    def tailWindow(
        self, windowLength: int, slideLength: int = 1, skipLength: int = 0
    ) -> DStream[Any]:
        """The union of the parent's last `windowLength` RDDs, every `slideLength` new ones.

        The latest `skipLength` parent RDDs are left out. Counting is in parent RDDs, so the
        window fires on the first event at or after the parent generated enough of them.

        Example:
            >>> # daily.tailWindow(7, 7).saveAsTextFiles("weekly").bind(weeklyTimer)
        """
        dependency = TailDependency(self._self(), windowLength, slideLength, skipLength)
        return self._windowed(dependency, "tailWindow")

    def timeWindow(
        self,
        windowDuration: DurationLike,
        slideDuration: DurationLike | None = None,
        origin: Time | datetime | None = None,
    ) -> DStream[Any]:
        """The union of the parent's RDDs in `[end - windowDuration, end)`, ends every slide.

        Window ends lie at `origin + k * slideDuration` (origin: the context's zero time). A
        window fires on the first event at or after its end; when events are sparser than the
        slide only the latest complete window is emitted.

        Example:
            >>> # readings.timeWindow(Hours(1), Minutes(15)).count().bind(trigger)
        """
        window = to_duration(windowDuration, "windowDuration")
        slide = window if slideDuration is None else to_duration(slideDuration, "slideDuration")
        start = None if origin is None else to_time(origin, "origin")
        dependency = TimeWindowDependency(self._self(), window, slide, start)
        return self._windowed(dependency, "timeWindow")

    def window(
        self, windowDuration: DurationLike, slideDuration: DurationLike | None = None
    ) -> DStream[Any]:
        """The legacy sliding window over parent batches (durations: multiples of the slide).

        Example:
            >>> # stream.window(Seconds(30), Seconds(10)).count()
        """
        parent = self._self()
        window = to_duration(windowDuration, "windowDuration")
        slide = window if slideDuration is None else to_duration(slideDuration, "slideDuration")
        estimate = parent.context().graph.slideDuration(parent)
        dependency = LegacyWindowDependency(parent, window, slide, estimate)
        return self._windowed(dependency, "window")

    def reduceByWindow(
        self,
        reduceFunc: Callable[[Any, Any], Any],
        invReduceFunc: Callable[[Any, Any], Any] | None,
        windowDuration: DurationLike,
        slideDuration: DurationLike,
    ) -> DStream[Any]:
        """One element per window: the reduction of its elements with `reduceFunc`.

        Example:
            >>> # numbers.reduceByWindow(operator.add, operator.sub, 30, 10)
        """
        require_callable(reduceFunc, "reduceFunc", "reduceByWindow")
        keyed = self._self().map(lambda x: (1, x))
        reduced = keyed.reduceByKeyAndWindow(
            reduceFunc, invReduceFunc, windowDuration, slideDuration, 1
        )
        return reduced.map(lambda kv: kv[1])

    def countByWindow(
        self, windowDuration: DurationLike, slideDuration: DurationLike
    ) -> DStream[int]:
        """One element per window: how many elements it holds.

        Example:
            >>> # events.countByWindow(60, 10)
        """
        return (
            self._self()
            .map(lambda x: 1)
            .reduceByWindow(operator.add, operator.sub, windowDuration, slideDuration)
        )

    def countByValueAndWindow(
        self,
        windowDuration: DurationLike,
        slideDuration: DurationLike,
        numPartitions: int | None = None,
    ) -> DStream[Any]:
        """`(value, count)` for the distinct values of each window.

        Example:
            >>> # words.countByValueAndWindow(60, 10)
        """
        keyed = self._self().map(lambda x: (x, 1))
        counted = keyed.reduceByKeyAndWindow(
            operator.add, operator.sub, windowDuration, slideDuration, numPartitions
        )
        return counted.filter(lambda kv: kv[1] > 0)

    def groupByKeyAndWindow(
        self,
        windowDuration: DurationLike,
        slideDuration: DurationLike,
        numPartitions: int | None = None,
    ) -> DStream[Any]:
        """The values of each key over each window, grouped.

        Example:
            >>> # pairs.groupByKeyAndWindow(60, 10).mapValues(list)
        """
        return self.window(windowDuration, slideDuration).groupByKey(numPartitions)

    def reduceByKeyAndWindow(
        self,
        func: Callable[[Any, Any], Any],
        invFunc: Callable[[Any, Any], Any] | None,
        windowDuration: DurationLike,
        slideDuration: DurationLike | None = None,
        numPartitions: int | None = None,
        filterFunc: Callable[[Any], bool] | None = None,
    ) -> DStream[Any]:
        """The values of each key over each window, reduced with `func`.

        Each batch is reduced once and cached; a window reduces the partial results of its
        batches. The result always equals the direct computation: keys that left the window
        are absent, not zero. `invFunc` is checked but not needed for that.

        Example:
            >>> # pairs.reduceByKeyAndWindow(operator.add, operator.sub, 60, 10)
        """
        require_callable(func, "func", "reduceByKeyAndWindow")
        if invFunc is not None:
            require_callable(invFunc, "invFunc", "reduceByKeyAndWindow")
        if filterFunc is not None:
            require_callable(filterFunc, "filterFunc", "reduceByKeyAndWindow")
        partial = self._self().reduceByKey(func, numPartitions)
        reduced = partial.window(windowDuration, slideDuration).reduceByKey(func, numPartitions)
        return reduced if filterFunc is None else reduced.filter(filterFunc)

    def _self(self) -> DStream[Any]:
        return self  # type: ignore[return-value]

    def _windowed(self, dependency: Dependency, operation: str) -> DStream[Any]:
        from reactive_spark.dstream.transformed import TransformedDStream

        parent = dependency.parent
        if parent._storageLevel is None:  # a window reads each parent RDD several times
            parent._storageLevel = StorageLevel.MEMORY_ONLY
        return TransformedDStream(
            parent.context(), [dependency], lambda rdds, event: rdds[0], operation
        )
