"""The output stream: passes its parent's RDD on and runs a function on it as a job."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark import RDD

from reactive_spark.dependencies import EventDependency
from reactive_spark.dstream.base import DStream
from reactive_spark.events import Event

__all__ = ["ForEachDStream"]


class ForEachDStream(DStream[Any]):
    """An output operation: its job runs `function((rdd,), event)`."""

    def __init__(
        self,
        parent: DStream[Any],
        function: Callable[[tuple[RDD[Any], ...], Any], Any],
        operation: str,
        user: object = None,
    ) -> None:
        super().__init__(parent.context(), [EventDependency(parent)], operation, user)
        self.function = function
        self.isOutput = True
        self._ssc._graph.addOutput(self)

    def _compute(self, event: Event) -> RDD[Any] | None:
        return self.dependencies[0].compute(event)

    def outputAction(self, event: Event, rdd: RDD[Any]) -> Callable[[], None]:
        """The job body for `event`."""
        return lambda: self.function((rdd,), event)
