"""Log backends: partitioned, append-only logs that direct streams read by offset range.

A backend is picklable (it holds where the log is, not open connections), so Spark executors
read the ranges themselves and a retried task reads the same records again.
"""

from __future__ import annotations

import zlib
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, NamedTuple

from reactive_spark.errors import InvalidArgumentError, OffsetOutOfRangeError
from reactive_spark.offsets import OffsetRange

__all__ = ["LogBackend", "LogRecord"]


class LogRecord(NamedTuple):
    """One record of a log: where it is, its key and its value.

    Examples:
        >>> LogRecord("clicks", 0, 41, "user-7", {"page": "/"}).offset
        41
    """

    topic: str
    partition: int
    offset: int
    key: Any
    value: Any


class LogBackend(ABC):
    """A log of topics, each split into numbered partitions of records at dense offsets.

    Examples:
        >>> import tempfile
        >>> from reactive_spark.log import FileLog
        >>> log = FileLog(tempfile.mkdtemp())
        >>> log.create_topic("clicks", partitions=2)
        >>> [log.append("clicks", {"page": "/"}, key="user-1") for _ in range(2)]
        [(1, 0), (1, 1)]
    """

    @abstractmethod
    def partitions(self, topic: str) -> list[int]:
        """The partitions of `topic`, or an empty list if there is no such topic."""

    @abstractmethod
    def earliest_offset(self, topic: str, partition: int) -> int:
        """The first offset the partition still holds (older records were deleted)."""

    @abstractmethod
    def latest_offset(self, topic: str, partition: int) -> int:
        """The offset the next appended record gets (one past the last record)."""

    @abstractmethod
    def _read(self, offsets: OffsetRange) -> Iterator[LogRecord]:
        """The records of a range known to be held, in offset order."""

    @abstractmethod
    def _append(self, topic: str, partition: int, key: Any, value: Any) -> int:
        """Append a record to a partition; returns its offset."""

    def read(self, offsets: OffsetRange) -> Iterator[LogRecord]:
        """The records of `offsets`, in order; raises `OffsetOutOfRangeError` outside the log."""
        self.check(offsets)
        return self._read(offsets)

    def append(
        self, topic: str, value: Any, key: Any = None, partition: int | None = None
    ) -> tuple[int, int]:
        """Append a record; returns its `(partition, offset)`.

        Without `partition`, records with a key go to the partition the key hashes to (crc32,
        stable across processes) and records without one to partition 0.
        """
        partitions = self.require_topic(topic)
        if partition is None:
            partition = 0 if key is None else zlib.crc32(repr(key).encode()) % len(partitions)
        elif partition not in partitions:
            raise InvalidArgumentError(
                f"partition must be one of {partitions} for topic {topic!r}, got {partition!r}",
            )
        return partition, self._append(topic, partition, key, value)

    def require_topic(self, topic: str) -> list[int]:
        """The partitions of `topic`; raises `InvalidArgumentError` for an unknown topic."""
        partitions = self.partitions(topic)
        if not partitions:
            raise InvalidArgumentError(f"unknown topic {topic!r} in {self!r}")
        return partitions

    def check(self, offsets: OffsetRange) -> None:
        """Raise `OffsetOutOfRangeError` unless the log holds every record of `offsets`."""
        earliest = self.earliest_offset(offsets.topic, offsets.partition)
        latest = self.latest_offset(offsets.topic, offsets.partition)
        if offsets.count() and (offsets.fromOffset < earliest or offsets.untilOffset > latest):
            raise OffsetOutOfRangeError(
                f"topic {offsets.topic!r} partition {offsets.partition}: offsets "
                f"{offsets.fromOffset}..{offsets.untilOffset} are outside the retained "
                f"{earliest}..{latest}",
            )
