"""Time, Duration and their conversions."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from reactive_spark import (
    Days,
    Duration,
    Hours,
    InvalidArgumentError,
    Milliseconds,
    Minutes,
    Seconds,
    Time,
    VirtualClock,
)
from reactive_spark.time import to_duration, to_time


def test_durations_compare_across_units() -> None:
    assert Minutes(1) == Seconds(60) == Milliseconds(60_000)
    assert Days(7) == Hours(168)
    assert Seconds(0.5) == Milliseconds(500)
    assert Seconds(1) == timedelta(seconds=1)
    assert hash(Minutes(1)) == hash(Seconds(60))
    assert Seconds(1) < Minutes(1)
    assert Seconds(3) // Seconds(1) == 3
    assert Seconds(3) / Seconds(2) == 1.5
    assert Seconds(3) * 2 == 2 * Seconds(3) == Seconds(6)
    assert Seconds(3).isMultipleOf(Seconds(1.5))
    assert not Seconds(3).isMultipleOf(Seconds(2))
    assert Seconds(90).toTimedelta() == timedelta(minutes=1, seconds=30)
    moment = datetime(2024, 1, 1, tzinfo=UTC)
    assert moment + Days(1) == datetime(2024, 1, 2, tzinfo=UTC)
    assert moment - Hours(1) == datetime(2023, 12, 31, 23, tzinfo=UTC)


def test_time_arithmetic_and_datetimes() -> None:
    moment = datetime(2024, 3, 1, 12, 30, tzinfo=UTC)
    time = Time.fromDatetime(moment)
    assert time.milliseconds == int(moment.timestamp() * 1000)
    assert time.toDatetime() == moment
    assert time.toDatetime().tzinfo is not None
    assert Time.fromDatetime(datetime(1970, 1, 1, tzinfo=UTC)) == Time(0)
    assert time + Days(1) - time == Days(1)
    assert time - Days(1) < time
    assert Time(2500).floor(Seconds(1)) == Time(2000)
    assert Time(2500).floor(Seconds(1), origin=Time(700)) == Time(1700)
    assert Time(-1).floor(Seconds(1)) == Time(-1000)


def test_from_datetime_names_a_value_that_is_not_a_datetime() -> None:
    """QA: `Time.fromDatetime(ssc.clock.now())` raised AttributeError ('tzinfo')."""
    with pytest.raises(InvalidArgumentError, match=r"value must be a datetime, got Time\(5 ms\) "):
        Time.fromDatetime(Time(5))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=r"value must be a datetime, got '2026-01-01'$"):
        Time.fromDatetime("2026-01-01")  # type: ignore[arg-type]


def test_time_pickles_as_its_instant_alone() -> None:
    time = Time(1_700_000_000_123)
    fresh = pickle.dumps(time)
    time.toDatetime()  # cached on the instance
    assert pickle.dumps(time) == fresh
    copied = pickle.loads(fresh)
    assert copied == time
    assert copied.toDatetime() == time.toDatetime()


def test_conversions_name_the_argument() -> None:
    assert to_time(datetime(1970, 1, 1, 0, 0, 2, tzinfo=UTC), "start") == Time(2000)
    assert to_duration(timedelta(minutes=2), "period") == Minutes(2)
    assert to_duration(1.5, "period") == Seconds(1.5)
    with pytest.raises(InvalidArgumentError, match="start must be a Time or a datetime, got 5"):
        to_time(5, "start")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="period must be positive"):
        to_duration(-1, "period")
    with pytest.raises(InvalidArgumentError, match="whole number of milliseconds"):
        to_duration(0.0001, "period")
    for sub_millisecond in (timedelta(microseconds=1500), timedelta(microseconds=500)):
        # a timedelta was cut to whole milliseconds: 1 ms, or "must be positive" for 0.5 ms
        with pytest.raises(InvalidArgumentError, match="period must be a whole number of mill"):
            to_duration(sub_millisecond, "period")
    with pytest.raises(InvalidArgumentError, match="milliseconds must be an int"):
        Duration(1.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        to_duration(True, "period")


def test_duration_units_check_the_number_they_are_given() -> None:
    """What the message shows is what was passed: not a string repeated a thousand times."""
    units = (
        (Milliseconds, "milliseconds"),
        (Seconds, "seconds"),
        (Minutes, "minutes"),
        (Hours, "hours"),
        (Days, "days"),
    )
    for unit, name in units:
        for bad in ("5", None, True, [1]):
            with pytest.raises(InvalidArgumentError) as raised:
                unit(bad)  # type: ignore[arg-type]
            assert str(raised.value) == f"{name} must be a number, got {bad!r}"
    with pytest.raises(InvalidArgumentError, match=r"seconds must be a finite number, got nan"):
        Seconds(float("nan"))
    with pytest.raises(InvalidArgumentError, match=r"days must be a finite number, got 1e\+304"):
        Days(1e304)  # finite, but not in milliseconds
    with pytest.raises(InvalidArgumentError, match="batchDuration"):
        to_duration(1e306, "batchDuration")
    with pytest.raises(
        InvalidArgumentError,
        match=r"seconds must come to a whole number of milliseconds, got 0\.0005 \(0\.5 ms\)",
    ):
        Seconds(0.0005)
    assert Seconds(2.5) == Milliseconds(2500)
    assert Days(10**400).milliseconds == 10**400 * 86_400_000  # an int has no overflow
    assert Days(0.5) == Hours(12)


def test_virtual_clock_runs_actions_in_order_including_now() -> None:
    clock = VirtualClock(Time(1000))
    fired: list[int] = []
    clock.scheduleAt(Time(3000), lambda: fired.append(3))
    clock.scheduleAt(Time(1000), lambda: fired.append(1))
    clock.scheduleAt(Time(2000), lambda: fired.append(2))
    assert clock.nextDue() == Time(1000)
    clock.advanceTo(Time(1000))
    assert fired == [1]
    clock.advanceTo(Time(2500))
    assert fired == [1, 2]
    assert clock.now() == Time(2500)
    cancelled = clock.scheduleAt(Time(2600), lambda: fired.append(99))
    cancelled.dispose()
    assert clock.nextDue() == Time(3000)
    clock.advanceTo(Time(5000))
    assert fired == [1, 2, 3]
    assert clock.nextDue() is None


def test_a_naive_datetime_is_local_time() -> None:
    """`ssc.timer(datetime.now() + timedelta(seconds=1), ...)` read the local time as UTC:
    in Berlin the timer started an hour late, silently. A naive datetime is local time, as
    Python's `timestamp()` and PySpark's `slice` (`time.mktime`) read it, the hour a clock
    change skips included (a child process on Berlin's rules, as a POSIX zone, which needs no
    zone files)."""
    code = (
        "import time\n"
        "from datetime import datetime\n"
        "from reactive_spark import Time\n"
        "for moment in (datetime(2024, 6, 1, 12), datetime(2024, 3, 31, 2, 30)):\n"
        "    print(Time.fromDatetime(moment).milliseconds,"
        " int(time.mktime(moment.timetuple())) * 1000)"
    )
    env = {**os.environ, "TZ": "CET-1CEST,M3.5.0,M10.5.0/3"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    summer_noon, skipped = [
        [int(ms) for ms in line.split()] for line in done.stdout.split("\n")[:2]
    ]
    assert summer_noon == [Time.fromDatetime(datetime(2024, 6, 1, 10, tzinfo=UTC)).milliseconds] * 2
    assert skipped[0] == skipped[1]  # 02:30 does not exist that night: read as mktime does


def test_a_naive_datetime_local_time_cannot_place_is_refused() -> None:
    """Read as local time, the first naive datetime has no instant (the zone's offset takes
    it out of range): Python's ValueError escaped; it is refused, naming the value."""
    with pytest.raises(InvalidArgumentError, match="out of range as local time"):
        Time.fromDatetime(datetime.min)
