from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactive_spark._callbacks import callable_name, require_callable
from reactive_spark.events import Event, EventSource
from reactive_spark.sources.derived import DerivedEvent, DerivedEventSource
from reactive_spark.time import Time


class MappedEventSource(DerivedEventSource):
    """Every parent event, with `value = f(event)`."""

    def __init__(self, parent: EventSource, f: Callable[[Event], Any], name: str) -> None:
        super().__init__([parent], name)
        self._f = f

    def _derive(self, event: Event) -> DerivedEvent:
        return DerivedEvent(self, None, event.time, event, self._f(event))

    def receive(self, position: int, event: Event) -> None:
        """Post the mapped event."""
        self._emit(self._derive(event))

    def between(self, start: Time, end: Time) -> list[Event]:
        """The parent's events in the range, mapped."""
        return [self._derive(event) for event in self._parents[0].between(start, end)]


def map(f: Callable[[Event], Any], name: str | None = None) -> Callable[[EventSource], EventSource]:
    """A source firing with every parent event, carrying `f(event)` as `event.value`.

    Example:
        >>> # sizes = operators.map(lambda e: len(e.paths))(uploads)
    """
    require_callable(f, "f", "map")

    def apply(source: EventSource) -> EventSource:
        return MappedEventSource(source, f, name or f"{source.name}.map({callable_name(f)})")

    return apply
