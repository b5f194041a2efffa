"""Every DStream operation, with inputs and expected outputs in the style of pyspark's
own test_dstream.py, on a virtual clock."""

from __future__ import annotations

import functools
import operator
from itertools import chain

from pyspark import SparkContext

from reactive_spark.testing import run_batches

RANGES = [list(range(1, 5)), list(range(5, 9)), list(range(9, 13))]


async def test_map(sc: SparkContext) -> None:
    out = await run_batches(sc, lambda s: s.map(str), RANGES)
    assert out == [list(map(str, batch)) for batch in RANGES]


async def test_flatMap(sc: SparkContext) -> None:
    out = await run_batches(sc, lambda s: s.flatMap(lambda x: (x, x * 2)), RANGES)
    assert out == [list(chain.from_iterable((y, y * 2) for y in batch)) for batch in RANGES]


async def test_filter(sc: SparkContext) -> None:
    out = await run_batches(sc, lambda s: s.filter(lambda x: x % 2 == 0), RANGES)
    assert out == [[x for x in batch if x % 2 == 0] for batch in RANGES]


async def test_count(sc: SparkContext) -> None:
    batches = [list(range(5)), list(range(10)), list(range(20))]
    out = await run_batches(sc, lambda s: s.count(), batches)
    assert out == [[5], [10], [20]]


async def test_count_of_exhausted_queue_is_zero(sc: SparkContext) -> None:
    out = await run_batches(sc, lambda s: s.count(), [[1, 2]], numBatches=3)
    assert out == [[2], [0], [0]]


async def test_reduce(sc: SparkContext) -> None:
    out = await run_batches(sc, lambda s: s.reduce(operator.add), RANGES)
    assert out == [[functools.reduce(operator.add, batch)] for batch in RANGES]


async def test_reduceByKey(sc: SparkContext) -> None:
    batches = [
        [("a", 1), ("a", 1), ("b", 1), ("b", 1)],
        [("", 1), ("", 1), ("", 1), ("", 1)],
        [(1, 1), (1, 1), (2, 1), (2, 1), (3, 1)],
    ]
    out = await run_batches(sc, lambda s: s.reduceByKey(operator.add), batches, sort=True)
    assert out == [[("a", 2), ("b", 2)], [("", 4)], [(1, 2), (2, 2), (3, 1)]]


async def test_mapValues(sc: SparkContext) -> None:
    batches = [
        [("a", 2), ("b", 2), ("c", 1), ("d", 1)],
        [(0, 4), (1, 1), (2, 2), (3, 3)],
        [(1, 1), (2, 1), (3, 1), (4, 1)],
    ]
    out = await run_batches(sc, lambda s: s.mapValues(lambda x: x + 10), batches, sort=True)
    assert out == [
        [("a", 12), ("b", 12), ("c", 11), ("d", 11)],
        [(0, 14), (1, 11), (2, 12), (3, 13)],
        [(1, 11), (2, 11), (3, 11), (4, 11)],
    ]


async def test_flatMapValues(sc: SparkContext) -> None:
    batches = [[("a", 2), ("b", 2)], [(0, 4)]]
    out = await run_batches(sc, lambda s: s.flatMapValues(lambda x: (x, x + 10)), batches)
    assert out == [[("a", 2), ("a", 12), ("b", 2), ("b", 12)], [(0, 4), (0, 14)]]


async def test_glom(sc: SparkContext) -> None:
    rdds = [sc.parallelize(batch, 2) for batch in RANGES]
    out = await run_batches(sc, lambda s: s.glom(), rdds)
    assert out == [[[1, 2], [3, 4]], [[5, 6], [7, 8]], [[9, 10], [11, 12]]]


async def test_mapPartitions(sc: SparkContext) -> None:
    def partition_sum(iterator):  # type: ignore[no-untyped-def]
        yield sum(iterator)

    out = await run_batches(
        sc, lambda s: s.mapPartitions(partition_sum), [sc.parallelize(b, 2) for b in RANGES]
    )
    assert out == [[3, 7], [11, 15], [19, 23]]


async def test_mapPartitionsWithIndex(sc: SparkContext) -> None:
    out = await run_batches(
        sc,
        lambda s: s.mapPartitionsWithIndex(lambda i, it: [(i, sum(it))]),
        [sc.parallelize(b, 2) for b in RANGES[:1]],
    )
    assert out == [[(0, 3), (1, 7)]]


async def test_countByValue(sc: SparkContext) -> None:
    batches = [
        list(range(1, 5)) * 2,
        list(range(5, 7)) + list(range(5, 9)),
        ["a", "a", "b", ""],
    ]
    out = await run_batches(sc, lambda s: s.countByValue(), batches, sort=True)
    assert out == [
        [(1, 2), (2, 2), (3, 2), (4, 2)],
        [(5, 2), (6, 2), (7, 1), (8, 1)],
        [("", 1), ("a", 2), ("b", 1)],
    ]


GROUPED = [
    [(1, 1), (2, 1), (3, 1), (4, 1)],
    [(1, 1), (1, 1), (1, 1), (2, 1), (2, 1), (3, 1)],
    [("a", 1), ("a", 1), ("b", 1), ("", 1), ("", 1), ("", 1)],
]


