"""Any RxPY observable as an event source: each emitted value fires an `ObservableEvent`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import reactivex
from reactivex import abc as rx_abc

from reactive_spark.errors import InvalidArgumentError
from reactive_spark.events import EventSource, ObservableEvent
from reactive_spark.time import Time

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext

__all__ = ["ObservableEventSource"]

log = logging.getLogger(__name__)


class ObservableEventSource(EventSource):
    """Fires `ObservableEvent(value)` for every value the observable emits.

    Events are stamped with the context's clock. Values emitted on other threads are handed to
    the event loop safely.

    Example:
        >>> # subject = reactivex.subject.Subject()
        >>> # source = ssc.rxEventSource(subject, "manual")
        >>> # subject.on_next({"reason": "backfill"})
    """

    def __init__(
        self, context: StreamingContext, observable: reactivex.Observable[Any], name: str
    ) -> None:
        if not isinstance(observable, rx_abc.ObservableBase):
            raise InvalidArgumentError(
                f"observable must be a reactivex Observable, got {observable!r}",
            )
        super().__init__(context, name)
        self._observable = observable
        self._subscription: rx_abc.DisposableBase | None = None

    def start(self) -> None:
        """Subscribe to the observable."""
        clock = self.context.clock
        self._subscription = self._observable.subscribe(
            on_next=lambda value: self.post(ObservableEvent(self, None, clock.now(), value)),
            on_error=lambda error: log.error(
                "observable of event source %r failed and fires no more events: %r",
                self.name,
                error,
            ),
            scheduler=clock.scheduler,
        )

    def stop(self) -> None:
        """Unsubscribe."""
        if self._subscription is not None:
            self._subscription.dispose()
            self._subscription = None

    def eventFromRecord(self, fields: dict[str, Any]) -> ObservableEvent:
        """The `ObservableEvent` a checkpoint recorded (a value JSON cannot hold is its repr)."""
        return ObservableEvent(
            self,
            fields["index"],
            Time(fields["time"]),
            fields.get("value"),
            fields.get("instanceId"),
        )

    def toProduct(self) -> tuple[Any, ...]:
        """`(name,)`: an observable has no other parameters that survive a restart."""
        return (self.name,)
