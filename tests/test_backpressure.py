"""Nothing waiting for Spark grows without bound: every source has a bound on its waiting events
and an overflow policy (block, reject, coalesce, drop-oldest, drop-newest). A producer at ten
times the rate the jobs sustain keeps its queue within the bound under every policy, and every
event it produced is accounted for: run, dropped (reported) or coalesced (counted)."""

from __future__ import annotations

import _thread
import asyncio
import itertools
import resource
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientResponse, ClientSession, ClientTimeout
from pyspark import SparkContext
from reactivex.subject import Subject

from reactive_spark import (
    EventsDropped,
    InvalidArgumentError,
    JobFailedError,
    Milliseconds,
    QueueFullError,
    Seconds,
    StreamingContext,
    StreamingListener,
    SystemClock,
    Time,
    VirtualClock,
)
from reactive_spark.events import Event, RestEvent
from reactive_spark.ordering import EventOrder
from reactive_spark.runtime import Runtime
from reactive_spark.source_queue import SourceQueue
from reactive_spark.sources import rest as rest_module
from reactive_spark.sources.http import CLIENT_CHECK, RETRY_AFTER, offer

from .helpers import ChildProcess, Recorder

T0 = Time(1_700_000_000_000)


class Drops(StreamingListener):
    """Counts what `onEventsDropped` reports, per reason."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.events: list[Any] = []

    def onEventsDropped(self, dropped: EventsDropped) -> None:
        self.counts[dropped.reason] = self.counts.get(dropped.reason, 0) + dropped.count
        self.events.extend(dropped.events)


async def soak(
    sc: SparkContext, policy: str, produced: int, bound: int, job_seconds: float
) -> dict[str, Any]:
    """A producer thread posting ten times faster than the jobs run; what became of it all."""
    ssc = StreamingContext(sc, None, clock=SystemClock())
    subject: Subject[int] = Subject()
    source = ssc.rxEventSource(subject, "producer").overflow(bound, policy)
    ran: list[tuple[int, int]] = []  # (value, how many events it stands for)

    def job(time: Any, rdd: Any, event: Any) -> None:
        ran.append((event.value, event.standsFor))
        time_sleep(job_seconds)

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(source)
    drops = Drops()
    ssc.addStreamingListener(drops)
    await ssc.start()
    deepest = 0
    refused = 0

    def produce() -> None:
        nonlocal refused
        for value in range(produced):
            try:
                subject.on_next(value)
            except QueueFullError:
                refused += 1
            time_sleep(job_seconds / 10)

    producer = threading.Thread(target=produce)
    producer.start()
    while producer.is_alive():
        deepest = max(deepest, source.queueDepth)
        await asyncio.sleep(job_seconds / 4)
    producer.join()
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    return {
        "ran": ran,
        "deepest": deepest,
        "dropped": drops.counts,
        "dropped_events": drops.events,
        "refused": refused,
    }


def time_sleep(seconds: float) -> None:
    time.sleep(seconds)


@pytest.mark.parametrize("policy", ["block", "coalesce", "drop-oldest", "drop-newest", "reject"])
async def test_a_tenfold_overload_stays_within_the_bound_and_is_accounted_for(
    sc: SparkContext, policy: str
) -> None:
    outcome = await soak(sc, policy, produced=600, bound=20, job_seconds=0.004)
    ran, dropped = outcome["ran"], outcome["dropped"]
    assert outcome["deepest"] <= 20
    values = [value for value, _ in ran]
    assert values == sorted(values) and len(set(values)) == len(values)  # in order, each once
    stood_for = sum(stands for _, stands in ran)
    coalesced = dropped.get("coalesce", 0)
    lost = dropped.get("drop-oldest", 0) + dropped.get("drop-newest", 0)
    assert stood_for == len(ran) + coalesced  # a coalesced event stands for what it merged
    assert len(ran) + coalesced + lost + outcome["refused"] == 600  # every event accounted for
    if policy == "block":
        assert len(ran) == 600 and not dropped and not outcome["refused"]
    elif policy == "reject":
        assert outcome["refused"] > 0 and not dropped
    else:
        assert len(ran) < 600 and (coalesced or lost)
        assert dropped == {policy: 600 - len(ran) - outcome["refused"]}
    if policy == "drop-newest":  # the first events run, the last ones are dropped
        assert values[0] == 0
    if policy in ("drop-oldest", "coalesce"):  # the newest event always runs
        assert values[-1] == 599


async def test_memory_stays_flat_under_a_long_overload(sc: SparkContext) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    outcome = await soak(sc, "drop-oldest", produced=20_000, bound=100, job_seconds=0.0005)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert outcome["deepest"] <= 100
    assert grown_mb < 64, grown_mb


async def test_a_same_instant_burst_is_bounded_at_every_stage(sc: SparkContext) -> None:
    """A burst posted on the loop at one virtual instant, through map and merge: the producer
    waits for the worker (block), every queue stays within its bound, all of it runs, in order.
    """
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0), maxQueuedEvents=50)
    left: Subject[int] = Subject()
    right: Subject[int] = Subject()
    a, b = ssc.rxEventSource(left, "a"), ssc.rxEventSource(right, "b")
    merged = a.map(lambda e: e.value * 2).merge(b)
    ran: list[int] = []
    ssc.queueStream([], default=[1]).foreachRDD(lambda t, rdd, event: ran.append(event.value)).bind(
        merged
    )
    await ssc.start()
    deepest = 0

    def watch(event: Any) -> None:
        nonlocal deepest
        deepest = max(deepest, a.queueDepth, b.queueDepth, merged.queueDepth)

    a.addListener(watch)
    for value in range(2_000):
        left.on_next(value)
        right.on_next(-value)
    assert await ssc.advanceTo(T0) == []
    await ssc.stop(stopSparkContext=False)
    assert deepest <= 50
    assert len(ran) == 4_000
    assert [v for v in ran if v >= 0 and v % 2 == 0][:3] == [0, 0, 2]  # a's doubled, in order
    assert [v for v in ran if v < 0] == [-v for v in range(1, 2_000)]  # b's, in order


async def test_a_manual_trigger_past_its_bound_raises(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    rerun = ssc.manualSource("rerun").overflow(maxQueued=2)
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(rerun)
    await ssc.start()
    rerun.trigger(1)
    rerun.trigger(2)
    with pytest.raises(QueueFullError, match=r"'rerun' has 2 events waiting.*maxQueued=2"):
        rerun.trigger(3)
    assert await ssc.advanceTo(T0) == []
    rerun.trigger(4)  # room again once the queue drained
    await ssc.stop(stopSparkContext=False)


async def test_a_blocked_timer_catches_up_as_its_policy_says(sc: SparkContext) -> None:
    """A timer every 10 ms feeding 50 ms jobs, bound 2: ticks missed while the queue is full
    follow the timer's catch-up policy ("latest"): nothing piles up, the newest tick runs."""
    ssc = StreamingContext(sc, None, clock=SystemClock())
    ticks = ssc.timer(ssc.clock.now(), None, Seconds(0.01), "ticks").overflow(maxQueued=2)
    ticks.catchUp = "latest"
    ran: list[int] = []

    def job(time: Any, rdd: Any, event: Any) -> None:
        ran.append(event.time.milliseconds)
        time_sleep(0.05)

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(ticks)
    await ssc.start()
    deepest = 0
    for _ in range(40):
        deepest = max(deepest, ticks.queueDepth)
        await asyncio.sleep(0.02)
    await ssc.stop(stopSparkContext=False)
    assert deepest <= 2
    assert 5 <= len(ran) <= 30  # about one tick per job, not one per 10 ms
    assert ran == sorted(ran)


