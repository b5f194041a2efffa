from __future__ import annotations

from collections.abc import Callable

from reactive_spark._callbacks import callable_name, require_callable
from reactive_spark.events import Event, EventSource
from reactive_spark.sources.derived import DerivedEvent, DerivedEventSource
from reactive_spark.time import Time


class FilteredEventSource(DerivedEventSource):
    """The parent events for which `predicate(event)` is true."""

    def __init__(self, parent: EventSource, predicate: Callable[[Event], bool], name: str):
        super().__init__([parent], name)
        self._predicate = predicate

    def receive(self, position: int, event: Event) -> None:
        """Post the event if it passes."""
        if self._predicate(event):
            self._emit(DerivedEvent(self, None, event.time, event))

    def between(self, start: Time, end: Time) -> list[Event]:
        """The parent's events in the range that pass."""
        return [
            DerivedEvent(self, None, event.time, event)
            for event in self._parents[0].between(start, end)
            if self._predicate(event)
        ]


def filter(
    predicate: Callable[[Event], bool], name: str | None = None
) -> Callable[[EventSource], EventSource]:
    """A source firing with the parent events for which `predicate(event)` is true.

    Example:
        >>> # job1 = operators.filter(lambda e: e.path == "/job1")(rest)
    """
    require_callable(predicate, "predicate", "filter")

    def apply(source: EventSource) -> EventSource:
        label = name or f"{source.name}.filter({callable_name(predicate)})"
        return FilteredEventSource(source, predicate, label)

    return apply
