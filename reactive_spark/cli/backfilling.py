"""`reactive-spark backfill`: re-running a past range of a program's events, or planning it."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from datetime import datetime

from rich.progress import TextColumn

from reactive_spark.backfill import Backfill, BackfillConflictError
from reactive_spark.cli.arguments import instant, require_past, source_names
from reactive_spark.cli.output import print_error, progress_bar, terminal
from reactive_spark.cli.program import build, load, on_path
from reactive_spark.cli.spark_start import spark
from reactive_spark.clock import VirtualClock
from reactive_spark.context import StreamingContext
from reactive_spark.errors import InvalidArgumentError, ReactiveSparkError
from reactive_spark.time import Time


async def backfill(args: argparse.Namespace) -> int:
    """Re-run what a program's sources would have fired over `--from`..`--to`, or plan it."""
    # the command line, the module and its function first: a mistake answers before Spark starts
    first, last = instant(args.start, "--from"), instant(args.end, "--to")
    if first > last:
        raise InvalidArgumentError(
            f"--from must not be after --to, got --from {args.start!r}, --to {args.end!r}"
        )
    require_past(last)
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
    except ReactiveSparkError as exc:  # the program's functions, as it plans
        print_error(f"the backfill could not run: {exc}")
        return 1
    try:
        if args.plan:  # only what would run: a run that fails at once says so, as it would
            planned.check(args.checkpoint)
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
    except (InvalidArgumentError, BackfillConflictError):
        raise  # the command's own answers (exit statuses 2 and 1)
    except ReactiveSparkError as exc:  # it cannot start as built: why, in one line
        print_error(f"the backfill could not run: {exc}")
        return 1
    for failure in report.failures:
        print_error(failure.describe())
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
        with progress_bar("backfilling", TextColumn("{task.description}")) as bar:
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
