"""A simulated year: 365 daily jobs and 52 weekly roll-ups on a virtual clock.

The daily job filters the day's log file and saves it; the weekly job rolls up the last 7 daily
outputs. A plain PySpark loop does the same 365 + 52 jobs (it lists the directory each day,
caches the daily RDDs the roll-up reads, saves with `saveAsTextFile`); both arms' outputs are
compared (same directories, same lines) so they did the same work. After four warm-up weeks of
each arm, prints wall time over the plain loop's (target <= 1.05) and over the summed Spark job
time.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections import deque
from datetime import UTC, datetime
from pathlib import Path

from _spark import local_spark
from pyspark import RDD, SparkContext, StorageLevel

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

from _logs import count_lines, generate_logs

from reactive_spark import (
    Days,
    JobInfo,
    StreamingContext,
    StreamingListener,
    Time,
    VirtualClock,
)

START = datetime(2025, 1, 1, tzinfo=UTC)
DAYS = 365
WARM_UP_DAYS = 28


def warn_or_error(line: str) -> bool:
    return "WARN" in line or "ERROR" in line


def error(line: str) -> bool:
    return "ERROR" in line


class JobTime(StreamingListener):
    def __init__(self) -> None:
        self.seconds = 0.0
        self.jobs = 0
        self.failed = 0

    def onJobCompleted(self, job: JobInfo) -> None:
        self.seconds += job.duration or 0.0
        self.jobs += 1
        self.failed += job.failed


def plain_year(sc: SparkContext, logs: Path, out: Path, days: int = DAYS) -> float:
    """The same jobs as a plain PySpark loop over the days."""
    origin = Time.fromDatetime(START)
    window: deque[RDD[str]] = deque()
    began = time.perf_counter()
    for day in range(1, days + 1):
        tick = origin + Days(day)
        after = (tick - Days(1)).milliseconds
        paths = sorted(
            entry.path
            for entry in os.scandir(logs)
            if after < entry.stat().st_mtime_ns // 1_000_000 <= tick.milliseconds
        )
        lines = sc.textFile(",".join(paths), 1) if paths else sc.emptyRDD()  # a partition a file
        daily = lines.filter(warn_or_error)
        daily.persist(StorageLevel.MEMORY_ONLY)
        daily.saveAsTextFile(str(out / f"daily-{tick.milliseconds}"))
        window.append(daily)
        if len(window) > 7:
            window.popleft().unpersist()
        if day % 7 == 0:
            weekly = sc.union(list(window)).filter(error)
            weekly.saveAsTextFile(str(out / f"weekly-{tick.milliseconds}"))
    return time.perf_counter() - began


async def reactive_year(
    sc: SparkContext, logs: Path, out: Path, days: int = DAYS
) -> tuple[float, JobTime]:
    ssc = StreamingContext(sc, Days(1), clock=VirtualClock(START))
    end = START + Days(days)
    daily = ssc.timer(START + Days(1), end, Days(1), "daily")
    weekly = ssc.timer(START + Days(7), end, Days(7), "weekly")
    (
        ssc.textFileStream(str(logs))
        .filter(warn_or_error)
        .saveAsTextFiles(str(out / "daily"))
        .bind(daily)
        .tailWindow(7, 7)
        .filter(error)
        .saveAsTextFiles(str(out / "weekly"))
        .bind(weekly)
    )
    job_time = JobTime()
    ssc.addStreamingListener(job_time)
    await ssc.start()
    began = time.perf_counter()
    await ssc.runUntil(end)
    wall = time.perf_counter() - began
    await ssc.stop(stopSparkContext=False)
    return wall, job_time


def summary(out: Path) -> dict[str, int]:
    daily, weekly = sorted(out.glob("daily-*")), sorted(out.glob("weekly-*"))
    return {
        "daily": len(daily),
        "weekly": len(weekly),
        "daily lines": sum(count_lines(path) for path in daily),
        "weekly lines": sum(count_lines(path) for path in weekly),
    }


async def main() -> None:
    workdir = Path(tempfile.mkdtemp("-year"))
    logs = workdir / "logs"
    generate_logs(logs, START, DAYS, files_per_day=1)
    sc = local_spark("bench-year")
    # warm up the JVM and the Python workers with four weeks of each arm first
    plain_year(sc, logs, workdir / "warm-plain", WARM_UP_DAYS)
    await reactive_year(sc, logs, workdir / "warm-reactive", WARM_UP_DAYS)
    plain = plain_year(sc, logs, workdir / "plain")
    wall, job_time = await reactive_year(sc, logs, workdir / "reactive")
    sc.stop()
    ours, theirs = summary(workdir / "reactive"), summary(workdir / "plain")
    assert ours == theirs, (ours, theirs)  # both arms did the same work
    assert job_time.failed == 0, f"{job_time.failed} jobs failed"
    print(
        f"simulated year: {ours['daily']} daily + {ours['weekly']} weekly outputs "
        f"({ours['daily lines']:,} + {ours['weekly lines']:,} lines, equal in both arms), "
        f"{job_time.jobs} jobs"
    )
    print(f"  plain PySpark loop {plain:.1f} s, reactive-spark {wall:.1f} s")
    print(f"  ratio wall/plain {wall / plain:.3f}  (target <= 1.05)")
    print(
        f"  summed Spark job time {job_time.seconds:.1f} s; ratio wall/jobs "
        f"{wall / job_time.seconds:.3f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
