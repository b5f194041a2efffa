"""Spark's own streaming examples (shipped in the pyspark wheel), ported mechanically (imports
and awaits: tests/porting.py, not hand-edited copies), print what they print on
pyspark.streaming, in the same test session, fed the same input: files moved in, a socket
server on 127.0.0.1, a queue.

Both runs are driven the same way: each group of input arrives in the middle of one batch
interval (of pyspark's epoch-aligned batches, or of reactive-spark's batches counted from its
zero time), so both put it in one batch. Outputs are compared without the time headers; batches
that printed no records are left out and, for the stateful example, runs of identical batches
count once, since how many batches pass between two inputs depends on timing, not on the
program.

The harness (not the examples) shares the session's SparkContext: `SparkContext(...)` in an
example returns it, and stopping it is a no-op while an example runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyspark
import pyspark.streaming
import pytest
from pyspark import SparkContext

import reactive_spark

from .porting import changed_lines, example_diff, port

EXAMPLES = Path(pyspark.__file__).parent / "examples" / "src" / "main" / "python" / "streaming"
TIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?(?:\+00:00)?")
DASHES = re.compile(r"^-{20,}$")


class LineServer:
    """A TCP server on a free loopback port; `send` writes lines to every connected client."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.clients: list[socket.socket] = []
        self.connected = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.clients.append(client)
            self.connected.set()

    def send(self, lines: list[str]) -> None:
        payload = "".join(f"{line}\n" for line in lines).encode()
        for client in self.clients:
            client.sendall(payload)

    def close(self) -> None:
        for client in self.clients:
            client.close()
        self.listener.close()


@dataclass
class Arm:
    """One run of an example: which implementation, and where its batches start."""

    ported: bool
    workdir: Path
    server: LineServer | None = None
    context: Any = None
    period: float = 1.0

    def phase_start(self) -> float:
        """Seconds since the epoch that batch intervals are counted from."""
        if self.ported:
            return float(self.context.zeroTime.milliseconds) / 1000
        return 0.0  # pyspark's batches fall on multiples of the batch duration

    def wait_for_mid_batch(self) -> None:
        """Sleep until 30-50% into a batch interval, and well inside a 200 ms block."""
        while True:
            now = time.time()
            phase = ((now - self.phase_start()) % self.period) / self.period
            if 0.3 <= phase <= 0.5 and 0.04 <= now % 0.2 <= 0.12:
                return
            time.sleep(0.002)


Feed = Callable[[Arm], None]


def socket_groups(*groups: list[str]) -> Feed:
    def feed(arm: Arm) -> None:
        assert arm.server is not None
        assert arm.server.connected.wait(60), "the receiver never connected"
        for group in groups:
            time.sleep(arm.period * 0.6)  # past the window of the previous group
            arm.wait_for_mid_batch()
            arm.server.send(group)
        time.sleep(arm.period * 1.6)  # its batch has run

    return feed


def moved_in_files(*contents: str) -> Feed:
    def feed(arm: Arm) -> None:
        watched, staging = arm.workdir / "in", arm.workdir / "staging"
        staging.mkdir(exist_ok=True)
        for number, text in enumerate(contents):
            time.sleep(arm.period * 0.6)  # past the window of the previous file
            (staging / f"part-{number}.txt").write_text(text)
            arm.wait_for_mid_batch()
            os.rename(staging / f"part-{number}.txt", watched / f"part-{number}.txt")
        time.sleep(arm.period * 1.6)  # its batch has run

    return feed


def nothing(arm: Arm) -> None:
    """queue_stream.py feeds and stops itself."""


@dataclass
class Example:
    name: str
    argv: Callable[[Arm], list[str]]
    feed: Feed
    period: float
    block_start: str  # a line starting each batch's output
    empty: str = r"$^"  # a batch printing this (lines joined) printed no records
    collapse: bool = False
    expect: list[str] = field(default_factory=list)  # printed somewhere, so both did work
    output_file: str | None = None


def socket_argv(arm: Arm) -> list[str]:
    assert arm.server is not None
    return ["127.0.0.1", str(arm.server.port)]


GROUPS = (["hello world hello", "a b c"], ["world spark", "a a"])

