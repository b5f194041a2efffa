"""`pipe`: what RxPY operators make of the parent source's events, on the context's clock."""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime
from typing import Any

import reactivex
from reactivex import abc as rx_abc
from reactivex.subject import Subject

from reactive_spark._callbacks import require_callable
from reactive_spark.clock import VirtualClock
from reactive_spark.events import Event, EventSource
from reactive_spark.events.past import fired_between
from reactive_spark.events.source import register_operator
from reactive_spark.runtime import Runtime
from reactive_spark.sources.derived import DerivedEvent, DerivedEventSource
from reactive_spark.time import Time, to_time

RxOperator = Callable[[reactivex.Observable[Any]], reactivex.Observable[Any]]


class PipedEventSource(DerivedEventSource):
    """The parent's events through RxPY operators, on the context's clock.

    An emitted Event becomes this source's event (its attributes readable through it); any
    other value is carried as `event.value`. Events are stamped when emitted.
    """

    operation = "pipe"
    takes_runs = False  # its events are stamped when the RxPY operators emit them
    holds_parent_events = True

    def __init__(self, parent: EventSource, operators: tuple[RxOperator, ...], name: str):
        super().__init__([parent], name)
        self._operators = operators
        self._subject: Subject[Event] | None = None
        self._subscription: rx_abc.DisposableBase | None = None
        self._unseen: list[Event] = []  # what a restart hands it, fed once it subscribes

    def _derive(self, time: Time, value: Any) -> DerivedEvent:
        if isinstance(value, Event):
            return DerivedEvent.of(self, time, value)
        return DerivedEvent.of(self, time, None, value)

    def start(self) -> None:
        """Subscribe the pipeline, scheduled on the context's clock."""
        subject: Subject[Event] = Subject()
        clock = self.context.clock
        self._subject = subject
        self._subscription = subject.pipe(*self._operators).subscribe(
            on_next=lambda value: self._runtime.post_from_loop(self._derive(clock.now(), value)),
            on_error=self._failed,
            scheduler=clock.scheduler,
        )
        unseen, self._unseen = self._unseen, []
        self._receive(0, unseen)

    def _failed(self, error: Exception) -> None:
        """The pipeline errored: report it; this source fires no more events until restarted."""
        self._runtime.report_source_error(self, "pipe", error)

    def stop(self) -> None:
        """Dispose of the pipeline."""
        if self._subscription is not None:
            self._subscription.dispose()
            self._subscription = None

    def _receive(self, position: int, events: list[Event]) -> None:
        """Feed the parent's events into the pipeline."""
        if self._subject is not None:
            for event in events:
                self._subject.on_next(event)

    def resume_pending(self, unseen: dict[int, list[Event]], held: dict[int, list[Event]]) -> None:
        """Keep what the restart hands it for `start`: the pipeline subscribes only then."""
        self._unseen = unseen.get(0, [])

    def between(self, start: Time | datetime, end: Time | datetime) -> list[Event]:
        """Replay the parent's events of the range through the pipeline on virtual time."""
        start, end = to_time(start, "start"), to_time(end, "end")
        clock = VirtualClock(start)
        outputs: list[tuple[Time, Any]] = []
        subject: Subject[Event] = Subject()
        subject.pipe(*self._operators).subscribe(
            on_next=lambda value: outputs.append((clock.now(), value)),
            scheduler=clock.scheduler,
        )
        for event in fired_between(self._parents[0], start, end):
            clock.scheduleAt(event.time, functools.partial(subject.on_next, event))
        clock.advanceTo(end)
        return [self._derive(time, value) for time, value in outputs if start <= time <= end]


def pipe(*operators: RxOperator, name: str | None = None) -> Callable[[EventSource], EventSource]:
    """A source firing what RxPY `operators` make of the parent's events.

    Examples:
        >>> import reactivex.operators as ops
        >>> from reactive_spark import operators
        >>> uploads = ssc.fileWatcher("incoming", "uploads")
        >>> quiet = operators.pipe(ops.debounce(5.0), name="quiet")(uploads)
    """
    for position, operator in enumerate(operators):
        require_callable(operator, f"operators[{position}]", "pipe")

    def apply(source: EventSource) -> EventSource:
        label = name or Runtime.of(source.context).unique_source_name(f"{source.name}.pipe()")
        return PipedEventSource(source, operators, label)

    return apply


register_operator("pipe", pipe)
