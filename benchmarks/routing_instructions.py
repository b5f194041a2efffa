"""Routing cost in CPU instructions, which a noisy machine does not change: the same
map -> filter -> merge as benchmarks/latency.py's routing run, into a bound stream whose batches
hold no Spark job (freezeHeap=True, a virtual clock), beside bare reactivex doing the same, each
counted by valgrind's callgrind in the same run. Prints instructions per source event for both
arms and their ratio. Each arm runs twice, with N and with no events, and the difference is
divided by N, so what starting and counting cost drops out; both arms assert what they delivered.

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
import time
from pathlib import Path

import reactivex
from _spark import local_spark
from pyspark import SparkContext
from reactivex import operators as ops
from reactivex.subject import Subject

from reactive_spark import StreamingContext, Time, VirtualClock

EVENTS = 10_000
SETTLE_SECONDS = 0.5


def instrument(state: str) -> None:
    """Turn callgrind's counting on or off in this process (it runs under valgrind).

    The command reaches valgrind between two of its time slices: the pause lets it land
    before what follows runs (what little runs meanwhile is in both runs, and drops out).
    """
    subprocess.run(
        ["callgrind_control", "-i", state, str(os.getpid())],
        check=True,
        text=True,
        capture_output=True,
    )
    time.sleep(SETTLE_SECONDS)


def bare(events: int) -> None:
    left: Subject[int] = Subject()
    right: Subject[int] = Subject()
    delivered = [0]

    def count(value: int) -> None:
        delivered[0] += 1

    routed = left.pipe(ops.map(lambda v: v * 2), ops.filter(lambda v: v % 4 == 0))
    reactivex.merge(routed, right).subscribe(count)
    instrument("on")
    for value in range(events // 2):
        left.on_next(value)
        right.on_next(value)
    instrument("off")
    assert delivered[0] == events * 3 // 4, delivered


async def route(sc: SparkContext, events: int, *, measured: bool) -> None:
    """One context routes `events` source events; counted if `measured`."""
    origin = Time(0)
    ssc = StreamingContext(sc, None, clock=VirtualClock(origin), freezeHeap=True)
    left: Subject[int] = Subject()
    right: Subject[int] = Subject()
    a = ssc.rxEventSource(left, "a")
    b = ssc.rxEventSource(right, "b")
    routed = a.map(lambda e: e.value * 2).filter(lambda e: e.value % 4 == 0).merge(b)
    delivered: list[int] = []
    routed.addListener(lambda event: delivered.append(1))
    ssc.queueStream([]).transform(lambda rdd: None).foreachRDD(lambda rdd: None).bind(routed)
    await ssc.start()
    if measured:
        instrument("on")
    for value in range(events // 2):
        left.on_next(value)
        right.on_next(value)
    await ssc.advanceTo(origin)  # returns once every accepted event has been processed
    if measured:
        instrument("off")
    accepted = ssc.processedThrough + 1  # every accepted event got an instanceId, from 0
    await ssc.stop(stopSparkContext=False)
    assert len(delivered) == events * 3 // 4, len(delivered)  # as bare reactivex's
    assert accepted == events * 5 // 2, accepted  # a, b, a's maps, their half, merged


async def ours(events: int) -> None:
    sc = local_spark("bench-routing-instructions")
    await route(sc, events, measured=False)  # what a first run does once is not counted
    await route(sc, events, measured=True)
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
    for arm in ("bare", "ours"):
        full, empty = counted(arm, EVENTS), counted(arm, 0)
        per_event[arm] = (full - empty) / EVENTS
    print(
        f"routing {EVENTS:,} source events through map/filter/merge, CPU instructions per source "
        f"event (callgrind): reactive-spark {per_event['ours']:,.0f} (to a bound stream whose "
        f"batches run no Spark job, freezeHeap=True), bare reactivex {per_event['bare']:,.0f}; "
        f"bare/ours {per_event['bare'] / per_event['ours']:.3f}"
    )


if __name__ == "__main__":
    if len(sys.argv) == 3:
        if sys.argv[1] == "bare":
            bare(int(sys.argv[2]))
        else:
            asyncio.run(ours(int(sys.argv[2])))
    else:
        main()
