"""Where events wait to be accepted: under an order key, in the order they were posted.

An order key is `(time in ms, the source's lineage rank, tiebreak)` (`ordering.py` accepts
the smallest first); the events waiting under one key are a `Waiting`.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reactive_spark.events import Event

__all__ = ["MISSED", "OrderKey", "Waiting"]

#: Where an event waits to be accepted: (time in ms, its source's lineage rank, tiebreak).
OrderKey = tuple[int, int, int]

#: The tiebreak of events missed during downtime: before what is posted live at their instant.
MISSED = -1


class Waiting:
    """The events waiting under one order key, oldest first: `events[start:]`.

    A burst is taken in slices: taking moves `start` on (and lets go of what it took) instead
    of shifting the list each time.
    """

    __slots__ = ("events", "start")

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.start = 0

    def __len__(self) -> int:
        return len(self.events) - self.start

    def take(self, count: int) -> list[Event]:
        """The first `count` waiting events (all, if fewer wait), no longer waiting."""
        events, start = self.events, self.start
        end = start + count
        if end >= len(events):
            run = events[start:] if start else events[:]
            events.clear()
            self.start = 0
            return run
        run = events[start:end]
        events[start:end] = itertools.repeat(None, count)  # type: ignore[arg-type] # let go
        self.start = end
        return run

    def put_back(self, run: list[Event]) -> None:
        """Wait again with `run`, taken last, in front of the rest."""
        start = self.start - len(run)
        if start >= 0:
            self.events[start : self.start] = run
            self.start = start
        else:
            self.events[: self.start] = run
            self.start = 0
