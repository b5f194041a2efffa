"""The transformations of DStream (a mixin): `map`, `filter`, `transform`, `union`, ...

Every one is built on `transform` / `transformWith`: a new stream whose RDD for an event is a
function of its parents' RDDs for that event.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pyspark import RDD

from reactive_spark._callbacks import adapt_callback, require_callable
from reactive_spark._validation import require_int

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext
    from reactive_spark.dstream.base import DStream, RDDFunction

__all__ = ["TransformOperations", "count_values", "reduce_all"]

T = TypeVar("T")
U = TypeVar("U")


def reduce_all(rdd: RDD[T], func: Callable[[T, T], T]) -> RDD[T]:
    """One element, the reduction of `rdd`'s with `func`, in one partition (none when empty).

    Examples:
        >>> reduce_all(sc.parallelize([1, 2, 3]), operator.add).collect()
        [6]
    """
    return rdd.map(lambda x: (None, x)).reduceByKey(func, 1).map(lambda kv: kv[1])


def count_values(rdd: RDD[T], numPartitions: int) -> RDD[tuple[T, int]]:
    """`(value, count)` for the distinct values of `rdd`, in `numPartitions` partitions.

    Examples:
        >>> sorted(count_values(sc.parallelize(["a", "b", "a"]), 2).collect())
        [('a', 2), ('b', 1)]
    """
    return rdd.map(lambda x: (x, 1)).reduceByKey(operator.add, numPartitions)


class TransformOperations(Generic[T]):
    """The transformations of DStream (a mixin; DStream provides `_derive`)."""

    if TYPE_CHECKING:
        _ssc: StreamingContext

        def _derive(
            self,
            compute: RDDFunction,
            operation: str,
            user: object = None,
            others: Sequence[DStream[Any]] = (),
        ) -> DStream[Any]: ...

        def _transform_rdd(
            self, func: Callable[[RDD[Any]], RDD[Any]], operation: str, user: object = None
        ) -> DStream[Any]: ...

        def _union(self, others: Sequence[DStream[Any]]) -> DStream[Any]: ...

        def _partitions(self, numPartitions: int | None) -> int: ...

    def transform(self, func: Callable[..., RDD[U]]) -> DStream[U]:
        """A stream of `func(rdd)` for every RDD.

        `func` may take `(rdd)`, `(time, rdd)` or `(time, rdd, event)`. Over a window or a
        state, which gives the same RDD to every event of an instant (a daily and a weekly
        timer at one midnight), `func` is called once per instant, with the first of those
        events: the later ones get the RDD it returned, as a PySpark batch has one RDD.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda s: s.transform(lambda rdd: rdd.sortBy(lambda x: -x)),
            ...     [[1, 2], [3]],
            ... ))
            [[2, 1], [3]]
        """
        adapted = adapt_callback(func, 1, "func", "transform")
        return self._derive(adapted, "transform", func)

    def transformWith(
        self,
        func: Callable[..., RDD[U]],
        other: DStream[Any],
        keepSerializer: bool = False,
    ) -> DStream[U]:
        """A stream of `func(rdd_a, rdd_b)` over this stream and `other`.

        `func` may take `(a, b)`, `(time, a, b)` or `(time, a, b, event)`. The stream slides as
        this one, as in PySpark: after a `window`, it has an RDD at the window's slides only. When
        only one side has an RDD for an event, the other side is an empty RDD.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda a, b: a.transformWith(lambda x, y: x.subtract(y), b),
            ...     [[1, 2], [3]],
            ...     [[2], [3]],
            ... ))
            [[1], []]
        """
        adapted = adapt_callback(func, 2, "func", "transformWith")
        return self._derive(adapted, "transformWith", func, [other])

    def map(self, f: Callable[[T], U], preservesPartitioning: bool = False) -> DStream[U]:
        """Apply `f` to every element.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(sc, lambda s: s.map(lambda x: x * 2), [[1, 2], [3]]))
            [[2, 4], [6]]
        """
        require_callable(f, "f", "map")
        return self._transform_rdd(lambda rdd: rdd.map(f, preservesPartitioning), "map", f)

    def flatMap(
        self,
        f: Callable[[T], Iterable[U]],
        preservesPartitioning: bool = False,
    ) -> DStream[U]:
        """Apply `f` to every element and flatten the results.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(sc, lambda s: s.flatMap(str.split), [["a b", "c"]]))
            [['a', 'b', 'c']]
        """
        require_callable(f, "f", "flatMap")
        return self._transform_rdd(lambda rdd: rdd.flatMap(f, preservesPartitioning), "flatMap", f)

    def filter(self, f: Callable[[T], bool]) -> DStream[T]:
        """Keep the elements for which `f` is true.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda s: s.filter(lambda line: "ERROR" in line),
            ...     [["ERROR x", "INFO y"]],
            ... ))
            [['ERROR x']]
        """
        require_callable(f, "f", "filter")
        return self._transform_rdd(lambda rdd: rdd.filter(f), "filter", f)

    def mapPartitions(
        self,
        f: Callable[[Iterable[T]], Iterable[U]],
        preservesPartitioning: bool = False,
    ) -> DStream[U]:
        """Apply `f` to every partition's iterator.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda s: s.repartition(1).mapPartitions(lambda it: [sum(it)]),
            ...     [[1, 2], [3]],
            ... ))
            [[3], [3]]
        """
        require_callable(f, "f", "mapPartitions")
        return self._transform_rdd(
            lambda rdd: rdd.mapPartitions(f, preservesPartitioning), "mapPartitions", f
        )

    def mapPartitionsWithIndex(
        self,
        f: Callable[[int, Iterable[T]], Iterable[U]],
        preservesPartitioning: bool = False,
    ) -> DStream[U]:
        """Apply `f(partitionIndex, iterator)` to every partition.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda s: s.repartition(1).mapPartitionsWithIndex(lambda i, it: [(i, sum(it))]),
            ...     [[1, 2], [3]],
            ... ))
            [[(0, 3)], [(0, 3)]]
        """
        require_callable(f, "f", "mapPartitionsWithIndex")
        return self._transform_rdd(
            lambda rdd: rdd.mapPartitionsWithIndex(f, preservesPartitioning),
            "mapPartitionsWithIndex",
            f,
        )

    def glom(self) -> DStream[list[T]]:
        """Turn every partition into a list.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(sc, lambda s: s.repartition(1).glom(), [[1, 2], [3]]))
            [[[1, 2]], [[3]]]
        """
        return self._transform_rdd(lambda rdd: rdd.glom(), "glom")

    def reduce(self, func: Callable[[T, T], T]) -> DStream[T]:
        """One element per RDD: the reduction of its elements with `func` (none when empty).

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> import operator
            >>> asyncio.run(run_batches(sc, lambda s: s.reduce(operator.add), [[1, 2], [3]]))
            [[3], [3]]
        """
        require_callable(func, "func", "reduce")
        return self._transform_rdd(lambda rdd: reduce_all(rdd, func), "reduce", func)

    def count(self) -> DStream[int]:
        """One element per RDD: its number of elements (0 for an empty batch, as in Scala).

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(sc, lambda s: s.count(), [[1, 2], [3], []]))
            [[2], [1], [0]]
        """
        sc = self._ssc.sparkContext

        def count_rdd(rdd: RDD[Any]) -> RDD[Any]:
            counts = rdd.mapPartitions(lambda it: [(None, sum(1 for _ in it))])
            zero = sc.parallelize([(None, 0)], 1)
            return counts.union(zero).reduceByKey(operator.add, 1).map(lambda kv: kv[1])

        return self._transform_rdd(count_rdd, "count")

    def countByValue(self) -> DStream[tuple[T, int]]:
        """`(value, count)` pairs for the distinct elements of every RDD.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda s: s.countByValue(),
            ...     [["a", "b", "a"]],
            ...     sort=True,
            ... ))
            [[('a', 2), ('b', 1)]]
        """
        partitions = self._partitions(None)
        return self._transform_rdd(lambda rdd: count_values(rdd, partitions), "countByValue")

    def repartition(self, numPartitions: int) -> DStream[T]:
        """Reshuffle every RDD into `numPartitions` partitions.

        Examples:
            >>> spread = ssc.queueStream([[1, 2, 3]]).repartition(8)
        """
        require_int(numPartitions, "numPartitions")
        return self._transform_rdd(lambda rdd: rdd.repartition(numPartitions), "repartition")

    def union(self, other: DStream[U]) -> DStream[T | U]:
        """The elements of this stream and `other` (whichever have an RDD for the event).

        Both must slide alike, as in PySpark (`InvalidArgumentError`, a ValueError, otherwise).
        This stream's come first; a union of direct log streams merges in a recorded order
        (`UnionDStream`), and its RDD has `offsetRanges()`.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(sc, lambda a, b: a.union(b), [[1], [2]], [[3], [4]]))
            [[1, 3], [2, 4]]
        """
        return self._union([other])
