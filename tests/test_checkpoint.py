"""Checkpoints: the write-ahead log, recovery after a crash, catch-up."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark import SparkContext

from reactive_spark import Days, Event, Hours, Minutes, Seconds, StreamingContext, Time
from reactive_spark.checkpoint import Checkpoint, CheckpointError
from reactive_spark.errors import ContextStateError, InvalidArgumentError
from reactive_spark.sources.timer import TimerEventSource

from .helpers import ran, virtual

T0 = Time.fromDatetime(datetime(2024, 1, 1, tzinfo=UTC))
DAYS = 10


class Crash(BaseException):
    """Stands for the driver dying in the middle of a batch."""


def day_of(event: Event) -> int:
    return (event.time.milliseconds - T0.milliseconds) // Days(1).milliseconds


def crashing_on(day: int | None) -> Any:
    """An output function that raises `Crash` at `day`'s events (None: never)."""

    def beat(time: datetime, rdd: Any, event: Event) -> None:
        if day_of(event) == day:
            raise Crash  # before the other jobs of its batch

    return beat


def daily_pipeline(
    ssc: StreamingContext, crashOn: int | None, seen: list[tuple[int, list[int]]]
) -> tuple[TimerEventSource, list[tuple[int, list[int]]]]:
    """A daily job over one queue item per day, and a weekly roll-up of its outputs."""
    daily = ssc.timer(T0, None, Days(1), "daily")
    numbers = ssc.queueStream([[day * 10, day * 10 + 1] for day in range(DAYS)])
    weekly: list[tuple[int, list[int]]] = []

    def record(time: datetime, rdd: Any, event: Event) -> None:
        if day_of(event) == crashOn:
            raise Crash(f"driver died on day {crashOn}")
        seen.append((day_of(event), sorted(rdd.collect())))

    numbers.foreachRDD(record).bind(daily)
    numbers.tailWindow(7, 7).foreachRDD(
        lambda time, rdd, event: weekly.append((day_of(event), sorted(rdd.collect())))
    ).bind(daily)
    return daily, weekly


async def test_restart_reruns_the_unfinished_batch_rebuilds_windows_and_catches_up(
    sc: SparkContext, tmp_path: Path
) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    seen: list[tuple[int, list[int]]] = []
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    daily_pipeline(first, crashOn=3, seen=seen)
    await first.start()
    with pytest.raises(Crash):
        await first.advanceTo(T0 + Days(DAYS))
    await first.stop(stopSparkContext=False)
    assert [day for day, _ in seen] == [0, 1, 2]

    # down from day 3 until the middle of day 5; days 3 (unfinished), 4 and 5 are caught up
    second = virtual(sc, start=T0 + Days(5) + Minutes(720), checkpoint=checkpoint)
    _, weekly = daily_pipeline(second, crashOn=None, seen=seen)
    await second.start()
    await second.runUntil(T0 + Days(DAYS - 1))
    await second.stop(stopSparkContext=False)
    assert seen == [(day, [day * 10, day * 10 + 1]) for day in range(DAYS)]
    assert second.zeroTime == T0
    # the roll-up on day 6 covers days 0-2, processed before the crash, too
    assert weekly == [(6, sorted(n for day in range(7) for n in (day * 10, day * 10 + 1)))]


async def test_a_clean_stop_resumes_where_it_left_off(sc: SparkContext, tmp_path: Path) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    seen: list[tuple[int, list[int]]] = []
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    daily_pipeline(first, crashOn=None, seen=seen)
    await first.start()
    await first.runUntil(T0 + Days(2))
    await first.stop(stopSparkContext=False, stopGracefully=True)
    second = virtual(sc, start=T0 + Days(2), checkpoint=checkpoint)
    timer, _ = daily_pipeline(second, crashOn=None, seen=seen)
    fired: list[int] = []
    timer.addListener(lambda event: fired.append(event.index))
    await second.start()
    await second.runUntil(T0 + Days(4))
    await second.stop(stopSparkContext=False)
    assert [day for day, _ in seen] == [0, 1, 2, 3, 4]
    assert fired == [3, 4]  # indexes continue the first run's


@pytest.mark.parametrize(
    ("policy", "expected"),
    [("all", 96), ("coalesce", 1), ("latest", 1), ("skip", 0)],
)
async def test_catch_up_policies(
    sc: SparkContext, tmp_path: Path, policy: str, expected: int
) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    stood_for: list[int] = []

    def build(ssc: StreamingContext) -> tuple[TimerEventSource, list[Time]]:
        quarterly = ssc.timer(T0, None, Minutes(15), "quarterly")
        quarterly.catchUp = policy
        times: list[Time] = []

        def ran(time: Any, rdd: Any, event: Any) -> None:
            times.append(event.time)
            stood_for.append(event.standsFor)

        ssc.queueStream([]).foreachRDD(ran).bind(quarterly)
        return quarterly, times

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first)
    await first.start()
    await first.runUntil(T0 + Minutes(30))
    await first.stop(stopSparkContext=False, stopGracefully=True)
    # a day of downtime: ticks from 00:45 on day 0 up to 00:30 on day 1 are missed (96)
    second = virtual(sc, start=T0 + Days(1) + Minutes(40), checkpoint=checkpoint)
    _, times = build(second)
    await second.start()
    await second.advanceTo(T0 + Days(1) + Minutes(40))
    await second.stop(stopSparkContext=False)
    assert len(times) == expected
    if expected == 1:
        assert times == [T0 + Days(1) + Minutes(30)]
    # the first run's three ticks, then what the restart fired; a coalesced one stands for all
    assert stood_for == [1, 1, 1] + ([96] if policy == "coalesce" else [1] * expected)
    if expected == 96:
        assert times[0] == T0 + Minutes(45)
        assert times[-1] == T0 + Days(1) + Minutes(30)


