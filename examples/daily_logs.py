"""The daily half of the daily/weekly logs example, on 28 simulated days.

Every day at midnight the WARN and ERROR lines of that day's log files are saved under
`daily-logs-<time ms>`. As a script it runs on a virtual clock: four weeks take as long as
their Spark jobs. `reactive-spark run` builds it on the system clock, a simulated day lasting
a second, in `reactive-spark-examples/daily_logs/`:

    python examples/daily_logs.py [workdir]
    reactive-spark run examples/daily_logs.py --until 10s
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from _logs import WORKDIR, count_lines, fresh_logs, local_spark, run_and_summarize, simulated_day

from reactive_spark import Days, StreamingContext, VirtualClock
from reactive_spark.demo import generate_logs

START = datetime(2026, 1, 5, tzinfo=UTC)


def build(ssc: StreamingContext, workdir: Path = WORKDIR / "daily_logs", days: int = 28) -> int:
    """The daily job over `days` simulated days of logs generated in `workdir`; returns lines."""
    logs_dir, out_dir = fresh_logs(workdir), workdir / "out"
    start, day = ssc.clock.now(), simulated_day(ssc)
    generated = generate_logs(logs_dir, start, days, day)
    daily = ssc.timer(start + day, start + day * days, day, "DailyTimer")
    logs = ssc.textFileStream(str(logs_dir))
    logs.filter(lambda line: "WARN" in line or "ERROR" in line).saveAsTextFiles(
        str(out_dir / "daily-logs")
    ).bind(daily)
    print(f"daily WARN/ERROR extracts of {logs_dir} go to {out_dir}", flush=True)
    return generated


async def run(workdir: Path, days: int = 28) -> dict[str, int]:
    shutil.rmtree(workdir / "out", ignore_errors=True)  # the summary counts this run's outputs
    sc = local_spark("daily-logs")
    async with StreamingContext(sc, Days(1), clock=VirtualClock(START)) as ssc:
        generated = build(ssc, workdir, days)
        await ssc.start()
        await ssc.runUntil(START + Days(days))
    outputs = sorted((workdir / "out").glob("daily-logs-*"))
    return {
        "lines generated": generated,
        "days processed": len(outputs),
        "lines kept": sum(count_lines(path) for path in outputs),
    }


if __name__ == "__main__":
    run_and_summarize(run, "-daily-logs")
