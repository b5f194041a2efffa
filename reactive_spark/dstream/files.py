"""Exactly-once batch directories: write to a hidden temporary path, then rename into place.

A crash during a write leaves the temporary directory behind; recovery removes it
(`remove_interrupted_writes`) before the batch is written again. A backfill replaces a batch
directory instead (`save_atomically(..., replace=True)`): the new one is written aside, then
swapped with the old one in one `renameat2(RENAME_EXCHANGE)` where the file system is local
and Linux, so a reader sees the old batch or the new one, never a mix and never none.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import hashlib
import json
import logging
import os
import re
import shutil
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

from pyspark import RDD

from reactive_spark._libc import libc
from reactive_spark.errors import ReactiveSparkError
from reactive_spark.time import Time

__all__ = [
    "BATCH_MARKER",
    "OutputWriteError",
    "batch_directory",
    "batch_marker",
    "batch_path",
    "exchange",
    "hadoop_configuration",
    "remove_interrupted_writes",
    "save_atomically",
]

log = logging.getLogger(__name__)

#: The file in a batch directory naming the batch that wrote it; Hadoop's readers skip names
#: starting with `_`, as they skip `_SUCCESS`.
BATCH_MARKER = "_BATCH"


class OutputWriteError(ReactiveSparkError, OSError):
    """A batch's output could not be moved into place."""


def batch_path(prefix: str, suffix: str | None, time: Time, number: int = 1) -> str:
    """`prefix-<time ms>[.suffix]`, as pyspark's `rddToFileName`; local prefixes made absolute.

    The `number`-th batch of one millisecond (from 1) is `prefix-<time ms>_<number>[.suffix]`
    from the second on (see `batch_directory`): a name read as `prefix-<time>` fails to parse
    rather than give the number as the time.

    Examples:
        >>> batch_path("/data/out", "txt", Time(1000))
        '/data/out-1000.txt'
        >>> batch_path("/data/out", "txt", Time(1000), 2)
        '/data/out-1000_2.txt'
    """
    if not urlparse(prefix).scheme:
        prefix = os.path.abspath(prefix)
    name = f"{prefix}-{time.milliseconds}" + ("" if number == 1 else f"_{number}")
    return name if suffix is None else f"{name}.{suffix}"


def batch_marker(event: Any) -> dict[str, Any]:
    """What a batch directory's `BATCH_MARKER` says of the batch of `event`.

    Its source, time and index, and a digest of what else the event carries (parents
    included, without their indexes): enough to tell two batches of one millisecond apart and
    to know a re-run's own directory, without copying a request's body into the output.

    Examples:
        >>> from reactive_spark.events import Event
        >>> sorted(batch_marker(Event(None, 3, Time(5))))
        ['event', 'index', 'source', 'time']
    """
    fields = event.describe()
    # as a checkpoint gives it back to a re-run: JSON's keys, lists, reprs of the rest
    text = json.dumps(json.loads(json.dumps(_without_numbers(fields), default=repr)))
    return {
        "source": fields["source"],
        "time": fields["time"],
        "index": fields["index"],
        "event": hashlib.sha256(text.encode()).hexdigest(),
    }


def _without_numbers(fields: Any) -> Any:
    """`fields` without what numbering gives an event (a backfill may number it otherwise)."""
    if not isinstance(fields, dict):
        return fields
    return {
        key: _without_numbers(value)
        for key, value in fields.items()
        if key not in ("index", "instanceId", "standsFor")
    }


