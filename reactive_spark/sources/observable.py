"""Any RxPY observable as an event source: each emitted value fires an `ObservableEvent`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import reactivex
from reactivex import abc as rx_abc

from reactive_spark.errors import InvalidArgumentError
from reactive_spark.events import EventSource, ObservableEvent

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext

__all__ = ["ObservableEventSource"]


class ObservableEventSource(EventSource):
    """Fires `ObservableEvent(value)` for every value the observable emits.

    Events are stamped with the context's clock. Values emitted on other threads are handed to
    the event loop safely.

    Examples:
        >>> import asyncio
        >>> from reactivex.subject import Subject
        >>> subject = Subject()
        >>> manual = ssc.rxEventSource(subject, "manual")
        >>> job = ssc.queueStream([], default=[1]).foreachRDD(
        ...     lambda t, rdd, event: print(event.value)
        ... ).bind(manual)
        >>> async def run():
        ...     await ssc.start()
        ...     subject.on_next({"reason": "backfill"})
        ...     await ssc.advanceTo(t0)
        ...     await ssc.stop(stopSparkContext=False)
        >>> asyncio.run(run())
        {'reason': 'backfill'}
    """

    kind = "observable"

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
        now, post = clock.now, self._runtime.post

        def on_next(value: Any) -> None:
            post(ObservableEvent(self, None, now(), value))

        self._subscription = self._observable.subscribe(
            on_next=on_next,
            on_error=lambda error: self._runtime.report_source_error(self, "observable", error),
            scheduler=clock.scheduler,
        )

    def stop(self) -> None:
        """Unsubscribe."""
        if self._subscription is not None:
            self._subscription.dispose()
            self._subscription = None

    def eventFromRecord(self, fields: dict[str, Any]) -> ObservableEvent:
        """The `ObservableEvent` a checkpoint recorded (a value JSON cannot hold is its repr)."""
        return ObservableEvent.fromRecord(self, fields)

    def toProduct(self) -> tuple[Any, ...]:
        """`(name,)`: an observable has no other parameters that survive a restart."""
        return (self.name,)