def test_catch_up_policy_is_validated(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None)
    timer = ssc.timer(T0, None, Minutes(1), "t")
    with pytest.raises(ValueError, match="catchUp must be one of all, coalesce, latest, skip"):
        timer.catchUp = "some"


async def test_file_outputs_of_a_rerun_batch_are_not_written_twice(
    sc: SparkContext, tmp_path: Path
) -> None:
    checkpoint, out = str(tmp_path / "checkpoint"), tmp_path / "out"
    ran: list[int] = []

    def build(ssc: StreamingContext, crash: bool) -> None:
        daily = ssc.timer(T0, None, Days(1), "daily")
        numbers = ssc.queueStream([[1, 2, 3]], default=[])
        numbers.saveAsTextFiles(str(out / "numbers")).bind(daily)

        def after_save(rdd: Any) -> None:
            if crash:
                raise Crash("died after the save, before the batch completed")
            ran.append(rdd.count())

        numbers.foreachRDD(after_save).bind(daily)

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, crash=True)
    await first.start()
    with pytest.raises(Crash):
        await first.advanceTo(T0)
    await first.stop(stopSparkContext=False)
    written = sorted(os.listdir(out))
    assert written == [f"numbers-{T0.milliseconds}"]
    before = sorted(os.listdir(out / written[0]))

    second = virtual(sc, start=T0 + Minutes(1), checkpoint=checkpoint)
    build(second, crash=False)
    await second.start()
    await second.advanceTo(T0 + Minutes(1))
    await second.stop(stopSparkContext=False)
    assert ran == [3]  # the batch re-ran with the RDD its queue position recorded
    assert sorted(os.listdir(out)) == written
    assert sorted(os.listdir(out / written[0])) == before
    lines = [
        line for part in (out / written[0]).glob("part-*") for line in part.read_text().splitlines()
    ]
    assert sorted(lines) == ["1", "2", "3"]


async def test_a_changed_source_starts_afresh(sc: SparkContext, tmp_path: Path) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    ticks = first.timer(T0, None, Minutes(10), "ticks")
    first.queueStream([]).foreachRDD(lambda rdd: None).bind(ticks)
    await first.start()
    await first.runUntil(T0 + Minutes(30))
    await first.stop(stopSparkContext=False, stopGracefully=True)

    second = virtual(sc, start=T0 + Minutes(60), checkpoint=checkpoint)
    ticks = second.timer(T0, None, Minutes(20), "ticks")  # a new period: a new source
    fired: list[Event] = []
    ticks.addListener(fired.append)
    second.queueStream([]).foreachRDD(lambda rdd: None).bind(ticks)
    await second.start()
    await second.advanceTo(T0 + Minutes(60))
    await second.stop(stopSparkContext=False)
    assert [(event.index, event.time) for event in fired] == [(0, T0 + Minutes(60))]


def test_the_log_survives_a_torn_record_and_compacts(tmp_path: Path) -> None:
    from reactive_spark import checkpoint as module
    from reactive_spark.dependencies import Retention

    store = Checkpoint(str(tmp_path))
    assert store.load() is None
    store.open(T0, [], Retention(count=2), None)
    segment = Path(store._segment_path(store._segment_number))
    records = [
        {
            "kind": "planned",
            "id": n,
            "source": "s",
            "index": n,
            "time": n,
            "event": {},
            "inputs": {},
            "progress": {"s": [n, n]},
        }
        for n in range(5)
    ]
    with segment.open("a") as file:
        for record in records:
            file.write(json.dumps(record) + "\n")
            if record["id"] < 4:
                file.write(json.dumps({"kind": "completed", "id": record["id"]}) + "\n")
        file.write('{"kind": "completed", "id": 4')  # torn by the crash
    store.close()
    recovered = store.load()
    assert recovered is not None
    assert [record["id"] for record in recovered.completed] == [0, 1, 2, 3]
    assert [record["id"] for record in recovered.unfinished] == [4]
    assert recovered.progress == {"s": [4, 4]}
    assert recovered.last_instance_id == 4

    # reopening compacts: only the two latest completed batches (the retention) are kept
    reopened = Checkpoint(str(tmp_path))
    reopened.open(T0, [], Retention(count=2), recovered)
    reopened.close()
    assert os.listdir(tmp_path / "wal") == [f"segment-{2:06d}.jsonl"]
    again = reopened.load()
    assert again is not None
    assert [record["id"] for record in again.completed] == [2, 3]
    assert [record["id"] for record in again.unfinished] == [4]
    assert again.last_instance_id == 4
    assert module.SEGMENT_RECORDS > 0


def test_a_corrupt_record_before_others_stops_recovery_naming_it(tmp_path: Path) -> None:
    """Only the last line of a segment can be torn by a crash: a record that cannot be read
    with records after it is corruption, and skipping the rest would run their batches again."""
    from reactive_spark.dependencies import Retention

    store = Checkpoint(str(tmp_path))
    store.open(T0, [], Retention(count=2), None)
    segment = Path(store._segment_path(store._segment_number))
    store.close()
    good = [json.dumps({"kind": "completed", "id": n}).encode() for n in range(3)]
    planned_without_inputs = json.dumps(
        {"kind": "planned", "id": 7, "source": "s", "index": 0, "time": 0, "event": {}}
    ).encode()
    progress_not_a_dict = b'{"kind": "progress", "progress": [1], "lastInstanceId": 3}'
    for bad in (
        b'{"kind": "compl',
        b"\xff\xfe{}",
        b"[1, 2]",
        b'{"id": 1}',
        planned_without_inputs,
        progress_not_a_dict,
    ):
        kept = segment.read_bytes()
        segment.write_bytes(kept + b"\n".join([good[0], bad, *good[1:]]) + b"\n")
        lines = segment.read_bytes().count(b"\n")
        with pytest.raises(CheckpointError) as refused:
            Checkpoint(str(tmp_path)).load()
        assert f"{segment} line {lines - 2}" in str(refused.value), bad
        segment.write_bytes(kept)
    # a torn multi-byte character at the very end is a torn record: ignored
    segment.write_bytes(segment.read_bytes() + good[0] + b"\n" + '{"x": "é'.encode()[:-1])
    assert Checkpoint(str(tmp_path)).load() is not None


