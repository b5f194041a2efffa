"""Local text files as an RDD of lines, split, ended and decoded as Spark's `textFile` does.

A file stream's batch reads the files it found (or its watcher's event named) in the Python
workers, from a small list of splits the driver makes: no Hadoop RDD, so no broadcast of the
Hadoop configuration for every batch, which took most of the time from a file's arrival to
its batch. What the workers read is what `sc.textFile(path, 1)` gives for the same files, in
the same order and partitions:

- each file is split as Hadoop's `FileInputFormat` splits it with `minPartitions=1` (blocks of
  `fs.local.block.size`, 32 MiB by default; the last split takes up to 10% more; an empty file
  has none); a compressed file is one split;
- lines end at LF, CR LF or CR (or at `textinputformat.record.delimiter` when the Hadoop
  configuration sets one: then a file is one split), a final line needs no end, a UTF-8 byte
  order mark at the start of a file is dropped, and bytes that are not UTF-8 are replaced by
  U+FFFD;
- `.gz`, `.bz2` and `.deflate` files are decompressed; `.lz4`, `.snappy` and `.zst` files
  (Hadoop's other codecs) are an error naming the file.
"""

from __future__ import annotations

import bz2
import gzip
import os
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from reactive_spark.errors import InvalidArgumentError

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext

__all__ = [
    "DEFAULT_FORMAT",
    "LineFormat",
    "TextSplit",
    "line_format",
    "read_splits",
    "splits_rdd",
    "text_splits",
]

#: Hadoop's default for `fs.local.block.size`: the size of a split of a local file.
LOCAL_BLOCK_SIZE = 32 * 1024 * 1024
#: Hadoop's `FileInputFormat.SPLIT_SLOP`: the last split may be this much larger than a block.
SPLIT_SLOP = 1.1
#: How much is read at a time past a split's end, to finish its last line.
READ_AHEAD = 64 * 1024

_BOM = b"\xef\xbb\xbf"
_LINE_END = re.compile(rb"\r\n|\r|\n")
_DECOMPRESS: dict[str, Callable[[bytes], bytes]] = {
    ".gz": gzip.decompress,
    ".bz2": bz2.decompress,
    ".deflate": zlib.decompress,
}
_UNREADABLE = (".lz4", ".snappy", ".zst")


class TextSplit(NamedTuple):
    """A byte range of a file that one partition reads."""

    path: str
    start: int
    length: int


class LineFormat(NamedTuple):
    """How files are split and their lines ended: Hadoop's settings for `textFile`.

    Examples:
        >>> LineFormat().delimiter is None
        True
    """

    block_size: int = LOCAL_BLOCK_SIZE
    delimiter: bytes | None = None  # None: LF, CR LF or CR


DEFAULT_FORMAT = LineFormat()


def line_format(hadoop_get: Callable[[str], str | None]) -> LineFormat:
    """The `LineFormat` a Hadoop configuration sets (`hadoop_get(key)` reads a key of it).

    Examples:
        >>> line_format({"textinputformat.record.delimiter": "|"}.get)
        LineFormat(block_size=33554432, delimiter=b'|')
    """
    block = hadoop_get("fs.local.block.size")
    delimiter = hadoop_get("textinputformat.record.delimiter")
    return LineFormat(
        int(block) if block else LOCAL_BLOCK_SIZE,
        delimiter.encode() if delimiter else None,
    )


