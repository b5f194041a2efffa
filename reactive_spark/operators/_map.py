"""`map`: every event of the parent source, carrying what a function makes of it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from reactive_spark._callbacks import callable_name, require_callable
from reactive_spark.events import Event, EventSource
from reactive_spark.events.past import fired_between
from reactive_spark.events.source import register_operator
from reactive_spark.runtime import Runtime
from reactive_spark.sources.derived import DerivedEvent, DerivedEventSource
from reactive_spark.time import Time, to_time


class MappedEventSource(DerivedEventSource):
    """Every parent event, with `value = f(event)`."""

    operation = "map"

    def __init__(self, parent: EventSource, f: Callable[[Event], Any], name: str) -> None:
        super().__init__([parent], name)
        self._f = f
        self.function = callable_name(f)

    def _receive(self, position: int, events: list[Event]) -> None:
        """Post the mapped events."""
        self._emit(DerivedEvent.run(self, *self._apply(self._f, events)))

    def between(self, start: Time | datetime, end: Time | datetime) -> list[Event]:
        """The parent's events in the range, mapped."""
        start, end = to_time(start, "start"), to_time(end, "end")
        parents = fired_between(self._parents[0], start, end)
        return list(DerivedEvent.run(self, parents, [self._f(event) for event in parents]))


def map(f: Callable[[Event], Any], name: str | None = None) -> Callable[[EventSource], EventSource]:
    """A source firing with every parent event, carrying `f(event)` as `event.value`.

    Examples:
        >>> from reactive_spark import operators
        >>> uploads = ssc.fileWatcher("incoming", "uploads")
        >>> sizes = operators.map(lambda e: len(e.paths), name="sizes")(uploads)
    """
    require_callable(f, "f", "map")

    def apply(source: EventSource) -> EventSource:
        label = name or Runtime.of(source.context).unique_source_name(
            f"{source.name}.map({callable_name(f)})"
        )
        return MappedEventSource(source, f, label)

    return apply


register_operator("map", map)
