"""The file watcher on the real file system (watchfiles), with real Spark jobs."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from pyspark import SparkContext

from reactive_spark import Event, FileEvent, Seconds, StreamingContext, SystemClock, Time
from reactive_spark.sources.file_watcher import is_partial_file

from .helpers import gather


async def next_events(seen: list, count: int, timeout: float = 20) -> None:  # type: ignore[type-arg]
    async def wait() -> None:
        while len(seen) < count:
            await asyncio.sleep(0.02)

    await asyncio.wait_for(wait(), timeout)


async def test_text_file_stream_bound_to_watcher_reads_exactly_the_event_files(
    sc: SparkContext, tmp_path: Path
) -> None:
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    (incoming / "old.csv").write_text("old\n")  # there before the start: never read
    ssc = StreamingContext(sc, None, clock=SystemClock())
    uploads = ssc.fileWatcher(str(incoming), "uploads", pattern="*.csv")
    out, seen = gather(ssc.textFileStream(str(incoming)))
    out.bind(uploads)
    await ssc.start()
    await uploads.ready()  # type: ignore[attr-defined]
    (incoming / "a.csv").write_text("a1\na2\n")
    (incoming / "b.csv").write_text("b1\n")
    (incoming / "ignored.txt").write_text("no\n")
    (incoming / "c.csv.part").write_text("partial\n")
    await next_events(seen, 1)
    (incoming / "d.csv").write_text("d1\n")
    await next_events(seen, 2)
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    first, second = seen[0][0], seen[1][0]
    assert isinstance(first, FileEvent)
    assert first.paths == (str(incoming / "a.csv"), str(incoming / "b.csv"))
    assert first.change == "added"
    assert sorted(seen[0][1]) == ["a1", "a2", "b1"]
    assert second.paths == (str(incoming / "d.csv"),)
    assert seen[1][1] == ["d1"]
    assert [first.index, second.index] == [0, 1]


async def test_modification_and_between(sc: SparkContext, tmp_path: Path) -> None:
    ssc = StreamingContext(sc, None, clock=SystemClock())
    watcher = ssc.fileWatcher(str(tmp_path), "files", recursive=False)
    fired: list[Event] = []
    watcher.addListener(fired.append)
    ssc.queueStream([]).bind(watcher)
    target = tmp_path / "data.log"
    target.write_text("one\n")
    await ssc.start()
    await watcher.ready()  # type: ignore[attr-defined]
    with target.open("a") as handle:
        handle.write("two\n")
    await next_events(fired, 1)
    await ssc.stop(stopSparkContext=False)
    assert fired[0].change == "modified"  # type: ignore[attr-defined]
    for index, name in enumerate(["x.log", "y.log", ".hidden", "z.tmp"]):
        path = tmp_path / name
        path.write_text("x\n")
        stamp = (10_000 + index) * 1_000_000_000
        os.utime(path, ns=(stamp, stamp))
    between = watcher.between(Time(10_000_000), Time(10_001_000))
    assert [(e.time.milliseconds, e.paths) for e in between] == [  # type: ignore[attr-defined]
        (10_000_000, (str(tmp_path / "x.log"),)),
        (10_001_000, (str(tmp_path / "y.log"),)),
    ]


def test_partial_files_and_arguments(sc: SparkContext, tmp_path: Path) -> None:
    assert is_partial_file("/x/.hidden") and is_partial_file("/x/_COPYING_")
    assert is_partial_file("/x/file.crdownload") and not is_partial_file("/x/file.csv")
    ssc = StreamingContext(sc, None, clock=SystemClock())
    with pytest.raises(ValueError, match="path must be a non-empty str"):
        ssc.fileWatcher("", "w")
    with pytest.raises(ValueError, match="pattern must be a non-empty glob"):
        ssc.fileWatcher(str(tmp_path), "w", pattern="")
    with pytest.raises(ValueError, match="maxDelay must not be shorter than settle"):
        ssc.fileWatcher(str(tmp_path), "w", settle=Seconds(2), maxDelay=Seconds(1))
    watcher = ssc.fileWatcher(str(tmp_path), "w", "*.csv", recursive=False)
    assert watcher.toProduct() == (str(tmp_path), "*.csv", False, "w")
