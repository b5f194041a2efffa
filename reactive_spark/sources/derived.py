"""Derived sources: event sources computed from other sources' events (`map`, `merge`, ...).

A derived source is a source of its own: bindable, with its own index sequence. It receives
its parents' events as the context accepts them, and derives `between` from its parents'
`between`, so catching up after downtime works through operators.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from itertools import repeat
from typing import Any

from reactive_spark.errors import InvalidArgumentError
from reactive_spark.events import Event, EventSource, json_friendly
from reactive_spark.events.source import require_source
from reactive_spark.runtime import Runtime
from reactive_spark.time import Time

__all__ = ["DerivedEvent", "DerivedEventSource", "JoinEvent", "parent_events"]


class _Missing:
    """The value of a derived event that carries none of its own (it reads its parent's)."""

    def __reduce__(self) -> str:
        return "_MISSING"  # unpickled and deep-copied as this module's one instance

    def __repr__(self) -> str:
        return "<no value>"


_MISSING: Any = _Missing()


class DerivedEvent(Event):
    """An event of a derived source; unknown attributes are read from the `parent` event.

    So `rest.filter(lambda e: e.path == "/job")` yields events that still have `.path`.
    `value` is the mapped (or piped) value where there is one, else the parent's.

    Make them with `run` (or `of`, for one): `Event.__init__` sets the fields every event has,
    `run` the two of a derived event. Calling the class itself, as for other events, leaves
    those two unset: reading `parent` or `value` then raises AttributeError.
    """

    __slots__ = ("_value", "parent")
    parent: Event | None
    _value: Any

    @classmethod
    def run(
        cls,
        source: EventSource,
        parents: Sequence[Event | None],
        values: Sequence[Any] | None = None,
        time: Time | None = None,
    ) -> list[DerivedEvent]:
        """Derived events of `source`, one per parent event, at the parent's time (or `time`).

        Each carries its value from `values`, if given, else reads its parent's.

        Examples:
            >>> parents = [Event(None, 0, Time(5)), Event(None, 1, Time(5))]
            >>> [(e.time.milliseconds, e.value) for e in DerivedEvent.run(None, parents, "ab")]
            [(5, 'a'), (5, 'b')]
        """
        own = repeat(_MISSING) if values is None else values
        events = []
        for parent, value in zip(parents, own, strict=False):
            at = time if time is not None else parent.time  # type: ignore[union-attr] # `of`
            event = cls(source, None, at)
            event.parent = parent
            event._value = value
            events.append(event)
        return events

    @classmethod
    def of(
        cls, source: EventSource, time: Time, parent: Event | None, value: Any = _MISSING
    ) -> DerivedEvent:
        """One derived event of `source` at `time` (see `run`); `parent` None if it has none.

        Examples:
            >>> tick = Event(None, 0, Time(5))
            >>> DerivedEvent.of(None, Time(9), tick, "late").value
            'late'
        """
        [event] = cls.run(source, [parent], None if value is _MISSING else [value], time)
        return event

    @property
    def value(self) -> Any:
        """The value this event carries: its own (`map`, `pipe`), else its parent's."""
        value = self._value
        if value is _MISSING:
            if self.parent is None:
                raise AttributeError("value")
            return self.parent.value  # type: ignore[attr-defined]
        return value

    def __getattr__(self, name: str) -> Any:
        # only called for what the event lacks: a parent's attribute
        if name == "parent" or name.startswith("__"):
            raise AttributeError(name)
        parent = self.parent
        if parent is None:
            raise AttributeError(name)
        return getattr(parent, name)

    def describe(self) -> dict[str, Any]:
        """The event as JSON-friendly fields, with its parent's."""
        fields = super().describe()
        if self._value is not _MISSING:
            fields["value"] = json_friendly(self._value)
        if self.parent is not None:
            fields["parent"] = self.parent.describe()
        return fields


class JoinEvent(Event):
    """Two events, `left` and `right`, that fired within the join's `within` of each other."""

    __slots__ = ("left", "right")

    def __init__(self, source: Any, index: int | None, time: Time, left: Event, right: Event):
        Event.__init__(self, source, index, time)
        self.left = left
        self.right = right

    def describe(self) -> dict[str, Any]:
        """The event as JSON-friendly fields, with both sides."""
        return {
            **super().describe(),
            "left": self.left.describe(),
            "right": self.right.describe(),
        }


def parent_events(event: Event) -> list[Event]:
    """The events `event` was derived from: a derived event's parent, a join's two sides.

    Examples:
        >>> tick = Event(None, 0, Time(5))
        >>> parent_events(DerivedEvent.of(None, Time(5), tick)) == [tick]
        True
    """
    if isinstance(event, DerivedEvent):
        return [] if event.parent is None else [event.parent]
    if isinstance(event, JoinEvent):
        return [event.left, event.right]
    return []


class DerivedEventSource(EventSource):
    """Base class of operator results: listens to its parents, posts its own events.

    A derived source takes its parents' events in runs: the events of one parent at one
    instant, accepted in a row (`_receive`). A function of the operator that raises on an
    event (`map`, `filter`) is reported as a failure of this source (`onSourceError`, counted
    by `advanceTo` and `awaitTermination`); the event is dropped and later events still flow.
    """

    #: What the operator is called in failure reports (and its kind in the web console).
    operation = "operator"
    #: The user function the operator applies, if any (for failure reports).
    function: str | None = None
    #: Whether the operator's events always go after the run they derive from (later in time,
    #: or at the same time from this source, ranked after its parents), so that it may take
    #: the whole run at once (`EventSource.add_receiver`). `pipe` stamps its events with the
    #: clock instead, so it takes its parents' events one at a time.
    takes_runs = True
    #: Whether the operator may hold parent events it has not fired, in state a restart cannot
    #: rebuild (`pipe`'s RxPY operators: a buffer). A `delay` rebuilds what it holds.
    holds_parent_events = False
    #: Whether a restart hands the operator its parents' events of the last recorded instant
    #: when it had fired nothing at that instant (`resume_pending`). A `delay` fires later
    #: than its parents and re-schedules what it held itself.
    retakes_last_instant = True

    def __init__(self, parents: list[EventSource], name: str) -> None:
        if not parents:
            raise InvalidArgumentError("a derived source needs at least one parent source")
        context = require_source(parents[0], "parents[0]").context
        for position, parent in enumerate(parents):
            require_source(parent, f"parents[{position}]", context)
        super().__init__(parents[0].context, name)
        self.kind = self.operation
        self._parents = list(parents)
        #: Fire a run of derived events of one instant on the loop, in order; `tiebreak` (an
        #: int, default 0) orders runs of the same instant among themselves (`merge`).
        self._emit = self._runtime.accept_run
        for position, parent in enumerate(self._parents):
            parent.add_receiver(self._receiver_for(position), runs=self.takes_runs)

    @property
    def parents(self) -> list[EventSource]:
        """The sources this one is derived from."""
        return list(self._parents)

    def _receiver_for(self, position: int) -> Callable[[list[Event]], None]:
        """The receiver that hands parent number `position`'s runs of events to `_receive`."""
        runtime, receive = self._runtime, self._receive

        def from_parent(events: list[Event]) -> None:
            # only accepted events come here: a graceful stop lets what waits go through too
            try:
                receive(position, events)
            except Exception as exc:
                runtime.report_source_error(self, self.operation, exc, events[0], self.function)

        return from_parent

    @abstractmethod
    def _receive(self, position: int, events: list[Event]) -> None:
        """Handle a run of accepted events of parent number `position` (one instant, in order)."""

    def held_spans(self, unseen: dict[int, list[Event]]) -> dict[int, tuple[Time, Time]]:
        """Per parent position, the span of its past events the operator held at the stop.

        The restart rebuilds them (`between`), off the event loop, and hands them to
        `resume_pending` (none by default). Called once sources have their `resumedFrom`.

        Args:
            unseen: What `resume_pending` will get as `unseen`.

        Returns:
            Per parent position, the first and last instant of the span (both included).
        """
        return {}

    def _apply(
        self, function: Callable[[Event], Any], events: list[Event]
    ) -> tuple[list[Event], list[Any]]:
        """The events `function` returned for, and what it returned; a raise is reported.

        An event `function` raises on is dropped (`onSourceError`); later events still go.
        """
        applied, results = [], []
        for event in events:
            try:
                result = function(event)
            except Exception as exc:
                self._runtime.report_source_error(self, self.operation, exc, event, self.function)
            else:
                applied.append(event)
                results.append(result)
        return applied, results

    def resume_pending(self, unseen: dict[int, list[Event]], held: dict[int, list[Event]]) -> None:
        """After a restart, re-create what the operator held when the driver stopped.

        Called once sources have their `resumedFrom`, before missed events are fired, on the
        event loop. `unseen` holds, per parent position, the parent's events of the last
        recorded instant this source had not derived from when the record was written (see
        `rederive.py`): by default they are received as live ones, in the parents' lineage
        order. `delay` re-schedules the events that were still waiting, `join` remembers the
        recent ones again.

        Args:
            unseen: Per parent position, the parent's events of the last recorded instant.
            held: Per parent position, the parent's events of the span `held_spans` gave,
                rebuilt off the loop.
        """
        parents = self._parents
        for position in sorted(
            unseen, key=lambda position: (parents[position].lineage_rank, position)
        ):
            self._receive(position, unseen[position])

    def start(self) -> None:
        """Nothing to start: the parents drive a derived source."""

    def stop(self) -> None:
        """Nothing to stop by default."""

    def eventFromRecord(self, fields: dict[str, Any]) -> Event:
        """The derived (or joined) event a checkpoint recorded, with its parent events."""
        index, time = fields["index"], Time(fields["time"])
        event: Event
        if "left" in fields:
            left, right = (self._parent_event(fields[side]) for side in ("left", "right"))
            event = JoinEvent(self, index, time, left, right)
        else:
            parent = self._parent_event(fields["parent"]) if "parent" in fields else None
            event = DerivedEvent.of(self, time, parent, fields.get("value", _MISSING))
            event.index = index
        event.instanceId = fields.get("instanceId")
        return event

    def _parent_event(self, fields: dict[str, Any]) -> Event:
        for parent in self._parents:
            if parent.name == fields["source"]:
                return parent.eventFromRecord(fields)
        raise InvalidArgumentError(
            f"{self.name!r} has no parent source {fields['source']!r} (from a checkpoint)",
        )

    def toProduct(self) -> tuple[Any, ...]:
        """The operator's name and its parents' products."""
        return (type(self).__name__, self.name, *(p.toProduct() for p in self._parents))


def report_rebuild_failure(runtime: Runtime, parent: EventSource, error: Exception) -> None:
    """Report that rebuilding `parent`'s past events after a restart raised `error`.

    As a failure of `parent`: of its operator's function if it is derived (a `map` raising on
    a rebuilt event), else of the source itself (operation `"restart"`).
    """
    if isinstance(parent, DerivedEventSource):
        runtime.report_source_error(parent, parent.operation, error, None, parent.function)
    else:
        runtime.report_source_error(parent, "restart", error)
