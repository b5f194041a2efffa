"""Helpers for testing your own pipelines on virtual time: batches in, batches out.

Examples:
    >>> import asyncio
    >>> from reactive_spark.testing import run_batches
    >>> asyncio.run(run_batches(sc, lambda s: s.map(lambda x: x + 1), [[1, 2], [3]]))
    [[2, 3], [4]]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from pyspark import RDD, SparkContext

from reactive_spark._callbacks import require_callable
from reactive_spark._validation import require_bool, require_int
from reactive_spark.clock import VirtualClock
from reactive_spark.context import StreamingContext
from reactive_spark.dstream.base import DStream
from reactive_spark.errors import InvalidArgumentError
from reactive_spark.events import EventSource
from reactive_spark.time import Duration, Time, to_duration, to_time

__all__ = ["collect", "run_batches"]

EPOCH = Time(0)


def collect(
    stream: DStream[Any], *, sort: bool = False, source: EventSource | None = None
) -> list[list[Any]]:
    """Collect every RDD of `stream` into the returned list (one list per batch).

    The collecting output is bound to `source`; without one it runs on the default timer. With
    `sort`, each batch's items are sorted by `<`, or by their `repr` when `<` raises for some
    of them (dicts, mixed types).

    Examples:
        >>> import asyncio
        >>> from reactive_spark import Days
        >>> daily = ssc.timer(t0, None, Days(1), "daily")
        >>> results = collect(ssc.queueStream([[1], [2]]).map(str), source=daily)
        >>> async def run():
        ...     await ssc.start()
        ...     await ssc.runUntil(t0 + Days(1))
        ...     await ssc.stop(stopSparkContext=False)
        >>> asyncio.run(run())
        >>> results
        [['1'], ['2']]
    """
    if not isinstance(stream, DStream):
        raise InvalidArgumentError(f"collect: stream must be a DStream, got {stream!r}")
    require_bool(sort, "sort")
    batches: list[list[Any]] = []

    def gather(rdd: RDD[Any]) -> None:
        items = rdd.collect()
        batches.append(_sorted(items) if sort else items)

    output = stream.foreachRDD(gather)
    if source is not None:
        output.bind(source)
    return batches


def _sorted(items: list[Any]) -> list[Any]:
    try:
        return sorted(items)
    except TypeError:  # `<` is not defined between some of them
        return sorted(items, key=repr)


async def run_batches(
    sc: SparkContext,
    build: Callable[..., DStream[Any]],
    *inputs: Sequence[Iterable[Any]],
    numBatches: int | None = None,
    batchDuration: Duration | timedelta | float = 1,
    start: Time | datetime = EPOCH,
    sort: bool = False,
) -> list[list[Any]]:
    """Run `build(*streams)` over queue streams of `inputs` on a virtual clock; collect it.

    Each input is a list of batches (lists of elements, or RDDs); batch k of every input is
    delivered on the k-th tick of the default timer, as in pyspark's own streaming tests. Runs
    `numBatches` ticks (default: the longest input) and returns the collected batches, after
    raising `JobFailedError` if any job failed.

    Examples:
        >>> import asyncio
        >>> asyncio.run(run_batches(sc, lambda a, b: a.union(b), [[1], [2]], [[3], [4]]))
        [[1, 3], [2, 4]]
    """
    require_callable(build, "build", "run_batches")
    if not inputs:
        raise InvalidArgumentError("run_batches needs at least one input (a list of batches)")
    for position, batches in enumerate(inputs):
        if isinstance(batches, str | bytes) or not isinstance(batches, Sequence):
            raise InvalidArgumentError(
                f"inputs[{position}] must be a list of batches (lists of elements, or RDDs), "
                f"got {batches!r}"
            )
        for number, batch in enumerate(batches):
            if not isinstance(batch, RDD) and (
                isinstance(batch, str | bytes) or not isinstance(batch, Iterable)
            ):
                raise InvalidArgumentError(
                    f"inputs[{position}][{number}] must be a batch: a list of elements or an "
                    f"RDD, got {batch!r}"
                )
    if numBatches is not None:
        require_int(numBatches, "numBatches")
    require_bool(sort, "sort")
    period = to_duration(batchDuration, "batchDuration")
    origin = to_time(start, "start")
    ticks = numBatches if numBatches is not None else max(len(batches) for batches in inputs)
    ssc = StreamingContext(sc, period, clock=VirtualClock(origin))
    streams = [ssc.queueStream(_batches(batches)) for batches in inputs]
    built = build(*streams)
    if not isinstance(built, DStream):
        raise InvalidArgumentError(f"run_batches: build must return a DStream, got {built!r}")
    results = collect(built, sort=sort)
    await ssc.start()
    try:
        await ssc.runUntil(origin + period * ticks)
    finally:
        await ssc.stop(stopSparkContext=False)
    return results


def _batches(batches: Iterable[Any]) -> list[Any]:
    return [batch if isinstance(batch, RDD) else list(batch) for batch in batches]
