"""Rate control for direct log streams (docs/logs.md, "Rate control").

`PIDRateEstimator` is Spark's estimator of the records per second a stream's batches sustain,
from how long they took (`backpressure=True`); `split_records` divides what a batch may read
among the partitions.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence

from reactive_spark.errors import InvalidArgumentError

__all__ = ["PIDRateEstimator", "require_rate", "split_records"]


class PIDRateEstimator:
    """A proportional-integral-derivative controller on a stream's rate, as Spark's.

    The error is the previous estimate minus the rate the latest batch was processed at; the
    integral part is the rate at which the records that made the batch wait
    (`schedulingDelay * processingRate`) would be read over one batch interval. After a batch
    of `numElements` records, with delays in milliseconds and `latestRate` the previous
    estimate (in records per second):

    ```text
    processingRate  = numElements / processingDelay * 1000
    error           = latestRate - processingRate
    historicalError = schedulingDelay * processingRate / batchInterval
    dError          = (error - latestError) / (seconds since the previous batch)
    rate            = max(minRate, latestRate - proportional * error
                                   - integral * historicalError - derivative * dError)
    ```

    The first batch only measures (`latestRate` becomes its processing rate, with no error):
    there is no estimate before a second batch. A batch without records or processing time,
    or not later than the previous one, changes nothing. Unlike Spark's, which takes one
    fixed batch interval, `compute` takes the interval of each batch: events, not a clock,
    decide when batches run. Thread-safe.

    Args:
        proportional: weight of the current error (>= 0; Spark's default 1.0).
        integral: weight of the accumulated error, seen as scheduling delay (>= 0; 0.2).
        derivative: weight of the error's rate of change (>= 0; 0.0).
        minRate: the lowest rate it estimates, in records per second (> 0; 100).

    Examples:
        >>> estimator = PIDRateEstimator()
        >>> estimator.compute(1_000, 1_000, 500, 0, 1_000) is None  # 2,000 records/s measured
        True
        >>> estimator.compute(2_000, 3_000, 1_000, 0, 1_000)  # 3,000 records/s: error -1,000
        3000.0
        >>> estimator.compute(3_000, 3_000, 1_500, 500, 1_000)  # 2,000/s, waited 500 ms
        1800.0
        >>> estimator.latestRate
        1800.0
    """

    def __init__(
        self,
        proportional: float = 1.0,
        integral: float = 0.2,
        derivative: float = 0.0,
        minRate: float = 100.0,
    ) -> None:
        for name, value in (
            ("proportional", proportional),
            ("integral", integral),
            ("derivative", derivative),
        ):
            if _number(value) is None or value < 0:
                raise InvalidArgumentError(f"{name} must be a number >= 0, got {value!r}")
        self.proportional = float(proportional)
        self.integral = float(integral)
        self.derivative = float(derivative)
        self.minRate = require_rate(minRate, "minRate")
        self._lock = threading.Lock()
        self._first = True
        self._latest_time = -1.0
        self._latest_rate = -1.0
        self._latest_error = -1.0
        self._estimate: float | None = None

    @property
    def latestRate(self) -> float | None:
        """The latest estimate in records per second, or None before the first."""
        return self._estimate

    def compute(
        self,
        time: float,
        numElements: int,
        processingDelay: float,
        schedulingDelay: float,
        batchInterval: float,
    ) -> float | None:
        """Estimate the rate after a batch; None when the batch gives no estimate.

        Args:
            time: when the batch's processing ended (milliseconds, any fixed origin).
            numElements: records the batch read from the stream.
            processingDelay: milliseconds its jobs took.
            schedulingDelay: milliseconds it waited before its jobs started.
            batchInterval: milliseconds the batch covers (> 0).
        """
        if batchInterval <= 0:
            raise InvalidArgumentError(f"batchInterval must be positive, got {batchInterval!r}")
        with self._lock:
            if not (time > self._latest_time and numElements > 0 and processingDelay > 0):
                return None
            seconds_since_update = (time - self._latest_time) / 1000
            processing_rate = numElements / processingDelay * 1000
            error = self._latest_rate - processing_rate
            historical_error = schedulingDelay * processing_rate / batchInterval
            d_error = (error - self._latest_error) / seconds_since_update
            rate = max(
                self.minRate,
                self._latest_rate
                - self.proportional * error
                - self.integral * historical_error
                - self.derivative * d_error,
            )
            self._latest_time = time
            if self._first:
                self._first = False
                self._latest_rate = processing_rate
                self._latest_error = 0.0
                return None
            self._latest_rate = rate
            self._latest_error = error
            self._estimate = rate
            return rate


def require_rate(value: object, name: str) -> float:
    """`value` as a float if it is a positive number of records per second, else raise.

    Examples:
        >>> require_rate(250, "initialRate")
        250.0
    """
    number = _number(value)
    if number is None or number <= 0:
        raise InvalidArgumentError(f"{name} must be a positive number, got {value!r}")
    return number


def split_records(limit: int, backlogs: Sequence[int], rotation: int = 0) -> list[int]:
    """How many of at most `limit` records each partition gives, fairly and deterministically.

    Each partition gives at most its backlog. When the backlogs hold more than `limit`, every
    partition with a backlog gives one record and the rest of `limit` is shared in proportion
    to what remains of the backlogs, the records left by rounding going to the largest
    remainders (ties: the first partitions). With fewer records than partitions waiting, one
    record goes to each of `limit` partitions in turn, starting at the `rotation`-th one with
    a backlog: no partition waits forever.

    Examples:
        >>> split_records(100, [900, 90, 10])
        [88, 10, 2]
        >>> split_records(100, [30, 0, 20])
        [30, 0, 20]
        >>> split_records(2, [5, 5, 5], rotation=2)
        [1, 0, 1]
    """
    if sum(backlogs) <= limit:
        return list(backlogs)
    taken = [0] * len(backlogs)
    waiting = [partition for partition, backlog in enumerate(backlogs) if backlog > 0]
    if limit < len(waiting):
        start = rotation % len(waiting)
        for partition in (waiting[start:] + waiting[:start])[:limit]:
            taken[partition] = 1
        return taken
    rest = limit - len(waiting)
    remaining = [max(0, backlog - 1) for backlog in backlogs]
    whole = sum(remaining)  # > rest, since the backlogs hold more than limit
    remainders = []
    for partition in waiting:
        share, remainder = divmod(rest * remaining[partition], whole)
        taken[partition] = 1 + share
        remainders.append((-remainder, partition))
    for _, partition in sorted(remainders)[: limit - sum(taken)]:
        taken[partition] += 1
    return taken


def _number(value: object) -> float | None:
    """`value` as a float if it is a finite int or float (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None
