"""Input streams: queueStream semantics and textFileStream's modification-time windows."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pyspark import SparkContext

from reactive_spark import Seconds, StreamingContext, Time, VirtualClock

from .helpers import Recorder, gather

T0 = Time(1_700_000_000_000)


def write(path: Path, lines: list[str], modified: Time) -> None:
    path.write_text("".join(line + "\n" for line in lines))
    nanoseconds = modified.milliseconds * 1_000_000
    os.utime(path, ns=(nanoseconds, nanoseconds))


async def test_textFileStream_reads_files_modified_since_previous_event(
    sc: SparkContext, tmp_path: Path
) -> None:
    write(tmp_path / "old.log", ["before start"], T0 - Seconds(1))
    write(tmp_path / "a.log", ["a1", "a2"], T0 + Seconds(0.5))
    write(tmp_path / "b.log", ["b1"], T0 + Seconds(1))  # exactly on the first event: included
    write(tmp_path / "c.log", ["c1"], T0 + Seconds(1.001))
    write(tmp_path / ".hidden", ["hidden"], T0 + Seconds(0.5))
    write(tmp_path / "d.log", ["d1"], T0 + Seconds(3))
    ssc = StreamingContext(sc, Seconds(1), clock=VirtualClock(T0))
    _out, seen = gather(ssc.textFileStream(str(tmp_path)))
    recorder = Recorder()
    ssc.addStreamingListener(recorder)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(3))
    await ssc.stop(stopSparkContext=False)
    assert [sorted(items) for _, items in seen] == [["a1", "a2", "b1"], ["c1"], ["d1"]]
    reads = [batch.inputs for batch in recorder.batches]
    name = next(iter(reads[0]))
    assert reads[0][name]["files"] == [str(tmp_path / "a.log"), str(tmp_path / "b.log")]
    assert reads[1][name]["files"] == [str(tmp_path / "c.log")]


async def test_queueStream_all_at_once_and_default(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, Seconds(1), clock=VirtualClock(T0))
    _, all_at_once = gather(ssc.queueStream([[1], [2], [3]], oneAtATime=False))
    _, with_default = gather(ssc.queueStream([[1]], default=sc.parallelize([0])))
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(3))
    await ssc.stop(stopSparkContext=False)
    assert [sorted(items) for _, items in all_at_once] == [[1, 2, 3], [], []]
    assert [items for _, items in with_default] == [[1], [0], [0]]


async def test_binaryRecordsStream_reads_fixed_length_records(
    sc: SparkContext, tmp_path: Path
) -> None:
    first, second = tmp_path / "a.bin", tmp_path / "b.bin"
    first.write_bytes(b"AAAABBBB")
    second.write_bytes(b"CCCC")
    for path, moment in ((first, T0 + Seconds(0.5)), (second, T0 + Seconds(1.5))):
        nanoseconds = moment.milliseconds * 1_000_000
        os.utime(path, ns=(nanoseconds, nanoseconds))
    ssc = StreamingContext(sc, Seconds(1), clock=VirtualClock(T0))
    records = ssc.binaryRecordsStream(str(tmp_path), 4)
    assert records.name.startswith("binaryRecordsStream(")
    _out, seen = gather(records)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(2))
    await ssc.stop(stopSparkContext=False)
    assert [sorted(items) for _, items in seen] == [[b"AAAA", b"BBBB"], [b"CCCC"]]
    with pytest.raises(ValueError, match="recordLength must be"):
        StreamingContext(sc, Seconds(1)).binaryRecordsStream(str(tmp_path), 0)


async def test_a_file_written_elsewhere_and_moved_in_is_read_once(
    sc: SparkContext, tmp_path: Path
) -> None:
    """Spark's own recipe on the system clock: the file keeps its older mtime when moved in."""
    import asyncio

    from reactive_spark import SystemClock

    watched, staging = tmp_path / "in", tmp_path / "staging"
    watched.mkdir()
    staging.mkdir()
    ssc = StreamingContext(sc, 0.5, clock=SystemClock())
    read: list[str] = []
    ssc.textFileStream(str(watched)).foreachRDD(lambda rdd: read.extend(rdd.collect()))
    await ssc.start()
    try:
        (staging / "moved.txt").write_text("moved line\n")
        await asyncio.sleep(1.2)  # at least two batches run before it arrives
        os.rename(staging / "moved.txt", watched / "moved.txt")
        for _ in range(600):  # a loaded machine runs the 0.5 s batches late
            if read:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.2)  # later batches must not read it again
    finally:
        await ssc.stop(stopSparkContext=False)
    assert read == ["moved line"]