async def test_ticks_a_blocked_timer_missed_are_reported_dropped_by_a_stop(
    sc: SparkContext,
) -> None:
    """A timer every 10 ms, bound 2, its first job held: the ticks it missed while its queue
    was full never ran, and a stop reports them dropped with the ones that waited, so every
    tick due before the stop either ran or was reported (they went unreported)."""
    ssc = StreamingContext(sc, None, clock=SystemClock())
    period = Milliseconds(10)
    ticks = ssc.timer(ssc.clock.now(), None, period, "ticks").overflow(maxQueued=2)
    drops = Drops()
    ssc.addStreamingListener(drops)
    held, release = threading.Event(), threading.Event()
    ran: list[Time] = []

    def job(time: Any, rdd: Any, event: Any) -> None:
        ran.append(event.time)
        held.set()
        release.wait(30)

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(ticks)
    await ssc.start()
    await asyncio.get_running_loop().run_in_executor(None, held.wait, 30)
    due = ssc.clock.now() + period * 30
    while ssc.clock.now() < due:  # 30 ticks due: 2 wait, the rest are missed
        await asyncio.sleep(0.05)
    stopping = asyncio.ensure_future(ssc.stop(stopSparkContext=False))
    await asyncio.sleep(0.05)
    release.set()
    await stopping
    reported = sorted(
        (event.time, event.standsFor) for event in drops.events if event.source is ticks
    )
    assert drops.counts == {"stop": sum(count for _, count in reported)}
    assert drops.counts["stop"] >= 10
    covered = [time + period * k for time, count in reported for k in range(count)]
    assert ran == [ran[0]]
    assert covered == [ran[0] + period * k for k in range(1, len(covered) + 1)]  # no gap


async def test_a_producer_on_the_loop_never_waits_for_room_only_the_loop_can_make(
    sc: SparkContext,
) -> None:
    """A roll-up's source under "block", triggered on the loop faster than its 0.2 s batches
    run: once a tick of the timer it reads falls due while the producer waits, what it posts
    waits behind that tick, which only the loop fires. The producer goes on (past the bound)
    once the worker has nothing left, instead of holding the loop for ever."""
    ssc = StreamingContext(sc, None, clock=SystemClock())
    now = ssc.clock.now().milliseconds
    tick = ssc.timer(Time(now + 300), None, Milliseconds(200), "tick")
    days = ssc.queueStream([], default=[1])
    days.foreachRDD(lambda rdd: None).bind(tick)
    rollups = ssc.manualSource("rollups").overflow(2, "block")
    ran: list[int] = []

    def rollup(time: Any, rdd: Any, event: Any) -> None:
        ran.append(event.value)
        time_sleep(0.2)

    days.tailWindow(1).foreachRDD(rollup).bind(rollups)
    await ssc.start()
    await asyncio.sleep(0.5)
    hung = threading.Timer(60, _thread.interrupt_main)  # a loop held for ever: interrupted
    hung.start()
    try:
        for value in range(12):
            rollups.trigger(value)  # type: ignore[attr-defined]
    except KeyboardInterrupt:
        pytest.fail("a producer on the loop waited 60 s for room only the loop could make")
    finally:
        hung.cancel()
    await ssc.stop(stopSparkContext=False, stopGracefully=True, timeout=60)
    assert ran == list(range(12))


