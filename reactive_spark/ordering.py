"""The order events are accepted in: by time, then lineage rank; numbered as accepted.

On the event loop, the events sources post wait under an order key `(time, lineage rank of the
source, tiebreak)`. A slice at a time (`EVENTS_PER_FLUSH`, so the loop stays responsive),
`EventOrder` takes the events of the smallest key as a run (one source, one instant), numbers
them (`index` per source, `instanceId` per context), records the checkpoint's progress, tells
`onEventFired`, and hands the run to listeners and derived sources, which post their own runs
in turn. Runs of sources some stream is bound to go on to the scheduler's worker
(docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import sys
from collections.abc import Callable, Sequence
from threading import get_ident
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reactive_spark.events import Event
    from reactive_spark.listener import ListenerBus

__all__ = ["EVENTS_PER_FLUSH", "EventOrder"]

log = logging.getLogger(__name__)

OrderKey = tuple[int, int, int]

#: How many pending events the loop accepts before letting its other callbacks run.
EVENTS_PER_FLUSH = 1024


class EventOrder:
    """Accepts posted events in order, on the loop, and hands runs of them on (see module docs).

    `ready(runs)` receives the runs of bound sources each flush accepted, in order.
    """

    def __init__(self, listeners: ListenerBus, ready: Callable[[list[list[Event]]], None]) -> None:
        self._listeners = listeners
        self._ready = ready
        # events waiting to be accepted, FIFO per order key; the heap holds the distinct keys
        self._pending: dict[OrderKey, _Waiting] = {}
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
        #: Events accepted that no stream is bound to (they have no batch).
        self.announced = 0

    def start(self, loop: asyncio.AbstractEventLoop, bound: frozenset[Any]) -> None:
        """Take posts on `loop` from now on (call it there); runs of `bound` sources go on."""
        self._loop = loop
        self._loop_thread = get_ident()
        self._bound = bound
        self._posts_open = True

    def refuse_posts(self) -> None:
        """Drop, with a warning, every event posted from now on (the context is stopping)."""
        self._posts_open = False

    def close(self) -> None:
        """Accept nothing more: posts are refused, and so are runs of derived sources."""
        self._posts_open = False
        self._closed = True

    def drop(self) -> None:
        """Forget every event waiting to be accepted (a stop that does not wait for them)."""
        self._pending.clear()
        self._pending_keys.clear()

    @property
    def pending(self) -> int:
        """Events waiting to be accepted."""
        return sum(len(waiting) for waiting in list(self._pending.values()))

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

    # -- accepting events --------------------------------------------------------------------
    def post(self, event: Event) -> None:
        """Queue `event` from any thread: at once on the loop, else through the loop.

        Events posted before `start` or after `refuse_posts` (or a crash) are dropped with a
        warning.
        """
        if self._posts_open and get_ident() == self._loop_thread:
            # `accept` (open posts mean not closed) in this one call: it runs per posted event
            key = (event.time.milliseconds, event.source.rank, 0)
            waiting = self._pending.get(key)
            if waiting is None or not self._flush_scheduled:
                waiting = self._waiting(key)
            waiting.events.append(event)
        elif not self._posts_open or self._loop is None:
            log.warning("dropping %r: the StreamingContext is not accepting events", event)
        else:
            self._loop.call_soon_threadsafe(self.accept, event)

    def accept(self, event: Event) -> None:
        """Queue `event` for ordering; must run on the loop.

        Events are accepted in order of time, then the source's lineage rank (fixed at start:
        a source whose streams feed another's goes first); events still tied keep the order
        they were posted in.
        """
        if self._closed:
            log.warning("dropping %r: the StreamingContext is stopping", event)
            return
        self._waiting((event.time.milliseconds, event.source.rank, 0)).events.append(event)

    def accept_run(self, events: Sequence[Event], tiebreak: int = 0) -> None:
        """Queue events of one source and time, in order; must run on the loop.

        `tiebreak` orders runs of one source and instant among themselves: a merge's events
        derived from its first argument before those derived from the second.
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
        self._waiting((first.time.milliseconds, first.source.rank, tiebreak)).events.extend(events)

    def _waiting(self, key: OrderKey) -> _Waiting:
        """The events waiting under order `key` (time, lineage rank, tiebreak), made if none."""
        waiting = self._pending.get(key)
        if waiting is None:
            self._pending[key] = waiting = _Waiting()
            heapq.heappush(self._pending_keys, key)
        if not self._flush_scheduled and self._loop is not None:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush_some)
        return waiting

    def _flush_some(self) -> None:
        """Accept a slice of the pending events; the rest after the loop's other callbacks.

        So the worker thread starts on the first batches of a burst while the rest of the burst
        is accepted, and the loop stays responsive.
        """
        self._flush_scheduled = False
        self.flush(EVENTS_PER_FLUSH)
        if self._pending_keys and not self._flush_scheduled and self._loop is not None:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush_some)

    def flush(self, limit: int | None = None) -> None:
        """Number the pending events in order, notify listeners, and queue them for processing.

        Events tied on one key (one source and instant) are accepted as a run. Listeners may
        fire more events (derived sources do); they are accepted in order too. An event no
        stream is bound to has no batch: it is only numbered and announced. With `limit`, at
        most that many events are accepted.
        """
        pending, keys, bound = self._pending, self._pending_keys, self._bound
        budget = sys.maxsize if limit is None else limit
        runs: list[list[Event]] = []
        while keys and budget:
            key = keys[0]
            waiting = pending[key]
            if waiting:
                run = self._accept_run(waiting.take(budget), waiting, key)
                budget -= len(run)
                if run[0].source in bound:
                    runs.append(run)
                else:
                    self.announced += len(run)
            if not waiting and keys[0] is key:
                heapq.heappop(keys)
                del pending[key]
        if runs:
            self._ready(runs)

    def _accept_run(self, run: list[Event], waiting: _Waiting, key: OrderKey) -> list[Event]:
        """Number `run` (events of one key, taken from `waiting`) in order and hand it on.

        Listeners get each event as it is accepted; derived sources get the whole run, unless a
        listener is there too (then they are called with it, in the order they were added).
        Returns the events accepted: all of them, unless a listener posted an event that goes
        first; then the rest of the run goes back to wait behind it.
        """
        source = run[0].source
        if source.listened or self._listeners.active or self._progress is not None:
            return self._accept_watched(run, waiting, key)
        first = self._next_instance_id
        self._next_instance_id = first + len(run)
        index_sequence = source.index_sequence
        for event, instance_id in zip(run, range(first, first + len(run)), strict=True):
            if event.index is None:
                event.index = next(index_sequence)
            event.instanceId = instance_id
        source.forward(run)
        return run

    def _accept_watched(self, run: list[Event], waiting: _Waiting, key: OrderKey) -> list[Event]:
        """`_accept_run` for a run someone watches event by event: number and announce each."""
        source = run[0].source
        listened = source.listened
        announced = self._listeners.active or self._progress is not None
        index_sequence, keys = source.index_sequence, self._pending_keys
        for position, event in enumerate(run):
            if event.index is None:
                event.index = next(index_sequence)
            event.instanceId = self._next_instance_id
            self._next_instance_id += 1
            if announced:
                self._announce(event)
            if listened:
                source.notify(event)
            if keys[0] is not key:  # a listener posted an event that goes first
                waiting.put_back(run[position + 1 :])
                run = run[: position + 1]
                break
        if not listened:
            source.forward(run)
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


class _Waiting:
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