@pytest.mark.parametrize(
    "metadata",
    ["[1]", '{"version": 1, "sources": {}}', '{"version": 1, "zeroTime": 0}', "\udcff"],
)
def test_unreadable_metadata_is_refused_naming_the_file(tmp_path: Path, metadata: str) -> None:
    path = tmp_path / "metadata.json"
    path.write_bytes(metadata.encode("utf-8", "surrogateescape"))
    with pytest.raises(CheckpointError, match=str(path)):
        Checkpoint(str(tmp_path)).load()


def test_an_unknown_format_is_refused(tmp_path: Path) -> None:
    (tmp_path / "metadata.json").write_text(json.dumps({"version": 99}))
    with pytest.raises(CheckpointError, match="format version 99"):
        Checkpoint(str(tmp_path)).load()


async def test_a_killed_driver_recovers_without_losing_or_repeating_output(
    sc: SparkContext, tmp_path: Path
) -> None:
    from . import crash_app

    checkpoint, out = str(tmp_path / "checkpoint"), str(tmp_path / "out")
    root = Path(__file__).resolve().parent.parent
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.crash_app",
        checkpoint,
        out,
        cwd=root,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await child.communicate()
    assert child.returncode == 3, output.decode()[-2000:]
    day_dirs = sorted(name for name in os.listdir(out) if not name.startswith("."))
    assert len(day_dirs) == crash_app.CRASH_DAY + 1  # day 3's output was committed

    ssc = virtual(sc, start=crash_app.T0 + Days(5), checkpoint=checkpoint)
    crash_app.build(ssc, out, crash=False)
    await ssc.start()
    await ssc.runUntil(crash_app.T0 + Days(9))
    await ssc.stop(stopSparkContext=False)
    for day in range(10):
        batch = Path(out) / f"day-{(crash_app.T0 + Days(day)).milliseconds}"
        lines = [line for part in batch.glob("part-*") for line in part.read_text().split()]
        assert sorted(lines, key=int) == [str(day), str(day * 100)], day
    assert len([name for name in os.listdir(out) if not name.startswith(".")]) == 10


def test_events_are_recreated_from_their_records(sc: SparkContext, tmp_path: Path) -> None:
    from reactivex.subject import Subject

    from reactive_spark.events import FileEvent, ObservableEvent, RestEvent

    ssc = StreamingContext(sc, None)
    files = ssc.fileWatcher(str(tmp_path), "files")
    rest = ssc.restServer(port=0, name="rest").post("/go")
    values = ssc.rxEventSource(Subject(), "values")
    sized = files.map(lambda event: len(event.paths))
    both = sized.join(rest, Minutes(5))
    originals: list[Event] = [
        FileEvent(files, 2, T0, (str(tmp_path / "a.csv"),), "added", 7),
        RestEvent(rest, 0, T0, "POST", "/go", {"x": "1"}, {"n": [1, 2]}, 8),
        ObservableEvent(values, 4, T0, {"reason": "backfill"}, 9),
    ]
    mapped = sized.eventFromRecord(
        {
            "source": sized.name,
            "index": 1,
            "time": T0.milliseconds,
            "instanceId": 10,
            "value": 1,
            "parent": originals[0].describe(),
        }
    )
    originals.append(mapped)
    joined = both.eventFromRecord(
        {
            "source": both.name,
            "index": 0,
            "time": T0.milliseconds,
            "instanceId": 11,
            "left": mapped.describe(),
            "right": originals[1].describe(),
        }
    )
    originals.append(joined)
    for original in originals:
        record = json.loads(json.dumps(original.describe()))
        again = original.source.eventFromRecord(record)
        assert type(again) is type(original)
        assert again.describe() == original.describe()
    # a coalesced stand-in's batch, re-run after a crash, still stands for what it replaced
    from reactive_spark.recovery import recreate

    stand_in = ObservableEvent(values, 5, T0, "late", 11)
    stand_in.standsFor = 23
    record = {"source": values.name, "index": 5, "event": stand_in.describe()}
    again = recreate(record, {values.name: values}, rerun=True)
    assert again is not None and again.standsFor == 23 and again.value == "late"
    assert "standsFor" not in originals[0].describe()  # only where it says something
    assert mapped.value == 1 and mapped.paths == (str(tmp_path / "a.csv"),)  # type: ignore[attr-defined]
    assert joined.right.body == {"n": [1, 2]}  # type: ignore[attr-defined]


async def test_files_dropped_during_downtime_are_caught_up(
    sc: SparkContext, tmp_path: Path
) -> None:
    inbox, checkpoint = tmp_path / "inbox", str(tmp_path / "checkpoint")
    inbox.mkdir()
    read: list[list[str]] = []

    def build(ssc: StreamingContext, policy: str) -> None:
        uploads = ssc.fileWatcher(str(inbox), "uploads")
        uploads.catchUp = policy
        ssc.textFileStream(str(inbox)).foreachRDD(
            lambda rdd: read.append(sorted(rdd.collect()))
        ).bind(uploads)

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, "all")
    await first.start()
    await first.stop(stopSparkContext=False, stopGracefully=True)
    for minute, name in ((1, "a"), (2, "b"), (3, "c")):
        path = inbox / f"{name}.txt"
        path.write_text(f"{name}\n")
        stamp = (T0 + Minutes(minute)).milliseconds / 1000
        os.utime(path, (stamp, stamp))
    second = virtual(sc, start=T0 + Minutes(10), checkpoint=checkpoint)
    build(second, "coalesce")
    await second.start()
    await second.advanceTo(T0 + Minutes(10))
    await second.stop(stopSparkContext=False)
    assert read == [["a", "b", "c"]]  # the three missed files, as one event