async def test_a_stop_reports_the_event_of_a_producer_thread_waiting_for_room(
    sc: SparkContext,
) -> None:
    """A thread's `on_next` waits for room under "block" when a stop that does not wait
    begins: its event, posted before the stop, is reported dropped as what waited on the
    loop is, not only logged."""
    ssc = StreamingContext(sc, None, clock=SystemClock())
    subject: Subject[int] = Subject()
    produced = ssc.rxEventSource(subject, "produced").overflow(2, "block")
    gate = threading.Event()
    ran: list[int] = []

    def job(time: Any, rdd: Any, event: Any) -> None:
        ran.append(event.value)
        gate.wait(30)

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(produced)
    drops = Drops()
    ssc.addStreamingListener(drops)
    await ssc.start()
    entered: list[int] = []

    def produce() -> None:
        for value in range(3):
            entered.append(value)
            subject.on_next(value)

    producer = threading.Thread(target=produce)
    producer.start()
    while len(entered) < 3 or produced.queueDepth < 2:  # 0 runs, 1 waits, 2 waits for room
        await asyncio.sleep(0.01)
    stopping = asyncio.ensure_future(ssc.stop(stopSparkContext=False, stopGracefully=False))
    while ssc.acceptingEvents:  # posts are refused: the producer's wait for room ends
        await asyncio.sleep(0.01)
    gate.set()  # the running batch may end: the stop waits for it
    await stopping
    await asyncio.to_thread(producer.join, 10)
    for _ in range(1000):  # its event reaches the loop after the stop began: reported then
        if len(ran) + len(drops.events) == 3:
            break
        await asyncio.sleep(0.01)
    reported = [event.value for event in drops.events]
    assert sorted(ran + reported) == [0, 1, 2]
    assert set(drops.counts) == {"stop"}


@pytest.mark.parametrize("policy", ["all", "latest"])
async def test_a_roll_up_waits_for_the_ticks_its_blocked_timer_missed(
    sc: SparkContext, policy: str
) -> None:
    """A daily timer (every 40 ms) whose 150 ms jobs keep its queue full, bound 1, and a weekly
    roll-up over the daily outputs (every 280 ms): the ticks the daily timer missed while it
    waited for room run (as its catch-up policy says) before a roll-up of a later instant, as
    they would have in an uninterrupted run; the roll-up never overtakes them."""
    ssc = StreamingContext(sc, None, clock=SystemClock())
    now = ssc.clock.now().milliseconds
    start = now - now % 1000 + 2000  # after start() however slow: every tick fires
    daily = ssc.timer(Time(start), None, Milliseconds(40), "daily").overflow(maxQueued=1)
    daily.catchUp = policy
    weekly = ssc.timer(Time(start + 280), None, Milliseconds(280), "weekly")
    ran: list[tuple[str, int]] = []  # what the worker ran, in order: (timer, ms after start)

    def day(time: Any, rdd: Any, event: Any) -> Any:
        if event.source is daily:
            ran.append(("daily", event.time.milliseconds - start))
            time_sleep(0.15)
        return rdd

    days = ssc.queueStream([], default=[0]).transform(day).foreachRDD(lambda rdd: None)
    days.bind(daily)
    days.tailWindow(7, 7).foreachRDD(
        lambda time, rdd, event: ran.append(("weekly", event.time.milliseconds - start))
    ).bind(weekly)
    await ssc.start()
    for _ in range(600):
        if len([kind for kind, _ in ran if kind == "weekly"]) >= 2:
            break
        await asyncio.sleep(0.05)
    await ssc.stop(stopSparkContext=False)
    roll_ups = [(position, at) for position, (kind, at) in enumerate(ran) if kind == "weekly"]
    assert len(roll_ups) >= 2, ran
    for position, at in roll_ups:
        later = [tick for kind, tick in ran[position:] if kind == "daily" and tick <= at]
        assert later == [], f"daily ticks {later} ran after the roll-up at {at}: {ran}"
        if policy == "all":  # every tick before it ran, each once
            before = [tick for kind, tick in ran[:position] if kind == "daily"]
            assert before == list(range(0, at + 1, 40)), ran


async def test_a_timer_never_holds_back_the_sources_it_feeds(sc: SparkContext) -> None:
    """A delay of a blocked daily timer windows the daily outputs (so it must follow the timer)
    and is bound with a bound of 1 (so the timer's room is its room too): waiting behind the
    timer's next tick would fill it and stop the timer for good; batches keep coming."""
    ssc = StreamingContext(sc, None, clock=SystemClock())
    now = ssc.clock.now().milliseconds
    start = now - now % 1000 + 2000
    daily = ssc.timer(Time(start), None, Milliseconds(100), "daily").overflow(maxQueued=1)
    later = daily.delay(Milliseconds(250)).overflow(maxQueued=1)
    ran: list[str] = []

    def day(time: Any, rdd: Any, event: Any) -> Any:
        if event.source is daily:
            time_sleep(0.2)
        return rdd

    days = ssc.queueStream([], default=[0]).transform(day).foreachRDD(lambda rdd: None)
    days.bind(daily)
    days.tailWindow(3, 1).foreachRDD(lambda rdd: ran.append("later")).bind(later)
    await ssc.start()
    for _ in range(600):
        if len(ran) >= 4:
            break
        await asyncio.sleep(0.05)
    await asyncio.wait_for(ssc.stop(stopSparkContext=False), 30)
    assert len(ran) >= 4, ran


async def test_a_coalesced_event_a_stop_drops_counts_what_it_stood_for(sc: SparkContext) -> None:
    """Three triggers coalesced into one event (bound 2) that a stop drops before it runs:
    the stop's report counts the three, as a drop past the bound counts a stand-in."""
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    manual = ssc.manualSource("m").overflow(2, "coalesce")
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(manual)
    drops = Drops()
    ssc.addStreamingListener(drops)
    await ssc.start()
    for value in range(3):
        manual.trigger(value)
    await ssc.stop(stopSparkContext=False)  # nothing was accepted: all of it is dropped
    # the first two merged away, once each; the one standing for all three dropped by the stop
    assert drops.counts == {"coalesce": 2, "stop": 3}


