"""`updateStateByKey`: a per-key state carried from event to event."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark import RDD, StorageLevel

from reactive_spark.dependencies import EventDependency, Retention
from reactive_spark.dstream.base import DStream
from reactive_spark.events import Event

__all__ = ["StateDStream"]

#: Every this many events the state's lineage is cut by a checkpoint, as Spark does.
CHECKPOINT_EVERY = 10


class StateDStream(DStream[Any]):
    """`state(k) = updateFunc(new values of k, previous state of k)`; None drops the key.

    Every key of the previous state is updated on each event, with no new values when the
    parent has none (Spark's semantics). The state's lineage is checkpointed every
    `CHECKPOINT_EVERY` events: reliably when a checkpoint directory is set, locally otherwise.
    """

    def __init__(
        self,
        parent: DStream[Any],
        updateFunc: Callable[[list[Any], Any], Any],
        numPartitions: int,
        initialRDD: RDD[Any] | None,
    ) -> None:
        super().__init__(
            parent.context(), [EventDependency(parent)], "updateStateByKey", updateFunc
        )
        self._update = updateFunc
        self._numPartitions = numPartitions
        self._initial = initialRDD
        self._storageLevel = StorageLevel.MEMORY_ONLY
        self._requireRetention(Retention(count=1))
        self._sinceLineageCut = 0

    def _compute(self, event: Event) -> RDD[Any] | None:
        sc = self._ssc.sparkContext
        values = self.dependencies[0].compute(event)
        previous = self._generated[-1].rdd if self._generated else self._initial
        if values is None and previous is None:
            return None
        if values is None:
            values = sc.emptyRDD()
        update = self._update
        partitions = self._numPartitions
        if previous is None:
            grouped = values.groupByKey(partitions).mapValues(lambda vs: (list(vs), None))
        else:
            grouped = previous.cogroup(values.partitionBy(partitions), partitions).mapValues(
                lambda old_new: (
                    list(old_new[1]),
                    next(iter(old_new[0])) if len(old_new[0]) else None,
                )
            )
        state = grouped.mapValues(lambda vs_s: update(vs_s[0], vs_s[1])).filter(
            lambda kv: kv[1] is not None
        )
        self._sinceLineageCut += 1
        if self._sinceLineageCut >= CHECKPOINT_EVERY:
            self._sinceLineageCut = 0
            state.persist(StorageLevel.MEMORY_ONLY)
            if sc.getCheckpointDir() is not None:
                state.checkpoint()
            else:
                state.localCheckpoint()
        return state
