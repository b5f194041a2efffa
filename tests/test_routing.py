"""The event hot path: bursts are accepted in slices without breaking §6 order, the worker
thread takes what is queued while it runs, a stop while it drains drops the rest, and events
are light (no per-instance dict) yet still read through to their parents."""

from __future__ import annotations

import asyncio
import itertools
import threading
from typing import Any

import pytest
from pyspark import SparkContext
from reactivex.subject import Subject

from reactive_spark import Event, ObservableEvent, StreamingContext, SystemClock, Time
from reactive_spark.scheduler import EVENTS_PER_FLUSH
from reactive_spark.sources.derived import DerivedEvent

from .helpers import virtual

T0 = Time(0)
BURST = 3 * EVENTS_PER_FLUSH


async def test_a_burst_is_accepted_in_slices_and_in_order(sc: SparkContext) -> None:
    ssc = virtual(sc)
    left: Subject[int] = Subject()
    right: Subject[int] = Subject()
    a = ssc.rxEventSource(left, "a")
    b = ssc.rxEventSource(right, "b")
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
    for value in range(BURST):
        left.on_next(value)
        right.on_next(value)
    asyncio.get_running_loop().call_soon(lambda: accepted_when_the_loop_ran.append(len(accepted)))
    await ssc.advanceTo(T0)
    await ssc.stop(stopSparkContext=False)

    # the loop ran other callbacks while the burst was being accepted
    assert 0 < accepted_when_the_loop_ran[0] < 5 * BURST
    # §6 at one instant: lineage order (a, b, then what derives from them), posting order
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


def test_events_have_no_instance_dict_but_read_through_to_their_parents() -> None:
    parent = ObservableEvent(None, 0, T0, {"n": 1})
    mapped = DerivedEvent(None, 0, T0, parent, 42)
    filtered = DerivedEvent(None, 0, T0, parent)
    for event in (parent, mapped, filtered):
        assert not hasattr(event, "__dict__")
    assert mapped.value == 42
    assert filtered.value == {"n": 1}  # the parent's: a filter carries no value of its own
    assert "value" in mapped.describe()
    assert "value" not in filtered.describe()
    assert filtered.describe()["parent"]["value"] == {"n": 1}
    with pytest.raises(AttributeError):
        filtered.missing  # noqa: B018

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
