"""The `reactive-spark` command (also `python -m reactive_spark`): demo, run, backfill, graph...

    reactive-spark demo [--days N] [--ui] [--real-time]
    reactive-spark run MODULE[:FUNC] [--master M] [--conf K=V] [--py-files F] [--checkpoint DIR]
                       [--ui] [--until T]
    reactive-spark backfill MODULE[:FUNC] --from T1 --to T2 [--sources A,B] [--plan]
                       [--overwrite] [--master M] [--conf K=V] [--py-files F] [--checkpoint DIR]
    reactive-spark cluster [--workdir DIR] [--cores N] [--memory 1g]
    reactive-spark graph MODULE[:FUNC] [--format text|mermaid|dot|json]

`MODULE` is a dotted module name or a path to a `.py` file; `FUNC` (default `build`) builds the
graph on the StreamingContext it is given (it may be a coroutine function).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import importlib.util
import inspect
import logging
import os
import re
import secrets
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyspark
from pyspark import SparkConf, SparkContext
from rich.console import Console as Terminal
from rich.logging import RichHandler
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from reactive_spark.backfill import Backfill, BackfillConflictError
from reactive_spark.clock import SystemClock, VirtualClock
from reactive_spark.cluster import ClusterStartError, StandaloneCluster
from reactive_spark.context import StreamingContext
from reactive_spark.demo import Demo, DemoSummary
from reactive_spark.errors import InvalidArgumentError, JobFailedError, ReactiveSparkError
from reactive_spark.lineage import FORMATS, render
from reactive_spark.time import Duration, Time, to_duration

if TYPE_CHECKING:
    from reactive_spark.web import Console

__all__ = ["main"]

log = logging.getLogger("reactive_spark.cli")
terminal = Terminal(stderr=True)


# -- loading the user's program ---------------------------------------------------------------
def load(target: str) -> Callable[..., Any]:
    """The function `MODULE[:FUNC]` names (`FUNC` defaults to `build`), checked before Spark.

    A missing file or module, a module whose import raises, a missing function or one that
    cannot be called as `FUNC(ssc)` is an `InvalidArgumentError` of one line.

    Examples:
        >>> load("reactive_spark.time:Seconds").__name__
        'Seconds'
        >>> try:  # doctest: +NORMALIZE_WHITESPACE
        ...     load("reactive_spark.demo:generate_logs")
        ... except InvalidArgumentError as error:
        ...     print(error)
        reactive_spark.demo:generate_logs takes (directory, start, days, day=None);
        reactive-spark calls generate_logs(ssc) with a StreamingContext
    """
    module_name, _, function = target.partition(":")
    function = function or "build"
    if module_name.endswith(".py") or os.sep in module_name:
        path = Path(module_name).resolve()
        if not path.is_file():
            raise InvalidArgumentError(f"MODULE {module_name!r} is not a file")
        sys.path.insert(0, str(path.parent))
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        loader = spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        importing(module_name, lambda: loader.exec_module(module))
    else:
        sys.path.insert(0, os.getcwd())
        module = importing(module_name, lambda: importlib.import_module(module_name))
    found = getattr(module, function, None)
    if not callable(found):
        raise InvalidArgumentError(f"{module_name} has no function {function!r}")
    require_one_argument(found, f"{module_name}:{function}", function)
    return found  # type: ignore[no-any-return]


def importing(module_name: str, load_module: Callable[[], Any]) -> Any:
    """`load_module()`, an import failure being one line: the exception and where it was raised."""
    try:
        return load_module()
    except ModuleNotFoundError as exc:
        if exc.name is not None and f"{module_name}.".startswith(f"{exc.name}."):
            raise InvalidArgumentError(
                f"no module named {module_name!r} (MODULE is a dotted module name or a .py file)"
            ) from None
        raise InvalidArgumentError(f"importing {module_name} failed: {one_line(exc)}") from None
    except Exception as exc:
        raise InvalidArgumentError(f"importing {module_name} failed: {one_line(exc)}") from None


def one_line(exc: BaseException) -> str:
    """`Type: message`, and the file and line it was raised at (the innermost frame).

    Examples:
        >>> one_line(ValueError("no"))
        'ValueError: no'
    """
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def require_one_argument(function: Callable[..., Any], shown: str, name: str) -> None:
    """Raise `InvalidArgumentError` unless `function(ssc)` is a call it accepts."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without one: let the call tell
        return
    try:
        signature.bind(None)
    except TypeError:
        bare = signature.replace(
            parameters=[
                parameter.replace(annotation=inspect.Parameter.empty)
                for parameter in signature.parameters.values()
            ],
            return_annotation=inspect.Signature.empty,
        )
        raise InvalidArgumentError(
            f"{shown} takes {bare}; reactive-spark calls {name}(ssc) with a StreamingContext"
        ) from None