def batch_directory(
    sc: Any, prefix: str, suffix: str | None, time: Time, marker: dict[str, Any], *, replacing: bool
) -> str:
    """Where the batch with `marker` (`batch_marker`) goes: `batch_path(prefix, suffix, time)`.

    Unless another batch of the same millisecond wrote that directory (two files caught up
    with one modification time, two triggers in one millisecond): then the first of
    `prefix-<time ms>_2[.suffix]`, `_3`, ... that is free or the batch's own. Each directory
    names the batch that wrote it (`BATCH_MARKER`); one without (written before there were
    markers) counts as the batch's own. Replacing (a backfill), a directory is the batch's own
    if the same event wrote it, whatever index the event had then.
    """
    number = 1
    while True:
        path = batch_path(prefix, suffix, time, number)
        final, fs = _hadoop(sc, path)
        found = _hadoop(sc, f"{path}/{BATCH_MARKER}")[0]
        if not (fs.exists(final) and fs.exists(found)):
            return path  # free, or written before there were markers
        if _same_batch(json.loads(_read_text(sc, fs, found)), marker, replacing=replacing):
            return path
        number += 1


def _same_batch(written: dict[str, Any], marker: dict[str, Any], *, replacing: bool) -> bool:
    if replacing:  # a backfill may number an event otherwise than the live run did
        return {**written, "index": None} == {**marker, "index": None}
    return written == marker


def _read_text(sc: Any, fs: Any, path: Any) -> str:
    stream = fs.open(path)
    try:
        return str(sc._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))  # noqa: SLF001
    finally:
        stream.close()


def hadoop_configuration(sc: Any) -> Any:
    """The SparkContext's Hadoop configuration (a JVM object: `.get(key)` reads a key).

    PySpark has no public API for Hadoop's configuration or file systems; `_jvm` and `_jsc` are
    how PySpark's own code reaches them.
    """
    return sc._jsc.hadoopConfiguration()  # noqa: SLF001


def _hadoop(sc: Any, path: str) -> tuple[Any, Any]:
    """`(Path, FileSystem)` of `path`, through the JVM."""
    jvm = sc._jvm  # noqa: SLF001
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path, hadoop_path.getFileSystem(hadoop_configuration(sc))


def save_atomically(
    rdd: RDD[Any],
    path: str,
    write: Callable[[RDD[Any], str], None],
    *,
    replace: bool = False,
    marker: dict[str, Any] | None = None,
) -> bool:
    """Write `rdd` with `write(rdd, tmp)` and rename it to `path`; skip if `path` exists.

    With `replace` (a backfill), an existing `path` is replaced by the new batch instead, in one
    swap on a local file system (see `exchange`); on other file systems the old batch is moved
    aside, the new one renamed into place, then the old one deleted. Works on any Hadoop file
    system Spark can write to. With `marker` (`batch_marker`), the directory names its batch
    in a `BATCH_MARKER` file (see `batch_directory`). Returns whether the batch was written.
    """
    final, fs = _hadoop(rdd.context, path)
    if fs.exists(final) and not replace:
        return False
    temporary = _hidden_beside(rdd.context, final)
    # a crash from here until the rename leaves `temporary` behind: see remove_interrupted_writes
    try:
        write(rdd, temporary.toString())
        if marker is not None:
            file = fs.create(_hadoop(rdd.context, f"{temporary.toString()}/{BATCH_MARKER}")[0])
            try:
                file.write(json.dumps(marker).encode())
            finally:
                file.close()
        if replace and fs.exists(final):
            _replace(fs, temporary, final, _hidden_beside(rdd.context, final))
            return True
        if fs.rename(temporary, final):
            return True
        if fs.exists(final):
            return False
        raise OutputWriteError(f"could not rename {temporary.toString()} to {path}")
    finally:
        if fs.exists(temporary):
            fs.delete(temporary, True)


def _hidden_beside(sc: Any, final: Any) -> Any:
    """A new hidden sibling of the batch directory `final`, of the form recovery removes.

    `_temporary-<name>-<hex>`: readers' globs (`daily-*`) never match it, and a crash that
    leaves it behind is cleaned up by `remove_interrupted_writes`.
    """
    parent = final.getParent().toString()
    return _hadoop(sc, f"{parent}/_temporary-{final.getName()}-{uuid.uuid4().hex}")[0]


