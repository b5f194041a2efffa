"""What derived sources had not derived from their parents' last recorded events (a restart).

A checkpoint records how far every source fired with each batch, as it stood when the batch's
event was accepted (docs/checkpoints.md). A derived source that fires at its parent's instant
(`map`, `filter`, `merge`, `join`, an event-passing `pipe`) has its event of that instant
accepted after the parent's. So when the last record is that of the parent's event (or of a
bound source's after it at that instant), the derived event is not in it: a crash lost it
(a bound `map` of a bound timer lost its batch of that instant), and a `delay` behind it
resumed without it. After a restart such a source takes again its parents' events of the
record's last instant when it had fired nothing at that instant and the parent had
(`DerivedEventSource.resume_pending`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from reactive_spark.errors import InvalidArgumentError
from reactive_spark.events.past import fired_between
from reactive_spark.sources.derived import DerivedEventSource
from reactive_spark.time import Time

if TYPE_CHECKING:
    from reactive_spark.events import Event, EventSource

__all__ = ["held_by_source", "unseen_by_source", "unseen_events"]

#: Per parent position, the parent's events a derived source had not derived from.
Unseen = dict[int, list["Event"]]
#: Per parent position, the parent's past events a derived source held at the stop.
Held = dict[int, list["Event"]]


def unseen_events(
    source: DerivedEventSource,
    progress: dict[str, list[int]],
    fired_at: Callable[[EventSource, Time], list[Event]] | None = None,
) -> Unseen:
    """The parents' events of the last recorded instant that `source` had not derived from.

    `progress` is what every source known to the checkpoint had fired (`[time, index]` of its
    last event). `fired_at(parent, instant)` gives a parent's events of that instant (default:
    rebuilt with `between`, numbered as fired: `fired_between`); may raise what the parents'
    functions raise.

    Examples:
        >>> from reactive_spark import Hours, Time
        >>> hourly = ssc.timer(t0, None, Hours(1), "hourly")
        >>> hours = hourly.map(lambda event: event.index, name="hours")
        >>> two = Time.fromDatetime(t0) + Hours(2)
        >>> hourly.resume_indexes(2, two)  # what a restart does first
        >>> [tick.index for tick in unseen_events(hours, {"hourly": [two.milliseconds, 2]})[0]]
        [2]
        >>> fired = {"hourly": [two.milliseconds, 2], "hours": [two.milliseconds, 2]}
        >>> unseen_events(hours, fired)  # it had fired at that instant
        {}
    """
    if not progress or not source.retakes_last_instant:
        return {}
    instant = max(time for time, _ in progress.values())
    own = progress.get(source.name)
    if own is not None and own[0] >= instant:
        return {}
    events_at = fired_at or _fired_at
    unseen: Unseen = {}
    for position, parent in enumerate(source.parents):
        fired = progress.get(parent.name)
        if fired is not None and fired[0] == instant:
            unseen[position] = events_at(parent, Time(instant))
    return unseen


def unseen_by_source(
    sources: list[DerivedEventSource], progress: dict[str, list[int]]
) -> tuple[dict[DerivedEventSource, Unseen], list[tuple[EventSource, Exception]]]:
    """`unseen_events` of every source in `sources` (may block: `between` may walk files).

    Each parent's events are rebuilt once. A parent whose rebuilding raised gives nothing;
    it is returned with what it raised, to be reported as its failure.
    """
    rebuilt: dict[EventSource, list[Event]] = {}
    failed: list[tuple[EventSource, Exception]] = []

    def fired_at(parent: EventSource, instant: Time) -> list[Event]:
        if parent not in rebuilt:
            try:
                rebuilt[parent] = _fired_at(parent, instant)
            except Exception as exc:
                rebuilt[parent] = []
                failed.append((parent, exc))
        return rebuilt[parent]

    found = {source: unseen_events(source, progress, fired_at) for source in sources}
    return {source: unseen for source, unseen in found.items() if unseen}, failed


def held_by_source(
    sources: list[DerivedEventSource], unseen: dict[DerivedEventSource, Unseen]
) -> tuple[dict[DerivedEventSource, Held], list[tuple[EventSource, Exception]]]:
    """The parents' events each source held at the stop (`held_spans`), rebuilt.

    With `between`, which may block (it may walk files); `unseen` is `unseen_by_source`'s.
    A parent whose rebuilding raised gives nothing, and a source whose `held_spans` raised
    holds nothing; each is returned with what it raised, to be reported as its failure.
    """
    held: dict[DerivedEventSource, Held] = {}
    failed: list[tuple[EventSource, Exception]] = []
    for source in sources:
        parents = source.parents
        try:
            spans = source.held_spans(unseen.get(source, {}))
            if not set(spans) <= set(range(len(parents))):
                raise InvalidArgumentError(
                    f"held_spans of {source.name!r} gave parent positions {sorted(spans)}; "
                    f"it has {len(parents)} parents"
                )
        except Exception as exc:
            failed.append((source, exc))
            continue
        for position, (start, end) in spans.items():
            try:
                events = fired_between(parents[position], start, end)
            except Exception as exc:
                events = []
                failed.append((parents[position], exc))
            held.setdefault(source, {})[position] = events
    return held, failed


def _fired_at(parent: EventSource, instant: Time) -> list[Event]:
    """`parent`'s event at `instant`, numbered as it was fired; none if it fired several there.

    Which of several had fired when the record was written is not recorded: handing them all
    could derive events the parent never fired, or number them wrong. A `pipe` gives none:
    what it fired depends on what its RxPY operators held, which its `between` cannot replay.
    """
    if isinstance(parent, DerivedEventSource) and parent.holds_parent_events:
        return []  # a `pipe`'s `between` replays the instant through a fresh pipeline
    events = [event for event in fired_between(parent, instant, instant) if event.time == instant]
    return events if len(events) == 1 else []
