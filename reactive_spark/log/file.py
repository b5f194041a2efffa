"""The embedded log: topics and partitions as directories of JSON-lines segment files.

`<directory>/<topic>/<partition>/<first offset, 20 digits>.jsonl`: a record per line, at the
offset of the segment's first record plus the line number, `{"t": <epoch ms>, "k": <key>, "v":
<value>}` (lines written before records had times have no `"t"`). A segment holds at most
`segmentRecords` records; `delete_before` drops whole segments (retention). Appends to a
partition are serialised across processes with a lock file; a reader counts only complete
lines, so it never sees a record half written.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import re
from collections.abc import Iterator
from typing import Any

from reactive_spark._validation import require_int
from reactive_spark.errors import InvalidArgumentError
from reactive_spark.log.backend import LogBackend, LogRecord, strict_json
from reactive_spark.offsets import OffsetRange

__all__ = ["FileLog"]

_SEGMENT = re.compile(r"^(\d{20})\.jsonl$")
#: A record line begins with its time (`_append` writes it first); older lines do not.
_STAMPED = re.compile(r'\{"t":(-?\d+)[,}]')


class FileLog(LogBackend):
    """A log kept in local (or shared) files; the embedded default backend.

    Keys and values must be JSON-serialisable.

    Examples:
        >>> import tempfile
        >>> log = FileLog(tempfile.mkdtemp())
        >>> log.create_topic("clicks", partitions=2)
        >>> log.append("clicks", {"page": "/home"}, partition=1)
        (1, 0)
        >>> log.latest_offset("clicks", 1)
        1
    """

    def __init__(self, directory: str, segmentRecords: int = 10_000) -> None:
        if not isinstance(directory, str) or not directory:
            raise InvalidArgumentError(f"directory must be a non-empty str, got {directory!r}")
        self.directory = os.path.abspath(directory)
        self.segmentRecords = require_int(segmentRecords, "segmentRecords")
        # complete lines of a segment file, by path, valid while its size is unchanged
        self._line_counts: dict[str, tuple[int, int]] = {}

    def __repr__(self) -> str:
        return f"FileLog({self.directory!r})"

    # -- topics ------------------------------------------------------------------------------
    def create_topic(self, topic: str, partitions: int = 1) -> None:
        """Create `topic` with `partitions` partitions (an existing topic is left as it is).

        Raises `InvalidArgumentError` if the topic exists with another number of partitions.
        """
        if not isinstance(topic, str) or not topic or "/" in topic or topic.startswith("."):
            raise InvalidArgumentError(f"topic must be a plain non-empty name, got {topic!r}")
        require_int(partitions, "partitions")
        if self.require_partition_count(topic, partitions):
            return
        for partition in range(partitions):
            os.makedirs(self._partition_directory(topic, partition), exist_ok=True)

    def partitions(self, topic: str) -> list[int]:
        """The partitions of `topic` (none if it does not exist)."""
        try:
            names = os.listdir(os.path.join(self.directory, topic))
        except (FileNotFoundError, NotADirectoryError):
            return []
        return sorted(int(name) for name in names if name.isdigit())

    # -- offsets -----------------------------------------------------------------------------
    def earliest_offset(self, topic: str, partition: int) -> int:
        """The first offset still held."""
        segments = self._segments(topic, partition)
        if not segments:
            return 0
        return segments[0]

    def latest_offset(self, topic: str, partition: int) -> int:
        """One past the last complete record."""
        segments = self._segments(topic, partition)
        if not segments:
            return 0
        return segments[-1] + self._complete_lines(
            self._segment_path(topic, partition, segments[-1])
        )

    def delete_before(self, topic: str, partition: int, offset: int) -> int:
        """Delete the segments whose records all lie below `offset`; returns the new earliest.

        The last segment is kept, so the partition remembers its latest offset.
        """
        segments = self._segments(topic, partition)
        for first, following in itertools.pairwise(segments):
            if following > offset:
                break
            os.remove(self._segment_path(topic, partition, first))
        return self.earliest_offset(topic, partition)

    # -- records -----------------------------------------------------------------------------
    def _read(self, offsets: OffsetRange) -> Iterator[LogRecord]:
        for offset, line in self._lines(offsets):
            record = json.loads(line)
            yield LogRecord(
                offsets.topic, offsets.partition, offset, record["k"], record["v"], record.get("t")
            )

    def _timestamps(self, offsets: OffsetRange) -> Iterator[tuple[int, int | None]]:
        """Each record's time from the head of its line, without decoding its key and value."""
        for offset, line in self._lines(offsets):
            stamped = _STAMPED.match(line)
            yield offset, None if stamped is None else int(stamped[1])

    def _lines(self, offsets: OffsetRange) -> Iterator[tuple[int, str]]:
        """`(offset, line)` of each complete record line of `offsets`."""
        topic, partition = offsets.topic, offsets.partition
        segments = self._segments(topic, partition)
        for position, first in enumerate(segments):
            end = segments[position + 1] if position + 1 < len(segments) else None
            if end is not None and end <= offsets.fromOffset:
                continue
            if first >= offsets.untilOffset:
                break
            with open(self._segment_path(topic, partition, first), encoding="utf-8") as file:
                for line_number, line in enumerate(file):
                    offset = first + line_number
                    if offset >= offsets.untilOffset or not line.endswith("\n"):
                        break
                    if offset >= offsets.fromOffset:
                        yield offset, line

    def _append(self, topic: str, partition: int, key: Any, value: Any, timestamp: int) -> int:
        encoded_key = strict_json(key, "key", "FileLog", compact=True)
        encoded_value = strict_json(value, "value", "FileLog", compact=True)
        line = f'{{"t":{timestamp},"k":{encoded_key},"v":{encoded_value}}}\n'
        directory = self._partition_directory(topic, partition)
        with open(os.path.join(directory, ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            segments = self._segments(topic, partition)
            if not segments:
                first, count = 0, 0
            else:
                first = segments[-1]
                count = self._complete_lines(self._segment_path(topic, partition, first))
            if not segments or count >= self.segmentRecords:
                first, count = first + count, 0
            path = self._segment_path(topic, partition, first)
            with open(path, "ab") as file:
                file.write(line.encode())
                size = file.tell()
            self._line_counts[path] = (size, count + 1)
            return first + count

    # -- files -------------------------------------------------------------------------------
    def _partition_directory(self, topic: str, partition: int) -> str:
        return os.path.join(self.directory, topic, str(partition))

    def _segment_path(self, topic: str, partition: int, first: int) -> str:
        return os.path.join(self._partition_directory(topic, partition), f"{first:020d}.jsonl")

    def _segments(self, topic: str, partition: int) -> list[int]:
        try:
            names = os.listdir(self._partition_directory(topic, partition))
        except FileNotFoundError:
            raise InvalidArgumentError(
                f"unknown topic {topic!r} or partition {partition!r} in {self!r}",
            ) from None
        return sorted(int(match[1]) for name in names if (match := _SEGMENT.match(name)))

    def _complete_lines(self, path: str) -> int:
        size = os.stat(path).st_size
        known = self._line_counts.get(path)
        if known is not None and known[0] == size:
            return known[1]
        with open(path, "rb") as file:
            data = file.read(size)
        lines = data.count(b"\n")
        self._line_counts[path] = (size, lines)
        return lines
