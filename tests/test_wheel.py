"""The wheel a user installs works: built from this checkout, installed with its dependencies
into a fresh virtual environment, it carries the console's files and its type marker, and its
`reactive-spark demo` runs."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str | Path, cwd: Path, timeout: float = 600) -> str:
    done = subprocess.run(
        [str(arg) for arg in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "120", "PYTHONPATH": ""},
    )
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_the_built_wheel_installs_and_runs_the_demo(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, ROOT, cwd=tmp_path)
    [wheel] = dist.glob("reactive_spark-*.whl")
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    python = environment / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", wheel, cwd=tmp_path)

    installed = Path(
        run(
            python, "-c", "import reactive_spark; print(reactive_spark.__file__)", cwd=tmp_path
        ).strip()
    ).parent
    assert installed.is_relative_to(environment)  # not this checkout
    assert (installed / "py.typed").is_file()
    assert (installed / "spark-log4j2.properties").is_file()  # the command's quiet Spark
    for name in ("index.html", "console.js", "console.css"):
        assert (installed / "web" / "static" / name).is_file(), name

    table = run(
        environment / "bin" / "reactive-spark",
        "demo",
        "--days",
        "2",
        "--workdir",
        "demo",
        cwd=tmp_path,
    )
    [days] = [line for line in table.splitlines() if "days processed" in line]
    assert days.replace("│", " ").split()[-1] == "2"
    assert len(list((tmp_path / "demo" / "out").glob("daily-logs-*"))) == 2
