"""Instants and durations.

`Time` is an instant in integer milliseconds since the Unix epoch and `Duration` a span in
milliseconds. Both convert to and from `datetime` / `timedelta`, and every public argument that
takes one accepts either form. The clocks a context runs on are in `reactive_spark.clock`.

Examples:
    >>> from reactive_spark.time import Minutes, Seconds, Time
    >>> Minutes(1) == Seconds(60)
    True
    >>> (Time(1_000) + Seconds(2)).milliseconds
    3000
"""

from __future__ import annotations

import math
import time as _time
from datetime import UTC, datetime, timedelta
from functools import total_ordering
from typing import Any

from reactive_spark.errors import InvalidArgumentError

__all__ = [
    "Days",
    "Duration",
    "Hours",
    "Milliseconds",
    "Minutes",
    "Seconds",
    "Time",
    "to_duration",
    "to_time",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def now_ms() -> float:
    """Wall-clock epoch milliseconds (as a float), the unit of every timing a listener sees.

    Examples:
        >>> now_ms() > 1.7e12
        True
    """
    return _time.time() * 1000


@total_ordering
class Duration:
    """A span of time in integer milliseconds; equal across units.

    Examples:
        >>> Duration(1500) == Milliseconds(1500)
        True
        >>> Seconds(3) // Seconds(1)
        3
    """

    __slots__ = ("milliseconds",)
    #: The span in milliseconds (do not assign: durations are values).
    milliseconds: int

    def __init__(self, milliseconds: int) -> None:
        if isinstance(milliseconds, bool) or not isinstance(milliseconds, int):
            raise InvalidArgumentError(
                f"milliseconds must be an int, got {milliseconds!r}",
            )
        self.milliseconds = milliseconds

    def toTimedelta(self) -> timedelta:
        """The span as a `timedelta`."""
        return timedelta(milliseconds=self.milliseconds)

    def totalSeconds(self) -> float:
        """The span in (fractional) seconds."""
        return self.milliseconds / 1000

    def isMultipleOf(self, other: Duration) -> bool:
        """Whether this span is a whole multiple of `other` (which must be positive)."""
        return other.milliseconds > 0 and self.milliseconds % other.milliseconds == 0

    def __add__(self, other: Duration) -> Duration:
        if not isinstance(other, Duration):
            return NotImplemented
        return Duration(self.milliseconds + other.milliseconds)

    def __radd__(self, other: datetime) -> datetime:
        if not isinstance(other, datetime):
            return NotImplemented
        return other + self.toTimedelta()

    def __sub__(self, other: Duration) -> Duration:
        if not isinstance(other, Duration):
            return NotImplemented
        return Duration(self.milliseconds - other.milliseconds)

    def __rsub__(self, other: datetime) -> datetime:
        if not isinstance(other, datetime):
            return NotImplemented
        return other - self.toTimedelta()

    def __mul__(self, factor: int) -> Duration:
        if isinstance(factor, bool) or not isinstance(factor, int):
            return NotImplemented
        return Duration(self.milliseconds * factor)

    __rmul__ = __mul__

    def __floordiv__(self, other: Duration) -> int:
        if not isinstance(other, Duration):
            return NotImplemented
        return self.milliseconds // other.milliseconds

    def __truediv__(self, other: Duration) -> float:
        if not isinstance(other, Duration):
            return NotImplemented
        return self.milliseconds / other.milliseconds

    def __mod__(self, other: Duration) -> Duration:
        if not isinstance(other, Duration):
            return NotImplemented
        return Duration(self.milliseconds % other.milliseconds)

    def __neg__(self) -> Duration:
        return Duration(-self.milliseconds)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Duration):
            return self.milliseconds == other.milliseconds
        if isinstance(other, timedelta):
            return self.milliseconds == _timedelta_ms(other)
        return NotImplemented

    def __lt__(self, other: Duration) -> bool:
        if not isinstance(other, Duration):
            return NotImplemented
        return self.milliseconds < other.milliseconds

    def __hash__(self) -> int:
        return hash(("Duration", self.milliseconds))

    def __bool__(self) -> bool:
        return self.milliseconds != 0

    def __repr__(self) -> str:
        return f"Duration({self.milliseconds} ms)"


