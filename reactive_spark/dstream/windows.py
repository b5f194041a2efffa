"""Windows over events and over time: `tailWindow`, `timeWindow` (DESIGN §7)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from reactive_spark.dependencies import TailDependency, TimeWindowDependency
from reactive_spark.time import Duration, Time, to_duration, to_time

if TYPE_CHECKING:
    from reactive_spark.dstream.base import DStream

__all__ = ["WindowOperations"]


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
        dependency = TailDependency(self, windowLength, slideLength, skipLength)  # type: ignore[arg-type]
        return self._windowed(dependency, "tailWindow")

    def timeWindow(
        self,
        windowDuration: Duration | timedelta | float,
        slideDuration: Duration | timedelta | float | None = None,
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
        dependency = TimeWindowDependency(self, window, slide, start)  # type: ignore[arg-type]
        return self._windowed(dependency, "timeWindow")

    def _windowed(self, dependency: Any, operation: str) -> DStream[Any]:
        from reactive_spark.dstream.transformed import TransformedDStream

        parent: DStream[Any] = dependency.parent
        return TransformedDStream(
            parent.context(), [dependency], lambda time, rdds, event: rdds[0], operation
        )
