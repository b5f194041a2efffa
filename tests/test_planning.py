"""Compiled plans: each bound source's plan is fixed at start. A stream asked once per event
computes straight from its parents; one asked more often (a diamond, a stream that is both bound
and read by another bound stream) still computes once per event; a stream that does not react
to the source asks nothing upstream. Streams forget what they generated once per run of batches
that ran no job, and right after a batch whose jobs ran."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from pyspark import RDD, SparkContext
from reactivex.subject import Subject

from reactive_spark import DStream, Seconds, StreamingContext, Time
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


def count_memo_calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each stream computes through `getOrCompute` (patched before plans compile)."""
    calls: Counter[str] = Counter()
    generic = DStream.getOrCompute

    def counted(self: DStream[Any], event: Event) -> Any:
        calls[self.name] += 1
        return generic(self, event)

    monkeypatch.setattr(DStream, "getOrCompute", counted)
    return calls


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
    memo = count_memo_calls(monkeypatch)
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
    # asked by both sides: through the memo, twice per event; what joins two parents, and what
    # it asks, also go through `getOrCompute`; only the output is planned directly
    assert memo == Counter(
        {shared.name: 6, "queueStream[0]": 3, left.name: 3, right.name: 3, joined.name: 3}
    )


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
    memo = count_memo_calls(monkeypatch)
    ssc, tick = ticking(sc)
    calls: Counter[str] = Counter()
    numbers = ssc.queueStream([[1], [2], [3]])
    doubled = numbers.transform(counting(calls, "first")).map(lambda x: x * 2)
    seen: list[list[int]] = []
    doubled.foreachRDD(lambda rdd: seen.append(rdd.collect())).bind(tick)
    await run_ticks(ssc, 3)
    assert seen == [[2], [4], [6]]
    assert calls["first"] == 3
    assert memo == Counter()  # no stream needed `getOrCompute`'s memo
    assert numbers.rememberedCount == doubled.rememberedCount == 1  # the latest, as Spark's


async def test_a_window_in_a_chain_sees_what_its_parent_remembers(sc: SparkContext) -> None:
    ssc, tick = ticking(sc)
    numbers = ssc.queueStream([[1], [2], [3], [4]])
    doubled = numbers.map(lambda x: x * 2)
    totals: list[list[int]] = []
    doubled.tailWindow(2, 2).foreachRDD(lambda rdd: totals.append(sorted(rdd.collect()))).bind(tick)
    await run_ticks(ssc, 4)
    assert totals == [[2, 4], [6, 8]]
    assert doubled.rememberedCount == 2  # what the window needs, no more
    assert numbers.rememberedCount == 1


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
        single = DerivedEvent("source", None, parent.time, parent, value)
        for field in (*Event.__slots__, *DerivedEvent.__slots__):
            assert getattr(event, field) == getattr(single, field), field
    plain = DerivedEvent.run("source", parents)
    assert [event._value for event in plain] == [_MISSING] * 3
