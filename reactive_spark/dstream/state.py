"""`updateStateByKey`'s stream: a per-key state moved by its parent's RDDs, saved for restarts."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyspark import RDD, StorageLevel

from reactive_spark.dependencies import EventDependency, Retention
from reactive_spark.dstream.base import DStream, ParentRDDs
from reactive_spark.dstream.files import remove_interrupted_writes, save_atomically
from reactive_spark.dstream.pair import register_builder
from reactive_spark.dstream.reach import Reach, merge_reach
from reactive_spark.events import Event
from reactive_spark.time import Time

if TYPE_CHECKING:
    from reactive_spark.planning import Reads

__all__ = ["CHECKPOINT_EVERY", "StateDStream"]


#: After this many events that reached it, a changed state's lineage is cut, as Spark's is.
CHECKPOINT_EVERY = 10
#: Where, under the context's checkpoint directory, the state is saved.
STATE_SAVES = "state"


@register_builder("updateStateByKey")
class StateDStream(DStream[Any]):
    """`state(k) = updateFunc(new values of k, previous state of k)`; None drops the key.

    The state moves with its parent, as PySpark's does at its parent's slide: for an event the
    parent has an RDD for, every key of the previous state is updated (with no new values when
    the RDD has none for it) and the new state is this stream's RDD. For any other event the
    last state is the RDD again, unchanged, once there is one (PySpark's `PythonStateDStream`):
    at the parent's slide that its parent computed no RDD for (a `transform` that returned
    None), and at an event of a source the parent does not compute for (a weekly output of a
    state moved by daily batches); between the slides of a window up its parent's line, nothing
    is updated and it has no RDD. Its parent's new data may come only at events nothing reads
    the state at: the state computes at those events too (`DStreamGraph._fed_and_reaching`).

    Once the state changed and `CHECKPOINT_EVERY` events reached the stream since its lineage
    was last cut, it is cut again, as Spark does. With a context checkpoint directory the state
    is then saved under `<checkpoint>/state/` and the save recorded with the batch, also for an
    event without an update, so a restart loads it and re-applies the batches since, which the
    log keeps (the state reaches back to its last save: `reach_of`); the checkpoint deletes a
    save once no batch it keeps reads it. A batch re-planned or re-run after a restart saves
    nothing: it loads the save its record holds, if any. Its count cannot say where the first
    run saved: re-planned from before a save whose batch the log no longer keeps (another
    source's batches reach back further), the state counts from where they start, not from that
    save. Without a checkpoint directory the state is checkpointed locally (in memory) with its
    next update.
    Saved at an event that gives its instant's state again (a weekly event after the daily
    one), the state goes on from the save with its next update, but that event still gives the
    RDD of its instant: one state per instant, live and re-planned.
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
        self.repeats = True  # its last state again, at a later event of its instant too
        self.carries_state = True
        self._update = updateFunc
        self._num_partitions = numPartitions
        self._storage_level = StorageLevel.MEMORY_ONLY
        self.require_retention(Retention(count=1))
        #: The state after the latest event, which may have been saved since it was generated.
        self._state = initialRDD
        self._events_since_cut = 0
        self._changed_since_cut = False
        #: Whether the state was updated once: before, there is no last state to give again.
        self._updated_once = False
        #: The instant and the parent RDD of its latest update: a parent giving that RDD again
        #: at that instant (a window read by two sources' events) does not update it twice.
        self._update_of: tuple[Time, RDD[Any]] | None = None
        #: The instant of the latest event it gave a state for, and that RDD: a later event of
        #: the instant that does not update the state gives that RDD again, even where the
        #: state was saved and loaded back as another RDD meanwhile (`_given_again`).
        self._given: tuple[Time, RDD[Any]] | None = None
        #: With `track_history`: the sources whose events reach the stream, and the batches a
        #: restart plans again to rebuild the state (from its last save or load on).
        self._sources: list[str] = []
        self._state_reach: Reach = {}

    @property
    def reaches_back(self) -> bool:
        """Always: the state comes from every update since it was last saved."""
        return True

    def track_history(self) -> None:
        """Also follow the batches the state reaches back to."""
        super().track_history()
        self._sources = sorted(source.name for source in self._ssc.graph.reaching(self))

    def reach_of(self, event: Event) -> Reach:
        """The batches since the state's last save (or load), and what their updates read."""
        return dict(self._state_reach)

    def _reach_from(self, event: Event) -> None:
        """The state comes from `event`'s batch and every later one of the sources it reacts to."""
        if self._reaches is not None:
            first = event.instanceId or 0
            self._state_reach = dict.fromkeys(self._sources, first)
            self._state_reach.setdefault(event.source.name, first)

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
        """The previous state updated with the parent's RDD (see the class for other events)."""
        [values] = parents
        last = self._update_of
        if values is not None and last is not None and last[1] is values and last[0] == event.time:
            # the state of this instant, which that RDD made: as given at the instant, else as
            # updated (its first event failed after updating it, in saving it)
            given = self._given_again(event)
            return self._state if given is None else given
        replayed = reads.replayed_read(self)
        if replayed is not None:  # re-planned after a restart: the state as it was saved
            updated = self._reload(event, replayed, reads)
            if updated and values is not None:  # as live: a reader of the instant reads it
                self._update_of = (event.time, values)
        else:
            self._events_since_cut += 1
            updated = values is not None
            if values is not None:
                self._state = self._updated(values)
                self._update_of = (event.time, values)
                self._changed_since_cut = self._updated_once = True
                if self._reaches is not None:
                    self._reach_update(event)
            if (
                self._changed_since_cut
                and self._events_since_cut >= CHECKPOINT_EVERY
                and reads.replayed is None  # re-planned: saved where its record says, only
            ):
                self._cut_lineage(event, reads, updated=updated)
        if not (updated or self._again(event)):
            return None
        if not updated:
            again = self._given_again(event)
            if again is not None:
                return again
        state = self._state
        assert state is not None  # updated now or before
        self._given = (event.time, state)
        return state

    def _given_again(self, event: Event) -> RDD[Any] | None:
        """The state given at `event`'s instant already, if it was: its one RDD there.

        The stream memory remembers an instant's RDD once however many events give it
        (`repeats`), and outputs bound to several of them run once, by the RDD's identity. A
        lineage cut at a later event of the instant saves the state and goes on from the save,
        a new RDD (so does a restart re-planning that event, from the save): given there, it
        was a second state of the instant, which the windows over it held twice.
        """
        given = self._given
        return given[1] if given is not None and given[0] == event.time else None

    def _again(self, event: Event) -> bool:
        """Whether the last state is the RDD again: not between its parent's slides.

        So where its parent gave none at one of its slides, and at the events of a source the
        parent does not compute for (a weekly output of a state its daily batches move).
        """
        return self._updated_once and not self.between_slides(event)

    def _reach_update(self, event: Event) -> None:
        """The state reaches back to what its update for `event` read, too."""
        if not self._state_reach:  # the first update of an empty state: every batch from here
            self._reach_from(event)
        for other in self.dependencies[0].reaches(event):
            merge_reach(self._state_reach, other)

    def _updated(self, values: RDD[Any]) -> RDD[Any]:
        """The state after the parent's `values`: every key of the previous state updated."""
        update = self._update
        partitions = self._num_partitions
        previous = self._state
        if previous is None:
            grouped = values.groupByKey(partitions).mapValues(lambda vs: (list(vs), None))
        else:
            grouped = previous.cogroup(values.partitionBy(partitions), partitions).mapValues(
                lambda old_new: (
                    list(old_new[1]),
                    next(iter(old_new[0])) if len(old_new[0]) else None,
                )
            )
        return grouped.mapValues(lambda vs_s: update(vs_s[0], vs_s[1])).filter(
            lambda kv: kv[1] is not None
        )

    def _cut_lineage(self, event: Event, reads: Reads, updated: bool) -> None:
        """Save the state and go on from the save, else checkpoint it if it was just `updated`.

        Spark checkpoints an RDD only if asked before its first job: without a checkpoint
        directory, a state generated before this event waits for its next update.
        """
        state, saves = self._state, self._saves()
        assert state is not None  # it changed since the last cut
        if saves is not None:
            self._state = self._save_state(state, saves, event, reads, updated)
        elif updated:
            _checkpoint_locally(state)
        else:
            return
        self._events_since_cut, self._changed_since_cut = 0, False

    def _save_state(
        self, state: RDD[Any], saves: str, event: Event, reads: Reads, updated: bool
    ) -> RDD[Any]:
        """Save `state` under `saves` and record the save with the batch; the saved state."""
        path = os.path.join(saves, f"{self._id}-{event.instanceId}")
        save_atomically(state, path, lambda rdd, target: rdd.saveAsPickleFile(target))
        reads.record(self, {"state": path, "updated": updated})
        self._reach_from(event)
        return self._ssc.sparkContext.pickleFile(path)

    def _reload(self, event: Event, replayed: dict[str, Any], reads: Reads) -> bool:
        """Load the state a re-planned batch saved; whether the batch updated it.

        A save logged before saves said whether they updated was made by an update.
        """
        self._events_since_cut, self._changed_since_cut = 0, False
        self._updated_once = True  # a state is saved once it changed
        reads.record(self, replayed)
        self._reach_from(event)
        self._state = self._ssc.sparkContext.pickleFile(replayed["state"])
        return bool(replayed.get("updated", True))


def _checkpoint_locally(state: RDD[Any]) -> None:
    """Checkpoint a state no job computed yet: in Spark's checkpoint directory, else in memory."""
    state.persist(StorageLevel.MEMORY_ONLY)
    if state.context.getCheckpointDir() is not None:
        state.checkpoint()
    else:
        state.localCheckpoint()
