"""`filter`: the events of the parent source for which a predicate is true."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from itertools import compress

from reactive_spark._callbacks import callable_name, require_callable
from reactive_spark.events import Event, EventSource
from reactive_spark.events.past import fired_between
from reactive_spark.events.source import register_operator
from reactive_spark.runtime import Runtime
from reactive_spark.sources.derived import DerivedEvent, DerivedEventSource
from reactive_spark.time import Time, to_time


class FilteredEventSource(DerivedEventSource):
    """The parent events for which `predicate(event)` is true."""

    operation = "filter"

    def __init__(self, parent: EventSource, predicate: Callable[[Event], bool], name: str):
        super().__init__([parent], name)
        self._predicate = predicate
        self.function = callable_name(predicate)

    def _receive(self, position: int, events: list[Event]) -> None:
        """Post the events that pass."""
        applied, passes = self._apply(self._predicate, events)
        self._emit(DerivedEvent.run(self, list(compress(applied, passes))))

    def between(self, start: Time | datetime, end: Time | datetime) -> list[Event]:
        """The parent's events in the range that pass."""
        start, end = to_time(start, "start"), to_time(end, "end")
        parents = fired_between(self._parents[0], start, end)
        return list(DerivedEvent.run(self, [event for event in parents if self._predicate(event)]))


def filter(
    predicate: Callable[[Event], bool], name: str | None = None
) -> Callable[[EventSource], EventSource]:
    """A source firing with the parent events for which `predicate(event)` is true.

    Examples:
        >>> from reactive_spark import operators
        >>> rest = ssc.restServer(None, name="triggers").post("/job1")
        >>> job1 = operators.filter(lambda e: e.path == "/job1", name="job1")(rest)
    """
    require_callable(predicate, "predicate", "filter")

    def apply(source: EventSource) -> EventSource:
        label = name or Runtime.of(source.context).unique_source_name(
            f"{source.name}.filter({callable_name(predicate)})"
        )
        return FilteredEventSource(source, predicate, label)

    return apply


register_operator("filter", filter)
