"""The event hot path: bursts are accepted in slices and in runs without breaking event order (a
listener's event that goes first splits a run; listeners and derived sources are called in the
order they were added; a function that fails drops only its event), the worker thread takes
what is queued while it runs, a stop while it drains drops the rest, and events are light (no
per-instance dict) yet still read through to their parents. One worker thread runs the
batches, in the context `start` ran in, and ends with the context."""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import pickle
import threading
import time
from typing import Any

import pytest
from pyspark import SparkContext
from reactivex.subject import Subject

from reactive_spark import (
    Event,
    ObservableEvent,
    Seconds,
    StreamingContext,
    StreamingListener,
    SystemClock,
    Time,
    TimerEvent,
)
from reactive_spark.ordering import EVENTS_PER_FLUSH, EventOrder
from reactive_spark.scheduler import JobScheduler
from reactive_spark.sources.derived import DerivedEvent

from .helpers import virtual

T0 = Time(0)
BURST = 3 * EVENTS_PER_FLUSH


def two_sources(ssc: StreamingContext) -> tuple[Subject[int], Subject[int], Any, Any]:
    """Observable sources `a` and `b` (created in that order) and the subjects behind them."""
    left: Subject[int] = Subject()
    right: Subject[int] = Subject()
    return left, right, ssc.rxEventSource(left, "a"), ssc.rxEventSource(right, "b")


def post_burst(*subjects: Subject[int]) -> None:
    """The values 0 .. BURST - 1 to each subject in turn, without yielding to the loop."""
    for value in range(BURST):
        for subject in subjects:
            subject.on_next(value)


async def test_a_burst_is_accepted_in_slices_and_in_order(sc: SparkContext) -> None:
    ssc = virtual(sc)
    left, right, a, b = two_sources(ssc)
    mapped = a.map(lambda e: e.value * 10)
    both = mapped.merge(b)
    accepted: list[Event] = []
    for source in (a, b, mapped, both):
        source.addListener(accepted.append)
    merged: list[tuple[str, Any]] = []
    ssc.queueStream([]).transform(
        lambda time, rdd, event: merged.append((event.parent.source.name, event.value))
    ).foreachRDD(lambda rdd: None).bind(both)
    await ssc.start()
    accepted_when_the_loop_ran: list[int] = []
    post_burst(left, right)
    asyncio.get_running_loop().call_soon(lambda: accepted_when_the_loop_ran.append(len(accepted)))
    await ssc.advanceTo(T0)
    await ssc.stop(stopSparkContext=False)

    # the loop ran other callbacks while the burst was being accepted
    assert 0 < accepted_when_the_loop_ran[0] < 5 * BURST
    # the event order at one instant: lineage order (a, b, then what derives from them), then
    # posting order
    accepted.sort(key=lambda event: event.instanceId)
    assert [e.instanceId for e in accepted] == list(range(5 * BURST))
    names = [e.source.name for e in accepted]
    assert names[:BURST] == ["a"] * BURST
    assert names[BURST : 2 * BURST] == ["b"] * BURST
    assert names[2 * BURST :] == [mapped.name] * BURST + [both.name] * 2 * BURST
    assert [e.value for e in accepted[:BURST]] == list(range(BURST))
    # the merge's events: a's (mapped) first, then b's, each in order, every one once
    assert merged == [(mapped.name, v * 10) for v in range(BURST)] + [
        ("b", v) for v in range(BURST)
    ]


async def test_runs_are_numbered_as_one_event_at_a_time_would_be(sc: SparkContext) -> None:
    # no listener anywhere: sources take each other's events in runs (the fast path)
    ssc = virtual(sc)
    left, right, a, b = two_sources(ssc)
    mapped = a.map(lambda e: e.value * 10)
    even = mapped.filter(lambda e: e.value % 20 == 0)
    both = even.merge(b)
    seen: list[tuple[str, int, int, int]] = []

    def note(time: Any, rdd: Any, event: Any) -> None:
        parent = event.parent
        seen.append((parent.source.name, event.instanceId, parent.instanceId, event.index))

    ssc.queueStream([]).transform(note).foreachRDD(lambda rdd: None).bind(both)
    await ssc.start()
    post_burst(left, right)
    await ssc.advanceTo(T0)
    await ssc.stop(stopSparkContext=False)

    # the event order: a's, b's, the maps, the filtered, then the merge's (even's first, then b's)
    half = BURST // 2
    first_merged = 3 * BURST + half
    assert seen == [(even.name, first_merged + k, 3 * BURST + k, k) for k in range(half)] + [
        ("b", first_merged + half + k, BURST + k, half + k) for k in range(BURST)
    ]


