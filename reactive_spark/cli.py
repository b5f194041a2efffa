"""The `reactive-spark` command (also `python -m reactive_spark`): demo, run, cluster, graph.

    reactive-spark demo [--days N] [--ui] [--real-time]
    reactive-spark run MODULE[:FUNC] [--master M] [--conf K=V] [--py-files F] [--checkpoint DIR]
                       [--ui] [--until T]
    reactive-spark cluster [--workdir DIR] [--cores N] [--memory 1g]
    reactive-spark graph MODULE[:FUNC] [--format text|mermaid|dot|json]

`MODULE` is a dotted module name or a path to a `.py` file; `FUNC` (default `build`) builds the
graph on the StreamingContext it is given (it may be a coroutine function).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import inspect
import logging
import os
import re
import secrets
import signal
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark import SparkConf, SparkContext
from rich.console import Console as Terminal
from rich.logging import RichHandler
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from reactive_spark.clock import SystemClock
from reactive_spark.cluster import ClusterStartError, StandaloneCluster
from reactive_spark.context import StreamingContext
from reactive_spark.demo import Demo, DemoSummary
from reactive_spark.errors import InvalidArgumentError, JobFailedError
from reactive_spark.lineage import FORMATS, render
from reactive_spark.time import Time, to_duration
from reactive_spark.web import Console

__all__ = ["main"]

log = logging.getLogger("reactive_spark.cli")
terminal = Terminal(stderr=True)


# -- loading the user's program ---------------------------------------------------------------
def load(target: str) -> Callable[..., Any]:
    """The function `MODULE[:FUNC]` names (`FUNC` defaults to `build`).

    Examples:
        >>> load("reactive_spark.demo:generate_logs").__name__
        'generate_logs'
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
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
    else:
        sys.path.insert(0, os.getcwd())
        module = importlib.import_module(module_name)
    found = getattr(module, function, None)
    if not callable(found):
        raise InvalidArgumentError(f"{module_name} has no function {function!r}")
    return found  # type: ignore[no-any-return]


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
) -> SparkContext:
    """A quiet SparkContext: on `master`, else the one spark-submit gave, else `local[*]`.

    `settings` are `KEY=VALUE` Spark properties (`--conf`); `pyFiles` are shipped to the
    executors (`--py-files`: `.py`, `.zip` or `.egg` files, also put on this process's path).
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
    for path in pyFiles:
        if not Path(path).is_file():
            raise InvalidArgumentError(f"--py-files names no file: {path!r}")
    sc = SparkContext.getOrCreate(conf)
    sc.setLogLevel("ERROR")
    for path in pyFiles:
        sc.addPyFile(path)
    return sc


def until(text: str, now: Time) -> Time:
    """`--until`: an ISO time (UTC unless it says), or a duration from now (`90s`, `10m`, `2h`)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)", text.strip())
    if match:
        factor = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}[match[2]]
        return now + to_duration(float(match[1]) * factor, "--until")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgumentError(
            f"--until must be an ISO time or a duration such as 90s, 10m, 2h, got {text!r}"
        ) from None
    return Time.fromDatetime(moment if moment.tzinfo else moment.replace(tzinfo=UTC))


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
        ssc = runner.context(runner.spark(), runner.clock(), freezeHeap=True)
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
    token = None if args.insecure else secrets.token_urlsafe(24)
    console = await Console(ssc, args.host, args.port, token=token, insecure=args.insecure).start()
    terminal.print(f"console: [link]{console.loginUrl}[/link]", soft_wrap=True)
    return console


async def run(args: argparse.Namespace) -> int:
    """Run a user's program on the system clock until it stops, `--until`, SIGINT or SIGTERM."""
    py_files = [path for paths in args.py_files for path in paths.split(",") if path]
    sc = spark(args.master, args.target, args.conf, py_files)
    function = load(args.target)
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
    deadline = None if args.until is None else until(args.until, ssc.clock.now())
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

    async def describe() -> dict[str, Any]:
        sc = spark("local[1]", f"graph {args.target}")
        ssc = StreamingContext(sc, 1)
        await build(load(args.target), ssc)
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
    top.add_argument("-v", "--verbose", action="store_true", help="log every batch (INFO)")
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
    run_command.add_argument(
        "--master", default=None, help="Spark master (spark-submit's, else local[*])"
    )
    run_command.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark property"
    )
    run_command.add_argument(
        "--py-files",
        action="append",
        default=[],
        metavar="FILES",
        help="comma-separated .py/.zip/.egg files shipped to the executors",
    )
    run_command.add_argument("--checkpoint", default=None, help="checkpoint directory")
    run_command.add_argument(
        "--batch-duration", type=float, default=None, help="default timer period in seconds"
    )
    run_command.add_argument(
        "--until", default=None, help="stop at this ISO time, or after 90s / 10m / 2h"
    )
    console_options(run_command)

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
        command = demo if args.command == "demo" else run
        return asyncio.run(command(args))
    except InvalidArgumentError as exc:
        terminal.print(f"[red]{exc}")
        return 2
    except ClusterStartError as exc:
        terminal.print(f"[red]{exc}")
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
