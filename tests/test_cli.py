"""The `reactive-spark` command: --help, demo, run and graph (in subprocesses, as users run it)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pyspark
import pytest
from pyspark import SparkContext

from reactive_spark import Seconds, StreamingContext, Time, VirtualClock
from reactive_spark.cli import main
from reactive_spark.cli.program import load, on_path, one_line
from reactive_spark.cli.spark_start import REGISTRATION_SECONDS
from reactive_spark.errors import InvalidArgumentError
from tests.helpers import EXAMPLE_FILES, ROOT, command

APP = str(ROOT / "tests" / "cli_app.py")


@pytest.mark.parametrize("args", [[], ["demo"], ["run"], ["graph"]])
def test_help(args: list[str]) -> None:
    done = command(*args, "--help")
    assert done.returncode == 0, done.stderr
    assert "usage: reactive-spark" in done.stdout
    if args == ["run"]:
        assert "--checkpoint" in done.stdout and "--until" in done.stdout and "--ui" in done.stdout


def test_a_bad_command_line_is_an_error() -> None:
    done = command("graph")
    assert done.returncode == 2 and "MODULE[:FUNC]" in done.stderr


def cli(cwd: Path, environment: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m reactive_spark ARGS` in `cwd` with `environment` (SPARK_HOME where no Spark
    is, so that starting it would fail loudly), as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "reactive_spark", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["run", "app.py", "--ui", "--port", "99999"],
            "--port: must be an int from 0 to 65535, got '99999'",
        ),
        (["demo", "--days", "0"], "--days: must be a positive int, got '0'"),
        (["cluster", "--cores", "none"], "--cores: must be a positive int, got 'none'"),
        (
            ["run", "app.py", "--batch-duration", "-1"],
            "--batch-duration: must be a number of seconds of at least 0.001, got '-1'",
        ),
        (
            ["backfill", "app.py", "--batch-duration", "inf"],
            "--batch-duration: must be a number of seconds of at least 0.001, got 'inf'",
        ),
    ],
)
def test_a_bad_number_is_refused_as_the_command_line_is_read(
    args: list[str], message: str, tmp_path: Path
) -> None:
    """Not once Spark has started (the port), or after a progress bar was drawn (the days)."""
    done = cli(tmp_path, {**os.environ, "SPARK_HOME": str(tmp_path / "no-spark")}, *args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[-1].endswith(f"error: argument {message}"), done.stderr


MISTAKES = {
    "no such file": (["run", "nosuch.py"], "MODULE 'nosuch.py' is not a file"),
    "no such module": (["run", "nosuch"], "no module named 'nosuch'"),
    "no such function": (["run", "app.py:nosuch"], "app.py has no function 'nosuch'"),
    "a FUNC that is not a function": (
        ["run", "app.py:DAYS"],
        "app.py:DAYS must be a function, got int 5",
    ),
    "a bad --until": (
        ["run", "app.py", "--until", "banana"],
        "--until must be an ISO time or a duration such as 90s, 10m, 2h, got 'banana'",
    ),
    "a zero --until": (
        ["run", "app.py", "--until", "0s"],
        "--until must be a duration of at least 1ms or a time, got '0s'",
    ),
    "a past --until": (
        ["run", "app.py", "--until", "2020-01-01"],
        "--until 2020-01-01T00:00:00Z has passed (and there is no --checkpoint to catch up): "
        "give a later time, or a duration such as 90s",
    ),
    "a FUNC taking more": (
        ["run", "app.py:report"],
        "app.py:report takes (ssc, days); reactive-spark calls report(ssc) with a StreamingContext",
    ),
    "an import failing": (["run", "broken.py"], "importing broken.py failed: RuntimeError: boom ("),
    "a syntax error": (["run", "typo.py"], "importing typo.py failed: SyntaxError: expected ':' ("),
    "graph: no such file": (["graph", "nosuch.py"], "MODULE 'nosuch.py' is not a file"),
    "graph: no such function": (["graph", "app.py:nosuch"], "app.py has no function 'nosuch'"),
    "graph: a FUNC taking none": (
        ["graph", "app.py:nothing"],
        "app.py:nothing takes (); reactive-spark calls nothing(ssc) with a StreamingContext",
    ),
}


@pytest.mark.parametrize("mistake", MISTAKES)
def test_a_mistake_answers_in_one_line_before_spark_starts(mistake: str, tmp_path: Path) -> None:
    args, message = MISTAKES[mistake]
    (tmp_path / "app.py").write_text(
        "def build(ssc):\n    pass\n\n\n"
        "def report(ssc, days):\n    pass\n\n\n"
        "def nothing():\n    pass\n\n\n"
        "DAYS = 5\n"
    )
    (tmp_path / "broken.py").write_text('raise RuntimeError("boom")\n')
    (tmp_path / "typo.py").write_text("def build(ssc)\n    pass\n")
    # were Spark started, it would fail otherwise, and loudly: there is no Spark where it looks
    # (and no gateway of another process to join)
    environment = {**os.environ, "COLUMNS": "80", "SPARK_HOME": str(tmp_path / "no-spark")}
    environment.pop("PYSPARK_GATEWAY_PORT", None)
    environment.pop("PYSPARK_GATEWAY_SECRET", None)

    done = cli(tmp_path, environment, *args)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    [line] = done.stderr.splitlines()  # one line, however long
    assert line.startswith(message), line
    if mistake == "an import failing":
        assert line.endswith(f"{tmp_path / 'broken.py'}:1)")
    if mistake == "a syntax error":  # where the parser found it, not in the import system
        assert line.endswith(f"({tmp_path / 'typo.py'}:1)"), line


def test_a_syntax_error_of_a_string_names_the_users_line() -> None:
    """A SyntaxError of a string the user's code compiled is where that code called the
    parser, not the string's made-up file name."""
    try:
        compile("{", "<config>", "eval")
    except SyntaxError as exc:
        line, where = one_line(exc), exc.__traceback__.tb_lineno  # type: ignore[union-attr]
    assert line == f"SyntaxError: '{{' was never closed (<config>, line 1) ({__file__}:{where})"


