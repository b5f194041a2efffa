"""`updateStateByKey`'s stream: a per-key state carried from event to event, saved for restarts."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyspark import RDD, StorageLevel

from reactive_spark.dependencies import EventDependency, Retention
from reactive_spark.dstream.base import DStream, ParentRDDs
from reactive_spark.dstream.files import remove_interrupted_writes, save_atomically
from reactive_spark.dstream.pair import register_builder
from reactive_spark.events import Event

if TYPE_CHECKING:
    from reactive_spark.planning import Reads

__all__ = ["CHECKPOINT_EVERY", "StateDStream"]


#: Every this many events the state's lineage is cut by a checkpoint, as Spark does.
CHECKPOINT_EVERY = 10
#: Where, under the context's checkpoint directory, the state is saved.
STATE_SAVES = "state"


@register_builder("updateStateByKey")
class StateDStream(DStream[Any]):
    """`state(k) = updateFunc(new values of k, previous state of k)`; None drops the key.

    Every key of the previous state is updated on each event, with no new values when the
    parent has none (Spark's semantics). The state's lineage is cut every `CHECKPOINT_EVERY`
    events. With a context checkpoint directory the state is then saved under
    `<checkpoint>/state/` and the save recorded with the batch, so a restart loads it and
    re-applies only the batches since; without one it is checkpointed locally (in memory).
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
        self._num_partitions = numPartitions
        self._initial = initialRDD
        self._storage_level = StorageLevel.MEMORY_ONLY
        self.require_retention(Retention(count=1))
        self._since_lineage_cut = 0

    def recovery_retention(self) -> Retention:
        """Enough batches to reach back to the last saved state."""
        return self._retention.merge(Retention(count=CHECKPOINT_EVERY))

    def _saves(self) -> str | None:
        directory = self._ssc.checkpointDirectory
        return None if directory is None else os.path.join(os.path.abspath(directory), STATE_SAVES)

    def remove_interrupted_writes(self) -> list[str]:
        """Delete a state save that a crash interrupted."""
        saves = self._saves()
        if saves is None:
            return []
        return remove_interrupted_writes(self._ssc.sparkContext, os.path.join(saves, str(self._id)))

    def compute_rdd(self, event: Event, parents: ParentRDDs, reads: Reads) -> RDD[Any] | None:
        """The previous state updated with the parent's new values (none if it has no RDD)."""
        sc = self._ssc.sparkContext
        [values] = parents
        replayed = reads.replayed_read(self)
        if replayed is not None:  # re-planned after a restart: the state as it was saved
            self._since_lineage_cut = 0
            reads.record(self, replayed)
            return sc.pickleFile(replayed["state"]).persist(StorageLevel.MEMORY_ONLY)
        previous = self._generated[-1][1] if self._generated else self._initial
        if values is None and previous is None:
            return None
        if values is None:
            values = sc.emptyRDD()
        update = self._update
        partitions = self._num_partitions
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
        self._since_lineage_cut += 1
        if self._since_lineage_cut < CHECKPOINT_EVERY:
            return state
        self._since_lineage_cut = 0
        state.persist(StorageLevel.MEMORY_ONLY)
        saves = self._saves()
        if saves is None:
            if sc.getCheckpointDir() is not None:
                state.checkpoint()
            else:
                state.localCheckpoint()
            return state
        path = os.path.join(saves, f"{self._id}-{event.instanceId}")
        save_atomically(state, path, lambda rdd, target: rdd.saveAsPickleFile(target))
        reads.record(self, {"state": path})
        _drop_older_saves(os.path.dirname(path), f"{self._id}-", keep=2)
        return sc.pickleFile(path).persist(StorageLevel.MEMORY_ONLY)


def _drop_older_saves(directory: str, prefix: str, keep: int) -> None:
    """Delete all but the `keep` newest saves (the newest may not be logged yet)."""
    saves = sorted(
        (int(name[len(prefix) :]), name)
        for name in os.listdir(directory)
        if name.startswith(prefix) and name[len(prefix) :].isdigit()
    )
    for _, name in saves[:-keep]:
        shutil.rmtree(os.path.join(directory, name), ignore_errors=True)
