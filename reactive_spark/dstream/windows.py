"""Windows over events and over time (docs/concepts.md), and pyspark's legacy window family on top.

`tailWindow` counts parent RDDs, `timeWindow` bounds them in time. The legacy operations
(`window`, `reduceByWindow`, `countByWindow`, `countByValueAndWindow`, `reduceByKeyAndWindow`,
`groupByKeyAndWindow`) count parent batches: `window(w, s)` is `tailWindow(w / parentSlide,
s / parentSlide)` counted in the parent's batches, RDD or not, so it slides with time as
PySpark's does (`LegacyWindowDependency`). Each makes one stream named after it
(`countByValueAndWindow[3]`), reading its windows; the reducing ones read those of a stream
that reduces each batch once, named after what it does (`countByValue[2]`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pyspark import RDD

from reactive_spark._callbacks import require_callable
from reactive_spark.dependencies import (
    Dependency,
    LegacyWindowDependency,
    TailDependency,
    TimeWindowDependency,
)
from reactive_spark.dstream.transformations import count_values, reduce_all
from reactive_spark.time import Duration, Time, to_duration, to_time

if TYPE_CHECKING:
    from reactive_spark.dstream.base import DStream

__all__ = ["WindowOperations"]

DurationLike = Duration | timedelta | float


class WindowOperations:
    """The window operations of DStream (a mixin; DStream provides `_windowed`)."""

    if TYPE_CHECKING:

        def _windowed(
            self,
            dependency: Dependency,
            operation: str,
            over: Callable[[RDD[Any]], RDD[Any]] | None = None,
            user: object = None,
        ) -> DStream[Any]: ...

        def _transform_rdd(
            self, func: Callable[[RDD[Any]], RDD[Any]], operation: str, user: object = None
        ) -> DStream[Any]: ...

        def _partitions(self, numPartitions: int | None) -> int: ...

    def tailWindow(
        self, windowLength: int, slideLength: int = 1, skipLength: int = 0
    ) -> DStream[Any]:
        """The union of the parent's last `windowLength` RDDs, every `slideLength` new ones.

        The latest `skipLength` parent RDDs are left out. Counting is in parent RDDs, so the
        window fires on the first event at or after the parent generated enough of them.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda s: s.tailWindow(3, 2),
            ...     [[1], [2], [3], [4]],
            ...     sort=True,
            ... ))
            [[1, 2], [2, 3, 4]]
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

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda s: s.timeWindow(2),
            ...     [[1], [2], [3], [4]],
            ...     sort=True,
            ... ))
            [[1], [2, 3]]
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

        Without `slideDuration` it slides by the parent's slide: a window every parent batch.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(sc, lambda s: s.window(2, 1), [[1], [2], [3]], sort=True))
            [[1], [1, 2], [2, 3]]
        """
        return self._legacy_window(self._self(), windowDuration, slideDuration, "window")

    def _legacy_window(
        self,
        parent: DStream[Any],
        windowDuration: DurationLike,
        slideDuration: DurationLike | None,
        operation: str,
        over: Callable[[RDD[Any]], RDD[Any]] | None = None,
        user: object = None,
    ) -> DStream[Any]:
        """`parent.window(windowDuration, slideDuration)` named `operation`, `over` each window.

        `parent` is this stream, or one made from it that reduces each batch once.
        """
        window, slide, estimate = self._legacy_durations(windowDuration, slideDuration, parent)
        dependency = LegacyWindowDependency(parent, window, slide, estimate)
        return self._windowed(dependency, operation, over, user)

    def _legacy_durations(
        self,
        windowDuration: DurationLike,
        slideDuration: DurationLike | None,
        parent: DStream[Any] | None = None,
    ) -> tuple[Duration, Duration | None, Duration | None]:
        """The window, the slide (None: the parent's) and the parent's slide where it is known.

        Both are checked against the parent's slide when it is known. The parent is this stream
        unless given. Durations are checked before callbacks, as PySpark does.
        """
        parent = self._self() if parent is None else parent
        window = to_duration(windowDuration, "windowDuration")
        slide = None if slideDuration is None else to_duration(slideDuration, "slideDuration")
        estimate = parent.context().graph.slide_duration(parent)
        if estimate is not None:
            LegacyWindowDependency.check(window, estimate if slide is None else slide, estimate)
        return window, slide, estimate

    def reduceByWindow(
        self,
        reduceFunc: Callable[[Any, Any], Any],
        invReduceFunc: Callable[[Any, Any], Any] | None,
        windowDuration: DurationLike,
        slideDuration: DurationLike,
    ) -> DStream[Any]:
        """One element per window: the reduction of its elements with `reduceFunc`.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> import operator
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda s: s.reduceByWindow(operator.add, operator.sub, 2, 1),
            ...     [[1], [2], [3]],
            ... ))
            [[1], [3], [5]]
        """
        self._legacy_durations(windowDuration, slideDuration)
        require_callable(reduceFunc, "reduceFunc", "reduceByWindow")
        if invReduceFunc is not None:
            require_callable(invReduceFunc, "invReduceFunc", "reduceByWindow")
        each_batch = self._self().reduce(reduceFunc)
        return self._legacy_window(
            each_batch,
            windowDuration,
            slideDuration,
            "reduceByWindow",
            lambda rdd: reduce_all(rdd, reduceFunc),
            reduceFunc,
        )

    def countByWindow(
        self, windowDuration: DurationLike, slideDuration: DurationLike
    ) -> DStream[int]:
        """One element per window: how many elements it holds.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(sc, lambda s: s.countByWindow(2, 1), [[1], [2, 2], [3]]))
            [[1], [3], [3]]
        """
        self._legacy_durations(windowDuration, slideDuration)
        each_batch = self._self().count()
        # a window without elements has no count, as a key that left a window has no value
        return self._legacy_window(
            each_batch,
            windowDuration,
            slideDuration,
            "countByWindow",
            lambda rdd: reduce_all(rdd.filter(lambda n: n > 0), operator.add),
        )

    def countByValueAndWindow(
        self,
        windowDuration: DurationLike,
        slideDuration: DurationLike,
        numPartitions: int | None = None,
    ) -> DStream[Any]:
        """`(value, count)` for the distinct values of each window.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda s: s.countByValueAndWindow(2, 1),
            ...     [["a"], ["a"], ["b"]],
            ...     sort=True,
            ... ))
            [[('a', 1)], [('a', 2)], [('a', 1), ('b', 1)]]
        """
        self._legacy_durations(windowDuration, slideDuration)
        partitions = self._partitions(numPartitions)
        each_batch = self._transform_rdd(lambda rdd: count_values(rdd, partitions), "countByValue")
        return self._legacy_window(
            each_batch,
            windowDuration,
            slideDuration,
            "countByValueAndWindow",
            lambda rdd: rdd.reduceByKey(operator.add, partitions),
        )

    def groupByKeyAndWindow(
        self,
        windowDuration: DurationLike,
        slideDuration: DurationLike,
        numPartitions: int | None = None,
    ) -> DStream[Any]:
        """The values of each key over each window, grouped.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda s: s.groupByKeyAndWindow(2, 1).mapValues(sorted),
            ...     [[("k", 1)], [("k", 2)], [("k", 3)]],
            ... ))
            [[('k', [1])], [('k', [1, 2])], [('k', [2, 3])]]
        """
        self._legacy_durations(windowDuration, slideDuration)
        partitions = self._partitions(numPartitions)
        return self._legacy_window(
            self._self(),
            windowDuration,
            slideDuration,
            "groupByKeyAndWindow",
            lambda rdd: rdd.groupByKey(partitions),
        )

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
        are absent, not zero. `invFunc` is checked but not needed for that. `filterFunc` keeps
        the pairs it accepts, and, as in PySpark, only with an `invFunc` (without one, PySpark
        ignores it).

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> import operator
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda s: s.reduceByKeyAndWindow(operator.add, operator.sub, 2, 1),
            ...     [[("k", 1)], [("k", 2)], [("k", 3)]],
            ... ))
            [[('k', 1)], [('k', 3)], [('k', 5)]]
        """
        self._legacy_durations(windowDuration, slideDuration)
        require_callable(func, "func", "reduceByKeyAndWindow")
        if invFunc is not None:
            require_callable(invFunc, "invFunc", "reduceByKeyAndWindow")
        if filterFunc is not None:
            require_callable(filterFunc, "filterFunc", "reduceByKeyAndWindow")
        partitions = self._partitions(numPartitions)
        each_batch = self._self().reduceByKey(func, partitions)

        keep = None if invFunc is None else filterFunc

        def reduce_window(rdd: RDD[Any]) -> RDD[Any]:
            reduced = rdd.reduceByKey(func, partitions)
            return reduced if keep is None else reduced.filter(keep)

        return self._legacy_window(
            each_batch, windowDuration, slideDuration, "reduceByKeyAndWindow", reduce_window, func
        )

    def _self(self) -> DStream[Any]:
        return self  # type: ignore[return-value]