def on_path(pyFiles: Sequence[str]) -> None:
    """Put `--py-files` on this process's path (a `.py` file's folder, a `.zip` or `.egg` itself).

    As Spark does once it runs; the user's module may import from them before. A missing file
    is an `InvalidArgumentError`.
    """
    for path in pyFiles:
        if not Path(path).is_file():
            raise InvalidArgumentError(f"--py-files names no file: {path!r}")
        entry = Path(path).resolve()
        sys.path.insert(1, str(entry.parent if entry.suffix.lower() == ".py" else entry))


async def build(function: Callable[..., Any], ssc: StreamingContext) -> None:
    """Call the user's `build(ssc)`, awaiting it if it is a coroutine function."""
    result = function(ssc)
    if inspect.isawaitable(result):
        await result


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
    if master is not None:
        conf.setMaster(master)
    elif not conf.contains("spark.master"):
        conf.setMaster("local[*]")
    if not conf.contains("spark.app.name"):
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


class SparkStartError(ReactiveSparkError):
    """Spark could not start: its master cannot be reached, or does not register the application."""


def require_reachable(url: str, timeout: float = 5.0) -> None:
    """Raise `SparkStartError` unless a `spark://` master (one of its addresses) takes a connection.

    Spark would retry for a minute, printing stack traces, and then fail every batch.

    Examples:
        >>> require_reachable("spark://127.0.0.1:1")
        Traceback (most recent call last):
        ...
        reactive_spark.cli.SparkStartError: cannot reach the Spark master spark://127.0.0.1:1 \
(127.0.0.1:1: Connection refused): is it running, at that address?
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
SPARK_LOG4J = Path(__file__).with_name("spark-log4j2.properties")
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


def until(text: str) -> Time | Duration:
    """`--until`: an ISO time (UTC unless it says), or a duration from now (`90s`, `10m`, `2h`).

    Examples:
        >>> until("90s")
        Duration(90000 ms)
        >>> until("2026-12-01T00:00").isoformat()
        '2026-12-01T00:00:00Z'
    """
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)", text.strip())
    if match:
        factor = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}[match[2]]
        return to_duration(float(match[1]) * factor, "--until")
    return instant(text, "--until", "an ISO time or a duration such as 90s, 10m, 2h")


def instant(
    text: str, argument: str, expected: str = "an ISO time such as 2026-01-12 or 2026-01-12T06:00"
) -> Time:
    """`--from` / `--to`: an ISO time, UTC unless it says; else an error naming `argument`.

    Examples:
        >>> instant("2026-01-12", "--from").isoformat()
        '2026-01-12T00:00:00Z'
        >>> instant("monday", "--to")
        Traceback (most recent call last):
        ...
        reactive_spark.errors.InvalidArgumentError: --to must be an ISO time such as 2026-01-12 \
