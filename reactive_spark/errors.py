"""The exception hierarchy: every error reactive-spark raises is a `ReactiveSparkError`.

Examples:
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
    from reactive_spark.failures import Failure

__all__ = [
    "ContextStateError",
    "DirectoryNotFoundError",
    "ForeignContextError",
    "InvalidArgumentError",
    "InvalidCallbackError",
    "JobFailedError",
    "JobSkippedError",
    "ListenError",
    "MissingTimestampError",
    "OffsetOutOfRangeError",
    "QueueFullError",
    "ReactiveSparkError",
    "StopError",
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


class ListenError(ReactiveSparkError, OSError):
    """A server (REST triggers, the console) cannot listen where told; names host and port."""


class DirectoryNotFoundError(ReactiveSparkError, FileNotFoundError):
    """A directory an input or source reads does not exist; the message names it."""


class OffsetOutOfRangeError(ReactiveSparkError):
    """Records asked of a log lie outside what it holds (e.g. below its earliest offset).

    The message names the topic, the partition and the offsets.
    """


class MissingTimestampError(ReactiveSparkError):
    """A log's record has no time (written before records had times): none is found by time.

    The message names the topic, the partition and the offset.
    """


class QueueFullError(ReactiveSparkError):
    """An event was refused: its source's queue is full and its overflow policy is `"reject"`.

    The message names the source and its bound; retry later (a REST trigger answers 503 with
    `Retry-After`).

    Examples:
        >>> str(QueueFullError("jobs", 100, 100))[:45]
        "source 'jobs' has 100 events waiting, its bou"
    """

    def __init__(self, source: str, depth: int, bound: int) -> None:
        super().__init__(
            f"source {source!r} has {depth} events waiting, its bound (maxQueued={bound}); its "
            "overflow policy is 'reject': try again later"
        )
        #: The name of the source that refused the event.
        self.source = source
        #: Its bound.
        self.bound = bound


class JobSkippedError(ReactiveSparkError):
    """A job did not run: a commit it reads from (`aggregateExactlyOnce`) failed in its batch.

    `commit` names the stream whose commit failed; the commit's own error is the cause.
    """

    def __init__(self, stream: str, commit: str, error: BaseException) -> None:
        self.commit = commit
        super().__init__(f"{stream} did not run: {commit} failed to commit ({error!r})")


class JobFailedError(ReactiveSparkError):
    """Jobs (or plans, or event sources) failed; `failures` holds every one.

    Raised by `runUntil` with every failure of the run, and by `awaitTermination` with the
    first failure since it last raised. The message names each failed stream or source, the
    function and the user's own exception, and shows the first one's Python traceback (from
    the executor, for a function that failed inside a Spark task).

    Examples:
        >>> JobFailedError([]).failures
        []
    """

    def __init__(self, failures: Sequence[Failure]) -> None:
        self.failures = list(failures)
        lines = [f"{len(self.failures)} failure(s):"]
        lines += [f"  - {info.describe()}" for info in self.failures]
        first = self.failures[0].userError if self.failures else None
        if first is not None:
            lines += ["", first.traceback.rstrip()]
        super().__init__("\n".join(lines))


class StopError(ReactiveSparkError):
    """Parts of a StreamingContext failed to stop; every other part stopped all the same.

    The context is stopped when this is raised: its threads ended, `awaitTermination`
    returned, and a second `stop()` does nothing. `failures` holds `(step, fix, error)` for each
    step that failed, in order: what failed, what to do about it, and its error; the first
    error is the cause. The message names each.

    Examples:
        >>> error = StopError([("closing the checkpoint", "check the disk", OSError("full"))])
        >>> print(error)
        stopping the StreamingContext: 1 step failed (every other part stopped; it is stopped)
          - closing the checkpoint failed: OSError('full'); check the disk
        >>> error.failures[0][0]
        'closing the checkpoint'
    """

    def __init__(self, failures: Sequence[tuple[str, str, Exception]]) -> None:
        self.failures = list(failures)
        count = len(self.failures)
        lines = [
            f"stopping the StreamingContext: {count} step{'' if count == 1 else 's'} failed "
            "(every other part stopped; it is stopped)"
        ]
        lines += [f"  - {step} failed: {error!r}; {fix}" for step, fix, error in self.failures]
        super().__init__("\n".join(lines))
