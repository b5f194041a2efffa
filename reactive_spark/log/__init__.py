"""Direct log streams (DESIGN §9): offset ranges, log backends, `createRDD`.

Example:
    >>> from reactive_spark.log import FileLog, OffsetRange
"""

from reactive_spark.errors import OffsetOutOfRangeError
from reactive_spark.log.backend import LogBackend, LogRecord
from reactive_spark.log.file import FileLog
from reactive_spark.log.kafka import KafkaLog
from reactive_spark.log.offsets import HasOffsetRanges, OffsetRange
from reactive_spark.log.redis import RedisLog
from reactive_spark.log.sinks import Database, IdempotentSink, OffsetCommitError, TransactionalSink
from reactive_spark.log.stream import DirectLogInputDStream, LogRDD, createRDD

__all__ = [
    "Database",
    "DirectLogInputDStream",
    "FileLog",
    "HasOffsetRanges",
    "IdempotentSink",
    "KafkaLog",
    "LogBackend",
    "LogRDD",
    "LogRecord",
    "OffsetCommitError",
    "OffsetOutOfRangeError",
    "OffsetRange",
    "RedisLog",
    "TransactionalSink",
    "createRDD",
]
