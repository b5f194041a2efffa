"""Exactly-once batch directories: write to a hidden temporary path, then rename into place."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

from pyspark import RDD

from reactive_spark.time import Time

__all__ = ["batch_path", "save_atomically"]


def batch_path(prefix: str, suffix: str | None, time: Time) -> str:
    """`prefix-<time ms>[.suffix]`, as pyspark's `rddToFileName`; local prefixes made absolute.

    Example:
        >>> batch_path("/data/out", "txt", Time(1000))
        '/data/out-1000.txt'
    """
    if not urlparse(prefix).scheme:
        prefix = os.path.abspath(prefix)
    name = f"{prefix}-{time.milliseconds}"
    return name if suffix is None else f"{name}.{suffix}"


def save_atomically(rdd: RDD[Any], path: str, write: Callable[[RDD[Any], str], None]) -> bool:
    """Write `rdd` with `write(rdd, tmp)` and rename it to `path`; skip if `path` exists.

    Works on any Hadoop file system Spark can write to. Returns whether the batch was written.
    """
    sc = rdd.context
    jvm: Any = sc._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path
    final = hadoop_path(path)
    fs = final.getFileSystem(sc._jsc.hadoopConfiguration())
    if fs.exists(final):
        return False
    temporary = hadoop_path(final.getParent(), f"_temporary-{final.getName()}-{uuid.uuid4().hex}")
    try:
        write(rdd, temporary.toString())
        if fs.rename(temporary, final):
            return True
        if fs.exists(final):
            return False
        raise OSError(f"could not rename {temporary.toString()} to {path}")
    finally:
        if fs.exists(temporary):
            fs.delete(temporary, True)
