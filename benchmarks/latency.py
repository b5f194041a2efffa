"""File arrival to job start, in the same run: a fileWatcher-bound textFileStream at its
defaults, legacy pyspark.streaming's textFileStream with a 1 s and a 0.2 s batch, and
Structured Streaming's file source at its default trigger; every arm reads the same files,
each exactly once (asserted), after the same few warm-up files. Targets: p50 <= 10 ms and
p99 <= 25 ms from a file moved in to its output function starting, and a median >= 5x lower
than Structured Streaming's (the end of each arm's job is shown too). Then a REST request to
its job start (target p50 <= 5 ms). Then event routing throughput through
map/filter/merge to a bound stream whose batches hold no Spark job (target >= 100k
events/s), beside the same map/filter/merge in bare reactivex in the same run, and the ratio
of the two (target >= 1/3). Last, the lag from an event to the start of its batch (the bound
stream's function runs) on the wall clock, with events paced at half the routing rate just
measured (target p50 <= 1 ms, p99 <= 2 ms), and under that load a timer's lag from its tick
being due to its batch starting (target p99 <= 2 ms), beside a bare asyncio timer's lateness
in the same run (what the machine gives any asyncio program). Routing and lags are measured as a
library embedded in a host runs by default (the garbage collector as the host has it) and
with `freezeHeap=True`, as `reactive-spark run` starts a context, with the full collections
seen in each: what freezing the heap gains.
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
import tempfile
import time
from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import reactivex
from _spark import local_spark, median, percentile
from pyspark import SparkContext
from pyspark.sql import SparkSession
from pyspark.streaming import StreamingContext as LegacyStreamingContext
from reactivex import operators as ops
from reactivex.subject import Subject

from reactive_spark import StreamingContext, SystemClock, Time, VirtualClock

FILES = 20
#: Files each file arm reads first, not measured: a steady state, as Spark's first jobs start
#: its Python workers and warm the JVM in every arm.
WARM_UP_FILES = 3
REQUESTS = 50
TICK_SECONDS = 0.02
ROUTED_EVENTS = 100_000
ROUTING_RUNS = 5
#: Long enough for about 1,000 ticks: a p99 over 241 was the third worst tick, which two full
#: collections could decide alone.
LAG_SECONDS = 20.0


def drop(directory: Path, name: str, staging: Path) -> float:
    """Write a file elsewhere and move it in atomically; returns the arrival time."""
    temporary = staging / name
    temporary.write_text(f"{name}\n")
    arrived = time.time()
    os.rename(temporary, directory / name)
    return arrived


async def drop_files(
    directory: Path, staging: Path, rng: random.Random, sightings: Sightings
) -> dict[str, float]:
    """The warm-up files, then (once their jobs ended) the measured ones; arrival times."""
    arrivals = {}
    for index in range(-WARM_UP_FILES, FILES):
        if index == 0:
            waited = 0.0
            while len(sightings.finished) < WARM_UP_FILES:
                assert waited < 120, f"the warm-up files were not read: {sightings.seen}"
                await asyncio.sleep(0.05)
                waited += 0.05
        await asyncio.sleep(rng.uniform(0.2, 0.9))
        name = f"warm-up{-index}.txt" if index < 0 else f"file{index:03d}.txt"
        arrivals[name] = drop(directory, name, staging)
    return arrivals


class Sightings:
    """When each file's content reached an output function, and had been read by it; how often."""

    def __init__(self) -> None:
        self.started: dict[str, float] = {}
        self.finished: dict[str, float] = {}
        self.seen: Counter[str] = Counter()

    def note(self, began: float, lines: list[str]) -> None:
        """Called with the function's start time and the lines its job read (at the job's end)."""
        ended = time.time()
        for name in lines:
            self.started.setdefault(name, began)
            self.finished.setdefault(name, ended)
            self.seen[name] += 1

    @property
    def complete(self) -> bool:
        return len(self.started) >= WARM_UP_FILES + FILES

    def latencies(self, arrivals: dict[str, float], arm: str) -> Latencies:
        """Milliseconds from arrival to the output function, and to its job's end.

        Every file was read once, whole.
        """
        assert self.seen == Counter(dict.fromkeys(arrivals, 1)), (arm, self.seen)
        measured = [name for name in arrivals if not name.startswith("warm-up")]
        return Latencies(
            [(self.started[name] - arrivals[name]) * 1000 for name in measured],
            [(self.finished[name] - arrivals[name]) * 1000 for name in measured],
        )


