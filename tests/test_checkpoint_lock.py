"""One driver at a time on a checkpoint directory: a second context starting on it is refused,
in this process or another, until the first stops or its process dies."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from pyspark import SparkContext

from reactive_spark import (
    ContextStateError,
    Days,
    Event,
    EventSource,
    StreamingContext,
    VirtualClock,
    recovery,
)
from reactive_spark.checkpoint import Checkpoint, CheckpointError
from reactive_spark.checkpoint_lock import CheckpointInUseError, CheckpointLock

from .helpers import ChildProcess
from .holding_app import T0, program


def daily(sc: SparkContext, checkpoint: Path, days: int = 0) -> tuple[StreamingContext, list[int]]:
    """`holding_app.program` on a virtual clock `days` after T0, checkpointing to `checkpoint`."""
    ssc = StreamingContext(
        sc, None, clock=VirtualClock(T0 + Days(days)), checkpoint=str(checkpoint)
    )
    return ssc, program(ssc)


async def crashed_until(sc: SparkContext, checkpoint: Path, days: int) -> list[int]:
    """`holding_app.program` run until `days` after T0 and stopped as after a crash: no batch
    was recorded done, so a restart re-runs them all. Returns the days whose batch ran."""
    with pytest.MonkeyPatch.context() as crash:
        crash.setattr(Checkpoint, "completed", lambda self, batch: None)
        first, first_days = daily(sc, checkpoint)
        await first.start()
        await first.runUntil(T0 + Days(days))
        await first.stop(stopSparkContext=False)
    return first_days


def in_use(checkpoint: Path, holder: str) -> str:
    """The start of the refusal's message, `holder` holding `checkpoint`."""
    return f"checkpoint directory {checkpoint} is in use by {holder} (pid {os.getpid()} on "


async def test_a_second_context_is_refused_until_the_first_stops(
    sc: SparkContext, tmp_path: Path
) -> None:
    """It started: both wrote the log, the second compacting away the first's segment."""
    checkpoint = tmp_path / "checkpoint"
    first, first_days = daily(sc, checkpoint)
    await first.start()
    await first.runUntil(T0 + Days(2))
    second, _ = daily(sc, checkpoint, days=2)
    with pytest.raises(CheckpointInUseError) as refused:
        await second.start()
    assert str(refused.value).startswith(
        in_use(checkpoint, "another StreamingContext of this process")
    )
    assert "stop that one first" in str(refused.value)
    assert refused.value.directory == str(checkpoint) and refused.value.pid == os.getpid()
    assert second.state == "stopped"
    await first.runUntil(T0 + Days(3))  # its log was left alone
    await first.stop(stopSparkContext=False)
    assert first_days == [1, 2, 3]

    third, third_days = daily(sc, checkpoint, days=3)
    await third.start()
    await third.runUntil(T0 + Days(5))
    await third.stop(stopSparkContext=False)
    assert third.recovered and third_days == [4, 5]


async def test_of_two_contexts_started_at_once_one_is_refused(
    sc: SparkContext, tmp_path: Path
) -> None:
    contexts = [daily(sc, tmp_path)[0] for _ in range(2)]
    started = await asyncio.gather(*(ssc.start() for ssc in contexts), return_exceptions=True)
    for ssc in contexts:
        await ssc.stop(stopSparkContext=False)
    assert sorted(type(result).__name__ for result in started) == [
        "CheckpointInUseError",
        "NoneType",
    ]


async def test_a_start_called_while_the_context_starts_is_refused_and_stops_nothing(
    sc: SparkContext, tmp_path: Path
) -> None:
    """Both calls went on starting the context: the second was refused by the first's hold on
    the checkpoint, and its clean-up stopped the context the first was starting."""
    ssc, days = daily(sc, tmp_path / "checkpoint")
    first, second = await asyncio.gather(ssc.start(), ssc.start(), return_exceptions=True)
    assert first is None
    assert isinstance(second, ContextStateError)
    assert str(second) == "cannot start: the StreamingContext is starting"
    assert ssc.state == "active"
    await ssc.runUntil(T0 + Days(2))
    await ssc.stop(stopSparkContext=False)
    assert days == [1, 2]


async def test_a_stop_called_while_the_context_starts_stops_it_once_started(
    sc: SparkContext, tmp_path: Path
) -> None:
    """The stop returned at once and let the directory go; the start then went on, and the
    context ran, unstoppable, while a second driver started on its directory."""
    checkpoint = tmp_path / "checkpoint"
    ssc, days = daily(sc, checkpoint)
    starting = asyncio.ensure_future(ssc.start())
    await asyncio.sleep(0)  # the start is under way
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    assert starting.done() and starting.exception() is None
    assert ssc.state == "stopped"
    second, second_days = daily(sc, checkpoint)
    await second.start()  # the first let the directory go as it stopped
    await second.runUntil(T0 + Days(1))
    await second.stop(stopSparkContext=False)
    assert days == [] and second_days == [1]


