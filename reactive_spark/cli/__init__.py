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

import asyncio
import logging
from collections.abc import Sequence

from reactive_spark.backfill import BackfillConflictError
from reactive_spark.cli.arguments import parser
from reactive_spark.cli.backfilling import backfill
from reactive_spark.cli.graphing import graph
from reactive_spark.cli.local_cluster import cluster
from reactive_spark.cli.output import log_handler, print_error
from reactive_spark.cli.running import demo, run
from reactive_spark.cli.spark_start import SparkStartError
from reactive_spark.cluster import ClusterStartError
from reactive_spark.errors import InvalidArgumentError

__all__ = ["main", "parser"]


def error(exc: Exception) -> None:
    """The error as one red line on stderr (never wrapped, never read as markup)."""
    print_error(str(exc))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = parser().parse_args(argv)
    level = logging.INFO if args.verbose or args.command == "run" else logging.WARNING
    logging.basicConfig(
        level=logging.WARNING,
        format="%(message)s",
        handlers=[log_handler()],
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