def Milliseconds(n: int) -> Duration:
    """A duration of `n` milliseconds.

    Examples:
        >>> Milliseconds(250).milliseconds
        250
    """
    return Duration(_whole(n, 1, "milliseconds"))


def Seconds(n: float) -> Duration:
    """A duration of `n` seconds (fractions allowed down to a millisecond).

    Examples:
        >>> Seconds(0.5).milliseconds
        500
    """
    return Duration(_whole(n, 1000, "seconds"))


def Minutes(n: float) -> Duration:
    """A duration of `n` minutes.

    Examples:
        >>> Minutes(2) == Seconds(120)
        True
    """
    return Duration(_whole(n, 60_000, "minutes"))


def Hours(n: float) -> Duration:
    """A duration of `n` hours.

    Examples:
        >>> Hours(1) == Minutes(60)
        True
    """
    return Duration(_whole(n, 3_600_000, "hours"))


def Days(n: float) -> Duration:
    """A duration of `n` days.

    Examples:
        >>> Days(7) == Hours(168)
        True
    """
    return Duration(_whole(n, 86_400_000, "days"))


def _whole(n: float, per_unit: int, unit: str) -> int:
    """`n` units of `per_unit` milliseconds each, as whole milliseconds; `unit` names `n`."""
    if isinstance(n, bool) or not isinstance(n, int | float):
        raise InvalidArgumentError(f"{unit} must be a number, got {n!r}")
    if isinstance(n, float) and not math.isfinite(n):
        raise InvalidArgumentError(f"{unit} must be a finite number, got {n!r}")
    ms = n * per_unit
    if isinstance(ms, float) and not math.isfinite(ms):
        raise InvalidArgumentError(f"{unit} must be a finite number, got {n!r} ({ms!r} ms)")
    rounded = round(ms)
    if abs(rounded - ms) > 1e-6:
        raise InvalidArgumentError(
            f"{unit} must come to a whole number of milliseconds, got {n!r} ({ms!r} ms)",
        )
    return int(rounded)


