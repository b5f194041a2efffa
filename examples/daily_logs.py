"""The daily half of the daily/weekly logs example, on 28 simulated days.

Every day at midnight the WARN and ERROR lines of that day's log files are saved under
`daily-logs-<time ms>`. Runs on a virtual clock: four weeks take as long as their Spark jobs.

    python examples/daily_logs.py [workdir]
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from _logs import count_lines, generate_logs, local_spark, run_and_summarize

from reactive_spark import Days, StreamingContext, VirtualClock

START = datetime(2026, 1, 5, tzinfo=UTC)


async def run(workdir: Path, days: int = 28) -> dict[str, int]:
    logs_dir, out_dir = workdir / "logs", workdir / "out"
    shutil.rmtree(out_dir, ignore_errors=True)
    generated = generate_logs(logs_dir, START, days)
    sc = local_spark("daily-logs")
    async with StreamingContext(sc, Days(1), clock=VirtualClock(START)) as ssc:
        daily = ssc.timer(START + Days(1), START + Days(days), Days(1), "DailyTimer")
        logs = ssc.textFileStream(str(logs_dir))
        logs.filter(lambda line: "WARN" in line or "ERROR" in line).saveAsTextFiles(
            str(out_dir / "daily-logs")
        ).bind(daily)
        await ssc.start()
        await ssc.runUntil(START + Days(days))
    outputs = sorted(out_dir.glob("daily-logs-*"))
    return {
        "lines generated": generated,
        "days processed": len(outputs),
        "lines kept": sum(count_lines(path) for path in outputs),
    }


if __name__ == "__main__":
    run_and_summarize(run, "-daily-logs")
