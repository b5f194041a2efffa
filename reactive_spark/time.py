"""Instants, durations and the clocks a context runs on.

`Time` is an instant in integer milliseconds since the Unix epoch and `Duration` a span in
milliseconds. Both convert to and from `datetime` / `timedelta`, and every public argument that
takes one accepts either form.

Example:
    >>> from reactive_spark.time import Minutes, Seconds, Time
    >>> Minutes(1) == Seconds(60)
    True
    >>> (Time(1_000) + Seconds(2)).milliseconds
    3000
"""

from __future__ import annotations

import asyncio
import threading
import time as _time
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import total_ordering
from typing import Any

from reactivex import abc as rx_abc
from reactivex.disposable import Disposable
from reactivex.scheduler import HistoricalScheduler
from reactivex.scheduler.eventloop import AsyncIOScheduler

from reactive_spark.errors import InvalidArgumentError

__all__ = [
    "Clock",
    "Days",
    "Duration",
    "Hours",
    "Milliseconds",
    "Minutes",
    "Seconds",
    "SystemClock",
    "Time",
    "VirtualClock",
    "to_duration",
    "to_time",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@total_ordering
class Duration:
    """A span of time in integer milliseconds; equal across units.

    Example:
        >>> Duration(1500) == Milliseconds(1500)
        True
        >>> Seconds(3) // Seconds(1)
        3
    """

    __slots__ = ("_ms",)

    def __init__(self, milliseconds: int) -> None:
        if isinstance(milliseconds, bool) or not isinstance(milliseconds, int):
            raise InvalidArgumentError(
                f"milliseconds must be an int, got {milliseconds!r}",
            )
        self._ms = milliseconds

    @property
    def milliseconds(self) -> int:
        """The span in milliseconds."""
        return self._ms

    def toTimedelta(self) -> timedelta:
        """The span as a `timedelta`."""
        return timedelta(milliseconds=self._ms)

    def totalSeconds(self) -> float:
        """The span in (fractional) seconds."""
        return self._ms / 1000

    def isMultipleOf(self, other: Duration) -> bool:
        """Whether this span is a whole multiple of `other` (which must be positive)."""
        return other._ms > 0 and self._ms % other._ms == 0

    def __add__(self, other: Duration) -> Duration:
        if not isinstance(other, Duration):
            return NotImplemented
        return Duration(self._ms + other._ms)

    def __radd__(self, other: datetime) -> datetime:
        if not isinstance(other, datetime):
            return NotImplemented
        return other + self.toTimedelta()

    def __sub__(self, other: Duration) -> Duration:
        if not isinstance(other, Duration):
            return NotImplemented
        return Duration(self._ms - other._ms)

    def __rsub__(self, other: datetime) -> datetime:
        if not isinstance(other, datetime):
            return NotImplemented
        return other - self.toTimedelta()

    def __mul__(self, factor: int) -> Duration:
        if isinstance(factor, bool) or not isinstance(factor, int):
            return NotImplemented
        return Duration(self._ms * factor)

    __rmul__ = __mul__

    def __floordiv__(self, other: Duration) -> int:
        if not isinstance(other, Duration):
            return NotImplemented
        return self._ms // other._ms

    def __truediv__(self, other: Duration) -> float:
        if not isinstance(other, Duration):
            return NotImplemented
        return self._ms / other._ms

    def __mod__(self, other: Duration) -> Duration:
        if not isinstance(other, Duration):
            return NotImplemented
        return Duration(self._ms % other._ms)

    def __neg__(self) -> Duration:
        return Duration(-self._ms)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Duration):
            return self._ms == other._ms
        if isinstance(other, timedelta):
            return self._ms == _timedelta_ms(other)
        return NotImplemented

    def __lt__(self, other: Duration) -> bool:
        if not isinstance(other, Duration):
            return NotImplemented
        return self._ms < other._ms

    def __hash__(self) -> int:
        return hash(("Duration", self._ms))

    def __bool__(self) -> bool:
        return self._ms != 0

    def __repr__(self) -> str:
        return f"Duration({self._ms} ms)"


def Milliseconds(n: int) -> Duration:
    """A duration of `n` milliseconds.

    Example:
        >>> Milliseconds(250).milliseconds
        250
    """
    return Duration(_whole(n * 1, "milliseconds"))


def Seconds(n: float) -> Duration:
    """A duration of `n` seconds (fractions allowed down to a millisecond).

    Example:
        >>> Seconds(0.5).milliseconds
        500
    """
    return Duration(_whole(n * 1000, "seconds"))