def text_splits(paths: Iterable[str], format: LineFormat = DEFAULT_FORMAT) -> list[TextSplit]:
    """The splits of `paths`, in order, as `sc.textFile(",".join(paths), 1)` makes them.

    Raises `InvalidArgumentError` naming a file compressed with a codec Python cannot read.

    Examples:
        >>> import tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "part")
        >>> with open(path, "wb") as file:
        ...     _ = file.write(b"x" * 100)
        >>> [(split.start, split.length) for split in text_splits([path], LineFormat(60))]
        [(0, 60), (60, 40)]
        >>> [(split.start, split.length) for split in text_splits([path], LineFormat(95))]
        [(0, 100)]
    """
    paths = list(paths)
    for path in paths:
        if path.endswith(_UNREADABLE):
            raise InvalidArgumentError(
                f"{path} is compressed with a codec reactive-spark cannot read (lz4, snappy, "
                "zstd); text file streams read plain, .gz, .bz2 and .deflate files"
            )
    sizes = [os.path.getsize(path) for path in paths]
    split_size = max(1, min(sum(sizes), format.block_size))  # minPartitions=1: the total
    splits = []
    for path, size in zip(paths, sizes, strict=True):
        if size == 0:
            continue  # no split (Spark's spark.hadoopRDD.ignoreEmptySplits)
        if format.delimiter is not None or _decompressor(path) is not None:
            splits.append(TextSplit(path, 0, size))
            continue
        remaining = size
        while remaining / split_size > SPLIT_SLOP:
            splits.append(TextSplit(path, size - remaining, split_size))
            remaining -= split_size
        splits.append(TextSplit(path, size - remaining, remaining))
    return splits


def read_splits(splits: Iterable[TextSplit], format: LineFormat) -> Iterator[str]:
    """The lines of `splits` (in a Python worker: a partition's function)."""
    for split in splits:
        yield from _read_split(split, format)


def _read_split(split: TextSplit, format: LineFormat) -> Iterator[str]:
    decompress = _decompressor(split.path)
    ends = _LINE_END if format.delimiter is None else re.compile(re.escape(format.delimiter))
    with open(split.path, "rb") as file:
        if decompress is not None or (
            split.start == 0 and split.length == os.fstat(file.fileno()).st_size
        ):
            whole = file.read()
            if decompress is not None:
                whole = decompress(whole)
            yield from _lines(whole, 0, 0, len(whole), ends, at_end=True)
            return
        base = max(0, split.start - 1)  # the byte before tells whether a line starts there
        file.seek(base)
        end = split.start + split.length - base  # the split's end, in `data`
        data = bytearray(file.read(end))
        at_end = False
        while not _ended_past(data, end, ends):  # read on until the line at the end has ended
            more = file.read(READ_AHEAD)
            if not more:
                at_end = True
                break
            data += more
        yield from _lines(bytes(data), base, split.start, split.start + split.length, ends, at_end)


def _ended_past(data: bytearray, end: int, ends: re.Pattern[bytes]) -> bool:
    """Whether a line end in `data` ends after `end`, and is whole (CR may precede an LF)."""
    for found in ends.finditer(data, max(0, end - 2)):
        if found.end() > end:
            return found.end() < len(data) or found.group() != b"\r"
    return False


def _lines(
    data: bytes, base: int, start: int, end: int, ends: re.Pattern[bytes], at_end: bool
) -> Iterator[str]:
    """The lines of `data` (read from file offset `base`) that start in the split's range.

    A line starts at offset 0 or right after a line end; the split `[start, end)` holds the
    lines starting at `p` with `start < p <= end` (from 0 for the first split), as Hadoop's
    `LineRecordReader` reads them: each line is read by exactly one split.
    """
    position = start - base if start == 0 else None
    if position is None:
        first = ends.search(data, 0)
        while first is not None and base + first.end() <= start:
            first = ends.search(data, first.end())
        position = None if first is None else first.end()
    while position is not None and base + position <= end:
        if position >= len(data) and at_end:
            return  # no line starts at the end of the file
        found = ends.search(data, position)
        line = data[position : found.start()] if found is not None else data[position:]
        if base + position == 0 and line.startswith(_BOM):
            line = line[len(_BOM) :]
            if not line and found is None:
                return  # Hadoop reads a file of just a byte order mark as no line at all
        yield line.decode("utf-8", "replace")
        position = found.end() if found is not None else None


def _decompressor(path: str) -> Callable[[bytes], bytes] | None:
    for extension, decompress in _DECOMPRESS.items():
        if path.endswith(extension):
            return decompress
    return None


def splits_rdd(sc: SparkContext, splits: list[TextSplit], format: LineFormat) -> RDD[str]:
    """An RDD of the lines of `splits`, one partition per split."""
    if not splits:
        return sc.emptyRDD()
    return sc.parallelize(splits, len(splits)).mapPartitions(lambda part: read_splits(part, format))
