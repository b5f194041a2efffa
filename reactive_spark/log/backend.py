"""Log backends: partitioned, append-only logs that direct streams read by offset range.

A backend is picklable (it holds where the log is, not open connections), so Spark executors
read the ranges themselves and a retried task reads the same records again.
"""

from __future__ import annotations

import inspect
import json
import zlib
from abc import ABC, abstractmethod
from collections.abc import Iterator
from datetime import datetime
from typing import Any, NamedTuple

from reactive_spark.errors import (
    InvalidArgumentError,
    InvalidCallbackError,
    MissingTimestampError,
    OffsetOutOfRangeError,
)
from reactive_spark.offsets import OffsetRange
from reactive_spark.time import Time, now_ms, to_time

__all__ = ["LogBackend", "LogRecord"]


#: A record's time as `append(timestamp=...)` takes it: a `Time`, a `datetime` or epoch ms.
Timestamp = Time | datetime | int


class LogRecord(NamedTuple):
    """One record of a log: where it is, its key, its value and its time.

    `timestamp` is the record's time in milliseconds since the epoch (Kafka's CreateTime: by
    default when it was appended); None for a file log line written before records had times.

    Examples:
        >>> record = LogRecord("clicks", 0, 41, "user-7", {"page": "/"}, 1_767_225_600_000)
        >>> record.offset, Time(record.timestamp).isoformat()
        (41, '2026-01-01T00:00:00Z')
    """

    topic: str
    partition: int
    offset: int
    key: Any
    value: Any
    timestamp: int | None = None


def epoch_ms(value: Timestamp, name: str) -> int:
    """A record's time in epoch milliseconds, from a `Time`, a `datetime` or an int.

    Raises `InvalidArgumentError` naming `name` for anything else, or a time before 1970.

    Examples:
        >>> from datetime import UTC, datetime
        >>> epoch_ms(datetime(2026, 1, 1, tzinfo=UTC), "timestamp")
        1767225600000
        >>> epoch_ms(1_767_225_600_000, "timestamp")
        1767225600000
    """
    ms = _milliseconds(value, name)
    if ms < 0:
        raise InvalidArgumentError(f"{name} must not be before 1970-01-01, got {value!r}")
    return ms


def _milliseconds(value: Timestamp, name: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, Time | datetime):
        return to_time(value, name).milliseconds
    raise InvalidArgumentError(
        f"{name} must be a Time, a datetime or epoch milliseconds (int), got {value!r}"
    )


