"""Starting Spark for the command: the SparkContext, a reachable master, a quiet JVM.

A standalone master must take the connection and register the application; the JVM Spark
starts logs errors only, its stderr read for the two lines that tell of the registration.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyspark
from pyspark import SparkConf, SparkContext

from reactive_spark.errors import InvalidArgumentError, ReactiveSparkError

#: Set by spark-submit for the Python program it starts: the port of its JVM's gateway.
SUBMITTED = "PYSPARK_GATEWAY_PORT"


def spark(
    master: str | None,
    name: str,
    settings: Sequence[str] = (),
    pyFiles: Sequence[str] = (),
    quiet: bool = True,
) -> SparkContext:
    """A SparkContext: on `master`, else the one spark-submit gave, else `local[*]`.

    `settings` are `KEY=VALUE` Spark properties (`--conf`); `pyFiles` are shipped to the
    executors (`--py-files`: `.py`, `.zip` or `.egg` files, see `on_path`).
    `quiet` (the command's default, but for `-v`): Spark logs errors only (`quiet_spark`).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = SparkConf().set("spark.ui.showConsoleProgress", "false")
    # under spark-submit, its JVM holds --master, --name and --conf: the SparkContext reads them
    # as it connects, so only what this command was told is set here
    submitted = SUBMITTED in os.environ
    if master is not None:
        conf.setMaster(require_master(master))
    elif not submitted:
        conf.setMaster("local[*]")
    if not submitted:
        conf.setAppName(name)
    for setting in settings:
        key, equals, value = setting.partition("=")
        if not equals or not key.strip():
            raise InvalidArgumentError(f"--conf must be KEY=VALUE, got {setting!r}")
        conf.set(key.strip(), value)
    url = conf.get("spark.master") or ""
    standalone = url.startswith("spark://")
    if standalone:
        require_reachable(url)
    with quiet_spark(quiet) as output:
        if standalone and output is not None:
            sc = registered(conf, url, output)
        else:
            sc = SparkContext.getOrCreate(conf)
    if quiet:
        sc.setLogLevel("ERROR")
    for path in pyFiles:
        sc.addPyFile(path)
    return sc


def require_master(master: str) -> str:
    """`master` if Spark takes it as a master URL, else raise `InvalidArgumentError`.

    Spark's own check comes from a JVM that exits with its stack trace, before Python's.

    Examples:
        >>> require_master("local[2]")
        'local[2]'
        >>> require_master("local[*, 3]")
        'local[*, 3]'
        >>> require_master("bogus://x")
        Traceback (most recent call last):
        ...
        reactive_spark.errors.InvalidArgumentError: --master must be yarn or start with \
local, spark:// or k8s:// (Spark's rule), got 'bogus://x'
    """
    if master != "yarn" and not master.startswith(("local", "spark://", "k8s://")):
        raise InvalidArgumentError(
            "--master must be yarn or start with local, spark:// or k8s:// (Spark's rule), "
            f"got {master!r}"
        )
    if master.startswith("local") and not _LOCAL_MASTER.fullmatch(master):
        raise InvalidArgumentError(
            "--master must be local, local[N], local[*], local[N,maxFailures] or "
            f"local-cluster[workers,cores,memoryMB] with N >= 1 (Spark's rule), got {master!r}"
        )
    return master


#: The local masters Spark takes (`SparkContext.createTaskScheduler`), with at least 1 thread.
_LOCAL_MASTER = re.compile(
    r"local"
    r"|local\[(?:0*[1-9][0-9]*|\*)(?:\s*,\s*[0-9]+)?\]"
    r"|local-cluster\[\s*[0-9]+\s*,\s*[0-9]+\s*,\s*[0-9]+\s*\]"
)


class SparkStartError(ReactiveSparkError):
    """Spark could not start: its master cannot be reached, or does not register the application."""


def require_reachable(url: str, timeout: float = 5.0) -> None:
    """Raise `SparkStartError` unless a `spark://` master (one of its addresses) takes a connection.

    Spark would retry for a minute, printing stack traces, and then fail every batch.

    Examples:
        >>> require_reachable("spark://127.0.0.1:1")
        Traceback (most recent call last):
        ...
        reactive_spark.cli.spark_start.SparkStartError: cannot reach the Spark master \
spark://127.0.0.1:1 (127.0.0.1:1: Connection refused): is it running, at that address?
    """
    reasons = []
    for address in url.removeprefix("spark://").split(","):
        host, _, port = address.strip().rpartition(":")
        if not host or not port.isdigit():
            raise InvalidArgumentError(f"a Spark master's URL is spark://HOST:PORT, got {url!r}")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout):
                return
        except OSError as exc:
            reasons.append(f"{address.strip()}: {exc.strerror or exc}")
    raise SparkStartError(
        f"cannot reach the Spark master {url} ({'; '.join(reasons)}): is it running, at that "
        "address?"
    )


#: How long a standalone master may take to register the application once Spark asked it to.
REGISTRATION_SECONDS = 10.0


