"""The file watcher on the real file system (watchfiles), with real Spark jobs."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark import SparkContext

from reactive_spark import (
    Event,
    EventsDropped,
    FileEvent,
    Seconds,
    StreamingContext,
    StreamingListener,
    SystemClock,
    Time,
)
from reactive_spark.errors import DirectoryNotFoundError
from reactive_spark.failures import SourceErrorInfo
from reactive_spark.sources import file_watcher
from reactive_spark.sources.file_completion import COMPLETE, WRITING, Arrivals, WriteEvidence
from reactive_spark.sources.file_watcher import is_partial_file

from .helpers import Recorder, gather


async def next_events(seen: list, count: int, timeout: float = 20) -> None:  # type: ignore[type-arg]
    async def wait() -> None:
        while len(seen) < count:
            await asyncio.sleep(0.02)

    await asyncio.wait_for(wait(), timeout)


async def until_read(seen: list, *paths: Path, timeout: float = 20) -> None:  # type: ignore[type-arg]
    """Wait until events carrying every one of `paths` were seen."""
    wanted = {str(path) for path in paths}

    async def wait() -> None:
        while not wanted <= {p for event, _ in seen for p in event.paths}:
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
    await uploads.ready()
    (incoming / "a.csv").write_text("a1\na2\n")
    (incoming / "b.csv").write_text("b1\n")
    (incoming / "ignored.txt").write_text("no\n")
    (incoming / "c.csv.part").write_text("partial\n")
    await until_read(seen, incoming / "a.csv", incoming / "b.csv")
    before_d = len(seen)  # a and b fire together, or one after the other as each is complete
    (incoming / "d.csv").write_text("d1\n")
    await next_events(seen, before_d + 1)
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    first, last = seen[0][0], seen[-1][0]
    assert isinstance(first, FileEvent) and isinstance(last, FileEvent)
    assert [p for event, _ in seen[:before_d] for p in event.paths] == [  # type: ignore[attr-defined]
        str(incoming / "a.csv"),
        str(incoming / "b.csv"),
    ]
    assert {event.change for event, _ in seen} == {"added"}  # type: ignore[attr-defined]
    assert sorted(line for _, lines in seen[:before_d] for line in lines) == ["a1", "a2", "b1"]
    assert last.paths == (str(incoming / "d.csv"),)
    assert seen[-1][1] == ["d1"]
    assert [event.index for event, _ in seen] == list(range(len(seen)))


async def test_a_file_stream_bound_to_a_watcher_reads_the_files_of_its_subdirectories(
    sc: SparkContext, tmp_path: Path
) -> None:
    """The watcher is recursive (its default) and fired for `2026-01-05/x.csv`, but the bound
    file stream read only files directly in the directory: the batch ran empty, silently. It
    reads every file of the event under the directory."""
    incoming, staging = tmp_path / "incoming", tmp_path / "staging"
    for directory in (incoming / "2026-01-05", staging):
        directory.mkdir(parents=True)
    ssc = StreamingContext(sc, None, clock=SystemClock())
    uploads = ssc.fileWatcher(str(incoming), "uploads")
    out, seen = gather(ssc.textFileStream(str(incoming)))
    out.bind(uploads)
    await ssc.start()
    (staging / "x.csv").write_text("x1\nx2\n")
    (staging / "x.csv").rename(incoming / "2026-01-05" / "x.csv")
    await next_events(seen, 1)
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    [(event, lines)] = seen
    assert event.paths == (str(incoming / "2026-01-05" / "x.csv"),)  # type: ignore[attr-defined]
    assert sorted(lines) == ["x1", "x2"]


async def test_files_moved_into_a_directory_as_soon_as_it_is_made_fire_once(
    sc: SparkContext, tmp_path: Path
) -> None:
    """`mkdir -p incoming/<day> && mv x.csv incoming/<day>/`: the file can arrive before the
    new directory is watched, and a directory moved in brings its files with it: then nothing
    reported them, and they never fired. The files in a directory that was added fire with it,
    each once, and one still being written there waits for its writer, not `settle`. A
    `pattern` naming files does not hide the directory."""
    incoming, staging = tmp_path / "incoming", tmp_path / "staging"
    incoming.mkdir()
    (staging / "moved" / "part").mkdir(parents=True)
    for name in ("a.csv", "b.csv", "skipped.txt"):
        (staging / "moved" / "part" / name).write_text(f"{name}\n")
    ssc = StreamingContext(sc, None, clock=SystemClock())
    uploads = ssc.fileWatcher(str(incoming), "uploads", pattern="*.csv", maxDelay=0.3)
    fired: list[Event] = []
    uploads.addListener(fired.append)
    out, seen = gather(ssc.textFileStream(str(incoming)))
    out.bind(uploads)
    await ssc.start()
    (staging / "moved").rename(incoming / "moved")  # a directory moved in, with its files
    arrived = [incoming / "moved" / "part" / "a.csv", incoming / "moved" / "part" / "b.csv"]
    for day in range(1, 6):
        (staging / f"{day}.csv").write_text(f"{day}\n")
        directory = incoming / f"2026-01-0{day}"
        directory.mkdir()
        arrived.append(directory / f"{day}.csv")
        (staging / f"{day}.csv").rename(arrived[-1])
    slow = incoming / "2026-01-09" / "slow.csv"
    slow.parent.mkdir()
    with slow.open("w") as writing:  # written in place in a new directory, in two parts
        writing.write("part 1\n")
        writing.flush()
        await asyncio.sleep(0.15)  # longer than settle, shorter than maxDelay
        writing.write("part 2\n")
    arrived.append(slow)
    wanted = {str(path) for path in arrived}

    async def all_fired() -> None:
        while not wanted <= {path for event in fired for path in event.paths}:  # type: ignore[attr-defined]
            await asyncio.sleep(0.02)

    try:
        await asyncio.wait_for(all_fired(), 20)
        await asyncio.sleep(0.5)  # what would fire twice has by now
    finally:
        await ssc.stop(stopSparkContext=False, stopGracefully=True)
    paths = Counter(path for event in fired for path in event.paths)  # type: ignore[attr-defined]
    assert paths == Counter(wanted)
    lines = sorted(line for _, lines in seen for line in lines)
    assert lines == ["1", "2", "3", "4", "5", "a.csv", "b.csv", "part 1", "part 2"]


async def test_modification_and_between(sc: SparkContext, tmp_path: Path) -> None:
    ssc = StreamingContext(sc, None, clock=SystemClock())
    watcher = ssc.fileWatcher(str(tmp_path), "files", recursive=False)
    fired: list[Event] = []
    watcher.addListener(fired.append)
    ssc.queueStream([]).bind(watcher)
    target = tmp_path / "data.log"
    target.write_text("one\n")
    await ssc.start()
    await watcher.ready()
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


def folders(root: Path) -> tuple[Path, Path]:
    """`incoming` (watched) and `staging` (where files are written before moving in)."""
    incoming, staging = root / "incoming", root / "staging"
    incoming.mkdir()
    staging.mkdir()
    return incoming, staging


#: The OS says when a file is closed or moved in (inotify) only on Linux.
linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="write evidence comes from inotify"
)


@linux_only
async def test_a_file_written_slowly_is_read_once_and_whole(
    sc: SparkContext, tmp_path: Path
) -> None:
    """Written in chunks over 300 ms, with pauses longer than `settle`: read once, complete.

    `maxDelay` is long so that a stall of the test's loop between two chunks cannot let the
    open file fire.
    """
    ssc, incoming, staging = StreamingContext(sc, None, clock=SystemClock()), *folders(tmp_path)
    uploads = ssc.fileWatcher(str(incoming), "uploads", settle=0.02, maxDelay=60)
    out, seen = gather(ssc.textFileStream(str(incoming)))
    out.bind(uploads)
    await ssc.start()
    await uploads.ready()
    chunks = [f"line {n}" for n in range(6)]
    with (incoming / "slow.txt").open("w") as handle:
        for chunk in chunks:
            handle.write(chunk + "\n")
            handle.flush()
            await asyncio.sleep(0.05)  # 50 ms between chunks: longer than settle
    (staging / "after.txt").write_text("after\n")
    os.rename(staging / "after.txt", incoming / "after.txt")  # fires after the slow file's
    await until_read(seen, incoming / "slow.txt", incoming / "after.txt")
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    slow = [
        lines for event, lines in seen if str(incoming / "slow.txt") in getattr(event, "paths", ())
    ]
    assert len(slow) == 1  # once, never a half-written part first
    assert [line for line in slow[0] if line.startswith("line")] == chunks  # whole


@linux_only
async def test_a_file_moved_in_fires_without_waiting_for_settle(
    sc: SparkContext, tmp_path: Path
) -> None:
    """settle=60 s: a file moved in fires long before, while one still open for writing waits."""
    ssc, incoming, staging = StreamingContext(sc, None, clock=SystemClock()), *folders(tmp_path)
    uploads = ssc.fileWatcher(str(incoming), "uploads", settle=60, maxDelay=60)
    fired: list[Event] = []
    uploads.addListener(fired.append)
    ssc.queueStream([]).bind(uploads)
    await ssc.start()
    await uploads.ready()
    with (incoming / "open.txt").open("w") as writing:
        writing.write("not done\n")
        writing.flush()
        (staging / "moved.txt").write_text("done\n")
        os.rename(staging / "moved.txt", incoming / "moved.txt")
        await next_events(fired, 1, timeout=30)  # well before settle
        assert fired[0].paths == (str(incoming / "moved.txt"),)  # type: ignore[attr-defined]
        assert fired[0].change == "added"  # type: ignore[attr-defined]
        await ssc.stop(stopSparkContext=False)  # while the file is open: its close is unseen
    assert len(fired) == 1  # the open file waited: it was never complete while watched


def test_arrivals_wait_for_what_the_os_says_or_for_quiet(tmp_path: Path) -> None:
    """Complete files fire at once; open ones when closed; without word, once quiet."""
    paths = {name: str(tmp_path / name) for name in ("moved", "open", "unknown")}
    for path in paths.values():
        Path(path).write_text("x\n")
    arrivals = Arrivals(settle=1.0, max_delay=3.0, evidence_available=True)
    arrivals.report([("added", path) for path in paths.values()], now=100.0)
    arrivals.hear({paths["moved"]: COMPLETE, paths["open"]: WRITING}, lost=False)
    assert arrivals.ready(100.0) == {paths["moved"]: "added"}
    assert arrivals.ready(100.5) == {}  # not quiet for settle yet
    assert arrivals.ready(101.0) == {paths["unknown"]: "added"}  # no word: quiet for settle
    assert arrivals.ready(102.0) == {}  # still open for writing
    arrivals.hear({paths["open"]: COMPLETE}, lost=False)  # closed
    assert arrivals.ready(102.0) == {paths["open"]: "added"}
    assert not arrivals.waiting
    arrivals.report([("modified", paths["open"])], now=110.0)
    arrivals.hear({paths["open"]: WRITING}, lost=False)
    assert arrivals.ready(110.0) == {}
    Path(paths["open"]).write_text("grown\n")  # changed since the last look: quiet again
    assert arrivals.ready(112.0) == {}
    assert arrivals.ready(115.0) == {paths["open"]: "modified"}  # idle and open for maxDelay


def test_a_file_reported_again_unchanged_since_it_fired_does_not_fire_again(
    tmp_path: Path,
) -> None:
    """watchfiles may report one write twice (added, then modified after the close) on a busy
    machine: the second report, of the file as it fired, reads nothing new; a change does."""
    path = str(tmp_path / "b")
    Path(path).write_text("b\n")
    arrivals = Arrivals(settle=1.0, max_delay=3.0, evidence_available=True)
    arrivals.report([("added", path)], now=100.0)
    arrivals.hear({path: COMPLETE}, lost=False)
    assert arrivals.ready(100.0) == {path: "added"}
    arrivals.report([("modified", path)], now=100.1)  # no word from the OS: the close was heard
    assert arrivals.ready(105.0) == {} and not arrivals.waiting
    Path(path).write_text("b, longer\n")
    arrivals.report([("modified", path)], now=110.0)
    arrivals.hear({path: COMPLETE}, lost=False)
    assert arrivals.ready(110.0) == {path: "modified"}


class SourceErrors(Recorder):
    def __init__(self) -> None:
        super().__init__()
        self.errors: list[SourceErrorInfo] = []

    def onSourceError(self, error: SourceErrorInfo) -> None:
        self.errors.append(error)


async def test_a_watch_whose_write_evidence_fails_is_reported_and_retried(
    sc: SparkContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No inotify instance left, say: reported like any failed watch, then watched again."""
    real = file_watcher.WriteEvidence
    failures = iter([OSError(24, "Too many open files")])

    def failing_once(*args: object) -> file_watcher.WriteEvidence:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(file_watcher, "WriteEvidence", failing_once)
    monkeypatch.setattr(file_watcher, "RETRY_SECONDS", 0.05)
    ssc = StreamingContext(sc, None, clock=SystemClock())
    listener = SourceErrors()
    ssc.addStreamingListener(listener)
    uploads = ssc.fileWatcher(str(tmp_path), "uploads")
    fired: list[Event] = []
    uploads.addListener(fired.append)
    ssc.queueStream([]).bind(uploads)
    await ssc.start()
    await asyncio.wait_for(uploads.ready(), 30)  # the watching thread lived on
    (tmp_path / "a.txt").write_text("a\n")
    await next_events(fired, 1, timeout=30)
    await ssc.stop(stopSparkContext=False)
    assert [(e.operation, str(e.error)) for e in listener.errors] == [
        ("watch", "[Errno 24] Too many open files")
    ]


