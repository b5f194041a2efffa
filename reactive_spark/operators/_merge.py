"""`merge`: every event of several sources, same-instant events in argument order."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from reactive_spark.events import Event, EventSource
from reactive_spark.events.past import fired_between
from reactive_spark.events.source import register_operator, require_source
from reactive_spark.runtime import Runtime
from reactive_spark.sources.derived import DerivedEvent, DerivedEventSource
from reactive_spark.time import Time, to_time


class MergedEventSource(DerivedEventSource):
    """One event per event of any parent; same-instant events in argument order."""

    operation = "merge"

    def _receive(self, position: int, events: list[Event]) -> None:
        """Post the parent's events as this source's."""
        self._emit(DerivedEvent.run(self, events), position)

    def between(self, start: Time | datetime, end: Time | datetime) -> list[Event]:
        """Every parent's events in the range, in time then argument order."""
        start, end = to_time(start, "start"), to_time(end, "end")
        merged = [
            (derived.time.milliseconds, position, derived)
            for position, parent in enumerate(self._parents)
            for derived in DerivedEvent.run(self, fired_between(parent, start, end))
        ]
        merged.sort(key=lambda entry: entry[:2])  # stable: a parent's events keep their order
        return [derived for *_, derived in merged]


def merge(*others: EventSource, name: str | None = None) -> Callable[[EventSource], EventSource]:
    """A source firing with every event of the source and of `others`.

    Examples:
        >>> from reactive_spark import Days, operators
        >>> daily = ssc.timer(t0, None, Days(1), "daily")
        >>> rest = ssc.restServer(None, name="triggers").post("/run")
        >>> any_trigger = operators.merge(rest)(daily)
        >>> any_trigger.name
        'merge(daily, triggers)'
    """
    for position, other in enumerate(others):
        require_source(other, f"merge: others[{position}]")

    def apply(source: EventSource) -> EventSource:
        parents = [source, *others]
        label = name or Runtime.of(source.context).unique_source_name(
            f"merge({', '.join(p.name for p in parents)})"
        )
        return MergedEventSource(parents, label)

    return apply


register_operator("merge", merge)
