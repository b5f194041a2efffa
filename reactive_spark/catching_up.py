"""Events that wait in turn: those missed during downtime, and a blocked producer's on the loop.

After a restart, the events sources missed (`catch_up`) are handed over all at once but posted
one instant of each source at a time: the next waits under its order key, not counted against
the bound, and the one after it is posted when it is accepted. So they are accepted in order
as room frees, never past the bound, and nothing on the loop waits for them. The library's own
producers on the loop (`post_in_turn`: `delay`, `pipe`, a file watcher) wait the same way
under `block`.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from reactive_spark.events.past import coalesced
from reactive_spark.waiting import MISSED

if TYPE_CHECKING:
    from reactive_spark.events import Event, EventSource
    from reactive_spark.source_queue import SourceQueue
    from reactive_spark.waiting import OrderKey, Waiting

__all__ = ["CatchingUp"]

log = logging.getLogger(__name__)


class CatchingUp:
    """How `EventOrder` posts events in turn (a mixin of `EventOrder`; see the module docs)."""

    if TYPE_CHECKING:
        _queues: dict[EventSource, SourceQueue]
        _posts_open: bool
        _closed: bool

        def post(self, event: Event) -> None:
            """Queue `event` from any thread (`EventOrder.post`)."""

        def on_loop(self) -> bool:
            """Whether the caller runs on the loop's thread."""

        def _waiting(self, key: OrderKey, queue: SourceQueue | None = None) -> Waiting: ...

        def _dropped(self, queue: SourceQueue, reason: str, events: list[Event]) -> None: ...

    def __init__(self) -> None:
        # per catching-up source, its missed events not posted yet (see `catch_up`)
        self._missed: dict[SourceQueue, deque[Event]] = {}
        self._caught_up_callbacks: list[Callable[[], None]] = []  # see `when_caught_up`

    def catch_up(self, missed: Iterable[Event]) -> None:
        """Post the events missed during downtime, each source's in the order given (on the loop).

        They are accepted as live events are: by time, then lineage rank, whatever their
        number. Under `block` and `reject` each source's are posted one instant at a time as
        room frees (the recovery is a producer that waits; it cannot be refused): the next
        waits in order, not counted against the bound, and the source counts as full until the
        last is accepted, so what it fires meanwhile goes after them. Under the other policies
        they are posted at once, and the policy meets them as any burst.
        """
        for event in missed:
            queue = self._queues.get(event.source)
            if queue is None or queue.policy not in ("block", "reject"):
                self.post(event)
            elif self._closed:
                log.warning("dropping %r: the StreamingContext is stopping", event)
            else:
                self._miss(queue, event)

    def post_in_turn(self, event: Event) -> None:
        """Post `event` on the loop without ever waiting there for room.

        Under `block`, an event past its source's bound (or behind others waiting so) waits in
        order as the events missed during downtime do: in the order heap under its own key,
        counted against the bound (sources feeding it wait too), accepted as room frees,
        reported dropped by a stop that does not wait for it. A source that coalesces
        losslessly (a file watcher) merges it into the last waiting event once as many as its
        bound wait, so they never pile up (reported as coalesced, `onEventsDropped`).
        Otherwise, or off the loop, as `post`. How the library's own producers on the loop post
        (`delay`, `pipe`, a file watcher, a backlog check).
        """
        queue = self._queues.get(event.source)
        if (
            queue is not None
            and queue.policy == "block"
            and self._posts_open
            and self.on_loop()
            and queue.full
        ):
            waiting = self._missed.get(queue)
            if waiting and len(waiting) >= queue.bound and event.source.coalescesLosslessly:
                last = waiting.pop()
                waiting.append(coalesced(event.source, [last, event]))  # one for two
                self._dropped(queue, "coalesce", [last])  # merged away: never silently
                return
            self._miss(queue, event)
            return
        self.post(event)

    def waits_in_turn(self, source: EventSource) -> bool:
        """Whether events of `source` wait in turn (`post_in_turn`, `catch_up`)."""
        queue = self._queues.get(source)
        return queue is not None and queue.missed > 0

    def _miss(self, queue: SourceQueue, event: Event) -> None:
        """Have `event` wait behind `queue`'s missed events; the first is posted at once."""
        waiting = self._missed.get(queue)
        if waiting is None:
            self._missed[queue] = waiting = deque()
        waiting.append(event)
        queue.missed += 1
        if queue.missed == 1:
            self._post_missed(queue)

    def _post_missed(self, queue: SourceQueue) -> None:
        """Post the next of `queue`'s missed events (with those of its instant, as one run)."""
        missed = self._missed[queue]
        first = missed.popleft()
        time = first.time.milliseconds
        run = [first]
        while missed and missed[0].time.milliseconds == time:
            run.append(missed.popleft())
        self._waiting((time, first.source.lineage_rank, MISSED)).events.extend(run)

    def _caught_up(self, queue: SourceQueue, count: int, *, rest_waits: bool) -> None:
        """`count` of `queue`'s missed events were accepted; `rest_waits`: more of their run."""
        queue.missed -= count
        if rest_waits:  # the rest of the run waits for room
            return
        missed = self._missed.get(queue)
        if missed:
            self._post_missed(queue)
        elif missed is not None and not queue.missed:
            del self._missed[queue]
            if not self._missed:
                self._call_caught_up_callbacks()

    def when_caught_up(self, callback: Callable[[], None]) -> None:
        """Call `callback()` on the loop once the events missed during downtime are accepted.

        At once if none waits; also when a stop drops them.
        """
        if not self._missed:
            callback()
            return
        self._caught_up_callbacks.append(callback)

    def _call_caught_up_callbacks(self) -> None:
        callbacks, self._caught_up_callbacks = self._caught_up_callbacks, []
        for callback in callbacks:
            callback()
