"""DStreamGraph: the streams, their bindings, zero time, each source's plan, clearing memory.

`plan_of(source)` is the one plan a source's batches are planned by, live or again from a
checkpoint: fixed at start (`reactive_spark.planning`).
"""

from __future__ import annotations

import asyncio
import heapq
from typing import TYPE_CHECKING, Any

from reactive_spark.dependencies import LegacyWindowDependency, Retention
from reactive_spark.dstream.inputs import ReceiverInputDStream
from reactive_spark.dstream.reach import Reach
from reactive_spark.errors import ContextStateError
from reactive_spark.events import Event, EventSource
from reactive_spark.planning import Plan, reached
from reactive_spark.sources.timer import TimerEventSource
from reactive_spark.time import Duration, Time

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext
    from reactive_spark.dstream.base import DStream, ForEachDStream
    from reactive_spark.dstream.inputs import InputDStream

__all__ = ["DStreamGraph"]


class DStreamGraph:
    """Inputs, outputs and bindings of one StreamingContext (Spark's DStreamGraph, event-driven)."""

    def __init__(self, ssc: StreamingContext) -> None:
        self._ssc = ssc
        self.streams: list[DStream[Any]] = []
        self.inputs: list[InputDStream] = []
        self.outputs: list[ForEachDStream] = []
        self._bindings: dict[EventSource, list[DStream[Any]]] = {}
        self.zero_time: Time | None = None
        self.remember_duration: Duration | None = None
        self._reaching: dict[int, set[EventSource]] = {}
        self._producing: dict[int, set[EventSource] | None] = {}
        #: Per source, the streams its events compute only for a window to read (at start).
        self._feeds: dict[EventSource, list[DStream[Any]]] = {}
        self._plans: dict[EventSource, Plan] = {}  # per bound source, fixed at start

    # -- building ----------------------------------------------------------------------------
    def add_stream(self, stream: DStream[Any]) -> int:
        """Register a new stream; returns its id (its position in creation order)."""
        self.streams.append(stream)
        return len(self.streams) - 1

    def add_input(self, stream: InputDStream) -> None:
        """Register an input stream."""
        self.inputs.append(stream)

    def add_output(self, stream: ForEachDStream) -> int:
        """Register an output stream; returns its position among the outputs (from 0)."""
        self.outputs.append(stream)
        return len(self.outputs) - 1

    def bind(self, stream: DStream[Any], source: EventSource) -> None:
        """Record that `stream` generates a job on every event of `source`."""
        self._bindings.setdefault(source, []).append(stream)

    def bound_sources(self) -> list[EventSource]:
        """The sources some stream is bound to."""
        return list(self._bindings)

    def bound_streams(self, source: EventSource) -> list[DStream[Any]]:
        """The streams bound to `source`, in creation (lineage) order."""
        return list(self._bindings.get(source, []))

    def downstream_bound(self, source: EventSource) -> list[EventSource]:
        """The bound sources whose queues an event of `source` feeds.

        Itself if bound, and the bound sources derived from it (directly or not).
        """
        found: list[EventSource] = []
        seen: set[EventSource] = set()
        waiting = [source]
        while waiting:
            current = waiting.pop()
            if current in seen:
                continue
            seen.add(current)
            if current in self._bindings:
                found.append(current)
            waiting.extend(child for child in self._ssc.sources if current in child.parents)
        return found

    def accepted_after(self, sources: list[EventSource]) -> dict[EventSource, set[EventSource]]:
        """Per source, the sources none of whose events may be accepted before its waiting ones.

        Itself, and the sources reached through a source whose batches read another's (its
        bound streams read the other's, or its windows what the other's batches compute: a
        weekly roll-up waits for the daily batch of its instant); the sources derived from it
        without such a step may go on with what it already fired.
        """
        edges = self._lineage_edges(sources)
        held: dict[EventSource, set[EventSource]] = {}
        for source in sources:
            found = {source}
            waiting = [(source, False)]
            seen: set[tuple[EventSource, bool]] = set()
            while waiting:
                current, through_reads = waiting.pop()
                if (current, through_reads) in seen:
                    continue
                seen.add((current, through_reads))
                for after, reads in edges[current]:
                    if through_reads or reads:
                        found.add(after)
                    waiting.append((after, through_reads or reads))
            held[source] = found
        return held

    def checkpoints_rdds(self) -> bool:
        """Whether some stream checkpoints its RDDs (then Spark needs a checkpoint directory)."""
        return any(stream.checkpointed for stream in self.streams)

    def unbound_outputs(self) -> list[ForEachDStream]:
        """Output streams bound to no source (they go on the default timer)."""
        return [stream for stream in self.outputs if not stream.boundSources]

    def bind_default_timer(
        self, zeroTime: Time, batchDuration: Duration | None
    ) -> TimerEventSource | None:
        """Bind the unbound outputs to a new default timer; None if every output is bound.

        The timer ticks every `batchDuration` from `zeroTime + batchDuration` (at start).
        """
        unbound = self.unbound_outputs()
        if not unbound:
            return None
        if batchDuration is None:
            raise ContextStateError(
                f"outputs {[s.name for s in unbound]} are bound to no source and the "
                "context has no batchDuration for the default timer; bind them, or give it "
                "one (StreamingContext(sc, batchDuration); reactive-spark run --batch-duration)",
            )
        timer = TimerEventSource(
            self._ssc, zeroTime + batchDuration, None, batchDuration, "DefaultTimer"
        )
        for stream in unbound:
            stream.bind(timer)
        return timer

    def remember(self, duration: Duration) -> None:
        """Keep every stream's RDDs for `duration`; may be set once."""
        if self.remember_duration is not None:
            raise ContextStateError(
                f"remember duration already set as {self.remember_duration.milliseconds} ms; "
                "it cannot be set again",
            )
        self.remember_duration = duration

    # -- starting ----------------------------------------------------------------------------
    def validate(self) -> None:
        """Raise unless there is an output operation or a bound stream."""
        if not self.outputs and not self._bindings:
            raise ContextStateError(
                "no output operation and no bound stream: nothing would ever run; add an "
                "output (foreachRDD, saveAsTextFiles, pprint) or bind a stream to a source",
            )

    def start(
        self, zeroTime: Time, sources: list[EventSource], *, checkpointed: bool = False
    ) -> None:
        """Fix zero time, the streams' memory needs and the order of simultaneous events.

        When `checkpointed`, the streams whose RDDs reach back past their own event, and those
        they feed, follow what a restart must rebuild (`history_from`).
        """
        self.validate()
        self.zero_time = zeroTime
        for streams in self._bindings.values():
            streams.sort(key=lambda stream: stream.id)
        self._producing = self._producing_sources()
        for stream in self.streams:
            narrowed = _narrowed(stream, [self._producing[p.id] for p in stream.parents])
            stream.new_data_at = None if narrowed is None else frozenset(narrowed)
        self._feeds, self._reaching = self._fed_and_reaching()
        for stream in self.streams:
            for dependency in stream.dependencies:
                dependency.prepare(self)
            stream.check_slides()
        remembered = Retention(duration=self.remember_duration or Duration(0))
        for stream in self.streams:
            stream.require_retention(remembered)
            for dependency in stream.dependencies:
                dependency.parent.require_retention(dependency.retention())
        for stream in reversed(self.streams):  # children before parents
            for dependency in stream.dependencies:
                if dependency.same_event:  # its RDDs are made of its parent's: keep those too
                    dependency.parent.require_retention(stream.required_retention())
        if checkpointed:
            tracked: set[int] = set()
            for stream in self.streams:  # parents first
                if stream.reaches_back or any(parent.id in tracked for parent in stream.parents):
                    tracked.add(stream.id)
                    stream.track_history()
        for source, rank in self._lineage_ranks(sources).items():
            source.lineage_rank = rank

    def make_plans(self) -> None:
        """Make every bound source's plan, once started (may take a while: a worker calls it).

        Each plan compiles its steps into a function, about 0.2 ms per stream at most: too long
        to hold the event loop for a large lineage.
        """
        self._plans = {
            source: Plan(source, streams, self._feeds.get(source, ()), self._counting(source))
            for source, streams in self._bindings.items()
        }

    def _counting(self, source: EventSource) -> frozenset[int]:
        """The streams that count the events of `source` as batches (`counts_batches`).

        Those legacy windows read, where `source` may give them new data: an event at which
        a stream computes but never has data (a weekly one, for a daily stream fed to a
        window) is none of its batches.
        """
        counting = set()
        for stream in self.streams:
            made = self._producing[stream.id]
            if stream.counts_batches and (made is None or source in made):
                counting.add(stream.id)
        return frozenset(counting)

    def remove_interrupted_writes(self) -> list[str]:
        """Delete what writes interrupted by a crash left behind (before batches re-run)."""
        return [path for stream in self.streams for path in stream.remove_interrupted_writes()]

    def receivers(self) -> list[ReceiverInputDStream]:
        """The inputs fed by receivers (`socketTextStream`)."""
        return [stream for stream in self.inputs if isinstance(stream, ReceiverInputDStream)]

    def start_inputs(self) -> None:
        """Let every input fix where it starts reading (may block: a worker thread calls it)."""
        for stream in self.inputs:
            stream.start()

    def start_receivers(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start every receiver on `loop` (when the context starts)."""
        for receiver in self.receivers():
            receiver.start_receiver(loop)

    async def stop_receivers(self) -> None:
        """Stop every receiver (when the context stops); what they received stays for batches."""
        for receiver in self.receivers():
            await receiver.stop_receiver()

    def drop_unread(self) -> None:
        """Forget what receivers received and no batch read (stopped), telling the listeners."""
        for receiver in self.receivers():
            receiver.drop_unread()

    def reaching(self, stream: DStream[Any]) -> set[EventSource]:
        """The sources whose events make `stream` compute an RDD (once started)."""
        return set(self._reaching.get(stream.id, ()))

    def _reaching_sources(
        self, feeds: dict[EventSource, list[DStream[Any]]]
    ) -> dict[int, set[EventSource]]:
        """For each stream, the sources whose events make it compute an RDD.

        Events start at the streams bound to their source, and at those it `feeds` to windows,
        and travel up while streams react.
        """
        children: dict[int, list[DStream[Any]]] = {stream.id: [] for stream in self.streams}
        for stream in self.streams:
            for parent in stream.parents:
                children[parent.id].append(stream)
        fed: dict[int, set[EventSource]] = {}
        for source, streams in feeds.items():
            for stream in streams:
                fed.setdefault(stream.id, set()).add(source)
        reaching: dict[int, set[EventSource]] = {}
        for stream in reversed(self.streams):  # children are created after their parents
            sources = set(stream.boundSources) | fed.get(stream.id, set())
            for child in children[stream.id]:
                sources |= reaching[child.id]
            if stream.boundSources:
                sources &= set(stream.boundSources)
            reaching[stream.id] = sources
        return reaching

    def _producing_sources(self) -> dict[int, set[EventSource] | None]:
        """For each stream, the sources at whose events new data may reach it (None: any).

        An input bound to nothing reads at any event; a bound stream only at its sources'
        events; any other stream where its parents may have new data (a window slides on its
        parent's batches, a state moves with its parent's), or, where the parents it needs
        narrow it (`_narrowed`), where all of those may: `days.join(names)` at the daily
        events, wherever `names` reads.
        """
        producing: dict[int, set[EventSource] | None] = {}
        for stream in self.streams:  # parents before children
            made = [producing[parent.id] for parent in stream.parents]
            sources = _narrowed(stream, made)
            if sources is None and made and None not in made:
                sources = set().union(*(known for known in made if known is not None))
            if stream.boundSources:
                bound = set(stream.boundSources)
                sources = bound if sources is None else sources & bound
            producing[stream.id] = sources
        return producing

    def _fed_and_reaching(
        self,
    ) -> tuple[dict[EventSource, list[DStream[Any]]], dict[int, set[EventSource]]]:
        """The streams each source feeds to windows, and then the sources reaching each stream.

        A window reads what its parent generated at earlier events, so the parent computes,
        without a job, at the events of each source it may have new data at (`_producing`):
        `days.map(f)` at the daily events for a window of it read weekly, as every stream of a
        PySpark program computes every batch. The streams a fed parent reads compute too, and
        may feed a window further up (a window of windows). A state (`updateStateByKey`) is fed
        so too: its history is what it carries. A stream with new data wherever an input bound
        to nothing reads (a union with it) is not fed: feeding would make the input read at
        events nothing bound it to, taking what its other readers would get. A join needs both
        sides: it is fed where its other side has new data, and reads the input there, as it
        would if bound there.
        """
        producing = self._producing
        feeds: dict[EventSource, list[DStream[Any]]] = {}
        while True:
            reaching = self._reaching_sources(feeds)
            added = False
            for stream, reader in self._history_readers():
                made = producing[stream.id]
                if made is None or not reaching[reader.id]:
                    continue
                for source in made - reaching[stream.id]:
                    fed = feeds.setdefault(source, [])
                    if stream.reactsToSource(source) and stream not in fed:
                        fed.append(stream)
                        added = True
            if not added:
                return feeds, reaching

    def _history_readers(self) -> list[tuple[DStream[Any], DStream[Any]]]:
        """Each stream whose history is read, with the stream whose events read it.

        A window's parent, with the window's stream; a state, with itself (it carries what
        each of its parent's batches made of it).
        """
        return [
            (dependency.parent, stream)
            for stream in self.streams
            for dependency in stream.dependencies
            if not dependency.same_event
        ] + [(stream, stream) for stream in self.streams if stream.carries_state]

    def slide_duration(self, stream: DStream[Any]) -> Duration | None:
        """How often `stream` produces an RDD, when that is regular (legacy window semantics).

        The slide of the nearest legacy window upstream, else the period shared by every timer
        whose events reach the stream; None when irregular. Before start, bindings made later
        are not known yet: unbound streams are assumed to run on the default timer.
        """
        inherited = self._window_slide(stream)
        if inherited is not None:
            return inherited
        if self.zero_time is not None:
            sources = self._reaching.get(stream.id, set())
            made = self._producing.get(stream.id)
            if made is not None:  # where it computes but never has new data does not count
                sources = sources & made
        else:
            sources = set(self._nearest_bound(stream))
            if not sources and self._ssc.batchDuration is not None:
                return self._ssc.batchDuration
        periods = {s.period for s in sources if isinstance(s, TimerEventSource)}
        if len(periods) == 1 and all(isinstance(s, TimerEventSource) for s in sources):
            return periods.pop()
        return None

    def _window_slide(self, stream: DStream[Any]) -> Duration | None:
        """The slide of the nearest legacy window up `stream`'s line of first parents that sets one.

        A window without a slide of its own slides as its parent does, and a stream of several
        parents as its first parent does (PySpark's `slideDuration`).
        """
        current: DStream[Any] | None = stream
        while current is not None:
            dependency = current.dependencies[0] if current.dependencies else None
            if (
                isinstance(dependency, LegacyWindowDependency)
                and dependency.requested_slide is not None
            ):
                return dependency.requested_slide
            current = None if dependency is None else dependency.parent
        return None

    def driving_sources(self, stream: DStream[Any]) -> frozenset[EventSource]:
        """The sources whose events give `stream` new data (once started).

        Before the start, the sources the nearest bound stream at or above it is bound to
        (empty when no bound stream is above: the default timer drives it).
        """
        if self.zero_time is None:
            return frozenset(self._nearest_bound(stream))
        sources = self._reaching.get(stream.id, set())
        made = self._producing.get(stream.id)
        return frozenset(sources if made is None else sources & made)

    def _nearest_bound(self, stream: DStream[Any]) -> list[EventSource]:
        """The sources of the nearest bound stream at or above `stream`, depth first."""
        waiting = [stream]
        while waiting:
            current = waiting.pop()
            if current.boundSources:
                return current.boundSources
            waiting.extend(reversed(current.parents))
        return []

    def _lineage_edges(
        self, sources: list[EventSource]
    ) -> dict[EventSource, list[tuple[EventSource, bool]]]:
        """Per source, the sources whose events at an instant go after its own.

        With each, whether that is because their bound streams read its bound streams, or a
        window their events compute reads what its events compute (say, `days.tailWindow(7,
        7)` bound to a weekly timer, `days.foreachRDD(f)` to a daily one); else they derive
        from it. A window edge that would close a cycle (windows reading each other's sources'
        batches, say) is left out: creation order decides, as between unrelated sources.
        """
        bindings = {source: self._bindings.get(source, []) for source in sources}
        bound = {source: {s.id for s in bindings[source]} for source in sources}
        upstream = {source: _above(bindings[source]) for source in sources}
        # a source's feeds (known once started) are below one of its bound streams, which
        # the windows reading them are below as well: before the start, `reads` orders them
        plans = {
            source: reached(source, [*bindings[source], *self._feeds.get(source, ())])
            for source in sources
        }
        computed = {source: {s.id for s in plans[source]} for source in sources}
        windowed = {source: _windowed(plans[source]) for source in sources}
        edges: dict[EventSource, list[tuple[EventSource, bool]]] = {s: [] for s in sources}
        windows: list[tuple[EventSource, EventSource]] = []
        for first in sources:
            for second in sources:
                if first is second:
                    continue
                reads = bool(bound[first] & upstream[second])
                if reads or first in second.parents:
                    edges[first].append((second, reads))
                elif computed[first] & windowed[second]:
                    windows.append((first, second))
        successors = {s: {after for after, _ in edges[s]} for s in sources}
        for first, second in windows:
            successors[first].add(second)
        following = _following(successors)
        for first, second in windows:
            if first not in following[second]:  # else the edge closes a cycle
                edges[first].append((second, True))
        return edges

    def lineage_ranks(self, sources: list[EventSource]) -> dict[EventSource, int]:
        """The ranks `start` gives `sources` (a backfill's plan orders its batches by them)."""
        return self._lineage_ranks(sources)

    def _lineage_ranks(self, sources: list[EventSource]) -> dict[EventSource, int]:
        """Rank sources so that a source goes before those its batches feed (`_lineage_edges`)."""
        edges = self._lineage_edges(sources)
        successors = {source: [after for after, _ in edges[source]] for source in sources}
        waiting = dict.fromkeys(sources, 0)
        for source in sources:
            for successor in successors[source]:
                waiting[successor] += 1
        ready = [(source.creation_order, source) for source in sources if waiting[source] == 0]
        heapq.heapify(ready)
        ranks: dict[EventSource, int] = {}
        while ready or len(ranks) < len(sources):
            if not ready:  # a cycle: fall back to creation order for what is left
                rest = min((s for s in sources if s not in ranks), key=lambda s: s.creation_order)
                ready.append((rest.creation_order, rest))
            _, source = heapq.heappop(ready)
            if source in ranks:
                continue
            ranks[source] = len(ranks)
            for successor in successors[source]:
                waiting[successor] -= 1
                if waiting[successor] == 0 and successor not in ranks:
                    heapq.heappush(ready, (successor.creation_order, successor))
        return ranks

    def describe(self, sources: list[EventSource]) -> dict[str, Any]:
        """The lineage as JSON: streams (dependencies, bindings, outputs) and `sources`.

        Examples:
            >>> from reactive_spark import Days
            >>> daily = ssc.timer(t0, None, Days(1), "daily")
            >>> job = ssc.queueStream([[1]]).map(str).foreachRDD(print).bind(daily)
            >>> [s["name"] for s in ssc.graph.describe(ssc.sources)["streams"]]
            ['queueStream[0]', 'map[1](str)', 'foreachRDD[2](print)']
        """
        return {
            "streams": [
                {
                    "id": stream.id,
                    "name": stream.name,
                    "function": stream.functionName,
                    "output": stream.isOutput,
                    "input": not stream.dependencies,
                    "boundTo": [source.name for source in stream.boundSources],
                    "parents": [
                        {"id": dependency.parent.id, "dependency": dependency.describe()}
                        for dependency in stream.dependencies
                    ],
                }
                for stream in self.streams
            ],
            "sources": [
                {
                    "name": source.name,
                    "kind": source.kind,
                    "parents": [parent.name for parent in source.parents],
                }
                for source in sources
            ],
        }

    # -- per event ---------------------------------------------------------------------------
    def retention(self) -> Retention:
        """The most history any stream must remember (what recovery must rebuild)."""
        needed = Retention()
        for stream in self.streams:
            needed = needed.merge(stream.recovery_retention())
        return needed

    def history_from(self) -> Reach:
        """Per source, its earliest batch a restart plans again to rebuild what streams keep.

        What windows, states and `remember` keep reaches back to it (with `start(...,
        checkpointed=True)`; the worker thread asks it, between batches).
        """
        reach: Reach = {}
        for stream in self.streams:
            stream.history_reach(reach)
        return reach

    def plan_of(self, source: EventSource) -> Plan:
        """The plan the events of `source` are planned by, live or again from a checkpoint.

        Fixed at start (see `Plan.batch`); a source no stream is bound to has an empty plan,
        whose batches run nothing. A batch planned again after a restart passes what its
        streams read the first time to the same plan, so they read the same again.
        """
        plan = self._plans.get(source)
        return Plan(source, []) if plan is None else plan

    def clear_metadata(self, event: Event) -> None:
        """Let the streams of `event`'s plan forget what no window or `remember` needs.

        The scheduler calls it after each batch whose jobs ran, and once for a run of batches
        of one source that ran none (`event` being the last): what each stream keeps then is
        what clearing after every batch keeps, and RDDs no job computed take no memory
        meanwhile.

        Forgotten RDDs that no stream remembers any more are unpersisted. Other streams
        generated nothing new, so what they remember is still bounded.
        """
        plan = self._plans.get(event.source)
        if plan is None:
            return
        cached = []
        for stream in plan.streams:
            for rdd in stream.clear_metadata(event):
                if rdd.is_cached:
                    cached.append(rdd)
        if not cached:
            return
        remembered = {id(rdd) for stream in self.streams for rdd in stream.remembered_rdds()}
        for rdd in {id(rdd): rdd for rdd in cached}.values():
            if id(rdd) not in remembered:
                rdd.unpersist(blocking=False)


def _narrowed(stream: DStream[Any], made: list[set[EventSource] | None]) -> set[EventSource] | None:
    """Where every parent `stream` `needs_parents` may have new data, its parents' being `made`.

    None when no needed parent narrows it: one with new data at any event, or one that
    `repeats` (a window or a state, which gives an RDD at events where its parent has none:
    `days.join(hours.window(...))` joins where `days` has data).
    """
    needed = [
        known
        for i in stream.needs_parents
        if (known := made[i]) is not None and not stream.parents[i].repeats
    ]
    return set.intersection(*needed) if needed else None


def _windowed(streams: list[DStream[Any]]) -> set[int]:
    """The ids of the streams that windows among `streams` read at their own instant."""
    return {
        dependency.parent.id
        for stream in streams
        for dependency in stream.dependencies
        if dependency.reads_its_instant
    }


def _following(
    successors: dict[EventSource, set[EventSource]],
) -> dict[EventSource, set[EventSource]]:
    """Per source, every source that follows it through `successors` (no recursion)."""
    following: dict[EventSource, set[EventSource]] = {}
    for source in successors:
        found: set[EventSource] = set()
        waiting = list(successors[source])
        while waiting:
            current = waiting.pop()
            if current not in found:
                found.add(current)
                waiting.extend(successors[current])
        following[source] = found
    return following


def _above(streams: list[DStream[Any]]) -> set[int]:
    """The ids of every stream `streams` read from, directly or not (no recursion)."""
    found: set[int] = set()
    waiting = [parent for stream in streams for parent in stream.parents]
    while waiting:
        parent = waiting.pop()
        if parent.id not in found:
            found.add(parent.id)
            waiting.extend(parent.parents)
    return found
