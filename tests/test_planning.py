"""Plans: each bound source's plan is fixed at start. Every stream that reacts to the source
computes once per event, parents first, however many streams read it (a diamond, a stream that
is both bound and read by another bound stream); a stream that does not react to the source asks
nothing upstream; a lineage of any depth plans without recursion; a batch re-planned after a
crash runs the same steps as the live batch did. Streams forget what they generated once per run
of batches that ran no job, and right after a batch whose jobs ran."""

from __future__ import annotations

import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark import RDD, SparkContext
from reactivex.subject import Subject

from reactive_spark import DStream, Seconds, StreamingContext, StreamingListener, Time, planning
from reactive_spark.dependencies import EventDependency
from reactive_spark.dstream.base import ForEachDStream, TransformedDStream
from reactive_spark.events import Event
from reactive_spark.sources.derived import _MISSING, DerivedEvent

from .helpers import virtual

T0 = Time(0)


def counting(calls: Counter[str], name: str) -> Any:
    """A transform function that counts its calls under `name` and passes the RDD on."""

    def transform(rdd: RDD[Any]) -> RDD[Any]:
        calls[name] += 1
        return rdd

    return transform


def record_steps(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int | None]]:
    """Every `(stream, event index)` a plan computes, in order, whatever the stream's kind.

    It records what each stream's `computer` gives the plan, which the plan calls.
    """
    steps: list[tuple[str, int | None]] = []
    kinds, waiting = set(), [DStream]
    while waiting:
        kind = waiting.pop()
        kinds.add(kind)
        waiting.extend(kind.__subclasses__())
    for kind in kinds:
        if "computer" not in vars(kind):
            continue
        original = kind.computer

        def recording(self: DStream[Any], _original: Any = original) -> Any:
            compute = _original(self)

            def recorded(event: Event, *args: Any) -> Any:
                steps.append((self.name, event.index))
                return compute(event, *args)

            return recorded

        monkeypatch.setattr(kind, "computer", recording)
    return steps


def ticking(sc: SparkContext) -> tuple[StreamingContext, Any]:
    """A virtual-time context with a timer firing every second from T0 + 1 s."""
    ssc = virtual(sc)
    return ssc, ssc.timer(T0 + Seconds(1), None, Seconds(1), "tick")


async def run_ticks(ssc: StreamingContext, seconds: int) -> None:
    await ssc.start()
    await ssc.advanceTo(T0 + Seconds(seconds))
    await ssc.stop(stopSparkContext=False)


