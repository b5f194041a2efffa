"""One driver at a time on a checkpoint directory: the hold a started context keeps on it.

Two contexts writing one checkpoint would interleave (and compact away) each other's
write-ahead log and write the same outputs, so a context started with a checkpoint directory
holds it from `start` until its stop: an exclusive `flock` on `<directory>/lock`. Such a lock
belongs to one open of the file, so a second context is refused whether it runs in another
process or in this one, and the kernel lets it go when the process dies, however it dies. The
file names its holder (pid, host, since when) for the refusal to say who holds it; it stays
in the directory, emptied, when the hold ends (removed, a driver that had opened it would lock
a file the next driver does not see). See docs/checkpoints.md.

Examples:
    >>> import tempfile
    >>> directory = tempfile.mkdtemp()
    >>> first, second = CheckpointLock(directory), CheckpointLock(directory)
    >>> first.acquire()
    >>> try:
    ...     second.acquire()
    ... except CheckpointInUseError as refused:
    ...     print(refused.pid == os.getpid())
    True
    >>> first.release()
    >>> second.acquire()
    >>> second.release()
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import stat
import threading
from typing import TypeVar

from reactive_spark.checkpoint import CheckpointError, disk_errors
from reactive_spark.time import Time, now_ms

__all__ = ["LOCK_FILE", "CheckpointInUseError", "CheckpointLock"]

#: The file in the checkpoint directory that the context holding it locks.
LOCK_FILE = "lock"
#: More than a holder's record ever takes.
_RECORD_BYTES = 4096

T = TypeVar("T")


class CheckpointInUseError(CheckpointError):
    """Another StreamingContext holds the checkpoint directory: this one was refused at start.

    The holder is a context started on the same directory and not stopped, in this process or
    another (a second driver, a backfill on the same `checkpoint`). The message names the
    directory, the holder's pid and host when its lock file says them, and what to do: stop
    the other driver, or give this context another directory. `pid` and `host` are None when
    the holder has not written them yet.

    Examples:
        >>> refused = CheckpointInUseError("/data/cp", 4242, "worker-1", "2026-01-05T00:00:00Z")
        >>> print(refused)  # doctest: +NORMALIZE_WHITESPACE
        checkpoint directory /data/cp is in use by another driver (pid 4242 on worker-1, since
        2026-01-05T00:00:00Z): two drivers on one checkpoint would write the same log and
        outputs; stop that one first, or give this StreamingContext another checkpoint directory
    """

    def __init__(
        self, directory: str, pid: int | None, host: str | None, since: str | None
    ) -> None:
        #: The checkpoint directory held.
        self.directory = directory
        #: The holding process's id, and its host, if its lock file says them.
        self.pid = pid
        self.host = host
        super().__init__(
            f"checkpoint directory {directory} is in use by {_holder(pid, host, since)}: two "
            "drivers on one checkpoint would write the same log and outputs; stop that one "
            "first, or give this StreamingContext another checkpoint directory"
        )


def _holder(pid: int | None, host: str | None, since: str | None) -> str:
    if pid is None or host is None:
        return "another driver (it has not written its pid yet)"
    ours = pid == os.getpid() and host == socket.gethostname()
    holder = "another StreamingContext of this process" if ours else "another driver"
    return f"{holder} (pid {pid} on {host}{f', since {since}' if since else ''})"


class CheckpointLock:
    """The hold of one context on a checkpoint directory, from `acquire` until `release`.

    Both may block on the disk: the context calls them in its blocking-call threads. Once
    released it is not held again (a start cancelled while it acquired lets go at once).

    Args:
        directory: The checkpoint directory; created if missing.
    """

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.path = os.path.join(directory, LOCK_FILE)
        self._descriptor: int | None = None
        self._released = False
        self._guard = threading.Lock()  # `release` may come while `acquire` runs

    def acquire(self) -> None:
        """Hold the directory, and write who holds it.

        Raises:
            CheckpointInUseError: another context holds it (in this process or another).
            CheckpointError: the lock file cannot be opened or written (the message says why).
        """
        with self._guard, self._disk("hold the lock file"):
            if self._released or self._descriptor is not None:
                return
            os.makedirs(self.directory, exist_ok=True)
            # never through a link: the file is emptied and written, whatever it points to
            flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
            descriptor = os.open(self.path, flags, 0o644)
            try:
                if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                    raise CheckpointError(
                        f"cannot hold the lock file of checkpoint {self.directory}: "
                        f"{self.path} is not a regular file; remove it"
                    )
                self._lock(descriptor)
                _write_record(descriptor, _holder_record())
            except BaseException:
                os.close(descriptor)
                raise
            self._descriptor = descriptor

    def _lock(self, descriptor: int) -> None:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            record = _read_record(descriptor)
            raise CheckpointInUseError(
                self.directory,
                _field(record, "pid", int),
                _field(record, "host", str),
                _field(record, "since", str),
            ) from None

    def release(self) -> None:
        """Let the directory go; its lock file stays, emptied. Again, it does nothing."""
        with self._guard:
            self._released = True
            descriptor, self._descriptor = self._descriptor, None
        if descriptor is None:
            return
        try:
            with self._disk("empty the lock file"):
                os.ftruncate(descriptor, 0)
        finally:
            # unlocked before it is closed: a child forked meanwhile shares the lock
            with contextlib.suppress(OSError):
                fcntl.flock(descriptor, fcntl.LOCK_UN)
            os.close(descriptor)

    def _disk(self, action: str) -> contextlib.AbstractContextManager[None]:
        return disk_errors(f"cannot {action} of checkpoint {self.directory}")


def _holder_record() -> dict[str, object]:
    since = Time(int(now_ms()) // 1000 * 1000).isoformat()
    return {"pid": os.getpid(), "host": socket.gethostname(), "since": since}


def _write_record(descriptor: int, record: dict[str, object]) -> None:
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, json.dumps(record).encode(), 0)


def _read_record(descriptor: int) -> dict[str, object]:
    """What the holder wrote of itself; empty if nothing readable yet (it is writing it)."""
    try:
        record = json.loads(os.pread(descriptor, _RECORD_BYTES, 0).decode())
    except (OSError, ValueError):  # UnicodeDecodeError is a ValueError
        return {}
    return record if isinstance(record, dict) else {}


def _field(record: dict[str, object], name: str, kind: type[T]) -> T | None:
    value = record.get(name)
    return value if isinstance(value, kind) and not isinstance(value, bool) else None
