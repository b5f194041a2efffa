"""On a real Spark cluster: a standalone master and worker on 127.0.0.1 (the `spark_cluster`
fixture), executors in JVMs and Python workers of their own. The daily/weekly pipeline survives
SIGKILL there; a program launched by `reactive-spark run` or by `spark-submit` gets file-watcher
jobs and a direct log stream into a transactional sink done by executors that import what
`--py-files deps.zip` shipped, as docs/deploy.md says."""

from __future__ import annotations

import ast
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark import SparkContext

import reactive_spark
from reactive_spark import Days, Hours
from reactive_spark.cluster import ClusterStartError, StandaloneCluster, spark_home
from reactive_spark.errors import InvalidArgumentError
from reactive_spark.log import FileLog

from .kill_app import DAYS, T0, write_logs
from .test_kill import kill_after_day, kill_app_child, reference_run, tree

TESTS = Path(__file__).resolve().parent
PACKAGE = Path(reactive_spark.__file__).resolve().parent
CLI = Path(sys.executable).with_name("reactive-spark")
EXECUTOR_SETTINGS = ["spark.cores.max=2", "spark.executor.memory=512m"]


def wait_for(
    condition: Callable[[], bool],
    timeout: float,
    what: str,
    process: subprocess.Popen[bytes] | None = None,
    log: Path | None = None,
) -> None:
    """Poll `condition` until true; fail with `what` (and the process's output) otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if process is not None and process.poll() is not None:
            break
        time.sleep(0.2)
    output = log.read_text(errors="replace")[-4000:] if log is not None and log.exists() else ""
    pytest.fail(f"{what}: not within {timeout:g} s\n{output}")


async def test_the_daily_weekly_pipeline_killed_on_the_cluster_equals_an_uninterrupted_run(
    sc: SparkContext, spark_cluster: StandaloneCluster, tmp_path: Path
) -> None:
    reference, crashed = tmp_path / "reference", tmp_path / "crashed"
    for workdir in (reference, crashed):
        write_logs(workdir / "logs")
    await reference_run(sc, reference)  # local[2], in this process
    expected = tree(reference / "out")

    env = spark_cluster.environment
    child = kill_app_child(crashed, T0, spark_cluster.masterUrl, env=env)
    seen: list[str] = []
    assert kill_after_day(child, 6, seen), f"finished before the kill: {seen}"
    restart_at = T0 + Days(8) + Hours(6)  # the weekly roll-up of day 7 and two days missed
    child = kill_app_child(crashed, restart_at, spark_cluster.masterUrl, env=env)
    seen = [child.next_line()]
    while seen[-1] not in ("finished", "exited"):
        seen.append(child.next_line())
    child.process.wait(timeout=60)
    assert seen[-1] == "finished", seen
    assert "done WeeklyTimer 7" in seen  # caught up after the restart

    actual = tree(crashed / "out")
    assert len([name for name in actual if name.endswith("_SUCCESS")]) == DAYS + DAYS // 7
    assert actual == expected
    applications = spark_cluster.status()["completedapps"]
    assert [app["name"] for app in applications].count("kill-app") >= 2


def deps_zip(directory: Path) -> Path:
    """deps.zip as docs/deploy.md builds it: reactive_spark and the user's own module."""
    archive = directory / "deps.zip"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "zipfile",
            "-c",
            str(archive),
            str(PACKAGE),
            str(TESTS / "cluster_jobs.py"),
        ],
        check=True,
    )
    return archive


def launch(how: str, cluster: StandaloneCluster, workdir: Path, archive: Path) -> list[str]:
    app = str(workdir / "cluster_app.py")
    settings = [arg for setting in EXECUTOR_SETTINGS for arg in ("--conf", setting)]
    if how == "reactive-spark run":
        options = ["--master", cluster.masterUrl, "--py-files", str(archive), *settings]
        return [str(CLI), "run", app, *options]
    submit = str(spark_home() / "bin" / "spark-submit")
    return [submit, "--master", cluster.masterUrl, "--py-files", str(archive), *settings, app]