async def test_getOrCreate_rebuilds_the_graph_and_recovers(
    sc: SparkContext, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    seen: list[tuple[int, list[int]]] = []

    def setup(start: Time, crashOn: int | None) -> StreamingContext:
        ssc = virtual(sc, start=start)
        daily_pipeline(ssc, crashOn, seen)
        return ssc

    first = StreamingContext.getOrCreate(checkpoint, lambda: setup(T0, 1))
    assert first.checkpointDirectory == checkpoint
    await first.start()
    with pytest.raises(Crash):
        await first.advanceTo(T0 + Days(3))
    await first.stop(stopSparkContext=False)
    second = StreamingContext.getOrCreate(checkpoint, lambda: setup(T0 + Days(2), None))
    with caplog.at_level(logging.INFO, logger="reactive_spark.lifecycle"):
        await second.start()
    # when it started, and the zero time its checkpoint keeps
    started = "started at 2024-01-03T00:00:00Z (its zero time 2024-01-01T00:00:00Z)"
    assert started in caplog.text
    await second.advanceTo(T0 + Days(3))
    await second.stop(stopSparkContext=False)
    assert [day for day, _ in seen] == [0, 1, 2, 3]
    with pytest.raises(ContextStateError, match="cannot set the checkpoint directory"):
        second.checkpoint(checkpoint)
    with pytest.raises(ValueError, match="setupFunc must return a StreamingContext"):
        StreamingContext.getOrCreate(checkpoint, lambda: None)  # type: ignore[arg-type,return-value]


async def test_ssc_checkpoint_alone_starts_afresh_as_in_pyspark(
    sc: SparkContext, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """As in pyspark.streaming, `ssc.checkpoint(dir)` says where checkpoints go: running the
    program again starts afresh (new state, its own queue, no catch-up of the downtime), and
    only `getOrCreate` recovers. Run twice, a ported stateful word count printed the old
    counts, skipped its new data and replayed every missed tick."""
    checkpoint = str(tmp_path / "checkpoint")

    def program(start: Time) -> tuple[StreamingContext, list[list[tuple[str, int]]]]:
        ssc = virtual(sc, 1, start=start)
        ssc.checkpoint(checkpoint)
        counts: list[list[tuple[str, int]]] = []
        words = ssc.queueStream([[("k", 1)] for _ in range(32)])
        words.updateStateByKey(lambda new, old: sum(new) + (old or 0)).foreachRDD(
            lambda rdd: counts.append(rdd.collect())
        )
        return ssc, counts

    first, once = program(T0)
    await ran(first, T0 + Seconds(32))  # the state is saved every 10 batches
    again, twice = program(T0 + Days(1))
    assert not again.recovered
    await ran(again, T0 + Days(1) + Seconds(12))  # its saves are not mistaken for older ones
    assert once == [[("k", n)] for n in range(1, 33)]
    assert twice == once[:12]
    assert "held a checkpoint this context does not recover from" in caplog.text
    # the first run's checkpoint is set aside, not deleted: moved back, it recovers
    assert json.loads((Path(checkpoint) / "replaced" / "metadata.json").read_text())
    recovering = StreamingContext.getOrCreate(checkpoint, lambda: program(T0 + Days(1))[0])
    assert recovering.recovered
    made_before, _ = program(T0 + Days(1))  # pyspark never calls setupFunc to recover
    assert StreamingContext.getOrCreate(checkpoint, lambda: made_before).recovered
    given = virtual(sc, 1, start=T0 + Days(1), checkpoint=checkpoint)
    given.checkpoint(f"./{os.path.relpath(checkpoint)}/")  # the same directory
    assert given.recovered


async def test_state_survives_a_crash(sc: SparkContext, tmp_path: Path) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    days, crash_day = 25, 17
    totals: dict[int, dict[str, int]] = {}

    def build(ssc: StreamingContext, crash: bool) -> None:
        daily = ssc.timer(T0, None, Days(1), "daily")
        sales = ssc.queueStream([[("a", 1), ("b", day)] for day in range(days)])
        running = sales.updateStateByKey(lambda new, total: sum(new) + (total or 0))

        def record(time: datetime, rdd: Any, event: Event) -> None:
            if crash and day_of(event) == crash_day:
                raise Crash
            totals[day_of(event)] = dict(rdd.collect())

        running.foreachRDD(record).bind(daily)

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, crash=True)
    await first.start()
    with pytest.raises(Crash):
        await first.advanceTo(T0 + Days(days))
    await first.stop(stopSparkContext=False)
    saves = sorted(os.listdir(tmp_path / "checkpoint" / "state"))
    assert [name.split("-")[1] for name in saves] == ["9"]  # the state after day 9 was saved

    second = virtual(sc, start=T0 + Days(crash_day), checkpoint=checkpoint)
    build(second, crash=False)
    await second.start()
    await second.runUntil(T0 + Days(days - 1))
    await second.stop(stopSparkContext=False)
    assert sorted(totals) == list(range(days))
    assert len(os.listdir(tmp_path / "checkpoint" / "state")) == 2  # after days 9 and 19
    for day in range(days):
        assert totals[day] == {"a": day + 1, "b": day * (day + 1) // 2}, day


async def test_state_after_a_window_survives_a_crash(sc: SparkContext, tmp_path: Path) -> None:
    """The state moves every third day, with its window; it is saved after ten days all the
    same, between two updates, so the days a restart rebuilds reach back to the save."""
    checkpoint = str(tmp_path / "checkpoint")
    days, crash_day = 25, 17
    totals: dict[int, dict[str, int]] = {}

    def build(ssc: StreamingContext, crash: bool) -> None:
        daily = ssc.timer(T0, None, Days(1), "daily")
        sales = ssc.queueStream([[("a", 1), ("b", day)] for day in range(days)])
        running = sales.window(Days(3), Days(3)).updateStateByKey(
            lambda new, total: sum(new) + (total or 0)
        )

        def record(time: datetime, rdd: Any, event: Event) -> None:
            if crash and day_of(event) == crash_day:
                raise Crash
            totals[day_of(event)] = dict(rdd.collect())

        running.foreachRDD(record).bind(daily)

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, crash=True)
    await first.start()
    with pytest.raises(Crash):
        await first.advanceTo(T0 + Days(days))
    await first.stop(stopSparkContext=False)
    saves = sorted(os.listdir(tmp_path / "checkpoint" / "state"))
    assert [name.split("-")[1] for name in saves] == ["9"]  # not a day the state moved

    second = virtual(sc, start=T0 + Days(crash_day), checkpoint=checkpoint)
    build(second, crash=False)
    await second.start()
    await second.runUntil(T0 + Days(days - 1))
    await second.stop(stopSparkContext=False)
    assert sorted(totals) == list(range(2, days, 3))
    for day in totals:
        assert totals[day] == {"a": day + 1, "b": day * (day + 1) // 2}, day


async def test_a_state_that_moved_long_ago_survives_a_crash(
    sc: SparkContext, tmp_path: Path
) -> None:
    """Orders arrive on their own timer, on days 1 and 16; the daily state reads them through a
    window, so it moves only then. The ten days a restart rebuilds miss day 1: the state was
    saved on day 9 all the same, as it had changed."""
    checkpoint = str(tmp_path / "checkpoint")
    crash_day = 14
    totals: dict[int, dict[str, int]] = {}

    def build(ssc: StreamingContext, crash: bool) -> None:
        daily = ssc.timer(T0, None, Days(1), "daily")
        arrivals = ssc.timer(T0 + Days(1), None, Days(15), "orders")
        orders = ssc.queueStream([[("a", 1), ("b", 2)], [("a", 10)]]).bind(arrivals)
        running = orders.tailWindow(1).updateStateByKey(lambda new, total: sum(new) + (total or 0))
        running.foreachRDD(
            lambda time, rdd, event: totals.__setitem__(day_of(event), dict(rdd.collect()))
        ).bind(daily)

        ssc.queueStream([]).foreachRDD(crashing_on(crash_day if crash else None)).bind(daily)

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, crash=True)
    await first.start()
    with pytest.raises(Crash):
        await first.advanceTo(T0 + Days(20))
    await first.stop(stopSparkContext=False)
    saves = sorted(os.listdir(tmp_path / "checkpoint" / "state"))
    assert [name.split("-")[1] for name in saves] == ["10"]  # day 9 (after the orders of day 1)

    second = virtual(sc, start=T0 + Days(crash_day), checkpoint=checkpoint)
    build(second, crash=False)
    await second.start()
    await second.runUntil(T0 + Days(20))
    await second.stop(stopSparkContext=False)
    assert totals == {1: {"a": 1, "b": 2}, 16: {"a": 11, "b": 2}}


def running_totals_read_daily_and_weekly(
    ssc: StreamingContext, seen: list[tuple[str, int, list[int]]], crash_day: int | None
) -> None:
    """Days 1..15 summed by a daily state; the running totals of the last 3 days read daily, of
    the last 7 weekly, on days 1, 8 and 15 (after the daily tick); the totals themselves read
    by an output bound to both timers, which runs once per instant."""
    daily = ssc.timer(T0 + Days(1), None, Days(1), "daily")
    weekly = ssc.timer(T0 + Days(1), None, Days(7), "weekly")

    def recorder(name: str) -> Any:
        return lambda time, rdd, event: seen.append(
            (name, day_of(event), sorted(total for _, total in rdd.collect()))
        )

    days = ssc.queueStream([[("total", day)] for day in range(1, 16)]).bind(daily)
    days.foreachRDD(crashing_on(crash_day)).bind(daily)
    totals = days.updateStateByKey(lambda new, total: sum(new) + (total or 0))
    totals.foreachRDD(recorder("total")).bind(daily).bind(weekly)
    totals.window(Days(3), Days(1)).foreachRDD(recorder("3 days")).bind(daily)
    totals.window(Days(7), Days(7)).foreachRDD(recorder("week")).bind(weekly)


@pytest.mark.parametrize("interrupted", [None, "crash", "stop"])
async def test_a_state_saved_at_the_second_event_of_its_instant_is_read_once_there(
    sc: SparkContext, tmp_path: Path, interrupted: str | None
) -> None:
    """The state's tenth event is the weekly tick of day 8, which gives the state of day 8
    again: its lineage is cut there, saved and loaded back as another RDD. Given for that
    event, it was a second state of day 8: the windows held day 8 twice (the 3 days to day 9:
    totals 28, 36, 36, 45) and the output bound to both timers ran twice on day 8. A restart
    after day 9 re-planned the weekly tick from the save, and did the same."""
    checkpoint = str(tmp_path / "checkpoint")
    seen: list[tuple[str, int, list[int]]] = []
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    running_totals_read_daily_and_weekly(first, seen, 9 if interrupted == "crash" else None)
    if interrupted is None:
        await ran(first, T0 + Days(15))
    elif interrupted == "crash":
        await first.start()
        with pytest.raises(Crash):
            await first.advanceTo(T0 + Days(15))
        await first.stop(stopSparkContext=False)
    else:
        await ran(first, T0 + Days(9), graceful=True)
    saves = sorted(os.listdir(tmp_path / "checkpoint" / "state"))
    assert [name.split("-")[1] for name in saves] == ["9"]  # the weekly tick of day 8
    if interrupted is not None:
        second = virtual(sc, start=T0 + Days(9), checkpoint=checkpoint)
        running_totals_read_daily_and_weekly(second, seen, None)
        await ran(second, T0 + Days(15))

    def total(day: int) -> int:
        return day * (day + 1) // 2

    expected = [("total", day, [total(day)]) for day in range(1, 16)]
    expected += [
        ("3 days", day, [total(d) for d in range(max(day - 2, 1), day + 1)]) for day in range(1, 16)
    ]
    expected += [("week", day, [total(d) for d in range(day - 6, day + 1)]) for day in (8, 15)]
    assert sorted(seen) == sorted(expected)


#: How many days the sales of `totals_at_midnight_and_noon` last.
SALES_DAYS = 25


def totals_at_midnight_and_noon(
    ssc: StreamingContext, seen: list[tuple[str, str, int, list[Any]]], crash_day: int | None
) -> None:
    """Sales come at midnight and at noon, and their running total is read at both: the
    state's 10th, 20th, ... events are noon ones, so it is saved at noon only. At midnight a
    window over a stream that has an RDD every sixth day reads back to day 0 from day 18 on,
    and the last three totals are read: a restart on day 22 re-plans the midnight batches from
    day 0, but the noon ones (where the saves are) only from day 12."""
    midnight = ssc.timer(T0, None, Days(1), "midnight")
    noon = ssc.timer(T0 + Hours(12), None, Days(1), "noon")

    def recorder(name: str) -> Any:
        return lambda time, rdd, event: seen.append(
            (name, event.source.name, day_of(event), sorted(rdd.collect()))
        )

    ssc.queueStream([]).foreachRDD(crashing_on(crash_day)).bind(midnight)
    sales = ssc.queueStream([[("total", n)] for n in range(2 * SALES_DAYS)])
    totals = sales.updateStateByKey(lambda new, total: sum(new) + (total or 0))
    totals.foreachRDD(recorder("total")).bind(midnight).bind(noon)
    totals.tailWindow(3).foreachRDD(recorder("last 3")).bind(midnight)
    sparse = ssc.queueStream([[day] for day in range(SALES_DAYS)]).transform(
        lambda time, rdd, event: rdd if day_of(event) % 6 == 0 else None
    )
    sparse.tailWindow(4).foreachRDD(recorder("sparse")).bind(midnight)


async def test_a_restart_replaying_from_before_the_states_saves_saves_nothing_itself(
    sc: SparkContext, tmp_path: Path
) -> None:
    """The restart re-plans the midnight batches of days 0-21, and the noon ones of days
    12-21, which load the saves of days 14 and 19. Until day 12 the state counts midnight
    events only, from none: it reached 10 on day 9, where the first run had not saved it (its
    count had started again at the save of day 9's noon, a batch the log no longer keeps),
    and saved it there: a Spark job, and a save of a wrong state that no batch reads. A
    re-planned batch saves the state where its record says it did, and nowhere else."""
    end = T0 + Days(SALES_DAYS - 1) + Hours(12)
    uninterrupted: list[tuple[str, str, int, list[Any]]] = []
    reference = virtual(sc, start=T0, checkpoint=str(tmp_path / "reference"))
    totals_at_midnight_and_noon(reference, uninterrupted, None)
    await ran(reference, end)
    assert sum(name == "sparse" for name, *_ in uninterrupted) == 5  # days 0, 6, 12, 18, 24

    def saves(name: str) -> list[str]:
        return sorted(os.listdir(tmp_path / name / "state"))

    seen: list[tuple[str, str, int, list[Any]]] = []
    crash_day = 22
    first = virtual(sc, start=T0, checkpoint=str(tmp_path / "checkpoint"))
    totals_at_midnight_and_noon(first, seen, crash_day)
    await first.start()
    with pytest.raises(Crash):
        await first.advanceTo(end)
    await first.stop(stopSparkContext=False)
    # the noons of days 9, 14 and 19: the log kept the ten noons before day 19's, planned
    assert [name.split("-")[1] for name in saves("checkpoint")] == ["19", "29", "39"]

    second = virtual(sc, start=T0 + Days(crash_day), checkpoint=str(tmp_path / "checkpoint"))
    totals_at_midnight_and_noon(second, seen, None)
    await second.start()  # it re-planned the batches the log keeps, and re-ran day 22's
    try:  # day 9's save, which no kept batch reads, is gone; no other came
        assert [name.split("-")[1] for name in saves("checkpoint")] == ["29", "39"]
        await second.runUntil(end)
    finally:
        await second.stop(stopSparkContext=False)
    assert seen == uninterrupted
    # as without the crash: saved at the noon of day 24 too, the ten noons before it kept
    assert saves("checkpoint") == saves("reference")
    assert [name.split("-")[1] for name in saves("reference")] == ["29", "39", "49"]


async def test_delayed_events_waiting_at_a_stop_are_reported_and_still_fire(
    sc: SparkContext, tmp_path: Path
) -> None:
    from reactive_spark import EventsDropped, Hours, StreamingListener

    checkpoint = str(tmp_path / "checkpoint")
    fired: list[Time] = []
    dropped: list[EventsDropped] = []

    class Drops(StreamingListener):
        def onEventsDropped(self, eventsDropped: EventsDropped) -> None:
            dropped.append(eventsDropped)

    def build(ssc: StreamingContext) -> None:
        hourly = ssc.timer(T0, None, Hours(1), "hourly")
        later = hourly.delay(Minutes(90))
        ssc.queueStream([]).foreachRDD(lambda t, rdd, e: fired.append(e.time)).bind(later)
        ssc.addStreamingListener(Drops())

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first)
    await first.start()
    await first.runUntil(T0 + Hours(2) + Minutes(10))  # ticks at 0, 1 and 2 h; 1:30 fired
    await first.stop(stopSparkContext=False, stopGracefully=True)
    assert fired == [T0 + Minutes(90)]
    # this run dropped 2:30 and 3:30, and says so; the restart fires them again
    [stop] = dropped
    assert (stop.reason, [e.time for e in stop.events]) == (
        "stop",
        [T0 + Minutes(150), T0 + Minutes(210)],
    )

    second = virtual(sc, start=T0 + Hours(5), checkpoint=checkpoint)
    build(second)
    await second.start()
    await second.runUntil(T0 + Hours(6))
    await second.stop(stopSparkContext=False)
    # 2:30 and 3:30 were waiting at the stop; 4:30 and 5:30 come from the missed 3 h and 4 h ticks
    assert fired == [T0 + Minutes(90) + Hours(h) for h in range(5)]


