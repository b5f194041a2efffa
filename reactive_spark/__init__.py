"""reactive-spark: event-driven PySpark.

Events (timers, file arrivals, HTTP calls, any RxPY observable), not a fixed clock, decide when
batches are generated. Streams keep the pyspark.streaming API and add `bind`, `tailWindow` and
`timeWindow`.

Example:
    >>> from reactive_spark import StreamingContext, Days, VirtualClock
"""

from reactive_spark import operators
from reactive_spark.context import StreamingContext
from reactive_spark.dstream.base import DStream
from reactive_spark.errors import (
    ContextStateError,
    ForeignContextError,
    InvalidArgumentError,
    InvalidCallbackError,
    JobFailedError,
    ReactiveSparkError,
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
from reactive_spark.scheduler import BatchInfo, JobInfo, StreamingListener
from reactive_spark.sources.timer import TimerEventSource
from reactive_spark.time import (
    Clock,
    Days,
    Duration,
    Hours,
    Milliseconds,
    Minutes,
    Seconds,
    SystemClock,
    Time,
    VirtualClock,
)

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
    "ReactiveSparkError",
    "RestEvent",
    "Seconds",
    "StreamingContext",
    "StreamingListener",
    "SystemClock",
    "Time",
    "TimerEvent",
    "TimerEventSource",
    "VirtualClock",
    "operators",
]

__version__ = "0.1.0"