CASES = [
    Example(
        "hdfs_wordcount.py",
        lambda arm: [str(arm.workdir / "in")],
        moved_in_files("a b a\nc\n", "c c d\n"),
        1.0,
        r"^Time: ",
        expect=["('a', 2)", "('c', 2)"],
    ),
    Example(
        "network_wordcount.py",
        socket_argv,
        socket_groups(*GROUPS),
        1.0,
        r"^Time: ",
        expect=["('hello', 2)", "('spark', 1)"],
    ),
    Example(
        "network_wordjoinsentiments.py",
        socket_argv,
        socket_groups(["happy good good", "bad"], ["great awful awful"]),
        5.0,
        r"^Happiest topics",
        empty=r"^Happiest topics .*\(0 total\):$",
        expect=["good (4 happiness)", "great (4 happiness)", "awful (-6 happiness)"],
    ),
    Example(
        "queue_stream.py",
        lambda arm: [],
        nothing,
        1.0,
        r"^Time: ",
        expect=["(0, 100)"],
    ),
    Example(
        "recoverable_network_wordcount.py",
        lambda arm: [*socket_argv(arm), str(arm.workdir / "checkpoint"), "counts.txt"],
        socket_groups(*GROUPS),
        1.0,
        r"^Counts at time",
        empty=r"^Counts at time <time> \[\]",
        expect=["('hello', 2)", "Dropped 5 word(s) totally"],
        output_file="counts.txt",
    ),
    Example(
        "sql_network_wordcount.py",
        socket_argv,
        socket_groups(*GROUPS),
        1.0,
        r"^=========",
        expect=["|hello|    2|"],
    ),
    Example(
        "stateful_network_wordcount.py",
        socket_argv,
        socket_groups(*GROUPS),
        1.0,
        r"^Time: ",
        collapse=True,
        expect=["('hello', 3)", "('world', 3)"],
    ),
]


def normalize(text: str, example: Example, workdir: Path) -> list[list[str]]:
    """The batches an output shows: time headers and empty batches out (see module docs)."""
    starts, empty = re.compile(example.block_start), re.compile(example.empty, re.DOTALL)
    batches: list[list[str]] = [[]]
    for raw in text.replace(str(workdir), "<workdir>").splitlines():
        line = TIME.sub("<time>", raw)
        if DASHES.match(line) or not line.strip():
            continue
        if starts.match(line):
            batches.append([])
        batches[-1].append(line)
    printed = [
        batch
        for batch in batches
        if len(batch) > 1 and not empty.match("\n".join(batch))  # a header alone: no records
    ]
    if example.collapse:
        printed = [b for i, b in enumerate(printed) if i == 0 or b != printed[i - 1]]
    return printed


#: The loop each ported example's context started on, by `id` of the context.
LOOPS: dict[int, asyncio.AbstractEventLoop] = {}


@contextlib.contextmanager
def sharing(sc: SparkContext, workdir: Path) -> Iterator[None]:
    """Examples get the session's SparkContext and may not stop it; they run in `workdir`."""
    real_stop, real_legacy_stop = SparkContext.stop, pyspark.streaming.StreamingContext.stop
    real_factory, cwd = pyspark.SparkContext, os.getcwd()
    real_start = reactive_spark.StreamingContext.start

    async def start(self: reactive_spark.StreamingContext) -> None:
        LOOPS[id(self)] = asyncio.get_running_loop()  # where `stop` below runs its stop
        await real_start(self)

    def legacy_stop(self: Any, stopSparkContext: bool = True, stopGraceFully: bool = False) -> None:
        real_legacy_stop(self, False, stopGraceFully)

    class SharedSparkContext(SparkContext):
        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            return sc  # not an instance of this class: __init__ is not called

    # relative paths resolve against the JVM's working directory, not Python's
    local = sc._jvm.org.apache.hadoop.fs.FileSystem.getLocal(sc._jsc.hadoopConfiguration())
    jvm_cwd = local.getWorkingDirectory()
    pyspark.SparkContext = SharedSparkContext  # type: ignore[misc]
    SparkContext.stop = lambda self: None  # type: ignore[method-assign]
    pyspark.streaming.StreamingContext.stop = legacy_stop  # type: ignore[method-assign]
    reactive_spark.StreamingContext.start = start  # type: ignore[method-assign]
    os.chdir(workdir)
    local.setWorkingDirectory(sc._jvm.org.apache.hadoop.fs.Path(str(workdir)))
    try:
        yield
    finally:
        local.setWorkingDirectory(jvm_cwd)
        os.chdir(cwd)
        pyspark.SparkContext = real_factory  # type: ignore[misc]
        SparkContext.stop = real_stop  # type: ignore[method-assign]
        pyspark.streaming.StreamingContext.stop = real_legacy_stop  # type: ignore[method-assign]
        reactive_spark.StreamingContext.start = real_start  # type: ignore[method-assign]


