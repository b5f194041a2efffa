"""The wheel a user installs works: built from this checkout, installed with its dependencies
into a fresh virtual environment, it carries the console's files and its type marker, and its
`reactive-spark demo` runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHES = shutil.ignore_patterns("__pycache__", "*.pyc")


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
    # built from a copy: building in the checkout rewrites its egg-info, which the other pytest
    # workers' importlib.metadata may be reading
    source = tmp_path / "source"
    shutil.copytree(ROOT / "reactive_spark", source / "reactive_spark", ignore=CACHES)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    dist = tmp_path / "dist"
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, source, cwd=tmp_path)
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
