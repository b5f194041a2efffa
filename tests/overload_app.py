"""A timer overloading its jobs, with a checkpoint, in a child process killed with SIGKILL.

`python -m tests.overload_app <workdir> <start ms> <kill after N batches | 0> <seconds>`: a
timer ticks every 5 ms from `start`, feeding 20 ms jobs (four times what they sustain), its
queue bounded at 5 with `drop-newest`. Each job appends its tick's time to `processed.txt`;
each drop report appends the dropped ticks' times to `dropped.txt` (both fsynced). With N > 0
the process kills itself (SIGKILL) in its N-th job, after writing; with 0 it runs `seconds` and
stops gracefully. tests/test_backpressure.py restarts it on the same checkpoint.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from reactive_spark import (
    EventsDropped,
    Milliseconds,
    StreamingContext,
    StreamingListener,
    SystemClock,
    Time,
)

from .helpers import quiet_spark_context

PERIOD = Milliseconds(5)


def append(path: Path, times: list[int]) -> None:
    with path.open("a") as file:
        file.write("".join(f"{t}\n" for t in times))
        file.flush()
        os.fsync(file.fileno())


class DropLog(StreamingListener):
    def __init__(self, path: Path) -> None:
        self.path = path

    def onEventsDropped(self, dropped: EventsDropped) -> None:
        append(self.path, [event.time.milliseconds for event in dropped.events])


async def main(workdir: Path, start: Time, kill_after: int, seconds: float) -> None:
    sc = quiet_spark_context("overload-app")
    ssc = StreamingContext(sc, None, clock=SystemClock(), checkpoint=str(workdir / "checkpoint"))
    ticks = ssc.timer(start, None, PERIOD, "ticks").overflow(5, "drop-newest")
    ran = 0

    def job(time_: Any, rdd: Any, event: Any) -> None:
        nonlocal ran
        append(workdir / "processed.txt", [event.time.milliseconds])
        ran += 1
        if ran == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.02)

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(ticks)
    ssc.addStreamingListener(DropLog(workdir / "dropped.txt"))
    await ssc.start()
    print("started", flush=True)
    await asyncio.sleep(seconds)
    await ssc.stop(stopSparkContext=True, stopGracefully=True, timeout=10)
    print("finished", flush=True)


if __name__ == "__main__":
    asyncio.run(
        main(Path(sys.argv[1]), Time(int(sys.argv[2])), int(sys.argv[3]), float(sys.argv[4]))
    )