def registered(conf: SparkConf, url: str, output: JvmOutput) -> SparkContext:
    """The SparkContext on the standalone master `url`, once it registered the application.

    The context is made in a thread: a master that takes the connection but does not register
    the application (not a Spark master, another Spark version, ...) within
    `REGISTRATION_SECONDS` of Spark asking it (as the JVM's stderr tells, `output`) is a
    `SparkStartError`; Spark itself would ask three times, 20 s apart, then stop the context
    it made, and every batch would fail.
    """
    made: list[SparkContext] = []
    failed: list[BaseException] = []

    def create() -> None:
        try:
            made.append(SparkContext.getOrCreate(conf))
        except BaseException as exc:  # raised in the caller's thread
            failed.append(exc)

    creating = threading.Thread(target=create, name="reactive-spark-context", daemon=True)
    creating.start()
    while creating.is_alive():
        creating.join(0.2)
        asked = output.asked
        waited = 0.0 if asked is None else time.monotonic() - asked
        if not output.registered.is_set() and waited > REGISTRATION_SECONDS:
            raise SparkStartError(
                f"the Spark master {url} took the connection but did not register this "
                f"application within {REGISTRATION_SECONDS:.0f} s: is that a Spark "
                f"{pyspark.__version__} master?"
            )
    if failed:
        raise failed[0]
    return made[0]


#: Spark's logging under the command: errors only, and two marked lines (see the file).
SPARK_LOG4J = Path(__file__).parents[1] / "spark-log4j2.properties"
#: What the JVM prints on stderr itself, whatever its logging says, and a user needs not see.
JVM_NOTICES = (b"WARNING: Using incubator modules:",)
#: How `spark-log4j2.properties` marks the lines the command reads (and does not show).
MARK = b"reactive-spark-mark: "


class JvmOutput:
    """What the JVM's stderr said of the application's registration with a standalone master."""

    def __init__(self) -> None:
        #: When Spark first asked the master to register the application (`time.monotonic()`).
        self.asked: float | None = None
        #: Set once the master registered it.
        self.registered = threading.Event()

    def read(self, mark: bytes) -> None:
        """Note what a marked line says."""
        if mark.startswith(b"Connecting to master") and self.asked is None:
            self.asked = time.monotonic()
        elif mark.startswith(b"Connected to Spark cluster"):
            self.registered.set()


@contextlib.contextmanager
def quiet_spark(quiet: bool = True) -> Iterator[JvmOutput | None]:
    """A JVM that Spark starts meanwhile logs errors only, and its startup notices are dropped.

    The JVM gets `spark-log4j2.properties` (unless `SPARK_SUBMIT_OPTS` names a configuration
    already) and, as its stderr, a pipe that a thread passes on to this process's stderr
    without the JVM's own notices (`JVM_NOTICES`) or the marked lines, which it reads into the
    `JvmOutput` yielded, for as long as the JVM lives. Only the command does this: it owns its
    process, its file descriptors and its environment. With `quiet` false (yielding None), or
    with a JVM running already, Spark prints what it prints.

    Examples:
        >>> with quiet_spark() as output:
        ...     sc = SparkContext.getOrCreate()  # the doctests' context: no JVM starts here
        >>> output.asked is None
        True
    """
    if not quiet:
        yield None
        return
    options = os.environ.get("SPARK_SUBMIT_OPTS", "")
    if "log4j2.configurationFile" not in options:
        os.environ["SPARK_SUBMIT_OPTS"] = (
            f"{options} -Dlog4j2.configurationFile={SPARK_LOG4J.as_uri()}".strip()
        )
    sys.stderr.flush()
    terminal_fd = os.dup(2)
    reading, writing = os.pipe()
    os.dup2(writing, 2)  # inherited by a JVM started now: its stderr
    os.close(writing)
    output = JvmOutput()
    threading.Thread(
        target=pass_on,
        args=(reading, terminal_fd, output),
        name="reactive-spark-jvm-stderr",
        daemon=True,
    ).start()
    try:
        yield output
    finally:
        sys.stderr.flush()
        os.dup2(terminal_fd, 2)  # this process writes to its stderr again; the JVM keeps the pipe
        if options:
            os.environ["SPARK_SUBMIT_OPTS"] = options
        else:
            os.environ.pop("SPARK_SUBMIT_OPTS", None)


def pass_on(reading: int, writing: int, output: JvmOutput) -> None:
    """Copy the JVM's lines from `reading` to `writing`, but its notices and marked lines.

    Marked lines go to `output`. It ends when the JVM exits (and the pipe with it).
    """
    with open(reading, "rb") as source, open(writing, "wb", buffering=0) as sink:
        for line in source:
            if line.startswith(MARK):
                output.read(line.removeprefix(MARK))
            elif not line.startswith(JVM_NOTICES):
                with contextlib.suppress(OSError):  # stderr closed: the pipe is drained still
                    sink.write(line)
