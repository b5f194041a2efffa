"""`reactive-spark graph`: the lineage a program builds, printed; nothing runs."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from typing import Any

from reactive_spark.cli.program import build, load
from reactive_spark.cli.spark_start import spark
from reactive_spark.context import StreamingContext
from reactive_spark.lineage import render


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