@pytest.mark.parametrize(
    ("timer_bound", "operator", "policy", "graceful"),
    [
        (True, "map", "all", True),  # the map's 2:00 event came after the timer's last batch
        (True, "filter", "all", False),
        (True, "map", "skip", True),
        (False, None, "skip", False),  # the 2:00 tick came after the last batch (1:30's)
        (False, "map", "all", True),  # the restart fired the 2:00 tick again
    ],
)
async def test_a_stop_records_how_far_every_source_fired(
    sc: SparkContext,
    tmp_path: Path,
    timer_bound: bool,
    operator: str | None,
    policy: str,
    graceful: bool,
) -> None:
    from reactive_spark import EventSource, Hours

    checkpoint = str(tmp_path / "checkpoint")
    fired: list[Time] = []
    ticks: list[Time] = []

    def build(ssc: StreamingContext) -> None:
        hourly = ssc.timer(T0, None, Hours(1), "hourly")
        hourly.catchUp = policy
        hourly.addListener(lambda event: ticks.append(event.time))
        parent: EventSource = hourly
        if operator == "map":
            parent = hourly.map(lambda event: event.index)
        elif operator == "filter":
            parent = hourly.filter(lambda event: True)
        later = parent.delay(Minutes(90))
        ssc.queueStream([]).foreachRDD(lambda t, rdd, e: fired.append(e.time)).bind(later)
        if timer_bound:
            ssc.queueStream([]).foreachRDD(lambda rdd: None).bind(hourly)

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first)
    await ran(first, T0 + Hours(2) + Minutes(10), graceful=graceful)  # 0, 1 and 2 h; 1:30 fired
    second = virtual(sc, start=T0 + Hours(5), checkpoint=checkpoint)
    build(second)
    await ran(second, T0 + Hours(6))
    # 2:30 and 3:30 were waiting at the stop; under "all" the missed 3 h and 4 h ticks add more
    hours = range(5) if policy == "all" else range(3)
    assert fired == [T0 + Minutes(90) + Hours(h) for h in hours]
    assert ticks == sorted(set(ticks))  # no tick fired twice


