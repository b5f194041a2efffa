"""pyspark.streaming's own tests, written again from their behaviour.

From pyspark's `streaming/tests/test_context.py`, `test_listener.py` and the context cases of
`test_dstream.py` (start/stop, awaitTermination*, getOrCreate, getActive*, failed functions,
listener reports). Where reactive-spark differs on purpose, the test says so: `getOrCreate`
runs `setupFunc` again on recovery (checkpoints hold no code) and `ssc.recovered` tells it so.
"""

from __future__ import annotations

import asyncio
import os
import struct
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark import SparkContext

from reactive_spark import (
    BatchInfo,
    JobFailedError,
    Seconds,
    StreamingContext,
    StreamingListener,
    SystemClock,
    Time,
    VirtualClock,
)

T0 = Time(1_700_000_000_000)


def virtual_context(sc: SparkContext, duration: float = 0.1, **options: Any) -> StreamingContext:
    return StreamingContext(sc, duration, clock=VirtualClock(T0), **options)


async def collect(ssc: StreamingContext, stream: Any, batches: int) -> list[list[Any]]:
    """pyspark's `_collect`: the first `batches` batches of `stream`, on virtual time."""
    result: list[list[Any]] = []
    stream.foreachRDD(lambda rdd: result.append(rdd.collect()))
    await ssc.start()
    await ssc.runUntil(T0 + ssc.batchDuration * batches)  # type: ignore[operator]
    await ssc.stop(stopSparkContext=False)
    return result


async def wait_for(items: list[Any], count: int, timeout: float = 30) -> None:
    for _ in range(int(timeout * 20)):
        if len(items) >= count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"only {len(items)} of {count} batches after {timeout} s")


# -- test_context.py ---------------------------------------------------------------------------
async def test_stop_only_streaming_context(sc: SparkContext) -> None:
    ssc = virtual_context(sc)
    ssc.queueStream([range(1, x) for x in range(101)]).foreachRDD(lambda rdd: rdd.count())
    await ssc.start()
    await ssc.stop(False)
    assert len(sc.parallelize(range(5), 5).glom().collect()) == 5


async def test_stop_multiple_times(sc: SparkContext) -> None:
    ssc = virtual_context(sc)
    ssc.queueStream([[1]]).foreachRDD(lambda rdd: rdd.count())
    await ssc.start()
    await ssc.stop(False)
    await ssc.stop(False)  # a second stop is a no-op, as in PySpark
    assert ssc.state == "stopped"
    assert StreamingContext.getActive() is None
    assert await ssc.awaitTerminationOrTimeout(0) is True  # stopped: nothing to wait for
    assert len(sc.parallelize(range(3), 3).glom().collect()) == 3  # Spark is still running


async def test_queue_stream(sc: SparkContext) -> None:
    ssc = virtual_context(sc)
    batches = [list(range(i + 1)) for i in range(3)]
    assert await collect(ssc, ssc.queueStream(batches), 3) == batches


async def test_an_exhausted_queue_stream_gives_one_empty_partition(sc: SparkContext) -> None:
    """As PySpark's: per-partition operations still run once per batch."""
    ssc = virtual_context(sc)
    assert (await collect(ssc, ssc.queueStream([[1]]).glom(), 3))[1:] == [[[]], [[]]]


async def test_text_file_stream(sc: SparkContext, tmp_path: Path) -> None:
    ssc = StreamingContext(sc, 0.1, clock=SystemClock())
    result: list[list[int]] = []
    ssc.textFileStream(str(tmp_path)).map(int).foreachRDD(
        lambda rdd: result.append(rdd.collect()) if not rdd.isEmpty() else None
    )
    await ssc.start()
    for name in ("a", "b"):
        await asyncio.sleep(1)
        (tmp_path / name).write_text("".join(f"{i}\n" for i in range(10)))
    await wait_for(result, 2)
    await ssc.stop(False)
    assert result == [list(range(10)), list(range(10))]


async def test_binary_records_stream(sc: SparkContext, tmp_path: Path) -> None:
    ssc = StreamingContext(sc, 0.1, clock=SystemClock())
    result: list[list[Any]] = []
    ssc.binaryRecordsStream(str(tmp_path), 10).map(
        lambda v: struct.unpack("10b", bytes(v))
    ).foreachRDD(lambda rdd: result.append(rdd.collect()) if not rdd.isEmpty() else None)
    await ssc.start()
    for name in ("a", "b"):
        await asyncio.sleep(1)
        (tmp_path / name).write_bytes(bytearray(range(10)))
    await wait_for(result, 2)
    await ssc.stop(False)
    assert [list(batch[0]) for batch in result] == [list(range(10)), list(range(10))]


