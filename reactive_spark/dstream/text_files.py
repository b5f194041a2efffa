"""Local text files as an RDD of lines, split, ended and decoded as Spark's `textFile` does.

A file stream's batch reads the files it found (or its watcher's event named) in the Python
workers, from a small list of splits the driver makes: no Hadoop RDD, so no broadcast of the
Hadoop configuration for every batch, which took most of the time from a file's arrival to
its batch. The workers read the lines `sc.textFile(path, 1)` gives for the same files, in the
same order, streaming (a split is read a block at a time, a compressed file decompressed as it
is read):

- each file is split as Hadoop's `FileInputFormat` splits it with `minPartitions=1` (blocks of
  `fs.local.block.size`, 32 MiB by default, at least
  `mapreduce.input.fileinputformat.split.minsize`; the last split takes up to 10% more; an
  empty file has none). Two differences in partitions, not in lines: a compressed file is one
  split (Hadoop splits a `.bz2` file larger than a block), and so is every file when the Hadoop
  configuration sets `textinputformat.record.delimiter`;
- lines end at LF, CR LF or CR (or at that delimiter), a final line needs no end, a UTF-8 byte
  order mark at the start of a file is dropped, and bytes that are not UTF-8 are replaced by
  U+FFFD;
- `.gz`, `.bz2` and `.deflate` files are decompressed; `.lz4`, `.snappy` and `.zst` files
  (Hadoop's other codecs) are an error naming the file.
"""

from __future__ import annotations

import bz2
import gzip
import itertools
import math
import os
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

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
#: Hadoop's codecs Python reads, by extension: gzip and bzip2 (several members or streams
#: one after another too) and zlib (`.deflate`, Hadoop's DefaultCodec).
_COMPRESSED = (".gz", ".bz2", ".deflate")
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
    min_split_size: int = 1


DEFAULT_FORMAT = LineFormat()


def line_format(hadoop_get: Callable[[str], str | None]) -> LineFormat:
    """The `LineFormat` a Hadoop configuration sets (`hadoop_get(key)` reads a key of it).

    Examples:
        >>> line_format({"textinputformat.record.delimiter": "|"}.get)
        LineFormat(block_size=33554432, delimiter=b'|', min_split_size=1)
    """
    block = hadoop_get("fs.local.block.size")
    delimiter = hadoop_get("textinputformat.record.delimiter")
    min_size = hadoop_get("mapreduce.input.fileinputformat.split.minsize")
    return LineFormat(
        int(block) if block else LOCAL_BLOCK_SIZE,
        delimiter.encode() if delimiter else None,
        max(1, int(min_size)) if min_size else 1,
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
    goal = sum(sizes)  # minPartitions=1: the total size
    split_size = max(format.min_split_size, min(goal, format.block_size))
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
    ends = _LINE_END if format.delimiter is None else re.compile(re.escape(format.delimiter))
    longest_end = 2 if format.delimiter is None else len(format.delimiter)
    for split in splits:
        yield from _read_split(split, ends, longest_end)


def _read_split(split: TextSplit, ends: re.Pattern[bytes], longest_end: int) -> Iterator[str]:
    """The lines starting in the split, as Hadoop's `LineRecordReader` reads them.

    A line starts at offset 0 or right after a line end; a split holds the lines starting at
    `p` with `start < p <= end` (from 0 for the first split), so each line is read by exactly
    one split. A compressed file is one split, its offsets those of the decompressed bytes.
    """
    compressed = _decompressor(split.path) is not None
    end = math.inf if compressed else split.start + split.length
    base = max(0, split.start - 1)  # the byte before tells whether a line starts at `start`
    with open(split.path, "rb") as file:
        file.seek(base)
        chunks = _decompressed(split.path, file) if compressed else _chunks(file)
        for position, line, ended in _positioned_lines(chunks, base, ends, longest_end):
            if position > end:
                return
            if split.start > 0 and position <= split.start:
                continue  # the previous split's
            if position == 0 and line.startswith(_BOM):
                line = line[len(_BOM) :]
                if not line and not ended:
                    return  # Hadoop reads a file of just a byte order mark as no line
            yield line.decode("utf-8", "replace")


def _positioned_lines(
    chunks: Iterable[bytes], base: int, ends: re.Pattern[bytes], longest_end: int
) -> Iterator[tuple[int, bytes, bool]]:
    """`(offset, line, whether a line end ended it)` of the bytes `chunks` hold from `base`.

    The first line is whatever comes before the first line end. A CR at the end of a chunk
    waits for the next one: an LF may follow it.
    """
    buffer = bytearray()
    offset = base  # of buffer[0]
    searched = 0  # no line end starts before this index of the buffer
    for chunk in itertools.chain(chunks, [None]):
        final = chunk is None  # the end of the bytes: a CR there ends a line
        if chunk is not None:
            buffer += chunk
        position = 0
        while True:
            found = ends.search(buffer, max(position, searched))
            if found is None or (
                not final and found.end() == len(buffer) and found.group() == b"\r"
            ):
                searched = len(buffer) - longest_end + 1 if found is None else found.start()
                break
            yield offset + position, bytes(buffer[position : found.start()]), True
            position = found.end()
        del buffer[:position]
        offset += position
        searched = max(0, searched - position)
    if buffer:
        yield offset, bytes(buffer), False


def _chunks(file: BinaryIO) -> Iterator[bytes]:
    while chunk := file.read(READ_AHEAD):
        yield chunk


def _decompressed(path: str, file: BinaryIO) -> Iterator[bytes]:
    if path.endswith(".deflate"):  # zlib streams, one after another
        inflate = zlib.decompressobj()
        for chunk in _chunks(file):
            while chunk:
                yield inflate.decompress(chunk)
                chunk = inflate.unused_data if inflate.eof else b""
                if inflate.eof:
                    inflate = zlib.decompressobj()
        return
    opened = gzip.GzipFile(fileobj=file) if path.endswith(".gz") else bz2.BZ2File(file)
    with opened:
        yield from _chunks(opened)  # type: ignore[arg-type]


def _decompressor(path: str) -> str | None:
    return next((extension for extension in _COMPRESSED if path.endswith(extension)), None)


def splits_rdd(sc: SparkContext, splits: list[TextSplit], format: LineFormat) -> RDD[str]:
    """An RDD of the lines of `splits`, one partition per split."""
    if not splits:
        return sc.emptyRDD()
    return sc.parallelize(splits, len(splits)).mapPartitions(lambda part: read_splits(part, format))
