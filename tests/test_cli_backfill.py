"""`reactive-spark backfill`: its plan is what runs, and its mistakes answer before Spark."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark import SparkContext

from reactive_spark.cli import main

APP = """
from datetime import UTC, datetime

from reactive_spark import Days, StreamingListener

START = datetime(2026, 1, 5, tzinfo=UTC)
FIRED = []


class Fired(StreamingListener):
    def onEventFired(self, event):
        FIRED.append((event.time.toDatetime(), event.source.name))


def build(ssc):
    daily = ssc.timer(START, None, Days(1), "daily")
    mondays = daily.filter(lambda event: event.datetime.weekday() == 0, name="mondays")
    numbers = ssc.queueStream([], default=[1, 2, 3])
    numbers.saveAsTextFiles(OUT + "/daily").bind(daily)
    numbers.tailWindow(7, 7).count().saveAsTextFiles(OUT + "/weekly").bind(mondays)
    ssc.addStreamingListener(Fired())
"""


@pytest.mark.usefixtures("package_log_level")
def test_the_plan_lists_the_batches_that_then_run(
    sc: SparkContext, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = tmp_path / "backfilled_app.py"
    app.write_text(f"OUT = {str(tmp_path / 'out')!r}\n{APP}")
    window = ["--from", "2026-01-10", "--to", "2026-01-19T00:00"]
    assert main(["backfill", str(app), *window, "--plan"]) == 0
    planned = capsys.readouterr().out.splitlines()
    assert len(planned) == 12  # ten days, and the two Mondays
    assert planned[:3] == [
        f"2026-01-10T00:00:00Z  daily  saveAsTextFiles({tmp_path}/out/daily)[1]",
        f"2026-01-11T00:00:00Z  daily  saveAsTextFiles({tmp_path}/out/daily)[1]",
        f"2026-01-12T00:00:00Z  daily  saveAsTextFiles({tmp_path}/out/daily)[1]",
    ]
    assert planned[3].startswith("2026-01-12T00:00:00Z  mondays  saveAsTextFiles(")
    assert not (tmp_path / "out").exists()  # nothing ran

    assert main(["backfill", str(app), *window]) == 0
    captured = capsys.readouterr()
    fired = sys.modules["backfilled_app"].FIRED
    assert [f"{time:%Y-%m-%dT%H:%M:%SZ}  {source}" for time, source in fired] == [
        "  ".join(line.split("  ")[:2]) for line in planned
    ]
    assert captured.out.startswith("backfilled 12 batches of daily, mondays from 2026-01-10")
    assert "backfill: 12/12 batches, through 2026-01-19T00:00:00Z" in captured.err
    assert len(list((tmp_path / "out").glob("daily-*"))) == 10
    # a window sees the backfilled batches only: on Jan 12 it holds three days, fewer than its
    # slide of seven, so only the Monday of Jan 19 rolls a week up
    assert [path.name for path in (tmp_path / "out").glob("weekly-*")] == ["weekly-1768780800000"]


@pytest.mark.usefixtures("package_log_level")
def test_unknown_sources_are_named(
    sc: SparkContext, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = tmp_path / "named_app.py"
    app.write_text(f"OUT = {str(tmp_path / 'out')!r}\n{APP}")
    window = ["--from", "2026-01-10", "--to", "2026-01-12"]
    assert main(["backfill", str(app), *window, "--sources", "daily,hourly"]) == 2
    assert capsys.readouterr().err.strip() == (
        "--sources names no source of the program: 'hourly' (its sources: daily)"
    )
    assert main(["backfill", str(app), *window, "--sources", "mondays"]) == 2
    assert "--sources names 'mondays', which is derived from daily" in capsys.readouterr().err


INDEXED_APP = """
from datetime import UTC, datetime

from reactive_spark import Days

START = datetime(2026, 1, 5, tzinfo=UTC)


def ignore(rdd):
    pass


def build(ssc):
    daily = ssc.timer(START, None, Days(1), "daily")
    weekly = daily.filter(lambda event: event.index % 7 == 6, name="weekly")
    ssc.queueStream([], default=[1]).foreachRDD(ignore).bind(daily).bind(weekly)