async def test_what_a_pipe_buffers_at_a_stop_is_fired_again_after_the_restart(
    sc: SparkContext, tmp_path: Path
) -> None:
    import reactivex.operators as ops

    from reactive_spark import Hours

    checkpoint = str(tmp_path / "checkpoint")
    buffers: list[list[Time]] = []

    def build(ssc: StreamingContext) -> None:
        hourly = ssc.timer(T0, None, Hours(1), "hourly")  # unbound: only the pipe is
        threes = hourly.pipe(ops.buffer_with_count(3), name="threes")
        ssc.queueStream([]).foreachRDD(
            lambda t, rdd, e: buffers.append([tick.time for tick in e.value])
        ).bind(threes)

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first)
    await ran(first, T0 + Hours(4) + Minutes(10), graceful=True)  # 0-2 h fired; 3 and 4 h held
    second = virtual(sc, start=T0 + Hours(4) + Minutes(10), checkpoint=checkpoint)
    build(second)
    await ran(second, T0 + Hours(5) + Minutes(10))
    assert buffers == [[T0 + Hours(h) for h in range(3)], [T0 + Hours(h) for h in (3, 4, 5)]]


async def test_ticks_a_stop_drops_before_their_batch_fire_after_the_restart(
    sc: SparkContext, tmp_path: Path
) -> None:
    import threading

    from reactive_spark import Hours

    checkpoint = str(tmp_path / "checkpoint")
    ran: list[Time] = []
    running, gate = threading.Event(), threading.Event()

    def build(ssc: StreamingContext) -> None:
        def run(time: datetime, rdd: Any, event: Event) -> None:
            ran.append(event.time)
            if event.time == T0 + Hours(1):
                running.set()
                gate.wait(30)  # the 2 h to 4 h ticks wait behind it, accepted

        hourly = ssc.timer(T0, None, Hours(1), "hourly")
        ssc.queueStream([]).foreachRDD(run).bind(hourly)

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first)
    await first.start()
    await first.runUntil(T0 + Minutes(10))
    await first.stop(stopSparkContext=False, stopGracefully=True)
    second = virtual(sc, start=T0 + Hours(4) + Minutes(10), checkpoint=checkpoint)
    build(second)
    await second.start()  # catches up 1 h to 4 h
    assert await asyncio.to_thread(running.wait, 30)
    stopping = asyncio.create_task(second.stop(stopSparkContext=False, stopGracefully=False))
    await asyncio.sleep(0.2)
    gate.set()
    await stopping
    assert ran == [T0, T0 + Hours(1)]  # the stop dropped the 2 h to 4 h ticks
    third = virtual(sc, start=T0 + Hours(4) + Minutes(10), checkpoint=checkpoint)
    build(third)
    await third.start()
    await third.runUntil(T0 + Hours(4) + Minutes(10))
    await third.stop(stopSparkContext=False)
    assert ran == [T0 + Hours(h) for h in (0, 1, 2, 3, 4)]


