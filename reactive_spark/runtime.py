"""The one handle event sources, operators and streams get from their context.

What they may ask of the engine: post events (from any thread) and runs of derived events (on
the loop), report a failure or events they drop, tell the listeners, run blocking work,
register and name themselves; and what they may know: the clock, the context's state, where
the console is mounted. It keeps these internals off the public `StreamingContext`
(docs/architecture.md).

Examples:
    >>> runtime = Runtime.of(ssc)
    >>> runtime.state
    'initialized'
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from reactive_spark._callbacks import callable_name
from reactive_spark.errors import ContextStateError, InvalidArgumentError
from reactive_spark.failures import Failure, SourceErrorInfo
from reactive_spark.listener import EventsDropped, ReceiverInfo

if TYPE_CHECKING:
    from reactive_spark.clock import Clock
    from reactive_spark.events import Event, EventSource
    from reactive_spark.ordering import EventOrder
    from reactive_spark.time import Time

__all__ = ["ACTIVE", "INITIALIZED", "STOPPED", "Runtime"]

R = TypeVar("R")

INITIALIZED, ACTIVE, STOPPED = "initialized", "active", "stopped"

# the runtime of each live context, by the context's id; a context holds its runtime, so an
# entry lives exactly as long as its context
_RUNTIMES: weakref.WeakValueDictionary[int, Runtime] = weakref.WeakValueDictionary()


class Runtime:
    """What the sources, operators and streams of one context may ask of its engine.

    The context makes it, with the engine's own functions: `post` (an event, from any
    thread), `accept_run` (a run of events of one source and instant, on the loop), `report`
    (a failure: logged once, told to the listeners, kept for `awaitTermination`), `tell` (a
    listener callback), `run_blocking` (a call off the loop) and `accepting` (whether posted
    events will run).
    """

    def __init__(
        self,
        context: object,
        clock: Clock,
        *,
        post: Callable[[Event], None],
        accept_run: Callable[..., None],
        report: Callable[[Failure], None],
        tell: Callable[[str, Any], None],
        run_blocking: Callable[..., Awaitable[Any]],
        accepting: Callable[[], bool],
        order: EventOrder,
    ) -> None:
        self._context = weakref.ref(context)
        #: The context's clock.
        self.clock = clock
        #: Hand an event to the scheduler, from any thread (`EventSource.post` calls it).
        self.post = post
        #: Hand a run of events of one source and instant to the scheduler, on the loop only
        #: (how derived sources fire: no thread hand-off); a `tiebreak` orders runs of one
        #: source and instant among themselves.
        self.accept_run = accept_run
        #: Call `callback(argument)` on every streaming listener.
        self.tell_listeners = tell
        self._report = report
        self._run_blocking = run_blocking
        self._accepting = accepting
        self._order = order
        #: `"initialized"`, `"active"` or `"stopped"` (the context moves it on).
        self.state = INITIALIZED
        #: Every event source of the context, in creation order.
        self.sources: list[EventSource] = []
        self._names: set[str] = set()
        #: Where the web console is mounted (the console sets it): REST triggers link their
        #: answers to `<console_prefix>/api/batches/<instanceId>`.
        self.console_prefix = ""
        #: Whether file outputs replace the batch directories that exist (a backfill), rather
        #: than leaving a batch already written alone.
        self.replaces_outputs = False
        #: Whether the context re-runs a past range (a backfill sets it before firing): direct
        #: log streams then read each batch's records by their time, not from where the
        #: previous batch stopped.
        self.backfilling = False
        #: In a backfill, each chosen timer's tick before the range: where the live run's
        #: batch before the first backfilled one ran, so an input's first span starts there.
        self.ticks_before_backfill: dict[EventSource, Time] = {}
        #: While a backfill plans, where it starts: what operators read of their parents'
        #: past events is then what the backfill fires, numbered as it fires them
        #: (`fired_between`).
        self.backfill_from: Time | None = None
        #: Per source, the line of producers waiting for room in it, first come first served
        #: (HTTP requests under `"block"`: `sources.http.RoomLine`).
        self.room_lines: dict[EventSource, Any] = {}
        _RUNTIMES[id(context)] = self

    @staticmethod
    def of(context: object) -> Runtime:
        """The runtime of `context`; raises naming it if it is not a StreamingContext.

        Examples:
            >>> Runtime.of(ssc).owns(ssc)
            True
        """
        runtime = _RUNTIMES.get(id(context))
        if runtime is None or not runtime.owns(context):
            raise InvalidArgumentError(f"context must be a StreamingContext, got {context!r}")
        return runtime

    def owns(self, context: object) -> bool:
        """Whether `context` is the context of this runtime."""
        return self._context() is context

    @property
    def accepting(self) -> bool:
        """Whether an event posted now will be processed (active, and no scheduler crash)."""
        return self.state == ACTIVE and self._accepting()

    def require_not_started(self, action: str) -> None:
        """Raise `ContextStateError` saying `action` is not allowed once started."""
        if self.state != INITIALIZED:
            raise ContextStateError(f"cannot {action}: the StreamingContext is {self.state}")

    # -- sources ---------------------------------------------------------------------------
    def register_source(self, source: EventSource) -> int:
        """Add a new source (its constructor calls this); returns its creation order.

        Names identify sources across restarts, so two sources may not share one.
        """
        self.require_not_started(f"create event source {source.name!r}")
        if source.name in self._names:
            raise InvalidArgumentError(
                f"name {source.name!r} is already used by another event source of this "
                "context; names identify sources across restarts, give each its own",
            )
        self._names.add(source.name)
        self.sources.append(source)
        return len(self.sources) - 1

    def unique_source_name(self, base: str) -> str:
        """`base`, or `base#2`, `base#3`, ... if taken (names of unnamed operator results)."""
        name, number = base, 1
        while name in self._names:
            number += 1
            name = f"{base}#{number}"
        return name

    # -- failures and listeners ------------------------------------------------------------
    def report(self, failure: Failure) -> None:
        """Report `failure`: logged once, told to the listeners, kept for `awaitTermination`."""
        self._report(failure)

    def report_source_error(
        self,
        source: EventSource,
        operation: str,
        error: BaseException,
        event: Event | None = None,
        function: object = None,
    ) -> None:
        """Report a failure of `source` (any thread): listeners, `advanceTo`, `awaitTermination`.

        Examples:
            >>> from reactive_spark import Days
            >>> daily = ssc.timer(t0, None, Days(1), "daily")
            >>> Runtime.of(ssc).report_source_error(daily, "poll", OSError("feed is down"))
        """
        name = function if isinstance(function, str) or function is None else None
        if name is None and function is not None:
            name = callable_name(function)
        self._report(SourceErrorInfo(source.name, operation, error, event, name))

    def report_receiver(
        self,
        callback: str,
        stream_id: int,
        name: str,
        location: str,
        active: bool,
        error: BaseException | None = None,
    ) -> None:
        """Tell the listeners about a receiver (`onReceiverStarted`, `...Error`, `...Stopped`)."""
        self.tell_listeners(
            callback, ReceiverInfo(stream_id, name, location, active=active, error=error)
        )

    def report_dropped(
        self, source: EventSource, events: Sequence[Event], reason: str = "stop"
    ) -> None:
        """Tell the listeners `events` of `source` were dropped (`onEventsDropped`).

        How a source or operator reports what it held and drops (a `delay` stopped before its
        events fell due): counted in the console and its metrics as the engine's own drops.
        """
        if events:
            self.tell_listeners("onEventsDropped", EventsDropped.of(source.name, reason, events))

    # -- backpressure ----------------------------------------------------------------------
    @property
    def max_queued_events(self) -> int:
        """The bound on a source's waiting events unless the source sets its own."""
        return self._order.max_queued

    def queue_depth(self, source: EventSource) -> int:
        """`source`'s events waiting: posted and not accepted, or not processed yet."""
        queue = self._order.queue_of(source)
        return 0 if queue is None else queue.depth

    def has_room(self, source: EventSource) -> bool:
        """Whether an event of `source` posted now is within its bound."""
        return self._order.has_room(source)

    def when_room(self, source: EventSource, callback: Callable[[], None]) -> None:
        """Call `callback()` on the loop once `source` has room again, or a stop closes it.

        Called once (at once if there is room): a producer that must wait more registers
        again. How a producer on the loop waits without blocking it (a timer, the requests
        waiting for room in an HTTP source).
        """
        self._order.when_room(source, callback)

    def when_closed(self, callback: Callable[[], None]) -> None:
        """Call `callback()` on the loop once nothing posted is accepted any more (once).

        A stop closes the order after what it lets run was accepted; a crash of the scheduler
        closes it at once, dropping what waited to be accepted. How a producer waiting for its
        event's acceptance (a REST request) learns that it never comes.
        """
        self._order.when_closed(callback)

    def hold_from(self, source: EventSource, time: Time) -> None:
        """`source`'s next event will be at `time`, not posted yet.

        Until it says another time or `release(source)`, the sources that must follow it wait
        at or after `time` (`EventOrder.hold_from`). How a timer on the system clock keeps its
        lineage's order: it says when its next tick is, or the first it missed under `"block"`.
        """
        self._order.hold_from(source, time)

    def release(self, source: EventSource) -> None:
        """`source` will post nothing the others must wait for (see `hold_from`)."""
        self._order.release(source)

    def post_from_loop(self, event: Event) -> None:
        """Post `event` on the loop without ever waiting there for room.

        Past the bound under `"block"` it waits its turn, in order and counted against the
        bound (`EventOrder.post_in_turn`). How an operator firing from the clock (`delay`,
        `pipe`), a file watcher or a backlog check posts its own events.
        """
        self._order.post_in_turn(event)

    def waits_in_turn(self, source: EventSource) -> bool:
        """Whether events of `source` wait their turn: later ones go after them."""
        return self._order.waits_in_turn(source)

    # -- blocking work ---------------------------------------------------------------------
    async def run_blocking(self, func: Callable[..., R], *args: Any) -> R:
        """Run blocking `func(*args)` in one of the context's threads, off the event loop.

        The threads end when the context stops.
        """
        result: R = await self._run_blocking(func, *args)
        return result