@dataclass
class Latencies:
    """Per file, ms from its arrival to the output function's start, and to its job's end."""

    started: list[float]
    finished: list[float]


async def reactive_latency(sc: SparkContext, root: Path) -> tuple[Latencies, list[float]]:
    """Arrival -> output function (ms), and arrival -> the watcher's event fired."""
    directory, staging = root / "reactive", root / "staging-r"
    directory.mkdir()
    staging.mkdir()
    sightings = Sightings()
    fired: dict[str, float] = {}

    def on_event(event):  # type: ignore[no-untyped-def]
        for path in event.paths:
            fired.setdefault(os.path.basename(path), time.time())

    def on_batch(rdd):  # type: ignore[no-untyped-def]
        sightings.note(time.time(), rdd.collect())

    ssc = StreamingContext(sc, None, clock=SystemClock())
    watcher = ssc.fileWatcher(str(directory), "drops")  # the defaults
    watcher.addListener(on_event)
    ssc.textFileStream(str(directory)).foreachRDD(on_batch).bind(watcher)
    await ssc.start()
    await watcher.ready()  # type: ignore[attr-defined]
    arrivals = await drop_files(directory, staging, random.Random(1), sightings)
    while not sightings.complete:
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # a second read of any file would show by now
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    measured = [name for name in arrivals if not name.startswith("warm-up")]
    firing = [(fired[name] - arrivals[name]) * 1000 for name in measured]  # each fired
    return sightings.latencies(arrivals, "reactive-spark"), firing


async def legacy_latency(sc: SparkContext, root: Path, batch: float) -> Latencies:
    directory, staging = root / f"legacy-{batch}", root / f"staging-l-{batch}"
    directory.mkdir()
    staging.mkdir()
    sightings = Sightings()

    def on_batch(batch_time, rdd):  # type: ignore[no-untyped-def]
        sightings.note(time.time(), rdd.collect())

    ssc = LegacyStreamingContext(sc, batch)
    ssc.textFileStream(str(directory)).foreachRDD(on_batch)
    ssc.start()
    await asyncio.sleep(1.5)  # the legacy file stream ignores files older than its start
    arrivals = await drop_files(directory, staging, random.Random(1), sightings)
    while not sightings.complete:
        await asyncio.sleep(0.05)
    await asyncio.sleep(max(0.5, 2 * batch))
    ssc.stop(stopSparkContext=False, stopGraceFully=False)
    return sightings.latencies(arrivals, f"legacy {batch} s")


async def structured_latency(sc: SparkContext, root: Path) -> Latencies:
    """Structured Streaming's file source, default trigger (a micro-batch as soon as possible)."""
    directory, staging = root / "structured", root / "staging-s"
    directory.mkdir()
    staging.mkdir()
    sightings = Sightings()

    def on_batch(frame, batch_id):  # type: ignore[no-untyped-def]
        sightings.note(time.time(), [row.value for row in frame.collect()])

    spark = SparkSession(sc)
    query = spark.readStream.text(str(directory)).writeStream.foreachBatch(on_batch).start()
    await asyncio.sleep(1.5)
    arrivals = await drop_files(directory, staging, random.Random(1), sightings)
    while not sightings.complete:
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)
    query.stop()
    return sightings.latencies(arrivals, "Structured Streaming")


