"""Driving a virtual clock: instant by instant, each instant's batches done before the next.

A virtual-time run is a faithful simulation of a real run with an infinitely fast Spark: the
clock moves past an instant only when the batches of every event at or before it have
completed, so a listener, a producer driven by a timer or a file watcher at a later instant
sees every earlier batch done (docs/architecture.md).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reactive_spark.clock import VirtualClock
    from reactive_spark.scheduler import JobScheduler
    from reactive_spark.time import Time

__all__ = ["YIELD_EVERY", "advance"]

#: `advance` lets the loop run its other tasks every this many virtual instants.
YIELD_EVERY = 64


async def advance(clock: VirtualClock, scheduler: JobScheduler, target: Time) -> None:
    """Move `clock` to `target`, firing every timed action due on the way, in order.

    At each due instant the clock waits until the scheduler is idle (every event posted so far
    accepted and its batch done) before moving on; when it returns, every batch has completed.
    """
    await scheduler.idle()
    steps = 0
    while True:
        due = clock.nextDue()
        if due is None or due > target:
            break
        clock.advanceTo(due)
        if scheduler.busy:
            await scheduler.idle()
        steps += 1
        if steps % YIELD_EVERY == 0:
            await asyncio.sleep(0)
    clock.advanceTo(target)
    await scheduler.idle()
