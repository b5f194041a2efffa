"""Routing cost in CPU instructions, which a noisy machine does not change: the same
map -> filter -> merge as benchmarks/latency.py's routing run, on a virtual clock with
freezeHeap=True, into a bound stream (three of four source events start a batch on the worker
thread, and the batch runs no Spark job), beside bare reactivex routing the same events to a
counting subscriber, each counted by valgrind's callgrind in the same run. Ours is counted in
one burst, and paced: PACED_PAIRS pairs of events each virtual millisecond, each millisecond
waited for (`advanceTo`), so the worker takes one millisecond's events at a time, as in a live
run. Prints instructions per source event for each arm, bare/ours, and what pacing adds per
millisecond: the smaller runs, the hand-offs to the worker, and `advanceTo`'s wait for it
(which a live run on the system clock does not pay). Each arm routes once uncounted (what a
first run does once), then is counted twice, with N and with no events; the difference is
divided by N, so what starting and counting cost drops out. Every arm asserts what it
delivered.

Wall-clock figures on a shared 2-core machine move by a third from run to run; instruction
counts repeat to a tenth of a percent, so this is the figure to compare two commits by (with
PYTHONPATH pointing at each, one run each).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _spark import local_spark
from latency import bare_routing_pipeline, routing_pipeline
from pyspark import SparkContext

from reactive_spark import Milliseconds, StreamingContext, Time, VirtualClock

EVENTS = 10_000
PACED_PAIRS = 20  # a pair of source events each 50 us: 40,000 source events/s


def instrument(state: str) -> None:
    """Turn callgrind's counting on or off in this process (it runs under valgrind).

    `callgrind_control` returns once valgrind has switched.
    """
    subprocess.run(
        ["callgrind_control", "-i", state, str(os.getpid())],
        check=True,
        text=True,
        capture_output=True,
        timeout=60,
    )


def bare_route(events: int, *, measured: bool) -> None:
    """Bare reactivex routes `events` source events; counted if `measured`."""
    left, right, delivered = bare_routing_pipeline()
    if measured:
        instrument("on")
    for value in range(events // 2):
        left.on_next(value)
        right.on_next(value)
    if measured:
        instrument("off")
    assert delivered() == events * 3 // 4, delivered()  # what our bound stream gets


def bare(events: int) -> None:
    bare_route(events, measured=False)  # what a first run does once is not counted
    bare_route(events, measured=True)


async def route(sc: SparkContext, events: int, *, paced: bool, measured: bool) -> None:
    """One context routes `events` source events, paced or in one burst; counted if `measured`."""
    origin = Time(0)
    ssc = StreamingContext(sc, None, clock=VirtualClock(origin), freezeHeap=True)
    left, right, delivered = routing_pipeline(ssc)
    await ssc.start()
    if measured:
        instrument("on")
    for value in range(events // 2):
        left.on_next(value)
        right.on_next(value)
        if paced and (value + 1) % PACED_PAIRS == 0:
            await ssc.advanceTo(origin + Milliseconds((value + 1) // PACED_PAIRS))
    await ssc.advanceTo(ssc.clock.now())  # returns once every accepted event has been processed
    if measured:
        instrument("off")
    accepted = ssc.processedThrough + 1  # every accepted event got an instanceId, from 0
    await ssc.stop(stopSparkContext=False)
    assert delivered() == events * 3 // 4, delivered()  # as bare reactivex's
    assert accepted == events * 5 // 2, accepted  # a, b, a's maps, their half, merged


async def ours(events: int, *, paced: bool) -> None:
    sc = local_spark("bench-routing-instructions")
    # what a first run does once is not counted
    await route(sc, events, paced=paced, measured=False)
    await route(sc, events, paced=paced, measured=True)
    sc.stop()


def counted(arm: str, events: int) -> int:
    """Instructions callgrind counted while `arm` routed `events` source events."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--instr-atstart=no",
                f"--callgrind-out-file={out}",
                sys.executable,
                __file__,
                arm,
                str(events),
            ],
            capture_output=True,
            text=True,
            timeout=1200,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        total = re.search(r"^totals: (\d+)", out.read_text(), re.MULTILINE)
        assert total is not None, f"no total in callgrind's output for {arm}"
        return int(total.group(1))


def main() -> None:
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("routing instructions: skipped, valgrind is not installed (Debian: valgrind)")
        return
    per_event = {}
    for arm in ("bare", "ours", "ours-paced"):
        full, empty = counted(arm, EVENTS), counted(arm, 0)
        per_event[arm] = (full - empty) / EVENTS
    print(
        f"routing {EVENTS:,} source events through map/filter/merge in one burst, CPU "
        f"instructions per source event (callgrind): reactive-spark {per_event['ours']:,.0f} "
        "(to a bound stream, a batch for three of four events, none runs a Spark job; "
        "freezeHeap=True), bare "
        f"reactivex {per_event['bare']:,.0f} (routing to a subscriber alone); bare/ours "
        f"{per_event['bare'] / per_event['ours']:.3f}"
    )
    per_millisecond = (per_event["ours-paced"] - per_event["ours"]) * PACED_PAIRS * 2
    print(
        f"  paced, {PACED_PAIRS} pairs each millisecond: reactive-spark "
        f"{per_event['ours-paced']:,.0f} per source event; pacing adds {per_millisecond:,.0f} "
        "per millisecond (smaller runs, hand-offs to the worker, advanceTo's wait for it)"
    )


if __name__ == "__main__":
    if len(sys.argv) == 3:
        if sys.argv[1] == "bare":
            bare(int(sys.argv[2]))
        else:
            asyncio.run(ours(int(sys.argv[2]), paced=sys.argv[1] == "ours-paced"))
    else:
        main()
