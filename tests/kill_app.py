"""The daily/weekly logs pipeline, run in a child process that a test kills with SIGKILL.

`python -m tests.kill_app <workdir> <restart time, epoch ms> [master]` runs four simulated weeks
on a virtual clock that starts at the given time, checkpointing to `<workdir>/checkpoint`, and
prints `done <source> <day>` after every batch and `finished` at the end. The test kills it at
random points and starts it again (later, so missed events are caught up) until it finishes.
`master` is `local[2]` unless given (tests/test_cluster.py runs it on a standalone cluster).
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
from datetime import UTC, datetime
from pathlib import Path

from reactive_spark import (
    BatchInfo,
    Days,
    Hours,
    StreamingContext,
    StreamingListener,
    Time,
    VirtualClock,
)

from .helpers import quiet_spark_context

T0 = Time.fromDatetime(datetime(2026, 1, 5, tzinfo=UTC))
DAYS = 28
LEVELS = ["DEBUG", "INFO", "INFO", "WARN", "ERROR"]


def write_logs(directory: Path) -> None:
    """Two files per simulated day, stamped (mtime) inside their day; always the same."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    for day in range(DAYS):
        for part in range(2):
            stamp = T0 + Days(day) + Hours(2 + part * 10)
            lines = [f"day {day} {rng.choice(LEVELS)} request {i}" for i in range(60)]
            path = directory / f"app-{day:02d}-{part}.log"
            path.write_text("\n".join(lines) + "\n")
            os.utime(path, ns=(stamp.milliseconds * 1_000_000,) * 2)


def build(ssc: StreamingContext, workdir: Path) -> None:
    """The README's pipeline: WARN/ERROR lines daily, the week's ERROR lines weekly."""
    end = T0 + Days(DAYS)
    daily = ssc.timer(T0 + Days(1), end, Days(1), "DailyTimer")
    weekly = ssc.timer(T0 + Days(7), end, Days(7), "WeeklyTimer")
    (
        ssc.textFileStream(str(workdir / "logs"))
        .filter(lambda line: "WARN" in line or "ERROR" in line)
        .saveAsTextFiles(str(workdir / "out" / "daily"))
        .bind(daily)
        .tailWindow(7, 7)
        .filter(lambda line: "ERROR" in line)
        .saveAsTextFiles(str(workdir / "out" / "weekly"))
        .bind(weekly)
    )


class Progress(StreamingListener):
    def onBatchCompleted(self, batch: BatchInfo) -> None:
        day = (batch.event.time - T0) // Days(1)
        print(f"done {batch.event.source.name} {day}", flush=True)


async def main(workdir: Path, restartAt: Time, master: str) -> None:
    sc = quiet_spark_context("kill-app", master)
    checkpoint = str(workdir / "checkpoint")
    ssc = StreamingContext(sc, None, clock=VirtualClock(restartAt), checkpoint=checkpoint)
    build(ssc, workdir)
    ssc.addStreamingListener(Progress())
    await ssc.start()
    print("started", flush=True)
    await ssc.runUntil(T0 + Days(DAYS))
    await ssc.stop()
    print("finished", flush=True)


if __name__ == "__main__":
    master = sys.argv[3] if len(sys.argv) > 3 else "local[2]"
    asyncio.run(main(Path(sys.argv[1]), Time(int(sys.argv[2])), master))
