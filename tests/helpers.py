"""Small helpers shared by the tests."""

from __future__ import annotations

import contextlib
import gc
import os
import queue
import signal
import subprocess
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark import SparkConf, SparkContext

from reactive_spark import (
    DStream,
    Duration,
    Event,
    StreamingContext,
    StreamingListener,
    Time,
    VirtualClock,
)
from reactive_spark.failures import SourceErrorInfo
from reactive_spark.jobs import BatchInfo, JobInfo


class Recorder(StreamingListener):
    """Records everything the scheduler reports."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.batches: list[BatchInfo] = []
        self.started: list[JobInfo] = []
        self.jobs: list[JobInfo] = []
        self.source_errors: list[SourceErrorInfo] = []

    def onEventFired(self, event: Event) -> None:
        self.events.append(event)

    def onBatchCompleted(self, batch: BatchInfo) -> None:
        self.batches.append(batch)

    def onJobStarted(self, job: JobInfo) -> None:
        self.started.append(job)

    def onJobCompleted(self, job: JobInfo) -> None:
        self.jobs.append(job)

    def onSourceError(self, error: SourceErrorInfo) -> None:
        self.source_errors.append(error)


def gather(stream: DStream[Any]) -> tuple[DStream[Any], list[tuple[Event, list[Any]]]]:
    """Attach an output collecting `(event, elements)`; returns the output and the list."""
    seen: list[tuple[Event, list[Any]]] = []
    output = stream.foreachRDD(lambda time, rdd, event: seen.append((event, rdd.collect())))
    return output, seen


def virtual(
    sc: Any, batch: Duration | None = None, start: Time | None = None, **options: Any
) -> StreamingContext:
    """A StreamingContext on a virtual clock starting at `start` (default: the epoch)."""
    return StreamingContext(sc, batch, clock=VirtualClock(start), **options)


async def ran(ssc: StreamingContext, until: Time, *, graceful: bool = False) -> None:
    """Start `ssc`, run it until `until` (raising any failure: `runUntil`), stop it."""
    await ssc.start()
    await ssc.runUntil(until)
    await ssc.stop(stopSparkContext=False, stopGracefully=graceful)


ROOT = Path(__file__).resolve().parent.parent


class ChildProcess:
    """`python -m <module> <args>` from the project root, in a process group of its own (so
    the driver and its JVM die together); its output lines wait in `lines`."""

    def __init__(self, module: str, *args: str, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.strip())
        self.lines.put("exited")

    def next_line(self, timeout: float = 120) -> str:
        return self.lines.get(timeout=timeout)

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=60)


def quiet_spark_context(appName: str, master: str = "local[2]") -> SparkContext:
    """A SparkContext for tests: quiet, on loopback, two cores at most, workers on this
    interpreter (the session's, and each child process's).

    The driver's JVM compiles with C1 only and collects serially: it starts about half a
    second sooner, which the crash tests pay for every child process they start, and their
    jobs are small."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    conf = (
        SparkConf()
        .setMaster(master)
        .setAppName(appName)
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.sql.shuffle.partitions", "2")
        .set("spark.cores.max", "2")
        .set("spark.executor.memory", "512m")
        .set("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    )
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    return sc


#: The examples (`examples/_logs.py` is what they share, not one of them).
EXAMPLE_FILES = sorted(path for path in (ROOT / "examples").glob("*.py") if path.name[0] != "_")


def command(*args: str, cwd: Path = ROOT, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`reactive-spark ARGS` in a subprocess, as a user runs it (120 columns wide)."""
    return subprocess.run(
        [sys.executable, "-m", "reactive_spark", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "120"},
    )


@contextlib.contextmanager
def cycles_of_ours() -> Iterator[list[str]]:
    """Yields a list that, after the block, names the objects of reactive_spark that the cyclic
    collector found unreachable meanwhile: left in a reference cycle, not freed by counting.

    Garbage of other libraries (py4j, asyncio, a previous test's threads) is not counted.
    """
    found: list[str] = []
    gc.collect()
    flags, already = gc.get_debug(), len(gc.garbage)
    gc.set_debug(flags | gc.DEBUG_SAVEALL)  # what a collection finds is kept in gc.garbage
    try:
        yield found
        gc.collect()
    finally:
        gc.set_debug(flags)
        garbage = gc.garbage[already:]
        del gc.garbage[already:]
    for thing in garbage:
        function = isinstance(thing, types.FunctionType)
        module = thing.__module__ if function else type(thing).__module__
        if module.startswith("reactive_spark"):
            found.append(thing.__qualname__ if function else type(thing).__qualname__)
    del garbage
