"""Which batch's output job runs in this thread: `running_output`, set by `output_of`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reactive_spark.events import Event

__all__ = ["output_of", "running_output"]

_RUNNING_OUTPUT: ContextVar[Event | None] = ContextVar("running_output", default=None)


def running_output() -> Event | None:
    """The event of the batch whose output job runs in this thread; None outside one.

    What an output's function calls may know which batch it is in: a `TransactionalSink`
    records it with its commit, so that the batch re-run after a crash is known.

    Examples:
        >>> running_output() is None  # not in an output's job
        True
    """
    return _RUNNING_OUTPUT.get()


@contextmanager
def output_of(event: Event) -> Iterator[None]:
    """Within it, `running_output()` gives `event`: an output's job for `event` runs.

    Examples:
        >>> from reactive_spark.events import Event
        >>> from reactive_spark.time import Time
        >>> tick = Event(None, 0, Time(5))
        >>> with output_of(tick):
        ...     running_output() is tick
        True
    """
    running = _RUNNING_OUTPUT.set(event)
    try:
        yield
    finally:
        _RUNNING_OUTPUT.reset(running)