def Minutes(n: float) -> Duration:
    """A duration of `n` minutes.

    Example:
        >>> Minutes(2) == Seconds(120)
        True
    """
    return Duration(_whole(n * 60_000, "minutes"))


def Hours(n: float) -> Duration:
    """A duration of `n` hours.

    Example:
        >>> Hours(1) == Minutes(60)
        True
    """
    return Duration(_whole(n * 3_600_000, "hours"))


def Days(n: float) -> Duration:
    """A duration of `n` days.

    Example:
        >>> Days(7) == Hours(168)
        True
    """
    return Duration(_whole(n * 86_400_000, "days"))


def _whole(ms: float, unit: str) -> int:
    if isinstance(ms, bool) or not isinstance(ms, int | float):
        raise InvalidArgumentError(f"{unit} must be a number, got {ms!r}")
    rounded = round(ms)
    if abs(rounded - ms) > 1e-6:
        raise InvalidArgumentError(
            f"{unit} must be a whole number of milliseconds, got {ms!r} ms",
        )
    return int(rounded)


def _wall_seconds() -> float:
    return _time.time()


def _timedelta_ms(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


@total_ordering
class Time:
    """An instant in integer milliseconds since the Unix epoch (UTC).

    Example:
        >>> from datetime import datetime, UTC
        >>> Time.fromDatetime(datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)).milliseconds
        1000
        >>> Time(5000) - Time(2000) == Seconds(3)
        True
    """

    __slots__ = ("_ms",)

    def __init__(self, milliseconds: int) -> None:
        if isinstance(milliseconds, bool) or not isinstance(milliseconds, int):
            raise InvalidArgumentError(f"milliseconds must be an int, got {milliseconds!r}")
        self._ms = milliseconds

    @classmethod
    def fromDatetime(cls, value: datetime) -> Time:
        """The instant of a datetime; naive datetimes are taken as UTC."""
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return cls(_timedelta_ms(value - _EPOCH))

    @property
    def milliseconds(self) -> int:
        """Milliseconds since the Unix epoch."""
        return self._ms

    def toDatetime(self) -> datetime:
        """The instant as a timezone-aware UTC datetime."""
        return _EPOCH + timedelta(milliseconds=self._ms)

    def floor(self, period: Duration, origin: Time | None = None) -> Time:
        """The latest instant `origin + k * period` (k an integer) at or before this one."""
        base = 0 if origin is None else origin._ms
        return Time(base + (self._ms - base) // period.milliseconds * period.milliseconds)

    def __add__(self, other: Duration) -> Time:
        if not isinstance(other, Duration):
            return NotImplemented
        return Time(self._ms + other.milliseconds)

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, Time):
            return Duration(self._ms - other._ms)
        if isinstance(other, Duration):
            return Time(self._ms - other.milliseconds)
        return NotImplemented

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Time):
            return self._ms == other._ms
        return NotImplemented

    def __lt__(self, other: Time) -> bool:
        if not isinstance(other, Time):
            return NotImplemented
        return self._ms < other._ms

    def __hash__(self) -> int:
        return hash(("Time", self._ms))

    def __repr__(self) -> str:
        return f"Time({self._ms} ms)"

    def __str__(self) -> str:
        return f"{self._ms} ms"


def to_time(value: Time | datetime, name: str) -> Time:
    """Convert a public time argument, naming it in the error.

    Example:
        >>> to_time(Time(3), "start")
        Time(3 ms)
    """
    if isinstance(value, Time):
        return value
    if isinstance(value, datetime):
        return Time.fromDatetime(value)
    raise InvalidArgumentError(f"{name} must be a Time or a datetime, got {value!r}")


