"""The command line: the `reactive-spark` argument parser and the values of its options.

`--until` takes an instant or a duration, `--from` and `--to` an instant, `--sources` names.
"""

from __future__ import annotations

import argparse
import math
import re
import time
from datetime import UTC, datetime

from reactive_spark.errors import InvalidArgumentError
from reactive_spark.lineage import FORMATS
from reactive_spark.time import Duration, Time, to_duration


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
        command.add_argument("--port", type=port, default=4040, help="console port (4040)")
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
    demo_command.add_argument("--days", type=positive_int, default=28, help="simulated days (28)")
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
        "--batch-duration", type=seconds, default=None, help="default timer period in seconds"
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
        "--batch-duration", type=seconds, default=None, help="batchDuration of the context"
    )

    cluster_command = commands.add_parser(
        "cluster", help="a Spark standalone master and worker on 127.0.0.1, until Ctrl-C"
    )
    cluster_command.add_argument(
        "--workdir", default="reactive-spark-cluster", help="where logs and executors' files go"
    )
    cluster_command.add_argument(
        "--cores", type=positive_int, default=2, help="the worker's cores (2)"
    )
    cluster_command.add_argument("--memory", default="1g", help="the worker's memory (1g)")

    graph_command = commands.add_parser("graph", help="print the lineage MODULE[:FUNC] builds")
    graph_command.add_argument("target", metavar="MODULE[:FUNC]")
    graph_command.add_argument("--format", choices=sorted(FORMATS), default="text")
    return top


def port(text: str) -> int:
    """`--port`: a TCP port, checked as the command line is read (before Spark starts).

    Examples:
        >>> port("4041")
        4041
    """
    try:
        number = int(text)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"must be an int from 0 to 65535, got {text!r}")
    return number


def positive_int(text: str) -> int:
    """`--days`, `--cores`: a positive int, checked as the command line is read.

    Examples:
        >>> positive_int("7")
        7
    """
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be a positive int, got {text!r}")
    return number


def seconds(text: str) -> float:
    """`--batch-duration`: seconds, at least a millisecond, checked as the command line is read.

    Examples:
        >>> seconds("0.5")
        0.5
    """
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number >= 0.001):
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds of at least 0.001, got {text!r}"
        )
    return number


def until(text: str) -> Time | Duration:
    """`--until`: an ISO time (UTC unless it says), or a duration from now (`90s`, `10m`, `2h`).

    Examples:
        >>> until("90s")
        Duration(90000 ms)
        >>> until("2099-12-01T00:00").isoformat()
        '2099-12-01T00:00:00Z'
    """
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)", text.strip())
    if match:
        factor = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}[match[2]]
        span = float(match[1]) * factor
        if not (math.isfinite(span) and span >= 0.001):
            raise InvalidArgumentError(
                f"--until must be a duration of at least 1ms or a time, got {text!r}"
            )
        return to_duration(span, "--until")
    return instant(text, "--until", "an ISO time or a duration such as 90s, 10m, 2h")


def require_future(stop_at: Time | Duration | None, checkpoint: str | None) -> None:
    """Refuse an `--until` time that has passed, unless there is a checkpoint to catch up.

    Without one the run would stop as it starts; with one, a supervisor restarting the run
    after that time has it process what it missed, then stop.

    Examples:
        >>> require_future(until("2020-01-01"), None)
        Traceback (most recent call last):
        ...
        reactive_spark.errors.InvalidArgumentError: --until 2020-01-01T00:00:00Z has passed \
(and there is no --checkpoint to catch up): give a later time, or a duration such as 90s
        >>> require_future(until("2020-01-01"), "checkpoints/")
    """
    if (
        isinstance(stop_at, Time)
        and stop_at.milliseconds <= time.time() * 1000
        and checkpoint is None
    ):
        raise InvalidArgumentError(
            f"--until {stop_at.isoformat()} has passed (and there is no --checkpoint to catch "
            "up): give a later time, or a duration such as 90s"
        )


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


def require_past(last: Time) -> None:
    """Refuse a backfill's `--to` after now: the live run fires what comes.

    A backfilled batch the live run then runs again is written twice (beside it, as another
    batch of that time), and its `foreachRDD` functions are called twice.

    Examples:
        >>> require_past(instant("2999-01-01", "--to"))
        Traceback (most recent call last):
        ...
        reactive_spark.errors.InvalidArgumentError: --to 2999-01-01T00:00:00Z is after now: a \
backfill re-runs a past range, and the live run fires what comes; give a --to that has passed
        >>> require_past(instant("2020-01-01", "--to"))
    """
    if last.milliseconds > time.time() * 1000:
        raise InvalidArgumentError(
            f"--to {last.isoformat()} is after now: a backfill re-runs a past range, and the "
            "live run fires what comes; give a --to that has passed"
        )


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