async def test_a_stop_that_does_not_wait_ends_a_start_that_never_returns(
    sc: SparkContext, tmp_path: Path
) -> None:
    """A source whose start never returns held every stop for ever (a second SIGTERM to
    `reactive-spark run` included). A graceful stop waits for the start within its timeout;
    one that does not wait, or whose timeout passed, ends the start, which raises."""

    reached = asyncio.Event()

    class NeverStarts(EventSource):
        def start(self) -> asyncio.Future[None]:
            reached.set()
            return asyncio.get_running_loop().create_future()  # never done

        def stop(self) -> None:
            pass

        def toProduct(self) -> tuple[str]:
            return (self.name,)

    checkpoint = tmp_path / "checkpoint"
    for graceful in (False, True):
        ssc, _ = daily(sc, checkpoint)
        NeverStarts(ssc, "never")
        reached.clear()
        starting = asyncio.ensure_future(ssc.start())
        await asyncio.wait_for(reached.wait(), 30)  # the start waits for the source
        await asyncio.wait_for(
            ssc.stop(stopSparkContext=False, stopGracefully=graceful, timeout=0.2), 30
        )
        with pytest.raises(ContextStateError, match="stopped while it started"):
            await starting
        assert ssc.state == "stopped"
    second, days = daily(sc, checkpoint)
    await second.start()  # each let the directory go
    await second.runUntil(T0 + Days(1))
    await second.stop(stopSparkContext=False)
    assert days == [1]