def test_overflow_arguments_are_checked(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    tick = ssc.timer(T0, None, Seconds(1), "tick")
    with pytest.raises(InvalidArgumentError, match="maxQueued must be a positive int, got 0"):
        tick.overflow(maxQueued=0)
    with pytest.raises(InvalidArgumentError, match="policy must be one of block, reject"):
        tick.overflow(policy="drop")
    for policy in ("coalesce", "drop-oldest"):  # one runs while the next waits to merge
        with pytest.raises(InvalidArgumentError, match=f"at least 2 under '{policy}'.*got 1"):
            tick.overflow(1, policy)
        tick.overflow(maxQueued=1)
        with pytest.raises(InvalidArgumentError, match=f"at least 2 under '{policy}'"):
            tick.overflow(policy=policy)
        tick.overflow(maxQueued=10_000)
    rest = ssc.restServer(None, name="jobs")
    with pytest.raises(InvalidArgumentError, match="REST trigger must be 'reject' or 'block'"):
        rest.overflow(policy="drop-oldest")
    with pytest.raises(InvalidArgumentError, match="maxQueuedEvents must be a positive int"):
        StreamingContext(sc, None, maxQueuedEvents=-1)
    assert (tick.maxQueued, tick.overflowPolicy) == (10_000, "block")
    assert rest.overflowPolicy == "reject"
    assert ssc.manualSource("m").overflowPolicy == "reject"


async def test_a_stop_that_drops_waiting_events_reports_them(
    sc: SparkContext, tmp_path: Path
) -> None:
    ssc = StreamingContext(sc, None, clock=SystemClock())
    rerun = ssc.manualSource("rerun").overflow(maxQueued=1000)
    release = threading.Event()
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: release.wait(5)).bind(rerun)
    drops = Drops()
    ssc.addStreamingListener(drops)
    await ssc.start()
    for value in range(20):
        rerun.trigger(value)
    await asyncio.sleep(0.2)  # the first batch runs, the others wait
    stopping = asyncio.ensure_future(ssc.stop(False, stopGracefully=True, timeout=0.2))
    await asyncio.sleep(0.5)
    release.set()
    await stopping
    assert drops.counts.get("stop", 0) >= 15
    assert all(event.source is rerun for event in drops.events)


