"""The clocks a context runs on: the system clock, or a virtual clock for simulations.

A clock is also a reactivex scheduler (`clock.scheduler`), so time-based Rx operators used in
`EventSource.pipe` follow the same (possibly virtual) time.

Examples:
    >>> from datetime import UTC, datetime
    >>> from reactive_spark.time import Seconds
    >>> clock = VirtualClock(datetime(2024, 1, 1, tzinfo=UTC))
    >>> fired = []
    >>> _ = clock.scheduleAt(clock.now() + Seconds(5), lambda: fired.append(clock.now()))
    >>> clock.advanceTo(clock.now() + Seconds(10))
    >>> fired[0].isoformat()
    '2024-01-01T00:00:05Z'
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
import time as _time
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from reactivex import abc as rx_abc
from reactivex.abc.scheduler import AbsoluteTime, RelativeTime
from reactivex.scheduler.eventloop import AsyncIOScheduler
from reactivex.scheduler.periodicscheduler import PeriodicScheduler
from reactivex.scheduler.scheduleditem import ScheduledItem

from reactive_spark.errors import ContextStateError
from reactive_spark.time import Time, to_time

__all__ = ["Clock", "SystemClock", "VirtualClock"]


def _wall_seconds() -> float:
    return _time.time()


class Clock(ABC):
    """Where a context reads the time and schedules timed actions.

    The clock is also a reactivex scheduler (`clock.scheduler`), so time-based Rx operators
    used in `EventSource.pipe` follow the same (possibly virtual) time.
    """

    @abstractmethod
    def now(self) -> Time:
        """The current instant."""

    @property
    @abstractmethod
    def scheduler(self) -> rx_abc.SchedulerBase:
        """The reactivex scheduler that follows this clock."""

    @property
    def isVirtual(self) -> bool:
        """Whether time moves only when the context is advanced."""
        return False

    def scheduleAt(self, time: Time, action: Callable[[], None]) -> rx_abc.DisposableBase:
        """Run `action` (on the event loop) once the clock reaches `time`."""
        return self.scheduler.schedule_absolute(time.toDatetime(), lambda _s, _x: action())

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:  # noqa: B027
        """Bind the clock to the event loop the context runs on."""


class SystemClock(Clock):
    """Wall-clock time; timed actions run on the asyncio event loop.

    Examples:
        >>> clock = SystemClock()
        >>> clock.now().milliseconds > 0
        True
    """

    #: How early a timed action asks the loop to wake it; it then yields to the loop until it
    #: is due. asyncio waits whole milliseconds, rounded up, and some waits (9, 13, 18 ms...,
    #: whose float is a hair above the value) a millisecond more, so an action asked 1.1 ms
    #: early sometimes runs up to a millisecond late: an idle context accepted a timer's ticks
    #: p50 0.3 ms, p90 1 ms after they were due (asked 2 ms early: 0.1 and 0.13 ms). Not
    #: earlier: yielding till due holds the GIL, taken from the scheduler's worker thread, and
    #: under the paced routing load batches' lag p99 rose when asked 2 ms early.
    PRECISION = 0.0011

    def __init__(self) -> None:
        self._scheduler: AsyncIOScheduler | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._last_now = Time(0)

    def now(self) -> Time:
        """The current wall-clock instant."""
        milliseconds = _time.time_ns() // 1_000_000
        last = self._last_now
        if last.milliseconds != milliseconds:  # events in the same millisecond share one
            self._last_now = last = Time(milliseconds)
        return last

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Schedule timed actions on `loop`."""
        self._loop = loop
        self._scheduler = AsyncIOScheduler(loop)

    def scheduleAt(self, time: Time, action: Callable[[], None]) -> rx_abc.DisposableBase:
        """Run `action` on the loop at `time` or after it, usually within a millisecond."""
        loop = self._loop
        if loop is None:
            raise ContextStateError("the system clock is attached to an event loop at start()")
        return _TimedAction(loop, time.milliseconds / 1000, self.PRECISION, action)

    @property
    def scheduler(self) -> rx_abc.SchedulerBase:
        """An AsyncIOScheduler on the context's loop (available once the context started)."""
        if self._scheduler is None:
            raise ContextStateError("the system clock is attached to an event loop at start()")
        return self._scheduler


class _TimedAction(rx_abc.DisposableBase):
    """One action due at a wall-clock second, woken `precision` early, then yielding till due.

    No reference cycle: the loop's handle is dropped when it fires or is cancelled, so a
    timer ticking every few milliseconds leaves nothing for the cyclic collector, whose
    collections it would otherwise bring on (docs/architecture.md, "The host's collector").
    """

    __slots__ = ("_action", "_due", "_handle", "_loop", "_precision")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        due: float,
        precision: float,
        action: Callable[[], None],
    ) -> None:
        self._loop = loop
        self._due = due
        self._precision = precision
        self._action: Callable[[], None] | None = action
        self._handle: asyncio.Handle | None = None
        self._arm()

    def _arm(self) -> None:
        remaining = self._due - _wall_seconds()
        if remaining > self._precision:
            self._handle = self._loop.call_later(remaining - self._precision, self._check)
        else:
            self._handle = self._loop.call_soon(self._check)

    def _check(self) -> None:
        action = self._action
        if action is None:  # disposed meanwhile
            return
        if _wall_seconds() < self._due:
            self._arm()
            return
        self._action = self._handle = None
        action()

    def dispose(self) -> None:
        handle, self._handle, self._action = self._handle, None, None
        if handle is not None:
            handle.cancel()


