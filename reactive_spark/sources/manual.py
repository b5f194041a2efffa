"""Manual triggers: a source that fires when told to, from code or the web console's button."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reactive_spark.events import Event, EventSource, ObservableEvent

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext

__all__ = ["ManualEventSource"]


class ManualEventSource(EventSource):
    """Fires an `ObservableEvent(value)` each time `trigger(value)` is called (any thread).

    For jobs run on demand: from your code, or with the fire button of the web console
    (`POST /api/sources/{name}/fire`, whose JSON body is the value).

    Examples:
        >>> rerun = ssc.manualSource("rerun")
        >>> job = ssc.queueStream([], default=[1]).count().pprint().bind(rerun)
        >>> # later, while the context runs: rerun.trigger({"day": "2024-01-01"})
    """

    kind = "manual"
    defaultOverflow = "reject"  # a caller can be told at once: it triggered too often

    def __init__(self, context: StreamingContext, name: str) -> None:
        super().__init__(context, name)

    def trigger(self, value: Any = None) -> Event:
        """Fire an event carrying `value`, stamped now; returns it (numbered once accepted)."""
        event = self.event(value)
        self.post(event)
        return event

    def event(self, value: Any = None) -> ObservableEvent:
        """The event `trigger(value)` would post now, not yet posted."""
        return ObservableEvent(self, None, self.context.clock.now(), value)

    def start(self) -> None:
        """Nothing to start: it fires when triggered."""

    def stop(self) -> None:
        """Nothing to stop."""

    def eventFromRecord(self, fields: dict[str, Any]) -> ObservableEvent:
        """The `ObservableEvent` a checkpoint recorded."""
        return ObservableEvent.fromRecord(self, fields)

    def toProduct(self) -> tuple[Any, ...]:
        """`(name,)`."""
        return (self.name,)
