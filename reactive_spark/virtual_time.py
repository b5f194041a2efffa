"""Driving a virtual clock (`advanceTo`, `runUntil`): instant by instant, batches done first.

A virtual-time run is a faithful simulation of a real run with an infinitely fast Spark: the
clock moves past an instant only when the batches of every event at or before it have
completed, so a listener, a producer driven by a timer or a file watcher at a later instant
sees every earlier batch done (docs/architecture.md). `VirtualTimeDriver` is what a context's
`advanceTo` and `runUntil` run.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from reactive_spark.clock import VirtualClock
from reactive_spark.errors import ContextStateError, InvalidArgumentError, JobFailedError
from reactive_spark.runtime import ACTIVE
from reactive_spark.time import to_time

if TYPE_CHECKING:
    from datetime import datetime

    from reactive_spark.failures import Failure, FailureLedger
    from reactive_spark.runtime import Runtime
    from reactive_spark.scheduler import JobScheduler
    from reactive_spark.time import Time

__all__ = ["YIELD_EVERY", "VirtualTimeDriver", "advance"]

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


class VirtualTimeDriver:
    """Moves one context's virtual clock, one call at a time (`advanceTo`, `runUntil`).

    The context's `runtime` gives its clock and state, its `scheduler` runs the batches, and
    its `failures` keeps those not returned yet.
    """

    def __init__(self, runtime: Runtime, scheduler: JobScheduler, failures: FailureLedger) -> None:
        self._runtime = runtime
        self._scheduler = scheduler
        self._failures = failures
        self._advancing = False

    async def advance_to(self, time: Time | datetime, action: str = "advanceTo") -> list[Failure]:
        """Move the clock to `time` (`advance`); the failures since the previous call returned.

        `action` is what the user called, for the errors.
        """
        target = to_time(time, "time")
        clock = self._runtime.clock
        if not isinstance(clock, VirtualClock):
            raise ContextStateError(f"{action} needs a StreamingContext with a VirtualClock")
        if self._runtime.state != ACTIVE:
            raise ContextStateError(
                f"{action} cannot advance: the StreamingContext is {self._runtime.state}"
            )
        if target < clock.now():
            raise InvalidArgumentError(
                f"time must not be before the clock's current time {clock.now().isoformat()}, "
                f"got {target.isoformat()}",
            )
        if self._advancing:
            raise ContextStateError(
                f"{action}: advanceTo or runUntil is already running on this context"
            )
        self._advancing = True
        try:
            await advance(clock, self._scheduler, target)
        finally:
            self._advancing = False
        return self._failures.take_unreturned()

    async def run_until(self, time: Time | datetime) -> None:
        """`advance_to(time)`, then raise `JobFailedError` with every failure, if any."""
        failures = await self.advance_to(time, "runUntil")
        if failures:
            raise JobFailedError(failures)
