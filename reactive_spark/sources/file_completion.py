"""When a file that appeared is complete, so that a file watcher fires it as soon as it is.

watchfiles reports a file moved in and a file created in place alike (`added`) and does not
report closes, and modification times cannot tell them apart either (a write and a rename in
the same clock tick stamp the same time). The OS knows: on Linux, inotify says when a file was
moved in (`IN_MOVED_TO`) or closed after writing (`IN_CLOSE_WRITE`). `WriteEvidence` listens
for those beside watchfiles; `Arrivals` decides, from that evidence and from each file's size
and modification time, when a reported file fires:

* complete (moved in, or closed after its last write): at once;
* still open for writing: when it is closed, or once unchanged for `maxDelay` (a writer that
  keeps a file open and idle; one that only paused that long is read as far as it got);
* no word from the OS (another platform, or events the OS dropped when its queue overflowed):
  once unchanged for `settle`. After an overflow the reader starts afresh, so files changed
  from then on have the OS's word again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import struct
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from reactive_spark._libc import libc

__all__ = ["Arrivals", "WriteEvidence"]

_IN_MODIFY = 0x2
_IN_CLOSE_WRITE = 0x8
_IN_MOVED_FROM = 0x40
_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ISDIR = 0x40000000
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_MASK = _IN_MODIFY | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
log = logging.getLogger(__name__)

_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name)

#: What the OS said last about a file.
COMPLETE, WRITING = "complete", "writing"


class WriteEvidence:
    """Which files under `root` the OS saw moved in or closed after writing (Linux inotify).

    Elsewhere, or if inotify is unavailable, `available` is False and `drain` says nothing, so
    every file waits until it is unchanged for `settle`. `drain` never blocks: the kernel queues
    an event when the rename or close happens, so by the time watchfiles reports a change, the
    evidence for it is waiting.
    """

    def __init__(self, root: str, recursive: bool, accepts: Callable[[str], bool]) -> None:
        self._root = root
        self._recursive = recursive
        self._accepts = accepts
        self._directories: dict[int, str] = {}
        self._fd = -1
        self._add_watch: Callable[[int, bytes, int], int] | None = None
        self._remove_watch: Callable[[int, int], int] | None = None
        self._open()

    def _open(self) -> None:
        library = libc() if sys.platform.startswith("linux") else None
        if library is not None:
            with contextlib.suppress(OSError, AttributeError):
                fd = library.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
                if fd >= 0:
                    self._fd, self._add_watch = fd, library.inotify_add_watch
                    self._remove_watch = library.inotify_rm_watch
                    self._watch_tree(self._root)

    @property
    def available(self) -> bool:
        """Whether the OS reports closes and renames here."""
        return self._fd >= 0

    def _watch_tree(self, directory: str) -> None:
        self._watch(directory)
        if self._recursive:
            for parent, children, _ in os.walk(directory):
                children[:] = [c for c in children if not c.startswith((".", "_"))]
                for child in children:
                    self._watch(os.path.join(parent, child))

    def _watch(self, directory: str) -> None:
        assert self._add_watch is not None
        wd = self._add_watch(self._fd, os.fsencode(directory), _MASK)
        if wd >= 0:
            self._directories[wd] = directory

    def drain(self) -> tuple[dict[str, str], bool]:
        """`({path: COMPLETE or WRITING}, lost)`: what the OS said since the last drain.

        Paths deleted or moved away map to nothing (they are dropped; a directory, as its path
        with a trailing separator, for everything under it); `lost` says the kernel's queue
        overflowed, so earlier evidence may be missing: the reader then starts afresh, and says
        again what happens from then on.
        """
        said: dict[str, str] = {}
        lost = False
        while self._fd >= 0:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
                name = data[offset + _HEADER.size : offset + _HEADER.size + length].rstrip(b"\0")
                offset += _HEADER.size + length
                lost = lost or bool(mask & _IN_Q_OVERFLOW)
                self._note(said, wd, mask, os.fsdecode(name))
        if lost:
            log.warning(
                "the OS dropped file events under %s (its inotify queue overflowed): files "
                "waiting now fire once unchanged for settle; later ones are watched as before",
                self._root,
            )
            self.close()
            self._directories.clear()
            self._open()
        return said, lost

    def _note(self, said: dict[str, str], wd: int, mask: int, name: str) -> None:
        directory = self._directories.get(wd)
        if mask & _IN_IGNORED:
            self._directories.pop(wd, None)
        if directory is None or not name:
            return
        path = os.path.join(directory, name)
        if mask & _IN_ISDIR:
            if mask & (_IN_MOVED_FROM | _IN_DELETE):  # what was said under it is void
                self._forget_tree(path)
                said[path + os.sep] = ""
            elif self._recursive and mask & (_IN_CREATE | _IN_MOVED_TO):
                self._watch_tree(path)
            return
        if not self._accepts(path):
            return
        if mask & (_IN_DELETE | _IN_MOVED_FROM):
            said[path] = ""
        elif mask & (_IN_CLOSE_WRITE | _IN_MOVED_TO):
            said[path] = COMPLETE
        else:
            said[path] = WRITING

    def _forget_tree(self, directory: str) -> None:
        """Stop watching `directory` and what is under it (moved out, or deleted)."""
        inside = directory + os.sep
        for wd, watched in list(self._directories.items()):
            if watched == directory or watched.startswith(inside):
                del self._directories[wd]
                if self._remove_watch is not None:
                    self._remove_watch(self._fd, wd)

    def close(self) -> None:
        """Stop listening."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