async def rest_latency(sc: SparkContext) -> list[float]:
    """REST request sent -> its job's function starts (ms), one request at a time."""
    import aiohttp  # as the REST trigger: loaded when used

    ssc = StreamingContext(sc, None, clock=SystemClock())
    rest = ssc.restServer("127.0.0.1", 0, "triggers").post("/go")
    lags: dict[int, float] = {}
    ran: Counter[int] = Counter()

    def on_batch(batch_time, rdd, event):  # type: ignore[no-untyped-def]
        now = time.perf_counter()
        lags.setdefault(event.body["n"], (now - event.body["sent"]) * 1000)
        ran[event.body["n"]] += 1

    ssc.queueStream([], default=[0]).foreachRDD(on_batch).bind(rest)
    await ssc.start()
    url = f"http://127.0.0.1:{rest.port}/go"  # type: ignore[attr-defined]
    async with aiohttp.ClientSession() as session:
        for n in range(REQUESTS):
            await asyncio.sleep(0.02)
            body = {"n": n, "sent": time.perf_counter()}
            async with session.post(url, json=body) as answer:
                assert answer.status == 202, answer.status
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    assert ran == Counter(dict.fromkeys(range(REQUESTS), 1)), ran  # each request's job, once
    return [lags[n] for n in range(REQUESTS)]


class GcTime:
    """Seconds the cyclic garbage collector ran while inside the `with` block (any thread).

    Also how many of its runs were full collections (the oldest generation: every tracked
    object of the process), and the longest of those, in seconds.
    """

    def __init__(self) -> None:
        self.seconds = 0.0
        self.full = 0
        self.longest_full = 0.0
        self._began = 0.0

    def _note(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
            return
        took = time.perf_counter() - self._began
        self.seconds += took
        if info["generation"] == 2:
            self.full += 1
            self.longest_full = max(self.longest_full, took)

    def __enter__(self) -> GcTime:
        gc.callbacks.append(self._note)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._note)


@dataclass
class RoutingRun:
    """One routing run: wall seconds in all and posting, CPU seconds, events and batches."""

    seconds: float
    posting: float  # the producer's on_next calls, events created and queued on the loop
    loop_cpu: float  # the event loop's thread: posting, accepting, derived sources
    other_cpu: float  # other threads of this process: the scheduler's worker, planning
    gc: float  # the garbage collector, in whichever thread it ran
    accepted: int  # source and derived events
    batches: int


def routing_pipeline(ssc: StreamingContext) -> tuple[Subject[int], Subject[int], Callable[[], int]]:
    """The routing runs' lineage on `ssc`: two observable sources, map -> filter -> merge, into
    a bound stream whose batches run no Spark job. Returns the sources' subjects and a count of
    the routed events delivered."""
    left: Subject[int] = Subject()
    right: Subject[int] = Subject()
    a = ssc.rxEventSource(left, "a")
    b = ssc.rxEventSource(right, "b")
    routed = a.map(lambda e: e.value * 2).filter(lambda e: e.value % 4 == 0).merge(b)
    delivered: list[int] = []
    routed.addListener(lambda event: delivered.append(1))
    ssc.queueStream([]).transform(lambda rdd: None).foreachRDD(lambda rdd: None).bind(routed)
    return left, right, delivered.__len__


def bare_routing_pipeline() -> tuple[Subject[int], Subject[int], Callable[[], int]]:
    """The same map -> filter -> merge in bare reactivex, into a counting subscriber."""
    left: Subject[int] = Subject()
    right: Subject[int] = Subject()
    delivered = [0]

    def count(value: int) -> None:
        delivered[0] += 1

    routed = left.pipe(ops.map(lambda v: v * 2), ops.filter(lambda v: v % 4 == 0))
    reactivex.merge(routed, right).subscribe(count)
    return left, right, lambda: delivered[0]


