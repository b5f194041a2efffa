"""A context whose SparkContext stops before it does, which a test runs in a child process.

`python -m tests.stopped_spark_app host|jvm` starts a context (its loop watched) on a
SparkContext of its own, runs a batch, and stops that SparkContext first: `host` as a host
shutting down does (PySpark's `sc.stop()`), `jvm` in the JVM alone, as Spark stops itself after
a fatal error (and then the context's stop is asked to stop Spark too). Then it stops the
context twice and prints, after `seen: `, what each stop did, whether `awaitTermination`
returned, and which of the library's threads were left, as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Awaitable
from typing import Any

from reactive_spark import StreamingContext, SystemClock

from .helpers import quiet_spark_context


def our_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("reactive-spark"))


async def outcome(step: Awaitable[Any]) -> str:
    """`"returned"`, or the name of what it raised and the first line of its message."""
    try:
        await step
    except BaseException as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return "returned"


async def main(how: str) -> None:
    sc = quiet_spark_context("stopped-spark-app", "local[1]")
    ssc = StreamingContext(sc, None, clock=SystemClock(), watchdog=True)
    pokes = ssc.manualSource("pokes")
    ran: list[int] = []
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: ran.append(rdd.count())).bind(pokes)
    await ssc.start()
    pokes.trigger(None)  # one batch; none runs while Spark is stopped (it would fail)
    deadline = asyncio.get_running_loop().time() + 60
    while not ran:
        if asyncio.get_running_loop().time() > deadline:
            raise SystemExit("the batch did not run")
        await asyncio.sleep(0.05)
    terminated = asyncio.ensure_future(ssc.awaitTermination())
    if how == "host":
        sc.stop()
    else:
        sc._jsc.sc().stop()  # type: ignore[union-attr]  # PySpark still holds the handle
    seen = {
        "threads before": our_threads(),
        "stop": await outcome(ssc.stop(stopSparkContext=how == "jvm")),
        "state": ssc.state,
        "awaitTermination": await outcome(asyncio.wait_for(terminated, 10)),
        "threads": our_threads(),
        "second stop": await outcome(asyncio.wait_for(ssc.stop(stopSparkContext=False), 10)),
        "threads after": our_threads(),
    }
    print("seen: " + json.dumps(seen), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
