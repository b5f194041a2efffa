"""Offset ranges: exactly which records of a log partition a batch reads (docs/logs.md).

Also the RDDs that read them (`LogRDD`) and their unions; `reactive_spark.log` re-exports them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pyspark import RDD

from reactive_spark._validation import require_int
from reactive_spark.errors import InvalidArgumentError

__all__ = ["HasOffsetRanges", "LogRDD", "OffsetRange", "union_log_rdds"]


@dataclass(frozen=True)
class OffsetRange:
    """The records `[fromOffset, untilOffset)` of one partition of a topic.

    Examples:
        >>> OffsetRange("clicks", 0, 100, 250).count()
        150
    """

    topic: str
    partition: int
    fromOffset: int
    untilOffset: int

    def __post_init__(self) -> None:
        if not isinstance(self.topic, str) or not self.topic:
            raise InvalidArgumentError(f"topic must be a non-empty str, got {self.topic!r}")
        require_int(self.partition, "partition", minimum=0)
        require_int(self.fromOffset, "fromOffset", minimum=0)
        require_int(self.untilOffset, "untilOffset", minimum=0)
        if self.untilOffset < self.fromOffset:
            raise InvalidArgumentError(
                f"untilOffset must not be below fromOffset {self.fromOffset}, "
                f"got {self.untilOffset}",
            )

    def count(self) -> int:
        """How many records the range holds."""
        return self.untilOffset - self.fromOffset

    def toList(self) -> list[str | int]:
        """`[topic, partition, fromOffset, untilOffset]`, as checkpoints store it."""
        return [self.topic, self.partition, self.fromOffset, self.untilOffset]

    @classmethod
    def fromList(cls, fields: list[str | int]) -> OffsetRange:
        """The range `toList` described."""
        topic, partition, first, until = fields
        return cls(str(topic), int(partition), int(first), int(until))


@runtime_checkable
class HasOffsetRanges(Protocol):
    """An RDD that knows the offset ranges it reads, one per partition, in partition order.

    Examples:
        >>> import tempfile
        >>> from reactive_spark.log import FileLog, createRDD
        >>> log = FileLog(tempfile.mkdtemp())
        >>> log.create_topic("clicks")
        >>> rdd = createRDD(sc, log, [OffsetRange("clicks", 0, 0, 0)])
        >>> isinstance(rdd, HasOffsetRanges), isinstance(sc.parallelize([1]), HasOffsetRanges)
        (True, False)
    """

    def offsetRanges(self) -> list[OffsetRange]:
        """The ranges this RDD reads."""


class LogRDD(RDD[Any]):
    """An RDD reading offset ranges of a log, one partition per range (`HasOffsetRanges`).

    Examples:
        >>> import tempfile
        >>> from reactive_spark.log import FileLog, createRDD
        >>> log = FileLog(tempfile.mkdtemp())
        >>> log.create_topic("clicks")
        >>> _ = [log.append("clicks", n) for n in range(3)]
        >>> rdd = createRDD(sc, log, [OffsetRange("clicks", 0, 1, 3)])
        >>> rdd.offsetRanges()
        [OffsetRange(topic='clicks', partition=0, fromOffset=1, untilOffset=3)]
    """

    def __init__(self, rdd: RDD[Any], offsetRanges: list[OffsetRange]) -> None:
        # an RDD subclass wraps another RDD's JVM RDD, as PySpark's own subclasses do
        super().__init__(rdd._jrdd, rdd.ctx, rdd._jrdd_deserializer)  # noqa: SLF001
        self._offset_ranges = list(offsetRanges)

    def offsetRanges(self) -> list[OffsetRange]:
        """The ranges this RDD reads, in partition order."""
        return list(self._offset_ranges)


def union_log_rdds(rdds: Sequence[RDD[Any]]) -> RDD[Any]:
    """`sc.union(rdds)`, a `LogRDD` with their ranges in order when every one reads a log.

    A union's partitions are its RDDs' in argument order, so its records are merged in that
    order, then partition, then offset.

    Examples:
        >>> import tempfile
        >>> from reactive_spark.log import FileLog, createRDD
        >>> log = FileLog(tempfile.mkdtemp())
        >>> log.create_topic("a"); log.create_topic("b")
        >>> _ = [log.append(topic, f"{topic}{n}") for topic in "ab" for n in range(2)]
        >>> a = createRDD(sc, log, [OffsetRange("a", 0, 0, 2)])
        >>> b = createRDD(sc, log, [OffsetRange("b", 0, 0, 2)])
        >>> merged = union_log_rdds([b, a])
        >>> [offsets.topic for offsets in merged.offsetRanges()], merged.values().collect()
        (['b', 'a'], ['b0', 'b1', 'a0', 'a1'])
    """
    united = rdds[0].context.union(list(rdds))
    if all(isinstance(rdd, HasOffsetRanges) for rdd in rdds):
        return LogRDD(united, [r for rdd in rdds for r in rdd.offsetRanges()])  # type: ignore[attr-defined]
    return united
