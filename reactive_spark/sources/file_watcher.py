"""File-system watcher (watchfiles): a `FileEvent` for the files that appear or change."""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import watchfiles

from reactive_spark._validation import require_bool
from reactive_spark.errors import DirectoryNotFoundError, InvalidArgumentError
from reactive_spark.events import Event, EventSource, FileEvent
from reactive_spark.sources.file_completion import Arrivals, WriteEvidence
from reactive_spark.time import Duration, Time, to_duration, to_time

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext

__all__ = ["FileWatcherEventSource", "is_partial_file", "visible_under"]


#: How often the watcher wakes without changes (it reports readiness on the first wake).
READY_POLL_MS = 200
#: How often watchfiles looks for changes, and how long a burst must pause to be reported:
#: a file moved in is reported within a few of these (see `file_completion`).
STEP_MS = 2
#: Seconds before watching again after the watch itself failed.
RETRY_SECONDS = 1.0

#: Names of files still being written by common tools; never reported.
PARTIAL_SUFFIXES = (".tmp", ".part", ".partial", ".crdownload", ".swp", ".swx", "~", ".filepart")


def is_partial_file(path: str) -> bool:
    """Whether `path` names a hidden, temporary or partially written file.

    Examples:
        >>> is_partial_file("/in/._COPYING_") and is_partial_file("/in/a.csv.part")
        True
        >>> is_partial_file("/in/a.csv")
        False
    """
    name = os.path.basename(path)
    return name.startswith((".", "_")) or name.endswith(PARTIAL_SUFFIXES)


def visible_under(path: str, root: str) -> bool:
    """Whether `path` is `root` or lies under it, with no hidden part (`.x`, `_x`) below it.

    Examples:
        >>> visible_under("/in/day/a.csv", "/in"), visible_under("/in/_tmp/a.csv", "/in")
        (True, False)
        >>> visible_under("/elsewhere/a.csv", "/in"), visible_under("/in", "/in")
        (False, True)
    """
    below = os.path.relpath(os.path.abspath(path), root)
    if below == os.curdir:
        return True
    parts = below.split(os.sep)
    return parts[0] != os.pardir and not any(part.startswith((".", "_")) for part in parts)


