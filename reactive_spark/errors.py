"""The exception hierarchy: every error reactive-spark raises is a `ReactiveSparkError`.

Example:
    >>> from reactive_spark.errors import InvalidArgumentError, ReactiveSparkError
    >>> issubclass(InvalidArgumentError, ValueError) and issubclass(
    ...     InvalidArgumentError, ReactiveSparkError
    ... )
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reactive_spark.scheduler import JobInfo

__all__ = [
    "ContextStateError",
    "ForeignContextError",
    "InvalidArgumentError",
    "InvalidCallbackError",
    "JobFailedError",
    "OffsetOutOfRangeError",
    "ReactiveSparkError",
]


class ReactiveSparkError(Exception):
    """Base class of every error raised by reactive-spark."""


class InvalidArgumentError(ReactiveSparkError, ValueError):
    """An argument has a bad value; the message names the argument and the value."""


class InvalidCallbackError(ReactiveSparkError, TypeError):
    """A callback is not callable or does not take the arguments the operation passes."""


class ContextStateError(ReactiveSparkError, RuntimeError):
    """The operation is not allowed in the context's current state (e.g. binding after start)."""


class ForeignContextError(InvalidArgumentError):
    """A stream or source of another StreamingContext was given."""


class OffsetOutOfRangeError(ReactiveSparkError):
    """Records asked of a log lie outside what it holds (e.g. below its earliest offset).

    The message names the topic, the partition and the offsets.
    """


class JobFailedError(ReactiveSparkError):
    """One or more jobs failed while the context was advanced; `failures` holds every one.

    Example:
        >>> JobFailedError([]).failures
        []
    """

    def __init__(self, failures: Sequence[JobInfo]) -> None:
        self.failures = list(failures)
        lines = [f"{len(self.failures)} job(s) failed:"]
        lines += [f"  - {info.describe()}" for info in self.failures]
        super().__init__("\n".join(lines))
