"""Streams computed from their parents' RDDs by a function: every ordinary transformation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pyspark import RDD

from reactive_spark.dependencies import Dependency
from reactive_spark.dstream.base import DStream, RDDFunction
from reactive_spark.events import Event

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext

__all__ = ["TransformedDStream"]


class TransformedDStream(DStream[Any]):
    """`compute(parent_rdds, event)` over the parents' RDDs for an event.

    With one parent, no parent RDD means no RDD. With several, a parent without an RDD for the
    event contributes an empty RDD, and no parent RDD at all means no RDD.
    """

    def __init__(
        self,
        ssc: StreamingContext,
        dependencies: Sequence[Dependency],
        compute: RDDFunction,
        operation: str,
        func: object = None,
    ) -> None:
        super().__init__(ssc, dependencies, operation, func)
        self._function = compute

    def _compute(self, event: Event) -> RDD[Any] | None:
        if len(self.dependencies) == 1:
            only = self.dependencies[0].compute(event)
            if only is None:
                return None
            complete: tuple[RDD[Any], ...] = (only,)
        else:
            rdds = [dependency.compute(event) for dependency in self.dependencies]
            if all(rdd is None for rdd in rdds):
                return None
            sc = self._ssc.sparkContext
            complete = tuple(sc.emptyRDD() if rdd is None else rdd for rdd in rdds)
        result = self._function(complete, event)
        if result is not None and not isinstance(result, RDD):
            raise TypeError(
                f"{self.name} must produce an RDD or None for each event, "
                f"got {type(result).__name__}",
            )
        return result