class VirtualClock(Clock):
    """Simulated time that moves only when the context is advanced.

    `await ssc.advanceTo(t)` / `await ssc.runUntil(t)` move it, firing every event due on the
    way, in order; a year of daily timers takes as long as its Spark jobs.

    Examples:
        >>> from datetime import datetime, UTC
        >>> clock = VirtualClock(datetime(2024, 1, 1, tzinfo=UTC))
        >>> clock.now().toDatetime().year
        2024
    """

    def __init__(self, start: Time | datetime | None = None) -> None:
        origin = Time(0) if start is None else to_time(start, "start")
        self._scheduler = _VirtualScheduler(origin)

    def now(self) -> Time:
        """The simulated instant (one `Time` per instant: every event reads it)."""
        return self._scheduler.time

    @property
    def isVirtual(self) -> bool:
        """Always true: time moves only when advanced."""
        return True

    @property
    def scheduler(self) -> rx_abc.SchedulerBase:
        """The reactivex scheduler behind this clock (for time-based Rx operators)."""
        return self._scheduler

    def nextDue(self) -> Time | None:
        """The instant of the earliest pending timed action, if any."""
        due = self._scheduler.next_due()
        return None if due is None else Time.fromDatetime(due)

    def advanceTo(self, time: Time) -> None:
        """Move to `time`, running every action due at or before it (including now)."""
        self._scheduler.run_until(time)


_TState = TypeVar("_TState")


class _VirtualScheduler(PeriodicScheduler):
    """A reactivex scheduler on virtual time that tells its next due time.

    reactivex's own virtual schedulers cannot say when their next action is due (the context
    advances instant by instant, waiting for each instant's batches), and their `advance_to`
    returns at once when asked for the current instant, which would leave a timer tick that
    falls exactly on the start time unfired. Actions due at the same time run in the order they
    were scheduled.
    """

    def __init__(self, start: Time) -> None:
        super().__init__()
        #: The current instant, made once per instant (every event reads it).
        self.time = start
        self._now = start.toDatetime()
        self._lock = threading.Lock()  # guards the queue and the clock
        self._running = threading.Lock()  # one `run_until` at a time
        self._queue: list[tuple[datetime, int, ScheduledItem]] = []
        self._order = itertools.count()

    @property
    def now(self) -> datetime:
        """The current instant as a datetime."""
        return self._now

    def schedule(
        self, action: rx_abc.ScheduledAction[_TState], state: _TState | None = None
    ) -> rx_abc.DisposableBase:
        """Run `action` now (once the clock is advanced to now)."""
        return self.schedule_absolute(self._now, action, state)

    def schedule_relative(
        self,
        duetime: RelativeTime,
        action: rx_abc.ScheduledAction[_TState],
        state: _TState | None = None,
    ) -> rx_abc.DisposableBase:
        """Run `action` after `duetime` of virtual time."""
        return self.schedule_absolute(self._now + self.to_timedelta(duetime), action, state)

    def schedule_absolute(
        self,
        duetime: AbsoluteTime,
        action: rx_abc.ScheduledAction[_TState],
        state: _TState | None = None,
    ) -> rx_abc.DisposableBase:
        """Run `action` when the clock reaches `duetime`."""
        item = ScheduledItem(self, state, action, self.to_datetime(duetime))
        with self._lock:
            heapq.heappush(self._queue, (item.duetime, next(self._order), item))
        return item.disposable

    def next_due(self) -> datetime | None:
        """When the earliest action not cancelled is due, if any."""
        with self._lock:
            while self._queue and self._queue[0][2].is_cancelled():
                heapq.heappop(self._queue)
            return self._queue[0][0] if self._queue else None

    def run_until(self, until: Time) -> None:
        """Run every action due at or before `until`, moving the clock along, then to `until`."""
        last = until.toDatetime()
        with self._running:
            while True:
                with self._lock:
                    if not self._queue or self._queue[0][0] > last:
                        break
                    due, _, item = heapq.heappop(self._queue)
                    if due > self._now:
                        self._move(due)
                if not item.is_cancelled():
                    item.invoke()
            with self._lock:
                if last > self._now:
                    self._move(last)

    def _move(self, instant: datetime) -> None:
        self._now = instant
        self.time = Time.fromDatetime(instant)
