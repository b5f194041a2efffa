"""Direct log streams, their sinks, and exactly-once state (docs/logs.md, docs/exactly-once.md).

Offset ranges, log backends (file, Redis, Kafka), `createRDD`, the idempotent and
transactional sinks, and `StateStore` for `aggregateExactlyOnce`.

Examples:
    >>> from reactive_spark.log import FileLog, OffsetRange
"""

from reactive_spark.errors import MissingTimestampError, OffsetOutOfRangeError
from reactive_spark.log.aggregate import ExactlyOnceAggregateDStream
from reactive_spark.log.backend import LogBackend, LogRecord
from reactive_spark.log.file import FileLog
from reactive_spark.log.kafka import KafkaLog
from reactive_spark.log.redis import RedisLog
from reactive_spark.log.sinks import Database, IdempotentSink, OffsetCommitError, TransactionalSink
from reactive_spark.log.state import StateStore, StateValueError
from reactive_spark.log.stream import DirectLogInputDStream, createRDD
from reactive_spark.offsets import HasOffsetRanges, LogRDD, OffsetRange

__all__ = [
    "Database",
    "DirectLogInputDStream",
    "ExactlyOnceAggregateDStream",
    "FileLog",
    "HasOffsetRanges",
    "IdempotentSink",
    "KafkaLog",
    "LogBackend",
    "LogRDD",
    "LogRecord",
    "MissingTimestampError",
    "OffsetCommitError",
    "OffsetOutOfRangeError",
    "OffsetRange",
    "RedisLog",
    "StateStore",
    "StateValueError",
    "TransactionalSink",
    "createRDD",
]
