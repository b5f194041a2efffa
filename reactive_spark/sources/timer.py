"""Timers: events at `start + k * period` while `<= end`, on the context's clock."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from reactivex import abc as rx_abc

from reactive_spark.errors import InvalidArgumentError, QueueFullError
from reactive_spark.events import Event, EventSource, TimerEvent
from reactive_spark.events.past import caught_up
from reactive_spark.time import Duration, Milliseconds, Time, to_duration, to_time

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext

__all__ = ["TimerEventSource"]

log = logging.getLogger(__name__)


class TimerEventSource(EventSource):
    """Fires a `TimerEvent` at `start + k * period` for k = 0, 1, ... while `<= end`.

    Ticks before the context's zero time are not fired (they are caught up only after
    downtime, from a checkpoint). `end=None` means forever. Create it with `ssc.timer(...)`.

    Examples:
        >>> from reactive_spark import Days
        >>> daily = ssc.timer(t0, t0 + Days(7), Days(1), "daily")
        >>> len(daily.between(t0, t0 + Days(30)))
        8
    """

    def __init__(
        self,
        context: StreamingContext,
        start: Time | datetime,
        end: Time | datetime | None,
        period: Duration | timedelta | float,
        name: str,
    ) -> None:
        self.startTime = to_time(start, "start")
        self.endTime = None if end is None else to_time(end, "end")
        self.period = to_duration(period, "period")
        if self.endTime is not None and self.endTime < self.startTime:
            raise InvalidArgumentError(
                f"end must not be before start, got start={self.startTime.isoformat()}, "
                f"end={self.endTime.isoformat()}",
            )
        super().__init__(context, name)
        self._pending: rx_abc.DisposableBase | None = None
        self._next_tick: Time | None = None
        self._stopped = False
        # ticks not fired while the queue was full (overflow "block"): the first and the last
        self._missed: tuple[int, int] | None = None

    kind = "timer"

    def nextFireTime(self) -> Time | None:
        """The next tick's time, while the timer runs."""
        return None if self._stopped else self._next_tick

    def tickAt(self, k: int) -> Time:
        """The nominal time of tick `k`."""
        return self.startTime + self.period * k

    def _first_tick_from(self, time: Time) -> int:
        if time <= self.startTime:
            return 0
        ahead: int = (self.startTime - time) // self.period
        return -ahead

    def start(self) -> None:
        """Schedule the first tick at or after the context's zero time.

        A timer new to a context restarted from a checkpoint starts from the restart instead.
        """
        self._stopped = False
        self._schedule(self._first_tick_from(self.context.startedAt))

    def restart(self) -> None:
        """Resume with the first tick from the restart on (missed ticks come from `between`).

        Ticks due while the restart rebuilt the windows fire at once, in order.
        """
        self._stopped = False
        now = self.context.startedAt
        if self.resumedFrom is not None and self.resumedFrom >= now:
            now = self.resumedFrom + Milliseconds(1)
        self._schedule(self._first_tick_from(now))

    def stop(self) -> None:
        """Cancel the pending tick; report the ticks missed while the queue was full dropped.

        Those never ran (overflow `"block"`); one event stands for all of them (`standsFor`).
        With a checkpoint, a restart fires them again, as after downtime.
        """
        self._stopped = True
        if self._pending is not None:
            self._pending.dispose()
            self._pending = None
        self._runtime.release(self)
        if self._missed is not None:
            first, last = self._missed
            self._missed = None
            missed = TimerEvent(self, None, self.tickAt(first))
            missed.standsFor = last - first + 1
            log.warning(
                "%s: the stop drops %d ticks missed while its queue was full",
                self.name,
                missed.standsFor,
            )
            self._runtime.report_dropped(self, [missed])

    def _schedule(self, k: int) -> None:
        due = self.tickAt(k)
        if self._stopped or (self.endTime is not None and due > self.endTime):
            self._pending = self._next_tick = None
            self._hold_what_follows()
            return
        self._next_tick = due
        self._pending = self.context.clock.scheduleAt(due, lambda: self._tick(k))
        self._hold_what_follows()

    def _hold_what_follows(self) -> None:
        """Have what must follow its ticks wait for the next one: the first missed, else due.

        What must follow is a roll-up reading its batches, say. On the system clock each tick
        is a timed action of its own, so another source's event of the same instant (a weekly
        tick) may reach the loop first; on a virtual clock the actions of an instant fire
        together, and nothing need wait.
        """
        if self.context.clock.isVirtual:
            return
        first = self.tickAt(self._missed[0]) if self._missed is not None else self._next_tick
        if first is None:
            self._runtime.release(self)
        else:
            self._runtime.hold_from(self, first)

    def _tick(self, k: int) -> None:
        if self._stopped or not self._runtime.accepting:  # a stop began: no more ticks
            return
        self._schedule(k + 1)
        if self.overflowPolicy == "block" and (
            self._missed is not None or not self._runtime.has_room(self)
        ):
            self._wait_for_room(k)
            return
        try:
            self.post(TimerEvent(self, None, self.tickAt(k)))
        except QueueFullError as refused:  # overflow "reject": a refused tick is a failure
            self._runtime.report_source_error(self, "tick", refused)

    def _wait_for_room(self, k: int) -> None:
        """The queue is full: remember tick `k` as missed, and catch up once there is room.

        The producer waits without blocking the loop: the ticks missed meanwhile follow the
        timer's catch-up policy, as after downtime. Meanwhile what must follow its ticks (a
        roll-up reading its batches) waits at or after the first missed one.
        """
        if self._missed is None:
            self._missed = (k, k)
            self._hold_what_follows()
            self._runtime.when_room(self, self._fire_missed)
        else:
            self._missed = (self._missed[0], k)

    def _fire_missed(self) -> None:
        """There is room again: fire the missed ticks as the catch-up policy says."""
        if self._stopped or self._missed is None or not self._runtime.accepting:
            return
        first, last = self._missed
        self._missed = None
        missed: list[Event] = [
            TimerEvent(self, None, self.tickAt(k)) for k in range(first, last + 1)
        ]
        missed = caught_up(self, missed)
        for position, event in enumerate(missed):
            if not self._runtime.has_room(self):  # full again: the rest wait for room
                self._missed = (first + position, last)
                self._hold_what_follows()
                self._runtime.when_room(self, self._fire_missed)
                return
            self.post(event)
        self._hold_what_follows()  # what it missed waits in order now: on to the next tick

    def between(self, start: Time | datetime, end: Time | datetime) -> list[TimerEvent]:  # type: ignore[override]
        """The ticks in `[start, end]` (indexes are assigned when they are posted)."""
        start, end = to_time(start, "start"), to_time(end, "end")
        last = end if self.endTime is None else min(end, self.endTime)
        k = self._first_tick_from(start)
        ticks = []
        while self.tickAt(k) <= last:
            ticks.append(TimerEvent(self, None, self.tickAt(k)))
            k += 1
        return ticks

    def numberPast(self, events: list[Event], start: Time | datetime) -> None:
        """Give each tick its number from the timer's start: the index a live run gives it.

        A live run that ran from the timer's first tick numbers its ticks so; one started
        later numbers them from its first tick (docs/operations.md).

        Examples:
            >>> from reactive_spark import Days
            >>> daily = ssc.timer(t0, None, Days(1), "daily")
            >>> ticks = daily.between(t0 + Days(3), t0 + Days(4))
            >>> daily.numberPast(ticks, t0 + Days(3))
            >>> [tick.index for tick in ticks]
            [3, 4]
        """
        for event in events:
            event.index = self._first_tick_from(event.time)  # the tick at that very time

    def eventFromRecord(self, fields: dict[str, Any]) -> TimerEvent:
        """The `TimerEvent` a checkpoint recorded."""
        return TimerEvent(self, fields["index"], Time(fields["time"]), fields.get("instanceId"))

    def toProduct(self) -> tuple[Any, ...]:
        """`(start, end, period, name)` in milliseconds."""
        end = None if self.endTime is None else self.endTime.milliseconds
        return (self.startTime.milliseconds, end, self.period.milliseconds, self.name)
