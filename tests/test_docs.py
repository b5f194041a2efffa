"""Every Python block in README.md and docs/*.md runs as printed, or says it is a fragment.

* A block whose first line is a comment saying "fragment" is compiled only (top-level `await`
  allowed): it shows part of a program, and says what it leaves out.
* A block defining `test_*` functions is a test module: all of them run in one pytest run, in
  an empty directory holding only the `conftest.py` and `pyproject.toml` docs/testing.md shows.
* Any other block is a complete program: it runs in a fresh Python process, in an empty
  directory, and must exit with status 0.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .helpers import EXAMPLE_FILES

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^(?P<indent>[ ]*)```python\n(?P<body>.*?)^(?P=indent)```", re.M | re.S)
FRAGMENT = re.compile(r"^#.*\bfragment\b", re.I)


@dataclass(frozen=True)
class Block:
    document: str
    line: int
    code: str

    @property
    def kind(self) -> str:
        first = self.code.lstrip().splitlines()[0] if self.code.strip() else ""
        if FRAGMENT.match(first):
            return "fragment"
        if re.search(r"^(async )?def test_", self.code, re.M):
            return "test"
        return "program"

    def __str__(self) -> str:
        return f"{self.document}:{self.line}"


def blocks() -> list[Block]:
    found = []
    for document in DOCUMENTS:
        text = document.read_text()
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            code = textwrap.dedent(
                "\n".join(
                    raw[len(match["indent"]) :] if raw.startswith(match["indent"]) else raw
                    for raw in match["body"].splitlines()
                )
            )
            found.append(Block(document.relative_to(ROOT).as_posix(), line, code))
    return found


ALL = blocks()


def of(kind: str) -> list[Block]:
    return [block for block in ALL if block.kind == kind]


def test_there_are_blocks_of_each_kind() -> None:
    assert of("program") and of("fragment") and of("test")


@pytest.mark.parametrize("block", of("fragment"), ids=str)
def test_a_fragment_is_valid_python(block: Block) -> None:
    compile(block.code, str(block), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


@pytest.mark.parametrize("block", of("program"), ids=str)
def test_a_complete_program_runs_as_printed(block: Block, tmp_path: Path) -> None:
    script = tmp_path / "program.py"
    script.write_text(block.code)
    environment = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=environment,
    )
    assert done.returncode == 0, f"{block} failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"


def shown_test_setup() -> tuple[str, str]:
    """The `conftest.py` and `pyproject.toml` docs/testing.md tells a user to write."""
    [conftest] = [
        block.code
        for block in ALL
        if block.document == "docs/testing.md" and block.code.startswith("# conftest.py")
    ]
    found = re.search(
        r"^```toml\n(# pyproject\.toml\n.*?)^```",
        (ROOT / "docs/testing.md").read_text(),
        re.M | re.S,
    )
    assert found, "docs/testing.md shows no pyproject.toml for pytest"
    return conftest, found[1]


def test_the_test_blocks_pass_under_pytest_set_up_as_the_docs_say(tmp_path: Path) -> None:
    """Each block of tests, as a test module of its own, in one pytest run in an empty
    directory holding only what docs/testing.md tells a user to write: its `sc` is that
    conftest's, its `tmp_path` pytest's, its `async def` tests pytest-asyncio's."""
    conftest, pyproject = shown_test_setup()
    (tmp_path / "conftest.py").write_text(conftest)
    (tmp_path / "pyproject.toml").write_text(pyproject)
    tests = of("test")
    for number, block in enumerate(tests):
        (tmp_path / f"test_doc_{number}.py").write_text(f"# {block}\n{block.code}")
    environment = {  # none of this session's pytest settings; its JVM options only speed it up
        **{name: value for name, value in os.environ.items() if not name.startswith("PYTEST")},
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-W",
            "error::pytest.PytestDeprecationWarning",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        env=environment,
    )
    counted = sum(len(re.findall(r"^(async )?def test_", block.code, re.M)) for block in tests)
    summary = re.search(rf"^{counted} passed in ", done.stdout, re.M)  # and nothing else
    assert done.returncode == 0 and summary, f"{done.stdout[-5000:]}\n{done.stderr[-3000:]}"


def _naming_rule() -> Any:
    """scripts/api_reference.py: the rule the API reference is built by, and checked against."""
    spec = importlib.util.spec_from_file_location(
        "api_reference", ROOT / "scripts/api_reference.py"
    )
    assert spec is not None and spec.loader is not None
    rule = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rule)
    return rule


RULE = _naming_rule()


