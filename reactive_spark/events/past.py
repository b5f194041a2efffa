"""A source's past: what it missed (catch-up), what stands for several events, what it fired.

`fired_between` is what a derived source's parents fired over a span (a restart's rebuild, a
backfill's plan); while a backfill plans it is what the backfill fires, numbered as it fires it
(`backfilled_between`). See docs/architecture.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reactive_spark.errors import InvalidArgumentError
from reactive_spark.runtime import Runtime

if TYPE_CHECKING:
    from reactive_spark.events.event import Event
    from reactive_spark.events.source import EventSource
    from reactive_spark.time import Time

__all__ = ["backfilled_between", "caught_up", "coalesced", "fired_between"]


def coalesced(source: EventSource, events: list[Event]) -> Event:
    """`source.coalesce(events)`, standing for as many events as `events` stood for.

    How every coalescing stand-in is made: a catch-up live or after a restart, and the
    overflow policy `"coalesce"`.
    """
    stands_for = sum(event.standsFor for event in events)
    stand_in = source.coalesce(events)
    stand_in.standsFor = stands_for
    return stand_in


def caught_up(source: EventSource, missed: list[Event]) -> list[Event]:
    """What `source` fires of the events it `missed`, in order, as its `catchUp` says.

    The one place the policy is applied: a timer catching up live, and any source after a
    restart.
    """
    policy = source.catchUp
    if policy == "skip" or not missed:
        return []
    if policy == "latest":
        return missed[-1:]
    if policy == "coalesce":
        return [coalesced(source, missed)]
    return missed


def fired_between(source: EventSource, start: Time, end: Time) -> list[Event]:
    """`source.between(start, end)`, its event at `resumedFrom` numbered as it was fired.

    After a restart the checkpoint knows the index of the last event a source fired before it
    (`resumedIndex`): when `between` gives one event at that instant, it gets that index, so
    what an operator derives from it again sees the same `index`. Several events there are
    left as they are (which of them had fired is not recorded), as are the others (None for
    events not fired yet: indexes are assigned as events are accepted).

    While a backfill plans (`Runtime.backfill_from`), it is what the backfill fires instead
    (`backfilled_between`).

    Examples:
        >>> from reactive_spark import Hours, Time
        >>> hourly = ssc.timer(t0, None, Hours(1), "hourly")
        >>> two = Time.fromDatetime(t0) + Hours(2)
        >>> hourly.resume_indexes(2, two)
        >>> [tick.index for tick in fired_between(hourly, two - Hours(1), two)]
        [None, 2]
    """
    backfill_from = Runtime.of(source.context).backfill_from
    if backfill_from is not None:
        return backfilled_between(source, backfill_from, start, end)
    events = source.between(start, end)
    index, at = source.resumedIndex, source.resumedFrom
    if index is not None and at is not None:
        last = [event for event in events if event.time == at]
        if len(last) == 1 and last[0].index is None:
            last[0].index = index
    return events


def backfilled_between(source: EventSource, first: Time, start: Time, end: Time) -> list[Event]:
    """What a backfill from `first` fires of `source` in `[start, end]`, numbered as it fires it.

    Only what it fires: `source`'s events of `[first, end]`, and a derived source's only as
    derived from what its parents fire (through `fired_between`), so an operator's function
    sees in the plan the events it sees in the run, each with its index (`numberPast`; an
    index that is not an int >= 0 is an error naming the source), never an event of a parent
    before `first` (a `delay`'s or a `join`'s look back).

    Examples:
        >>> from reactive_spark import Days, Time
        >>> daily = ssc.timer(t0, None, Days(1), "daily")
        >>> first = Time.fromDatetime(t0) + Days(3)
        >>> [tick.index for tick in backfilled_between(daily, first, first - Days(2), first)]
        [3]
    """
    events = source.between(first, end)
    source.numberPast(events, first)
    _require_numbered(source, events)
    return [event for event in events if event.time >= start]


def _require_numbered(source: EventSource, events: list[Event]) -> None:
    """Raise naming `source` unless `numberPast` gave each of `events` an int >= 0."""
    for event in events:
        index = event.index
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise InvalidArgumentError(
                f"source {source.name!r}: numberPast must give each event an int >= 0 as its "
                f"index, got {index!r} for its event at {event.time.isoformat()}"
            )