class FileWatcherEventSource(EventSource):
    """Watches `path` and fires `FileEvent(paths, change)` for files that appear or change.

    A file fires at once when the OS says it was moved in or closed after writing (Linux),
    never half-written then; while a writer holds it open, when it is closed or once unchanged
    for `maxDelay`; without word from the OS (other platforms, or after the OS dropped
    events), once unchanged for `settle`. A writer pausing longer than those has its file read
    as far as it got. The files ready together fire as one event. Hidden, temporary
    and partial files are ignored, and so are names not matching `pattern` (a glob, e.g.
    `"*.csv"`). `change` is `"added"`, `"modified"` or `"mixed"`. Deletions fire nothing.

    Examples:
        >>> uploads = ssc.fileWatcher("incoming", "uploads", pattern="*.csv")
        >>> job = ssc.textFileStream("incoming").count().pprint().bind(uploads)
    """

    kind = "fileWatcher"
    coalescesLosslessly = True

    def __init__(
        self,
        context: StreamingContext,
        path: str,
        name: str,
        pattern: str | None = None,
        *,
        recursive: bool = True,
        settle: Duration | timedelta | float = 0.02,
        maxDelay: Duration | timedelta | float = 1.6,
    ) -> None:
        if not isinstance(path, str) or not path:
            raise InvalidArgumentError(f"path must be a non-empty str, got {path!r}")
        if pattern is not None and (not isinstance(pattern, str) or not pattern):
            raise InvalidArgumentError(f"pattern must be a non-empty glob or None, got {pattern!r}")
        self.path = os.path.abspath(path)
        self.pattern = pattern
        self.recursive = require_bool(recursive, "recursive")
        self.settle = to_duration(settle, "settle")
        self.maxDelay = to_duration(maxDelay, "maxDelay")
        if self.maxDelay < self.settle:
            raise InvalidArgumentError(
                f"maxDelay must not be shorter than settle ({self.settle.milliseconds} ms), "
                f"got {self.maxDelay.milliseconds} ms",
            )
        super().__init__(context, name)
        self._stopping: threading.Event | None = None
        self._thread: threading.Thread | None = None
        self._ready = asyncio.Event()
        #: Set once watching began or failed (and was reported): what `start` waits for.
        self._tried = asyncio.Event()

    def accepts(self, path: str) -> bool:
        """Whether a change of `path` is reported (not partial, matching `pattern`).

        Files in hidden or underscore directories below the watched one (Spark's
        `_temporary/`) are not, live as in `between`.
        """
        if is_partial_file(path) or not visible_under(os.path.dirname(path), self.path):
            return False
        return self.pattern is None or fnmatch.fnmatch(os.path.basename(path), self.pattern)

    def start(self) -> Awaitable[None]:
        """Start watching (the directory is created if missing), in a thread of its own.

        Returns once the thread watches (or reported why it cannot): a file moved in after
        `ssc.start()` returned is seen, however long the thread took to start.
        """
        try:
            os.makedirs(self.path, exist_ok=True)
        except OSError as error:  # a file where the directory should be, or no permission
            raise InvalidArgumentError(
                f"path of the file watcher {self.name!r} must be a directory it can create or "
                f"watch, got {self.path!r} ({error.strerror})"
            ) from None
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._watch,
            args=(asyncio.get_running_loop(), self._stopping),
            name=f"reactive-spark-watch-{self.name}",
            daemon=True,
        )
        self._thread.start()
        return self._started()

    async def _started(self) -> None:
        """Until the watching thread watches, or reported why it cannot."""
        await self._tried.wait()

    def _watch(self, loop: asyncio.AbstractEventLoop, stopping: threading.Event) -> None:
        """Watch until stopped (the watching thread); changes fire on the loop.

        While the directory is gone nothing can be watched: the failure is reported once, and
        when the directory reappears the files already in it fire one event. A failing watch
        is reported and started again.
        """
        while not stopping.is_set():
            if not os.path.isdir(self.path):
                self._runtime.report_source_error(
                    self,
                    "watch",
                    DirectoryNotFoundError(
                        f"watched directory {self.path} vanished; events resume when it "
                        "is created again",
                    ),
                )
                _on_loop(loop, self._tried.set)
                while not os.path.isdir(self.path):
                    if stopping.wait(READY_POLL_MS / 1000):
                        return
                _on_loop(loop, self._fire_existing)
            evidence = None
            try:  # building the evidence reader can fail too (no inotify instance left)
                evidence = WriteEvidence(self.path, self.recursive, self.accepts)
                self._watch_once(loop, stopping, evidence)
            except Exception as exc:
                self._runtime.report_source_error(self, "watch", exc)
                _on_loop(loop, self._tried.set)
                stopping.wait(RETRY_SECONDS)
            finally:
                if evidence is not None:
                    evidence.close()

    def _watch_once(
        self,
        loop: asyncio.AbstractEventLoop,
        stopping: threading.Event,
        evidence: WriteEvidence,
    ) -> None:
        """One watch of the directory, until stopped or the directory is gone."""
        settle = self.settle.milliseconds / 1000
        arrivals = Arrivals(settle, self.maxDelay.milliseconds / 1000, evidence.available)
        # woken every `settle` (at most READY_POLL_MS apart) to fire files that became ready,
        # even while none wait: watchfiles.watch takes one timeout for the whole watch
        wake_ms = max(STEP_MS, min(READY_POLL_MS, self.settle.milliseconds))
        ready = False
        for changes in watchfiles.watch(
            self.path,
            watch_filter=lambda change, path: self.accepts(path) or os.path.isdir(path),
            debounce=self.maxDelay.milliseconds,
            step=min(STEP_MS, max(1, self.settle.milliseconds)),
            stop_event=stopping,
            recursive=self.recursive,
            rust_timeout=wake_ms,
            yield_on_timeout=True,
            raise_interrupt=False,
        ):
            if not ready:
                ready = True
                _on_loop(loop, self._ready.set)
                _on_loop(loop, self._tried.set)
            arrivals.hear(*evidence.drain())
            arrivals.evidence_available = evidence.available  # reopened after an overflow
            now = time.monotonic()
            changed, found = self._changed_and_found(changes)
            arrivals.report(changed, now)
            arrivals.report_found(found, now)
            if arrivals.waiting:
                fired = arrivals.ready(now)
                if fired:
                    _on_loop(loop, self._fire, fired)
            if not os.path.isdir(self.path):
                break

    def _changed_and_found(
        self, changes: Iterable[tuple[watchfiles.Change, str]]
    ) -> tuple[list[tuple[str, str]], list[str]]:
        """`(change, path)` of each changed file, and the files in each directory added.

        Those may have arrived before the new directory was watched (`mkdir -p day && mv
        x.csv day/`, or a directory moved in), and then nothing reports them on its own.
        """
        changed: list[tuple[str, str]] = []
        found: list[str] = []
        for change, path in changes:
            path = os.path.abspath(path)
            if not os.path.isdir(path):
                changed.append((change.name, path))
            elif (
                change == watchfiles.Change.added
                and self.recursive
                and visible_under(path, self.path)
            ):
                for root, directories, names in os.walk(path):
                    directories[:] = [d for d in directories if not d.startswith((".", "_"))]
                    found.extend(
                        file for name in names if self.accepts(file := os.path.join(root, name))
                    )
        return changed, found

    def _fire_existing(self) -> None:
        existing = [
            os.path.join(root, name)
            for root, _, names in os.walk(self.path)
            for name in names
            if self.accepts(os.path.join(root, name))
        ]
        if existing:
            stamp = self.context.clock.now()
            event = FileEvent(self, None, stamp, tuple(sorted(existing)), "added")
            self._runtime.post_from_loop(event)

    async def ready(self) -> None:
        """Wait until the watcher is watching (changes from then on are seen)."""
        await self._ready.wait()

    def _fire(self, fired: dict[str, str]) -> None:
        """Fire one event for the files that are complete, `{path: change}` (on the loop).

        Past the bound under overflow `"block"` it waits its turn, and the loop goes on.
        """
        distinct = set(fired.values())
        kind = distinct.pop() if len(distinct) == 1 else "mixed"
        event = FileEvent(self, None, self.context.clock.now(), tuple(sorted(fired)), kind)
        self._runtime.post_from_loop(event)

    async def stop(self) -> None:
        """Stop watching; the watching thread has ended when this returns."""
        if self._stopping is not None:
            self._stopping.set()
        if self._thread is not None:
            await self._runtime.run_blocking(self._thread.join)
            self._thread = None

    def between(self, start: Time | datetime, end: Time | datetime) -> list[Event]:
        """One event per file whose modification time lies in `[start, end]`, in time order."""
        start, end = to_time(start, "start"), to_time(end, "end")
        return [
            FileEvent(self, None, Time(modified), (path,), "added")
            for modified, path in self._files()
            if start.milliseconds <= modified <= end.milliseconds
        ]

    def numberPast(self, events: list[Event], start: Time | datetime) -> None:
        """Give each file's event the file's position among the files it watches, oldest first.

        By modification time, counted from the oldest file there now, whatever the backfill's
        range. A live run gave it that index only if the directory was empty when it first
        started (it never fires for the files already there), each file arrived alone (it
        fires one event for files noticed together) and none was removed since
        (docs/operations.md).

        Raises:
            DirectoryNotFoundError: the watched directory does not exist: there is nothing to
                backfill (a mistyped path would look like a quiet range).
        """
        if not os.path.isdir(self.path):
            raise DirectoryNotFoundError(
                f"watched directory {self.path} of source {self.name!r} does not exist: "
                "there is nothing to backfill"
            )
        since = to_time(start, "start").milliseconds
        before = sum(1 for modified, _ in self._files() if modified < since)
        for position, event in enumerate(events, before):
            event.index = position

    def _files(self) -> list[tuple[int, str]]:
        """`(modification time in ms, path)` of each file it watches, oldest first."""
        found: list[tuple[int, str]] = []
        for root, directories, files in os.walk(self.path):
            if not self.recursive:
                directories.clear()
            directories[:] = [d for d in directories if not d.startswith((".", "_"))]
            for name in files:
                path = os.path.join(root, name)
                if self.accepts(path):
                    found.append((os.stat(path).st_mtime_ns // 1_000_000, path))
        return sorted(found)

    def coalesce(self, events: list[Event]) -> Event:
        """One event with every file of `events`, at the last one's time.

        Its `change` is theirs if they agree, else `"mixed"`.
        """
        paths = tuple(
            dict.fromkeys(path for event in events for path in getattr(event, "paths", ()))
        )
        changes = {getattr(event, "change", "added") for event in events}
        change = changes.pop() if len(changes) == 1 else "mixed"
        return FileEvent(self, None, events[-1].time, paths, change)

    def eventFromRecord(self, fields: dict[str, Any]) -> FileEvent:
        """The `FileEvent` a checkpoint recorded."""
        return FileEvent(
            self,
            fields["index"],
            Time(fields["time"]),
            tuple(fields["paths"]),
            fields["change"],
            fields.get("instanceId"),
        )

    def toProduct(self) -> tuple[Any, ...]:
        """`(path, pattern, recursive, name)`."""
        return (self.path, self.pattern, self.recursive, self.name)


def _on_loop(loop: asyncio.AbstractEventLoop, callback: Callable[..., None], *args: Any) -> None:
    """Have `loop` call `callback(*args)` (from the watching thread), unless it closed."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(callback, *args)