@pytest.fixture(scope="module")
def api_reference(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The API reference page, built as `make docs` builds it."""
    site = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return (site / "api" / "index.html").read_text(encoding="utf-8")


def test_the_api_reference_builds_without_a_warning(api_reference: str) -> None:
    assert "reactive_spark.context.StreamingContext" in api_reference


def test_the_api_reference_shows_a_stream_as_users_call_it(api_reference: str) -> None:
    """PySpark's names and ours for users, not what the engine calls on a stream."""
    from pyspark.streaming import DStream as PySparkDStream

    from reactive_spark.dstream.base import DStream

    shown = set(re.findall(r'id="reactive_spark\.dstream\.base\.DStream\.(\w+)"', api_reference))
    pyspark = {name for name in dir(PySparkDStream) if not name.startswith("_")}
    pyspark |= RULE.PYSPARK_SNAKE_CASE  # set on each PySpark stream
    assert {"foreachRDD", "updateStateByKey", "is_cached", "tailWindow", "bind"} <= shown
    engine = {name for name in dir(DStream) if "_" in name.strip("_") and name not in pyspark}
    engine |= RULE.ENGINE_WORDS | {"follow_commits"}
    assert {"compute_rdd", "clear_metadata"} <= engine
    streams = re.findall(r'id="reactive_spark\.[\w.]*DStream\.(\w+)"', api_reference)
    assert "DirectLogInputDStream.positions" in api_reference  # the log section's streams too
    assert not set(streams) & engine
    # snake_case names are the engine's by the naming rule (camelCase for users, PySpark's own
    # kept); a lower-case word of ours is a decision: the API reference shows it to users
    ours = {name for name in shown - pyspark if name.islower()}
    assert ours == {
        "bind",
        "checkpointed",
        "expect",
        "expectation",
        "id",
        "name",
        "parents",
        "print",
    }


def _documented(ident: str) -> tuple[Any, list[str]]:
    """The module an API reference id is in, and the attribute path within it."""
    parts = ident.split(".")
    for end in range(len(parts), 0, -1):
        try:
            return importlib.import_module(".".join(parts[:end])), parts[end:]
        except ImportError:
            continue
    raise AssertionError(f"{ident} names no module")


def test_the_api_reference_shows_what_modules_export_and_no_engine_name(
    api_reference: str,
) -> None:
    """A module shows what its `__all__` lists; the context, streams, sources and listeners
    show no snake_case name but PySpark's own (theirs are camelCase, as PySpark's), and a
    lower-case word of ours on them is a decision listed here; no class shows an underscored
    name."""
    from pyspark import streaming as pyspark_streaming

    camel_case_api = tuple(_object_of(path) for path in sorted(RULE.CAMEL_CASE_API))
    pyspark = {
        name
        for kind in ("StreamingContext", "DStream", "StreamingListener")
        for name in dir(getattr(pyspark_streaming, kind))
    } | RULE.PYSPARK_SNAKE_CASE
    ids = set(re.findall(r'id="(reactive_spark\.[\w.]+)"', api_reference))
    assert len(ids) > 400 and "reactive_spark.time.Time.fromDatetime" in ids
    wrong, words = [], set()
    for ident in sorted(ids):
        module, path = _documented(ident)
        if not path:
            continue
        exports = getattr(module, "__all__", None)
        if exports is not None and path[0] not in exports:
            wrong.append(f"{ident}: not in {module.__name__}.__all__")
        owner = getattr(module, path[0])
        for name in path[1:]:
            if name.startswith("_"):
                wrong.append(f"{ident}: underscored")
            elif isinstance(owner, type) and issubclass(owner, camel_case_api):
                if name in pyspark:
                    pass
                elif RULE.SNAKE_CASE.fullmatch(name) or name in RULE.ENGINE_WORDS:
                    wrong.append(f"{ident}: the engine's name")
                elif name.islower():
                    words.add(name)
            owner = getattr(owner, name, None)
    assert wrong == []
    assert words == {
        # the context
        "backfill", "clock", "graph", "recovered", "serve", "state", "timer", "sources",
        # streams
        "bind", "checkpointed", "expect", "expectation", "id", "name", "parents", "print",
        "backlog", "positions",
        # sources
        "between", "coalesce", "delay", "fire", "merge", "overflow", "pipe", "post",
        "restart", "accepts", "ready", "app", "get", "routes", "event", "trigger", "kind",
        # the console's history of a run
        "batch", "batches", "deadlines", "events",
    }  # fmt: skip


def _imported_from_reactive_spark(code: str) -> set[tuple[str, str]]:
    return {
        (node.module or "", alias.name)
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("reactive_spark")
        for alias in node.names
    }


def _object_of(ident: str) -> Any:
    module, path = _documented(ident)
    found = module
    for name in path:
        found = getattr(found, name, None)  # an instance's attribute is on no class
    return found


def test_the_api_reference_documents_what_the_docs_and_examples_import(
    api_reference: str,
) -> None:
    """Each object the docs, the README and the examples import from reactive_spark, and each
    method they call on a context, has its entry (under the name imported, or where defined)."""
    ids = set(re.findall(r'id="(reactive_spark\.[\w.]+)"', api_reference))
    codes = [block.code for block in ALL] + [path.read_text() for path in EXAMPLE_FILES]
    imported = {pair for code in codes for pair in _imported_from_reactive_spark(code)}
    assert {("reactive_spark", "StreamingContext"), ("reactive_spark.cli", "main")} <= imported
    missing = []
    for module, name in sorted(imported):
        wanted = getattr(importlib.import_module(module), name)
        entries = (ident for ident in ids if ident.rsplit(".", 1)[-1] == name)
        if not any(_object_of(ident) is wanted for ident in entries):
            missing.append(f"{module}.{name}")
    assert missing == []
    called = {name for code in codes for name in re.findall(r"\bssc\.(\w+)", code)}
    assert {f"reactive_spark.context.StreamingContext.{name}" for name in called} - ids == set()