async def test_a_failing_function_drops_only_its_event_of_a_run(sc: SparkContext) -> None:
    ssc = virtual(sc)
    subject: Subject[int] = Subject()
    source = ssc.rxEventSource(subject, "numbers")

    def tenfold(event: Any) -> int:
        if event.value == 2:
            raise ValueError("two is bad")
        return int(event.value * 10)

    def not_thirty(event: Any) -> bool:
        if event.value == 30:
            raise ValueError("thirty is worse")
        return True

    kept = source.map(tenfold, name="tenfold").filter(not_thirty, name="kept")
    values: list[int] = []
    ssc.queueStream([]).transform(lambda time, rdd, event: values.append(event.value)).foreachRDD(
        lambda rdd: None
    ).bind(kept)
    await ssc.start()
    for value in range(5):  # one instant: one run
        subject.on_next(value)
    failures = await ssc.advanceTo(T0)
    await ssc.stop(stopSparkContext=False)
    assert values == [0, 10, 40]
    assert sorted((f.operation, f.event.index) for f in failures) == [("filter", 2), ("map", 2)]
    assert "two is bad" in failures[0].describe() + failures[1].describe()


async def test_listeners_and_derived_sources_are_called_in_the_order_they_were_added(
    sc: SparkContext,
) -> None:
    ssc = virtual(sc)
    subject: Subject[int] = Subject()
    source = ssc.rxEventSource(subject, "numbers")
    calls: list[tuple[str, int]] = []
    source.addListener(lambda event: calls.append(("first", event.value)))
    doubled = source.map(lambda event: calls.append(("map", event.value)))
    source.addListener(lambda event: calls.append(("last", event.value)))
    ssc.queueStream([]).foreachRDD(lambda rdd: None).bind(doubled)
    await ssc.start()
    for value in range(3):
        subject.on_next(value)
    await ssc.advanceTo(T0)
    await ssc.stop(stopSparkContext=False)
    assert calls == [(who, value) for value in range(3) for who in ("first", "map", "last")]


async def test_an_event_a_listener_posts_that_goes_first_splits_the_run(sc: SparkContext) -> None:
    ssc = virtual(sc)
    urgent = ssc.manualSource("urgent")  # created first: at one instant its events go first
    subject: Subject[int] = Subject()
    source = ssc.rxEventSource(subject, "numbers")
    source.addListener(lambda event: urgent.trigger("now") if event.value == 1 else None)
    order: list[tuple[str, int]] = []
    for fired in (urgent, source):
        fired.addListener(lambda event: order.append((event.source.name, event.instanceId)))
    ssc.queueStream([]).foreachRDD(lambda rdd: None).bind(source.map(lambda event: None))
    await ssc.start()
    for value in range(4):
        subject.on_next(value)
    await ssc.advanceTo(T0)
    await ssc.stop(stopSparkContext=False)
    assert order == [("numbers", 0), ("numbers", 1), ("urgent", 2), ("numbers", 3), ("numbers", 4)]


async def test_a_split_in_the_middle_of_a_burst_keeps_the_rest_in_order(sc: SparkContext) -> None:
    ssc = virtual(sc)
    urgent = ssc.manualSource("urgent")
    subject: Subject[int] = Subject()
    source = ssc.rxEventSource(subject, "numbers")
    split = EVENTS_PER_FLUSH + EVENTS_PER_FLUSH // 2  # inside the burst's second slice
    source.addListener(lambda event: urgent.trigger("now") if event.value == split else None)
    order: list[tuple[str, int]] = []
    for fired in (urgent, source):
        fired.addListener(lambda event: order.append((event.source.name, event.index)))
    ssc.queueStream([]).foreachRDD(lambda rdd: None).bind(source)
    await ssc.start()
    post_burst(subject)
    await ssc.advanceTo(T0)
    await ssc.stop(stopSparkContext=False)
    numbers = [("numbers", index) for index in range(BURST)]
    assert order == [*numbers[: split + 1], ("urgent", 0), *numbers[split + 1 :]]
    assert ssc.processedThrough == BURST  # the burst and the urgent event, numbered from 0


class HeldBatches:
    """A stream bound to a new observable source whose batch for `value == held` waits
    (in the worker thread) until released; every batch notes its event's value."""

    def __init__(self, ssc: StreamingContext, held: int) -> None:
        self.subject: Subject[int] = Subject()
        self.running = threading.Event()
        self.release = threading.Event()
        self.seen: list[int] = []
        self.held = held
        source = ssc.rxEventSource(self.subject, "held")
        ssc.queueStream([]).transform(self.batch).foreachRDD(lambda rdd: None).bind(source)

    def batch(self, time: Any, rdd: Any, event: Event) -> None:
        if event.value == self.held:
            self.running.set()
            self.release.wait(10)
        self.seen.append(event.value)

    async def held_batch_running(self) -> None:
        while not self.running.is_set():
            await asyncio.sleep(0.005)


