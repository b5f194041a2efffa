"""reactive-spark: event-driven PySpark.

Events (timers, file arrivals, HTTP calls, any RxPY observable), not a fixed clock, decide when
batches are generated. Streams keep the pyspark.streaming API and add `bind`, `tailWindow` and
`timeWindow`.

Examples:
    >>> from reactive_spark import StreamingContext, Days, VirtualClock
"""

import importlib
from typing import Any

from reactive_spark import operators
from reactive_spark.clock import Clock, SystemClock, VirtualClock
from reactive_spark.context import StreamingContext
from reactive_spark.dstream.base import DStream
from reactive_spark.errors import (
    ContextStateError,
    ForeignContextError,
    InvalidArgumentError,
    InvalidCallbackError,
    JobFailedError,
    QueueFullError,
    ReactiveSparkError,
    StopError,
)
from reactive_spark.events import (
    Event,
    EventListener,
    EventSource,
    FileEvent,
    LogEvent,
    ObservableEvent,
    RestEvent,
    TimerEvent,
)
from reactive_spark.failures import Failure, SourceErrorInfo, UserError
from reactive_spark.jobs import BatchInfo, JobInfo
from reactive_spark.listener import EventsDropped, StreamingListener
from reactive_spark.sources.timer import TimerEventSource
from reactive_spark.time import Days, Duration, Hours, Milliseconds, Minutes, Seconds, Time

__all__ = [
    "BatchInfo",
    "Clock",
    "ContextStateError",
    "DStream",
    "Days",
    "Duration",
    "Event",
    "EventListener",
    "EventSource",
    "EventsDropped",
    "Failure",
    "FileEvent",
    "ForeignContextError",
    "Hours",
    "InvalidArgumentError",
    "InvalidCallbackError",
    "JobFailedError",
    "JobInfo",
    "LogEvent",
    "Milliseconds",
    "Minutes",
    "ObservableEvent",
    "QueueFullError",
    "ReactiveSparkError",
    "RestEvent",
    "Seconds",
    "SourceErrorInfo",
    "StopError",
    "StreamingContext",
    "StreamingListener",
    "SystemClock",
    "Time",
    "TimerEvent",
    "TimerEventSource",
    "UserError",
    "VirtualClock",
    "operators",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """`reactive_spark.web`, loaded on first use: the console's aiohttp waits until then."""
    if name == "web":
        return importlib.import_module("reactive_spark.web")
    raise AttributeError(f"module 'reactive_spark' has no attribute {name!r}")