async def test_a_stop_during_a_start_keeps_the_directory_until_the_start_s_threads_end(
    sc: SparkContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a start runs in threads (the checkpoint's log, the batches it re-runs) goes on
    when an await of it is cancelled: a stop that ended the start there let the directory go
    while the log was still being written. It ends a start only at the sources' starts, or
    at the batches it re-plans, which the worker thread runs and the stop ends there."""
    checkpoint = tmp_path / "checkpoint"
    loading, release = threading.Event(), threading.Event()
    load = Checkpoint.load

    def slow_load(self: Checkpoint) -> Any:
        loading.set()
        release.wait(30)
        return load(self)

    first, _ = daily(sc, checkpoint)
    await first.start()
    await first.runUntil(T0 + Days(1))
    await first.stop(stopSparkContext=False)
    monkeypatch.setattr(Checkpoint, "load", slow_load)
    ssc, _ = daily(sc, checkpoint, days=1)
    starting = asyncio.ensure_future(ssc.start())
    await asyncio.get_running_loop().run_in_executor(None, loading.wait, 30)
    stopping = asyncio.ensure_future(ssc.stop(stopSparkContext=False))
    await asyncio.sleep(0.2)
    assert not stopping.done()  # it waits for the log, holding the directory
    with pytest.raises(CheckpointInUseError):
        await daily(sc, checkpoint)[0].start()
    release.set()
    await asyncio.wait_for(stopping, 30)
    try:
        await starting  # it ended its steps and started, then was stopped
    except ContextStateError as ended:  # or it was ended as it rebuilt the last batch
        assert "stopped while it started" in str(ended)
    assert ssc.state == "stopped"


class Held:
    """Holds a batch in a function of yours: `stuck` is set once it is, `release` ends it."""

    def __init__(self) -> None:
        self.stuck, self.release = threading.Event(), threading.Event()

    def hold(self) -> None:
        self.stuck.set()
        self.release.wait(60)


def re_runs(
    sc: SparkContext, checkpoint: Path, seen: list[str], held: Held | None = None
) -> StreamingContext:
    """`holding_app.program` on day 3; `seen` says which days' batches were planned and ran,
    in order. The batch of day 1 is stuck in `held` until it is released."""
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0 + Days(3)), checkpoint=str(checkpoint))
    daily_timer = ssc.timer(T0 + Days(1), None, Days(1), "daily")

    def plan(time: Any, rdd: Any, event: Event) -> Any:
        seen.append(f"planned {(event.time - T0) // Days(1)}")
        return rdd

    def run(time: Any, rdd: Any, event: Event) -> None:
        day = (event.time - T0) // Days(1)
        if held is not None and day == 1:
            held.hold()
        seen.append(f"ran {day}")

    ssc.queueStream([], default=[1]).transform(plan).foreachRDD(run).bind(daily_timer)
    return ssc


@pytest.mark.parametrize("graceful", [False, True])
async def test_a_stop_that_does_not_wait_leaves_a_re_run_batch_stuck_in_a_function_of_yours(
    sc: SparkContext,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    graceful: bool,
) -> None:
    """A batch the start re-ran after a crash, stuck in a function of yours, held every stop
    (a second SIGTERM to `reactive-spark run` included) for as long as it was stuck. A stop
    that does not wait (or whose timeout passed) leaves it in its thread, as it leaves a live
    batch: the start raises, saying so; the directory stays held until the batch ends; the
    batches to re-run after it never run in that thread; the next start re-runs them once."""
    checkpoint = tmp_path / "checkpoint"
    assert await crashed_until(sc, checkpoint, 3) == [1, 2, 3]
    held = Held()
    left: list[str] = []
    second = re_runs(sc, checkpoint, left, held)
    starting = asyncio.ensure_future(second.start())
    await asyncio.get_running_loop().run_in_executor(None, held.stuck.wait, 30)
    workers = [t for t in threading.enumerate() if t.name == "reactive-spark-worker"]
    try:
        with caplog.at_level(logging.WARNING):
            await asyncio.wait_for(
                second.stop(stopSparkContext=False, stopGracefully=graceful, timeout=0.2), 15
            )
        with pytest.raises(ContextStateError, match="stopped while it started") as raised:
            await asyncio.wait_for(starting, 10)
        assert "did not end 2 s after its Spark jobs were cancelled" in str(raised.value)
        assert second.state == "stopped"
        assert "stays held until the batch the stop left running ends" in caplog.text
        with pytest.raises(CheckpointInUseError):
            await daily(sc, checkpoint, days=3)[0].start()
    finally:
        held.release.set()
    for worker in workers:  # it ends once the batch returns, and lets the directory go
        worker.join(10)
    await asyncio.sleep(0.1)  # what the worker handed to the loop, if anything, ran
    assert left == ["planned 1", "ran 1"]  # it returned; the batches after it were not planned
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    again: list[str] = []
    third = re_runs(sc, checkpoint, again)
    await third.start()
    await third.stop(stopSparkContext=False)
    # the batches never recorded done run again, once
    assert again == ["planned 1", "ran 1", "planned 2", "ran 2", "planned 3", "ran 3"]
    again.clear()
    fourth = re_runs(sc, checkpoint, again)
    await fourth.start()
    await fourth.stop(stopSparkContext=False)
    assert [seen for seen in again if seen.startswith("ran")] == []  # none runs a third time


async def test_a_re_run_batch_failing_after_a_stop_ended_the_start_is_raised_by_the_start(
    sc: SparkContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch the start re-ran, slower than the stop's wait for it but ending within it, then
    failing (its record could not be written): the start raised only that a stop ended it,
    and the failure itself went nowhere, not even a log line."""
    checkpoint = tmp_path / "checkpoint"
    await crashed_until(sc, checkpoint, 1)

    def disk_full(self: Checkpoint, batch: Any) -> None:
        raise OSError("No space left on device")

    monkeypatch.setattr(Checkpoint, "completed", disk_full)
    held = Held()
    second = re_runs(sc, checkpoint, [], held)
    starting = asyncio.ensure_future(second.start())
    await asyncio.get_running_loop().run_in_executor(None, held.stuck.wait, 30)
    stopping = asyncio.ensure_future(second.stop(stopSparkContext=False))
    await asyncio.sleep(0.3)  # the stop cancelled the start; the batch ends within its wait
    held.release.set()
    await asyncio.wait_for(stopping, 15)
    with pytest.raises(ContextStateError, match="stopped while it started") as raised:
        await asyncio.wait_for(starting, 10)
    assert "No space left on device" in str(raised.value)


async def test_a_stop_that_does_not_wait_during_a_start_escalates_the_program_s_own_stop(
    sc: SparkContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A start that ended by itself while a stop that does not wait waited for it (nothing left
    to cancel): that stop then waited for the program's graceful stop, itself waiting for the
    caught-up batches, one of them stuck in a function of yours, instead of dropping them."""
    checkpoint = tmp_path / "checkpoint"
    first, _ = daily(sc, checkpoint)
    await first.start()  # down before day 1: the next start catches up days 1 to 3
    await first.stop(stopSparkContext=False)
    recovering, go_on = threading.Event(), threading.Event()
    missed = recovery.all_missed_events

    def slow_missed(*args: Any) -> Any:  # the start is busy catching up: not cancellable
        recovering.set()
        go_on.wait(30)
        return missed(*args)

    monkeypatch.setattr(recovery, "all_missed_events", slow_missed)
    held = Held()
    second = re_runs(sc, checkpoint, [], held)

    async def program() -> None:
        await second.start()
        await second.stop(stopSparkContext=False, stopGracefully=True)

    running = asyncio.ensure_future(program())
    await asyncio.get_running_loop().run_in_executor(None, recovering.wait, 30)
    hard = asyncio.ensure_future(second.stop(stopSparkContext=False))
    await asyncio.sleep(0.1)
    go_on.set()
    try:
        done, _ = await asyncio.wait({hard}, timeout=10)
        assert done, "the stop that does not wait waited for the graceful one"
    finally:
        held.release.set()
        await asyncio.wait({hard, running}, timeout=30)


@pytest.mark.parametrize("failing", ["a missing input directory", "a source"])
async def test_a_start_that_fails_lets_the_directory_go(
    sc: SparkContext, tmp_path: Path, failing: str
) -> None:
    """Before the context is active (its inputs), and after (its sources): every stop path."""
    checkpoint = tmp_path / "checkpoint"
    broken, _ = daily(sc, checkpoint)
    if failing == "a source":
        rest = broken.restServer("256.0.0.1", 0, "unreachable").post("/x")
        broken.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(rest)
    else:
        missing = broken.textFileStream(str(tmp_path / "missing"))
        missing.foreachRDD(lambda rdd: None).bind(broken.sources[0])
    with pytest.raises(OSError):
        await broken.start()
    holder, _ = daily(sc, checkpoint)
    await holder.start()
    refused, _ = daily(sc, checkpoint)
    try:
        with pytest.raises(CheckpointInUseError):
            await refused.start()
    finally:
        await holder.stop(stopSparkContext=False)


async def test_a_driver_in_another_process_holds_it_until_it_is_killed(
    sc: SparkContext, tmp_path: Path
) -> None:
    checkpoint = tmp_path / "checkpoint"
    child = ChildProcess("tests.holding_app", str(checkpoint))
    try:
        assert child.next_line() == "started"
        ssc, _ = daily(sc, checkpoint, days=2)
        with pytest.raises(CheckpointInUseError) as refused:
            await ssc.start()
        assert refused.value.pid == child.process.pid
        assert f"another driver (pid {child.process.pid} on " in str(refused.value)
    finally:
        child.kill()  # SIGKILL: no stop ran, the kernel let the lock go
    restarted, days = daily(sc, checkpoint, days=2)
    await restarted.start()
    await restarted.runUntil(T0 + Days(4))
    await restarted.stop(stopSparkContext=False)
    assert restarted.recovered and days == [3, 4]


async def test_a_backfill_keeps_its_own_directory_and_leaves_the_live_one_held(
    sc: SparkContext, tmp_path: Path
) -> None:
    """Built on the live run's directory, it never writes it, so the live hold is no obstacle;
    the directory of its own is held while it runs, and the live run's after it."""
    live_directory, own = tmp_path / "live", tmp_path / "backfill"
    live, _ = daily(sc, live_directory)
    await live.start()
    try:
        backfilled, days = daily(sc, live_directory, days=1)
        refusals: list[CheckpointInUseError] = []

        def progress(done: int, total: int, at: object) -> None:  # after each instant
            intruder = CheckpointLock(str(own))
            try:
                intruder.acquire()
            except CheckpointInUseError as refused:
                refusals.append(refused)
            intruder.release()

        await backfilled.backfill(
            T0 + Days(1), T0 + Days(3), checkpoint=str(own), progress=progress
        )
        assert days == [1, 2, 3]
        assert [refused.directory for refused in refusals] == [str(own)] * 3
        again, _ = daily(sc, live_directory)
        with pytest.raises(CheckpointInUseError):
            await again.start()
    finally:
        await live.stop(stopSparkContext=False)


def test_a_lock_file_that_is_a_link_is_refused_and_its_target_left_alone(tmp_path: Path) -> None:
    """The lock file was opened through a link, then emptied and written: any file the driver
    could write, for whoever could write the checkpoint directory."""
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    (checkpoint / "lock").symlink_to(precious)
    with pytest.raises(CheckpointError, match="cannot hold the lock file of checkpoint"):
        CheckpointLock(str(checkpoint)).acquire()
    assert precious.read_text() == "keep me"
    (checkpoint / "lock").unlink()
    (checkpoint / "lock").mkdir()
    with pytest.raises(CheckpointError, match="cannot hold the lock file of checkpoint"):
        CheckpointLock(str(checkpoint)).acquire()