async def test_the_worker_takes_what_is_queued_while_it_runs(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None, clock=SystemClock())
    batches = HeldBatches(ssc, held=0)
    await ssc.start()
    batches.subject.on_next(0)
    await batches.held_batch_running()
    for value in range(1, 200):  # queued while the worker is busy with event 0
        batches.subject.on_next(value)
    await asyncio.sleep(0)
    assert ssc.queueDepth == 199
    batches.release.set()
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    assert batches.seen == list(range(200))
    assert ssc.processedThrough == 199


async def test_a_stop_while_the_worker_drains_drops_the_rest(sc: SparkContext) -> None:
    ssc = virtual(sc)
    batches = HeldBatches(ssc, held=10)
    await ssc.start()
    for value in range(2_000):
        batches.subject.on_next(value)
    advancing = asyncio.create_task(ssc.advanceTo(T0))
    await batches.held_batch_running()
    stopping = asyncio.create_task(ssc.stop(stopSparkContext=False, stopGracefully=False))
    await asyncio.sleep(0.05)
    batches.release.set()
    await asyncio.wait_for(stopping, 30)
    advancing.cancel()
    assert batches.seen[:11] == list(range(11))
    assert len(batches.seen) < 2_000
    assert ssc.queueDepth == 0
    assert ssc.state == "stopped"


class Crash(BaseException):
    """A simulated driver crash."""


async def test_a_crash_drops_what_was_queued_and_nothing_waits_forever(sc: SparkContext) -> None:
    ssc = virtual(sc)
    subject: Subject[int] = Subject()
    source = ssc.rxEventSource(subject, "numbers")
    ran: list[int] = []

    def batch(time: Any, rdd: Any, event: Any) -> None:
        if event.value == 5:
            raise Crash("driver died")
        ran.append(event.value)

    ssc.queueStream([]).transform(batch).foreachRDD(lambda rdd: None).bind(source)
    await ssc.start()
    for value in range(2_000):
        subject.on_next(value)
    with pytest.raises(Crash):
        await asyncio.wait_for(ssc.advanceTo(T0), 30)
    assert ran == [0, 1, 2, 3, 4]
    assert ssc.queueDepth == 0 and not ssc.acceptingEvents
    await asyncio.wait_for(ssc.stop(stopSparkContext=False), 30)
    assert ssc.state == "stopped"


REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="none")


async def test_the_worker_thread_runs_jobs_in_the_context_start_ran_in_and_ends_with_it(
    sc: SparkContext,
) -> None:
    ssc = virtual(sc)
    seen: list[tuple[str, threading.Thread]] = []
    ssc.queueStream([[1], [2]]).foreachRDD(
        lambda rdd: seen.append((REQUEST.get(), threading.current_thread()))
    ).bind(ssc.timer(T0, T0 + Seconds(1), Seconds(1), "tick"))
    REQUEST.set("set before start")
    await ssc.start()
    await ssc.advanceTo(T0 + Seconds(1))
    await ssc.stop(stopSparkContext=False)
    [(first, worker), (second, same)] = seen
    assert first == second == "set before start"
    assert worker is same and worker.name == "reactive-spark-worker"
    assert not worker.is_alive()


def test_events_have_no_instance_dict_but_read_through_to_their_parents() -> None:
    parent = ObservableEvent(None, 0, T0, {"n": 1})
    mapped = DerivedEvent.of(None, T0, parent, 42)
    filtered = DerivedEvent.of(None, T0, parent)
    for event in (parent, mapped, filtered):
        assert not hasattr(event, "__dict__")
    assert mapped.value == 42
    assert filtered.value == {"n": 1}  # the parent's: a filter carries no value of its own
    assert "value" in mapped.describe()
    assert "value" not in filtered.describe()
    assert filtered.describe()["parent"]["value"] == {"n": 1}
    with pytest.raises(AttributeError):
        filtered.missing  # noqa: B018
    merged = DerivedEvent.of(None, T0, DerivedEvent.of(None, T0, mapped))
    assert merged.value == 42  # two filters (or merges) up, the map's
    assert pickle.loads(pickle.dumps(filtered)).value == {"n": 1}
    assert "value" not in pickle.loads(pickle.dumps(filtered)).describe()
    tick = DerivedEvent.of(None, T0, TimerEvent(None, 0, T0))
    assert not hasattr(tick, "value")  # no value anywhere up the chain

    class Tagged(Event):  # a user's event type may still carry whatever it likes
        pass

    tagged = Tagged(None, 0, T0)
    tagged.tag = "mine"  # type: ignore[attr-defined]
    assert tagged.tag == "mine"  # type: ignore[attr-defined]


