"""Events: `Event`, its subclasses for each kind of source, and `json_friendly`.

An event decides when a batch is generated. Every event has a `source`, an `index` counting the
events of that source from 0, a `time`, and an `instanceId` unique and increasing across the
context, assigned when the context accepts the event. Events order by `(time, instanceId)`.

Examples:
    >>> from reactive_spark.time import Duration, Time, to_time
    >>> a = Event(None, 0, Time(5), 1)
    >>> b = Event(None, 0, Time(5), 2)
    >>> a < b
    True
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import total_ordering
from typing import TYPE_CHECKING, Any

from reactive_spark.time import Time

if TYPE_CHECKING:
    from reactive_spark.events.source import EventSource

__all__ = [
    "Event",
    "FileEvent",
    "LogEvent",
    "ObservableEvent",
    "RestEvent",
    "TimerEvent",
    "json_friendly",
]


def json_friendly(value: Any) -> Any:
    """`value` itself when JSON can hold it, else its repr (for logs, checkpoints, the web)."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


@total_ordering
class Event:
    """Something that happened at `time` on `source`, and makes bound streams generate a batch.

    Args:
        source: The event source that fired the event.
        index: The position of the event among its source's events (from 0); `None` lets the
            context assign the next index when it accepts the event.
        time: When the event happened (for a timer: the nominal tick time).
        instanceId: Unique and increasing across the context; assigned on acceptance.

    Examples:
        >>> from reactive_spark.time import Duration, Time
        >>> Event(None, 3, Time(1_000)).datetime.isoformat()
        '1970-01-01T00:00:01+00:00'
    """

    # events are many and short-lived: no per-instance dict (subclasses of yours may have one);
    # this `__init__` is the one place an event's own fields are set: subclasses call it
    # directly, without a `super()` object per event
    __slots__ = ("index", "instanceId", "source", "standsFor", "time")

    def __init__(
        self,
        source: Any,
        index: int | None,
        time: Time,
        instanceId: int | None = None,
    ) -> None:
        self.source: EventSource = source
        self.index = index
        self.time = time
        self.instanceId = instanceId
        #: How many events this one stands for: more than one when the source's overflow
        #: policy coalesced waiting events into it (see `EventSource.overflow`).
        self.standsFor = 1

    @property
    def datetime(self) -> datetime:
        """The event time as a timezone-aware UTC datetime."""
        return self.time.toDatetime()

    def _key(self) -> tuple[int, int]:
        return (self.time.milliseconds, -1 if self.instanceId is None else self.instanceId)

    def __lt__(self, other: Event) -> bool:
        if not isinstance(other, Event):
            return NotImplemented
        return self._key() < other._key()

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def describe(self) -> dict[str, Any]:
        """The event as JSON-friendly fields (subclasses add theirs).

        `standsFor` is there only when the event stands for more than itself.
        """
        fields = {
            "source": getattr(self.source, "name", None),
            "index": self.index,
            "time": self.time.milliseconds,
            "instanceId": self.instanceId,
        }
        if self.standsFor != 1:
            fields["standsFor"] = self.standsFor
        return fields

    def __repr__(self) -> str:
        name = getattr(self.source, "name", None)
        return (
            f"{type(self).__name__}(source={name!r}, index={self.index}, "
            f"time={self.time.milliseconds}, instanceId={self.instanceId})"
        )


class TimerEvent(Event):
    """A tick of a timer; `time` is the nominal tick time."""

    __slots__ = ()


class FileEvent(Event):
    """Files appeared or changed: `paths` (absolute) and the kind of `change`."""

    __slots__ = ("change", "paths")

    def __init__(
        self,
        source: Any,
        index: int | None,
        time: Time,
        paths: tuple[str, ...],
        change: str = "added",
        instanceId: int | None = None,
    ) -> None:
        Event.__init__(self, source, index, time, instanceId)
        self.paths = tuple(paths)
        self.change = change

    def describe(self) -> dict[str, Any]:
        """The event as JSON-friendly fields."""
        return {**super().describe(), "paths": list(self.paths), "change": self.change}


class RestEvent(Event):
    """An HTTP request: `method`, `path` (no query string), `query` dict and JSON `body`.

    `traceparent` is the request's W3C trace context header, if it had a valid one: traced batches
    (`reactive_spark.tracing`) continue the caller's trace.
    """

    __slots__ = ("body", "method", "path", "query", "traceparent")

    def __init__(
        self,
        source: Any,
        index: int | None,
        time: Time,
        method: str,
        path: str,
        query: dict[str, str] | None = None,
        body: Any = None,
        instanceId: int | None = None,
        traceparent: str | None = None,
    ) -> None:
        Event.__init__(self, source, index, time, instanceId)
        self.method = method
        self.path = path
        self.query = dict(query or {})
        self.body = body
        self.traceparent = traceparent

    def describe(self) -> dict[str, Any]:
        """The event as JSON-friendly fields."""
        return {
            **super().describe(),
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "body": self.body,
        }


class ObservableEvent(Event):
    """A value emitted by an observable (or produced by `map` / `pipe`): `value`."""

    __slots__ = ("value",)

    def __init__(
        self,
        source: Any,
        index: int | None,
        time: Time,
        value: Any = None,
        instanceId: int | None = None,
    ) -> None:
        Event.__init__(self, source, index, time, instanceId)
        self.value = value

    def describe(self) -> dict[str, Any]:
        """The event as JSON-friendly fields (a value JSON cannot hold as its repr)."""
        return {**super().describe(), "value": json_friendly(self.value)}

    @classmethod
    def fromRecord(cls, source: Any, fields: dict[str, Any]) -> ObservableEvent:
        """The event `describe()` gave `fields` (a value JSON could not hold is its repr).

        Examples:
            >>> ObservableEvent.fromRecord(None, {"index": 3, "time": 5, "value": [1]}).value
            [1]
        """
        return cls(
            source,
            fields["index"],
            Time(fields["time"]),
            fields.get("value"),
            fields.get("instanceId"),
        )


class LogEvent(Event):
    """Enough records wait in a log: `backlog` is how many."""

    __slots__ = ("backlog",)

    def __init__(
        self,
        source: Any,
        index: int | None,
        time: Time,
        backlog: int,
        instanceId: int | None = None,
    ) -> None:
        Event.__init__(self, source, index, time, instanceId)
        self.backlog = backlog

    def describe(self) -> dict[str, Any]:
        """The event as JSON-friendly fields."""
        return {**super().describe(), "backlog": self.backlog}
