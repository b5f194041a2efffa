"""`delay`: every event of the parent source fired, and stamped, a duration later."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from reactivex import abc as rx_abc

from reactive_spark.errors import QueueFullError
from reactive_spark.events import Event, EventSource
from reactive_spark.events.past import fired_between
from reactive_spark.events.source import register_operator
from reactive_spark.runtime import Runtime
from reactive_spark.sources.derived import DerivedEvent, DerivedEventSource
from reactive_spark.time import Duration, Milliseconds, Time, to_duration, to_time

log = logging.getLogger(__name__)


class DelayedEventSource(DerivedEventSource):
    """Every parent event, fired and stamped `duration` later (exact on a virtual clock).

    A parent event whose delayed time has already passed (one caught up after downtime) fires
    at once, in time order with the other caught-up events. What a stop finds not fired yet
    is never silent (see `stop`).
    """

    operation = "delay"
    retakes_last_instant = False

    def __init__(self, parent: EventSource, duration: Duration, name: str) -> None:
        super().__init__([parent], name)
        self.duration = duration
        # per parent event waiting: when it falls due, the event, its scheduled firing
        self._pending: dict[int, tuple[Time, Event, rx_abc.DisposableBase]] = {}

    def _receive(self, position: int, events: list[Event]) -> None:
        """Schedule the delayed events on the context's clock (fire those already due)."""
        due = events[0].time + self.duration  # a run's events share their instant
        if due <= self.context.clock.now():
            delayed = DerivedEvent.run(self, events, time=due)
            if self._runtime.waits_in_turn(self):  # earlier ones wait for room: go after them
                for later in delayed:
                    self._runtime.post_from_loop(later)
            else:
                self._emit(delayed)
            return
        for event in events:
            self._schedule(due, event)

    def _schedule(self, due: Time, event: Event) -> None:
        key = id(event)

        def fire() -> None:
            self._pending.pop(key, None)
            try:
                self._runtime.post_from_loop(DerivedEvent.of(self, due, event))
            except QueueFullError as refused:  # overflow "reject": a refused event is a failure
                self._runtime.report_source_error(self, "delay", refused, event)

        self._pending[key] = (due, event, self.context.clock.scheduleAt(due, fire))

    def stop(self) -> None:
        """Cancel the delayed events not fired yet, and report them dropped.

        A stop, graceful or not, does not wait for them (they are not due): listeners get
        `onEventsDropped` with reason `"stop"` and the delayed events that would have fired
        (stamped with their delayed time, each with its `parent`), as the scheduler reports
        what a stop dropped. With a checkpoint, a restart fires again what recovery re-creates
        (docs/checkpoints.md). A backfill's fall past its range: logged only.
        """
        pending = sorted(self._pending.values(), key=lambda waiting: waiting[0])
        self._pending.clear()
        for *_, scheduled in pending:
            scheduled.dispose()
        if not pending:
            return
        if self._runtime.backfilling:
            log.info("%s: %d delayed events fall past the backfill", self.name, len(pending))
            return
        log.warning("%s: the stop drops %d delayed events not due yet", self.name, len(pending))
        self._runtime.report_dropped(
            self, [DerivedEvent.of(self, due, event) for due, event, _ in pending]
        )

    def held_spans(self, unseen: dict[int, list[Event]]) -> dict[int, tuple[Time, Time]]:
        """The parent's events whose delayed events had not fired before the stop.

        Those are the parent's events up to its `resumedFrom` that fall due after this
        source's own last event (or after the zero time if it never fired); `unseen` is empty
        (a delay fires later than its parent).
        """
        parent = self._parents[0]
        if parent.resumedFrom is None:
            return {}
        fired = self.resumedFrom
        first = self.context.zeroTime - self.duration if fired is None else fired - self.duration
        return {0: (first + Milliseconds(1), parent.resumedFrom)}

    def resume_pending(self, unseen: dict[int, list[Event]], held: dict[int, list[Event]]) -> None:
        """Re-schedule the parent events whose delayed events had not fired (`held_spans`)."""
        for event in held.get(0, []):
            self._receive(0, [event])

    def between(self, start: Time | datetime, end: Time | datetime) -> list[Event]:
        """The parent's events of `[start - duration, end - duration]`, shifted."""
        start, end = to_time(start, "start"), to_time(end, "end")
        return [
            DerivedEvent.of(self, event.time + self.duration, event)
            for event in fired_between(self._parents[0], start - self.duration, end - self.duration)
        ]


def delay(
    duration: Duration | timedelta | float, name: str | None = None
) -> Callable[[EventSource], EventSource]:
    """A source firing every parent event `duration` later, stamped with the later time.

    What a stop finds not due yet is reported dropped (`onEventsDropped`, reason `"stop"`, the
    delayed events); with a checkpoint a restart fires it again: see `DelayedEventSource.stop`.

    Examples:
        >>> from reactive_spark import Hours, Minutes, operators
        >>> hourly = ssc.timer(t0, None, Hours(1), "hourly")
        >>> settled = operators.delay(Minutes(5))(hourly)
        >>> settled.name
        'hourly.delay(300000 ms)'
    """
    span = to_duration(duration, "duration")

    def apply(source: EventSource) -> EventSource:
        label = name or Runtime.of(source.context).unique_source_name(
            f"{source.name}.delay({span.milliseconds} ms)"
        )
        return DelayedEventSource(source, span, label)

    return apply


register_operator("delay", delay)