def strict_json(value: Any, what: str, log: str, *, compact: bool = False) -> str:
    """`value` as JSON that every JSON reader takes: no NaN or Infinity, which Python writes.

    `compact` leaves out the spaces after `,` and `:` (a file log's lines); without it the
    text is `json.dumps`'s, as records written before were. Raises `InvalidArgumentError`
    naming `what` (`"key"`, `"value"`) and the `log` class when `value` has no such JSON.

    Examples:
        >>> strict_json({"page": "/a", "ms": 3}, "value", "FileLog", compact=True)
        '{"page":"/a","ms":3}'
        >>> from reactive_spark.errors import InvalidArgumentError
        >>> try:
        ...     strict_json(float("nan"), "value", "FileLog")
        ... except InvalidArgumentError as error:
        ...     print(str(error).split(" (")[0])
        a FileLog record holds JSON: value nan is not
    """
    try:
        return json.dumps(value, separators=(",", ":") if compact else None, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(
            f"a {log} record holds JSON: {what} {value!r} is not ({exc}); convert it first "
            "(NaN or infinity to None or a string, a datetime to its isoformat(), a set to a "
            "list)"
        ) from exc


class LogBackend(ABC):
    """A log of topics, each split into numbered partitions of records at dense offsets.

    Examples:
        >>> import tempfile
        >>> from reactive_spark.log import FileLog
        >>> log = FileLog(tempfile.mkdtemp())
        >>> log.create_topic("clicks", partitions=2)
        >>> [log.append("clicks", {"page": "/"}, key="user-1") for _ in range(2)]
        [(1, 0), (1, 1)]
        >>> log.append("clicks", {"page": "/"}, partition=0, timestamp=Time(1_767_225_600_000))
        (0, 0)
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Refuse a backend written before records had a time: its `_append` takes none."""
        super().__init_subclass__(**kwargs)
        append = cls.__dict__.get("_append")
        if append is not None and "timestamp" not in inspect.signature(append).parameters:
            raise InvalidCallbackError(
                f"{cls.__name__}._append must take (topic, partition, key, value, timestamp) "
                "and store the record's timestamp (epoch ms): log records carry a time "
                "(docs/logs.md)"
            )

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
    def _append(self, topic: str, partition: int, key: Any, value: Any, timestamp: int) -> int:
        """Append a record stamped `timestamp` (epoch ms) to a partition; returns its offset."""

    def read(self, offsets: OffsetRange) -> Iterator[LogRecord]:
        """The records of `offsets`, in order; raises `OffsetOutOfRangeError` outside the log."""
        self.check(offsets)
        return self._read(offsets)

    def append(
        self,
        topic: str,
        value: Any,
        key: Any = None,
        partition: int | None = None,
        *,
        timestamp: Timestamp | None = None,
    ) -> tuple[int, int]:
        """Append a record; returns its `(partition, offset)`.

        Without `partition`, records with a key go to the partition the key hashes to (crc32,
        stable across processes) and records without one to partition 0. `timestamp` is the
        record's time (a `Time`, a `datetime` or epoch milliseconds, not before 1970); by
        default the wall-clock time of the append, as Kafka's CreateTime.
        """
        stamp = int(now_ms()) if timestamp is None else epoch_ms(timestamp, "timestamp")
        if partition is None:
            partitions = self.require_topic(topic)
            partition = 0 if key is None else zlib.crc32(repr(key).encode()) % len(partitions)
        else:
            self.require_partition(topic, partition)
        return partition, self._append(topic, partition, key, value, stamp)

    def offset_for_time(
        self, topic: str, partition: int, time: Timestamp, *, fromOffset: int | None = None
    ) -> int:
        """The earliest offset whose record's timestamp is at or after `time`, else the latest.

        Kafka's `offsetsForTimes`: `time` is a `Time`, a `datetime` or epoch milliseconds, and
        the records of `partition` with a timestamp before `time` are those below the offset
        (when timestamps grow with offsets, as appends stamped with the time they are made do).
        Only records still held count. Raises `InvalidArgumentError` for an unknown topic or
        partition, and `MissingTimestampError` naming the offset if a record it has to look at
        has no time (a file log line written before records had times). With `fromOffset`,
        only the records from that offset on are looked at (a caller that knows the ones
        before it are earlier than `time`): the answer is at least `fromOffset`.

        Examples:
            >>> import tempfile
            >>> from reactive_spark.log import FileLog
            >>> log = FileLog(tempfile.mkdtemp())
            >>> log.create_topic("clicks")
            >>> _ = [log.append("clicks", n, timestamp=Time(1000 * n)) for n in (1, 2, 2, 3)]
            >>> [log.offset_for_time("clicks", 0, Time(ms)) for ms in (0, 2000, 2001, 9000)]
            [0, 1, 3, 4]
        """
        self.require_partition(topic, partition)
        if fromOffset is not None:
            OffsetRange(topic, partition, fromOffset, fromOffset)  # validates the offset
        earliest = self.earliest_offset(topic, partition)
        first = earliest if fromOffset is None else max(earliest, fromOffset)
        latest = self.latest_offset(topic, partition)
        ms = _milliseconds(time, "time")
        return self._offset_for_time(topic, partition, ms, min(first, latest))

    def _offset_for_time(self, topic: str, partition: int, time: int, first: int) -> int:
        """`offset_for_time` of a known partition from offset `first` (held), `time` in epoch ms.

        A scan of the partition's records from `first`; a backend with an index of times
        (Kafka) overrides it.
        """
        latest = self.latest_offset(topic, partition)
        for offset, timestamp in self._timestamps(OffsetRange(topic, partition, first, latest)):
            if timestamp is None:
                raise MissingTimestampError(
                    f"topic {topic!r} partition {partition}: the record at offset {offset} has "
                    "no timestamp (it was written before records had times), so records cannot "
                    "be found by time there; delete the records without one (delete_before) or "
                    "read them by offset"
                )
            if timestamp >= time:
                return offset
        return latest

    def _timestamps(self, offsets: OffsetRange) -> Iterator[tuple[int, int | None]]:
        """`(offset, timestamp)` of each record of a held range (backends may read less)."""
        for record in self._read(offsets):
            yield record.offset, record.timestamp

    def require_partition_count(self, topic: str, partitions: int) -> bool:
        """Whether `topic` exists, with `partitions` partitions (what `create_topic` asks).

        Raises `InvalidArgumentError` if it exists with another count: `create_topic` leaves
        an existing topic as it is (more partitions would send keys to other ones), so a call
        asking for another count would leave it otherwise than asked.
        """
        existing = self.partitions(topic)
        if existing and len(existing) != partitions:
            raise InvalidArgumentError(
                f"topic {topic!r} exists with {len(existing)} partitions in {self!r}, not "
                f"{partitions}: ask for as many, or delete the topic first (delete_topic) to "
                "make it anew"
            )
        return bool(existing)

    def require_topic(self, topic: str) -> list[int]:
        """The partitions of `topic`; raises `InvalidArgumentError` for an unknown topic."""
        partitions = self.partitions(topic)
        if not partitions:
            raise InvalidArgumentError(f"unknown topic {topic!r} in {self!r}")
        return partitions

    def require_partition(self, topic: str, partition: int) -> None:
        """Raise `InvalidArgumentError` unless `topic` exists and has `partition`."""
        partitions = self.require_topic(topic)
        if partition not in partitions:
            raise InvalidArgumentError(
                f"partition must be one of {partitions} for topic {topic!r}, got {partition!r}",
            )

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