def test_an_unreachable_master_is_one_line_before_spark_starts(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("def build(ssc):\n    pass\n")
    began = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "reactive_spark",
            "run",
            "app.py",
            "--master",
            "spark://127.0.0.1:1",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SPARK_HOME": str(tmp_path / "no-spark")},  # Spark would fail otherwise
    )
    assert time.perf_counter() - began < 30
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        "cannot reach the Spark master spark://127.0.0.1:1 (127.0.0.1:1: Connection refused): "
        "is it running, at that address?"
    ]


LOCAL_FORMS = (
    "--master must be local, local[N], local[*], local[N,maxFailures] or "
    "local-cluster[workers,cores,memoryMB] with N >= 1 (Spark's rule), got "
)


@pytest.mark.parametrize(
    ("master", "message"),
    [
        (
            "bogus://x",
            "--master must be yarn or start with local, spark:// or k8s:// (Spark's rule), got "
            "'bogus://x'",
        ),
        ("local[abc]", LOCAL_FORMS + "'local[abc]'"),  # the prefix passed, Spark's JVM refused
        ("local[0]", LOCAL_FORMS + "'local[0]'"),
    ],
)
def test_a_master_spark_does_not_take_is_one_line_before_spark_starts(
    tmp_path: Path, master: str, message: str
) -> None:
    """Spark's JVM refused it with its stack trace, then Python's: 74 lines in all."""
    (tmp_path / "app.py").write_text("def build(ssc):\n    pass\n")
    done = subprocess.run(
        [sys.executable, "-m", "reactive_spark", "run", "app.py", "--master", master],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [message]


def test_a_master_that_never_registers_the_application_is_one_line(tmp_path: Path) -> None:
    """A server that takes Spark's connection and never answers: Spark alone would ask for a
    minute, then fail every batch."""
    (tmp_path / "app.py").write_text("def build(ssc):\n    pass\n")
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[tuple[socket.socket, float]] = []

    def accept() -> None:
        with contextlib.suppress(OSError):  # closed at the end
            while True:
                connection, _ = server.accept()
                accepted.append((connection, time.monotonic()))

    threading.Thread(target=accept, daemon=True).start()
    url = f"spark://127.0.0.1:{server.getsockname()[1]}"
    try:
        done = command("run", "app.py", "--master", url, "--until", "5s", cwd=tmp_path)
        ended = time.monotonic()
    finally:
        server.close()
        for connection, _ in accepted:
            connection.close()
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        f"the Spark master {url} took the connection but did not register this application "
        f"within 10 s: is that a Spark {pyspark.__version__} master?"
    ]
    # the probe's connection, then Spark's: the command gave up 10 s after Spark asked
    asked = accepted[1][1]
    assert REGISTRATION_SECONDS - 2 < ended - asked < REGISTRATION_SECONDS + 8