async def test_union(sc: SparkContext) -> None:
    ssc = virtual_context(sc)
    batches = [list(range(i + 1)) for i in range(3)]
    union = ssc.union(ssc.queueStream(batches), ssc.queueStream(batches))
    assert await collect(ssc, union, 3) == [batch * 2 for batch in batches]


async def test_transform(sc: SparkContext) -> None:
    ssc = virtual_context(sc)
    streams = [ssc.queueStream([[n]]) for n in (1, 2, 3)]

    def func(rdds: list[Any]) -> Any:
        rdd1, rdd2, rdd3 = rdds
        return rdd2.union(rdd3).union(rdd1)

    assert await collect(ssc, ssc.transform(streams, func), 1) == [[2, 3, 1]]


async def test_transform_pairrdd(sc: SparkContext) -> None:
    ssc = virtual_context(sc)
    stream = ssc.queueStream([[1], [2], [3]]).transform(lambda rdd: rdd.cartesian(rdd))
    assert await collect(ssc, stream, 3) == [[(1, 1)], [(2, 2)], [(3, 3)]]


async def test_get_active(sc: SparkContext) -> None:
    assert StreamingContext.getActive() is None
    ssc = virtual_context(sc)
    ssc.queueStream([[1]]).foreachRDD(lambda rdd: rdd.count())
    await ssc.start()
    assert StreamingContext.getActive() is ssc
    await ssc.stop(False)
    assert StreamingContext.getActive() is None


async def test_get_active_or_create(sc: SparkContext) -> None:
    calls: list[StreamingContext] = []

    def setupFunc() -> StreamingContext:
        ssc = virtual_context(sc)
        ssc.queueStream([[1]]).foreachRDD(lambda rdd: rdd.count())
        calls.append(ssc)
        return ssc

    assert StreamingContext.getActive() is None
    ssc = StreamingContext.getActiveOrCreate(None, setupFunc)  # type: ignore[arg-type]
    assert calls == [ssc]
    await ssc.start()
    assert StreamingContext.getActiveOrCreate(None, setupFunc) is ssc  # type: ignore[arg-type]
    assert len(calls) == 1
    await ssc.stop(False)
    again = StreamingContext.getActiveOrCreate(None, setupFunc)  # type: ignore[arg-type]
    assert again is not ssc and calls == [ssc, again]


async def test_await_termination_or_timeout(sc: SparkContext) -> None:
    ssc = virtual_context(sc)
    ssc.queueStream([range(1, x) for x in range(101)]).foreachRDD(lambda rdd: rdd.count())
    await ssc.start()
    assert await ssc.awaitTerminationOrTimeout(0.001) is False
    await ssc.stop(False)
    assert await ssc.awaitTerminationOrTimeout(0.001) is True


# -- test_dstream.py: failed functions and getOrCreate -----------------------------------------
async def test_failed_func(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, 0.5, clock=SystemClock())

    def failed_func(i: int) -> int:
        raise ValueError("This is a special error")

    ssc.queueStream([sc.parallelize([d], 1) for d in range(4)]).map(failed_func).pprint()
    await ssc.start()
    try:
        with pytest.raises(JobFailedError, match="This is a special error"):
            await ssc.awaitTerminationOrTimeout(10)
    finally:
        await ssc.stop(False)


async def test_failed_func2(sc: SparkContext) -> None:
    """The failure is in a foreachRDD function on the driver, not in a Spark task."""
    ssc = StreamingContext(sc, 0.5, clock=SystemClock())

    def failed_func(rdd1: Any, rdd2: Any) -> Any:
        raise ValueError("This is a special error")

    stream = ssc.queueStream([sc.parallelize([d], 1) for d in range(4)])
    stream.transformWith(failed_func, stream).pprint()
    await ssc.start()
    try:
        with pytest.raises(JobFailedError, match="This is a special error"):
            await ssc.awaitTerminationOrTimeout(10)
    finally:
        await ssc.stop(False)


async def test_failed_func_with_reseting_failure(sc: SparkContext) -> None:
    """Later batches still run; the failure is raised once; the context keeps running."""
    ssc = StreamingContext(sc, 0.5, clock=SystemClock())
    results: list[list[int]] = []

    def failed_func(i: int) -> int:
        if i == 1:
            raise ValueError("This is a special error")  # the second batch fails
        return i

    ssc.queueStream([sc.parallelize([d], 1) for d in range(4)]).map(failed_func).foreachRDD(
        lambda rdd: results.append(rdd.collect())
    )
    await ssc.start()
    try:
        with pytest.raises(JobFailedError, match="This is a special error"):
            await ssc.awaitTerminationOrTimeout(10)
        await wait_for(results, 3)
        assert results[:3] == [[0], [2], [3]]
        assert await ssc.awaitTerminationOrTimeout(0.5) is False
    finally:
        await ssc.stop(False)


