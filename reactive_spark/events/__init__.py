"""Events and event sources, re-exported from `event` (the events) and `source` (the sources).

`reactive_spark.events.event` holds `Event` and its subclasses; `reactive_spark.events.source`
holds `EventSource`, the `EventListener` protocol, and the overflow and catch-up policies.
"""

from reactive_spark.events.event import (
    Event,
    FileEvent,
    LogEvent,
    ObservableEvent,
    RestEvent,
    TimerEvent,
)
from reactive_spark.events.event import json_friendly as json_friendly
from reactive_spark.events.source import (
    CATCH_UP_POLICIES,
    OVERFLOW_POLICIES,
    EventListener,
    EventSource,
)
from reactive_spark.events.source import ListenerLike as ListenerLike
from reactive_spark.events.source import OperatorFactory as OperatorFactory

__all__ = [
    "CATCH_UP_POLICIES",
    "OVERFLOW_POLICIES",
    "Event",
    "EventListener",
    "EventSource",
    "FileEvent",
    "LogEvent",
    "ObservableEvent",
    "RestEvent",
    "TimerEvent",
]
