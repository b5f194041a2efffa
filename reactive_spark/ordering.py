"""The order events are accepted in: by time, then lineage rank; numbered as accepted; bounded.

On the event loop, the events sources post wait under an order key `(time, lineage rank of the
source, tiebreak)`. A slice at a time (`EVENTS_PER_FLUSH`, so the loop stays responsive),
`EventOrder` takes the events of the smallest key as a run (one source, one instant), numbers
them (`index` per source, `instanceId` per context), records the checkpoint's progress, tells
`onEventFired`, and hands the run to listeners and derived sources, which post their own runs
in turn. Runs of sources some stream is bound to go on to the scheduler's worker
(docs/architecture.md). A timer on the system clock says when its next tick is (`hold_from`):
what must follow it waits at or after that time until it has fired.

Nothing waiting grows without bound: every source has a `SourceQueue` (`source_queue.py`)
bounding its events that wait (posted and not accepted, or accepted and not processed), and an
overflow policy for an event past the bound (`EventSource.overflow`, applied in `overflow.py`).
A source whose bound
sources downstream are full is not accepted from until they drain; the sources derived from it
go on with what it already fired, the others wait behind it, so each instant's lineage order
holds among what is accepted.

The events sources missed during downtime are posted in turn as room frees (`catching_up.py`),
and nothing on the loop waits for them.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import sys
from collections.abc import Callable, Sequence
from threading import get_ident
from typing import TYPE_CHECKING, Any

from reactive_spark.catching_up import CatchingUp
from reactive_spark.listener import EventsDropped
from reactive_spark.overflow import Overflow
from reactive_spark.source_queue import DEFAULT_MAX_QUEUED, SourceQueue
from reactive_spark.waiting import MISSED, OrderKey, Waiting

if TYPE_CHECKING:
    from reactive_spark.events import Event, EventSource
    from reactive_spark.listener import ListenerBus
    from reactive_spark.time import Time

__all__ = ["EVENTS_PER_FLUSH", "EventOrder"]

log = logging.getLogger(__name__)

#: How many pending events the loop accepts before letting its other callbacks run.
EVENTS_PER_FLUSH = 1024


class EventOrder(Overflow, CatchingUp):
    """Accepts posted events in order, on the loop, and hands runs of them on (see module docs).

    `ready(runs)` receives the runs of bound sources each flush accepted, in order. What it
    does past a source's bound is `Overflow`'s (`overflow.py`); how events missed during
    downtime wait in turn, `CatchingUp`'s (`catching_up.py`).
    """

    def __init__(
        self,
        listeners: ListenerBus,
        ready: Callable[[list[list[Event]]], None],
        dropped: Callable[[str, list[int]], None],
        max_queued: int = DEFAULT_MAX_QUEUED,
    ) -> None:
        Overflow.__init__(self)
        CatchingUp.__init__(self)
        self._listeners = listeners
        self._ready = ready
        self._record_dropped = dropped
        self.max_queued = max_queued
        self._queues: dict[EventSource, SourceQueue] = {}
        self._flushing = False
        self._posted_while_flushing = False
        self._stalled = False  # what is pending waits for room the worker makes
        # per timer that said when its next event is (see `hold_from`), that time; and per
        # source that must wait behind one, from when it waits
        self._holders: dict[SourceQueue, int] = {}
        self._held_from: dict[Any, int] = {}
        # events waiting to be accepted, FIFO per order key; the heap holds the distinct keys
        self._pending: dict[OrderKey, Waiting] = {}
        self._pending_keys: list[OrderKey] = []
        self._next_instance_id = 0
        self._flush_scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._posts_open = False  # events posted now are queued (see `post`)
        self._closed = False  # no more events are accepted
        self._bound: frozenset[Any] = frozenset()
        # with a checkpoint: what every source fired so far, and its state at each bound event
        self._progress: dict[str, list[int]] | None = None
        self._progress_at: dict[int, dict[str, list[int]]] = {}
        self._dropped_posted = False  # a stop dropped events posted and not accepted yet
        self._closed_callbacks: list[Callable[[], None]] = []  # see `when_closed`
        #: Events accepted that no stream is bound to (they have no batch).
        self.announced = 0

    def start(
        self,
        loop: asyncio.AbstractEventLoop,
        bound: frozenset[Any],
        feeds: Callable[[EventSource], list[EventSource]],
        holds: dict[EventSource, set[EventSource]],
        sources: list[EventSource],
    ) -> None:
        """Take posts on `loop` from now on (call it there); runs of `bound` sources go on.

        `feeds(source)` are the bound sources an accepted event of `source` feeds (itself if
        bound, its bound derived sources); `holds[source]` the sources whose events may not be
        accepted before its waiting ones.
        """
        self._loop = loop
        self._loop_thread = get_ident()
        self._bound = bound
        for source in sources:
            self._queues[source] = SourceQueue(source, source.maxQueued, source.overflowPolicy)
        for source, queue in self._queues.items():
            queue.feeds = tuple(self._queues[fed] for fed in feeds(source))
            # not the sources it feeds: their room is its room, so holding them would hold it
            fed = {feed.source for feed in queue.feeds if feed is not queue}
            queue.holds = frozenset(holds.get(source, {source})) - fed
        self._posts_open = True

    def refuse_posts(self) -> None:
        """Drop, with a warning, every event posted from now on (the context is stopping).

        What was posted no longer waits for a timer's next tick (`hold_from`): none comes. The
        producers waiting for room on the loop (`when_room`) are called: they find it stopping.
        """
        self._posts_open = False
        self._release_all()
        self._call_all_room_callbacks()  # producers waiting for room on the loop give up

    def close(self) -> None:
        """Accept nothing more: posts are refused, so are runs of derived sources (on the loop)."""
        self._posts_open = False
        self._closed = True
        self._release_all()
        with self._room:  # producers waiting for room give up
            self._room.notify_all()
        self._call_all_room_callbacks()  # so do those on the loop (they find it closed)
        closed, self._closed_callbacks = self._closed_callbacks, []
        for callback in closed:
            callback()

    def when_closed(self, callback: Callable[[], None]) -> None:
        """Call `callback()` on the loop once `close` ran (at once if it has).

        What is still posted and not accepted then never will be.
        """
        if self._closed:
            callback()
            return
        self._closed_callbacks.append(callback)

    def drop(self) -> dict[EventSource, list[Event]]:
        """Forget every event waiting to be accepted (a stop that does not wait for them).

        Returns them, per source; producers that wait for room are let go.
        """
        dropped: dict[EventSource, list[Event]] = {}
        for waiting in self._pending.values():
            events = waiting.take(len(waiting))
            if events:
                dropped.setdefault(events[0].source, []).extend(events)
        self._pending.clear()
        self._pending_keys.clear()
        for queue, missed in self._missed.items():
            if missed:
                dropped.setdefault(queue.source, []).extend(missed)
        self._missed.clear()
        self._release_all()
        self._dropped_posted = self._dropped_posted or bool(dropped)
        self._call_caught_up_callbacks()
        for queue in self._queues.values():
            queue.pending = queue.missed = 0
            queue.keys.clear()
        with self._room:
            self._room.notify_all()
        return dropped

    @property
    def pending(self) -> int:
        """Events waiting to be accepted."""
        return sum(len(waiting) for waiting in list(self._pending.values()))

    def queue_of(self, source: EventSource) -> SourceQueue | None:
        """The queue of `source` (once started)."""
        return self._queues.get(source)

    def processed(self, source: EventSource, count: int) -> None:
        """`count` accepted events of `source` were processed (the worker thread)."""
        queue = self._queues.get(source)
        if queue is None:
            return
        queue.processed += count
        self._room_made()

    def dropped_accepted(self, source: EventSource, count: int) -> None:
        """`count` accepted events of `source` were dropped by a stop, unprocessed (on the loop).

        They no longer wait. Counted off `accepted`, which the loop owns: `processed` is the
        worker's, which may count a batch ending meanwhile.
        """
        queue = self._queues.get(source)
        if queue is None:
            return
        queue.accepted -= count
        self._room_made()

    def _room_made(self) -> None:
        """Wake what waits for room: the flush that stalled, producers, callbacks on the loop."""
        if self._stalled and self._loop is not None:
            self._stalled = False
            self._loop.call_soon_threadsafe(self._flush_some)
        if self._waiting_producers:
            with self._room:
                self._room.notify_all()
        if self._room_callbacks and self._loop is not None:
            self._loop.call_soon_threadsafe(self._call_room_callbacks)

    def on_loop(self) -> bool:
        """Whether the caller runs on the loop's thread (once started)."""
        return get_ident() == self._loop_thread

    @property
    def has_pending(self) -> bool:
        """Whether events wait to be accepted."""
        return bool(self._pending_keys)

    # -- checkpoint progress -----------------------------------------------------------------
    def track_progress(self, progress: dict[str, list[int]]) -> None:
        """Keep what every source fired (for the checkpoint), starting from `progress`."""
        self._progress = dict(progress)

    def resume_after(self, last_instance_id: int) -> None:
        """Number accepted events from `last_instance_id + 1` (after a restart)."""
        self._next_instance_id = last_instance_id + 1

    def progress_at(self, instance_id: int) -> dict[str, list[int]] | None:
        """What every source had fired when event `instance_id` was accepted (once)."""
        return self._progress_at.pop(instance_id, None) if self._progress_at else None

    def settled_progress(self) -> tuple[dict[str, list[int]], int] | None:
        """What every source fired, and the last instance id, for a stop to record (on the loop).

        A batch records the progress as its event was accepted: what sources derive from that
        event at its instant (an unbound `map` of a bound timer), and what unbound sources fire
        after the last batch, is not in it. Once every accepted event of a bound source got its
        batch and a stop dropped nothing posted, the progress as it stands is what a restart
        resumes from; None otherwise (a stop or a crash left events without their batch): the
        last batch's progress stands, and a restart fires again what came after it.
        """
        if self._progress is None or self._progress_at or self._dropped_posted:
            return None
        return dict(self._progress), self._next_instance_id - 1

    # -- accepting events --------------------------------------------------------------------
    def post(self, event: Event) -> None:
        """Queue `event` from any thread: at once on the loop, else through the loop.

        Past its source's bound, the source's overflow policy decides (see `SourceQueue`): a
        producer off the loop waits for room in its own thread; one on the loop waits there.
        Events posted before `start` or after `refuse_posts` (or a crash) are dropped with a
        warning, except those of derived sources until `close`: what operators (`pipe`,
        `delay`) make of the events a graceful stop lets run.
        """
        if self._posts_open and get_ident() == self._loop_thread:
            queue = self._queues.get(event.source)
            if queue is not None and (
                queue.missed
                or queue.pending
                + queue.accepted
                - queue.processed
                + (queue.in_transit if queue.counts_in_transit else 0)
                >= queue.bound
            ):  # `queue.full`, inlined: a property call here costs ~2% of routing an event
                self._overflow(queue, event)
                return
            # `accept` (open posts mean not closed) in this one call: it runs per posted event
            key = (event.time.milliseconds, event.source.lineage_rank, 0)
            waiting = self._pending.get(key)
            if waiting is None or not self._flush_scheduled:
                waiting = self._waiting(key, queue)
            waiting.events.append(event)
            if queue is not None:
                queue.pending += 1
        elif not self._open_to(event) or self._loop is None:
            log.warning("dropping %r: the StreamingContext is not accepting events", event)
        elif get_ident() == self._loop_thread:  # derived, while a graceful stop drains
            self.accept(event)
        else:
            queue = self._queues.get(event.source)
            if queue is not None:
                self._admit_from_thread(queue, event)
            self._loop.call_soon_threadsafe(self._arrive, event, queue)

    def hold_from(self, source: EventSource, time: Time) -> None:
        """`source`'s next event will be at `time`, not posted yet (on the loop).

        A timer says so: its next tick, or the first it missed while its queue was full
        (overflow `"block"`: a span of ticks it keeps, not events waiting here). Until it says
        another time or `release(source)`, the other sources that must wait behind it (those
        whose batches read its batches: `DStreamGraph.accepted_after`) are not accepted from at
        or after `time`, so a roll-up never overtakes the ticks it reads. Refusing posts,
        closing and dropping end it.
        """
        queue = self._queues.get(source)
        if queue is not None and self._posts_open:
            self._holders[queue] = time.milliseconds
            self._hold()

    def release(self, source: EventSource) -> None:
        """`source` will post nothing the others must wait for (see `hold_from`)."""
        queue = self._queues.get(source)
        if queue is not None and self._holders.pop(queue, None) is not None:
            self._hold()

    def _hold(self) -> None:
        """Recompute from when each source waits (`hold_from`); look again at what waited."""
        held_from: dict[Any, int] = {}
        for queue, time in self._holders.items():
            for source in queue.holds:
                if source is not queue.source:
                    held_from[source] = min(time, held_from.get(source, time))
        self._held_from = held_from
        self._stalled = False
        if self._pending_keys and not self._flush_scheduled and self._loop is not None:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush_some)

    def _release_all(self) -> None:
        if self._holders:
            self._holders.clear()
            self._hold()

    def _open_to(self, event: Event) -> bool:
        """Whether `event` may be posted now (see `post`)."""
        return self._posts_open or (not self._closed and bool(event.source.parents))

    def _arrive(self, event: Event, queue: SourceQueue | None) -> None:
        """An event posted from another thread reaches the loop.

        One that arrives closed was posted before the stop (its producer may have waited for
        room meanwhile): the stop dropped it, and says so as it does of what waited here.
        """
        if queue is not None:
            with self._room:
                queue.in_transit -= 1
                if self._waiting_producers:
                    self._room.notify_all()
        if self._closed:
            self._dropped_posted = True
            self._listeners.tell(
                "onEventsDropped", EventsDropped.of(event.source.name, "stop", [event])
            )
            return
        self.accept(event)

    def accept(self, event: Event) -> None:
        """Queue `event` for ordering; must run on the loop.

        Events are accepted in order of time, then the source's lineage rank (fixed at start:
        a source whose batches feed another's goes first); events still tied keep the order
        they were posted in.
        """
        if self._closed:
            log.warning("dropping %r: the StreamingContext is stopping", event)
            return
        queue = self._queues.get(event.source)
        if queue is not None and queue.full and queue.policy != "block":
            self._overflow(queue, event)  # a blocking producer off the loop waited already
            return
        key = (event.time.milliseconds, event.source.lineage_rank, 0)
        self._waiting(key, queue).events.append(event)
        if queue is not None:
            queue.pending += 1

    def accept_run(self, events: Sequence[Event], tiebreak: int = 0) -> None:
        """Queue events of one source and time, in order; must run on the loop.

        `tiebreak` orders runs of one source and instant among themselves: a merge's events
        derived from its first argument before those derived from the second. A derived
        source's own events wait past its bound unless its policy drops or coalesces them:
        its parents are not accepted from while it is full.
        """
        if not events:
            return
        if self._closed:
            log.warning(
                "dropping %d events from %r: the StreamingContext is stopping",
                len(events),
                events[0],
            )
            return
        first = events[0]
        queue = self._queues.get(first.source)
        if queue is not None and queue.full and queue.policy not in ("block", "reject"):
            for event in events:
                self.accept(event)
            return
        key = (first.time.milliseconds, first.source.lineage_rank, tiebreak)
        self._waiting(key, queue).events.extend(events)
        if queue is not None:
            queue.pending += len(events)

    def _waiting(self, key: OrderKey, queue: SourceQueue | None = None) -> Waiting:
        """The events waiting under order `key` (time, lineage rank, tiebreak), made if none."""
        pending = self._pending
        waiting = pending.get(key)
        if waiting is None:
            pending[key] = waiting = Waiting()
            heapq.heappush(self._pending_keys, key)
            if queue is not None:
                own = queue.keys
                while own and own[0] not in pending:  # accepted since: forgotten as new ones come
                    heapq.heappop(own)
                heapq.heappush(own, key)
        if self._flushing:  # the flush under way takes it, or schedules the next one
            self._posted_while_flushing = True
        elif not self._flush_scheduled and self._loop is not None:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush_some)
        return waiting

    # -- flushing ----------------------------------------------------------------------------
    def _flush_some(self) -> None:
        """Accept a slice of the pending events; the rest after the loop's other callbacks.

        So the worker thread starts on the first batches of a burst while the rest of the burst
        is accepted, and the loop stays responsive.
        """
        self._flush_scheduled = False
        accepted = self.flush(EVENTS_PER_FLUSH)
        if self._pending_keys and not self._flush_scheduled and self._loop is not None:
            if accepted:
                self._flush_scheduled = True
                self._loop.call_soon(self._flush_some)
            else:  # nothing could be accepted: the worker's progress schedules the next slice
                self._stalled = True

    def flush(self, limit: int | None = None) -> int:
        """Number the pending events in order, notify listeners, and hand them on to be processed.

        Events tied on one key (one source and instant) are accepted as a run. Listeners may
        fire more events (derived sources do); they are accepted in order too. An event no
        stream is bound to has no batch: it is only numbered and announced. With `limit`, at
        most that many events are accepted. A source without room downstream is not accepted
        from (its events wait), nor is any source that must wait behind it. Returns how many
        were accepted.
        """
        pending, keys, bound, queues = self._pending, self._pending_keys, self._bound, self._queues
        held_from = self._held_from
        budget = sys.maxsize if limit is None else limit
        runs: list[list[Event]] = []
        skipped: list[OrderKey] = []  # keys that cannot be accepted from now, put back after
        held: set[Any] = set()  # sources that wait behind a skipped key
        self._flushing = True
        try:
            while keys and budget:
                key = keys[0]
                waiting = pending[key]
                if waiting:
                    source = waiting.events[waiting.start].source
                    queue = queues.get(source)
                    room = None if queue is None else queue.room()
                    if (
                        room == 0
                        or source in held
                        or (held_from and key[0] >= held_from.get(source, key[0] + 1))
                    ):
                        skipped.append(heapq.heappop(keys))
                        held |= queue.holds if queue is not None else {source}
                        continue
                    take = budget if room is None else min(budget, room)
                    run = self._accept_run(waiting.take(take), waiting, key)
                    budget -= len(run)
                    if queue is not None:
                        if key[2] == MISSED:  # not counted as posted: posts the next missed
                            self._caught_up(queue, len(run), rest_waits=bool(waiting))
                        else:
                            queue.pending -= len(run)
                    if source in bound:
                        runs.append(run)
                        if queue is not None:
                            queue.accepted += len(run)
                    else:
                        self.announced += len(run)
                if not waiting and keys and keys[0] is key:
                    heapq.heappop(keys)
                    del pending[key]
        finally:
            self._flushing = False
            for key in skipped:
                heapq.heappush(keys, key)
            if self._posted_while_flushing:
                self._posted_while_flushing = False
                if keys and not self._flush_scheduled and self._loop is not None:
                    self._flush_scheduled = True
                    self._loop.call_soon(self._flush_some)
        if runs:
            self._ready(runs)
        return (sys.maxsize if limit is None else limit) - budget

    def _accept_run(self, run: list[Event], waiting: Waiting, key: OrderKey) -> list[Event]:
        """Number `run` (events of one key, taken from `waiting`) in order and hand it on.

        Listeners get each event as it is accepted; derived sources get the whole run, unless a
        listener is there too (then they are called with it, in the order they were added).
        Returns the events accepted: all of them, unless a listener posted an event that goes
        first; then the rest of the run goes back to wait behind it.
        """
        source = run[0].source
        if source.wants_each_event or self._listeners.active or self._progress is not None:
            return self._accept_watched(run, waiting, key)
        first = self._next_instance_id
        self._next_instance_id = first + len(run)
        index_sequence = source.index_sequence
        for event, instance_id in zip(run, range(first, first + len(run)), strict=True):
            if event.index is None:
                event.index = next(index_sequence)
            event.instanceId = instance_id
        source.forward_runs(run)
        return run

    def _accept_watched(self, run: list[Event], waiting: Waiting, key: OrderKey) -> list[Event]:
        """`_accept_run` for a run someone watches event by event: number and announce each."""
        source = run[0].source
        one_by_one = source.wants_each_event
        announced = self._listeners.active or self._progress is not None
        index_sequence, keys = source.index_sequence, self._pending_keys
        for position, event in enumerate(run):
            if event.index is None:
                event.index = next(index_sequence)
            event.instanceId = self._next_instance_id
            self._next_instance_id += 1
            if announced:
                self._announce(event)
            if one_by_one:
                source.notify_listeners(event)
            if keys[0] is not key:  # a listener posted an event that goes first
                waiting.put_back(run[position + 1 :])
                run = run[: position + 1]
                break
        if not one_by_one:
            source.forward_runs(run)
        return run

    def _announce(self, event: Event) -> None:
        """Record a numbered event in the checkpoint's progress and tell `onEventFired`."""
        source, progress = event.source, self._progress
        if progress is not None:
            assert event.index is not None and event.instanceId is not None  # numbered
            progress[source.name] = [event.time.milliseconds, event.index]
            if source in self._bound:
                self._progress_at[event.instanceId] = dict(progress)
        if self._listeners.active:
            self._listeners.tell("onEventFired", event)