async def test_a_join_pairs_across_a_restart(sc: SparkContext, tmp_path: Path) -> None:
    from reactive_spark import Hours

    checkpoint = str(tmp_path / "checkpoint")
    pairs: list[Time] = []

    def build(ssc: StreamingContext) -> None:
        uploads = ssc.timer(T0, None, Hours(1), "uploads")
        approvals = ssc.timer(T0 + Minutes(20), None, Hours(1), "approvals")
        both = uploads.join(approvals, Minutes(30))
        ssc.queueStream([]).foreachRDD(lambda t, rdd, e: pairs.append(e.time)).bind(both)
        ssc.queueStream([]).foreachRDD(lambda rdd: None).bind(uploads)  # logs every upload

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first)
    await first.start()
    await first.runUntil(T0 + Hours(2) + Minutes(10))  # the 2:00 upload waits for its approval
    await first.stop(stopSparkContext=False, stopGracefully=True)
    second = virtual(sc, start=T0 + Hours(2) + Minutes(15), checkpoint=checkpoint)
    build(second)
    await second.start()
    await second.runUntil(T0 + Hours(3) + Minutes(30))
    await second.stop(stopSparkContext=False)
    assert pairs == [T0 + Minutes(20) + Hours(h) for h in range(4)]


def test_a_checkpoint_behind_a_url_the_driver_cannot_fsync_is_refused(sc: SparkContext) -> None:
    with pytest.raises(InvalidArgumentError, match=r"checkpoint must be .* hdfs:// URL"):
        StreamingContext(sc, 1, checkpoint="hdfs:///apps/reports/checkpoint")
    with pytest.raises(InvalidArgumentError, match=r"checkpointPath .* s3a://"):
        StreamingContext.getOrCreate("s3a://bucket/checkpoint", lambda: StreamingContext(sc, 1))
    assert StreamingContext(sc, 1, checkpoint="file:///tmp/ck").checkpointDirectory == "/tmp/ck"


