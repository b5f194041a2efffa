"""A log on Apache Kafka: topics and partitions as Kafka has them (kafka-python client).

Offsets are Kafka's. A range is read by a consumer of its own, assigned to the one partition
and positioned at `fromOffset`, without a consumer group and without committing anything: the
offset ranges in the checkpoint (or a `TransactionalSink`) are the only record of progress, as
with Spark's direct Kafka stream. Needs the `kafka` extra.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from reactive_spark.errors import InvalidArgumentError, OffsetOutOfRangeError
from reactive_spark.log.backend import LogBackend, LogRecord, strict_json
from reactive_spark.offsets import OffsetRange

__all__ = ["KafkaLog"]

#: How long a read waits for the records of a range the broker said it holds.
READ_TIMEOUT_MS = 30_000


def _encode_json(value: Any, what: str) -> bytes | None:
    return None if value is None else strict_json(value, what, "KafkaLog").encode()


def _decode_json(data: bytes | None) -> Any:
    return None if data is None else json.loads(data)


def _encode_raw(value: Any, what: str) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    raise InvalidArgumentError(f"a raw Kafka log takes bytes or str, got {what} {value!r}")


def _decode_raw(data: bytes | None) -> Any:
    return data


_CODECS: dict[str, tuple[Callable[[Any, str], bytes | None], Callable[[bytes | None], Any]]] = {
    "json": (_encode_json, _decode_json),
    "raw": (_encode_raw, _decode_raw),
}


class KafkaLog(LogBackend):
    """A Kafka cluster as a log; keys and values are JSON (`codec="json"`) or bytes (`"raw"`).

    Extra keyword arguments go to every kafka-python client (security settings and the like).

    Examples:
        A fragment (it needs a Kafka cluster; `ssc` is a StreamingContext):

        ```python
        log = KafkaLog("broker-1:9092,broker-2:9092", codec="raw")
        clicks = ssc.directStream(log, ["clicks"], startingOffsets="earliest")
        ```
    """

    def __init__(self, bootstrap: str, codec: str = "json", **config: Any) -> None:
        if not isinstance(bootstrap, str) or not bootstrap:
            raise InvalidArgumentError(
                f"bootstrap must be 'host:port[,host:port...]', got {bootstrap!r}",
            )
        if codec not in _CODECS:
            raise InvalidArgumentError(f"codec must be 'json' or 'raw', got {codec!r}")
        self.bootstrap = bootstrap
        self.codec = codec
        self.config = dict(config)
        self._clients: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"KafkaLog({self.bootstrap!r}, codec={self.codec!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_clients": {}}

    def _client(self, kind: str) -> Any:
        if kind not in self._clients:
            import kafka  # noqa: PLC0415 (an optional dependency)
            import kafka.admin  # noqa: PLC0415 (an optional dependency)

            servers = self.bootstrap.split(",")
            if kind == "metadata":
                client = kafka.KafkaConsumer(
                    bootstrap_servers=servers, enable_auto_commit=False, **self.config
                )
            elif kind == "producer":
                client = kafka.KafkaProducer(bootstrap_servers=servers, acks="all", **self.config)
            else:
                client = kafka.admin.KafkaAdminClient(bootstrap_servers=servers, **self.config)
            self._clients[kind] = client
        return self._clients[kind]

    @staticmethod
    def _partition(topic: str, partition: int) -> Any:
        from kafka import TopicPartition  # noqa: PLC0415 (an optional dependency)

        return TopicPartition(topic, partition)

    # -- topics ------------------------------------------------------------------------------
    def create_topic(self, topic: str, partitions: int = 1, replicationFactor: int = 1) -> None:
        """Create `topic` (an existing topic is left as it is).

        Raises `InvalidArgumentError` if the topic exists with another number of partitions.
        """
        from kafka.admin import NewTopic  # noqa: PLC0415 (an optional dependency)
        from kafka.errors import TopicAlreadyExistsError  # noqa: PLC0415 (an optional dependency)

        try:
            self._client("admin").create_topics(
                [NewTopic(topic, partitions, replicationFactor)], wait_for_metadata=True
            )
        except TopicAlreadyExistsError:
            self.require_partition_count(topic, partitions)

    def delete_topic(self, topic: str) -> None:
        """Delete `topic` and its records."""
        self._client("admin").delete_topics([topic])

    def partitions(self, topic: str) -> list[int]:
        """The partitions of `topic` (none if the cluster does not know it)."""
        found = self._client("metadata").partitions_for_topic(topic)
        return sorted(found or [])

    # -- offsets -----------------------------------------------------------------------------
    def earliest_offset(self, topic: str, partition: int) -> int:
        """The first offset the broker still holds."""
        key = self._partition(topic, partition)
        return int(self._client("metadata").beginning_offsets([key])[key])

    def latest_offset(self, topic: str, partition: int) -> int:
        """The high watermark: one past the last committed record."""
        key = self._partition(topic, partition)
        return int(self._client("metadata").end_offsets([key])[key])

    def delete_before(self, topic: str, partition: int, offset: int) -> int:
        """Delete the records below `offset` (Kafka's DeleteRecords); returns the new earliest."""
        self._client("admin").delete_records({self._partition(topic, partition): offset})
        return self.earliest_offset(topic, partition)

    def _offset_for_time(self, topic: str, partition: int, time: int, first: int) -> int:
        """Kafka's own lookup (`offsets_for_times`, ListOffsets by timestamp), checked.

        The answer must agree with the records on either side of it: the one below it is
        earlier than `time`, the one at it is not. A broker whose answer does not (Tansu 0.6 on
        memory storage answers offset 0 for any time) or that cannot look records up by time
        (brokers before 0.10.1) is scanned instead, as the file log is.
        """
        from kafka.errors import UnsupportedVersionError  # noqa: PLC0415 (an optional dependency)

        key = self._partition(topic, partition)
        try:
            found = self._client("metadata").offsets_for_times({key: max(0, time)})[key]
        except UnsupportedVersionError:
            return super()._offset_for_time(topic, partition, time, first)
        latest = self.latest_offset(topic, partition)
        offset = latest if found is None else min(max(int(found.offset), first), latest)
        around = OffsetRange(topic, partition, max(first, offset - 1), min(offset + 1, latest))
        stamps = dict(self._timestamps(around))
        below, at = stamps.get(offset - 1), stamps.get(offset)
        if (offset == first or (below is not None and below < time)) and (
            offset == latest or (at is not None and at >= time)
        ):
            return offset
        return super()._offset_for_time(topic, partition, time, first)

    # -- records -----------------------------------------------------------------------------
    def _read(self, offsets: OffsetRange) -> Iterator[LogRecord]:
        import kafka  # noqa: PLC0415 (an optional dependency)

        if not offsets.count():
            return
        decode = _CODECS[self.codec][1]
        key = self._partition(offsets.topic, offsets.partition)
        consumer = kafka.KafkaConsumer(
            bootstrap_servers=self.bootstrap.split(","),
            enable_auto_commit=False,
            auto_offset_reset="none",
            **self.config,
        )
        try:
            consumer.assign([key])
            consumer.seek(key, offsets.fromOffset)
            while consumer.position(key) < offsets.untilOffset:
                batch = consumer.poll(timeout_ms=READ_TIMEOUT_MS).get(key, [])
                if not batch:
                    raise OffsetOutOfRangeError(
                        f"topic {offsets.topic!r} partition {offsets.partition}: no records "
                        f"at offset {consumer.position(key)} of {offsets.fromOffset}.."
                        f"{offsets.untilOffset} within {READ_TIMEOUT_MS} ms",
                    )
                for message in batch:
                    if message.offset >= offsets.untilOffset:
                        return
                    yield LogRecord(
                        offsets.topic,
                        offsets.partition,
                        message.offset,
                        decode(message.key),
                        decode(message.value),
                        None if message.timestamp < 0 else message.timestamp,
                    )
        finally:
            consumer.close()

    def _append(self, topic: str, partition: int, key: Any, value: Any, timestamp: int) -> int:
        encode = _CODECS[self.codec][0]
        sent = self._client("producer").send(
            topic,
            value=encode(value, "value"),
            key=encode(key, "key"),
            partition=partition,
            timestamp_ms=timestamp,  # its CreateTime (a topic on LogAppendTime overrides it)
        )
        return int(sent.get(timeout=30).offset)
