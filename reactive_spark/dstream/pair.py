"""Operations on streams of `(key, value)` pairs (pyspark's PairDStreamFunctions)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Any

from pyspark import RDD
from pyspark.core.rdd import portable_hash

from reactive_spark._callbacks import require_callable
from reactive_spark._validation import require_int

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext
    from reactive_spark.dstream.base import DStream

__all__ = ["PairOperations"]


class PairOperations:
    """The key-value operations of DStream (a mixin)."""

    if TYPE_CHECKING:
        _ssc: StreamingContext

        def _transformRDD(
            self, func: Callable[[RDD[Any]], RDD[Any]], operation: str, user: object = None
        ) -> DStream[Any]: ...

        def _transformRDDWith(
            self,
            func: Callable[[RDD[Any], RDD[Any]], RDD[Any]],
            other: DStream[Any],
            operation: str,
            user: object = None,
        ) -> DStream[Any]: ...

    def _partitions(self, numPartitions: int | None) -> int:
        if numPartitions is None:
            return self._ssc.sparkContext.defaultParallelism
        return require_int(numPartitions, "numPartitions")

    def mapValues(self, f: Callable[[Any], Any]) -> DStream[Any]:
        """Apply `f` to every value, keeping keys (and partitioning).

        Example:
            >>> # pairs.mapValues(len)
        """
        require_callable(f, "f", "mapValues")
        return self._transformRDD(lambda rdd: rdd.mapValues(f), "mapValues", f)

    def flatMapValues(self, f: Callable[[Any], Iterable[Any]]) -> DStream[Any]:
        """Apply `f` to every value and flatten, keeping keys.

        Example:
            >>> # pairs.flatMapValues(lambda v: range(v))
        """
        require_callable(f, "f", "flatMapValues")
        return self._transformRDD(lambda rdd: rdd.flatMapValues(f), "flatMapValues", f)

    def reduceByKey(
        self, func: Callable[[Any, Any], Any], numPartitions: int | None = None
    ) -> DStream[Any]:
        """Merge the values of each key with `func`.

        Example:
            >>> # words.map(lambda w: (w, 1)).reduceByKey(operator.add)
        """
        require_callable(func, "func", "reduceByKey")
        return self.combineByKey(lambda x: x, func, func, numPartitions)

    def combineByKey(
        self,
        createCombiner: Callable[[Any], Any],
        mergeValue: Callable[[Any, Any], Any],
        mergeCombiners: Callable[[Any, Any], Any],
        numPartitions: int | None = None,
    ) -> DStream[Any]:
        """Combine the values of each key, as `RDD.combineByKey`.

        Example:
            >>> # pairs.combineByKey(lambda v: [v], lambda c, v: c + [v], operator.add)
        """
        require_callable(createCombiner, "createCombiner", "combineByKey")
        require_callable(mergeValue, "mergeValue", "combineByKey")
        require_callable(mergeCombiners, "mergeCombiners", "combineByKey")
        partitions = self._partitions(numPartitions)
        return self._transformRDD(
            lambda rdd: rdd.combineByKey(createCombiner, mergeValue, mergeCombiners, partitions),
            "combineByKey",
            mergeValue,
        )

    def groupByKey(self, numPartitions: int | None = None) -> DStream[Any]:
        """Group the values of each key into an iterable.

        Example:
            >>> # pairs.groupByKey().mapValues(list)
        """
        partitions = self._partitions(numPartitions)
        return self._transformRDD(lambda rdd: rdd.groupByKey(partitions), "groupByKey")

    def partitionBy(
        self,
        numPartitions: int,
        partitionFunc: Callable[[Hashable], int] = portable_hash,
    ) -> DStream[Any]:
        """Partition every RDD by key into `numPartitions` partitions.

        Example:
            >>> # pairs.partitionBy(4)
        """
        partitions = self._partitions(numPartitions)
        require_callable(partitionFunc, "partitionFunc", "partitionBy")
        return self._transformRDD(
            lambda rdd: rdd.partitionBy(partitions, partitionFunc), "partitionBy"
        )

    def updateStateByKey(
        self,
        updateFunc: Callable[[list[Any], Any], Any],
        numPartitions: int | None = None,
        initialRDD: RDD[Any] | Iterable[Any] | None = None,
    ) -> DStream[Any]:
        """A per-key state: `updateFunc(newValues, previousState)` on every event.

        Returning None removes the key. `initialRDD` (pairs) seeds the state.

        Example:
            >>> # counts = words.map(lambda w: (w, 1)).updateStateByKey(
            >>> #     lambda new, total: sum(new) + (total or 0))
        """
        from reactive_spark.dstream.state import StateDStream

        require_callable(updateFunc, "updateFunc", "updateStateByKey")
        partitions = self._partitions(numPartitions)
        initial: RDD[Any] | None = None
        if initialRDD is not None:
            initial = (
                initialRDD
                if isinstance(initialRDD, RDD)
                else self._ssc.sparkContext.parallelize(list(initialRDD))
            )
        return StateDStream(self, updateFunc, partitions, initial)  # type: ignore[arg-type]

    def cogroup(self, other: DStream[Any], numPartitions: int | None = None) -> DStream[Any]:
        """For each key in either stream, the iterables of its values on both sides.

        Example:
            >>> # a.cogroup(b).mapValues(lambda vs: (list(vs[0]), list(vs[1])))
        """
        partitions = self._partitions(numPartitions)
        return self._transformRDDWith(lambda a, b: a.cogroup(b, partitions), other, "cogroup")

    def join(self, other: DStream[Any], numPartitions: int | None = None) -> DStream[Any]:
        """Inner join by key with `other`.

        Example:
            >>> # clicks.join(users)
        """
        partitions = self._partitions(numPartitions)
        return self._transformRDDWith(lambda a, b: a.join(b, partitions), other, "join")

    def leftOuterJoin(self, other: DStream[Any], numPartitions: int | None = None) -> DStream[Any]:
        """Left outer join by key with `other` (missing right values are None).

        Example:
            >>> # clicks.leftOuterJoin(users)
        """
        partitions = self._partitions(numPartitions)
        return self._transformRDDWith(
            lambda a, b: a.leftOuterJoin(b, partitions), other, "leftOuterJoin"
        )

    def rightOuterJoin(self, other: DStream[Any], numPartitions: int | None = None) -> DStream[Any]:
        """Right outer join by key with `other` (missing left values are None).

        Example:
            >>> # clicks.rightOuterJoin(users)
        """
        partitions = self._partitions(numPartitions)
        return self._transformRDDWith(
            lambda a, b: a.rightOuterJoin(b, partitions), other, "rightOuterJoin"
        )

    def fullOuterJoin(self, other: DStream[Any], numPartitions: int | None = None) -> DStream[Any]:
        """Full outer join by key with `other` (missing values on either side are None).

        Example:
            >>> # clicks.fullOuterJoin(users)
        """
        partitions = self._partitions(numPartitions)
        return self._transformRDDWith(
            lambda a, b: a.fullOuterJoin(b, partitions), other, "fullOuterJoin"
        )