or 2026-01-12T06:00, got 'monday'
    """
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgumentError(f"{argument} must be {expected}, got {text!r}") from None
    return Time.fromDatetime(moment if moment.tzinfo else moment.replace(tzinfo=UTC))


def source_names(text: str | None) -> list[str] | None:
    """`--sources a,b`: the names, or None (every source) without it.

    Examples:
        >>> source_names("daily, weekly")
        ['daily', 'weekly']
    """
    if text is None:
        return None
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise InvalidArgumentError(f"--sources must be comma-separated source names, got {text!r}")
    return names


# -- commands ---------------------------------------------------------------------------------
async def demo(args: argparse.Namespace) -> int:
    """Run the daily/weekly logs demo with a progress bar, then print a summary table."""
    with Progress(
        TextColumn("[bold]simulated days"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=terminal,
        transient=False,
    ) as progress:
        days = progress.add_task("days", total=args.days)
        runner = Demo(
            days=args.days,
            workdir=args.workdir,
            real_time=args.real_time,
            on_day=lambda day: progress.update(days, completed=day),
        )
        with quiet_spark(not args.verbose):
            sc = runner.spark()
        ssc = runner.context(sc, runner.clock(), freezeHeap=True)
        console = await start_console(ssc, args) if args.ui else None
        try:
            summary = await runner.run(ssc)
        finally:
            if console is not None:
                await console.stop()
        progress.update(days, completed=summary.days)
    print_summary(summary)
    return 1 if summary.failures else 0


def print_summary(summary: DemoSummary) -> None:
    """The demo's summary as a table."""
    table = Table(
        title="reactive-spark demo: daily WARN/ERROR extracts, rolled up weekly", show_header=False
    )
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    table.add_row("days processed", str(summary.days))
    table.add_row("log lines generated", f"{summary.linesGenerated:,}")
    table.add_row("lines kept by the daily job", f"{summary.linesKeptDaily:,}")
    table.add_row("weekly roll-ups", str(summary.weeklyRollups))
    table.add_row("ERROR lines in the roll-ups", f"{summary.weeklyErrors:,}")
    table.add_row("failed jobs", str(len(summary.failures)))
    table.add_row("outputs", str(summary.outputs))
    table.add_row("wall time", f"{summary.seconds:.1f} s")
    Terminal().print(table)
    for failure in summary.failures:
        terminal.print(f"[red]{failure}")


async def start_console(ssc: StreamingContext, args: argparse.Namespace) -> Console:
    """Serve the console `--ui` asks for, behind a fresh token, and print its login URL.

    As Jupyter does, the token is in the printed URL only (the page keeps it in the tab), never
    in the log. `--insecure` serves it without a token (needed on a non-loopback `--host`).
    """
    from reactive_spark.web import Console  # noqa: PLC0415 (aiohttp, when asked for)

    token = None if args.insecure else secrets.token_urlsafe(24)
    console = await Console(ssc, args.host, args.port, token=token, insecure=args.insecure).start()
    terminal.print(f"console: [link]{console.loginUrl}[/link]", soft_wrap=True)
    return console


async def run(args: argparse.Namespace) -> int:
    """Run a user's program on the system clock until it stops, `--until`, SIGINT or SIGTERM."""
    # the command line, the module and its function first: a mistake answers before Spark starts
    stop_at = None if args.until is None else until(args.until)
    py_files = [path for paths in args.py_files for path in paths.split(",") if path]
    on_path(py_files)  # the module may import from them, as its executors will
    function = load(args.target)
    sc = spark(args.master, args.target, args.conf, py_files, quiet=not args.verbose)
    # the command owns its process: the heap it starts with stays out of the collector's way
    ssc = StreamingContext(
        sc,
        args.batch_duration,
        clock=SystemClock(),
        checkpoint=args.checkpoint,
        freezeHeap=True,
    )
    await build(function, ssc)
    console = None
    if args.ui:
        console = await start_console(ssc, args)  # starts ssc too
    else:
        await ssc.start()
    if ssc.recovered:
        await catching_up(ssc)
    deadline = ssc.clock.now() + stop_at if isinstance(stop_at, Duration) else stop_at
    stopping = asyncio.Event()
    unhandle = on_stop_signals(ssc, stopping)
    try:
        failed = await supervise(ssc, deadline, stopping)
    finally:
        if console is not None:
            await console.stop()
        await ssc.stop(stopSparkContext=True, stopGracefully=True)
        unhandle()
    return 1 if failed else 0