def word_counts(out: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for part in out.glob("words-*/part-*"):
        for line in part.read_text().splitlines():
            word, n = ast.literal_eval(line)  # saveAsTextFiles writes each pair's str()
            counts[word] += n
    return counts


def page_totals(database: Path) -> dict[str, int]:
    if not database.exists():
        return {}
    with sqlite3.connect(database) as connection:
        try:
            return dict(connection.execute("SELECT page, n FROM pages").fetchall())
        except sqlite3.OperationalError:
            return {}


@pytest.mark.parametrize("how", ["reactive-spark run", "spark-submit"])
def test_a_program_on_the_cluster_runs_file_and_log_jobs_on_shipped_code(
    spark_cluster: StandaloneCluster, tmp_path: Path, how: str
) -> None:
    shutil.copy(TESTS / "cluster_app.py", tmp_path / "cluster_app.py")
    archive = deps_zip(tmp_path)
    (tmp_path / "incoming").mkdir()
    log = FileLog(str(tmp_path / "log"))
    log.create_topic("clicks", partitions=2)
    env = {
        **spark_cluster.environment,
        "CLUSTER_APP_DIR": str(tmp_path),
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    output = tmp_path / "driver.log"
    with output.open("wb") as sink:
        driver = subprocess.Popen(
            launch(how, spark_cluster, tmp_path, archive),
            cwd=tmp_path,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        started = tmp_path / "started"
        wait_for(started.exists, 120, "the context did not start", driver, output)
        driver_pid = int(started.read_text())
        # spark-submit's --master, not local[*] in its place: its jobs would run in the driver
        assert (tmp_path / "master").read_text() == spark_cluster.masterUrl

        rng = random.Random(5)
        pages = [rng.choice(["/", "/docs", "/pricing"]) for _ in range(40)]
        for n, page in enumerate(pages):
            log.append("clicks", {"page": page}, key=n)
        texts = ["spark runs on the cluster", "the cluster runs spark jobs"]
        for n, text in enumerate(texts):
            staged = tmp_path / f"upload-{n}.txt"
            staged.write_text(text + "\n")
            staged.replace(tmp_path / "incoming" / staged.name)
        expected_words = Counter(word for text in texts for word in text.split())

        wait_for(
            lambda: page_totals(tmp_path / "totals.db") == dict(Counter(pages)),
            90,
            f"click totals {page_totals(tmp_path / 'totals.db')}",
            driver,
            output,
        )
        wait_for(
            lambda: word_counts(tmp_path / "out") == expected_words,
            90,
            "word counts",
            driver,
            output,
        )
        os.kill(driver_pid, signal.SIGTERM)  # the Python driver: a graceful stop
        assert driver.wait(60) == 0, output.read_text(errors="replace")[-4000:]
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(30)

    places = json.loads((tmp_path / "executors.json").read_text())
    assert places, "no executor reported"
    for place in places:
        assert place["pid"] != driver_pid
        assert f"{archive.name}/cluster_jobs.py" in place["jobs"], place
        assert f"{archive.name}/reactive_spark/__init__.py" in place["reactive_spark"], place
    with sqlite3.connect(tmp_path / "totals.db") as connection:
        offsets = dict(
            ((topic, part), off)
            for topic, part, off in connection.execute(
                "SELECT topic, part, off FROM reactive_spark_offsets"
            )
        )
    assert sum(offsets.values()) == len(pages)
    assert "stopping gracefully" in output.read_text(errors="replace")


def test_reactive_spark_cluster_runs_a_master_and_worker_until_stopped(tmp_path: Path) -> None:
    command = subprocess.Popen(
        [str(CLI), "cluster", "--workdir", str(tmp_path), "--cores", "1", "--memory", "512m"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert command.stdout is not None
        line = command.stdout.readline().strip()
        assert line.startswith("master: spark://127.0.0.1:"), line
        port = int(line.rsplit(":", 1)[1])
        pids = [
            int((tmp_path / "pids" / f"{role}.pid").read_text()) for role in ("master", "worker")
        ]
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        command.send_signal(signal.SIGTERM)
        assert command.wait(60) == 0
    finally:
        if command.poll() is None:
            command.kill()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert list((tmp_path / "pids").iterdir()) == []


def test_a_cluster_that_does_not_come_up_says_why_and_leaves_nothing_behind(
    tmp_path: Path,
) -> None:
    cluster = StandaloneCluster(tmp_path, startTimeout=0.5)
    with pytest.raises(ClusterStartError, match="no worker registered"):
        cluster.start()
    assert cluster.pids == {}
    assert list((tmp_path / "pids").iterdir()) == []


@pytest.mark.parametrize(
    ("argument", "value"),
    [("cores", 0), ("cores", True), ("memory", "lots"), ("startTimeout", 0)],
)
def test_bad_cluster_arguments_are_named(tmp_path: Path, argument: str, value: object) -> None:
    with pytest.raises(InvalidArgumentError, match=argument):
        StandaloneCluster(tmp_path, **{argument: value})  # type: ignore[arg-type]
