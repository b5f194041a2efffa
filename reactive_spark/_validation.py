"""Argument checks shared by the public API; errors name the argument and the value."""

from __future__ import annotations

import math
import re

from reactive_spark.errors import InvalidArgumentError

__all__ = ["require_bool", "require_checkpoint_path", "require_int", "require_timeout"]

_URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")


def require_int(value: object, name: str, *, minimum: int = 1) -> int:
    """Return `value` if it is an int (not a bool) of at least `minimum`, else raise.

    Examples:
        >>> require_int(3, "numPartitions")
        3
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        wanted = "a positive int" if minimum == 1 else f"an int >= {minimum}"
        raise InvalidArgumentError(f"{name} must be {wanted}, got {value!r}")
    return value


def require_bool(value: object, name: str) -> bool:
    """Return `value` if it is a bool, else raise.

    Examples:
        >>> require_bool("yes", "freezeHeap")
        Traceback (most recent call last):
        ...
        reactive_spark.errors.InvalidArgumentError: freezeHeap must be a bool, got 'yes'
    """
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be a bool, got {value!r}")
    return value


def require_timeout(value: object, name: str = "timeout") -> float | None:
    """Return `value` if it is None or a non-negative number (of seconds), else raise.

    Examples:
        >>> require_timeout(-1)
        Traceback (most recent call last):
        ...
        reactive_spark.errors.InvalidArgumentError: timeout must be a non-negative number, got -1
    """
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        # NaN fails it (no deadline comes of it), and so does an int no clock can add
        or not (0 <= value <= 1e300 or value == math.inf)
    ):
        raise InvalidArgumentError(f"{name} must be a non-negative number, got {value!r}")
    return value


def require_checkpoint_path(value: object, name: str) -> str:
    """Return `value` if it is a directory path the driver can fsync in (`file://` stripped).

    The write-ahead log is written with the operating system's calls, so a checkpoint lives on
    a file system mounted on the driver (shared storage such as NFS, EFS or a persistent volume
    when the driver may restart elsewhere), not behind an `hdfs://` or `s3a://` URL.

    Examples:
        >>> require_checkpoint_path("file:///data/checkpoint", "checkpoint")
        '/data/checkpoint'
    """
    if not isinstance(value, str) or not value or "\0" in value:
        raise InvalidArgumentError(f"{name} must be a directory path, got {value!r}")
    url = _URL.match(value)
    if url is None:
        return value
    if url["scheme"].lower() == "file":
        return value[len(url[0]) :]
    raise InvalidArgumentError(
        f"{name} must be a directory on a file system the driver mounts (its write-ahead log "
        f"is fsynced), got {value!r}: mount the shared storage instead of a "
        f"{url['scheme']}:// URL"
    )