async def backfill(args: argparse.Namespace) -> int:
    """Re-run what a program's sources would have fired over `--from`..`--to`, or plan it."""
    # the command line, the module and its function first: a mistake answers before Spark starts
    first, last = instant(args.start, "--from"), instant(args.end, "--to")
    if first > last:
        raise InvalidArgumentError(
            f"--from must not be after --to, got --from {args.start!r}, --to {args.end!r}"
        )
    names = source_names(args.sources)
    py_files = [path for paths in args.py_files for path in paths.split(",") if path]
    on_path(py_files)
    function = load(args.target)
    settings = [*args.conf, "spark.ui.enabled=false"] if args.plan else args.conf
    master = "local[1]" if args.plan and args.master is None else args.master
    sc = spark(master, f"backfill {args.target}", settings, py_files, quiet=not args.verbose)
    ssc = StreamingContext(sc, args.batch_duration, clock=VirtualClock(first), freezeHeap=True)
    with contextlib.redirect_stdout(sys.stderr) if args.plan else contextlib.nullcontext():
        await build(function, ssc)
    try:
        planned = Backfill(ssc, first, last, names, overwrite=args.overwrite)
    except InvalidArgumentError as exc:
        message = str(exc)
        named = f"--{message}" if message.startswith("sources ") else message
        raise InvalidArgumentError(named) from None
    if args.plan:
        for batch in planned.batches:
            print(batch)
        return 0
    with backfill_progress(len(planned.batches)) as progress:
        report = await ssc.backfill(
            first,
            last,
            names,
            overwrite=args.overwrite,
            checkpoint=args.checkpoint,
            progress=progress,
        )
    for failure in report.failures:
        terminal.print(f"[red]{failure.describe()}")
    sources = sorted({batch.source for batch in report.batches})
    print(
        f"backfilled {len(report.batches)} batches of {', '.join(sources) or 'no source'} "
        f"from {first.isoformat()} to {last.isoformat()} in {report.seconds:.1f} s"
        f"{f', {len(report.failures)} failed' if report.failures else ''}",
        flush=True,
    )
    return 1 if report.failures else 0


