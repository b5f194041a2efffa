from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import reactivex
from reactivex import abc as rx_abc
from reactivex.subject import Subject

from reactive_spark._callbacks import require_callable
from reactive_spark.events import Event, EventSource
from reactive_spark.sources.derived import DerivedEvent, DerivedEventSource
from reactive_spark.time import Time, VirtualClock

log = logging.getLogger(__name__)

RxOperator = Callable[[reactivex.Observable[Any]], reactivex.Observable[Any]]


class PipedEventSource(DerivedEventSource):
    """The parent's events through RxPY operators, on the context's clock.

    An emitted Event becomes this source's event (its attributes readable through it); any
    other value is carried as `event.value`. Events are stamped when emitted.
    """

    def __init__(self, parent: EventSource, operators: tuple[RxOperator, ...], name: str):
        super().__init__([parent], name)
        self._operators = operators
        self._subject: Subject[Event] | None = None
        self._subscription: rx_abc.DisposableBase | None = None

    def _derive(self, time: Time, value: Any) -> DerivedEvent:
        if isinstance(value, Event):
            return DerivedEvent(self, None, time, value)
        return DerivedEvent(self, None, time, None, value)

    def start(self) -> None:
        """Subscribe the pipeline, scheduled on the context's clock."""
        subject: Subject[Event] = Subject()
        clock = self.context.clock
        self._subject = subject
        self._subscription = subject.pipe(*self._operators).subscribe(
            on_next=lambda value: self.post(self._derive(clock.now(), value)),
            on_error=lambda error: log.error(
                "pipe of event source %r failed and fires no more events: %r", self.name, error
            ),
            scheduler=clock.scheduler,
        )

    def stop(self) -> None:
        """Dispose of the pipeline."""
        if self._subscription is not None:
            self._subscription.dispose()
            self._subscription = None

    def receive(self, position: int, event: Event) -> None:
        """Feed the parent's event into the pipeline."""
        if self._subject is not None:
            self._subject.on_next(event)

    def between(self, start: Time, end: Time) -> list[Event]:
        """Replay the parent's events of the range through the pipeline on virtual time."""
        clock = VirtualClock(start)
        outputs: list[tuple[Time, Any]] = []
        subject: Subject[Event] = Subject()
        subject.pipe(*self._operators).subscribe(
            on_next=lambda value: outputs.append((clock.now(), value)),
            scheduler=clock.scheduler,
        )
        for event in self._parents[0].between(start, end):
            clock.scheduleAt(event.time, functools.partial(subject.on_next, event))
        clock.advanceTo(end)
        return [self._derive(time, value) for time, value in outputs if start <= time <= end]


def pipe(*operators: RxOperator, name: str | None = None) -> Callable[[EventSource], EventSource]:
    """A source firing what RxPY `operators` make of the parent's events.

    Example:
        >>> # import reactivex.operators as ops
        >>> # bursts = operators.pipe(ops.debounce(5.0))(uploads)
    """
    for position, operator in enumerate(operators):
        require_callable(operator, f"operators[{position}]", "pipe")

    def apply(source: EventSource) -> EventSource:
        return PipedEventSource(source, operators, name or f"{source.name}.pipe()")

    return apply
