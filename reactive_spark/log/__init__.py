"""Direct log streams (DESIGN §9): offset ranges, log backends, `createRDD`.

Example:
    >>> from reactive_spark.log import FileLog, OffsetRange
"""

from reactive_spark.errors import OffsetOutOfRangeError
from reactive_spark.log.backend import LogBackend, LogRecord
from reactive_spark.log.file import FileLog
from reactive_spark.log.offsets import HasOffsetRanges, OffsetRange
from reactive_spark.log.stream import DirectLogInputDStream, LogRDD, createRDD

__all__ = [
    "DirectLogInputDStream",
    "FileLog",
    "HasOffsetRanges",
    "LogBackend",
    "LogRDD",
    "LogRecord",
    "OffsetOutOfRangeError",
    "OffsetRange",
    "createRDD",
]
