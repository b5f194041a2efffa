"""`join`: a pair event when two sources fire within a span of each other."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from datetime import datetime, timedelta

from reactive_spark.errors import InvalidArgumentError
from reactive_spark.events import Event, EventSource
from reactive_spark.events.past import fired_between
from reactive_spark.events.source import register_operator, require_source
from reactive_spark.runtime import Runtime
from reactive_spark.sources.derived import DerivedEventSource, JoinEvent
from reactive_spark.time import Duration, Milliseconds, Time, to_duration, to_time


class _Pairing:
    """Finds the pairs within `within` as events of the two sides arrive in time order."""

    def __init__(self, within: Duration) -> None:
        self.within = within
        self._recent: tuple[deque[Event], deque[Event]] = (deque(), deque())

    def add(self, position: int, event: Event) -> list[tuple[Event, Event]]:
        mine, theirs = self._recent[position], self._recent[1 - position]
        horizon = event.time - self.within
        for side in (mine, theirs):
            while side and side[0].time < horizon:
                side.popleft()
        mine.append(event)
        return [(event, other) if position == 0 else (other, event) for other in theirs]


class JoinedEventSource(DerivedEventSource):
    """A `JoinEvent(left, right)` for every pair of events within `within` (edges inclusive).

    Each pair fires once, when the later of the two fires, stamped with the later time.
    """

    operation = "join"

    def __init__(self, left: EventSource, right: EventSource, within: Duration, name: str):
        if left is right:
            raise InvalidArgumentError(f"join needs two different sources, got {left.name!r} twice")
        super().__init__([left, right], name)
        self.within = within
        self._pairing = _Pairing(within)

    def _event(self, left: Event, right: Event) -> JoinEvent:
        return JoinEvent(self, None, max(left.time, right.time), left, right)

    def _receive(self, position: int, events: list[Event]) -> None:
        """Post a pair for every recent event of the other side, for each event."""
        for event in events:
            for left, right in self._pairing.add(position, event):
                self._emit([self._event(left, right)])

    def held_spans(self, unseen: dict[int, list[Event]]) -> dict[int, tuple[Time, Time]]:
        """The parents' last events within `within` before the stop, to remember again.

        Up to, not at, the instant of the `unseen` ones: those pair as live events.
        """
        spans = {}
        for position, parent in enumerate(self._parents):
            if parent.resumedFrom is not None:
                until = parent.resumedFrom
                if unseen.get(position):
                    until = until - Milliseconds(1)
                spans[position] = (parent.resumedFrom - self.within, until)
        return spans

    def resume_pending(self, unseen: dict[int, list[Event]], held: dict[int, list[Event]]) -> None:
        """Remember the parents' last events within `within` again, as before the stop.

        Their pairs with each other fired before the stop; events fired from now on (missed
        ones included) pair with them as they would have. The `unseen` ones had not paired
        when the record was written: they pair now, as live events.
        """
        tagged = [(e.time, position, e) for position, events in held.items() for e in events]
        for _, position, event in sorted(tagged, key=lambda item: (item[0], item[1])):
            self._pairing.add(position, event)
        super().resume_pending(unseen, held)

    def between(self, start: Time | datetime, end: Time | datetime) -> list[Event]:
        """The pairs whose later event lies in the range, as they would have fired."""
        start, end = to_time(start, "start"), to_time(end, "end")
        left, right = self._parents
        tagged = [(e.time, 0, e) for e in fired_between(left, start - self.within, end)]
        tagged += [(e.time, 1, e) for e in fired_between(right, start - self.within, end)]
        replay = _Pairing(self.within)
        pairs: list[Event] = []
        for _, position, event in sorted(tagged, key=lambda item: (item[0], item[1])):
            for first, second in replay.add(position, event):
                pair = self._event(first, second)
                if start <= pair.time <= end:
                    pairs.append(pair)
        return pairs


def join(
    other: EventSource, within: Duration | timedelta | float, name: str | None = None
) -> Callable[[EventSource], EventSource]:
    """A source firing a pair event when the source and `other` fire within `within`.

    Examples:
        >>> from reactive_spark import Minutes, operators
        >>> uploads = ssc.fileWatcher("incoming", "uploads")
        >>> approvals = ssc.restServer(None, name="approvals").post("/approve")
        >>> both = operators.join(approvals, Minutes(10))(uploads)
        >>> both.name
        'join(uploads, approvals)'
    """
    span = to_duration(within, "within")

    def apply(source: EventSource) -> EventSource:
        require_source(other, "join: other")
        label = name or Runtime.of(source.context).unique_source_name(
            f"join({source.name}, {other.name})"
        )
        return JoinedEventSource(source, other, span, label)

    return apply


register_operator("join", join)
