"""A simulated year: 365 daily jobs and 52 weekly roll-ups on a virtual clock.

The daily job filters the day's log file and saves it; the weekly job rolls up the last 7 daily
outputs. Prints wall time over the summed Spark job time (target <= 1.10): how little the
scheduler adds to the jobs themselves, measured in the same run.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from _spark import local_spark

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

from _logs import generate_logs

from reactive_spark import (
    Days,
    JobInfo,
    StreamingContext,
    StreamingListener,
    VirtualClock,
)

START = datetime(2025, 1, 1, tzinfo=UTC)
DAYS = 365


class JobTime(StreamingListener):
    def __init__(self) -> None:
        self.seconds = 0.0
        self.jobs = 0
        self.failed = 0

    def onJobCompleted(self, job: JobInfo) -> None:
        self.seconds += job.duration or 0.0
        self.jobs += 1
        self.failed += job.failed


async def main() -> None:
    workdir = Path(tempfile.mkdtemp("-year"))
    generate_logs(workdir / "logs", START, DAYS, files_per_day=1)
    sc = local_spark("bench-year")
    ssc = StreamingContext(sc, Days(1), clock=VirtualClock(START))
    end = START + Days(DAYS)
    daily = ssc.timer(START + Days(1), end, Days(1), "daily")
    weekly = ssc.timer(START + Days(7), end, Days(7), "weekly")
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
    job_time = JobTime()
    ssc.addStreamingListener(job_time)
    await ssc.start()
    began = time.perf_counter()
    await ssc.runUntil(end)
    wall = time.perf_counter() - began
    await ssc.stop()
    daily_dirs = len(list((workdir / "out").glob("daily-*")))
    weekly_dirs = len(list((workdir / "out").glob("weekly-*")))
    print(
        f"simulated year: {daily_dirs} daily + {weekly_dirs} weekly outputs, {job_time.jobs} jobs"
    )
    print(f"  wall time {wall:.1f} s, summed Spark job time {job_time.seconds:.1f} s")
    print(f"  ratio wall/jobs {wall / job_time.seconds:.3f}  (target <= 1.10)")
    if job_time.failed:
        raise SystemExit(f"{job_time.failed} jobs failed")


if __name__ == "__main__":
    asyncio.run(main())