def _timedelta_ms(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


@total_ordering
class Time:
    """An instant in integer milliseconds since the Unix epoch (UTC).

    Examples:
        >>> from datetime import datetime, UTC
        >>> Time.fromDatetime(datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)).milliseconds
        1000
        >>> Time(5000) - Time(2000) == Seconds(3)
        True
    """

    __slots__ = ("_datetime", "milliseconds")
    #: Milliseconds since the Unix epoch (do not assign: instants are values).
    milliseconds: int

    def __init__(self, milliseconds: int) -> None:
        if isinstance(milliseconds, bool) or not isinstance(milliseconds, int):
            raise InvalidArgumentError(f"milliseconds must be an int, got {milliseconds!r}")
        self.milliseconds = milliseconds
        self._datetime: datetime | None = None  # made once: many events share one Time

    @classmethod
    def fromDatetime(cls, value: datetime) -> Time:
        """The instant of a datetime; a naive one is local time, as Python reads it.

        As `datetime.timestamp()` and PySpark's `slice` take it: a timer started at
        `datetime.now() + timedelta(seconds=1)` fires a second later, wherever it runs.

        Raises:
            InvalidArgumentError: `value` is not a datetime, or a naive one within a day of
                the ends of datetime's range (local time could fall outside it).

        Examples:
            >>> Time.fromDatetime(datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC))
            Time(1000 ms)
        """
        if not isinstance(value, datetime):
            already = " (a Time already: use it as it is)" if isinstance(value, Time) else ""
            raise InvalidArgumentError(f"value must be a datetime, got {value!r}{already}")
        return _from_datetime(value, "value")

    def toDatetime(self) -> datetime:
        """The instant as a timezone-aware UTC datetime."""
        if self._datetime is None:
            self._datetime = _EPOCH + timedelta(milliseconds=self.milliseconds)
        return self._datetime

    def isoformat(self) -> str:
        """The instant in readable UTC, e.g. `2024-01-01T00:00:00Z` (milliseconds if any).

        Examples:
            >>> Time(1_500).isoformat()
            '1970-01-01T00:00:01.500Z'
        """
        moment = self.toDatetime()
        text = moment.strftime("%Y-%m-%dT%H:%M:%S")
        if self.milliseconds % 1000:
            text += f".{self.milliseconds % 1000:03d}"
        return text + "Z"

    def floor(self, period: Duration, origin: Time | None = None) -> Time:
        """The latest instant `origin + k * period` (k an integer) at or before this one."""
        base = 0 if origin is None else origin.milliseconds
        return Time(base + (self.milliseconds - base) // period.milliseconds * period.milliseconds)

    def __add__(self, other: Duration) -> Time:
        if not isinstance(other, Duration):
            return NotImplemented
        return Time(self.milliseconds + other.milliseconds)

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, Time):
            return Duration(self.milliseconds - other.milliseconds)
        if isinstance(other, Duration):
            return Time(self.milliseconds - other.milliseconds)
        return NotImplemented

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Time):
            return self.milliseconds == other.milliseconds
        return NotImplemented

    def __lt__(self, other: Time) -> bool:
        if not isinstance(other, Time):
            return NotImplemented
        return self.milliseconds < other.milliseconds

    def __hash__(self) -> int:
        return hash(("Time", self.milliseconds))

    def __reduce__(self) -> tuple[type[Time], tuple[int]]:
        return (Time, (self.milliseconds,))  # the instant alone, not its cached datetime

    def __repr__(self) -> str:
        return f"Time({self.milliseconds} ms)"

    def __str__(self) -> str:
        return f"{self.milliseconds} ms"


def to_time(value: Time | datetime, name: str) -> Time:
    """Convert a public time argument, naming it in the error.

    Examples:
        >>> to_time(Time(3), "start")
        Time(3 ms)
    """
    if isinstance(value, Time):
        return value
    if isinstance(value, datetime):
        return _from_datetime(value, name)
    raise InvalidArgumentError(f"{name} must be a Time or a datetime, got {value!r}")


def _from_datetime(value: datetime, name: str) -> Time:
    """The instant of `value`; a naive one is local time, as `timestamp()` reads it.

    So an hour a clock change skips reads as `time.mktime` (PySpark's `slice`) does, and a
    repeated one as its first occurrence (`fold=0`).
    """
    if value.tzinfo is None:
        try:
            whole = datetime.fromtimestamp(value.replace(microsecond=0).timestamp(), UTC)
        except (OverflowError, OSError, ValueError):  # within a day of datetime's own range
            raise InvalidArgumentError(
                f"{name} {value!r} is out of range as local time: give it a tzinfo"
            ) from None
        value = whole.replace(microsecond=value.microsecond)
    return Time(_timedelta_ms(value - _EPOCH))


def to_duration(
    value: Duration | timedelta | float,
    name: str,
    *,
    positive: bool = True,
) -> Duration:
    """Convert a public duration argument (a number means seconds), naming it in the error.

    Examples:
        >>> to_duration(1.5, "batchDuration")
        Duration(1500 ms)
    """
    if isinstance(value, Duration):
        result = value
    elif isinstance(value, timedelta):
        if value.microseconds % 1000:
            raise InvalidArgumentError(
                f"{name} must be a whole number of milliseconds, got {value!r}",
            )
        result = Duration(_timedelta_ms(value))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise InvalidArgumentError(f"{name} must be a finite number of seconds, got {value!r}")
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