async def test_a_batch_whose_jobs_a_stop_cancelled_runs_again_after_a_restart(
    sc: SparkContext, tmp_path: Path
) -> None:
    import threading
    import time

    from reactive_spark import Hours

    checkpoint = str(tmp_path / "checkpoint")
    ran: list[tuple[str, Time]] = []
    started = threading.Event()

    def build(ssc: StreamingContext, slow: bool) -> None:
        def run(time_: datetime, rdd: Any, event: Event) -> None:
            if slow:
                started.set()
                rdd.map(lambda x: time.sleep(60)).count()  # cancelled by the stop
            ran.append(("slow" if slow else "fast", event.time))

        hourly = ssc.timer(T0, None, Hours(1), "hourly")
        ssc.queueStream([], default=[1]).foreachRDD(run).bind(hourly)

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, slow=True)
    await first.start()
    advancing = asyncio.ensure_future(first.advanceTo(T0))
    while not (started.is_set() and sc.statusTracker().getActiveJobsIds()):
        await asyncio.sleep(0.01)  # the job runs in Spark: the stop's first cancel reaches it
    await first.stop(stopSparkContext=False, stopGracefully=False)
    await asyncio.wait_for(advancing, 10)
    assert ran == []  # its job was cancelled: the batch did not complete
    second = virtual(sc, start=T0 + Minutes(10), checkpoint=checkpoint)
    build(second, slow=False)
    await second.start()
    await second.advanceTo(T0 + Minutes(10))
    await second.stop(stopSparkContext=False)
    assert ran == [("fast", T0)]


async def test_a_virtual_clock_restarted_behind_the_checkpoint_is_warned_about(
    sc: SparkContext, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The same program run again from the same start fires nothing (every source carries on
    from the checkpoint): it says why, once, and does not when the clock is past it."""
    checkpoint = str(tmp_path / "checkpoint")

    async def run(start: Time, until: Time) -> list[Time]:
        ssc = virtual(sc, start=start, checkpoint=checkpoint)
        daily = ssc.timer(T0 + Days(1), None, Days(1), "daily")
        times: list[Time] = []
        ssc.queueStream([]).foreachRDD(lambda t, rdd, e: times.append(e.time)).bind(daily)
        await ssc.start()
        await ssc.advanceTo(until)
        await ssc.stop(stopSparkContext=False)
        return times

    behind = "nothing fires until the virtual clock"
    with caplog.at_level("WARNING", logger="reactive_spark.lifecycle"):
        assert await run(T0, T0 + Days(3)) == [T0 + Days(day) for day in (1, 2, 3)]
        assert behind not in caplog.text  # nothing recovered
        assert await run(T0, T0 + Days(3)) == []  # the same program again
        assert caplog.text.count(behind) == 1
        assert T0.isoformat() in caplog.text and (T0 + Days(3)).isoformat() in caplog.text
        caplog.clear()
        assert await run(T0 + Days(3), T0 + Days(4)) == [T0 + Days(4)]  # carries on
        assert behind not in caplog.text


async def test_a_state_whose_save_failed_is_still_given_to_the_next_event_of_its_instant(
    sc: SparkContext, tmp_path: Path
) -> None:
    """The state's tenth update, on day 10, is saved at its first event there (the daily one),
    and the save's job fails in `updateFunc`. The weekly event of that instant reads the same
    window RDD: it gets the state that update made, whose job fails again and is reported. It
    got nothing, silently: the state had not been given at the instant before the save."""
    ssc = virtual(sc, start=T0, checkpoint=str(tmp_path / "checkpoint"))
    daily = ssc.timer(T0 + Days(1), None, Days(1), "daily")
    weekly = ssc.timer(T0 + Days(3), None, Days(7), "weekly")  # days 3, 10
    days = ssc.queueStream([[d] for d in range(1, 11)]).bind(daily)

    def update(new: list[int], old: int | None) -> int:
        if 10 in new:
            raise ValueError("day 10 refused")
        return sum(new) + (old or 0)

    totals = days.tailWindow(1, 1).map(lambda d: ("t", d)).updateStateByKey(update)
    totals.foreachRDD(lambda rdd: rdd.count()).bind(daily).bind(weekly)
    await ssc.start()
    failures = await ssc.advanceTo(T0 + Days(10))
    await ssc.stop(stopSparkContext=False)
    assert ["day 10 refused" in str(failure) for failure in failures] == [True, True]
    assert sorted(failure.event.source.name for failure in failures) == ["daily", "weekly"]
