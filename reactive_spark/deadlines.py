"""Deadlines: a source, or a bound output, expected every period within a grace.

`source.expect(every, within)` says: in every period `[start, start + every)` (starts at
`origin + k * every`, the Unix epoch by default, so `Days(1)` periods start at midnight UTC)
the source fires an event whose time lies in `[start, start + within)`. `stream.expect(...)`
says the same of a bound stream's job succeeding. When a period's deadline `start + within`
passes without it, the listeners hear `onDeadlineMissed` at most once.

An event after its period's deadline meets no period: it is late for its own, and early for
none. With a checkpoint, a period whose deadline passed while the process was down is reported
at the restart, at most once; after a long downtime the first misses of an expectation are
told one by one, the rest in one report that counts them (`DeadlineMissed.periodsMissed`).
docs/operations.md (Deadlines) tells the details.

Examples:
    >>> from reactive_spark.time import Days, Hours, Time
    >>> daily = Expectation.of(Days(1), Hours(2))
    >>> daily.deadline(Time(Days(3).milliseconds)).isoformat()  # of the period starting then
    '1970-01-04T02:00:00Z'
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from reactive_spark.errors import ContextStateError, InvalidArgumentError
from reactive_spark.failures import Failure, SourceErrorInfo
from reactive_spark.listener import DeadlineMissed, StreamingListener
from reactive_spark.runtime import Runtime
from reactive_spark.time import Duration, Time, to_duration, to_time

if TYPE_CHECKING:
    from reactivex import abc as rx_abc

    from reactive_spark.clock import Clock
    from reactive_spark.context import StreamingContext
    from reactive_spark.events import Event
    from reactive_spark.jobs import JobInfo

__all__ = ["Expectation"]

log = logging.getLogger(__name__)

#: What a tracked thing is: an event source, or a stream whose jobs must succeed.
SOURCE, OUTPUT = "source", "output"
#: Misses of one expectation told one by one in a check; more (a long downtime: a month of
#: `Seconds(1)` periods) are counted in one warning instead of flooding the loop.
MAX_TOLD = 10
#: How many periods ahead of the clock's an event may meet (one stamped further in the future
#: meets nothing), so that the periods met stay few in every logged state.
AHEAD = 4


class Record(Protocol):
    """Keeps an expectation's state (`Checkpoint.deadline`); `durable` syncs it to disk."""

    def __call__(self, name: str, state: dict[str, Any], durable: bool = False) -> None: ...


@dataclass(frozen=True)
class Expectation:
    """Something expected in every period `[origin + k * every, ... + every)`, by `+ within`.

    Examples:
        >>> from reactive_spark.time import Days, Hours
        >>> Expectation.of(Days(1), Hours(2)).within
        Duration(7200000 ms)
    """

    every: Duration
    within: Duration
    origin: Time

    @staticmethod
    def of(
        every: Duration | timedelta | float,
        within: Duration | timedelta | float | None = None,
        origin: Time | datetime | None = None,
    ) -> Expectation:
        """Check the arguments of `expect` (errors name them) and make the expectation.

        `within` defaults to `every` (an event some time in each period); it may not exceed
        it, so that each period is decided before the next one begins.
        """
        period = to_duration(every, "every")
        grace = period if within is None else to_duration(within, "within")
        if period < grace:
            raise InvalidArgumentError(
                f"within must not be longer than every ({period!r}), got {grace!r}"
            )
        start = Time(0) if origin is None else to_time(origin, "origin")
        return Expectation(period, grace, start)

    def deadline(self, start: Time) -> Time:
        """The deadline of the period starting at `start`."""
        return start + self.within


@dataclass
class _Tracker:
    """The periods of one expectation: the first undecided one, and those met already."""

    kind: str
    name: str
    expectation: Expectation
    next: Time = field(default_factory=lambda: Time(0))
    met: set[int] = field(default_factory=set)
    restored: bool = False
    check: rx_abc.DisposableBase | None = None

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.name}"

    def state(self) -> dict[str, Any]:
        return {
            "expect": self.product(),
            "next": self.next.milliseconds,
            "met": sorted(self.met),
        }

    def period_of(self, time: Time) -> Time | None:
        """The start of the period whose window holds `time`, or None if it is past the grace.

        Examples:
            >>> from reactive_spark.time import Days, Hours, Time
            >>> daily = _Tracker("source", "daily", Expectation.of(Days(1), Hours(2)))
            >>> daily.period_of(Time(Days(3).milliseconds + Hours(1).milliseconds)).isoformat()
            '1970-01-04T00:00:00Z'
            >>> daily.period_of(Time(Days(3).milliseconds + Hours(3).milliseconds)) is None
            True
        """
        start = time.floor(self.expectation.every, self.expectation.origin)
        return start if time < self.expectation.deadline(start) else None

    def first_period(self, at: Time) -> Time:
        """The first period starting at or after `at`."""
        start = at.floor(self.expectation.every, self.expectation.origin)
        return start if start == at else start + self.expectation.every

    def product(self) -> list[int]:
        """What identifies the expectation in a checkpoint (milliseconds)."""
        expect = self.expectation
        return [expect.every.milliseconds, expect.within.milliseconds, expect.origin.milliseconds]


