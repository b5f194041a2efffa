"""An event past its source's bound: the overflow policies, producers waiting for room, drops.

`EventOrder` (`ordering.py`) counts what each source has waiting in its `SourceQueue`; an event
posted past the bound meets the source's policy here (`EventSource.overflow`): `block` waits
for room (off the loop in the producer's thread, on the loop by accepting what it can),
`reject` raises `QueueFullError`, `drop-oldest`, `drop-newest` and `coalesce` make room, and
what they drop is reported to listeners (`onEventsDropped`) and recorded against recovery.
"""

from __future__ import annotations

import asyncio
import heapq
import threading
from collections.abc import Callable
from threading import get_ident
from typing import TYPE_CHECKING

from reactive_spark.errors import QueueFullError
from reactive_spark.events.past import coalesced
from reactive_spark.listener import EventsDropped

if TYPE_CHECKING:
    from reactive_spark.events import Event, EventSource
    from reactive_spark.listener import ListenerBus
    from reactive_spark.source_queue import SourceQueue
    from reactive_spark.waiting import OrderKey, Waiting

__all__ = ["WAIT_SLICE", "Overflow"]

#: Seconds a waiting producer sleeps between looks at its queue (it is woken when room frees).
WAIT_SLICE = 0.05


class Overflow:
    """What `EventOrder` does with an event past its source's bound (a mixin of `EventOrder`)."""

    if TYPE_CHECKING:
        _queues: dict[EventSource, SourceQueue]
        _pending: dict[OrderKey, Waiting]
        _listeners: ListenerBus
        _record_dropped: Callable[[str, list[int]], None]
        _loop: asyncio.AbstractEventLoop | None
        _posts_open: bool
        _closed: bool
        _flushing: bool

        def accept(self, event: Event) -> None:
            """Queue `event` for ordering (`EventOrder.accept`)."""

        def flush(self, limit: int | None = None) -> int:
            """Accept what can be, in order (`EventOrder.flush`)."""

        def _waiting(self, key: OrderKey, queue: SourceQueue | None = None) -> Waiting: ...

        def _miss(self, queue: SourceQueue, event: Event) -> None: ...

    def __init__(self) -> None:
        self._room = threading.Condition()  # producers wait on it for room in their queues
        self._waiting_producers = 0
        self._no_waiting: set[int] = set()  # threads that must never wait (the worker's)
        self._room_callbacks: dict[SourceQueue, list[Callable[[], None]]] = {}
        self._drops: dict[tuple[EventSource, str], list[Event]] = {}
        self._drops_reported = False

    def never_wait(self, thread: int) -> None:
        """Events that `thread` posts never wait for room (it is the one that makes room)."""
        self._no_waiting.add(thread)

    def has_room(self, source: EventSource) -> bool:
        """Whether an event of `source` posted now is within its bound (and need not wait).

        A source whose missed events still wait to catch up has none.
        """
        queue = self._queues.get(source)
        return queue is None or not queue.full

    def when_room(self, source: EventSource, callback: Callable[[], None]) -> None:
        """Call `callback()` on the loop once `source` has room again (once)."""
        queue = self._queues[source]
        if not queue.full:
            callback()
            return
        self._room_callbacks.setdefault(queue, []).append(callback)

    def _call_room_callbacks(self) -> None:
        for queue in [queue for queue in self._room_callbacks if not queue.full]:
            for callback in self._room_callbacks.pop(queue):
                callback()

    def _call_all_room_callbacks(self) -> None:
        waiting, self._room_callbacks = self._room_callbacks, {}
        for callbacks in waiting.values():
            for callback in callbacks:
                callback()

    def _admit_from_thread(self, queue: SourceQueue, event: Event) -> None:
        """Count `event` on its way to the loop; past the bound, wait or refuse first."""
        with self._room:
            if get_ident() not in self._no_waiting:
                self._waiting_producers += 1
                try:
                    while self._posts_open and (
                        (queue.full and queue.policy == "block")
                        or queue.in_transit >= queue.bound  # the other policies' producers
                    ):
                        self._room.wait(WAIT_SLICE)
                finally:
                    self._waiting_producers -= 1
            if queue.full and queue.policy == "reject":
                raise QueueFullError(queue.source.name, queue.depth + queue.missed, queue.bound)
            queue.in_transit += 1

    def _overflow(self, queue: SourceQueue, event: Event) -> None:
        """`event` arrives past its source's bound (on the loop): apply the source's policy."""
        policy = queue.policy
        if policy == "reject":  # what waits to catch up counts: it goes first
            raise QueueFullError(queue.source.name, queue.depth + queue.missed, queue.bound)
        if policy == "block":
            if queue.missed:  # it waits behind the source's catch-up, as that does: not here
                self._miss(queue, event)
                return
            self._wait_on_loop(queue)
            self.accept(event)  # with room, or past the bound if it may not wait
            return
        if policy == "drop-newest" or (policy == "drop-oldest" and not queue.pending):
            self._dropped(queue, "drop-newest" if policy == "drop-newest" else policy, [event])
            return
        if policy == "drop-oldest":
            self._dropped(queue, policy, self._take_waiting(queue, 1))
            self._queue_again(queue, event)
            return
        merged = self._take_waiting(queue, queue.pending)  # coalesce
        stand_in = coalesced(event.source, [*merged, event]) if merged else event
        if merged:
            self._dropped(queue, "coalesce", merged)
        self._queue_again(queue, stand_in)

    def _wait_on_loop(self, queue: SourceQueue) -> None:
        """A producer on the loop waits for room: what can be accepted is, then the worker.

        Not once the worker has nothing left to process: what waits is then held for the loop
        itself (behind a timer's next tick), which this producer holds, so the event goes in
        past the bound rather than wait for ever.
        """
        if self._flushing:  # posted while events are accepted: it cannot wait for itself
            return
        while queue.full and not self._closed:
            idle = self._worker_idle()  # before the flush: a batch ending meanwhile makes room
            self.flush()
            if not queue.full:
                return
            if idle and self._worker_idle():
                return
            with self._room:
                self._waiting_producers += 1
                try:
                    self._room.wait(WAIT_SLICE)
                finally:
                    self._waiting_producers -= 1

    def _worker_idle(self) -> bool:
        """Whether every accepted event was processed: the worker makes no more room."""
        return all(queue.accepted <= queue.processed for queue in self._queues.values())

    def _queue_again(self, queue: SourceQueue, event: Event) -> None:
        key = (event.time.milliseconds, event.source.lineage_rank, 0)
        self._waiting(key, queue).events.append(event)
        queue.pending += 1

    def _take_waiting(self, queue: SourceQueue, count: int) -> list[Event]:
        """The oldest `count` events of `queue`'s source waiting to be accepted, taken out."""
        taken: list[Event] = []
        keys = queue.keys
        while keys and len(taken) < count:
            waiting = self._pending.get(keys[0])
            if not waiting:
                heapq.heappop(keys)
                continue
            taken.extend(waiting.take(count - len(taken)))
        queue.pending -= len(taken)
        return taken

    def _dropped(self, queue: SourceQueue, reason: str, events: list[Event]) -> None:
        """Count events that will not run, and have them reported (once per loop pass)."""
        if not events:
            return
        self._drops.setdefault((queue.source, reason), []).extend(events)
        if not self._drops_reported and self._loop is not None:
            self._drops_reported = True
            self._loop.call_soon(self.report_drops)

    def report_drops(self) -> None:
        """Tell the listeners what was dropped since, and have it recorded against recovery."""
        self._drops_reported = False
        drops, self._drops = self._drops, {}
        for (source, reason), events in drops.items():
            if reason != "coalesce":  # what stands for coalesced events covers their times
                self._record_dropped(source.name, [e.time.milliseconds for e in events])
            self._listeners.tell("onEventsDropped", EventsDropped.of(source.name, reason, events))