async def routing_throughput(sc: SparkContext, *, freeze_heap: bool = False) -> RoutingRun:
    """Source events pushed through map -> filter -> merge into a bound stream.

    `freeze_heap` is the context's `freezeHeap`.
    """
    origin = Time(0)
    ssc = StreamingContext(sc, None, clock=VirtualClock(origin), freezeHeap=freeze_heap)
    left, right, delivered = routing_pipeline(ssc)
    await ssc.start()
    with GcTime() as collecting:
        began, loop_began, cpu_began = time.perf_counter(), time.thread_time(), time.process_time()
        for value in range(ROUTED_EVENTS // 2):
            left.on_next(value)
            right.on_next(value)
        posted = time.perf_counter()
        await ssc.advanceTo(origin)  # returns once every accepted event has been processed
        elapsed = time.perf_counter() - began
        loop_cpu = time.thread_time() - loop_began
        cpu = time.process_time() - cpu_began
    accepted = ssc.processedThrough + 1  # every accepted event got an instanceId, from 0
    await ssc.stop(stopSparkContext=False)
    assert delivered() == ROUTED_EVENTS * 3 // 4, delivered()  # as bare reactivex's
    assert accepted == ROUTED_EVENTS * 5 // 2, accepted  # a, b, a's maps, their half, merged
    return RoutingRun(
        elapsed,
        posted - began,
        loop_cpu,
        cpu - loop_cpu,
        collecting.seconds,
        accepted,
        delivered(),
    )


@dataclass
class LagRun:
    """One paced run: the rate achieved, event and tick lags (ms), and the collector's runs.

    `ticks_accepted` is, for each tick, how late after it was due the context accepted its
    event on the event loop (its lag in `ticks` less this is its wait to be planned).
    """

    rate: float
    lags: array[float]
    ticks: list[float]
    ticks_accepted: list[float]
    collecting: GcTime


async def routing_lag(sc: SparkContext, rate: float, *, freeze_heap: bool) -> LagRun:
    """Event -> batch start lag (ms) of the routing pipeline, `rate` source events/s paced.

    Every millisecond or so the producer posts the pairs of events due by then, each carrying
    the moment it was posted; the bound stream's function notes when it runs for the event.
    Meanwhile a timer ticks every `TICK_SECONDS`, its batch noting how late after its tick
    was due it starts, and a listener how late its event was accepted. `freeze_heap` is the
    context's `freezeHeap`.
    """
    ssc = StreamingContext(sc, None, clock=SystemClock(), freezeHeap=freeze_heap)
    left: Subject[tuple[int, float]] = Subject()
    right: Subject[tuple[int, float]] = Subject()
    a = ssc.rxEventSource(left, "a")
    b = ssc.rxEventSource(right, "b")
    routed = (
        a.map(lambda e: (e.value[0] * 2, e.value[1])).filter(lambda e: e.value[0] % 4 == 0).merge(b)
    )
    # an array, not a list: the collector walks a list's items at every full collection, and
    # a list of half a million lags would lengthen the pauses this measures
    lags = array("d")
    clock = time.perf_counter

    def batch_started(time, rdd, event):  # type: ignore[no-untyped-def]
        lags.append((clock() - event.value[1]) * 1000)

    ssc.queueStream([]).transform(batch_started).foreachRDD(lambda rdd: None).bind(routed)
    ticks: list[tuple[int, float]] = []

    def tick_started(time_, rdd, event):  # type: ignore[no-untyped-def]
        ticks.append((event.index, time.time() * 1000 - event.time.milliseconds))

    first_tick = Time(time.time_ns() // 1_000_000 + 200)
    ticker = ssc.timer(first_tick, None, TICK_SECONDS, "tick")
    accepted: dict[int, float] = {}  # tick index -> ms after due, when accepted on the loop
    ticker.addListener(
        lambda event: accepted.__setitem__(
            event.index, time.time() * 1000 - event.time.milliseconds
        )
    )
    ssc.queueStream([]).transform(tick_started).foreachRDD(lambda rdd: None).bind(ticker)
    await ssc.start()
    sent, began = 0, clock()
    with GcTime() as collecting:
        while clock() - began < LAG_SECONDS:
            due = int(rate * (clock() - began)) // 2
            while sent < due:
                posted = clock()
                left.on_next((sent, posted))
                right.on_next((sent, posted))
                sent += 1
            await asyncio.sleep(0.001)
    achieved = sent * 2 / (clock() - began)
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    assert len(lags) == sent + (sent + 1) // 2, (len(lags), sent)  # every routed event ran
    assert [index for index, _ in ticks] == list(range(len(ticks))), "a tick ran twice or never"
    assert len(ticks) >= (LAG_SECONDS - 0.3) / TICK_SECONDS, len(ticks)
    assert sorted(accepted) == [index for index, _ in ticks], "a tick was not announced once"
    return LagRun(
        achieved, lags, [lag for _, lag in ticks], [accepted[i] for i, _ in ticks], collecting
    )


async def bare_timer_lateness(seconds: float) -> list[float]:
    """Ms from due to callback of a bare asyncio timer every `TICK_SECONDS` (`loop.call_at`).

    What this machine gives any asyncio program, with nothing else running in the process:
    the floor under our timer's figures in the same run.
    """
    loop = asyncio.get_running_loop()
    late: list[float] = []
    ticked = asyncio.Event()
    due = time.time() + TICK_SECONDS
    ends = due + seconds

    def tick(due: float) -> None:
        late.append((time.time() - due) * 1000)
        ticked.set()

    while due < ends:
        ticked.clear()
        loop.call_at(loop.time() + (due - time.time()), tick, due)
        await ticked.wait()
        due += TICK_SECONDS
    assert len(late) >= seconds / TICK_SECONDS - 1, len(late)  # every tick ran once
    return late


def bare_reactivex_throughput() -> float:
    """Source events/s of the same map -> filter -> merge in bare reactivex, counted."""
    left, right, delivered = bare_routing_pipeline()
    began = time.perf_counter()
    for value in range(ROUTED_EVENTS // 2):
        left.on_next(value)
        right.on_next(value)
    elapsed = time.perf_counter() - began
    assert delivered() == ROUTED_EVENTS * 3 // 4, delivered()  # what our bound stream gets
    return ROUTED_EVENTS / elapsed


async def main() -> None:
    sc = local_spark("bench-latency")
    sc.parallelize([1]).collect()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        reactive, firing = await reactive_latency(sc, root)
        legacy = await legacy_latency(sc, root, 1.0)
        legacy_fast = await legacy_latency(sc, root, 0.2)
        structured = await structured_latency(sc, root)
        rest = await rest_latency(sc)
    print(
        f"file arrival (moved in) -> output function starts, and -> its job (a collect of the "
        f"lines) ended; {FILES} files dropped at random 0.2-0.9 s intervals, every arm reading "
        "every file once:"
    )
    ours, ours_done = reactive.started, reactive.finished
    arms = (
        ("reactive-spark fileWatcher", ours, ours_done),
        ("legacy 1 s textFileStream", legacy.started, legacy.finished),
        ("legacy 0.2 s textFileStream", legacy_fast.started, legacy_fast.finished),
        ("Structured Streaming files", structured.started, structured.finished),
    )
    for label, values, done in arms:
        print(
            f"  {label:<28} start p50 {median(values):7.1f} ms  p90 {percentile(values, 0.9):7.1f}"
            f" ms  p99 {percentile(values, 0.99):7.1f} ms  ({median(values) / median(ours):.1f}x"
            f" reactive); job ended p50 {median(done):7.1f} ms  p99 {percentile(done, 0.99):7.1f}"
            f" ms ({median(done) / median(ours_done):.1f}x)"
        )
    print(
        f"  reactive-spark p50 {median(ours):.1f} ms {verdict(median(ours) <= 10)} (target <= "
        f"10 ms), p99 {percentile(ours, 0.99):.1f} ms {verdict(percentile(ours, 0.99) <= 25)} "
        "(target <= 25 ms)"
    )
    print(
        f"  of which arrival -> the watcher's event fired: p50 {median(firing):.1f} ms, "
        f"p99 {percentile(firing, 0.99):.1f} ms; the rest is planning the batch (a list of "
        "the file's splits for the Python workers to read) and starting the output function"
    )
    for label, values, _done in arms[1:]:
        ratio = median(values) / median(ours)
        target = f" {verdict(ratio >= 5)} (target >= 5x)" if "Structured" in label else ""
        print(f"  p50 ratio {label} / reactive-spark {ratio:.1f}x{target}")
    print(
        f"REST request -> job start, {REQUESTS} requests one at a time, each job once: "
        f"p50 {median(rest):.2f} ms {verdict(median(rest) <= 5)} (target <= 5 ms), "
        f"p99 {percentile(rest, 0.99):.2f} ms, max {max(rest):.1f} ms"
    )
    runs, frozen, bare = [], [], []
    for _ in range(ROUTING_RUNS):
        runs.append(await routing_throughput(sc))
        frozen.append(await routing_throughput(sc, freeze_heap=True))
        bare.append(bare_reactivex_throughput())
    run = sorted(runs, key=lambda run: run.seconds)[ROUTING_RUNS // 2]
    every = ", ".join(f"{run.seconds:.2f}" for run in runs)
    print(
        f"routing {ROUTED_EVENTS:,} source events through map/filter/merge to a bound stream "
        f"with no Spark job, median of {ROUTING_RUNS} runs ({run.seconds:.2f} s; "
        f"all runs {every} s; "
        "target >= 100,000 source events/s):"
    )
    routed = ROUTED_EVENTS / run.seconds
    for label, rate in (
        ("source events/s", routed),
        ("events/s incl. derived", run.accepted / run.seconds),
        ("bound-stream batches/s", run.batches / run.seconds),
    ):
        print(f"  {label:<24} {rate:>10,.0f}")
    print(
        f"  bare reactivex           {median(bare):>10,.0f} source events/s (median); "
        f"ours/bare {routed / median(bare):.3f} (target >= 0.333)"
    )
    per_event = 1e6 / ROUTED_EVENTS
    print(
        f"  per source event, that run: {run.seconds * per_event:.2f} us in all "
        f"(bare {1e6 / median(bare):.2f} us); posting {run.posting * per_event:.2f} us wall; "
        f"CPU on the loop {run.loop_cpu * per_event:.2f} us, in the worker "
        f"{run.other_cpu * per_event:.2f} us; of it garbage collection {run.gc * per_event:.2f} us"
    )
    held = sorted(frozen, key=lambda run: run.seconds)[ROUTING_RUNS // 2]
    print(
        f"  with freezeHeap=True (as `reactive-spark run`), median of {ROUTING_RUNS} runs: "
        f"{ROUTED_EVENTS / held.seconds:,.0f} source events/s, ours/bare "
        f"{ROUTED_EVENTS / held.seconds / median(bare):.3f}; garbage collection "
        f"{held.gc * per_event:.2f} us per source event"
    )
    floor = await bare_timer_lateness(LAG_SECONDS / 2)
    print(
        f"bare asyncio timer (loop.call_at, nothing else running), every "
        f"{TICK_SECONDS * 1000:.0f} ms, {len(floor)} ticks: due -> callback p50 "
        f"{median(floor):.3f} ms, p99 {percentile(floor, 0.99):.3f} ms, max {max(floor):.1f} ms: "
        "what this machine gives any asyncio program, the floor under the timer figures below"
    )
    for freeze_heap, label in (
        (False, "embedded, the default: the collector left as the host set it"),
        (True, "freezeHeap=True, as `reactive-spark run` starts it"),
    ):
        lagged = await routing_lag(sc, routed / 2, freeze_heap=freeze_heap)
        lags, ticks, collecting = lagged.lags, lagged.ticks, lagged.collecting
        print(
            f"{label}: {lagged.rate:,.0f} source events/s paced (half the routing rate above)"
            f" for {LAG_SECONDS:.0f} s; {collecting.full} full collections, the longest "
            f"{collecting.longest_full * 1000:.1f} ms"
        )
        print(
            f"  event -> batch start on the wall clock, {len(lags):,} batches: p50 "
            f"{median(lags):.3f} ms, p99 {percentile(lags, 0.99):.3f} ms, max {max(lags):.1f} ms "
            "(target p50 <= 1 ms, p99 <= 2 ms)"
        )
        print(
            f"  timer tick due -> batch start, every {TICK_SECONDS * 1000:.0f} ms, {len(ticks)} "
            f"ticks each once: p50 {median(ticks):.3f} ms, p99 {percentile(ticks, 0.99):.3f} ms "
            f"{verdict(percentile(ticks, 0.99) <= 2)} (target <= 2 ms), max {max(ticks):.1f} ms"
        )
        waits = [lag - on_loop for lag, on_loop in zip(ticks, lagged.ticks_accepted, strict=True)]
        print(
            "    of which due -> accepted on the event loop p50 "
            f"{median(lagged.ticks_accepted):.3f} ms, p99 "
            f"{percentile(lagged.ticks_accepted, 0.99):.3f} ms; accepted -> batch start (behind "
            f"the events accepted before it, then planned) p50 {median(waits):.3f} ms, p99 "
            f"{percentile(waits, 0.99):.3f} ms"
        )


def verdict(met: bool) -> str:
    return "met" if met else "MISSED"


if __name__ == "__main__":
    asyncio.run(main())
