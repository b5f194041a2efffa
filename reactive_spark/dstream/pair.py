"""Operations on streams of `(key, value)` pairs (pyspark's PairDStreamFunctions)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Any

from pyspark import RDD
from pyspark.core.rdd import portable_hash

from reactive_spark._callbacks import require_callable
from reactive_spark._validation import require_int
from reactive_spark.errors import InvalidArgumentError

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext
    from reactive_spark.dstream.base import DStream
    from reactive_spark.log.state import StateStore

__all__ = ["PairOperations", "register_builder"]

#: What builds the streams of `updateStateByKey` and `aggregateExactlyOnce`: their modules
#: (`dstream.state`, `log.aggregate`) sit above this one, which must not import them, and
#: register them when imported.
Builder = Callable[..., "DStream[Any]"]
_BUILDERS: dict[str, Builder] = {}


def register_builder(operation: str) -> Callable[[Builder], Builder]:
    """Make the decorated class (or function) what `operation` builds.

    Examples:
        >>> import reactive_spark.log
        >>> _BUILDERS["aggregateExactlyOnce"].__name__
        'ExactlyOnceAggregateDStream'
    """

    def register(builder: Builder) -> Builder:
        _BUILDERS[operation] = builder
        return builder

    return register


class PairOperations:
    """The key-value operations of DStream (a mixin)."""

    if TYPE_CHECKING:
        _ssc: StreamingContext

        def _transform_rdd(
            self, func: Callable[[RDD[Any]], RDD[Any]], operation: str, user: object = None
        ) -> DStream[Any]: ...

        def _transform_rddwith(
            self,
            func: Callable[[RDD[Any], RDD[Any]], RDD[Any]],
            other: DStream[Any],
            operation: str,
            user: object = None,
            needs: tuple[int, ...] = (),
        ) -> DStream[Any]: ...

    def _partitions(self, numPartitions: int | None) -> int:
        if numPartitions is None:
            return self._ssc.sparkContext.defaultParallelism
        return require_int(numPartitions, "numPartitions")

    def mapValues(self, f: Callable[[Any], Any]) -> DStream[Any]:
        """Apply `f` to every value, keeping keys (and partitioning).

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(sc, lambda s: s.mapValues(len), [[("a", "xy")]]))
            [[('a', 2)]]
        """
        require_callable(f, "f", "mapValues")
        return self._transform_rdd(lambda rdd: rdd.mapValues(f), "mapValues", f)

    def flatMapValues(self, f: Callable[[Any], Iterable[Any]]) -> DStream[Any]:
        """Apply `f` to every value and flatten, keeping keys.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(sc, lambda s: s.flatMapValues(range), [[("a", 2)]]))
            [[('a', 0), ('a', 1)]]
        """
        require_callable(f, "f", "flatMapValues")
        return self._transform_rdd(lambda rdd: rdd.flatMapValues(f), "flatMapValues", f)

    def reduceByKey(
        self, func: Callable[[Any, Any], Any], numPartitions: int | None = None
    ) -> DStream[Any]:
        """Merge the values of each key with `func`.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> import operator
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda s: s.map(lambda w: (w, 1)).reduceByKey(operator.add),
            ...     [["a", "b", "a"]],
            ...     sort=True,
            ... ))
            [[('a', 2), ('b', 1)]]
        """
        require_callable(func, "func", "reduceByKey")
        partitions = self._partitions(numPartitions)
        return self._transform_rdd(
            lambda rdd: rdd.reduceByKey(func, partitions), "reduceByKey", func
        )

    def combineByKey(
        self,
        createCombiner: Callable[[Any], Any],
        mergeValue: Callable[[Any, Any], Any],
        mergeCombiners: Callable[[Any, Any], Any],
        numPartitions: int | None = None,
    ) -> DStream[Any]:
        """Combine the values of each key, as `RDD.combineByKey`.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> import operator
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda s: s.combineByKey(lambda v: [v], lambda c, v: c + [v], operator.add),
            ...     [[("a", 1), ("a", 2)]],
            ... ))
            [[('a', [1, 2])]]
        """
        require_callable(createCombiner, "createCombiner", "combineByKey")
        require_callable(mergeValue, "mergeValue", "combineByKey")
        require_callable(mergeCombiners, "mergeCombiners", "combineByKey")
        partitions = self._partitions(numPartitions)
        return self._transform_rdd(
            lambda rdd: rdd.combineByKey(createCombiner, mergeValue, mergeCombiners, partitions),
            "combineByKey",
            mergeValue,
        )

    def groupByKey(self, numPartitions: int | None = None) -> DStream[Any]:
        """Group the values of each key into an iterable.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda s: s.groupByKey().mapValues(sorted),
            ...     [[("a", 1), ("a", 2)]],
            ... ))
            [[('a', [1, 2])]]
        """
        partitions = self._partitions(numPartitions)
        return self._transform_rdd(lambda rdd: rdd.groupByKey(partitions), "groupByKey")

    def partitionBy(
        self,
        numPartitions: int,
        partitionFunc: Callable[[Hashable], int] = portable_hash,
    ) -> DStream[Any]:
        """Partition every RDD by key into `numPartitions` partitions.

        Examples:
            >>> spread = ssc.queueStream([[("a", 1), ("b", 2)]]).partitionBy(4)
        """
        partitions = self._partitions(numPartitions)
        require_callable(partitionFunc, "partitionFunc", "partitionBy")
        return self._transform_rdd(
            lambda rdd: rdd.partitionBy(partitions, partitionFunc), "partitionBy"
        )

    def updateStateByKey(
        self,
        updateFunc: Callable[[list[Any], Any], Any],
        numPartitions: int | None = None,
        initialRDD: RDD[Any] | Iterable[Any] | None = None,
    ) -> DStream[Any]:
        """A per-key state: `updateFunc(newValues, previousState)` whenever this stream has an RDD.

        Every key is updated then, also those without new values; for an event this stream has
        no RDD for (a window between its slides) nothing is, as in PySpark. At a slide where
        this stream has no RDD (a `transform` that returned None), the last state is given
        again, unchanged, as PySpark does. Returning None removes the key. `initialRDD` (pairs)
        seeds the state.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> def running_total(new, total):
            ...     return sum(new) + (total or 0)
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda s: s.map(lambda w: (w, 1)).updateStateByKey(running_total),
            ...     [["a", "a"], ["a", "b"]],
            ...     sort=True,
            ... ))
            [[('a', 2)], [('a', 3), ('b', 1)]]
        """
        require_callable(updateFunc, "updateFunc", "updateStateByKey")
        if isinstance(numPartitions, RDD):
            raise InvalidArgumentError(
                f"numPartitions must be a positive int, got {numPartitions!r}: "
                "updateStateByKey's arguments are updateFunc, numPartitions, initialRDD; pass "
                "the initial state by keyword, updateStateByKey(updateFunc, initialRDD=rdd)"
            )
        partitions = self._partitions(numPartitions)
        initial: RDD[Any] | None = None
        if initialRDD is not None:
            if not isinstance(initialRDD, RDD | Iterable) or isinstance(initialRDD, str | bytes):
                raise InvalidArgumentError(
                    "initialRDD must be an RDD or a list of (key, state) pairs, got "
                    f"{initialRDD!r} (updateStateByKey's arguments are updateFunc, "
                    "numPartitions, initialRDD)"
                )
            initial = (
                initialRDD
                if isinstance(initialRDD, RDD)
                else self._ssc.sparkContext.parallelize(list(initialRDD))
            )
        return _BUILDERS["updateStateByKey"](self, updateFunc, partitions, initial)

    def aggregateExactlyOnce(
        self, store: StateStore, zeroValue: Any, fold: Callable[[Any, Any], Any]
    ) -> DStream[Any]:
        """Fold each key's values onto its state in `store`, exactly once (docs/exactly-once.md).

        Per batch and key, `fold(state, value)` runs over the batch's values in merged order,
        from the stored state (else `zeroValue`); then one transaction commits the new values,
        the batch's offset ranges and the downstream position. The stream must be read from
        direct log streams through per-record operations (map, filter, flatMap, union, ...),
        started from `store.committedOffsets()`.
        A batch re-run after a crash changes nothing; ranges that leave a gap or overlap the
        committed offsets fail the batch's job and change nothing. It is an output operation
        (bind it); it returns a stream of the `(key, value)` pairs each batch committed.

        Examples:
            >>> import asyncio, os, tempfile
            >>> from reactive_spark import Seconds
            >>> from reactive_spark.log import Database, FileLog, StateStore
            >>> workdir = tempfile.mkdtemp()
            >>> log = FileLog(os.path.join(workdir, "log"))
            >>> log.create_topic("clicks")
            >>> _ = [log.append("clicks", page) for page in ["/", "/docs", "/"]]
            >>> store = StateStore(Database.sqlite(os.path.join(workdir, "s.db")), "views")
            >>> start = store.committedOffsets()  # {} the first time: from the earliest
            >>> clicks = ssc.directStream(log, "clicks", start, startingOffsets="earliest")
            >>> tick = ssc.timer(t0 + Seconds(1), None, Seconds(1), "tick")
            >>> views = clicks.map(lambda kv: (kv[1], 1)).aggregateExactlyOnce(
            ...     store, 0, lambda total, n: total + n
            ... ).bind(tick)
            >>> async def run():
            ...     await ssc.start()
            ...     await ssc.advanceTo(t0 + Seconds(1))
            ...     await ssc.stop(stopSparkContext=False)
            >>> asyncio.run(run())
            >>> store.items(), store.committedOffsets()
            ({'/': 2, '/docs': 1}, {('clicks', 0): 3})
        """
        return _BUILDERS["aggregateExactlyOnce"](self, store, zeroValue, fold)  # reactive_spark.log

    def cogroup(self, other: DStream[Any], numPartitions: int | None = None) -> DStream[Any]:
        """For each key in either stream, the iterables of its values on both sides.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda a, b: a.cogroup(b).mapValues(lambda vs: (list(vs[0]), list(vs[1]))),
            ...     [[("k", 1)]],
            ...     [[("k", 2)]],
            ... ))
            [[('k', ([1], [2]))]]
        """
        partitions = self._partitions(numPartitions)
        return self._transform_rddwith(lambda a, b: a.cogroup(b, partitions), other, "cogroup")

    def join(self, other: DStream[Any], numPartitions: int | None = None) -> DStream[Any]:
        """Inner join by key with `other`.

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda clicks, users: clicks.join(users),
            ...     [[("u1", "/home"), ("u2", "/faq")]],
            ...     [[("u1", "Ada")]],
            ... ))
            [[('u1', ('/home', 'Ada'))]]
        """
        partitions = self._partitions(numPartitions)
        return self._transform_rddwith(
            lambda a, b: a.join(b, partitions), other, "join", needs=(0, 1)
        )

    def leftOuterJoin(self, other: DStream[Any], numPartitions: int | None = None) -> DStream[Any]:
        """Left outer join by key with `other` (missing right values are None).

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda clicks, users: clicks.leftOuterJoin(users),
            ...     [[("u1", "/home"), ("u2", "/faq")]],
            ...     [[("u1", "Ada")]],
            ...     sort=True,
            ... ))
            [[('u1', ('/home', 'Ada')), ('u2', ('/faq', None))]]
        """
        partitions = self._partitions(numPartitions)
        return self._transform_rddwith(
            lambda a, b: a.leftOuterJoin(b, partitions), other, "leftOuterJoin", needs=(0,)
        )

    def rightOuterJoin(self, other: DStream[Any], numPartitions: int | None = None) -> DStream[Any]:
        """Right outer join by key with `other` (missing left values are None).

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda clicks, users: clicks.rightOuterJoin(users),
            ...     [[("u1", "/home")]],
            ...     [[("u1", "Ada"), ("u3", "Bo")]],
            ...     sort=True,
            ... ))
            [[('u1', ('/home', 'Ada')), ('u3', (None, 'Bo'))]]
        """
        partitions = self._partitions(numPartitions)
        return self._transform_rddwith(
            lambda a, b: a.rightOuterJoin(b, partitions), other, "rightOuterJoin", needs=(1,)
        )

    def fullOuterJoin(self, other: DStream[Any], numPartitions: int | None = None) -> DStream[Any]:
        """Full outer join by key with `other` (missing values on either side are None).

        Examples:
            >>> import asyncio
            >>> from reactive_spark.testing import run_batches
            >>> asyncio.run(run_batches(
            ...     sc,
            ...     lambda clicks, users: clicks.fullOuterJoin(users),
            ...     [[("u1", "/home")]],
            ...     [[("u3", "Bo")]],
            ...     sort=True,
            ... ))
            [[('u1', ('/home', None)), ('u3', (None, 'Bo'))]]
        """
        partitions = self._partitions(numPartitions)
        return self._transform_rddwith(
            lambda a, b: a.fullOuterJoin(b, partitions), other, "fullOuterJoin"
        )
