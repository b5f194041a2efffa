"""`reactive-spark cluster`: a Spark standalone master and worker on 127.0.0.1, until Ctrl-C."""

from __future__ import annotations

import argparse
import signal
import time

from reactive_spark.cli.output import print_error, terminal
from reactive_spark.cluster import StandaloneCluster


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
            print_error(f"the cluster stopped by itself; logs in {running.workdir}/logs")
            return 1
    except KeyboardInterrupt:
        return 0
