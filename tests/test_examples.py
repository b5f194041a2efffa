"""The examples, run end to end: upload triggers, the clickstream with a restart, and each one
under `reactive-spark run` and `reactive-spark graph`."""

from __future__ import annotations

import asyncio
import os
import queue
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import aiohttp
from pyspark import SparkContext

from reactive_spark import StreamingContext
from reactive_spark.cli import parser
from tests.helpers import EXAMPLE_FILES, command

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


async def until(condition, timeout: float = 20) -> None:  # type: ignore[no-untyped-def]
    async def wait() -> None:
        while not condition():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(wait(), timeout)


async def test_upload_trigger(sc: SparkContext, tmp_path: Path) -> None:
    sys.path.insert(0, str(EXAMPLES))
    try:
        import upload_trigger
    finally:
        sys.path.remove(str(EXAMPLES))
    ssc = StreamingContext(sc)
    totals = upload_trigger.build(ssc, tmp_path, 0)
    await ssc.start()
    watcher = next(s for s in ssc.sources if s.name == "uploads")
    rest = next(s for s in ssc.sources if s.name == "triggers")
    await watcher.ready()  # type: ignore[attr-defined]
    (tmp_path / "incoming" / "a.txt").write_text("x y x\nz\n")
    await until(lambda: totals["files"] == 1)
    async with aiohttp.ClientSession() as http:
        url = f"http://127.0.0.1:{rest.port}/jobs/report"  # type: ignore[attr-defined]
        async with http.post(url) as response:
            assert response.status == 202
    await until(lambda: totals["reports"] == 1)
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    assert totals == {"files": 1, "lines": 2, "reports": 1}
    saved = list((tmp_path / "out").glob("words-*"))
    assert len(saved) == 1
    words = sorted(
        line for part in saved[0].glob("part-*") for line in part.read_text().splitlines()
    )
    assert words == ["('x', 2)", "('y', 1)", "('z', 1)"]


async def test_clickstream_counts_every_click_once_across_a_restart(
    sc: SparkContext, tmp_path: Path
) -> None:
    from reactive_spark.log import FileLog

    sys.path.insert(0, str(EXAMPLES))
    try:
        import clickstream
    finally:
        sys.path.remove(str(EXAMPLES))
    pages = await clickstream.main(sc, tmp_path)
    log = FileLog(str(tmp_path / "log"))
    appended = sum(log.latest_offset("clicks", p) for p in log.partitions("clicks"))
    assert appended > 1000
    assert sum(pages.values()) == appended
    assert set(pages) == set(clickstream.PAGES)


# -- every example under the `reactive-spark` command ----------------------------------------


def test_the_examples_are_all_here() -> None:
    names = [path.stem for path in EXAMPLE_FILES]
    assert names == ["clickstream", "daily_logs", "daily_weekly_logs", "upload_trigger"]


def test_the_readme_runs_examples_that_are_here_with_options_the_command_takes() -> None:
    readme = (EXAMPLES.parent / "README.md").read_text()
    commands = re.findall(r"^\.venv/bin/reactive-spark ([^#\n]+)", readme, re.M)
    assert len(commands) >= 2
    for line in commands:
        args = parser().parse_args(shlex.split(line))  # exits (and fails) on a bad option
        assert (EXAMPLES.parent / args.target) in EXAMPLE_FILES, line


def reactive_spark(*args: str, cwd: Path) -> None:
    done = command(*args, cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def saved_lines(directory: Path) -> list[str]:
    return [line for part in directory.glob("part-*") for line in part.read_text().splitlines()]


def test_daily_logs_runs_under_the_command(tmp_path: Path) -> None:
    reactive_spark("run", str(EXAMPLES / "daily_logs.py"), "--until", "3s", cwd=tmp_path)
    out = tmp_path / "reactive-spark-examples" / "daily_logs" / "out"
    days = sorted(out.glob("daily-logs-*"))
    assert days  # a simulated day lasts a second
    kept = [line for day in days for line in saved_lines(day)]
    assert kept and all(" WARN " in line or " ERROR " in line for line in kept)


def test_daily_weekly_logs_runs_under_the_command(tmp_path: Path) -> None:
    reactive_spark("run", str(EXAMPLES / "daily_weekly_logs.py"), "--until", "8s", cwd=tmp_path)
    out = tmp_path / "reactive-spark-examples" / "daily_weekly_logs" / "out"
    days = sorted(out.glob("daily-logs-*"))
    [week] = out.glob("weekly-logs-*")  # the seventh simulated second rolls the week up
    assert len(days) >= 7
    daily_errors = [line for day in days[:7] for line in saved_lines(day) if " ERROR " in line]
    assert saved_lines(week) and sorted(saved_lines(week)) == sorted(daily_errors)


def test_clickstream_runs_under_the_command(tmp_path: Path) -> None:
    from reactive_spark.log import Database, FileLog

    reactive_spark("run", str(EXAMPLES / "clickstream.py"), "--until", "4s", cwd=tmp_path)
    root = tmp_path / "reactive-spark-examples" / "clickstream"
    log = FileLog(str(root / "log"))
    appended = sum(log.latest_offset("clicks", p) for p in log.partitions("clicks"))
    with Database.sqlite(str(root / "pages.db")).transaction() as cursor:
        cursor.execute("SELECT SUM(n) FROM pages")
        [(counted,)] = cursor.fetchall()
    assert 0 < counted <= appended  # an hour lasts three seconds: at least one commit


def test_upload_trigger_runs_under_the_command(tmp_path: Path) -> None:
    workdir = tmp_path / "reactive-spark-examples" / "upload_trigger"
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "reactive_spark", "run", str(EXAMPLES / "upload_trigger.py")],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env={**os.environ, "COLUMNS": "120"},
        )
    printed: queue.Queue[str] = queue.Queue()
    stdout = process.stdout
    assert stdout is not None
    threading.Thread(target=lambda: [printed.put(line) for line in stdout], daemon=True).start()
    deadline = time.monotonic() + 240

    def running() -> bool:
        assert process.poll() is None and time.monotonic() < deadline
        return True

    def next_report() -> str:
        line = ""
        while not line.startswith("report:"):
            line = printed.get(timeout=max(0.1, deadline - time.monotonic()))
        return line.strip()

    try:
        while running() and not port_open(4140):  # the REST trigger listens once it started
            time.sleep(0.2)
        time.sleep(1)  # the file watcher reports changes from its first look on (200 ms)
        (workdir / "incoming" / "a.txt").write_text("x y x\nz\n")
        report = ""
        while running() and report != "report: 1 files, 2 lines so far":
            post = urllib.request.Request("http://127.0.0.1:4140/jobs/report", method="POST")
            urllib.request.urlopen(post, timeout=30).close()
            report = next_report()
            time.sleep(0.2)
        process.send_signal(signal.SIGINT)  # a graceful stop
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, errors.read_text()
    [saved] = (workdir / "out").glob("words-*")
    assert sorted(saved_lines(saved)) == ["('x', 2)", "('y', 1)", "('z', 1)"]


def port_open(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0
