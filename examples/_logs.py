"""Shared by the examples: generated log files, a local SparkContext, where outputs go."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path

from pyspark import SparkConf, SparkContext

from reactive_spark import Days, Duration, Hours, Seconds, StreamingContext, Time, VirtualClock

LEVELS = ["DEBUG", "INFO", "INFO", "INFO", "WARN", "ERROR"]
COMPONENTS = ["api", "db", "cache", "auth", "billing"]
#: Where `reactive-spark run examples/<name>.py` puts an example's files: `<name>/` in here.
WORKDIR = Path("reactive-spark-examples")


def generate_logs(directory: Path, start: datetime, days: int, files_per_day: int = 3) -> int:
    """Write `files_per_day` log files per simulated day, each stamped (mtime) inside its day.

    Returns the number of lines written. The same arguments always give the same files.
    """
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(42)
    origin = Time.fromDatetime(start)
    lines_written = 0
    for day in range(days):
        for part in range(files_per_day):
            stamp = origin + Days(day) + Hours(1 + part * 7)
            moment = stamp.toDatetime().isoformat()
            lines = [
                f"{moment} {rng.choice(LEVELS)} {rng.choice(COMPONENTS)}: request {i} handled"
                for i in range(rng.randint(150, 250))
            ]
            path = directory / f"app-day{day:03d}-{part}.log"
            path.write_text("\n".join(lines) + "\n")
            nanoseconds = stamp.milliseconds * 1_000_000
            os.utime(path, ns=(nanoseconds, nanoseconds))
            lines_written += len(lines)
    return lines_written


def simulated_day(ssc: StreamingContext) -> Duration:
    """A day on a virtual clock; a second on the system clock (`reactive-spark run`).

    So a run of a few seconds shows what a daily job does, as `reactive-spark demo --real-time`.
    """
    return Days(1) if isinstance(ssc.clock, VirtualClock) else Seconds(1)


def fresh_logs(workdir: Path) -> Path:
    """`workdir/logs`, emptied: logs are generated anew, stamped from the context's clock."""
    logs_dir = workdir / "logs"
    shutil.rmtree(logs_dir, ignore_errors=True)
    return logs_dir


def local_spark(app_name: str) -> SparkContext:
    """A quiet local[2] SparkContext whose workers use this interpreter."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    conf = (
        SparkConf()
        .setMaster(os.environ.get("REACTIVE_SPARK_MASTER", "local[2]"))
        .setAppName(app_name)
        .set("spark.ui.showConsoleProgress", "false")
    )
    sc = SparkContext.getOrCreate(conf)
    sc.setLogLevel("ERROR")
    return sc


def run_and_summarize(run: Callable[[Path], Awaitable[dict[str, int]]], suffix: str) -> None:
    """Run an example in `argv[1]` (or a new temporary folder) and print its summary."""
    workdir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(suffix))
    began = time.perf_counter()
    summary = asyncio.run(run(workdir))
    for key, value in summary.items():
        print(f"{key:>17}: {value}")
    print(f"{'wall time':>17}: {time.perf_counter() - began:.1f} s  (output in {workdir / 'out'})")


def count_lines(directory: Path) -> int:
    """Lines in the part files of a saved text directory."""
    return sum(len(part.read_text().splitlines()) for part in directory.glob("part-*"))
