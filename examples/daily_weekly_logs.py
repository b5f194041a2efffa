"""The daily/weekly logs example in full: daily WARN/ERROR extracts, rolled up weekly.

A daily job saves the WARN and ERROR lines of the day's logs; a weekly job takes the last 7
daily outputs (`tailWindow(7, 7)`), keeps the ERROR lines and saves them. As a script, four
simulated weeks on a virtual clock (`make demo` runs the same pipeline). `reactive-spark run`
builds it on the system clock, a simulated day lasting a second, in
`reactive-spark-examples/daily_weekly_logs/`:

    python examples/daily_weekly_logs.py [workdir]
    reactive-spark run examples/daily_weekly_logs.py --until 15s
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from _logs import WORKDIR, count_lines, fresh_logs, local_spark, run_and_summarize, simulated_day

from reactive_spark import Days, StreamingContext, VirtualClock
from reactive_spark.demo import generate_logs

START = datetime(2026, 1, 5, tzinfo=UTC)


def build(
    ssc: StreamingContext, workdir: Path = WORKDIR / "daily_weekly_logs", weeks: int = 4
) -> int:
    """The two cascaded jobs over `weeks` weeks of logs generated in `workdir`; returns lines."""
    logs_dir, out_dir = fresh_logs(workdir), workdir / "out"
    start, day = ssc.clock.now(), simulated_day(ssc)
    generated = generate_logs(logs_dir, start, 7 * weeks, day)
    end = start + day * (7 * weeks)
    daily = ssc.timer(start + day, end, day, "DailyTimer")
    weekly = ssc.timer(start + day * 7, end, day * 7, "WeeklyTimer")
    logs = ssc.textFileStream(str(logs_dir))
    (
        logs.filter(lambda line: "WARN" in line or "ERROR" in line)
        .saveAsTextFiles(str(out_dir / "daily-logs"))
        .bind(daily)
        .tailWindow(windowLength=7, slideLength=7, skipLength=0)
        .filter(lambda line: "ERROR" in line)
        .saveAsTextFiles(str(out_dir / "weekly-logs"))
        .bind(weekly)
    )
    print(f"daily extracts and weekly roll-ups of {logs_dir} go to {out_dir}", flush=True)
    return generated


async def run(workdir: Path, weeks: int = 4) -> dict[str, int]:
    shutil.rmtree(workdir / "out", ignore_errors=True)  # the summary counts this run's outputs
    sc = local_spark("daily-weekly-logs")
    async with StreamingContext(sc, Days(1), clock=VirtualClock(START)) as ssc:
        generated = build(ssc, workdir, weeks)
        await ssc.start()
        await ssc.runUntil(START + Days(7 * weeks))
    daily = sorted((workdir / "out").glob("daily-logs-*"))
    weekly = sorted((workdir / "out").glob("weekly-logs-*"))
    return {
        "lines generated": generated,
        "days processed": len(daily),
        "lines kept daily": sum(count_lines(path) for path in daily),
        "weekly files": len(weekly),
        "weekly errors": sum(count_lines(path) for path in weekly),
    }


if __name__ == "__main__":
    run_and_summarize(run, "-logs-demo")
