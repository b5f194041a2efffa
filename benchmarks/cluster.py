"""The daily/weekly pipeline and file-arrival lag on local[2] and on a standalone cluster on
loopback (a master and a worker with 2 cores, executors in JVMs of their own), in one run.

On each master: a plain PySpark loop and reactive-spark do the same 13 weeks of daily and
weekly jobs (outputs compared: same directories, same lines, on both masters), after a warm-up
week of each; then file arrival -> job start for a fileWatcher-bound textFileStream at its
defaults. Prints wall times, reactive/plain on each master, and cluster/local.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import _spark
import simulated_year
from _spark import local_spark, median, percentile
from latency import reactive_latency
from pyspark import SparkContext
from simulated_year import START, plain_year, reactive_year, summary

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

import _logs
from _logs import generate_logs

from reactive_spark.cluster import StandaloneCluster

DAYS = 91
WARM_UP_DAYS = 7


@dataclass
class Result:
    plain: float
    wall: float
    outputs: dict[str, int]
    lags: list[float]


async def measure(sc: SparkContext, workdir: Path, logs: Path) -> Result:
    for module in (_spark, _logs, simulated_year):  # its filters run on executors, by reference
        sc.addPyFile(str(module.__file__))
    plain_year(sc, logs, workdir / "warm-plain", WARM_UP_DAYS)
    await reactive_year(sc, logs, workdir / "warm-reactive", WARM_UP_DAYS)
    plain = plain_year(sc, logs, workdir / "plain", DAYS)
    wall, job_time = await reactive_year(sc, logs, workdir / "reactive", DAYS)
    ours, theirs = summary(workdir / "reactive"), summary(workdir / "plain")
    assert ours == theirs, (ours, theirs)  # both arms did the same work
    assert job_time.failed == 0, f"{job_time.failed} jobs failed"
    (workdir / "lag").mkdir()
    lags = await reactive_latency(sc, workdir / "lag")
    return Result(plain, wall, ours, lags)


async def main() -> None:
    root = Path(tempfile.mkdtemp("-cluster-bench"))
    logs = root / "logs"
    generate_logs(logs, START, DAYS, files_per_day=1)
    sc = local_spark("bench-cluster-local")
    local = await measure(sc, root / "local", logs)
    sc.stop()
    with StandaloneCluster(root / "cluster", cores=2, memory="1g") as cluster:
        sc = SparkContext(conf=cluster.conf("bench-cluster").set("spark.ui.enabled", "false"))
        sc.setLogLevel("ERROR")
        remote = await measure(sc, root / "on-cluster", logs)
        sc.stop()
    assert local.outputs == remote.outputs, (local.outputs, remote.outputs)
    print(
        f"daily/weekly pipeline, {DAYS} simulated days: {local.outputs['daily']} daily + "
        f"{local.outputs['weekly']} weekly outputs, equal on both masters and in both arms"
    )
    for name, result in (("local[2]", local), ("cluster", remote)):
        print(
            f"  {name:8} plain PySpark {result.plain:6.1f} s, reactive-spark {result.wall:6.1f} s"
            f" (ratio {result.wall / result.plain:.3f}); file -> job start median "
            f"{median(result.lags):.1f} ms, p90 {percentile(result.lags, 0.9):.1f} ms"
        )
    print(
        f"  cluster/local: pipeline {remote.wall / local.wall:.2f}x, "
        f"lag median {median(remote.lags) / median(local.lags):.2f}x"
    )


if __name__ == "__main__":
    asyncio.run(main())
