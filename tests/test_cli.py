"""The `reactive-spark` command: --help, demo, run and graph (in subprocesses, as users run it)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark import SparkContext

from reactive_spark.cli import main

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "tests" / "cli_app.py")


def command(*args: str, cwd: Path = ROOT, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reactive_spark", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "120"},
    )


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
    done = command("graph", "nowhere.py")
    assert done.returncode == 2 and "is not a file" in done.stderr


def test_demo_shows_progress_and_a_summary_table(tmp_path: Path) -> None:
    done = command("demo", "--days", "7", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "simulated days" in done.stderr and "7/7" in done.stderr  # the progress bar
    table = done.stdout
    assert "days processed" in table and "weekly roll-ups" in table
    assert str(tmp_path / "reactive-spark-demo" / "out") in table.replace("\n", "")
    assert len(list((tmp_path / "reactive-spark-demo" / "out").glob("daily-logs-*"))) == 7
    assert len(list((tmp_path / "reactive-spark-demo" / "out").glob("weekly-logs-*"))) == 1


def test_run_runs_a_program_until_the_given_time(tmp_path: Path) -> None:
    done = command("run", f"{APP}:build", "--master", "local[1]", "--until", "3s", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "('a', 2)" in done.stdout and "('b', 1)" in done.stdout
    assert "batch tick#" in done.stderr  # one INFO line per batch


@pytest.fixture
def package_log_level() -> Iterator[None]:
    """`main` sets the package's log level, as a command should; tests put it back."""
    logger = logging.getLogger("reactive_spark")
    level = logger.level
    yield
    logger.setLevel(level)


@pytest.mark.usefixtures("package_log_level")
def test_graph_prints_the_lineage_in_every_format(sc: SparkContext, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["graph", APP, "--format", "json"]) == 0
    lineage = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in lineage["sources"]] == ["tick", "rerun"]
    assert len(lineage["streams"]) == 8
    assert main(["graph", APP]) == 0
    text = capsys.readouterr().out
    assert "tick (timer)" in text and "TailDependency(3, 3, 0)" in text and "(output)" in text
    assert main(["graph", f"{APP}:build", "--format", "mermaid"]) == 0
    mermaid = capsys.readouterr().out
    assert mermaid.startswith("flowchart LR") and "source_tick -.->" in mermaid
    assert main(["graph", APP, "--format", "dot"]) == 0
    dot = capsys.readouterr().out
    assert dot.startswith("digraph lineage {") and dot.rstrip().endswith("}")