def read_times(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def test_recovery_after_a_sigkill_mid_overload_neither_loses_nor_resurrects(
    tmp_path: Path,
) -> None:
    """A timer at four times what its jobs sustain, dropping past its bound, killed mid-run
    and restarted on its checkpoint: no tick dropped before the crash runs after it, no tick
    runs twice (but the one whose job was killed, which re-runs), and every tick until the
    crash either ran or was reported dropped."""
    start = Time(int(time.time() * 1000) + 3_000)  # after the child's JVM is up
    first = ChildProcess("tests.overload_app", str(tmp_path), str(start.milliseconds), "40", "60")
    first.process.wait(timeout=180)
    processed_before = read_times(tmp_path / "processed.txt")
    dropped_before = set(read_times(tmp_path / "dropped.txt"))
    assert len(processed_before) == 40 and dropped_before  # overloaded, then killed
    killed_at = processed_before[-1]

    second = ChildProcess("tests.overload_app", str(tmp_path), str(start.milliseconds), "0", "2")
    assert second.next_line(timeout=180) == "started"
    assert second.next_line(timeout=120) == "finished"
    second.process.wait(timeout=60)
    processed = read_times(tmp_path / "processed.txt")
    dropped = set(read_times(tmp_path / "dropped.txt"))

    after = processed[len(processed_before) :]
    assert not dropped_before & set(after)  # what was dropped is never resurrected
    repeated = [t for t in set(processed) if processed.count(t) > 1]
    assert repeated in ([], [killed_at])  # only the killed job's batch re-ran
    first_tick = min(processed_before)  # the timer fires from the context's start on
    until_crash = range(first_tick, killed_at + 1, 5)
    accounted = set(processed) | dropped
    assert [t for t in until_crash if t not in accounted] == []  # nothing lost


async def test_a_rest_request_waiting_for_room_does_not_hold_a_stop(sc: SparkContext) -> None:
    """Under "block" a request waits for room; a stop lets it go with 503 at once."""
    ssc = StreamingContext(sc, None, clock=SystemClock())
    rest = ssc.restServer("127.0.0.1", 0, "jobs").post("/run").overflow(1, "block")
    running, release = threading.Event(), threading.Event()

    def job(rdd: Any) -> None:
        running.set()
        release.wait(60)

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(rest)
    await ssc.start()
    url = f"http://127.0.0.1:{rest.port}/run"
    async with ClientSession() as session:
        first = await session.post(url)
        assert first.status == 202  # accepted: its job holds the worker, the queue is full
        await asyncio.to_thread(running.wait, 30)
        second = asyncio.ensure_future(session.post(url))
        await asyncio.sleep(1)  # time to reach the server, where it waits for room
        assert not second.done()
        stopping = asyncio.ensure_future(ssc.stop(stopSparkContext=False))
        # answered while the first job still holds the worker: the stop let it go at once
        answer = await asyncio.wait_for(second, 30)
        assert answer.status == 503
        assert (await answer.json())["error"] == "the StreamingContext stopped"
        assert not release.is_set()
        release.set()
        await stopping


async def test_delayed_events_wait_for_room_in_order_and_never_block_the_loop(
    sc: SparkContext,
) -> None:
    """An operator firing from the clock has what finds its queue full wait its turn, in order
    and counted against the bound; a stop that does not wait reports what it drops."""
    ssc = StreamingContext(sc, None, clock=SystemClock())
    tick = ssc.timer(ssc.clock.now(), None, Milliseconds(50), "tick")
    # the first half second's ticks are accepted before any delayed event fills the queue
    late = tick.delay(Milliseconds(500)).overflow(1, "block")
    ran: list[int] = []

    def job(time_: Any, rdd: Any, event: Any) -> None:
        time.sleep(0.3)  # six delayed events fall due meanwhile: the queue stays full
        ran.append(event.time.milliseconds)

    dropped: list[EventsDropped] = []

    class Drops(StreamingListener):
        def onEventsDropped(self, eventsDropped: EventsDropped) -> None:
            dropped.append(eventsDropped)

    ssc.addStreamingListener(Drops())
    ssc.queueStream([], default=[1]).foreachRDD(job).bind(late)
    await ssc.start()
    longest_gap, last = 0.0, time.monotonic()
    for _ in range(200):  # two seconds of the loop's pulse
        await asyncio.sleep(0.01)
        now = time.monotonic()
        longest_gap, last = max(longest_gap, now - last), now
    await ssc.stop(stopSparkContext=False)  # not gracefully: what is held is dropped
    assert longest_gap < 0.5, f"the loop stood still for {longest_gap:.2f} s"
    assert len(ran) >= 3 and ran == sorted(ran)
    held = [drop for drop in dropped if drop.sourceName == "tick.delay(500 ms)"]
    assert held and {drop.reason for drop in held} == {"stop"}
    # what waits its turn counts against the bound: the timer waits, not a hidden queue (at
    # most the delayed events of the half second the queue had room for)
    assert sum(drop.count for drop in held) <= 10
    assert min(e.time.milliseconds for drop in held for e in drop.events) > ran[-1]


async def test_rest_requests_waiting_for_room_never_block_the_loop(sc: SparkContext) -> None:
    """Requests waiting for room wait off the loop: it goes on while jobs hold the worker."""
    ssc = StreamingContext(sc, None, clock=SystemClock())
    # two requests fill the queue, two wait for room (as many as the bound)
    rest = ssc.restServer("127.0.0.1", 0, "jobs").post("/run").overflow(2, "block")
    ran: list[int] = []

    def job(rdd: Any) -> None:
        time.sleep(1)  # each job holds the worker, so the queue stays full meanwhile
        ran.append(rdd.count())

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(rest)
    await ssc.start()
    url = f"http://127.0.0.1:{rest.port}/run"
    longest_gap, beating = 0.0, True

    async def heartbeat() -> None:
        nonlocal longest_gap
        last = time.monotonic()
        while beating:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            longest_gap, last = max(longest_gap, now - last), now

    beats = asyncio.ensure_future(heartbeat())
    async with ClientSession() as session:
        statuses = await asyncio.gather(*(session.post(url) for _ in range(4)))
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    beating = False
    await beats
    assert [answer.status for answer in statuses] == [202] * 4 and ran == [1] * 4
    assert longest_gap < 0.5, f"the loop stood still for {longest_gap:.2f} s"


class Crash(BaseException):
    """A simulated driver crash."""


class HeldRest:
    """A REST trigger under "block" with bound `bound`, whose jobs each wait for `gate`.

    `fill` sends as many requests as the bound: the first one's job holds the worker, the
    others' events wait for it, and the queue is full while the gate stays shut, so later
    requests wait for room. `arrived` gets each request's event as the request reaches `offer`,
    where it waits: a test knows a request waits without sleeping (`offer` runs on until it
    waits).
    """

    def __init__(self, sc: SparkContext, monkeypatch: pytest.MonkeyPatch, bound: int) -> None:
        self.ssc = StreamingContext(sc, None, clock=SystemClock())
        self.rest = self.ssc.restServer("127.0.0.1", 0, "jobs").post("/run")
        self.rest.overflow(bound, "block")
        self.gate = threading.Semaphore(0)
        self.crash = False  # the next job to pass the gate crashes the scheduler
        self.arrived: asyncio.Queue[Event] = asyncio.Queue()

        def job(rdd: Any) -> None:
            assert self.gate.acquire(timeout=60)
            if self.crash:
                raise Crash("driver died")

        def reaching(source: Any, event: Event, request: Any) -> Coroutine[Any, Any, None]:
            self.arrived.put_nowait(event)
            return offer(source, event, request)

        monkeypatch.setattr(rest_module, "offer", reaching)
        self.ssc.queueStream([], default=[1]).foreachRDD(job).bind(self.rest)

    async def start(self) -> None:
        await self.ssc.start()
        self.url = f"http://127.0.0.1:{self.rest.port}/run"

    async def fill(self, session: ClientSession) -> list[int]:
        """Fill the queue with requests accepted at once; their instanceIds."""
        ids = []
        for _ in range(self.rest.maxQueued):
            answer = await session.post(self.url)
            await self.arrived.get()
            assert answer.status == 202
            ids.append((await answer.json())["instanceId"])
        return ids

    async def waiting(self, session: ClientSession) -> asyncio.Future[ClientResponse]:
        """Send a request, once it waits for room: its answer to come."""
        answer = asyncio.ensure_future(session.post(self.url))
        await self.arrived.get()
        assert not answer.done()
        return answer

    def room_made(self) -> None:
        """Let one held job end and wait, holding the loop, until the worker made room."""
        self.gate.release()
        deadline = time.monotonic() + 30
        while self.rest.queueDepth >= self.rest.maxQueued:  # the worker counts it processed
            assert time.monotonic() < deadline, "the job did not end"
            time.sleep(0.001)


async def test_rest_requests_waiting_for_room_are_served_in_arrival_order(
    sc: SparkContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under "block" requests waiting for room are served first come, first served: one that
    arrives just as room frees goes behind those already waiting, not before them."""
    held = HeldRest(sc, monkeypatch, 3)
    await held.start()
    async with ClientSession() as session:
        ids = await held.fill(session)
        waiting = [await held.waiting(session) for _ in range(2)]
        # room frees, and a request comes before the loop has woken anyone
        held.room_made()
        late = RestEvent(held.rest, None, held.ssc.clock.now(), "POST", "/run", {}, None)
        posting = asyncio.ensure_future(offer(held.rest, late))
        held.gate.release(5)
        answers = [await asyncio.wait_for(answer, 30) for answer in waiting]
        await asyncio.wait_for(posting, 30)
        assert [answer.status for answer in answers] == [202, 202]
        ids += [(await answer.json())["instanceId"] for answer in answers]
    await held.ssc.stop(stopSparkContext=False, stopGracefully=True)
    ids.append(late.instanceId)
    assert None not in ids and ids == sorted(ids)  # in arrival order


async def test_a_freed_slot_wakes_only_the_waiting_request_it_has_room_for(
    sc: SparkContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Room for one event resumes one of the waiting requests, not every one of them."""
    held = HeldRest(sc, monkeypatch, 3)
    await held.start()
    runtime = Runtime.of(held.ssc)
    register = runtime.when_room
    wakeups = 0

    def counting(source: Any, callback: Callable[[], None]) -> None:
        def counted() -> None:
            nonlocal wakeups
            wakeups += 1
            callback()

        register(source, counted)

    monkeypatch.setattr(runtime, "when_room", counting)
    async with ClientSession() as session:
        await held.fill(session)
        waiting = [await held.waiting(session) for _ in range(3)]
        held.gate.release()  # room for one
        done, _ = await asyncio.wait(waiting, timeout=30, return_when=asyncio.FIRST_COMPLETED)
        assert done == {waiting[0]} and waiting[0].result().status == 202
        assert wakeups == 1  # the others were not woken only to wait again
        held.gate.release(5)
        assert [(await answer).status for answer in waiting[1:]] == [202, 202]
    await held.ssc.stop(stopSparkContext=False, stopGracefully=True)


async def test_no_more_rest_requests_wait_for_room_than_the_sources_bound(
    sc: SparkContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each waiting request holds its body: past the bound one more is refused, at once."""
    held = HeldRest(sc, monkeypatch, 2)
    await held.start()
    async with ClientSession() as session:
        await held.fill(session)
        waiting = [await held.waiting(session) for _ in range(2)]
        refused = await asyncio.wait_for(session.post(held.url), 30)
        assert refused.status == 503
        assert refused.headers["Retry-After"] == str(RETRY_AFTER)
        error = (await refused.json())["error"]
        assert "requests already waiting for room in 'jobs': 2" in error
        assert "retry later" in error and ".overflow(" in error
        held.gate.release(4)
        assert [(await answer).status for answer in waiting] == [202, 202]
    await held.ssc.stop(stopSparkContext=False, stopGracefully=True)


async def test_a_request_that_went_away_leaves_the_line_of_those_waiting_for_room(
    sc: SparkContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A waiting request that is cancelled (its client went away) holds no place in the line
    and its event never runs; the ones behind it move up."""
    held = HeldRest(sc, monkeypatch, 2)
    await held.start()
    events = [RestEvent(held.rest, None, held.ssc.clock.now(), "POST", "/run", {}, None)]
    events += [RestEvent(held.rest, None, events[0].time, "POST", "/run", {}, None)]
    async with ClientSession() as session:
        await held.fill(session)
        gone, staying = (asyncio.ensure_future(offer(held.rest, event)) for event in events)
        await asyncio.sleep(0)  # both wait in line
        assert not gone.done() and not staying.done()
        gone.cancel()
        with pytest.raises(asyncio.CancelledError):
            await gone
        last = await held.waiting(session)  # the line has room for it: one waits, bound two
        held.gate.release(4)
        await asyncio.wait_for(staying, 30)
        answer = await asyncio.wait_for(last, 30)
        assert answer.status == 202
        last_id = (await answer.json())["instanceId"]
    await held.ssc.stop(stopSparkContext=False, stopGracefully=True)
    assert events[0].instanceId is None  # it never ran
    assert events[1].instanceId is not None and events[1].instanceId < last_id


async def test_a_request_whose_client_gave_up_leaves_the_line_and_never_runs(
    sc: SparkContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """aiohttp lets a handler run on when its client goes away: the request still leaves the
    line, so its event never runs and the next callers wait in its place, not refused."""
    held = HeldRest(sc, monkeypatch, 2)
    await held.start()
    async with ClientSession() as session:
        await held.fill(session)
        async with ClientSession(timeout=ClientTimeout(total=0.5)) as impatient:
            with pytest.raises(asyncio.TimeoutError):
                await impatient.post(held.url)  # waits in line, then its client gives up
        gone = await held.arrived.get()
        await asyncio.sleep(CLIENT_CHECK * 3)  # the handler sees the client gone
        waiting = [await held.waiting(session) for _ in range(2)]  # both places are free
        held.gate.release(4)
        answers = [await asyncio.wait_for(answer, 30) for answer in waiting]
        assert [answer.status for answer in answers] == [202, 202]
    await held.ssc.stop(stopSparkContext=False, stopGracefully=True)
    assert gone.instanceId is None  # it never ran
    assert held.ssc.processedThrough == 3  # the two filling the queue, the two that waited


@pytest.mark.parametrize("how", ["stop", "graceful stop", "crash"])
async def test_rest_requests_waiting_for_room_are_refused_when_the_context_stops(
    sc: SparkContext, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Every request waiting for room is answered 503 as soon as the context stops accepting:
    a stop (graceful or not: neither waits for them), or a crash of the scheduler."""
    held = HeldRest(sc, monkeypatch, 3)
    await held.start()
    async with ClientSession() as session:
        await held.fill(session)
        waiting = [await held.waiting(session) for _ in range(3)]
        stopping = None
        if how == "crash":
            held.crash = True
            held.gate.release()
        else:
            graceful = how == "graceful stop"
            stopping = asyncio.ensure_future(
                held.ssc.stop(stopSparkContext=False, stopGracefully=graceful)
            )
        # answered while the accepted jobs still hold the worker: a graceful stop runs what was
        # accepted, and what waits for room is refused at once, not once room frees
        answers = [await asyncio.wait_for(answer, 30) for answer in waiting]
        assert [answer.status for answer in answers] == [503] * 3
        for answer in answers:
            assert (await answer.json())["error"] == "the StreamingContext stopped"
        held.gate.release(6)
        if stopping is None:
            with pytest.raises(Crash):
                await held.ssc.awaitTerminationOrTimeout(30)
            stopping = asyncio.ensure_future(held.ssc.stop(stopSparkContext=False))
        await asyncio.wait_for(stopping, 30)


async def test_a_rest_request_whose_event_a_crash_drops_is_refused_at_once(
    sc: SparkContext,
) -> None:
    """A request whose event waits to be accepted (its operator downstream is full) is
    answered 503 when a crash of the scheduler drops that event, not held until a stop."""
    ssc = StreamingContext(sc, None, clock=SystemClock())
    rest = ssc.restServer("127.0.0.1", 0, "jobs").post("/run")
    mapped = rest.map(lambda event: 1).overflow(1, "block")
    gate = threading.Event()

    def job(rdd: Any) -> None:
        assert gate.wait(60)
        raise Crash("driver died")

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(mapped)
    await ssc.start()
    url = f"http://127.0.0.1:{rest.port}/run"
    async with ClientSession() as session:
        first = await session.post(url)  # its job holds the worker: `mapped` is full
        assert first.status == 202
        second = asyncio.ensure_future(session.post(url))
        while rest.queueDepth < 1:  # its event waits to be accepted behind the full `mapped`
            await asyncio.sleep(0.01)
        assert not second.done()
        gate.set()
        answer = await asyncio.wait_for(second, 30)
        assert answer.status == 503
        assert (await answer.json())["error"] == "the StreamingContext stopped"
    with pytest.raises(Crash):
        await ssc.awaitTerminationOrTimeout(30)
    await ssc.stop(stopSparkContext=False)


@pytest.mark.parametrize("policy", ["block", "reject", "drop-newest", "drop-oldest", "coalesce"])
def test_a_queue_is_full_exactly_when_its_depth_reaches_its_bound(policy: str) -> None:
    # `full` runs for every posted event and computes the depth itself: it must agree
    for pending, accepted, processed, in_transit in itertools.product(
        range(4), range(4), range(4), range(3)
    ):
        if processed > accepted:
            continue
        queue = SourceQueue(None, 3, policy, pending, in_transit, accepted, processed)  # type: ignore[arg-type]
        assert queue.full == (queue.depth >= queue.bound), (pending, accepted, processed)
    # events on their way from other threads count where their producers were admitted
    waiting_two = SourceQueue(None, 3, policy, pending=2, in_transit=1)  # type: ignore[arg-type]
    assert waiting_two.full == (policy in ("block", "reject"))


class _Source:
    """What `EventOrder` reads of a source."""

    name, lineage_rank, maxQueued, parents = "s", 0, 3, ()

    def __init__(self, policy: str) -> None:
        self.overflowPolicy = policy


class _Event:
    """What `EventOrder.post` reads of an event."""

    def __init__(self, source: _Source) -> None:
        self.source, self.time = source, Time(0)


@pytest.mark.parametrize("policy", ["block", "reject", "drop-newest", "drop-oldest", "coalesce"])
def test_posting_on_the_loop_overflows_exactly_when_the_queue_is_full(policy: str) -> None:
    # `EventOrder.post` tests what `SourceQueue.full` says inline (it runs for every event)
    loop = asyncio.new_event_loop()
    try:
        source = _Source(policy)
        order = EventOrder(None, lambda runs: None, lambda name, times: None)  # type: ignore[arg-type]
        order.start(loop, frozenset(), lambda s: [], {}, [source])  # type: ignore[list-item]
        queue = order.queue_of(source)  # type: ignore[arg-type]
        assert queue is not None
        overflowed: list[object] = []
        order._overflow = lambda queue, event: overflowed.append(event)  # type: ignore[method-assign]
        for pending, accepted, processed, in_transit in itertools.product(
            range(4), range(4), range(4), range(3)
        ):
            if processed > accepted:
                continue
            queue.pending, queue.accepted = pending, accepted
            queue.processed, queue.in_transit = processed, in_transit
            full = queue.full
            event = _Event(source)
            order.post(event)  # type: ignore[arg-type]
            assert (overflowed == [event]) == full, (pending, accepted, processed, in_transit)
            overflowed.clear()
    finally:
        loop.close()


@pytest.mark.parametrize("bound", [1, 3])
async def test_posting_on_the_loop_meets_the_policy_exactly_at_the_bound(
    sc: SparkContext, bound: int
) -> None:
    # `EventOrder.post` tests what `SourceQueue.full` says inline: the two must agree
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    kept = ssc.manualSource("kept").overflow(bound, "drop-newest")
    ran: list[int] = []
    ssc.queueStream([], default=[1]).foreachRDD(lambda t, rdd, event: ran.append(event.value)).bind(
        kept
    )
    await ssc.start()
    for value in range(bound + 2):
        assert (kept.queueDepth >= bound) == (value >= bound)
        kept.trigger(value)  # on the loop: the inline test decides
    assert kept.queueDepth == bound
    assert await ssc.advanceTo(T0) == []
    await ssc.stop(stopSparkContext=False)
    assert ran == list(range(bound))


async def test_a_delayed_event_its_full_queue_refuses_is_reported(sc: SparkContext) -> None:
    # it fires from a clock action: an exception there would reach no one (on the system
    # clock the loop's handler only logs it), so the refusal is reported as a source error
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    manual = ssc.manualSource("m")
    delayed = manual.delay(Seconds(1)).overflow(1, "reject")
    ran: list[int] = []
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: ran.append(1)).bind(delayed)
    await ssc.start()
    for _ in range(3):
        manual.fire(T0)  # three delayed events due at one instant: the queue holds one
    failures = await ssc.advanceTo(T0 + Seconds(2))
    await ssc.stop(stopSparkContext=False)
    assert ran == [1]
    assert [(f.sourceName, f.operation) for f in failures] == [(delayed.name, "delay")] * 2
    assert all(isinstance(f.error, QueueFullError) for f in failures)
    assert failures[0].event is not None and failures[0].event.source is manual


class _Timer:
    """What `EventOrder` reads of a source whose events are accepted (a timer's, say)."""

    parents, wants_each_event = (), False

    def __init__(self, name: str, rank: int, bound: int) -> None:
        self.name, self.lineage_rank = name, rank
        self.maxQueued, self.overflowPolicy = bound, "block"
        self.index_sequence = itertools.count()

    def forward_runs(self, run: list[Any]) -> None:
        pass


class _Tick:
    """What `EventOrder` reads and numbers of an event."""

    def __init__(self, source: _Timer, second: int) -> None:
        self.source, self.time = source, T0 + Seconds(second)
        self.index: int | None = None
        self.instanceId: int | None = None


def test_missed_events_wait_for_room_in_order_without_holding_the_loop() -> None:
    """A catch-up past a bound: its events are posted as room frees, in time then lineage
    order across sources, within the bound; a live event posted on the loop meanwhile waits
    behind them instead of holding the loop (nothing here runs the loop or the worker)."""
    loop = asyncio.new_event_loop()
    try:
        daily, weekly = _Timer("daily", 0, 2), _Timer("weekly", 1, 3)
        accepted: list[tuple[str, int]] = []

        def ready(runs: list[list[Any]]) -> None:
            for run in runs:
                accepted.extend((e.source.name, (e.time - T0) // Seconds(1)) for e in run)

        bus = type("Listeners", (), {"active": False})()
        order = EventOrder(bus, ready, lambda name, times: None)  # type: ignore[arg-type]
        holds = {daily: {daily, weekly}, weekly: {weekly}}  # weekly reads what daily made
        order.start(loop, frozenset((daily, weekly)), lambda s: [s], holds, [daily, weekly])  # type: ignore[arg-type]
        queue = order.queue_of(daily)  # type: ignore[arg-type]
        assert queue is not None
        order.catch_up([*(_Tick(daily, s) for s in range(1, 6)), _Tick(weekly, 3)])  # type: ignore[misc]
        assert not order.has_room(daily)  # type: ignore[arg-type]
        order.post(_Tick(daily, 10))  # type: ignore[arg-type] # live, on the loop: not waited for
        depths = []
        for _ in range(4):
            order.flush()
            depths.append(queue.depth)
            order.processed(daily, queue.accepted - queue.processed)  # type: ignore[arg-type]
        assert accepted == [
            ("daily", 1),
            ("daily", 2),
            ("daily", 3),
            ("weekly", 3),
            ("daily", 4),
            ("daily", 5),
            ("daily", 10),
        ]
        assert depths == [2, 2, 2, 0] and not order.has_pending
        assert queue.missed == 0 and order.has_room(daily)  # type: ignore[arg-type]
    finally:
        loop.close()


async def test_a_timer_tick_refused_under_reject_is_the_timers_failure(sc: SparkContext) -> None:
    """concepts.md: under `"reject"` a tick that finds its queue full is reported as the
    timer's failure (`onSourceError`) and never runs; the timer goes on ticking."""
    ssc = StreamingContext(sc, None, clock=SystemClock())
    ticks = ssc.timer(ssc.clock.now() + Milliseconds(100), None, Milliseconds(50), "ticks")
    ticks.overflow(1, "reject")
    release = threading.Event()
    ran: list[tuple[int, int]] = []

    def held(time_: Time, rdd: Any, event: Event) -> None:
        release.wait(30)  # the first tick runs until one is refused: its queue holds one
        ran.append((event.index, event.time.milliseconds))  # type: ignore[arg-type]

    ssc.queueStream([], default=[1]).foreachRDD(held).bind(ticks)
    recorder = Recorder()
    ssc.addStreamingListener(recorder)
    await ssc.start()
    deadline = time.monotonic() + 30
    while not recorder.source_errors and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    release.set()
    while len(ran) < 3 and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    assert len(ran) >= 3, (ran, recorder.source_errors)
    assert [index for index, _ in ran] == list(range(len(ran)))  # a refused tick has no index
    first, second = ran[0][1], ran[1][1]
    assert second - first > 50  # the ticks refused between them never ran
    assert {(e.sourceName, e.operation, type(e.error)) for e in recorder.source_errors} == {
        ("ticks", "tick", QueueFullError)
    }
    with pytest.raises(JobFailedError, match="ticks"):  # a failure, as any source's
        await ssc.awaitTermination()