async def test_a_diamond_computes_its_shared_stream_once_per_event(
    sc: SparkContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = record_steps(monkeypatch)
    ssc, tick = ticking(sc)
    calls: Counter[str] = Counter()
    shared = ssc.queueStream([[1], [2], [3]]).transform(counting(calls, "shared"))
    left = shared.map(lambda x: x * 10)
    right = shared.map(lambda x: x * 100)
    results: list[list[int]] = []
    joined = left.transformWith(lambda a, b: a.union(b), right)
    joined.foreachRDD(lambda rdd: results.append(sorted(rdd.collect()))).bind(tick)
    await run_ticks(ssc, 3)
    assert results == [[10, 100], [20, 200], [30, 300]]
    assert calls["shared"] == 3
    # every stream once per event, parents first
    streams = ["queueStream[0]", shared.name, left.name, right.name, joined.name]
    output = ssc.graph.outputs[0].name
    assert steps == [(name, index) for index in range(3) for name in [*streams, output]]


async def test_a_bound_stream_another_bound_stream_reads_computes_once(sc: SparkContext) -> None:
    ssc, tick = ticking(sc)
    calls: Counter[str] = Counter()
    seen: list[tuple[str, list[int]]] = []
    daily = ssc.queueStream([[1], [2]]).transform(counting(calls, "daily"))
    saved = daily.foreachRDD(lambda rdd: seen.append(("daily", rdd.collect()))).bind(tick)
    saved.map(lambda x: -x).foreachRDD(lambda rdd: seen.append(("negated", rdd.collect()))).bind(
        tick
    )
    await run_ticks(ssc, 2)
    assert calls["daily"] == 2
    assert seen == [("daily", [1]), ("negated", [-1]), ("daily", [2]), ("negated", [-2])]


async def test_a_linear_chain_is_planned_straight_through(
    sc: SparkContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = record_steps(monkeypatch)
    ssc, tick = ticking(sc)
    calls: Counter[str] = Counter()
    numbers = ssc.queueStream([[1], [2], [3]])
    doubled = numbers.transform(counting(calls, "first")).map(lambda x: x * 2)
    seen: list[list[int]] = []
    doubled.foreachRDD(lambda rdd: seen.append(rdd.collect())).bind(tick)
    await run_ticks(ssc, 3)
    assert seen == [[2], [4], [6]]
    assert calls["first"] == 3
    assert Counter(name for name, _ in steps) == Counter(
        {stream.name: 3 for stream in ssc.graph.streams}
    )
    assert numbers.rememberedCount == doubled.rememberedCount == 1  # the latest, as Spark's


async def test_a_kind_of_stream_with_its_own_compute_rdd_is_computed_by_it(
    sc: SparkContext,
) -> None:
    """The plan calls the branch a transform or an output takes at every event
    (`DStream.computer`), unless a subclass computes its own way (`aggregateExactlyOnce`
    prepares its commit in its `compute_rdd`): then its `compute_rdd`, at every event."""
    ssc, tick = ticking(sc)
    computed: list[tuple[str, int | None]] = []

    class Transformed(TransformedDStream):
        def compute_rdd(self, event: Event, *args: Any) -> Any:
            computed.append(("transform", event.index))
            return super().compute_rdd(event, *args)

    class Output(ForEachDStream):
        def compute_rdd(self, event: Event, *args: Any) -> Any:
            computed.append(("output", event.index))
            return super().compute_rdd(event, *args)

    numbers = ssc.queueStream([[1], [2]])
    passed = Transformed(ssc, [EventDependency(numbers)], lambda rdds, e: rdds[0], "passed")
    seen: list[list[int]] = []
    Output(passed, lambda rdds, e: seen.append(rdds[0].collect()), "output").bind(tick)
    await run_ticks(ssc, 2)
    assert seen == [[1], [2]]
    assert computed == [("transform", 0), ("output", 0), ("transform", 1), ("output", 1)]


async def test_a_window_in_a_chain_sees_what_its_parent_remembers(sc: SparkContext) -> None:
    ssc, tick = ticking(sc)
    numbers = ssc.queueStream([[1], [2], [3], [4]])
    doubled = numbers.map(lambda x: x * 2)
    totals: list[list[int]] = []
    doubled.tailWindow(2, 2).foreachRDD(lambda rdd: totals.append(sorted(rdd.collect()))).bind(tick)
    await run_ticks(ssc, 4)
    assert totals == [[2, 4], [6, 8]]
    assert doubled.rememberedCount == 2  # what the window needs, no more
    assert numbers.rememberedCount == 2  # and what the map's RDDs are made of, as in Spark


async def test_a_stream_bound_elsewhere_asks_nothing_upstream(sc: SparkContext) -> None:
    ssc = virtual(sc)
    fast = ssc.timer(T0 + Seconds(1), None, Seconds(1), "fast")
    slow = ssc.timer(T0 + Seconds(2), None, Seconds(2), "slow")
    calls: Counter[str] = Counter()
    upstream = ssc.queueStream([], default=[1]).transform(counting(calls, "upstream"))
    only_slow = upstream.transform(counting(calls, "only-slow")).bind(slow)
    only_slow.foreachRDD(lambda rdd: None).bind(fast)  # fast events stop at only_slow
    await run_ticks(ssc, 4)
    assert calls == Counter({"upstream": 2, "only-slow": 2})


async def test_a_failing_function_in_a_compiled_chain_names_its_stream(sc: SparkContext) -> None:
    ssc, tick = ticking(sc)

    def explode(rdd: RDD[Any]) -> RDD[Any]:
        raise ValueError("no such partition")

    ssc.queueStream([[1]]).transform(explode).foreachRDD(lambda rdd: None).bind(tick)
    await ssc.start()
    failures = await ssc.advanceTo(T0 + Seconds(1))
    await ssc.stop(stopSparkContext=False)
    [failure] = failures
    assert "transform" in failure.describe() and "explode" in failure.describe()
    assert "no such partition" in failure.describe()


async def test_a_failure_points_at_the_users_code_never_at_the_plan(sc: SparkContext) -> None:
    """The plan's compiled function is reactive-spark's code: a failure's user location is the
    user's function that raised, and none when reactive-spark itself refused a result."""
    ssc, tick = ticking(sc)

    def explode(rdd: RDD[Any]) -> RDD[Any]:
        raise ValueError("no such partition")

    ssc.queueStream([[1]]).transform(explode).foreachRDD(lambda rdd: None).bind(tick)
    ssc.queueStream([[1]]).transform(lambda rdd: 42).foreachRDD(lambda rdd: None).bind(tick)
    await ssc.start()
    failures = await ssc.advanceTo(T0 + Seconds(1))
    await ssc.stop(stopSparkContext=False)
    errors = [failure.userError for failure in failures if failure.userError is not None]
    locations = {error.type: error.location for error in errors}
    assert len(errors) == 2 and set(locations) == {"ValueError", "InvalidCallbackError"}
    assert str(locations["ValueError"]).startswith("explode (test_planning.py:")
    assert locations["InvalidCallbackError"] is None
    assert all("<plan of 'tick'>" in error.traceback for error in errors)  # its frame is there


async def test_a_stream_whose_second_parent_failed_computes_nothing(sc: SparkContext) -> None:
    ssc, tick = ticking(sc)
    called: list[str] = []

    def explode(rdd: RDD[Any]) -> RDD[Any]:
        raise ValueError("second parent")

    def both(a: RDD[Any], b: RDD[Any]) -> RDD[Any]:
        called.append("both")
        return a

    good = ssc.queueStream([[1]])
    good.transformWith(both, good.transform(explode)).foreachRDD(lambda rdd: None).bind(tick)
    await ssc.start()
    failures = await ssc.advanceTo(T0 + Seconds(1))
    await ssc.stop(stopSparkContext=False)
    assert [failure.userError.type for failure in failures if failure.userError] == ["ValueError"]
    assert called == []


async def test_parents_come_in_argument_order_one_without_an_rdd_as_an_empty_one(
    sc: SparkContext,
) -> None:
    ssc, tick = ticking(sc)
    other = ssc.timer(T0 + Seconds(5), None, Seconds(5), "other")
    seen: list[tuple[list[int], list[int]]] = []

    def pair(a: RDD[int], b: RDD[int]) -> RDD[int]:
        seen.append((a.collect(), b.collect()))
        return a

    elsewhere = ssc.queueStream([[9]])
    elsewhere.bind(other)  # it has no RDD for the tick's events
    ticked = ssc.queueStream([[1], [2]])
    ticked.transformWith(pair, elsewhere).foreachRDD(lambda rdd: None).bind(tick)
    elsewhere.transformWith(pair, ticked).foreachRDD(lambda rdd: None).bind(tick)
    await run_ticks(ssc, 1)
    await ssc.stop(stopSparkContext=False)
    assert sorted(seen) == [([], [1]), ([1], [])]


async def test_a_stream_united_with_itself_has_its_elements_twice(sc: SparkContext) -> None:
    ssc, tick = ticking(sc)
    numbers = ssc.queueStream([[1, 2]])
    got: list[list[int]] = []
    numbers.union(numbers).foreachRDD(lambda rdd: got.append(sorted(rdd.collect()))).bind(tick)
    await run_ticks(ssc, 1)
    await ssc.stop(stopSparkContext=False)
    assert got == [[1, 1, 2, 2]]


async def test_any_source_name_plans_and_reports(sc: SparkContext) -> None:
    ssc = virtual(sc)
    name = 'a "quoted"\nname\x00 \u00e9'
    tick = ssc.timer(T0 + Seconds(1), None, Seconds(1), name)

    def explode(rdd: RDD[Any]) -> RDD[Any]:
        raise ValueError("no")

    ssc.queueStream([[1]]).transform(explode).foreachRDD(lambda rdd: None).bind(tick)
    await ssc.start()
    [failure] = await ssc.advanceTo(T0 + Seconds(1))
    await ssc.stop(stopSparkContext=False)
    assert "ValueError: no" in failure.describe()


async def test_a_stream_failing_after_a_good_batch_hands_on_no_rdd(sc: SparkContext) -> None:
    """A failing step leaves no RDD, not even the previous batch's: neither for its own job nor
    for a child that reads it."""
    ssc, tick = ticking(sc)
    outputs: list[tuple[int, list[int]]] = []
    jobs_at: list[int] = []

    class Jobs(StreamingListener):
        def onOutputOperationCompleted(self, outputOperationCompleted: Any) -> None:
            jobs_at.append(
                outputOperationCompleted.outputOperationInfo().batchTime().milliseconds()
            )

    def second_fails(time: Any, rdd: RDD[Any], event: Event) -> RDD[Any]:
        if event.index == 1:
            raise ValueError("second batch")
        return rdd

    failing = ssc.queueStream([[1], [2], [3]]).transform(second_fails)
    failing.foreachRDD(lambda time, rdd, event: outputs.append((event.index, rdd.collect()))).bind(
        tick
    )
    failing.bind(tick)  # bound itself too: its job would materialize a stale RDD
    ssc.addStreamingListener(Jobs())
    await ssc.start()
    failures = await ssc.advanceTo(T0 + Seconds(3))
    await ssc.stop(stopSparkContext=False)
    assert ["second batch" in failure.describe() for failure in failures] == [True]
    assert outputs == [(0, [1]), (2, [3])]
    assert sorted(jobs_at) == [1000, 1000, 3000, 3000]  # both jobs at 1 s and 3 s, none at 2 s


async def test_batches_without_jobs_forget_once_per_run_and_jobs_forget_at_once(
    sc: SparkContext,
) -> None:
    ssc = virtual(sc)
    subject: Subject[int] = Subject()
    source = ssc.rxEventSource(subject, "burst")
    cached = ssc.queueStream([], default=[1]).map(lambda x: x).cache()
    remembered_during_jobs: list[int] = []
    ran: list[int] = []

    def job(time: Any, rdd: RDD[Any], event: Event) -> None:
        ran.append(rdd.count())
        remembered_during_jobs.append(cached.rememberedCount)

    # every 50th event runs a job; the others plan to nothing
    cached.transform(lambda time, rdd, event: rdd if event.value % 50 == 0 else None).foreachRDD(
        job
    ).bind(source)
    persisted_before = sc._jsc.getPersistentRDDs().size()
    await ssc.start()
    for value in range(200):
        subject.on_next(value)
    await ssc.advanceTo(T0)
    await ssc.stop(stopSparkContext=False)
    assert ran == [1] * 4
    assert cached.rememberedCount == 1
    # a job sees this batch's RDD and the ones the batches since the last job generated
    assert max(remembered_during_jobs) <= 51
    persisted = sc._jsc.getPersistentRDDs().size() - persisted_before
    assert persisted <= 2, persisted  # forgotten cached RDDs were unpersisted


def test_a_run_of_derived_events_equals_events_derived_one_by_one() -> None:
    parents = [Event(None, index, Time(index * 10)) for index in range(3)]
    run = DerivedEvent.run("source", parents, ["x", "y", "z"])
    for event, parent, value in zip(run, parents, "xyz", strict=True):
        single = DerivedEvent.of("source", parent.time, parent, value)
        for field in (*Event.__slots__, *DerivedEvent.__slots__):
            assert getattr(event, field) == getattr(single, field), field
    plain = DerivedEvent.run("source", parents)
    assert [event._value for event in plain] == [_MISSING] * 3


async def test_a_lineage_of_2000_streams_starts_and_runs(sc: SparkContext) -> None:
    """Planning walks the graph in a loop, not by recursion: depth is not limited by Python's
    stack. (Spark pipelines consecutive maps into one Python function that it pickles
    recursively, so, as in plain PySpark, a cached stream every 100 maps cuts the pipeline.)"""
    assert sys.getrecursionlimit() < 2_000 * 2
    ssc, tick = ticking(sc)
    stream = ssc.queueStream([], default=[1, 2])
    for depth in range(1, 2_001):
        stream = stream.map(lambda x: x + 1)
        if depth % 100 == 0:
            stream = stream.cache()
    seen: list[list[int]] = []
    stream.foreachRDD(lambda rdd: seen.append(rdd.collect())).bind(tick)
    assert len(ssc.graph.streams) > 2_000
    await ssc.start()
    assert await ssc.advanceTo(T0 + Seconds(1)) == []
    await ssc.stop(stopSparkContext=False)
    assert seen == [[2_001, 2_002]]


async def test_plans_compile_off_the_event_loop(
    sc: SparkContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compiling a plan takes a while for a large lineage: it must not hold the host's loop."""
    compiled_in: list[int] = []
    compile_plan = planning._compile

    def recorded(*args: Any) -> str:
        compiled_in.append(threading.get_ident())
        return compile_plan(*args)

    monkeypatch.setattr(planning, "_compile", recorded)
    ssc, tick = ticking(sc)
    ssc.queueStream([[1]]).map(str).foreachRDD(lambda rdd: None).bind(tick)
    await ssc.start()
    await ssc.stop(stopSparkContext=False)
    assert len(compiled_in) == 1 and compiled_in[0] != threading.get_ident()


class Crash(BaseException):
    """The driver dying in the middle of a batch's job (a BaseException: not a job failure)."""


async def test_a_batch_replayed_after_a_crash_runs_the_steps_it_ran_live(
    sc: SparkContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = record_steps(monkeypatch)
    checkpoint = str(tmp_path / "checkpoint")

    def build(ssc: StreamingContext, seen: list[Any], crash_at: int | None) -> None:
        tick = ssc.timer(T0 + Seconds(1), None, Seconds(1), "tick")
        numbers = ssc.queueStream([[n] for n in range(1, 6)])
        others = ssc.queueStream([[10 * n] for n in range(1, 6)])
        windowed = numbers.map(lambda x: x * 2).tailWindow(2)
        totals = (
            windowed.union(others)
            .map(lambda x: ("all", x))
            .updateStateByKey(lambda new, total: sum(new) + (total or 0))
        )

        def output(time: Any, rdd: RDD[Any], event: Event) -> None:
            seen.append((event.index, sorted(rdd.collect())))
            if event.index == crash_at:
                raise Crash

        totals.foreachRDD(output).bind(tick)

    live: list[Any] = []
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, live, crash_at=2)
    await first.start()
    with pytest.raises(Crash):
        await first.advanceTo(T0 + Seconds(3))
    await first.stop(stopSparkContext=False)
    live_steps = [name for name, index in steps if index == 2]

    steps.clear()
    replayed: list[Any] = []
    second = virtual(sc, start=T0 + Seconds(3), checkpoint=checkpoint)
    build(second, replayed, crash_at=None)
    await second.start()  # re-plans batches 0 and 1 for the window, re-runs batch 2
    await second.stop(stopSparkContext=False)
    replay_steps = [name for name, index in steps if index == 2]

    assert [name.split("[")[0] for name in live_steps] == [
        "queueStream",
        "queueStream",
        "map",
        "tailWindow",
        "union",
        "map",
        "updateStateByKey",
        "foreachRDD",
    ]
    assert replay_steps == live_steps
    # totals over batches 0, 1, 2: (2 + 10) + (2 + 4 + 20) + (4 + 6 + 30)
    assert replayed == [live[-1]] == [(2, [("all", 78)])]