async def test_get_or_create_and_get_active_or_create(sc: SparkContext, tmp_path: Path) -> None:
    """pyspark's test_get_or_create_and_get_active_or_create, on virtual time.

    Unlike pyspark, setupFunc runs on recovery too, and `ssc.recovered` says so.
    """
    checkpoint, inputd, outputd = tmp_path / "ckpt", tmp_path / "in", tmp_path / "out"
    inputd.mkdir()
    outputd.mkdir()
    setups: list[bool] = []
    clock_at = [T0]

    def setup() -> StreamingContext:
        ssc = StreamingContext(sc, 2, clock=VirtualClock(clock_at[0]))
        setups.append(ssc.recovered)
        stream = ssc.textFileStream(str(inputd)).map(lambda x: (x, 1))
        counts = stream.updateStateByKey(lambda new, old: sum(new) + (old or 0))
        counts.map(lambda x: f"{x[0]},{x[1]}").saveAsTextFiles(str(outputd / "test"))
        counts.checkpoint(2)
        return ssc

    def write(n: int, at: Time) -> None:
        path = inputd / str(n)
        path.write_text("".join(f"{i}\n" for i in range(10)))
        os.utime(path, ns=(at.milliseconds * 1_000_000,) * 2)

    async def run_until(ssc: StreamingContext, n: int) -> None:
        write(n, T0 + Seconds(2 * n - 1))
        await ssc.runUntil(T0 + Seconds(2 * n))

    def last_output() -> dict[str, int]:
        latest = max(outputd.iterdir())
        lines = sc.textFile(str(latest)).map(lambda line: line.split(",")).collect()
        return {key: int(value) for key, value in lines}

    ssc = StreamingContext.getOrCreate(str(checkpoint), setup)
    assert setups == [False]
    await ssc.start()
    await run_until(ssc, 1)
    await run_until(ssc, 2)
    assert last_output() == {str(i): 2 for i in range(10)}
    await ssc.stop(False, True)

    clock_at[0] = T0 + Seconds(4)
    ssc = StreamingContext.getOrCreate(str(checkpoint), setup)
    assert setups == [False, True] and ssc.recovered
    await ssc.start()
    await run_until(ssc, 3)
    assert last_output() == {str(i): 3 for i in range(10)}  # the state survived the restart

    assert StreamingContext.getActiveOrCreate(str(checkpoint), setup) is ssc
    assert len(setups) == 2
    await ssc.stop(False, True)
    clock_at[0] = T0 + Seconds(6)
    ssc = StreamingContext.getActiveOrCreate(str(checkpoint), setup)
    assert setups == [False, True, True]
    await ssc.start()
    await run_until(ssc, 4)
    assert last_output() == {str(i): 4 for i in range(10)}
    await ssc.stop(False, True)


# -- test_listener.py ------------------------------------------------------------------------------
class BatchInfoCollector(StreamingListener):
    def __init__(self) -> None:
        super().__init__()
        self.batchInfosCompleted: list[Any] = []
        self.batchInfosStarted: list[Any] = []
        self.batchInfosSubmitted: list[Any] = []
        self.streamingStartedTime: list[int] = []
        self.outputsStarted: list[Any] = []
        self.outputsCompleted: list[Any] = []

    def onStreamingStarted(self, streamingStarted: Any) -> None:
        self.streamingStartedTime.append(streamingStarted.time())  # a method, as in PySpark

    def onBatchSubmitted(self, batchSubmitted: Any) -> None:
        self.batchInfosSubmitted.append(batchSubmitted.batchInfo())

    def onBatchStarted(self, batchStarted: Any) -> None:
        self.batchInfosStarted.append(batchStarted.batchInfo())

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        self.batchInfosCompleted.append(batchCompleted.batchInfo())

    def onOutputOperationStarted(self, outputOperationStarted: Any) -> None:
        self.outputsStarted.append(outputOperationStarted.outputOperationInfo())

    def onOutputOperationCompleted(self, outputOperationCompleted: Any) -> None:
        self.outputsCompleted.append(outputOperationCompleted.outputOperationInfo())


def check_common(info: BatchInfo) -> None:
    assert info.batchTime().milliseconds() >= 0
    assert info.submissionTime() >= 0
    for stream_id, input_info in info.streamIdToInputInfo().items():
        assert input_info.inputStreamId() == stream_id >= 0
        assert input_info.numRecords() >= 0
        assert all(value is not None for value in input_info.metadata().values())
        assert input_info.metadataDescription() is not None


