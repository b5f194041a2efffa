"""A source's queue: the bound on its waiting events, its overflow policy, what waits.

`EventOrder` (`ordering.py`) keeps one per source and decides by it what is accepted and what
an event past the bound meets (docs/architecture.md, backpressure).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reactive_spark.events import EventSource
    from reactive_spark.waiting import OrderKey

__all__ = ["DEFAULT_MAX_QUEUED", "SourceQueue"]

#: The bound on a source's waiting events unless the context or the source says otherwise.
DEFAULT_MAX_QUEUED = 10_000


@dataclass(eq=False)
class SourceQueue:
    """What waits of one source's events, its bound and its overflow policy.

    Each counter has one writer: `pending`, `accepted` and `missed` the loop, `processed` the
    worker, `in_transit` (events posted from other threads, on their way to the loop) the lock.
    """

    source: EventSource
    bound: int
    policy: str
    pending: int = 0
    in_transit: int = 0
    accepted: int = 0
    processed: int = 0
    #: Events that wait their turn to be accepted: missed during downtime
    #: (`EventOrder.catch_up`), or posted on the loop past the bound (`post_in_turn`). Not in
    #: `depth` (they are posted only as room frees), but the queue is full to the source's
    #: producers while any wait, and the sources feeding it count them (`room`).
    missed: int = 0
    #: The bound queues an accepted event of this source feeds (its own, if it is bound).
    feeds: tuple[SourceQueue, ...] = ()
    #: The sources that wait behind this one when it cannot be accepted from.
    holds: frozenset[Any] = frozenset()
    #: Keys this source's events wait under (a heap); keys accepted since leave its front as
    #: new ones come, so it holds what waits and at most a few more.
    keys: list[OrderKey] = field(default_factory=list)
    #: Whether events on their way from other threads count against the bound (see `depth`).
    counts_in_transit: bool = field(init=False)

    def __post_init__(self) -> None:
        self.counts_in_transit = self.policy in ("block", "reject")

    @property
    def depth(self) -> int:
        """This source's events waiting: posted, or accepted and not processed yet.

        Events on their way from another thread count when they were admitted within the bound
        (`block`, `reject`); under the other policies one arriving past the bound replaces or
        is replaced (their producers keep at most `bound` on the way).
        """
        waiting = self.pending + self.accepted - self.processed
        return waiting + self.in_transit if self.counts_in_transit else waiting

    @property
    def full(self) -> bool:
        """Whether a new event is past the bound, or must wait behind missed events to catch up.

        `EventOrder.post` tests the same inline, as it runs for every event posted on the loop.
        """
        return self.missed > 0 or self.depth >= self.bound

    def room(self) -> int | None:
        """How many of this source's waiting events may be accepted now (None: any)."""
        room = None
        for fed in self.feeds:
            if fed is self:  # its own accepted events, not yet processed (a slot is kept for
                # one waiting event to merge or drop, so that one never goes past the bound)
                keep = 1 if self.policy in ("coalesce", "drop-oldest") and self.bound > 1 else 0
                left = self.bound - keep - (self.accepted - self.processed)
            else:  # what waits in turn to be posted to it counts (`EventOrder.post_in_turn`)
                left = fed.bound - fed.depth - fed.missed
            room = left if room is None else min(room, left)
        return None if room is None else max(0, room)