def active(arm: Arm) -> Any:
    implementation = reactive_spark if arm.ported else pyspark.streaming
    return implementation.StreamingContext.getActive()


def stop(arm: Arm, context: Any) -> None:
    if not arm.ported:
        context.stop(False, True)
        return
    stopping = asyncio.run_coroutine_threadsafe(context.stop(False, True), LOOPS[id(context)])
    stopping.result(timeout=60)


def run(sc: SparkContext, example: Example, arm: Arm) -> tuple[str, str | None]:
    """Run one arm of an example; its standard output and its output file, if any."""
    source = (EXAMPLES / example.name).read_text()
    code = compile(port(source) if arm.ported else source, example.name, "exec")
    (arm.workdir / "in").mkdir(exist_ok=True)
    if example.name == "network_wordjoinsentiments.py":
        afinn = arm.workdir / "data" / "streaming" / "AFINN-111.txt"
        afinn.parent.mkdir(parents=True)
        afinn.write_text("happy 3\ngood 2\nbad -2\nawful -3\ngreat 4\n")
    failures: list[BaseException] = []

    def main() -> None:
        try:
            exec(code, {"__name__": "__main__", "__file__": str(EXAMPLES / example.name)})
        except BaseException as exc:
            failures.append(exc)

    printed = io.StringIO()
    with sharing(sc, arm.workdir), contextlib.redirect_stdout(printed):
        import sys

        argv = sys.argv
        sys.argv = [example.name, *example.argv(arm)]
        thread = threading.Thread(target=main, daemon=True)
        try:
            thread.start()
            for _ in range(600):
                arm.context = active(arm)
                if arm.context is not None or not thread.is_alive():
                    break
                time.sleep(0.05)
            example.feed(arm)
            if example.feed is not nothing and active(arm) is not None:
                stop(arm, arm.context)
            thread.join(timeout=60)
        finally:
            sys.argv = argv
    assert not thread.is_alive(), f"{example.name} did not end"
    assert not failures, f"{example.name} failed: {failures[0]!r}"
    output = None
    if example.output_file is not None:
        output = (arm.workdir / example.output_file).read_text()
    return printed.getvalue(), output


@pytest.mark.parametrize("example", CASES, ids=[case.name for case in CASES])
def test_a_spark_example_prints_the_same_ported(
    sc: SparkContext, tmp_path: Path, example: Example
) -> None:
    outputs = []
    for ported in (False, True):
        workdir = tmp_path / ("ported" if ported else "pyspark")
        workdir.mkdir()
        server = LineServer() if example.argv is not None else None
        try:
            arm = Arm(ported, workdir, server, period=example.period)
            printed, written = run(sc, example, arm)
        finally:
            if server is not None:
                server.close()
        outputs.append(
            (
                normalize(printed, example, workdir),
                None if written is None else normalize(written, example, workdir),
            )
        )
    (legacy, legacy_file), (ours, our_file) = outputs
    shown = "\n".join(line for batch in ours for line in batch)
    assert all(expected in shown for expected in example.expect), shown
    assert ours == legacy, f"pyspark.streaming:\n{legacy}\nreactive-spark:\n{ours}"
    assert our_file == legacy_file


def test_every_shipped_example_is_covered_and_ports_by_imports_and_awaits() -> None:
    shipped = sorted(path.name for path in EXAMPLES.glob("*.py") if path.name != "__init__.py")
    assert shipped == sorted(case.name for case in CASES)
    for name in shipped:
        source = (EXAMPLES / name).read_text()
        ported = port(source)
        assert "pyspark.streaming" not in ported
        assert changed_lines(source, ported) <= 8, name


def test_docs_show_each_examples_port_as_the_transformer_makes_it() -> None:
    porting = (Path(__file__).resolve().parent.parent / "docs" / "porting.md").read_text()
    for case in CASES:
        source = (EXAMPLES / case.name).read_text()
        assert example_diff(case.name, source) in porting, case.name
        assert f"| `{case.name}` | {changed_lines(source, port(source))} |" in porting