def test_the_system_clock_shares_one_time_per_millisecond() -> None:
    clock = SystemClock()
    readings = [clock.now() for _ in range(1_000)]
    for first, second in itertools.pairwise(readings):
        assert first.milliseconds <= second.milliseconds
        if first.milliseconds == second.milliseconds:
            assert first is second


async def test_an_event_and_what_operators_derive_from_it_are_accepted_in_one_flush(
    sc: SparkContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the runs a flush's operators post are taken by that flush: no second, empty one follows
    flushes: list[int | None] = []
    flush = EventOrder.flush

    def counted(order: EventOrder, limit: int | None = None) -> int:
        flushes.append(limit)
        return flush(order, limit)

    monkeypatch.setattr(EventOrder, "flush", counted)
    ssc = virtual(sc)
    subject: Subject[int] = Subject()
    a = ssc.rxEventSource(subject, "a")
    routed = a.map(lambda e: e.value * 2).filter(lambda e: e.value % 4 == 0).merge(a)
    seen: list[int] = []
    routed.addListener(lambda event: seen.append(event.value))
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(routed)
    await ssc.start()
    flushes.clear()
    subject.on_next(2)
    for _ in range(3):  # the loop's turns: each would run a flush scheduled meanwhile
        await asyncio.sleep(0)
    assert seen == [4, 2]
    assert len(flushes) == 1, flushes
    await ssc.stop(stopSparkContext=False)


async def test_the_worker_wakes_the_loop_only_when_something_waits_for_it(
    sc: SparkContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each time the worker is done with what was queued, waking the loop would cost it a turn
    woken: list[str] = []
    on_loop = JobScheduler._on_loop

    def counted(scheduler: JobScheduler, callback: Any, *args: Any) -> None:
        woken.append(callback.__name__)
        on_loop(scheduler, callback, *args)

    monkeypatch.setattr(JobScheduler, "_on_loop", counted)
    ssc = virtual(sc)
    subject: Subject[int] = Subject()
    started, release = threading.Event(), threading.Event()

    def job(rdd: Any) -> None:
        started.set()
        assert release.wait(60)

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(ssc.rxEventSource(subject, "a"))
    await ssc.start()
    scheduler = ssc._scheduler
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    release.set()  # the first job does not wait
    subject.on_next(1)
    await asyncio.sleep(0)  # accepted, and handed to the worker
    while scheduler.busy and loop.time() < deadline:
        await asyncio.sleep(0.01)  # until the worker has counted what it processed
    assert started.is_set() and not scheduler.busy
    assert woken == []  # done, and nothing waited: the loop was not woken
    assert await ssc.advanceTo(T0) == []
    release.clear()
    subject.on_next(2)
    advancing = asyncio.ensure_future(ssc.advanceTo(T0))
    while not scheduler._idle_waiters and loop.time() < deadline:
        await asyncio.sleep(0.01)  # the job holds the worker while the waiter registers
    release.set()
    assert await advancing == []
    assert woken == ["_wake_idle"]  # the worker, done, woke the waiter
    await ssc.stop(stopSparkContext=False)


async def test_advance_waits_for_what_a_batch_posted_from_the_worker(sc: SparkContext) -> None:
    # a batch's output posts to another source from the worker thread; the loop, busy a moment
    # after accepting, gets that event after the worker counted its batch done
    ssc = virtual(sc)
    a, b = ssc.manualSource("a"), ssc.manualSource("b")
    ran: list[object] = []
    ssc.queueStream([], default=[1]).foreachRDD(lambda t, rdd, e: b.trigger("posted")).bind(a)
    ssc.queueStream([], default=[1]).foreachRDD(lambda t, rdd, e: ran.append(e.value)).bind(b)
    loop = asyncio.get_running_loop()

    class BusyLoop(StreamingListener):
        def onEventFired(self, event: Any) -> None:
            if event.source is a:
                loop.call_soon(time.sleep, 0.5)

    ssc.addStreamingListener(BusyLoop())
    await ssc.start()
    a.trigger(1)
    assert await ssc.advanceTo(T0) == []
    assert ran == ["posted"]  # every batch at or before the instant is done
    await ssc.stop(stopSparkContext=False)