def to_duration(
    value: Duration | timedelta | float,
    name: str,
    *,
    positive: bool = True,
) -> Duration:
    """Convert a public duration argument (a number means seconds), naming it in the error.

    Example:
        >>> to_duration(1.5, "batchDuration")
        Duration(1500 ms)
    """
    if isinstance(value, Duration):
        result = value
    elif isinstance(value, timedelta):
        result = Duration(_timedelta_ms(value))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        try:
            result = Seconds(value)
        except InvalidArgumentError:
            raise InvalidArgumentError(
                f"{name} must be a whole number of milliseconds, got {value!r} seconds",
            ) from None
    else:
        raise InvalidArgumentError(
            f"{name} must be a Duration, a timedelta or a number of seconds, got {value!r}",
        )
    if positive and result.milliseconds <= 0:
        raise InvalidArgumentError(f"{name} must be positive, got {result!r}")
    return result


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

    Example:
        >>> clock = SystemClock()
        >>> clock.now().milliseconds > 0
        True
    """

    #: asyncio's selector rounds its timeout up to whole milliseconds, so a timed action is
    #: woken this much early and yields to the loop until it is due.
    PRECISION = 0.002

    def __init__(self) -> None:
        self._scheduler: AsyncIOScheduler | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def now(self) -> Time:
        """The current wall-clock instant."""
        return Time(_time.time_ns() // 1_000_000)

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Schedule timed actions on `loop`."""
        self._loop = loop
        self._scheduler = AsyncIOScheduler(loop)

    def scheduleAt(self, time: Time, action: Callable[[], None]) -> rx_abc.DisposableBase:
        """Run `action` on the loop at `time`, within a fraction of a millisecond."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("the system clock is attached to an event loop at start()")
        due = time.milliseconds / 1000
        handle: asyncio.Handle | None = None

        def arm() -> None:
            nonlocal handle
            remaining = due - _wall_seconds()
            if remaining > self.PRECISION:
                handle = loop.call_later(remaining - self.PRECISION, check)
            else:
                handle = loop.call_soon(check)

        def check() -> None:
            nonlocal handle
            if _wall_seconds() >= due:
                handle = None
                action()
            else:
                arm()

        def cancel() -> None:
            if handle is not None:
                handle.cancel()

        arm()
        return Disposable(cancel)

    @property
    def scheduler(self) -> rx_abc.SchedulerBase:
        """An AsyncIOScheduler on the context's loop (available once the context started)."""
        if self._scheduler is None:
            raise RuntimeError("the system clock is attached to an event loop at start()")
        return self._scheduler


class VirtualClock(Clock):
    """Simulated time that moves only when the context is advanced.

    `await ssc.advanceTo(t)` / `await ssc.runUntil(t)` move it, firing every event due on the
    way, in order; a year of daily timers takes as long as its Spark jobs.

    Example:
        >>> from datetime import datetime, UTC
        >>> clock = VirtualClock(datetime(2024, 1, 1, tzinfo=UTC))
        >>> clock.now().toDatetime().year
        2024
    """

    def __init__(self, start: Time | datetime | None = None) -> None:
        origin = Time(0) if start is None else to_time(start, "start")
        self._scheduler = _VirtualScheduler(origin.toDatetime())

    def now(self) -> Time:
        """The simulated instant."""
        return self._scheduler.now_time()

    @property
    def isVirtual(self) -> bool:
        """Always true: time moves only when advanced."""
        return True

    @property
    def scheduler(self) -> rx_abc.SchedulerBase:
        """The HistoricalScheduler behind this clock."""
        return self._scheduler

    def nextDue(self) -> Time | None:
        """The instant of the earliest pending timed action, if any."""
        due = self._scheduler.next_due()
        return None if due is None else Time.fromDatetime(due)

    def advanceTo(self, time: Time) -> None:
        """Move to `time`, running every action due at or before it (including now)."""
        self._scheduler.run_until(time.toDatetime())


class _VirtualScheduler(HistoricalScheduler):
    """A HistoricalScheduler that can peek at its queue and also runs actions due *now*.

    reactivex's own `advance_to` returns at once when asked for the current instant, which would
    leave a timer tick that falls exactly on the start time unfired.
    """

    def __init__(self, start: datetime) -> None:
        super().__init__(start)
        self._run_lock = threading.Lock()
        self._now_cache: tuple[Any, Time] = (None, Time(0))

    def now_time(self) -> Time:
        """`now` as a Time, converted once per instant (events read it often)."""
        clock, time = self._now_cache
        if clock is not self._clock:
            clock = self._clock
            time = Time.fromDatetime(self.to_datetime(clock))
            self._now_cache = (clock, time)
        return time

    def next_due(self) -> datetime | None:
        with self._lock:
            while self._queue and self._queue.peek().is_cancelled():
                self._queue.dequeue()
            return self._queue.peek().duetime if self._queue else None

    def run_until(self, until: datetime) -> None:
        with self._run_lock:
            while True:
                with self._lock:
                    if not self._queue or self._queue.peek().duetime > until:
                        break
                    item = self._queue.dequeue()
                    if item.duetime > self.now:
                        self._clock = item.duetime
                if not item.is_cancelled():
                    item.invoke()
            with self._lock:
                if until > self.now:
                    self._clock = until