async def test_groupByKey(sc: SparkContext) -> None:
    out = await run_batches(sc, lambda s: s.groupByKey().mapValues(list), GROUPED, sort=True)
    assert out == [
        [(1, [1]), (2, [1]), (3, [1]), (4, [1])],
        [(1, [1, 1, 1]), (2, [1, 1]), (3, [1])],
        [("", [1, 1, 1]), ("a", [1, 1]), ("b", [1])],
    ]


async def test_combineByKey(sc: SparkContext) -> None:
    out = await run_batches(
        sc,
        lambda s: s.combineByKey(str, lambda x, y: x + str(y), lambda x, y: x + y),
        GROUPED,
        sort=True,
    )
    assert out == [
        [(1, "1"), (2, "1"), (3, "1"), (4, "1")],
        [(1, "111"), (2, "11"), (3, "1")],
        [("", "111"), ("a", "11"), ("b", "1")],
    ]


async def test_partitionBy(sc: SparkContext) -> None:
    out = await run_batches(
        sc,
        lambda s: s.partitionBy(2, lambda key: key % 2).glom(),
        [[(1, "a"), (2, "b"), (3, "c"), (4, "d")]],
    )
    assert out == [[[(2, "b"), (4, "d")], [(1, "a"), (3, "c")]]]


async def test_repartition(sc: SparkContext) -> None:
    out = await run_batches(
        sc, lambda s: s.repartition(1).glom(), [sc.parallelize(b, 2) for b in RANGES[:2]]
    )
    assert out == [[[1, 2, 3, 4]], [[5, 6, 7, 8]]]


async def test_union(sc: SparkContext) -> None:
    first = [list(range(3)), list(range(5)), list(range(6))]
    second = [list(range(3, 6)), list(range(5, 6))]
    out = await run_batches(sc, lambda a, b: a.union(b), first, second, sort=True)
    assert out == [list(range(6)), list(range(6)), list(range(6))]


async def test_context_union_and_transform(sc: SparkContext) -> None:
    def build(a, b):  # type: ignore[no-untyped-def]
        ssc = a.context()
        return ssc.union(a, b, ssc.transform([a, b], lambda rdds: rdds[0].cartesian(rdds[1])))

    out = await run_batches(sc, build, [[1]], [[2]], sort=False)
    assert sorted(out[0], key=str) == sorted([1, 2, (1, 2)], key=str)


async def test_cogroup(sc: SparkContext) -> None:
    first = [[(1, 1), (2, 1), (3, 1)], [(1, 1), (1, 1), (1, 1), (2, 1)], [("a", 1), ("b", 1)], []]
    second = [[(1, 2)], [(4, 1)], [("a", 1), ("a", 1)], [("", 2)]]
    out = await run_batches(
        sc,
        lambda a, b: a.cogroup(b).mapValues(lambda vs: tuple(map(list, vs))),
        first,
        second,
        sort=True,
    )
    assert out == [
        [(1, ([1], [2])), (2, ([1], [])), (3, ([1], []))],
        [(1, ([1, 1, 1], [])), (2, ([1], [])), (4, ([], [1]))],
        [("a", ([1], [1, 1])), ("b", ([1], []))],
        [("", ([], [2]))],
    ]


LEFT = [[("a", 1), ("b", 2)]]
RIGHT = [[("b", 3), ("c", 4)]]


async def test_join(sc: SparkContext) -> None:
    out = await run_batches(sc, lambda a, b: a.join(b), LEFT, RIGHT, sort=True)
    assert out == [[("b", (2, 3))]]


async def test_leftOuterJoin(sc: SparkContext) -> None:
    out = await run_batches(sc, lambda a, b: a.leftOuterJoin(b), LEFT, RIGHT, sort=True)
    assert out == [[("a", (1, None)), ("b", (2, 3))]]


async def test_rightOuterJoin(sc: SparkContext) -> None:
    out = await run_batches(sc, lambda a, b: a.rightOuterJoin(b), LEFT, RIGHT, sort=True)
    assert out == [[("b", (2, 3)), ("c", (None, 4))]]


async def test_fullOuterJoin(sc: SparkContext) -> None:
    out = await run_batches(sc, lambda a, b: a.fullOuterJoin(b), LEFT, RIGHT, sort=True)
    assert out == [[("a", (1, None)), ("b", (2, 3)), ("c", (None, 4))]]


async def test_transform_signatures(sc: SparkContext) -> None:
    seen_events = []

    def with_event(time, rdd, event):  # type: ignore[no-untyped-def]
        seen_events.append((time, event))
        return rdd.map(lambda x: x + 1)

    def build(s):  # type: ignore[no-untyped-def]
        one = s.transform(lambda rdd: rdd.map(lambda x: x * 10))
        two = s.transform(lambda time, rdd: rdd.map(lambda x, t=time.year: (x, t)))
        three = s.transform(with_event)
        part = s.transform(functools.partial(lambda k, rdd: rdd.map(lambda x: x - k), 1))
        return one.union(two).union(three).union(part)

    out = await run_batches(sc, build, [[1]])
    assert sorted(out[0], key=str) == sorted([10, (1, 1970), 2, 0], key=str)
    time, event = seen_events[0]
    assert time.tzinfo is not None and event.time.toDatetime() == time


async def test_transformWith(sc: SparkContext) -> None:
    out = await run_batches(
        sc,
        lambda a, b: a.transformWith(lambda x, y: x.subtract(y), b),
        [[1, 2, 3], [4]],
        [[2], [4]],
        sort=True,
    )
    assert out == [[1, 3], []]