"""


@pytest.mark.usefixtures("package_log_level")
def test_the_plan_of_a_source_derived_by_index_numbers_the_ticks_as_live(
    sc: SparkContext, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The predicate gets each tick's number from the timer's start, never None: the weekly
    source fires on the seventh day, counted from the timer's start, as it does live."""
    app = tmp_path / "indexed_app.py"
    app.write_text(INDEXED_APP)
    window = ["--from", "2026-01-09", "--to", "2026-01-20"]
    assert main(["backfill", str(app), *window, "--plan"]) == 0
    planned = capsys.readouterr().out.splitlines()
    assert [line for line in planned if "  weekly  " in line] == [
        "2026-01-11T00:00:00Z  weekly  foreachRDD[1](ignore)",
        "2026-01-18T00:00:00Z  weekly  foreachRDD[1](ignore)",
    ]
    assert len(planned) == 12 + 2  # the days from Jan 9 to Jan 20, and the two weekly ticks


@pytest.mark.usefixtures("package_log_level")
def test_a_backfill_that_cannot_start_says_why_in_one_line(
    sc: SparkContext, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A watched directory that does not exist ended the command with the library's
    traceback, as `run` did before it said why in one line."""
    app = tmp_path / "missing_dir_app.py"
    app.write_text(
        "from datetime import UTC, datetime\n"
        "from reactive_spark import Days\n"
        "def build(ssc):\n"
        "    daily = ssc.timer(datetime(2026, 1, 1, tzinfo=UTC), None, Days(1), 'daily')\n"
        f"    ssc.textFileStream({str(tmp_path / 'no-such-dir')!r}).count().pprint().bind(daily)\n"
    )
    window = ["--from", "2026-01-02", "--to", "2026-01-03"]
    assert main(["backfill", str(app), *window]) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert lines[-1].startswith("the backfill could not run: textFileStream("), lines
    assert lines[-1].endswith("does not exist; create it before starting the StreamingContext")
    assert not any("Traceback" in line for line in lines)


@pytest.mark.parametrize("plan", [True, False])
def test_a_function_that_raises_as_the_backfill_plans_is_named_in_one_line(
    sc: SparkContext, tmp_path: Path, capsys: pytest.CaptureFixture[str], plan: bool
) -> None:
    """A derived source's predicate that raises ended the command with the traceback."""
    app = tmp_path / "raising_app.py"
    app.write_text(
        "from datetime import UTC, datetime\n"
        "from reactive_spark import Days\n"
        "def build(ssc):\n"
        "    daily = ssc.timer(datetime(2026, 1, 1, tzinfo=UTC), None, Days(1), 'daily')\n"
        "    weekly = daily.filter(lambda event: 1 / 0, name='weekly')\n"
        "    ssc.queueStream([], default=[1]).count().pprint().bind(weekly)\n"
    )
    window = ["--from", "2026-01-02", "--to", "2026-01-03", *(["--plan"] if plan else [])]
    assert main(["backfill", str(app), *window]) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert lines == [
        "the backfill could not run: source 'weekly': a function of yours raised "
        "ZeroDivisionError: division by zero as the backfill planned its events; fix it, or "
        "backfill without this source"
    ]


def test_a_backfill_of_a_watcher_whose_directory_does_not_exist_is_refused(
    sc: SparkContext, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It backfilled 0 batches and exited 0: a mistyped path looked like a quiet range."""
    app = tmp_path / "watcher_app.py"
    missing = tmp_path / "no-such-landing"
    app.write_text(
        "def build(ssc):\n"
        f"    files = ssc.fileWatcher({str(missing)!r}, name='landing')\n"
        "    ssc.queueStream([], default=[1]).count().pprint().bind(files)\n"
    )
    window = ["--from", "2026-01-02", "--to", "2026-01-03", "--plan"]
    assert main(["backfill", str(app), *window]) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert lines == [
        f"the backfill could not run: watched directory {missing} of source 'landing' does not "
        "exist: there is nothing to backfill"
    ]


@pytest.mark.parametrize("plan", [True, False])
def test_a_plan_of_a_run_that_cannot_start_says_why_as_the_run_does(
    sc: SparkContext, tmp_path: Path, capsys: pytest.CaptureFixture[str], plan: bool
) -> None:
    """The plan listed the batches of a run that failed at once (an input over a directory that
    does not exist): it now fails with the run's one line."""
    app = tmp_path / ("planned_missing_app.py" if plan else "run_missing_app.py")
    missing = tmp_path / "no-such-input"
    app.write_text(
        "from datetime import UTC, datetime\n"
        "from reactive_spark import Days\n"
        "def build(ssc):\n"
        "    daily = ssc.timer(datetime(2026, 1, 1, tzinfo=UTC), None, Days(1), 'daily')\n"
        f"    ssc.textFileStream({str(missing)!r}).count().pprint().bind(daily)\n"
    )
    window = ["--from", "2026-01-02", "--to", "2026-01-03", *(["--plan"] if plan else [])]
    assert main(["backfill", str(app), *window]) == 1
    captured = capsys.readouterr()
    assert "2026-01-02" not in captured.out  # no batch listed, none run
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert lines == [
        f"the backfill could not run: textFileStream({missing})[0]: directory {missing} does "
        "not exist; create it before starting the StreamingContext"
    ]


@pytest.mark.parametrize("plan", [True, False])
def test_a_checkpoint_that_is_not_new_is_refused_by_the_plan_as_by_the_run(
    sc: SparkContext, tmp_path: Path, capsys: pytest.CaptureFixture[str], plan: bool
) -> None:
    """The plan listed three batches for `--checkpoint` naming the live run's checkpoint,
    where the run refuses it: the plan now answers with the run's line, and writes nothing."""
    app = tmp_path / ("planned_cp_app.py" if plan else "run_cp_app.py")
    app.write_text(
        "from datetime import UTC, datetime\n"
        "from reactive_spark import Days\n"
        "def build(ssc):\n"
        "    daily = ssc.timer(datetime(2026, 1, 1, tzinfo=UTC), None, Days(1), 'daily')\n"
        "    ssc.queueStream([], default=[1]).count().pprint().bind(daily)\n"
    )
    live = tmp_path / "live-checkpoint"
    live.mkdir()
    (live / "metadata.json").write_text("{}")  # what a live run's checkpoint holds first
    window = ["--from", "2026-01-02", "--to", "2026-01-03", "--checkpoint", str(live)]
    assert main(["backfill", str(app), *window, *(["--plan"] if plan else [])]) == 2
    captured = capsys.readouterr()
    assert "2026-01-02" not in captured.out  # no batch listed, none run
    assert captured.err.splitlines() == [
        f"checkpoint must be a new directory of the backfill's own, got {str(live)!r}"
    ]
    assert sorted(path.name for path in live.iterdir()) == ["metadata.json"]


MISTAKES = {
    "a bad --from": (
        ["--from", "last monday", "--to", "2026-01-12"],
        "--from must be an ISO time such as 2026-01-12 or 2026-01-12T06:00, got 'last monday'",
    ),
    "--from after --to": (
        ["--from", "2026-01-12", "--to", "2026-01-10"],
        "--from must not be after --to, got --from '2026-01-12', --to '2026-01-10'",
    ),
    "a --to after now": (
        ["--from", "2026-01-10", "--to", "2999-01-12"],
        "--to 2999-01-12T00:00:00Z is after now: a backfill re-runs a past range, and the live "
        "run fires what comes; give a --to that has passed",
    ),
    "an empty source name": (
        ["--from", "2026-01-10", "--to", "2026-01-12", "--sources", "daily,"],
        "--sources must be comma-separated source names, got 'daily,'",
    ),
}


@pytest.mark.parametrize("mistake", MISTAKES)
def test_a_mistake_answers_in_one_line_before_spark_starts(mistake: str, tmp_path: Path) -> None:
    args, message = MISTAKES[mistake]
    (tmp_path / "app.py").write_text("def build(ssc):\n    pass\n")
    # were Spark started, it would fail otherwise, and loudly: there is no Spark where it looks
    environment = {**os.environ, "COLUMNS": "80", "SPARK_HOME": str(tmp_path / "no-spark")}
    done = subprocess.run(
        [sys.executable, "-m", "reactive_spark", "backfill", "app.py", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [message]


def test_help_names_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_status:
        main(["backfill", "--help"])
    assert exit_status.value.code == 0
    usage = capsys.readouterr().out
    assert all(
        option in usage for option in ("--from", "--to", "--sources", "--plan", "--overwrite")
    )
