"""Exactly-once batch directories: write to a hidden temporary path, then rename into place.

A crash during a write leaves the temporary directory behind; recovery removes it
(`remove_interrupted_writes`) before the batch is written again.
"""

from __future__ import annotations

import logging
import os
import re
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

from pyspark import RDD

from reactive_spark.errors import ReactiveSparkError
from reactive_spark.time import Time

__all__ = ["OutputWriteError", "batch_path", "remove_interrupted_writes", "save_atomically"]

log = logging.getLogger(__name__)


class OutputWriteError(ReactiveSparkError, OSError):
    """A batch's output could not be moved into place."""


def batch_path(prefix: str, suffix: str | None, time: Time) -> str:
    """`prefix-<time ms>[.suffix]`, as pyspark's `rddToFileName`; local prefixes made absolute.

    Examples:
        >>> batch_path("/data/out", "txt", Time(1000))
        '/data/out-1000.txt'
    """
    if not urlparse(prefix).scheme:
        prefix = os.path.abspath(prefix)
    name = f"{prefix}-{time.milliseconds}"
    return name if suffix is None else f"{name}.{suffix}"


def _hadoop(sc: Any, path: str) -> tuple[Any, Any]:
    """`(Path, FileSystem)` of `path`, through the JVM.

    PySpark has no public API for Hadoop's file systems; `_jvm` and `_jsc` are how PySpark's own
    code reaches them.
    """
    jvm = sc._jvm  # noqa: SLF001
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path, hadoop_path.getFileSystem(sc._jsc.hadoopConfiguration())  # noqa: SLF001


def save_atomically(rdd: RDD[Any], path: str, write: Callable[[RDD[Any], str], None]) -> bool:
    """Write `rdd` with `write(rdd, tmp)` and rename it to `path`; skip if `path` exists.

    Works on any Hadoop file system Spark can write to. Returns whether the batch was written.
    """
    final, fs = _hadoop(rdd.context, path)
    if fs.exists(final):
        return False
    temporary, _ = _hadoop(
        rdd.context,
        f"{final.getParent().toString()}/_temporary-{final.getName()}-{uuid.uuid4().hex}",
    )
    # a crash from here until the rename leaves `temporary` behind: see remove_interrupted_writes
    try:
        write(rdd, temporary.toString())
        if fs.rename(temporary, final):
            return True
        if fs.exists(final):
            return False
        raise OutputWriteError(f"could not rename {temporary.toString()} to {path}")
    finally:
        if fs.exists(temporary):
            fs.delete(temporary, True)


def remove_interrupted_writes(sc: Any, prefix: str, suffix: str | None = None) -> list[str]:
    """Delete the temporary directories of `prefix`'s batches that a crash left behind.

    Only names `save_atomically` makes for this prefix match (`_temporary-<name>-<time ms>
    [.suffix]-<hex>`), so other outputs in the same directory are left alone. Returns the
    deleted paths.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> out = Path(tempfile.mkdtemp())
        >>> (out / f"_temporary-daily-1704067200000-{'0' * 32}").mkdir()
        >>> [Path(path).name for path in remove_interrupted_writes(sc, str(out / "daily"))]
        ['_temporary-daily-1704067200000-00000000000000000000000000000000']
    """
    if not urlparse(prefix).scheme:
        prefix = os.path.abspath(prefix)
    parent, _, name = prefix.rpartition("/")
    ending = "" if suffix is None else re.escape(f".{suffix}")
    pattern = re.compile(rf"^_temporary-{re.escape(name)}-\d+{ending}-[0-9a-f]{{32}}$")
    directory, fs = _hadoop(sc, parent)
    if not fs.exists(directory):
        return []
    removed = []
    for status in fs.listStatus(directory):
        path = status.getPath()
        if pattern.match(path.getName()):
            fs.delete(path, True)
            removed.append(path.toString())
            log.info("removed %s, left by a write that a crash interrupted", path.toString())
    return removed