@linux_only
def test_after_the_os_drops_events_the_evidence_reader_starts_afresh(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """More events than the kernel queues (16384 by default): said once, then heard again."""
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    evidence = WriteEvidence(str(tmp_path), recursive=True, accepts=lambda path: True)
    try:
        for number in range(limit // 3 + 100):  # each write: created, modified, closed
            (tmp_path / f"{number}.txt").write_text("x")
        _, lost = evidence.drain()
        assert lost and evidence.available
        assert "inotify queue overflowed" in caplog.text
        (tmp_path / "after.txt").write_text("x")
        assert evidence.drain() == ({str(tmp_path / "after.txt"): COMPLETE}, False)
    finally:
        evidence.close()


def test_what_the_os_said_of_files_never_reported_stays_bounded() -> None:
    from reactive_spark.sources.file_completion import MAX_HEARD

    arrivals = Arrivals(settle=1.0, max_delay=3.0, evidence_available=True)
    arrivals.report([("added", "/in/waiting.csv")], now=0.0)
    arrivals.hear({"/in/waiting.csv": COMPLETE}, lost=False)
    for start in range(0, 3 * MAX_HEARD, 1000):
        arrivals.hear({f"/in/{n}.csv": COMPLETE for n in range(start, start + 1000)}, lost=False)
    assert len(arrivals._said) <= MAX_HEARD + 1000
    assert arrivals._said.get("/in/waiting.csv") == COMPLETE  # a waiting file keeps its word


@linux_only
def test_a_directory_moved_out_takes_what_the_os_said_under_it(tmp_path: Path) -> None:
    """A file closed in a directory moved out of the watch does not count for a new file at
    the old path: the new one waits for its own word."""
    watched, elsewhere = tmp_path / "in", tmp_path / "elsewhere"
    (watched / "day").mkdir(parents=True)
    elsewhere.mkdir()
    evidence = WriteEvidence(str(watched), recursive=True, accepts=lambda path: True)
    arrivals = Arrivals(settle=1.0, max_delay=3.0, evidence_available=True)
    try:
        (watched / "day" / "a.csv").write_text("closed")
        arrivals.hear(*evidence.drain())
        os.rename(watched / "day", elsewhere / "day")
        (elsewhere / "day" / "a.csv").write_text("closed again, outside the watch")
        said, lost = evidence.drain()
        assert said == {str(watched / "day") + os.sep: ""} and not lost
        arrivals.hear(said, lost)
        (watched / "day").mkdir()
        with open(watched / "day" / "a.csv", "w") as still_open:
            still_open.write("half")
            arrivals.report([("added", str(watched / "day" / "a.csv"))], now=0.0)
            arrivals.hear(*evidence.drain())
            assert arrivals.ready(now=0.5) == {}  # open: it waits
    finally:
        evidence.close()


async def test_files_arriving_while_the_queue_is_full_never_block_the_loop(
    sc: SparkContext, tmp_path: Path
) -> None:
    """Under "block" they wait, off the loop, and fire together once there is room."""
    ssc = StreamingContext(sc, None, clock=SystemClock())
    uploads = ssc.fileWatcher(str(tmp_path), "uploads").overflow(1, "block")
    read: list[list[str]] = []

    def job(rdd: Any) -> None:
        time.sleep(1)  # holds the worker: the queue stays full meanwhile
        read.append(rdd.collect())

    ssc.textFileStream(str(tmp_path)).foreachRDD(job).bind(uploads)
    await ssc.start()
    await uploads.ready()
    longest_gap, last = 0.0, time.monotonic()

    async def pulse(seconds: float) -> None:  # the loop's pulse, taken meanwhile
        nonlocal longest_gap, last
        for _ in range(int(seconds * 100)):
            await asyncio.sleep(0.01)
            now = time.monotonic()
            longest_gap, last = max(longest_gap, now - last), now

    for name in "abcde":
        (tmp_path / name).write_text(f"{name}\n")
        await pulse(0.3)
    for _ in range(60):  # until every file was read (the first job starts Spark's workers)
        if sum(len(lines) for lines in read) == 5:
            break
        await pulse(0.5)
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    assert sorted(line for lines in read for line in lines) == list("abcde")  # each once
    assert longest_gap < 0.5, f"the loop stood still for {longest_gap:.2f} s"


async def test_a_file_moved_in_as_soon_as_start_returns_fires(
    sc: SparkContext, tmp_path: Path
) -> None:
    """`start()` returns once the watcher watches: a program that moves a file in right
    after it (the documented recipe) never loses it, however slow the watching thread."""
    for attempt in range(5):
        ssc = StreamingContext(sc, None, clock=SystemClock())
        incoming = tmp_path / f"incoming-{attempt}"
        uploads = ssc.fileWatcher(str(incoming), "uploads")
        fired: list[Event] = []
        uploads.addListener(fired.append)
        ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(uploads)
        await ssc.start()
        staged = tmp_path / f"upload-{attempt}.txt"
        staged.write_text("words\n")
        staged.replace(incoming / staged.name)
        try:
            await next_events(fired, 1, timeout=10)
        finally:
            await ssc.stop(stopSparkContext=False)
        assert [event.paths for event in fired] == [(str(incoming / staged.name),)]


async def test_a_file_stream_fed_by_a_watcher_starts_before_its_directory_exists(
    sc: SparkContext, tmp_path: Path
) -> None:
    """The documented upload pattern on a fresh deployment: the watcher creates the directory
    as it starts, so the file stream it feeds needs none beforehand (bound to a timer it
    does; a file stream fed by both checks too)."""
    incoming = tmp_path / "incoming"
    ssc = StreamingContext(sc, None, clock=SystemClock())
    uploads = ssc.fileWatcher(str(incoming), "uploads")
    out, seen = gather(ssc.textFileStream(str(incoming)))
    out.bind(uploads.filter(lambda event: True))  # through an operator too
    await ssc.start()
    staged = tmp_path / "first.txt"
    staged.write_text("hello\n")
    staged.replace(incoming / "first.txt")
    try:
        await until_read(seen, incoming / "first.txt")
    finally:
        await ssc.stop(stopSparkContext=False)
    assert [lines for _, lines in seen] == [["hello"]]

    elsewhere = tmp_path / "elsewhere"
    mixed = StreamingContext(sc, None, clock=SystemClock())
    watcher = mixed.fileWatcher(str(elsewhere), "uploads")
    ticks = mixed.timer(Time(0), None, Seconds(60), "ticks")
    mixed.textFileStream(str(elsewhere)).foreachRDD(lambda rdd: None).bind(watcher).bind(ticks)
    with pytest.raises(DirectoryNotFoundError, match="does not exist"):
        await mixed.start()
    assert not elsewhere.exists()


async def test_files_arriving_while_the_queue_is_full_wait_merged_within_the_bound(
    sc: SparkContext, tmp_path: Path
) -> None:
    """Under "block" a watcher's events past the bound wait their turn; beyond as many as the
    bound they merge (every file still read once) instead of piling up, one per file."""
    incoming, staging = tmp_path / "in", tmp_path / "staging"
    incoming.mkdir()
    staging.mkdir()
    ssc = StreamingContext(sc, None, clock=SystemClock())
    uploads = ssc.fileWatcher(str(incoming), "uploads").overflow(2, "block")
    gate = threading.Event()
    read: list[list[str]] = []

    def job(rdd: Any) -> None:
        gate.wait(30)  # the first batch holds the worker while the files arrive
        read.append(rdd.collect())

    ssc.textFileStream(str(incoming)).foreachRDD(job).bind(uploads)
    merged: list[EventsDropped] = []
    ssc.addStreamingListener(Listening(merged))
    await ssc.start()
    await uploads.ready()
    for number in range(20):
        staged = staging / f"f{number:02d}.txt"
        staged.write_text(f"{number}\n")
        staged.replace(incoming / staged.name)
        await asyncio.sleep(0.05)  # each is an event of its own
    await asyncio.sleep(2)  # the watcher has reported every file
    gate.set()
    for _ in range(120):
        if sum(len(lines) for lines in read) == 20:
            break
        await asyncio.sleep(0.25)
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    assert sorted(int(line) for lines in read for line in lines) == list(range(20))  # once each
    # the running one, one accepted, one posted in turn, and the bound's two waiting behind it
    assert len(read) <= 5, [len(lines) for lines in read]
    assert merged and {drop.reason for drop in merged} == {"coalesce"}  # never silently


class Listening(StreamingListener):
    """Keeps what `onEventsDropped` reports."""

    def __init__(self, reports: list[EventsDropped]) -> None:
        self.reports = reports

    def onEventsDropped(self, dropped: EventsDropped) -> None:
        self.reports.append(dropped)