@dataclass
class _Waiting:
    """A reported file that has not fired yet."""

    change: str  # "added" once it was reported added, else "modified"
    signature: tuple[int, int] | None  # (size, mtime ns) when last looked at
    unchanged_since: float  # monotonic seconds


#: How many files' last word from the OS is kept for files not reported (yet) by watchfiles.
MAX_HEARD = 10_000


@dataclass
class Arrivals:
    """Decides when reported files fire; `settle` and `max_delay` (`maxDelay`) in seconds.

    Feed it watchfiles' reports (`report`) and the OS's evidence (`hear`); `ready(now)` gives
    the files to fire now, with how each arrived (`"added"` or `"modified"`). A file reported
    again as it was when it fired (watchfiles reporting one write twice, the second after the
    close) does not fire again.
    """

    settle: float
    max_delay: float
    evidence_available: bool
    _said: dict[str, str] = field(default_factory=dict)
    _waiting: dict[str, _Waiting] = field(default_factory=dict)
    # the files fired last, as they were then (at most MAX_HEARD, the oldest forgotten first)
    _fired: dict[str, tuple[int, int]] = field(default_factory=dict)

    def hear(self, said: dict[str, str], lost: bool) -> None:
        """Take what the OS said; after an overflow, nothing earlier counts."""
        if lost:
            self._said.clear()
        for path, state in said.items():
            if state:
                self._said[path] = state
            elif path.endswith(os.sep):  # a directory moved out or deleted: all under it
                self._said = {p: s for p, s in self._said.items() if not p.startswith(path)}
            else:
                self._said.pop(path, None)
        if len(self._said) > MAX_HEARD:  # what the OS said of files no report came for
            self._said = {path: self._said[path] for path in self._waiting if path in self._said}

    def report(self, changes: Iterable[tuple[str, str]], now: float) -> None:
        """Take `(change, path)` pairs from watchfiles (`added`, `modified` or `deleted`)."""
        for change, path in changes:
            if change == "deleted":
                continue
            waiting = self._waiting.get(path)
            if waiting is None:
                self._waiting[path] = _Waiting(change, None, now)
            else:
                waiting.unchanged_since = now
                if change == "added":
                    waiting.change = "added"

    def report_found(self, paths: Iterable[str], now: float) -> None:
        """Take the files found in a directory that was added, as added.

        They may have arrived before the OS watched that directory, so it may never say they
        were closed: without its word they wait as files still open for writing do (a close,
        or `max_delay` unchanged), never read half-written.
        """
        paths = list(paths)
        self.report((("added", path) for path in paths), now)
        if self.evidence_available:
            for path in paths:
                self._said.setdefault(path, WRITING)

    @property
    def waiting(self) -> bool:
        """Whether some reported file has not fired yet."""
        return bool(self._waiting)

    def ready(self, now: float) -> dict[str, str]:
        """The waiting files to fire now, `{path: change}`; they stop waiting."""
        fired: dict[str, str] = {}
        for path, waiting in list(self._waiting.items()):
            signature = _signature(path)
            if signature is None:  # gone, or not a file: nothing to read
                del self._waiting[path]
                self._said.pop(path, None)
                continue
            if signature != waiting.signature:
                if waiting.signature is not None:  # it changed since the last look
                    waiting.unchanged_since = now
                waiting.signature = signature
            said = self._said.get(path) if self.evidence_available else None
            quiet = now - waiting.unchanged_since
            if (
                said == COMPLETE
                or (said == WRITING and quiet >= self.max_delay)
                or (said is None and quiet >= self.settle)
            ):
                del self._waiting[path]
                self._said.pop(path, None)
                if self._fired.get(path) == signature:  # a late report of the write it fired
                    continue
                fired[path] = waiting.change
                self._fired.pop(path, None)
                self._fired[path] = signature
                if len(self._fired) > MAX_HEARD:
                    del self._fired[next(iter(self._fired))]
        return fired


def _signature(path: str) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(status.st_mode):
        return None
    return status.st_size, status.st_mtime_ns
