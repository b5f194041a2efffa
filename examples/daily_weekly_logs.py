"""The daily/weekly logs example in full: daily WARN/ERROR extracts, rolled up weekly.

A daily job saves the WARN and ERROR lines of the day's logs; a weekly job takes the last 7
daily outputs (`tailWindow(7, 7)`), keeps the ERROR lines and saves them. Four simulated weeks
on a virtual clock; `make demo` runs this.

    python examples/daily_weekly_logs.py [workdir]
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from _logs import count_lines, generate_logs, local_spark, run_and_summarize

from reactive_spark import Days, StreamingContext, VirtualClock

START = datetime(2026, 1, 5, tzinfo=UTC)


def build(ssc: StreamingContext, logs_dir: Path, out_dir: Path, weeks: int) -> None:
    """The two cascaded jobs of the quick example."""
    end = START + Days(7 * weeks)
    daily = ssc.timer(START + Days(1), end, Days(1), "DailyTimer")
    weekly = ssc.timer(START + Days(7), end, Days(7), "WeeklyTimer")
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


async def run(workdir: Path, weeks: int = 4) -> dict[str, int]:
    logs_dir, out_dir = workdir / "logs", workdir / "out"
    shutil.rmtree(out_dir, ignore_errors=True)
    generated = generate_logs(logs_dir, START, 7 * weeks)
    sc = local_spark("daily-weekly-logs")
    async with StreamingContext(sc, Days(1), clock=VirtualClock(START)) as ssc:
        build(ssc, logs_dir, out_dir, weeks)
        await ssc.start()
        await ssc.runUntil(START + Days(7 * weeks))
    daily = sorted(out_dir.glob("daily-logs-*"))
    weekly = sorted(out_dir.glob("weekly-logs-*"))
    return {
        "lines generated": generated,
        "days processed": len(daily),
        "lines kept daily": sum(count_lines(path) for path in daily),
        "weekly files": len(weekly),
        "weekly errors": sum(count_lines(path) for path in weekly),
    }


if __name__ == "__main__":
    run_and_summarize(run, "-logs-demo")