def _replace(fs: Any, new: Any, final: Any, aside: Any) -> None:
    """Put the directory `new` at `final` in place of the one there.

    Locally the two are swapped (`exchange`: `new` then holds the old batch). Elsewhere the old
    batch is renamed to the hidden `aside`, `new` to `final`, and `aside` deleted; if `new`
    cannot be renamed, the old batch is renamed back, so `final` keeps it.
    """
    local, local_new = _local_path(fs, final), _local_path(fs, new)
    if local is not None and local_new is not None:
        exchange(local, local_new)
        return
    if not fs.rename(final, aside):
        raise OutputWriteError(f"could not move {final.toString()} aside to replace it")
    if not fs.rename(new, final):
        restored = fs.rename(aside, final)
        raise OutputWriteError(
            f"could not rename {new.toString()} to {final.toString()}; the old batch "
            + ("is back in place" if restored else f"is left at {aside.toString()}")
        )
    fs.delete(aside, True)


def _local_path(fs: Any, path: Any) -> str | None:
    """`path` on the local disk, or None if it lives on another file system.

    A path without a scheme (`batch_path` makes local prefixes absolute, without `file:`) is on
    the default file system, `fs.defaultFS`, which may be HDFS: only the path qualified by its
    file system says.
    """
    qualified = path.makeQualified(fs.getUri(), fs.getWorkingDirectory()).toUri()
    return qualified.getPath() if qualified.getScheme() == "file" else None


#: Linux's `renameat2` flag that swaps two paths atomically.
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange(path: str, other: str) -> None:
    """Swap the local paths `path` and `other` (both exist), atomically where Linux can.

    On Linux (`renameat2` with `RENAME_EXCHANGE`) nobody ever sees either path missing or
    half swapped. Elsewhere, or on a file system that cannot, `path` is moved aside (to a hidden
    name recovery removes, `_temporary-<name>-<hex>`), `other` renamed to it (or, if that
    fails, the old one renamed back), and the old one renamed to `other`: a reader may then
    find `path` missing for that instant, never a mix of the two.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> root = Path(tempfile.mkdtemp())
        >>> (root / "old").mkdir(); (root / "old" / "a").write_text("1")
        1
        >>> (root / "new").mkdir(); (root / "new" / "a").write_text("2")
        1
        >>> exchange(str(root / "old"), str(root / "new"))
        >>> (root / "old" / "a").read_text(), (root / "new" / "a").read_text()
        ('2', '1')
    """
    renameat2 = _renameat2()
    if renameat2 is not None:
        done = renameat2(
            _AT_FDCWD, os.fsencode(path), _AT_FDCWD, os.fsencode(other), _RENAME_EXCHANGE
        )
        if done == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise OutputWriteError(code, f"could not swap {other} into {path}: {os.strerror(code)}")
    parent, name = os.path.split(path)
    aside = os.path.join(parent, f"_temporary-{name}-{uuid.uuid4().hex}")
    os.rename(path, aside)
    try:
        os.rename(other, path)
    except OSError:
        os.rename(aside, path)
        raise
    shutil.move(aside, other)


@functools.cache
def _renameat2() -> Any:
    """The C library's `renameat2`, if this platform has it (glibc 2.28 and later)."""
    library = libc()
    try:
        function = getattr(library, "renameat2")  # noqa: B009
    except AttributeError:
        return None
    function.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    function.restype = ctypes.c_int
    return function


def remove_interrupted_writes(sc: Any, prefix: str, suffix: str | None = None) -> list[str]:
    """Delete the temporary directories of `prefix`'s batches that a crash left behind.

    Only names `save_atomically` makes for this prefix match (`_temporary-<name>-<time ms>
    [_<number>][.suffix]-<hex>`), so other outputs in the same directory are left alone.
    Returns the deleted paths.

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
    pattern = re.compile(rf"^_temporary-{re.escape(name)}-\d+(_\d+)?{ending}-[0-9a-f]{{32}}$")
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
