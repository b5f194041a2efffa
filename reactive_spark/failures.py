"""Failures: what failed (a job, a plan, a source), with the user's own exception and where.

Every failure carries the user's exception as a `UserError`: its type, message and Python
traceback, read from the executor's report when it was raised inside a Spark task, and the
innermost frame of the user's own code (`is_library_file` tells the user's frames from
Python's, Spark's and ours, for failures and for the loop watchdog alike).

Examples:
    >>> error = UserError.of(ValueError("bad record"))
    >>> error.type, error.message
    ('ValueError', 'bad record')
"""

from __future__ import annotations

import asyncio
import re
import threading
import traceback as _traceback
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reactive_spark.errors import JobFailedError
from reactive_spark.time import now_ms

if TYPE_CHECKING:
    from reactive_spark.events import Event

__all__ = [
    "Failure",
    "SourceErrorInfo",
    "UserError",
]


_PYTHON_TRACEBACK = re.compile(
    r"Traceback \(most recent call last\):\n(?P<body>.*?)(?=\n(?: SQLSTATE|\tat )|\s*\Z)",
    re.DOTALL,
)
#: How deep in a Java exception's causes an executor's Python traceback is looked for.
_JAVA_CAUSES = 8
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')
#: Where code that is not the user's lives: Python's own event loop and threads, Spark, Py4J,
#: anyio and reactive-spark itself (its compiled plans included: docs/architecture.md).
LIBRARY_PATHS = (
    "/asyncio/",
    "/concurrent/",
    "/threading.py",
    "/selectors.py",
    "/socket.py",
    "/anyio/",
    "/pyspark/",
    "/py4j/",
    "/reactive_spark/",
)


def is_library_file(path: str) -> bool:
    """Whether `path` is a file of Python's or a library's, not the user's.

    Examples:
        >>> is_library_file("/usr/lib/python3.11/asyncio/events.py"), is_library_file("app.py")
        (True, False)
    """
    return any(part in path for part in LIBRARY_PATHS)


def frame_label(function: str, path: str, line: int | str) -> str:
    """`function (file:line)`, how a failure or a stall says where the user's code was."""
    return f"{function} ({path.rsplit('/', 1)[-1]}:{line})"


@dataclass(frozen=True)
class UserError:
    """The user's own exception behind a failure.

    For an exception raised inside a Spark task (a `map` function on an executor), PySpark's
    driver only sees a `Py4JJavaError`; the type, message and Python traceback are read from
    the executor's report inside it. `location` is the innermost frame of user code, when one
    can be told apart from pyspark's and reactive-spark's own.

    Examples:
        >>> try:
        ...     {}["day"]
        ... except KeyError as exc:
        ...     UserError.of(exc).summary
        "KeyError: 'day'"
    """

    type: str
    message: str
    traceback: str
    location: str | None = None

    @classmethod
    def of(cls, error: BaseException) -> UserError:
        """The user's exception behind `error` (itself, unless Spark wrapped it)."""
        remote = _executor_traceback(error)
        if remote is not None:
            return remote
        text = "".join(_traceback.format_exception(error))
        return cls(type(error).__name__, str(error), text, _user_location(text))

    @property
    def summary(self) -> str:
        """`Type: message`, as Python prints the last line of a traceback."""
        return f"{self.type}: {self.message}" if self.message else self.type


def _executor_traceback(error: BaseException) -> UserError | None:
    """The Python exception an executor reported inside `error`, if Spark wrapped one.

    A `Py4JJavaError` carries it in its Java exception or, for jobs that write files (Spark's
    "Job aborted."), in one of that exception's causes; once a SparkSession exists, PySpark
    converts such errors into its own (`pyspark.errors.PythonException`), whose text holds it.
    """
    java = getattr(error, "java_exception", None)
    if java is None and not type(error).__module__.startswith("pyspark.errors"):
        return None
    for text in _reported_texts(error, java):
        match = _PYTHON_TRACEBACK.search(text)
        if match is not None:
            body = match["body"].rstrip()
            last = body.splitlines()[-1] if body else ""
            kind, _, message = last.partition(": ")
            trace = f"Traceback (most recent call last):\n{body}\n"
            return UserError(
                kind.strip() or "Exception", message.strip(), trace, _user_location(trace)
            )
    return None


def _reported_texts(error: BaseException, java: Any) -> Iterator[str]:
    """The text of `error`, or of its Java exception and each of that one's causes."""
    try:
        if java is None:
            yield str(error)
            return
        for _ in range(_JAVA_CAUSES):
            yield str(java)
            java = java.getCause()
            if java is None:
                return
    except Exception:  # a Py4J call that fails once the JVM is gone
        return


def _user_location(trace: str) -> str | None:
    """`function (file:line)` of the innermost frame outside the libraries, if any."""
    found = None
    for line in trace.splitlines():
        frame = _FRAME.match(line)
        if frame is not None and not is_library_file(frame["file"]):
            found = frame_label(frame["function"], frame["file"], frame["line"])
    return found


class Failure:
    """Something that failed: a job, a plan, an event source or an operator.

    Subclasses set `error` (the exception) and implement `describe()`.
    """

    error: BaseException | None
    _user_error: UserError | None = None

    @property
    def failed(self) -> bool:
        """Whether it failed (a cancelled job did not)."""
        return self.error is not None and not getattr(self, "cancelled", False)

    @property
    def userError(self) -> UserError | None:
        """The user's own exception, once it failed."""
        if self.error is None:
            return None
        if self._user_error is None:
            self._user_error = UserError.of(self.error)
        return self._user_error

    def describe(self) -> str:
        """One line saying what failed and why."""
        raise NotImplementedError

    def _cause(self) -> str:
        user = self.userError
        if user is None:
            return "ok"
        where = f" (raised in {user.location})" if user.location else ""
        return f"{user.summary}{where}"