def check_outputs(info: BatchInfo, started: bool) -> None:
    for output_id, output in info.outputOperationInfos().items():
        assert output.batchTime().milliseconds() >= 0
        assert output.id() == output_id >= 0
        assert output.name() is not None and output.description() is not None
        assert output.startTime() >= (0 if started else -1)
        assert output.endTime() >= (0 if started else -1)
        assert output.failureReason() is None


async def test_batch_info_reports(sc: SparkContext) -> None:
    ssc = virtual_context(sc, 0.5)
    collector = BatchInfoCollector()
    ssc.addStreamingListener(collector)
    before = int(time.time() * 1000)  # as the start's, truncated
    result = await collect(ssc, ssc.queueStream([[1], [2], [3], [4]]).map(int), 4)
    assert result == [[1], [2], [3], [4]]
    assert len(collector.streamingStartedTime) == 1
    [started] = collector.streamingStartedTime  # on the wall clock, as submission times
    assert before <= started <= time.time() * 1000

    assert len(collector.batchInfosSubmitted) == 4
    for info in collector.batchInfosSubmitted:
        check_common(info)
        check_outputs(info, started=False)
        # every output operation from submission, not started, as PySpark lists them
        assert [(o.startTime(), o.endTime()) for o in info.outputOperationInfos().values()] == [
            (-1, -1)
        ]
        assert (info.schedulingDelay(), info.processingDelay(), info.totalDelay()) == (-1, -1, -1)
        # -1 until known, as PySpark's: a ported `if info.processingEndTime() > 0` works
        assert (info.processingStartTime(), info.processingEndTime()) == (-1, -1)
        assert info.numRecords() == 0

    assert len(collector.batchInfosStarted) == 4
    for info in collector.batchInfosStarted:
        check_common(info)
        check_outputs(info, started=False)
        assert info.schedulingDelay() >= 0
        assert (info.processingDelay(), info.totalDelay()) == (-1, -1)
        assert info.processingStartTime() >= info.submissionTime()
        assert info.processingEndTime() == -1
        assert [o.endTime() for o in info.outputOperationInfos().values()] == [-1]
        assert info.numRecords() == 0

    assert len(collector.batchInfosCompleted) == 4
    for info in collector.batchInfosCompleted:
        check_common(info)
        check_outputs(info, started=True)
        assert info.schedulingDelay() >= 0 and info.processingDelay() >= 0
        assert info.processingEndTime() >= info.processingStartTime() >= 0
        assert info.totalDelay() >= info.processingDelay()
        # on the virtual clock a batch runs at its event's instant: no wall time mixed in
        assert info.schedulingDelay() == 0
        assert info.totalDelay() == info.processingDelay()
        assert info.numRecords() == 0
        assert len(info.outputOperationInfos()) == 1

    # one output operation per batch, started and completed
    assert len(collector.outputsStarted) == len(collector.outputsCompleted) == 4
    assert all(o.startTime() >= 0 and o.endTime() == -1 for o in collector.outputsStarted)
    assert all(o.endTime() >= o.startTime() >= 0 for o in collector.outputsCompleted)


async def test_output_operations_are_numbered_and_told_in_pyspark_order(
    sc: SparkContext,
) -> None:
    """An output operation's id is its position among the context's outputs, from 0, and each
    one's end is told before the next one starts, as pyspark does (one job at a time)."""
    ssc = virtual_context(sc, 1)
    told: list[tuple[str, Any]] = []

    class Told(StreamingListener):
        def onOutputOperationStarted(self, started: Any) -> None:
            told.append(("started", started.outputOperationInfo().id()))

        def onOutputOperationCompleted(self, completed: Any) -> None:
            told.append(("completed", completed.outputOperationInfo().id()))

        def onBatchCompleted(self, completed: Any) -> None:
            told.append(("batch", sorted(completed.batchInfo().outputOperationInfos())))

    ssc.addStreamingListener(Told())
    numbers = ssc.queueStream([[1]])
    numbers.map(lambda x: x + 1).foreachRDD(lambda rdd: told.append(("runs", "A")))
    numbers.foreachRDD(lambda rdd: told.append(("runs", "B")))
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(1))
    await ssc.stop(stopSparkContext=False)
    assert told == [
        ("started", 0),
        ("runs", "A"),
        ("completed", 0),
        ("started", 1),
        ("runs", "B"),
        ("completed", 1),
        ("batch", [0, 1]),
    ]


def test_is_cached_and_is_checkpointed_answer_as_pyspark_s(sc: SparkContext) -> None:
    ssc = virtual_context(sc)
    stream = ssc.queueStream([[1]])
    assert (stream.is_cached, stream.is_checkpointed) == (False, False)
    assert stream.cache().is_cached and stream.checkpoint(1).is_checkpointed