class DeadlineWatch(StreamingListener):
    """Keeps the expected periods of one context's sources and streams (see module docs).

    `tell(callback, argument)` reaches the streaming listeners; `record(key, state)` (the
    checkpoint's, if any) keeps each expectation's state; `settle()` accepts the events posted
    so far, so that a check after a restart sees the events caught up.

    Examples:
        >>> from reactive_spark.clock import VirtualClock
        >>> from reactive_spark.time import Days, Hours
        >>> told = []
        >>> watch = DeadlineWatch(VirtualClock(), lambda name, info: told.append(info))
        >>> watch.add("source", "daily", Expectation.of(Days(1), Hours(2)))
        >>> watch.begin(Time(0), {})
        >>> watch.schedule(Time(0), settle=lambda then: then())
        >>> watch.clock.advanceTo(Time(Days(1).milliseconds))
        >>> told[0].name, told[0].deadline.isoformat()
        ('daily', '1970-01-01T02:00:00+00:00')
    """

    def __init__(
        self,
        clock: Clock,
        tell: Callable[[str, Any], None],
        record: Record | None = None,
        report: Callable[[Failure], None] | None = None,
    ) -> None:
        self.clock = clock
        self._tell = tell
        self._record = record
        self._report = report
        self._trackers: dict[str, _Tracker] = {}
        self._lock = threading.Lock()  # events arrive on the loop, jobs in worker threads
        self._started_at = Time(0)
        self._settle: Callable[[Callable[[], None]], None] = lambda then: then()
        self._stopped = False

    def add(self, kind: str, name: str, expectation: Expectation) -> None:
        """Watch `expectation` of the source (`kind="source"`) or stream (`"output"`) `name`."""
        tracker = _Tracker(kind, name, expectation)
        self._trackers[tracker.key] = tracker

    def __bool__(self) -> bool:
        return bool(self._trackers)

    def set_record(self, record: Record) -> None:
        """Keep each expectation's state with `record(key, state, durable)` from now on."""
        self._record = record

    def set_report(self, report: Callable[[Failure], None]) -> None:
        """Report a failure to keep a state with `report(failure)` (the context's failures).

        Without one, the failure is logged and told to the listeners (`onSourceError`).
        """
        self._report = report

    def begin(self, started_at: Time, states: dict[str, dict[str, Any]]) -> None:
        """Start the periods at `started_at`, or where a checkpoint's `states` left them.

        A state is used only if its expectation is unchanged; others start afresh.
        """
        self._started_at = started_at
        for key, tracker in self._trackers.items():
            state = states.get(key)
            if state is not None and state.get("expect") == tracker.product():
                tracker.next = Time(state["next"])
                tracker.met = set(state["met"])
                tracker.restored = True
            else:
                tracker.next = tracker.first_period(started_at)

    def states(self) -> dict[str, dict[str, Any]]:
        """Every expectation's state, by key (what a checkpoint keeps)."""
        with self._lock:
            return {key: tracker.state() for key, tracker in self._trackers.items()}

    def schedule(self, started_at: Time, settle: Callable[[Callable[[], None]], None]) -> None:
        """Check each expectation at its next deadline (on the loop, once the context runs).

        A deadline that passed while the process was down is checked once `settle(then)` calls
        `then`: when the events missed during the downtime were accepted, and count.
        """
        self._started_at = started_at
        self._settle = settle
        for tracker in self._trackers.values():
            self._arm(tracker)

    def stop(self) -> None:
        """Check nothing more."""
        self._stopped = True
        for tracker in self._trackers.values():
            if tracker.check is not None:
                tracker.check.dispose()
                tracker.check = None

    def _arm(self, tracker: _Tracker) -> None:
        if self._stopped:
            return
        deadline = tracker.expectation.deadline(tracker.next)
        tracker.check = self.clock.scheduleAt(deadline, lambda: self._check(tracker))

    # -- what meets an expectation --------------------------------------------------------
    def onEventFired(self, event: Event) -> None:
        """An event of a watched source meets the period its time lies in."""
        tracker = self._trackers.get(f"{SOURCE}:{event.source.name}")
        if tracker is not None:
            self._meet(tracker, tracker.period_of(event.time))

    def onJobCompleted(self, job: JobInfo) -> None:
        """A watched stream's job that succeeded before its period's deadline meets it."""
        if job.status != "succeeded":
            return
        tracker = self._trackers.get(f"{OUTPUT}:{job.streamName}")
        if tracker is None:
            return
        period = tracker.period_of(job.event.time)
        if period is not None and self.clock.now() < tracker.expectation.deadline(period):
            self._meet(tracker, period)

    def _meet(self, tracker: _Tracker, period: Time | None) -> None:
        if period is None:
            return
        with self._lock:
            if period < tracker.next or period.milliseconds in tracker.met:
                return  # decided already, or met already
            expectation = tracker.expectation
            if (
                self.clock.now().floor(expectation.every, expectation.origin)
                + (expectation.every * AHEAD)
                <= period
            ):
                return  # stamped too far in the future to be kept
            tracker.met.add(period.milliseconds)
            # logged under the lock: a later state is never logged before an earlier one
            failure = self._keep(tracker, durable=False)
        if failure is not None:
            self._fail(tracker, failure)

    # -- checking --------------------------------------------------------------------------
    def _check(self, tracker: _Tracker) -> None:
        """Decide every period of `tracker` whose deadline has come (on the loop)."""
        tracker.check = None
        if self._stopped:
            return
        if tracker.restored:  # the events caught up after the downtime count: decide after
            tracker.restored = False
            try:
                self._settle(lambda: self._check(tracker))
            except Exception as error:
                self._fail(tracker, error)
                self._arm(tracker)
            return
        try:
            now = self.clock.now()
            with self._lock:
                told = self._decide(tracker, now)
                # durable before told: a crash now never tells twice
                failure = self._keep(tracker, durable=bool(told))
            for info in told:
                log.warning("reactive-spark: %s", info.describe())
                self._tell("onDeadlineMissed", info)
            if failure is not None:
                self._fail(tracker, failure)
        except Exception as error:  # a listener's own failures are caught by the bus
            self._fail(tracker, error)
        finally:
            self._arm(tracker)

    def _decide(self, tracker: _Tracker, now: Time) -> list[DeadlineMissed]:
        """Decide the periods whose deadline is at or before `now` (under the lock).

        Returns the first `MAX_TOLD` misses one by one, and the rest, if any, in one report
        counting them (`periodsMissed`). Runs in the number of periods told and met, not in the
        periods decided.
        """
        expectation = tracker.expectation
        first = tracker.next
        if now < expectation.deadline(first):
            return []
        due = (now - expectation.deadline(first)) // expectation.every + 1
        end = first + expectation.every * due  # the first period left undecided
        met = {start for start in tracker.met if start < end.milliseconds}
        told: list[DeadlineMissed] = []
        start = first
        while len(told) < MAX_TOLD and start < end:
            if start.milliseconds not in met:
                told.append(self._missed(tracker, start, expectation.deadline(start)))
            start = start + expectation.every
        last_missed = end - expectation.every
        while last_missed.milliseconds in met and first < last_missed:
            last_missed = last_missed - expectation.every
        tracker.met -= met
        tracker.next = end
        more = due - len(met) - len(told)
        if more:
            while start.milliseconds in met:  # the report starts at the first period missed
                start = start + expectation.every
            told.append(self._missed(tracker, start, expectation.deadline(last_missed), more))
        return told

    def _missed(
        self, tracker: _Tracker, start: Time, deadline: Time, periods: int = 1
    ) -> DeadlineMissed:
        """The report of `periods` missed from the period starting at `start` to `deadline`."""
        return DeadlineMissed(
            tracker.kind,
            tracker.name,
            start.toDatetime(),
            deadline.toDatetime(),
            duringDowntime=deadline < self._started_at,
            periodsMissed=periods,
        )

    def _keep(self, tracker: _Tracker, durable: bool) -> Exception | None:
        """Log `tracker`'s state (under the lock); the error, if it could not be."""
        if self._record is None:
            return None
        try:
            self._record(tracker.key, tracker.state(), durable=durable)
        except Exception as error:
            return error
        return None

    def _fail(self, tracker: _Tracker, error: BaseException) -> None:
        """Report that keeping `tracker`'s periods failed (the context's failures, if wired)."""
        failure = SourceErrorInfo(tracker.name, "expect", error)
        if self._report is not None:
            self._report(failure)
            return
        log.error("reactive-spark: %s", failure.describe(), exc_info=error)
        self._tell("onSourceError", failure)


def watch_expectations(
    ssc: StreamingContext, states: dict[str, dict[str, Any]], record: Record | None
) -> DeadlineWatch | None:
    """The watch over what `expect` asked of `ssc`'s sources and streams, listening, or None.

    It starts where a checkpoint's `states` left it, and keeps each state with `record` (the
    checkpoint's), if any.
    """
    runtime = Runtime.of(ssc)
    watch = DeadlineWatch(ssc.clock, runtime.tell_listeners, report=runtime.report)
    for source in runtime.sources:
        if source.expectation is not None:
            watch.add(SOURCE, source.name, source.expectation)
    for stream in ssc.graph.streams:
        if stream.expectation is None:
            continue
        if not (stream.isOutput or stream.boundSources):
            raise ContextStateError(
                f"{stream.name} is expected to succeed (expect) but runs no job: "
                "bind it to a source, or expect its output operation instead",
            )
        watch.add(OUTPUT, stream.name, stream.expectation)
    if not watch:
        return None
    watch.begin(ssc.startedAt, states)
    if record is not None:
        watch.set_record(record)
        for key, state in watch.states().items():
            record(key, state)  # a restart goes on from here
    ssc.addStreamingListener(watch)
    return watch