@dataclass(eq=False)
class SourceErrorInfo(Failure):
    """A failure of an event source or operator (reported through `onSourceError`).

    `operation` says what failed: `"map"`, `"filter"`, `"pipe"`, `"listener"` (a function
    handed an event), `"observable"` (the observable errored), `"watch"` (a file watcher),
    `"start"` (the source could not start), `"tick"` or `"delay"` (a timer's tick or a delayed
    event its full queue refused), `"restart"` (rebuilding what the source fired before a
    restart: its `between` raised). `event` is the event being handled, if any.
    """

    sourceName: str
    operation: str
    error: BaseException
    event: Event | None = None
    function: str | None = None
    time: float = field(default_factory=now_ms)

    @property
    def traceback(self) -> str:
        """The Python traceback of the error."""
        user = self.userError
        return "" if user is None else user.traceback

    def describe(self) -> str:
        """One line naming the source, the operation, the function and the error."""
        function = f" {self.function}" if self.function else ""
        on = ""
        if self.event is not None:
            on = f" on {self.event.source.name}#{self.event.index} at {self.event.time.isoformat()}"
        return (
            f"{self.operation}{function} of source {self.sourceName!r}{on} failed: {self._cause()}"
        )


#: Failures kept for `awaitTermination` to raise, one per call: past these, a failure is still
#: logged, told to listeners and returned by `advanceTo`, but not raised.
MAX_UNRAISED = 100


class FailureLedger:
    """The failures of one context not raised or returned yet, its crash, and its end.

    Failures arrive from any thread (`note`). `awaitTermination` raises the earliest one not
    raised yet (`raise_pending`, as PySpark does; the first `MAX_UNRAISED` of those waiting),
    then a scheduler crash; on a virtual clock
    `advanceTo` returns every one since it last returned (`take_unreturned`). `wait` is the
    waiting behind `awaitTerminationOrTimeout`: woken by a failure, a crash or the end.

    Examples:
        >>> ledger = FailureLedger(returns_failures=True)
        >>> ledger.take_unreturned()
        []
    """

    def __init__(self, *, returns_failures: bool) -> None:
        self._returns = returns_failures  # on a virtual clock: `advanceTo` returns them
        self._lock = threading.Lock()
        self._unraised: deque[Failure] = deque()
        self._unkept = 0  # failures that came while `MAX_UNRAISED` waited to be raised
        self._unreturned: list[Failure] = []
        #: The error that crashed the scheduler, if it crashed.
        self.crash: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ended: asyncio.Event | None = None
        self._attention: asyncio.Event | None = None

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """The context started on `loop`: from now on waiters can be woken (call it there)."""
        self._loop = loop
        self._ended = asyncio.Event()
        self._attention = asyncio.Event()

    @property
    def attached(self) -> bool:
        """Whether the context started (and so can be waited for)."""
        return self._ended is not None

    def note(self, failure: Failure) -> None:
        """Keep `failure` for `advanceTo`, and for `awaitTermination` unless too many wait."""
        with self._lock:
            if self._returns:
                self._unreturned.append(failure)
            if len(self._unraised) >= MAX_UNRAISED:
                self._unkept += 1
                return
            self._unraised.append(failure)
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._wake)

    def crashed(self, error: BaseException) -> None:
        """The scheduler crashed with `error` (on the loop): waiters raise it."""
        self.crash = error
        self._wake()

    def end(self) -> None:
        """The context stopped (on the loop): waiters return."""
        if self._ended is not None:
            self._ended.set()
        self._wake()

    def take_unreturned(self) -> list[Failure]:
        """Every failure since the last call, in the order they happened."""
        with self._lock:
            failures, self._unreturned = self._unreturned, []
        return failures

    def raise_pending(self) -> None:
        """Raise `JobFailedError` with the earliest failure not raised yet, else the crash."""
        with self._lock:
            failure = self._unraised.popleft() if self._unraised else None
            unkept, self._unkept = (self._unkept, 0) if failure is not None else (0, self._unkept)
        if failure is not None:
            error = JobFailedError([failure])
            if unkept:
                error.add_note(
                    f"{unkept} more failures came while {MAX_UNRAISED} waited to be raised: "
                    "they are not raised here (they were logged and told to listeners)"
                )
            raise error
        if self.crash is not None:
            raise self.crash

    async def wait(self, timeout: float | None) -> bool:
        """Wait up to `timeout` seconds for the end; True if it came. Raises what is pending."""
        ended, loop = self._ended, asyncio.get_running_loop()
        assert ended is not None  # attached
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            attention = self._attention
            self.raise_pending()
            if ended.is_set():
                return True
            remaining = None if deadline is None else deadline - loop.time()
            if (remaining is not None and remaining <= 0) or attention is None:
                return False
            try:
                await asyncio.wait_for(attention.wait(), remaining)
            except TimeoutError:
                self.raise_pending()
                return ended.is_set()

    def _wake(self) -> None:
        attention, self._attention = self._attention, asyncio.Event()
        if attention is not None:
            attention.set()