def test_demo_shows_progress_and_a_summary_table(tmp_path: Path) -> None:
    done = command("demo", "--days", "7", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "simulated days" in done.stderr and "7/7" in done.stderr  # the progress bar
    table = done.stdout
    assert "days processed" in table and "weekly roll-ups" in table
    cells = "".join(character for character in table if character not in " \n│")  # path wraps
    assert str(tmp_path / "reactive-spark-demo" / "out").replace(" ", "") in cells
    assert len(list((tmp_path / "reactive-spark-demo" / "out").glob("daily-logs-*"))) == 7
    assert len(list((tmp_path / "reactive-spark-demo" / "out").glob("weekly-logs-*"))) == 1


def test_demo_serves_its_console_in_a_new_directory(tmp_path: Path) -> None:
    """With --ui the context started before the demo wrote its logs: a missing directory."""
    done = command("demo", "--ui", "--port", "0", "--days", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "console: http://127.0.0.1:" in done.stderr
    assert len(list((tmp_path / "reactive-spark-demo" / "out").glob("daily-logs-*"))) == 2


def test_run_runs_a_program_until_the_given_time(tmp_path: Path) -> None:
    done = command("run", f"{APP}:build", "--master", "local[1]", "--until", "3s", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "('a', 2)" in done.stdout and "('b', 1)" in done.stdout
    # one INFO line per batch, whole, with its UTC time: rich wrapped it at 80 columns
    batches = [line for line in done.stderr.splitlines() if "batch tick#" in line]
    assert batches, done.stderr
    for line in batches:
        assert re.fullmatch(
            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO reactive_spark\.\w+: batch tick#\d+ at "
            r"\S+Z: \d+ job\(s\) in [\d.]+ s: .*pprint\[\d+\].*",
            line,
        ), line
    assert not spark_noise(done.stderr)


def test_a_job_that_fails_while_the_stop_waits_for_it_fails_the_run(tmp_path: Path) -> None:
    """The run exited 0: failures were counted only until the stop began. A failure is printed
    as it reads, though it looks like rich's markup."""
    (tmp_path / "late.py").write_text(
        "import time\n"
        "from reactive_spark import Seconds\n"
        "def fail_late(rdd):\n"
        "    time.sleep(6)\n"
        "    raise ValueError('boom [/b] in the job')\n"
        "def build(ssc):\n"
        "    tick = ssc.timer(ssc.clock.now() + Seconds(4), None, Seconds(60), 'tick')\n"
        "    ssc.queueStream([], default=[1]).foreachRDD(fail_late).bind(tick)\n"
    )
    # the tick comes within 4 s of the start (if starting takes under 4 s), the stop at 6 s,
    # while the job runs (if starting took under 4 s)
    done = command("run", "late.py", "--master", "local[1]", "--until", "6s", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "ValueError: boom [/b] in the job" in done.stderr
    assert "MarkupError" not in done.stderr  # rich read the failure as markup, and raised


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "    ssc.textFileStream('no-such-dir').count().pprint().bind(tick)\n",
            "no-such-dir does not exist; create it before starting",
        ),
        (
            "    ssc.queueStream([], default=[1]).count().pprint()\n",
            "are bound to no source and the context has no batchDuration for the default "
            "timer; bind them, or give it one (StreamingContext(sc, batchDuration); "
            "reactive-spark run --batch-duration)",
        ),
    ],
)
def test_a_program_that_cannot_start_says_why_in_one_line(
    tmp_path: Path, body: str, message: str
) -> None:
    """It ended with the library's own traceback, the reason on its last line."""
    (tmp_path / "unstartable.py").write_text(
        "from reactive_spark import Seconds\n"
        "def build(ssc):\n"
        "    tick = ssc.timer(ssc.clock.now(), None, Seconds(1), 'tick')\n" + body
    )
    done = command("run", "unstartable.py", "--master", "local[1]", "--until", "5s", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    [line] = [line for line in done.stderr.splitlines() if "could not start" in line]
    assert line.startswith("the StreamingContext could not start: ") and message in line, line


async def test_run_refuses_a_checkpoint_another_driver_holds(
    sc: SparkContext, tmp_path: Path
) -> None:
    """Both ran, writing the same log and outputs."""
    checkpoint = tmp_path / "checkpoint"
    holder = StreamingContext(sc, None, clock=VirtualClock(Time(0)), checkpoint=str(checkpoint))
    tick = holder.timer(Time(0), None, Seconds(1), "tick")
    holder.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(tick)
    await holder.start()
    try:
        run = ["run", APP, "--master", "local[1]", "--checkpoint", str(checkpoint)]
        done = command(*run, "--until", "5s", cwd=tmp_path)
    finally:
        await holder.stop(stopSparkContext=False)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    [line] = [line for line in done.stderr.splitlines() if "could not start" in line]
    assert line.startswith(
        f"the StreamingContext could not start: checkpoint directory {checkpoint} is in use by "
        f"another driver (pid {os.getpid()} on {socket.gethostname()}, since "
    ), line
    assert line.endswith(
        "stop that one first, or give this StreamingContext another checkpoint directory"
    ), line


def test_a_build_that_raises_answers_in_one_line(tmp_path: Path) -> None:
    """As an import that raises does: where it raised, not the command's own frames."""
    (tmp_path / "raising.py").write_text(
        "def build(ssc):\n    ssc.queueStream([[1]]).pprint()\n    raise RuntimeError('boom')\n"
    )
    (tmp_path / "misusing.py").write_text(
        "def build(ssc):\n    ssc.queueStream([[1]]).pprint()\n    ssc.remember(-5)\n"
    )
    for program, error in (("raising", "RuntimeError: boom"), ("misusing", "InvalidArgumentE")):
        done = command("graph", f"{program}.py", cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        [line] = done.stderr.splitlines()
        assert line.startswith(f"build(ssc) failed: {error}"), line
        assert line.endswith(f"{tmp_path / program}.py:3)"), line  # its line, not the library's


#: What Spark's JVM prints as it starts, unless told otherwise.
NOISE = ("WARN", "log4j", "NativeCodeLoader", "incubator", "Setting default log level")


def spark_noise(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if any(word in line for word in NOISE)]


def test_spark_is_quiet_under_the_command_unless_verbose(tmp_path: Path) -> None:
    done = command("demo", "--days", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2/2" in done.stderr  # the progress bar, alone
    assert not spark_noise(done.stderr)
    loud = command("-v", "graph", APP, cwd=tmp_path)
    assert loud.returncode == 0, loud.stderr
    assert "tick (timer)" in loud.stdout
    assert "WARNING: Using incubator modules" in spark_noise(loud.stderr)[0]  # as Spark prints


@pytest.mark.usefixtures("package_log_level")
def test_graph_prints_the_lineage_in_every_format(sc: SparkContext, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["graph", APP, "--format", "json"]) == 0
    lineage = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in lineage["sources"]] == ["tick", "rerun"]
    assert [stream["name"] for stream in lineage["streams"]] == [
        "queueStream[0]",
        "flatMap[1](str.split)",
        "countByValue[2]",  # as the program says, not the map and reduceByKey it is made of
        "pprint[3]",
        "tailWindow[4]",
        "count[5]",
        "pprint[6]",
    ]
    assert main(["graph", APP]) == 0
    text = capsys.readouterr().out
    assert "tick (timer)" in text and "TailDependency(3, 3, 0)" in text and "(output)" in text
    assert main(["graph", f"{APP}:build", "--format", "mermaid"]) == 0
    mermaid = capsys.readouterr().out
    assert mermaid.startswith("flowchart LR") and "source_tick -.->" in mermaid
    assert main(["graph", APP, "--format", "dot"]) == 0
    dot = capsys.readouterr().out
    assert dot.startswith("digraph lineage {") and dot.rstrip().endswith("}")


@pytest.mark.usefixtures("package_log_level")
def test_every_example_prints_its_lineage(
    sc: SparkContext,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)  # where the examples put their files under the command
    earlier = tmp_path / "reactive-spark-examples" / "daily_logs" / "out" / "daily-logs-1"
    earlier.mkdir(parents=True)  # what a run wrote: graph runs nothing, and removes nothing
    for path in EXAMPLE_FILES:
        assert main(["graph", str(path), "--format", "json"]) == 0, path.name
        captured = capsys.readouterr()
        lineage = json.loads(captured.out)  # what the example prints goes to stderr
        outputs = [stream for stream in lineage["streams"] if stream["output"]]
        assert outputs, path.name
        assert all(stream["boundTo"] for stream in outputs), path.name
        sources = {source["name"] for source in lineage["sources"]}
        assert {name for stream in outputs for name in stream["boundTo"]} <= sources
        assert "go to" in captured.err or "drop files into" in captured.err, path.name
    assert earlier.is_dir()


def test_run_imports_the_module_with_its_py_files_on_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    with zipfile.ZipFile(tmp_path / "deps.zip", "w") as deps:
        deps.writestr("shipped_helper.py", "def build(ssc):\n    return 'shipped'\n")
    (tmp_path / "uses_deps.py").write_text("from shipped_helper import build\n")
    on_path([str(tmp_path / "deps.zip")])
    assert load(str(tmp_path / "uses_deps.py"))(None) == "shipped"
    with pytest.raises(InvalidArgumentError, match=r"--py-files names no file: 'missing\.zip'"):
        on_path(["missing.zip"])


#: A program whose batches (0.25 s) are slower than its timer (0.2 s): a restart after downtime
#: never catches up.
SLOW_APP = """
import time
from datetime import UTC, datetime

from reactive_spark import Milliseconds


def build(ssc):
    tick = ssc.timer(datetime(2026, 1, 1, tzinfo=UTC), None, Milliseconds(200), "tick")
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: time.sleep(0.25)).bind(tick)
"""


def test_a_restart_obeys_until_and_stop_signals_while_it_catches_up(tmp_path: Path) -> None:
    """`--until` counts from the start, not from when the restart caught up (it never does
    here), and SIGTERM stops it gracefully while it catches up, as at any other time."""
    (tmp_path / "slow.py").write_text(SLOW_APP)
    run = ["run", "slow.py:build", "--master", "local[1]", "--checkpoint", "checkpoint"]
    first = command(*run, "--until", "2s", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    # downtime: the next command's own start (seconds: Python, the JVM), many ticks missed
    second = command(*run, "--until", "2s", cwd=tmp_path, timeout=120)
    assert second.returncode == 0, second.stderr
    assert "catching up" in second.stderr
    third = subprocess.Popen(
        [sys.executable, "-m", "reactive_spark", *run, "--until", "60s"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert third.stdout is not None
    seen = []
    for line in third.stdout:
        seen.append(line)
        if "catching up" in line:
            break
    third.send_signal(signal.SIGTERM)  # the driver alone, as docs/deploy.md says
    rest, _ = third.communicate(timeout=120)
    assert third.returncode == 0, "".join(seen) + rest
    assert "stopping gracefully" in rest


STUCK_APP = """\
import time
from reactive_spark import Seconds

def stuck(rdd):
    print("stuck in the job", flush=True)
    time.sleep(300)

def build(ssc):
    tick = ssc.timer(ssc.clock.now() + Seconds(1), None, Seconds(60), "tick")
    ssc.queueStream([], default=[1]).foreachRDD(stuck).bind(tick)
"""


def terminated_twice(
    tmp_path: Path, app: str, ready: str, columns: int, *options: str
) -> tuple[int, str, str]:
    """`reactive-spark run` of `app` (with `options`) sent SIGTERM once it printed `ready`, and
    again once it began stopping gracefully: its status, all it printed, and what it printed
    after that."""
    (tmp_path / "app.py").write_text(app)
    run = subprocess.Popen(
        [sys.executable, "-m", "reactive_spark", "run", "app.py", "--master", "local[1]", *options],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": str(columns)},
    )
    assert run.stdout is not None
    hung = threading.Timer(180, run.kill)  # a run that hangs before its lines ends the reads
    hung.start()
    seen = []
    try:
        for line in run.stdout:
            seen.append(line)
            if ready in line:
                break
        run.send_signal(signal.SIGTERM)
        for line in run.stdout:
            seen.append(line)
            if "stopping gracefully" in line:
                break
        run.send_signal(signal.SIGTERM)
        rest, _ = run.communicate(timeout=60)
    finally:
        hung.cancel()
        run.kill()
    return run.returncode, "".join(seen) + rest, rest


def test_a_second_sigterm_ends_a_run_whose_job_is_stuck(tmp_path: Path) -> None:
    """The first SIGTERM waits for the job; the second stops at once: the run says in one line
    that the stuck batch is left in its thread, and ends with status 1. It went on waiting for
    the job, and asyncio reported the second stop's error as never retrieved."""
    returncode, output, rest = terminated_twice(tmp_path, STUCK_APP, "stuck in the job", 120)
    assert returncode == 1, output
    assert "stopping now" in rest
    failed = [line for line in rest.splitlines() if "failed" in line]
    assert failed == [
        "stopping the scheduler (cancelling its running Spark jobs, ending its worker thread) "
        "failed: the running batch did not end 2 s after its Spark jobs were cancelled (is a "
        "function of yours stuck in a call that does not return?): it is left to end in its "
        "thread, its later jobs never start, and its end is neither told nor recorded (a restart "
        "from a checkpoint runs it again); the context is stopped"
    ]
    assert "never retrieved" not in output and "Traceback" not in output, output


NEVER_STARTS_APP = """\
import asyncio
from reactive_spark import EventSource

class NeverStarts(EventSource):
    def start(self):
        print("starting the source", flush=True)
        return asyncio.get_running_loop().create_future()  # never done

    def stop(self):
        pass

    def toProduct(self):
        return (self.name,)

def build(ssc):
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(NeverStarts(ssc, "never"))
"""


def test_a_second_sigterm_ends_a_run_whose_source_never_starts(tmp_path: Path) -> None:
    """A source whose start never returns held the start, and every stop waited for it: only
    SIGKILL ended the run. The second SIGTERM now ends the start, in one line, status 1."""
    returncode, output, rest = terminated_twice(
        tmp_path, NEVER_STARTS_APP, "starting the source", 200
    )
    assert returncode == 1, output
    assert (
        "the StreamingContext could not start: the StreamingContext was stopped while it "
        "started: a stop that does not wait ended the start"
    ) in rest, output
    assert "Traceback" not in output and "never retrieved" not in output, output


RE_RUN_STUCK_APP = """\
import os
import time
from datetime import UTC, datetime

from reactive_spark import Seconds

def stuck(rdd):
    if not os.path.exists("crashed"):  # the driver dies in the batch, which stays planned
        open("crashed", "w").close()
        os._exit(3)
    print("stuck in the job", flush=True)  # the restart re-runs it
    time.sleep(300)

def build(ssc):
    tick = ssc.timer(datetime(2026, 1, 1, tzinfo=UTC), None, Seconds(1), "tick")
    ssc.queueStream([], default=[1]).foreachRDD(stuck).bind(tick)
"""


def test_a_second_sigterm_ends_a_restart_whose_re_run_job_is_stuck(tmp_path: Path) -> None:
    """A restart re-runs the batch a crash left unfinished before it starts its sources: stuck
    in the job, it held the start, and every stop waited for it (only SIGKILL ended the run).
    The second SIGTERM now leaves it in its thread: one line, status 1."""
    (tmp_path / "app.py").write_text(RE_RUN_STUCK_APP)
    crashed = command(
        "run", "app.py", "--master", "local[1]", "--checkpoint", "checkpoint", cwd=tmp_path
    )
    assert crashed.returncode == 3, crashed.stderr
    returncode, output, rest = terminated_twice(
        tmp_path, RE_RUN_STUCK_APP, "stuck in the job", 400, "--checkpoint", "checkpoint"
    )
    assert returncode == 1, output
    assert "re-running 1 unfinished" in output, output
    failed = [line for line in rest.splitlines() if "failed" in line or "could not" in line]
    assert failed == [
        "the StreamingContext could not start: the StreamingContext was stopped while it "
        "started: a stop that does not wait ended the start; then stopping the scheduler "
        "(cancelling its running Spark jobs, ending its worker thread) failed: the running "
        "batch did not end 2 s after its Spark jobs were cancelled (is a function of yours "
        "stuck in a call that does not return?): it is left to end in its thread, its later "
        "jobs never start, and its end is neither told nor recorded (a restart from a "
        "checkpoint runs it again); the context is stopped"
    ], output
    assert "Traceback" not in output and "never retrieved" not in output, output


async def test_the_catch_up_bar_counts_missed_events_posted_after_it_began(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Missed events are posted in turn as room frees: what waits grows after the bar began,
    and what is done never goes below nothing (it showed -251/1)."""
    from reactive_spark.cli import running

    depths = iter([1, 252, 200, 0])

    class Catching:
        state = "active"

        @property
        def queueDepth(self) -> int:
            return next(depths)

    shown: list[tuple[int, int]] = []

    class Bar:
        def __enter__(self) -> Bar:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def add_task(self, description: str, total: int) -> int:
            shown.append((0, total))
            return 0

        def update(self, task: int, completed: int, total: int | None = None) -> None:
            shown.append((completed, shown[-1][1] if total is None else total))

    monkeypatch.setattr(running, "progress_bar", lambda title: Bar())
    await running.catching_up(Catching())  # type: ignore[arg-type]
    assert all(0 <= done <= total for done, total in shown), shown
    assert shown[-1] == (252, 252), shown
