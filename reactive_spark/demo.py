"""The demo behind `reactive-spark demo` (and `make demo`): the daily logs job rolled up weekly.

A daily job keeps the WARN and ERROR lines of the day's log files; a weekly job rolls up the
last seven daily outputs (`tailWindow(7, 7)`) and keeps their ERROR lines. On a virtual clock
(the default) four simulated weeks run as fast as Spark runs their jobs; with `real_time`
a simulated day lasts a second of the system clock. Generated logs and outputs go to a named
folder (`reactive-spark-demo/` in the working directory).

Examples:
    ```python
    # a fragment: what `reactive-spark demo --days 14` runs
    import asyncio
    from reactive_spark.demo import Demo
    summary = asyncio.run(Demo(days=14).run())
    ```
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pyspark import SparkConf, SparkContext

from reactive_spark._validation import require_int
from reactive_spark.clock import Clock, SystemClock, VirtualClock
from reactive_spark.context import StreamingContext
from reactive_spark.errors import InvalidArgumentError
from reactive_spark.events import Event
from reactive_spark.time import Days, Duration, Seconds, Time, to_time

__all__ = ["Demo", "DemoSummary", "generate_logs"]

START = datetime(2026, 1, 5, tzinfo=UTC)
LEVELS = ["DEBUG", "INFO", "INFO", "INFO", "WARN", "ERROR"]
COMPONENTS = ["api", "db", "cache", "auth", "billing"]


def generate_logs(
    directory: str | Path, start: Time | datetime, days: int, day: Duration | None = None
) -> int:
    """Three log files per simulated day, each stamped (mtime) inside its day; returns lines.

    `day` is how long a simulated day lasts (default: a day). The same arguments always give
    the same files.

    Examples:
        >>> import tempfile
        >>> generate_logs(Path(tempfile.mkdtemp()), Time(0), 2)
        1304
    """
    length = Days(1) if day is None else day
    directory = Path(directory)
    start = to_time(start, "start")
    require_int(days, "days")
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(42)
    written = 0
    for number in range(days):
        for part in range(3):
            stamp = start + length * number + _part(length, part)
            moment = stamp.isoformat()
            lines = [
                f"{moment} {rng.choice(LEVELS)} {rng.choice(COMPONENTS)}: request {i} handled"
                for i in range(rng.randint(150, 250))
            ]
            path = directory / f"app-day{number:03d}-{part}.log"
            path.write_text("\n".join(lines) + "\n")
            os.utime(path, ns=(stamp.milliseconds * 1_000_000,) * 2)
            written += len(lines)
    return written


def _part(day: Duration, part: int) -> Duration:
    """When, in a day of length `day`, log file `part` (0-2) is written: hours 1, 8 and 15."""
    return Duration(day.milliseconds * (1 + part * 7) // 24)


@dataclass
class DemoSummary:
    """What a demo run did."""

    days: int
    linesGenerated: int
    linesKeptDaily: int
    weeklyRollups: int
    weeklyErrors: int
    outputs: Path
    seconds: float
    failures: list[str] = field(default_factory=list)


class Demo:
    """The daily/weekly logs pipeline on generated logs (see the module docs).

    Examples:
        ```python
        # a fragment, inside a coroutine
        summary = await Demo(days=28, on_day=lambda day: print("day", day)).run()
        ```
    """

    def __init__(
        self,
        days: int = 28,
        workdir: str | Path = "reactive-spark-demo",
        real_time: bool = False,
        on_day: Callable[[int], None] | None = None,
        master: str = "local[2]",
    ) -> None:
        self.days = require_int(days, "days")
        self.workdir = Path(workdir).resolve()
        self.real_time = real_time
        self.on_day = on_day
        self.master = master
        self.day = Seconds(1) if real_time else Days(1)

    def spark(self) -> SparkContext:
        """A quiet SparkContext of the demo's own, or the one active already, left as it is.

        A context made here logs errors only, and its JVM binds to loopback (`SPARK_LOCAL_IP`,
        unless set). In a host that runs a context already, the demo uses that one, and changes
        neither it nor the host's environment.
        """
        # whether one is active, read as getOrCreate reads it: PySpark has no public way to ask
        active = SparkContext._active_spark_context  # noqa: SLF001
        if active is not None:
            return active
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        conf = (
            SparkConf()
            .setMaster(self.master)
            .setAppName("reactive-spark-demo")
            .set("spark.ui.showConsoleProgress", "false")
            .set("spark.ui.enabled", "false")  # the demo's console takes port 4040
        )
        sc = SparkContext(conf=conf)  # one made meanwhile by another thread: PySpark refuses
        sc.setLogLevel("ERROR")
        return sc

    def context(
        self, sc: SparkContext, clock: Clock, *, freezeHeap: bool = False
    ) -> StreamingContext:
        """The context with the two cascaded jobs, ticking every (simulated) day.

        `freezeHeap` is `StreamingContext`'s: the `reactive-spark` command, which owns its
        process, turns it on.
        """
        ssc = StreamingContext(sc, None, clock=clock, freezeHeap=freezeHeap)
        start, end = clock.now(), clock.now() + self.day * self.days
        daily = ssc.timer(start + self.day, end, self.day, "DailyTimer")
        first_week = start + self.day * 7  # after the run's end when it is shorter than a week
        weekly = ssc.timer(first_week, max(first_week, end), self.day * 7, "WeeklyTimer")
        out = self.workdir / "out"
        (
            ssc.textFileStream(str(self.workdir / "logs"))
            .filter(lambda line: "WARN" in line or "ERROR" in line)
            .saveAsTextFiles(str(out / "daily-logs"))
            .bind(daily)
            .tailWindow(7, 7)
            .filter(lambda line: "ERROR" in line)
            .saveAsTextFiles(str(out / "weekly-logs"))
            .bind(weekly)
        )
        if self.on_day is not None:
            report = self.on_day
            daily.addListener(lambda event: report(_index(event) + 1))
        return ssc

    async def run(
        self,
        ssc: StreamingContext | None = None,
        launch: Callable[[], Awaitable[object]] | None = None,
    ) -> DemoSummary:
        """Generate the logs, run the days, and summarise (a context may be given, unstarted).

        `launch()` starts the given context once the logs are there (default: `ssc.start()`);
        the command serves its console so. Whatever fails, the context is stopped.
        """
        if launch is not None and ssc is None:
            raise InvalidArgumentError("launch starts the context given as ssc: pass both")
        began = time.perf_counter()
        shutil.rmtree(self.workdir / "out", ignore_errors=True)
        shutil.rmtree(self.workdir / "logs", ignore_errors=True)
        if ssc is None:
            ssc = self.context(self.spark(), self.clock())
        start = ssc.clock.now()
        generated = await asyncio.to_thread(
            generate_logs, self.workdir / "logs", start, self.days, self.day
        )
        failures: list[str] = []
        try:
            if ssc.state == "initialized":
                await (ssc.start() if launch is None else launch())
            end = start + self.day * self.days
            if isinstance(ssc.clock, VirtualClock):
                failures = [f.describe() for f in await ssc.advanceTo(end)]
            else:
                while ssc.clock.now() < end + Seconds(1):
                    await asyncio.sleep(0.1)
        finally:
            await ssc.stop(stopSparkContext=False, stopGracefully=True)
        return self.summarize(generated, failures, time.perf_counter() - began)

    def clock(self) -> Clock:
        """The clock the demo runs on."""
        return SystemClock() if self.real_time else VirtualClock(START)

    def summarize(self, generated: int, failures: list[str], seconds: float) -> DemoSummary:
        """Count what the outputs hold."""
        out = self.workdir / "out"
        daily = sorted(out.glob("daily-logs-*"))
        weekly = sorted(out.glob("weekly-logs-*"))
        return DemoSummary(
            days=len(daily),
            linesGenerated=generated,
            linesKeptDaily=sum(_count_lines(path) for path in daily),
            weeklyRollups=len(weekly),
            weeklyErrors=sum(_count_lines(path) for path in weekly),
            outputs=out,
            seconds=seconds,
            failures=failures,
        )


def _index(event: Event) -> int:
    return event.index if event.index is not None else 0


def _count_lines(directory: Path) -> int:
    return sum(len(part.read_text().splitlines()) for part in directory.glob("part-*"))
