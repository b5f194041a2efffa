"""`aggregateExactlyOnce`: a keyed fold over direct log streams, committed with its offsets.

The stream's RDD for a batch is read when the batch is planned (the records, in merged order,
come to the driver) and folded onto the committed state; the batch's job then commits the new
values, the batch's offset ranges and the downstream position in one transaction
(`StateStore.commit`). Within a batch, jobs of streams that read the aggregate run after the
commit, and only if it succeeded, so nothing downstream sees values that were not committed.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyspark import RDD

from reactive_spark.dependencies import EventDependency
from reactive_spark.dstream.base import DStream, ForEachDStream, ParentRDDs
from reactive_spark.dstream.pair import register_builder
from reactive_spark.errors import InvalidArgumentError, InvalidCallbackError
from reactive_spark.events import Event
from reactive_spark.log.state import BatchIdentity, PreparedBatch, StateStore
from reactive_spark.log.stream import DirectLogInputDStream
from reactive_spark.offsets import OffsetRange

if TYPE_CHECKING:
    from collections.abc import Iterable

    from reactive_spark.planning import Reads
    from reactive_spark.time import Time

__all__ = ["PER_RECORD_OPERATIONS", "ExactlyOnceAggregateDStream"]

#: What may stand between the direct log streams and `aggregateExactlyOnce`: operations whose
#: RDD for a batch is a function of that batch's records alone, in their order.
PER_RECORD_OPERATIONS = frozenset(
    {
        "map",
        "filter",
        "flatMap",
        "mapValues",
        "flatMapValues",
        "mapPartitions",
        "mapPartitionsWithIndex",
        "union",
    }
)


@register_builder("aggregateExactlyOnce")
class ExactlyOnceAggregateDStream(ForEachDStream):
    """`pairs.aggregateExactlyOnce(store, zeroValue, fold)` (see `StateStore`).

    An output operation: every batch it is bound to commits, whether or not anything reads
    what it returns, a stream of the `(key, value)` pairs each batch committed.
    """

    commitsFirst = True

    def __init__(
        self,
        parent: DStream[Any],
        store: StateStore,
        zeroValue: Any,
        fold: Callable[[Any, Any], Any],
    ) -> None:
        if not isinstance(store, StateStore):
            raise InvalidArgumentError(f"store must be a StateStore, got {store!r}")
        _require_fold(fold)
        self.inputs = log_inputs(parent)
        super().__init__(parent, self._commit, "aggregateExactlyOnce", fold)
        for stream in self.inputs:  # a batch that fails before its commit is read again
            stream.follow_commits(store.committedOffsets, self.reactsToSource)
        self.store = store
        self._zero = zeroValue
        self._fold = fold
        self._prepared: tuple[int, PreparedBatch] | None = None

    def compute_rdd(self, event: Event, parents: ParentRDDs, reads: Reads) -> RDD[Any] | None:
        """Fold the batch's records onto the stored state: the pairs its commit will write."""
        [records] = parents
        if records is None:
            return None
        ranges = [offsets for stream in self.inputs for offsets in read_ranges(stream, reads)]
        identity = BatchIdentity.of(event)
        prepared = self.store.prepare(identity, ranges, _collected(records), self._zero, self._fold)
        self._prepared = (id(event), prepared)
        return self._ssc.sparkContext.parallelize(prepared.pairs)

    def committedBatches(self, times: list[Time]) -> list[Time]:
        """Which of `times` the store holds a commit of (a backfill would fold them again)."""
        return self.store.committedAt(times)

    def _commit(self, rdds: tuple[RDD[Any], ...], event: Event) -> None:
        if self._prepared is None or self._prepared[0] != id(event):
            return  # the batch was not planned by this stream (no records for it)
        self.store.commit(self._prepared[1])


def _collected(records: RDD[Any]) -> Iterable[tuple[Any, Any]]:
    for record in records.collect():  # in partition order: the merged order
        if not isinstance(record, tuple) or len(record) != 2:
            raise InvalidArgumentError(
                f"aggregateExactlyOnce needs (key, value) pairs, got {record!r}"
            )
        yield record


def _require_fold(fold: object) -> None:
    if not callable(fold):
        raise InvalidCallbackError(f"fold must be callable, got {fold!r}")
    try:
        inspect.signature(fold).bind(None, None)
    except TypeError:
        raise InvalidCallbackError(
            f"fold must take (state, value), got {fold!r}{inspect.signature(fold)}"
        ) from None
    except ValueError:
        return  # a builtin without a signature: trust it


def log_inputs(stream: DStream[Any]) -> list[DirectLogInputDStream]:
    """The direct log streams `stream` reads through per-record operations, in merged order.

    Raises `InvalidArgumentError` naming the first stream in between that is not per-record
    (a window, a shuffle, `transform`, ...) or an input that is not a direct log stream, and
    if two inputs read the same topic partition.
    """
    found: list[DirectLogInputDStream] = []

    waiting = [stream]  # depth first, parents left to right: the merged order
    while waiting:
        node = waiting.pop()
        if isinstance(node, DirectLogInputDStream):
            if node not in found:
                found.append(node)
            continue
        if not node.dependencies:
            raise InvalidArgumentError(
                f"aggregateExactlyOnce reads direct log streams only; {node.name} is not one"
            )
        if node.operation not in PER_RECORD_OPERATIONS or not all(
            type(dependency) is EventDependency for dependency in node.dependencies
        ):
            raise InvalidArgumentError(
                f"aggregateExactlyOnce reads direct log streams through per-record operations "
                f"({', '.join(sorted(PER_RECORD_OPERATIONS))}); {node.name} is not one"
            )
        waiting.extend(reversed(node.parents))
    owners: dict[tuple[str, int], str] = {}
    for input_stream in found:
        for topic, partitions in input_stream.partitions.items():
            for partition in partitions:
                other = owners.setdefault((topic, partition), input_stream.name)
                if other != input_stream.name:
                    raise InvalidArgumentError(
                        f"{other} and {input_stream.name} both read topic {topic!r} partition "
                        f"{partition}: aggregateExactlyOnce cannot tell their offsets apart"
                    )
    return found


def read_ranges(stream: DirectLogInputDStream, reads: Reads) -> list[OffsetRange]:
    """The offset ranges `stream` read for the batch (it computed before, in the same plan)."""
    read = reads.read_of(stream)
    if read is None:
        return []
    return [OffsetRange.fromList(item) for item in read["offsetRanges"]]