@contextlib.contextmanager
def backfill_progress(total: int) -> Iterator[Callable[[int, int, datetime], None]]:
    """A progress bar on a terminal; elsewhere a plain line at every tenth of the batches."""
    if terminal.is_terminal:
        with Progress(
            TextColumn("[bold]backfilling"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=terminal,
        ) as bar:
            task = bar.add_task("", total=total)
            yield lambda done, _, at: bar.update(
                task, completed=done, description=Time.fromDatetime(at).isoformat()
            )
        return
    shown = [0]

    def line(done: int, total: int, at: datetime) -> None:
        if done * 10 // max(total, 1) > shown[0] * 10 // max(total, 1) or done == total:
            shown[0] = done
            terminal.print(
                f"backfill: {done}/{total} batches, through {Time.fromDatetime(at).isoformat()}",
                highlight=False,
            )

    yield line


def on_stop_signals(ssc: StreamingContext, stopping: asyncio.Event) -> Callable[[], None]:
    """SIGINT or SIGTERM sets `stopping` (a graceful stop); a second one cancels what runs.

    Returns the function that restores the previous handlers.
    """
    loop = asyncio.get_running_loop()
    escalations: set[asyncio.Task[None]] = set()

    def requested() -> None:
        if stopping.is_set():
            terminal.print("[yellow]stopping now: queued events are dropped, jobs cancelled")
            escalation = loop.create_task(ssc.stop(stopSparkContext=False, stopGracefully=False))
            escalations.add(escalation)
            escalation.add_done_callback(escalations.discard)
            return
        terminal.print("stopping gracefully (again to stop at once)")
        stopping.set()

    numbers = (signal.SIGINT, signal.SIGTERM)
    for number in numbers:
        loop.add_signal_handler(number, requested)

    def restore() -> None:
        for number in numbers:
            loop.remove_signal_handler(number)

    return restore


async def supervise(ssc: StreamingContext, deadline: Time | None, stopping: asyncio.Event) -> int:
    """Wait until `ssc` terminates, `stopping` is set or `deadline`; return failures printed."""
    failed = 0
    stop_requested = asyncio.ensure_future(stopping.wait())
    try:
        while not stopping.is_set():
            timeout = None
            if deadline is not None:
                timeout = max(0.0, (deadline - ssc.clock.now()).totalSeconds())
            termination = asyncio.ensure_future(ssc.awaitTerminationOrTimeout(timeout))
            await asyncio.wait({termination, stop_requested}, return_when=asyncio.FIRST_COMPLETED)
            if not termination.done():
                termination.cancel()
                break
            try:
                if termination.result() or deadline is not None:
                    break
            except JobFailedError as failure:
                failed += 1
                terminal.print(f"[red]{failure.failures[0].describe()}")
    finally:
        stop_requested.cancel()
    return failed


async def catching_up(ssc: StreamingContext) -> None:
    """A progress bar while a restarted context works through what it missed."""
    total = ssc.queueDepth
    if not total:
        return
    with Progress(
        TextColumn("[bold]catching up"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=terminal,
    ) as progress:
        task = progress.add_task("events", total=total)
        while ssc.queueDepth and ssc.state == "active":
            progress.update(task, completed=total - ssc.queueDepth)
            await asyncio.sleep(0.2)
        progress.update(task, completed=total)


def cluster(args: argparse.Namespace) -> int:
    """Run a standalone master and worker on 127.0.0.1 until Ctrl-C or SIGTERM (or one exits)."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop both on SIGTERM as well
    try:
        with StandaloneCluster(args.workdir, cores=args.cores, memory=args.memory) as running:
            print(f"master: {running.masterUrl}", flush=True)
            terminal.print(
                f"web UI: [link]{running.masterUiUrl}[/link]; run a program on it with "
                f"[bold]reactive-spark run app.py --master {running.masterUrl}[/bold]; "
                "stop with Ctrl-C"
            )
            while len(running.pids) == 2:
                time.sleep(0.5)
            terminal.print(f"[red]the cluster stopped by itself; logs in {running.workdir}/logs")
            return 1
    except KeyboardInterrupt:
        return 0


def graph(args: argparse.Namespace) -> int:
    """Print the lineage a program builds; nothing runs."""
    function = load(args.target)  # before Spark: a mistake answers at once

    async def describe() -> dict[str, Any]:
        sc = spark(
            "local[1]", f"graph {args.target}", ["spark.ui.enabled=false"], quiet=not args.verbose
        )
        ssc = StreamingContext(sc, 1)
        with contextlib.redirect_stdout(sys.stderr):  # stdout is the lineage's alone
            await build(function, ssc)
        return ssc.graph.describe(ssc.sources)

    print(render(asyncio.run(describe()), args.format))
    return 0


# -- the command line -------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    """The `reactive-spark` argument parser."""
    top = argparse.ArgumentParser(
        prog="reactive-spark",
        description="Event-driven PySpark: run the demo, your program, or print its lineage.",
    )
    top.add_argument(
        "-v", "--verbose", action="store_true", help="log every batch (INFO), and Spark as it logs"
    )
    commands = top.add_subparsers(dest="command", required=True)

    def console_options(command: argparse.ArgumentParser) -> None:
        command.add_argument("--ui", action="store_true", help="serve the web console meanwhile")
        command.add_argument("--host", default="127.0.0.1", help="console host (127.0.0.1)")
        command.add_argument("--port", type=int, default=4040, help="console port (4040)")
        command.add_argument(
            "--insecure",
            action="store_true",
            help="serve the console without a token (anyone who reaches it may view and fire)",
        )

    def spark_options(command: argparse.ArgumentParser) -> None:
        command.add_argument(
            "--master", default=None, help="Spark master (spark-submit's, else local[*])"
        )
        command.add_argument(
            "--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark property"
        )
        command.add_argument(
            "--py-files",
            action="append",
            default=[],
            metavar="FILES",
            help="comma-separated .py/.zip/.egg files shipped to the executors",
        )

    demo_command = commands.add_parser(
        "demo", help="the daily/weekly logs job on generated files, on simulated days"
    )
    demo_command.add_argument("--days", type=int, default=28, help="simulated days (28)")
    demo_command.add_argument(
        "--real-time", action="store_true", help="a simulated day per second of the system clock"
    )
    demo_command.add_argument(
        "--workdir", default="reactive-spark-demo", help="where logs and outputs go"
    )
    console_options(demo_command)

    run_command = commands.add_parser("run", help="run MODULE[:FUNC] on a StreamingContext")
    run_command.add_argument("target", metavar="MODULE[:FUNC]")
    spark_options(run_command)
    run_command.add_argument("--checkpoint", default=None, help="checkpoint directory")
    run_command.add_argument(
        "--batch-duration", type=float, default=None, help="default timer period in seconds"
    )
    run_command.add_argument(
        "--until", default=None, help="stop at this ISO time, or after 90s / 10m / 2h"
    )
    console_options(run_command)

    backfill_command = commands.add_parser(
        "backfill",
        help="re-run what MODULE[:FUNC]'s sources would have fired over a past range",
        description="Re-run, on a virtual clock, the events the program's sources would have "
        "fired from --from to --to (timers; file watchers by modification time), with every "
        "stream that depends on them. Outputs of those batch times are replaced atomically; the "
        "live run's checkpoint is not touched.",
    )
    backfill_command.add_argument("target", metavar="MODULE[:FUNC]")
    backfill_command.add_argument(
        "--from", dest="start", required=True, metavar="T1", help="first instant (ISO, UTC)"
    )
    backfill_command.add_argument(
        "--to", dest="end", required=True, metavar="T2", help="last instant, included (ISO, UTC)"
    )
    backfill_command.add_argument(
        "--sources", default=None, metavar="A,B", help="the sources to backfill (all)"
    )
    backfill_command.add_argument(
        "--plan", action="store_true", help="print the batches it would run; run nothing"
    )
    backfill_command.add_argument(
        "--overwrite",
        action="store_true",
        help="run batches that exactly-once state (aggregateExactlyOnce) committed already",
    )
    spark_options(backfill_command)
    backfill_command.add_argument(
        "--checkpoint", default=None, help="the backfill's own checkpoint directory (new)"
    )
    backfill_command.add_argument(
        "--batch-duration", type=float, default=None, help="batchDuration of the context"
    )

    cluster_command = commands.add_parser(
        "cluster", help="a Spark standalone master and worker on 127.0.0.1, until Ctrl-C"
    )
    cluster_command.add_argument(
        "--workdir", default="reactive-spark-cluster", help="where logs and executors' files go"
    )
    cluster_command.add_argument("--cores", type=int, default=2, help="the worker's cores (2)")
    cluster_command.add_argument("--memory", default="1g", help="the worker's memory (1g)")

    graph_command = commands.add_parser("graph", help="print the lineage MODULE[:FUNC] builds")
    graph_command.add_argument("target", metavar="MODULE[:FUNC]")
    graph_command.add_argument("--format", choices=sorted(FORMATS), default="text")
    return top


def error(exc: Exception) -> None:
    """The error as one red line on stderr (never wrapped, never read as markup)."""
    terminal.print(str(exc), style="red", markup=False, highlight=False, soft_wrap=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = parser().parse_args(argv)
    level = logging.INFO if args.verbose or args.command == "run" else logging.WARNING
    logging.basicConfig(
        level=logging.WARNING,
        format="%(message)s",
        handlers=[RichHandler(console=terminal, show_path=False)],
    )
    logging.getLogger("reactive_spark").setLevel(level)
    try:
        if args.command == "graph":
            return graph(args)
        if args.command == "cluster":
            return cluster(args)
        command = {"demo": demo, "backfill": backfill}.get(args.command, run)
        return asyncio.run(command(args))
    except InvalidArgumentError as exc:
        error(exc)
        return 2
    except BackfillConflictError as exc:
        error(exc)
        return 1
    except (ClusterStartError, SparkStartError) as exc:
        error(exc)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
