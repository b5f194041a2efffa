"""`reactive-spark run` and `reactive-spark demo`: streams running until they stop.

A program runs on the system clock with its console (`--ui`), a progress bar while it catches
up after a restart, and a graceful stop on SIGINT or SIGTERM; the demo runs on simulated days.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import signal
from typing import TYPE_CHECKING

from rich.console import Console as Terminal
from rich.table import Table

from reactive_spark.cli.arguments import require_future, until
from reactive_spark.cli.output import print_error, progress_bar, terminal
from reactive_spark.cli.program import build, load, on_path
from reactive_spark.cli.spark_start import quiet_spark, spark
from reactive_spark.clock import SystemClock
from reactive_spark.context import StreamingContext
from reactive_spark.demo import Demo, DemoSummary
from reactive_spark.errors import JobFailedError, ReactiveSparkError, StopError
from reactive_spark.time import Duration, Time

if TYPE_CHECKING:
    from reactive_spark.web import Console


async def demo(args: argparse.Namespace) -> int:
    """Run the daily/weekly logs demo with a progress bar, then print a summary table."""
    with progress_bar("simulated days") as progress:
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
        consoles: list[Console] = []

        async def serve() -> None:  # once the logs it reads are there: it starts the context
            consoles.append(await start_console(ssc, args))

        try:
            summary = await runner.run(ssc, serve if args.ui else None)
        finally:
            for console in consoles:
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
    table.add_column("value", justify="right", overflow="fold")  # a long path wraps, whole
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
        print_error(failure)


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
    require_future(stop_at, args.checkpoint)
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
    # from the start: a rollout's SIGTERM often comes while a restart catches up
    signals = StopSignals(ssc)
    try:
        console = None
        try:
            if args.ui:
                console = await start_console(ssc, args)  # starts ssc too
            else:
                await ssc.start()
        except ReactiveSparkError as exc:  # it cannot start as built: why, in one line
            print_error(f"the StreamingContext could not start: {exc}")
            await ssc.stop(stopSparkContext=True)  # Spark stops off the loop, as at every stop
            return 1
        deadline = ssc.clock.now() + stop_at if isinstance(stop_at, Duration) else stop_at
        shown = asyncio.ensure_future(catching_up(ssc)) if ssc.recovered else None
        failed = 0
        try:
            failed = await supervise(ssc, deadline, signals.stopping)
        finally:
            if shown is not None:
                shown.cancel()
                await asyncio.gather(shown, return_exceptions=True)
            if console is not None:
                await console.stop()
            try:
                await ssc.stop(stopSparkContext=True, stopGracefully=True)
            except StopError as exc:
                print_error(stop_failure(exc))
                failed += 1
        failed += await failed_while_stopping(ssc)
    finally:
        await signals.restore()
    return 1 if failed or signals.failed else 0


class StopSignals:
    """SIGINT or SIGTERM sets `stopping` (a graceful stop); a second one cancels what runs.

    A stop at once that fails (a batch stuck in the user's function is left in its thread) is
    printed as it ends and counted in `failed`. `restore` puts the previous handlers back,
    once every such stop has ended.
    """

    NUMBERS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, ssc: StreamingContext) -> None:
        self.stopping = asyncio.Event()
        self.failed = 0
        self._ssc = ssc
        self._escalations: set[asyncio.Task[None]] = set()
        self._loop = asyncio.get_running_loop()
        for number in self.NUMBERS:
            self._loop.add_signal_handler(number, self._requested)

    def _requested(self) -> None:
        if not self.stopping.is_set():
            terminal.print("stopping gracefully (again to stop at once)")
            self.stopping.set()
            return
        terminal.print("[yellow]stopping now: queued events are dropped, jobs cancelled")
        stop = self._ssc.stop(stopSparkContext=False, stopGracefully=False)
        escalation = self._loop.create_task(stop)
        self._escalations.add(escalation)
        escalation.add_done_callback(self._ended)

    def _ended(self, escalation: asyncio.Task[None]) -> None:
        self._escalations.discard(escalation)
        failure = None if escalation.cancelled() else escalation.exception()
        if failure is not None:
            print_error(stop_failure(failure))
            self.failed += 1

    async def restore(self) -> None:
        """Wait for the stops a second signal began, then restore the previous handlers."""
        await asyncio.gather(*self._escalations, return_exceptions=True)
        for number in self.NUMBERS:
            self._loop.remove_signal_handler(number)


def stop_failure(failure: BaseException) -> str:
    """What failed as the run stopped, in one line: each step and its error.

    The library's advice on each (stop the SparkContext, say) is the command's to follow: it
    stops Spark itself.
    """
    if not isinstance(failure, StopError):
        return f"stopping failed: {failure}"
    return "; ".join(f"{step} failed: {error}" for step, _, error in failure.failures)


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
                print_error(failure.failures[0].describe())
    finally:
        stop_requested.cancel()
    return failed


async def failed_while_stopping(ssc: StreamingContext) -> int:
    """How many batches the graceful stop let finish failed (each printed).

    `supervise` stops waiting when the stop begins; what fails after is still the run's.
    """
    failed = 0
    while True:
        try:
            await ssc.awaitTerminationOrTimeout(0)
        except JobFailedError as failure:
            print_error(failure.failures[0].describe())
            failed += 1
        else:
            return failed


async def catching_up(ssc: StreamingContext) -> None:
    """A progress bar while a restarted context works through what it missed.

    The run may stop meanwhile (a signal, `--until`): then it is cancelled. Missed events are
    posted in turn as room frees, so the total grows as they come: it is what is done plus
    what waits.
    """
    waiting = ssc.queueDepth
    if not waiting:
        return
    done = 0
    with progress_bar("catching up") as progress:
        task = progress.add_task("events", total=waiting)
        while waiting and ssc.state == "active":
            await asyncio.sleep(0.2)
            now = ssc.queueDepth
            done += max(0, waiting - now)
            waiting = now
            progress.update(task, completed=done, total=done + waiting)
        progress.update(task, completed=done, total=done)
