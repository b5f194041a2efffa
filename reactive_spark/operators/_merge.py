from __future__ import annotations

from collections.abc import Callable

from reactive_spark.events import Event, EventSource
from reactive_spark.sources.derived import DerivedEvent, DerivedEventSource
from reactive_spark.time import Time


class MergedEventSource(DerivedEventSource):
    """One event per event of any parent; same-instant events in argument order."""

    def _derive(self, position: int, event: Event) -> DerivedEvent:
        derived = DerivedEvent(self, None, event.time, event)
        derived.tiebreak = position
        return derived

    def receive(self, position: int, event: Event) -> None:
        """Post the parent's event as this source's."""
        self._emit(self._derive(position, event))

    def between(self, start: Time, end: Time) -> list[Event]:
        """Every parent's events in the range, in time then argument order."""
        merged = [
            self._derive(position, event)
            for position, parent in enumerate(self._parents)
            for event in parent.between(start, end)
        ]
        return sorted(merged, key=lambda event: (event.time, event.tiebreak))


def merge(*others: EventSource, name: str | None = None) -> Callable[[EventSource], EventSource]:
    """A source firing with every event of the source and of `others`.

    Example:
        >>> # anyTrigger = operators.merge(rest, watcher)(daily)
    """

    def apply(source: EventSource) -> EventSource:
        parents = [source, *others]
        label = name or f"merge({', '.join(p.name for p in parents)})"
        return MergedEventSource(parents, label)

    return apply
