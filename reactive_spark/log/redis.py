"""A log on Redis Streams: one stream per partition, offsets as dense stream IDs.

The record at offset `n` of `topic` partition `p` is the entry `0-(n+1)` of the stream
`<prefix>:<topic>:<p>`, with the fields `k` and `v` (JSON) and `t` (its time, epoch ms; entries
written before records had times have none); a counter beside it hands out offsets, and a Lua
script appends, so concurrent producers never reorder or reuse offsets. `delete_before` trims
by ID (`XTRIM MINID`), which is how retention shows up as `earliest_offset`. Needs the `redis`
extra.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from reactive_spark._validation import require_int
from reactive_spark.errors import InvalidArgumentError
from reactive_spark.log.backend import LogBackend, LogRecord, strict_json
from reactive_spark.offsets import OffsetRange

__all__ = ["RedisLog"]

_APPEND = """
local offset = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[1], '0-' .. offset, 'k', ARGV[1], 'v', ARGV[2], 't', ARGV[3])
return offset - 1
"""
_READ_BATCH = 1000


class RedisLog(LogBackend):
    """A log kept in Redis Streams (keys and values must be JSON-serialisable).

    Examples:
        A fragment (it needs a Redis server):

        ```python
        log = RedisLog("redis://127.0.0.1:6379/0")
        log.create_topic("clicks", partitions=4)
        log.append("clicks", {"page": "/"}, key="user-7")
        ```
    """

    def __init__(self, url: str = "redis://127.0.0.1:6379/0", prefix: str = "reactive-spark"):
        if not isinstance(url, str) or not url:
            raise InvalidArgumentError(f"url must be a redis:// URL, got {url!r}")
        if not isinstance(prefix, str) or not prefix:
            raise InvalidArgumentError(f"prefix must be a non-empty str, got {prefix!r}")
        self.url = url
        self.prefix = prefix
        self._client: Any = None

    def __repr__(self) -> str:
        return f"RedisLog({self.url!r}, prefix={self.prefix!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "prefix": self.prefix, "_client": None}

    @property
    def client(self) -> Any:
        """The Redis client (connected on first use, in each process)."""
        if self._client is None:
            import redis  # noqa: PLC0415 (an optional dependency)

            self._client = redis.Redis.from_url(self.url)
        return self._client

    def _stream(self, topic: str, partition: int) -> str:
        return f"{self.prefix}:{topic}:{partition}"

    # -- topics ------------------------------------------------------------------------------
    def create_topic(self, topic: str, partitions: int = 1) -> None:
        """Create `topic` with `partitions` partitions (an existing topic is left as it is).

        Raises `InvalidArgumentError` if the topic exists with another number of partitions.
        """
        if not isinstance(topic, str) or not topic or ":" in topic:
            raise InvalidArgumentError(f"topic must be a non-empty name without ':', got {topic!r}")
        require_int(partitions, "partitions")
        if not self.client.set(f"{self.prefix}:topics:{topic}", partitions, nx=True):
            self.require_partition_count(topic, partitions)

    def delete_topic(self, topic: str) -> None:
        """Delete `topic` and all its records."""
        for partition in self.partitions(topic):
            stream = self._stream(topic, partition)
            self.client.delete(stream, f"{stream}:next")
        self.client.delete(f"{self.prefix}:topics:{topic}")

    def partitions(self, topic: str) -> list[int]:
        """The partitions of `topic` (none if it does not exist)."""
        count = self.client.get(f"{self.prefix}:topics:{topic}")
        return [] if count is None else list(range(int(count)))

    # -- offsets -----------------------------------------------------------------------------
    def earliest_offset(self, topic: str, partition: int) -> int:
        """The first offset still held (the latest one when everything was trimmed)."""
        first = self.client.xrange(self._stream(topic, partition), count=1)
        if not first:
            return self.latest_offset(topic, partition)
        return _offset(first[0][0])

    def latest_offset(self, topic: str, partition: int) -> int:
        """One past the last appended record."""
        counter = self.client.get(f"{self._stream(topic, partition)}:next")
        return 0 if counter is None else int(counter)

    def delete_before(self, topic: str, partition: int, offset: int) -> int:
        """Trim the records below `offset`; returns the new earliest offset."""
        self.client.xtrim(
            self._stream(topic, partition), minid=f"0-{offset + 1}", approximate=False
        )
        return self.earliest_offset(topic, partition)

    # -- records -----------------------------------------------------------------------------
    def _read(self, offsets: OffsetRange) -> Iterator[LogRecord]:
        for offset, fields in self._entries(offsets):
            yield LogRecord(
                offsets.topic,
                offsets.partition,
                offset,
                json.loads(fields[b"k"]),
                json.loads(fields[b"v"]),
                _timestamp(fields),
            )

    def _timestamps(self, offsets: OffsetRange) -> Iterator[tuple[int, int | None]]:
        """Each entry's time, without decoding its key and value."""
        for offset, fields in self._entries(offsets):
            yield offset, _timestamp(fields)

    def _entries(self, offsets: OffsetRange) -> Iterator[tuple[int, dict[bytes, bytes]]]:
        """`(offset, fields)` of each stream entry of `offsets`, read by `XRANGE` in batches."""
        stream = self._stream(offsets.topic, offsets.partition)
        start = offsets.fromOffset
        while start < offsets.untilOffset:
            entries = self.client.xrange(
                stream, min=f"0-{start + 1}", max=f"0-{offsets.untilOffset}", count=_READ_BATCH
            )
            if not entries:
                return
            for entry_id, fields in entries:
                offset = _offset(entry_id)
                yield offset, fields
                start = offset + 1

    def _append(self, topic: str, partition: int, key: Any, value: Any, timestamp: int) -> int:
        stream = self._stream(topic, partition)
        offset = self.client.eval(
            _APPEND,
            2,
            stream,
            f"{stream}:next",
            strict_json(key, "key", "RedisLog"),
            strict_json(value, "value", "RedisLog"),
            timestamp,
        )
        return int(offset)


def _timestamp(fields: dict[bytes, bytes]) -> int | None:
    stamp = fields.get(b"t")
    return None if stamp is None else int(stamp)


def _offset(entry_id: bytes | str) -> int:
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return int(text.split("-")[1]) - 1
