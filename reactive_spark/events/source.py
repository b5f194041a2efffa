"""Event sources: the `EventSource` base class, its listener protocol and operator registry.

A source fires the events of `reactive_spark.events.event`; `require_source` checks that an
argument is one.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import reactivex
from reactivex import abc as rx_abc
from reactivex.disposable import Disposable

from reactive_spark._callbacks import require_callable
from reactive_spark._validation import require_int
from reactive_spark.deadlines import Expectation
from reactive_spark.errors import ForeignContextError, InvalidArgumentError, InvalidCallbackError
from reactive_spark.events.event import Event
from reactive_spark.runtime import Runtime
from reactive_spark.time import Duration, Time

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext

__all__ = [
    "CATCH_UP_POLICIES",
    "OVERFLOW_POLICIES",
    "EventListener",
    "EventSource",
    "ListenerLike",
    "OperatorFactory",
]

#: What a source does with the events it missed while the application was down: fire them all
#: in order, one event standing for the whole gap, only the last one, or none
#: (docs/checkpoints.md).
CATCH_UP_POLICIES = ("all", "coalesce", "latest", "skip")

#: What a source does with a new event when its queue is full (docs/concepts.md): its producer
#: waits, the event is refused, the waiting events merge into one, the oldest waiting event or
#: the new one is dropped.
OVERFLOW_POLICIES = ("block", "reject", "coalesce", "drop-oldest", "drop-newest")


#: The functions behind the operator methods: `source.map(f)` is `operators.map(f)(source)`.
#: The `operators` package registers them (`register_operator`) when it is imported; it sits
#: above this module, which must not import it.
OperatorFactory = Callable[..., Callable[["EventSource"], "EventSource"]]
_OPERATORS: dict[str, OperatorFactory] = {}


def register_operator(name: str, factory: OperatorFactory) -> OperatorFactory:
    """Make `factory` the operator behind the `EventSource.<name>` method.

    Examples:
        >>> from reactive_spark import operators
        >>> _OPERATORS["map"] is operators.map
        True
    """
    _OPERATORS[name] = factory
    return factory


def _operator(name: str) -> OperatorFactory:
    return _OPERATORS[name]


@runtime_checkable
class EventListener(Protocol):
    """An object notified of every event a source fires."""

    def onEvent(self, event: Event) -> None:
        """Called with each event once the context has accepted it."""


ListenerLike = EventListener | Callable[[Event], Any]


class EventSource(ABC):
    """Base class of event sources: timers, file watchers, REST triggers, observables, yours.

    A source belongs to one StreamingContext and is created before the context starts. It fires
    events by calling `post(event)` from any thread; the context accepts them in order
    (docs/concepts.md), assigns `instanceId`, notifies the listeners and generates the bound
    streams' jobs.

    Subclasses implement `start`, `stop` and `toProduct`, and may override `restart` (called
    instead of `start` when resuming from a checkpoint) and `between` (events the source would
    have fired in a time range, to catch up after downtime). `start`, `restart` and `stop` run on
    the context's event loop and may return an awaitable; events must come from callbacks or
    threads of the source's own, not from inside `start`.

    Examples:
        >>> from reactive_spark.time import Seconds
        >>> class Heartbeat(EventSource):
        ...     def start(self):
        ...         self._tick = self.context.clock.scheduleAt(
        ...             self.context.clock.now() + Seconds(1), lambda: self.fire()
        ...         )
        ...
        ...     def stop(self):
        ...         self._tick.dispose()
        ...
        ...     def toProduct(self):
        ...         return (self.name,)
    """

    def __init__(self, context: StreamingContext, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(f"name must be a non-empty string, got {name!r}")
        self._ssc = context
        self._runtime = Runtime.of(context)
        self.name = name
        """The source's name, unique in its context: the console, checkpoints and errors use it."""
        # everyone notified of each event, in the order added; derived sources also take runs
        self._listeners: tuple[Callable[[Event], Any], ...] = ()
        self._receivers: tuple[Callable[[list[Event]], None], ...] = ()
        #: The indexes this source's next events get (the scheduler draws from it).
        self.index_sequence = itertools.count()
        #: The position of this source in the context's creation order.
        self.creation_order = self._runtime.register_source(self)
        #: Orders simultaneous events: the lineage rank, fixed when the context starts.
        self.lineage_rank = self.creation_order
        self._catch_up = "all"
        self._max_queued: int | None = None  # None: the context's maxQueuedEvents
        self._overflow = self.defaultOverflow
        self.resumedFrom: Time | None = None
        """The time of the last event this source fired before a restart (from the checkpoint)."""
        self.resumedIndex: int | None = None
        """The index of that event."""
        self._expectation: Expectation | None = None

    @property
    def context(self) -> StreamingContext:
        """The StreamingContext this source belongs to."""
        return self._ssc

    # -- lifecycle -------------------------------------------------------------------------
    @abstractmethod
    def start(self) -> Awaitable[None] | None:
        """Begin firing events; called once when the context starts."""

    def restart(self) -> Awaitable[None] | None:
        """Resume firing events after a restart from a checkpoint (default: `start()`)."""
        return self.start()

    @abstractmethod
    def stop(self) -> Awaitable[None] | None:
        """Stop firing events; called once when the context stops."""

    kind = "custom"
    """What kind of source this is, as the web console and the lineage show it (`"timer"`,
    `"rest"`, ...; a source of yours may name its own)."""

    def nextFireTime(self) -> Time | None:
        """When the source fires next, if it knows (a timer does; default: None).

        Examples:
            >>> from reactive_spark import Days
            >>> daily = ssc.timer(t0, None, Days(1), "daily")
            >>> daily.nextFireTime() is None  # nothing is scheduled before the context starts
            True
        """
        return None

    def between(self, start: Time | datetime, end: Time | datetime) -> list[Event]:
        """The events this source would have fired in `[start, end]` (default: none).

        Subclasses that override it should accept `datetime` too (`to_time` converts).
        """
        return []

    def numberPast(self, events: list[Event], start: Time | datetime) -> None:
        """Give `events`, what `between(start, end)` gave, the indexes a live run gives them.

        A backfill from `start` fires them so numbered (docs/operations.md). By default the
        source cannot tell: each event `between` left without an index gets its position
        among `events` (from 0), as a run started at `start` numbers them. A timer gives each
        tick its number from the timer's start, a file watcher each file its position among
        the files it watches.

        Examples:
            >>> from reactive_spark import Days
            >>> daily = ssc.timer(t0, None, Days(1), "daily")
            >>> even = daily.filter(lambda event: event.datetime.day % 2 == 0, name="even")
            >>> events = even.between(t0 + Days(3), t0 + Days(6))
            >>> even.numberPast(events, t0 + Days(3))
            >>> [(event.index, event.datetime.day) for event in events]
            [(0, 4), (1, 6)]
        """
        for position, event in enumerate(events):
            if event.index is None:
                event.index = position

    @abstractmethod
    def toProduct(self) -> tuple[Any, ...]:
        """The parameters that identify this source across restarts."""

    # -- backpressure ----------------------------------------------------------------------
    defaultOverflow = "block"
    """The overflow policy of this kind of source unless told otherwise (`overflow`)."""
    coalescesLosslessly = False
    """Whether `coalesce` keeps what each event carries (a file watcher's stand-in lists every
    file): then, under `"block"`, what it fires on the loop past the bound merges once as many
    events as the bound wait their turn, instead of piling up."""

    def overflow(self, maxQueued: int | None = None, policy: str | None = None) -> EventSource:
        """Bound this source's waiting events and say what happens past the bound; returns it.

        `maxQueued` (default: the context's `maxQueuedEvents`, 10,000) bounds the events of
        this source that wait: posted and not accepted yet, or accepted and not processed
        yet. `policy` is one of `OVERFLOW_POLICIES`: `"block"` (the producer waits; a timer's
        ticks missed meanwhile follow its catch-up policy), `"reject"` (a REST trigger answers
        503, `trigger` raises `QueueFullError`), `"coalesce"` (the waiting events become one,
        the last, whose `standsFor` counts them), `"drop-oldest"` or `"drop-newest"` (counted
        and reported to listeners: `onEventsDropped`). See docs/concepts.md.

        Examples:
            >>> from reactive_spark import Seconds
            >>> ticks = ssc.timer(t0, None, Seconds(1), "ticks").overflow(100, "coalesce")
            >>> ticks.maxQueued, ticks.overflowPolicy
            (100, 'coalesce')
        """
        self._runtime.require_not_started(f"change the overflow of {self.name!r}")
        if maxQueued is not None:
            require_int(maxQueued, "maxQueued")
        if policy is not None and policy not in OVERFLOW_POLICIES:
            raise InvalidArgumentError(
                f"policy must be one of {', '.join(OVERFLOW_POLICIES)}, got {policy!r}",
            )
        bound = self.maxQueued if maxQueued is None else maxQueued
        chosen = self._overflow if policy is None else policy
        if chosen in ("coalesce", "drop-oldest") and bound < 2:
            raise InvalidArgumentError(
                f"maxQueued must be at least 2 under {chosen!r} (one event runs while the "
                f"next waits to be merged or dropped), got {bound} for source {self.name!r}"
            )
        if maxQueued is not None:
            self._max_queued = maxQueued
        self._overflow = chosen
        return self

    @property
    def maxQueued(self) -> int:
        """The bound on its waiting events: its own, or the context's `maxQueuedEvents`."""
        if self._max_queued is not None:
            return self._max_queued
        return self._runtime.max_queued_events

    @property
    def overflowPolicy(self) -> str:
        """What happens to an event past the bound (one of `OVERFLOW_POLICIES`)."""
        return self._overflow

    @property
    def queueDepth(self) -> int:
        """This source's events waiting: posted and not accepted yet, or not processed yet."""
        return self._runtime.queue_depth(self)

    # -- recovery --------------------------------------------------------------------------
    @property
    def catchUp(self) -> str:
        """What to fire for the events missed during downtime: one of `CATCH_UP_POLICIES`.

        `"all"` (default) fires every missed event in order, `"coalesce"` one event standing
        for the whole gap (see `coalesce`), `"latest"` only the last missed event, `"skip"`
        none. A day of downtime on a 15-minute timer need not mean 96 jobs.

        Examples:
            >>> from reactive_spark import Minutes
            >>> quarterly = ssc.timer(t0, None, Minutes(15), "quarterly")
            >>> quarterly.catchUp = "latest"
        """
        return self._catch_up

    @catchUp.setter
    def catchUp(self, policy: str) -> None:
        if policy not in CATCH_UP_POLICIES:
            raise InvalidArgumentError(
                f"catchUp must be one of {', '.join(CATCH_UP_POLICIES)}, got {policy!r}",
            )
        self._catch_up = policy

    # -- deadlines -------------------------------------------------------------------------
    def expect(
        self,
        every: Duration | timedelta | float,
        within: Duration | timedelta | float | None = None,
        origin: Time | datetime | None = None,
    ) -> EventSource:
        """Expect an event in every period, by a deadline; a miss is reported once. Returns it.

        Periods start at `origin + k * every` (`origin` defaults to the Unix epoch, so
        `Days(1)` periods start at midnight UTC); the period starting at `start` is met by an
        event whose time lies in `[start, start + within)` (`within` defaults to `every`). When
        the deadline `start + within` passes without one, listeners get `onDeadlineMissed`,
        `reactive_spark_deadlines_missed_total{source}` counts it and the console lists it.
        Periods are watched from the first one starting at or after the context's start; with
        a checkpoint, a deadline that passed while the process was down is reported at the
        restart (events caught up count), once. See docs/operations.md.

        Examples:
            >>> from reactive_spark import Days, Hours
            >>> uploads = ssc.manualSource("uploads").expect(Days(1), within=Hours(2))
            >>> uploads.expectation.within == Hours(2)
            True
        """
        self._runtime.require_not_started(f"set what is expected of {self.name!r}")
        self._expectation = Expectation.of(every, within, origin)
        return self

    @property
    def expectation(self) -> Expectation | None:
        """What `expect` said of this source, if anything."""
        return self._expectation

    def coalesce(self, events: list[Event]) -> Event:
        """One event standing for `events`, missed in a row (default: the last of them).

        Examples:
            >>> from reactive_spark import Days
            >>> daily = ssc.timer(t0, None, Days(1), "daily")
            >>> daily.coalesce(daily.between(t0, t0 + Days(2))).datetime.day
            3
        """
        return events[-1]

    def eventFromRecord(self, fields: dict[str, Any]) -> Event:
        """Re-create an event of this source from its `describe()` fields (after a restart).

        Subclasses whose events carry more than `index` and `time` override it.

        Examples:
            >>> from reactive_spark import Days
            >>> daily = ssc.timer(t0, None, Days(1), "daily")
            >>> [event] = daily.between(t0, t0)
            >>> daily.eventFromRecord(event.describe()).time == event.time
            True
        """
        return Event(self, fields["index"], Time(fields["time"]), fields.get("instanceId"))

    # -- events ----------------------------------------------------------------------------
    def addListener(self, listener: ListenerLike) -> ListenerLike:
        """Notify `listener` (a callable or an object with `onEvent`) of every event.

        Returns the listener, so it can be used as a decorator.
        """
        self._listeners = (*self._listeners, _listener_callable(listener))
        return listener

    def removeListener(self, listener: ListenerLike) -> None:
        """Stop notifying `listener`."""
        target = _listener_callable(listener, "removeListener")
        self._listeners = tuple(known for known in self._listeners if known != target)

    @property
    def wants_each_event(self) -> bool:
        """Whether something wants each event alone as it is accepted (a listener, `pipe`).

        Then the scheduler calls `notify_listeners` with every event, and listeners and derived
        sources are called in the order they were added; otherwise it calls `forward_runs`.
        """
        return len(self._listeners) > len(self._receivers)

    def add_receiver(self, receiver: Callable[[list[Event]], None], *, runs: bool = True) -> None:
        """Hand `receiver` the accepted events as lists; derived sources listen so.

        With `runs`, a list may hold a run of events (see `forward_runs`): the receiver must then
        only post events that go after the run's own (later in time, or from a source of a
        higher lineage rank), as it may see the run once all of it is accepted. Without, it
        gets each event alone as it is accepted, as a listener does.
        """
        self._listeners = (*self._listeners, lambda event: receiver([event]))
        if runs:
            self._receivers = (*self._receivers, receiver)

    @property
    def parents(self) -> list[EventSource]:
        """The sources this one is derived from (none for a primary source)."""
        return []

    def post(self, event: Event) -> None:
        """Fire `event`: hand it to the context, which notifies listeners. Thread-safe."""
        if event.source is not self:
            raise InvalidArgumentError(
                f"event must come from source {self.name!r}, got one of {event.source!r}",
            )
        self._runtime.post(event)

    def fire(self, time: Time | None = None) -> Event:
        """Post a plain `Event` stamped `time` (default: now on the context's clock)."""
        event = Event(self, None, self._ssc.clock.now() if time is None else time)
        self.post(event)
        return event

    def resume_indexes(self, lastIndex: int, lastTime: Time) -> None:
        """Continue numbering after `lastIndex`, fired at `lastTime` before a restart."""
        self.index_sequence = itertools.count(lastIndex + 1)
        self.resumedFrom = lastTime
        self.resumedIndex = lastIndex

    def notify_listeners(self, event: Event) -> None:
        """Hand an accepted event to the listeners and derived sources (scheduler, on the loop).

        A listener that raises is reported as a failure of this source (`onSourceError`);
        the other listeners still get the event. The scheduler calls this only while the
        source `wants_each_event` (else it calls `forward_runs`): to act on every accepted
        event, add a listener rather than overriding this method.
        """
        for listener in self._listeners:
            try:
                listener(event)
            except Exception as exc:
                self._runtime.report_source_error(self, "listener", exc, event, listener)

    def forward_runs(self, events: list[Event]) -> None:
        """Hand a run of accepted events (one instant, in order) to the derived sources.

        The scheduler calls this instead of `notify_listeners` unless `wants_each_event`.
        """
        for receiver in self._receivers:
            receiver(events)

    # -- operators (see `reactive_spark.operators`) ---------------------------------------
    def map(self, f: Callable[[Event], Any], name: str | None = None) -> EventSource:
        """A derived source with every event of this one, carrying `f(event)` as `value`.

        Examples:
            >>> from reactive_spark import Hours
            >>> hourly = ssc.timer(t0, None, Hours(1), "hourly")
            >>> hours = hourly.map(lambda event: event.datetime.hour)
            >>> [event.value for event in hours.between(t0, t0 + Hours(2))]
            [0, 1, 2]
        """
        return _operator("map")(f, name)(self)

    def filter(self, predicate: Callable[[Event], bool], name: str | None = None) -> EventSource:
        """A derived source with the events of this one for which `predicate` is true.

        Examples:
            >>> from reactive_spark import Hours
            >>> hourly = ssc.timer(t0, None, Hours(1), "hourly")
            >>> even = hourly.filter(lambda event: event.datetime.hour % 2 == 0)
            >>> [event.datetime.hour for event in even.between(t0, t0 + Hours(4))]
            [0, 2, 4]
        """
        return _operator("filter")(predicate, name)(self)

    def delay(self, duration: Duration | timedelta | float, name: str | None = None) -> EventSource:
        """A derived source firing every event of this one `duration` later.

        Examples:
            >>> from reactive_spark import Hours, Minutes
            >>> hourly = ssc.timer(t0, None, Hours(1), "hourly")
            >>> later = hourly.delay(Minutes(30))
            >>> [event.datetime.strftime("%H:%M") for event in later.between(t0, t0 + Hours(2))]
            ['00:30', '01:30']
        """
        return _operator("delay")(duration, name)(self)

    def merge(self, *others: EventSource, name: str | None = None) -> EventSource:
        """A derived source with every event of this one and of `others`.

        Examples:
            >>> from reactive_spark import Hours
            >>> hourly = ssc.timer(t0, None, Hours(1), "hourly")
            >>> every_2h = ssc.timer(t0, None, Hours(2), "every-2h")
            >>> merged = hourly.merge(every_2h)
            >>> [(e.parent.source.name, e.datetime.hour) for e in merged.between(t0, t0 + Hours(2))]
            [('hourly', 0), ('every-2h', 0), ('hourly', 1), ('hourly', 2), ('every-2h', 2)]
        """
        return _operator("merge")(*others, name=name)(self)

    def join(
        self, other: EventSource, within: Duration | timedelta | float, name: str | None = None
    ) -> EventSource:
        """A derived source firing a pair event when this and `other` fire within `within`.

        Examples:
            >>> from reactive_spark import Hours, Minutes
            >>> hourly = ssc.timer(t0, None, Hours(1), "hourly")
            >>> halves = ssc.timer(t0 + Minutes(50), None, Minutes(90), "halves")
            >>> pairs = hourly.join(halves, Minutes(10))
            >>> [
            ...     (p.left.datetime.strftime("%H:%M"), p.right.datetime.strftime("%H:%M"))
            ...     for p in pairs.between(t0, t0 + Hours(5))
            ... ]
            [('01:00', '00:50'), ('04:00', '03:50')]
        """
        return _operator("join")(other, within, name)(self)

    def pipe(self, *rx_operators: Callable[[Any], Any], name: str | None = None) -> EventSource:
        """A derived source firing what RxPY operators make of this source's events.

        Examples:
            >>> import reactivex.operators as ops
            >>> from reactive_spark import Hours
            >>> hourly = ssc.timer(t0, None, Hours(1), "hourly")
            >>> pairs = hourly.pipe(ops.buffer_with_count(2))
            >>> [len(event.value) for event in pairs.between(t0, t0 + Hours(5))]
            [2, 2, 2]
        """
        return _operator("pipe")(*rx_operators, name=name)(self)

    def toObservable(self) -> reactivex.Observable[Event]:
        """The events of this source as a reactivex Observable (hot: subscribe before start).

        Examples:
            >>> import asyncio
            >>> from reactive_spark import Hours
            >>> hourly = ssc.timer(t0, None, Hours(1), "hourly")
            >>> received = []
            >>> subscription = hourly.toObservable().subscribe(received.append)
            >>> job = ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(hourly)
            >>> async def run():
            ...     await ssc.start()
            ...     await ssc.advanceTo(t0 + Hours(2))
            ...     await ssc.stop(stopSparkContext=False)
            >>> asyncio.run(run())
            >>> [event.index for event in received]
            [0, 1, 2]
        """

        def subscribe(
            observer: rx_abc.ObserverBase[Event],
            scheduler: rx_abc.SchedulerBase | None = None,
        ) -> rx_abc.DisposableBase:
            self._listeners = (*self._listeners, observer.on_next)
            return Disposable(lambda: self.removeListener(observer.on_next))

        return reactivex.create(subscribe)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def require_source(value: object, argument: str, context: object = None) -> EventSource:
    """`value` if it is an EventSource (of `context`, if given), else raise naming `argument`.

    The one check that an argument is a source of the right context (`bind`, operators).

    Examples:
        >>> require_source("x", "merge: others[0]")
        Traceback (most recent call last):
        ...
        reactive_spark.errors.InvalidArgumentError: merge: others[0] must be an EventSource, got 'x'
    """
    if not isinstance(value, EventSource):
        raise InvalidArgumentError(f"{argument} must be an EventSource, got {value!r}")
    if context is not None and value.context is not context:
        raise ForeignContextError(
            f"{argument} {value.name!r} belongs to another StreamingContext",
        )
    return value


def _listener_callable(
    listener: ListenerLike, operation: str = "addListener"
) -> Callable[[Event], Any]:
    on_event = getattr(listener, "onEvent", None)
    if on_event is not None and callable(on_event):
        require_callable(on_event, "listener.onEvent", operation)
        return on_event  # type: ignore[no-any-return]
    if callable(listener):
        require_callable(listener, "listener", operation)
        return listener
    raise InvalidCallbackError(
        f"listener must be callable or have an onEvent(event) method, got {listener!r}",
    )


def roots(source: EventSource) -> set[EventSource]:
    """The primary sources `source` derives from (itself, if it is one).

    Examples:
        >>> from reactive_spark import Days
        >>> daily = ssc.timer(t0, None, Days(1), "daily")
        >>> [root.name for root in roots(daily.filter(lambda event: True))]
        ['daily']
    """
    found: set[EventSource] = set()
    waiting = [source]
    while waiting:
        current = waiting.pop()
        if current.parents:
            waiting.extend(current.parents)
        else:
            found.add(current)
    return found
