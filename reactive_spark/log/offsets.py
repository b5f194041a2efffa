"""Offset ranges: exactly which records of a log partition a batch reads (seed 002)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from reactive_spark._validation import require_int
from reactive_spark.errors import InvalidArgumentError

__all__ = ["HasOffsetRanges", "OffsetRange"]


@dataclass(frozen=True)
class OffsetRange:
    """The records `[fromOffset, untilOffset)` of one partition of a topic.

    Example:
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

    Example:
        >>> # isinstance(rdd, HasOffsetRanges) and rdd.offsetRanges()
    """

    def offsetRanges(self) -> list[OffsetRange]:
        """The ranges this RDD reads."""
