"""Real crashes: the daily/weekly pipeline in a child process killed with SIGKILL at seven
points (see PLAN), restarted after some downtime until it finishes; its outputs equal an
uninterrupted run's byte for byte."""

from __future__ import annotations

import queue
import random
import time
from pathlib import Path

from pyspark import SparkContext

from reactive_spark import Days, Hours, StreamingContext, Time, VirtualClock

from .helpers import ChildProcess
from .kill_app import DAYS, T0, build, write_logs

SEED = 20261123
#: Where the child dies: right after the batches of a day before a weekly roll-up (restarted
#: after the roll-up and the next day were missed), while a batch directory is being written,
#: or a random moment after a random number of batches.
PLAN = ["after day 6", "mid-write", "after day 13", "random"]


def tree(directory: Path) -> dict[str, bytes]:
    """Every file under `directory` by relative path, with its bytes."""
    return {
        str(path.relative_to(directory)): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def kill_app_child(
    workdir: Path, restartAt: Time, *extra: str, env: dict[str, str] | None = None
) -> ChildProcess:
    """tests/kill_app.py on `workdir`, its virtual clock starting at `restartAt`."""
    return ChildProcess(
        "tests.kill_app", str(workdir), str(restartAt.milliseconds), *extra, env=env
    )


def last_day(lines: list[str], before: int) -> int:
    days = [int(line.split()[2]) for line in lines if line.startswith("done ")]
    return max([before, *days])


def kill_mid_write(child: ChildProcess, out: Path, seen: list[str]) -> bool:
    """Kill the child as soon as a batch directory is being written; False if it finished."""
    while True:
        if out.exists() and any(p.name.startswith("_temporary-") for p in out.iterdir()):
            child.kill()
            return True
        try:
            line = child.lines.get_nowait()
        except queue.Empty:
            time.sleep(0.002)
            continue
        seen.append(line)
        if line in ("finished", "exited"):
            return False


def kill_after_day(child: ChildProcess, day: int, seen: list[str]) -> bool:
    """Kill the child once the daily batch of `day` completed; False if it finished first."""
    while True:
        line = child.next_line()
        seen.append(line)
        if line in ("finished", "exited"):
            return False
        if line == f"done DailyTimer {day}":
            child.kill()
            return True


def kill_after_batches(
    child: ChildProcess, batches: int, rng: random.Random, seen: list[str]
) -> bool:
    """Kill the child a random moment after `batches` batches; False if it finished first."""
    done = 0
    while done < batches:
        line = child.next_line()
        seen.append(line)
        if line in ("finished", "exited"):
            return False
        done += line.startswith("done ")
    time.sleep(rng.uniform(0, 0.15))  # somewhere inside the next batch, or between batches
    child.kill()
    return True


async def reference_run(sc: SparkContext, workdir: Path) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    build(ssc, workdir)
    await ssc.start()
    await ssc.runUntil(T0 + Days(DAYS))
    await ssc.stop(stopSparkContext=False)


async def test_outputs_after_random_sigkills_equal_an_uninterrupted_run(
    sc: SparkContext, tmp_path: Path
) -> None:
    reference, crashed = tmp_path / "reference", tmp_path / "crashed"
    for workdir in (reference, crashed):
        write_logs(workdir / "logs")
    await reference_run(sc, reference)
    expected = tree(reference / "out")
    assert len([name for name in expected if name.endswith("_SUCCESS")]) == DAYS + DAYS // 7

    rng = random.Random(SEED)
    restart_at, day = T0, 0
    for kill in PLAN:
        child = kill_app_child(crashed, restart_at)
        seen: list[str] = []
        if kill == "mid-write":
            killed = kill_mid_write(child, crashed / "out", seen)
        elif kill.startswith("after day"):
            killed = kill_after_day(child, int(kill.split()[-1]), seen)
        else:
            killed = kill_after_batches(child, rng.randint(1, 8), rng, seen)
        assert killed, f"the run finished before the kill {kill!r}: {seen}"
        day = last_day(seen, day)
        # down for 0-2 days; after a weekly tick, long enough to miss it and the next daily
        downtime = 2 if kill.startswith("after day") else rng.choice([0, 1, 2])
        restart_at = min(T0 + Days(day + downtime) + Hours(6), T0 + Days(DAYS))
    child = kill_app_child(crashed, restart_at)
    seen = [child.next_line()]
    while seen[-1] not in ("finished", "exited"):
        seen.append(child.next_line())
    child.process.wait(timeout=60)
    assert seen[-1] == "finished", seen

    leftovers = [path.name for path in (crashed / "out").iterdir() if "_temporary" in path.name]
    assert leftovers == []
    actual = tree(crashed / "out")
    assert sorted(actual) == sorted(expected)
    assert actual == expected
