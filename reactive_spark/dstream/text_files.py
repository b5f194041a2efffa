"""Local text files as an RDD of lines, split, ended and decoded as Spark's `textFile` does.

A file stream's batch reads the files it found (or its watcher's event named) in the Python
workers, from a small list of splits the driver makes: no Hadoop RDD, so no broadcast of the
Hadoop configuration for every batch, which took most of the time from a file's arrival to
its batch. As a rule, nor a call to the JVM while the batch is planned: the splits travel
inside the job's function (`SplitReading`). The workers read the lines `sc.textFile(path, 1)`
gives for the same files, in the same order, streaming (a split is read a block at a time, a
compressed file decompressed as it is read):

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
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from reactive_spark.errors import InvalidArgumentError

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext

__all__ = [
    "DEFAULT_FORMAT",
    "LineFormat",
    "SplitReading",
    "TextSplit",
    "line_format",
    "split_reader",
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
        if format.delimiter is not None or path.endswith(_COMPRESSED):
            splits.append(TextSplit(path, 0, size))
            continue
        remaining = size
        while remaining / split_size > SPLIT_SLOP:
            splits.append(TextSplit(path, size - remaining, split_size))
            remaining -= split_size
        splits.append(TextSplit(path, size - remaining, remaining))
    return splits


def split_reader(format: LineFormat) -> Callable[[Iterable[tuple[str, int, int]]], Iterator[str]]:
    """The function a partition runs in a Python worker: the lines of its splits.

    Everything it uses is defined inside it or comes from the standard library, so Spark ships
    it by value: executors need not have reactive-spark installed to read a file stream (as
    they need not for `sc.textFile`), and a worker's first batch imports nothing of it. It reads
    a split's lines as Hadoop's `LineRecordReader` does: a line starts at offset 0 or right
    after a line end, and a split holds the lines starting at `p` with `start < p <= end`
    (from 0 for the first split), so each line is read by exactly one split. A compressed file
    is one split, its offsets those of the decompressed bytes.

    Examples:
        >>> import tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "part")
        >>> with open(path, "wb") as file:
        ...     _ = file.write(b"one" + bytes([13, 10]) + b"two" + bytes([13]) + b"three")
        >>> list(split_reader(LineFormat())([(path, 0, 14)]))
        ['one', 'two', 'three']
    """
    delimiter = format.delimiter
    ends = _LINE_END if delimiter is None else re.compile(re.escape(delimiter))
    longest_end = 2 if delimiter is None else len(delimiter)
    read_ahead, bom, compressed_extensions = READ_AHEAD, _BOM, _COMPRESSED

    def chunks(file: Any) -> Iterator[bytes]:
        while chunk := file.read(read_ahead):
            yield chunk

    def decompressed(path: str, file: Any) -> Iterator[bytes]:
        if path.endswith(".deflate"):  # zlib streams, one after another
            inflate = zlib.decompressobj()
            for chunk in chunks(file):
                while chunk:
                    yield inflate.decompress(chunk)
                    chunk = inflate.unused_data if inflate.eof else b""
                    if inflate.eof:
                        inflate = zlib.decompressobj()
            return
        opened = gzip.GzipFile(fileobj=file) if path.endswith(".gz") else bz2.BZ2File(file)
        with opened:
            yield from chunks(opened)

    def positioned_lines(data: Iterable[bytes], base: int) -> Iterator[tuple[int, bytes, bool]]:
        """`(offset, line, whether a line end ended it)` of the bytes read from `base` on.

        The first line is whatever comes before the first line end. A CR at the end of a
        chunk waits for the next one: an LF may follow it.
        """
        buffer = bytearray()
        offset = base  # of buffer[0]
        searched = 0  # no line end starts before this index of the buffer
        for chunk in itertools.chain(data, [None]):
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

    def read_split(path: str, start: int, length: int) -> Iterator[str]:
        compressed = path.endswith(compressed_extensions)
        end = math.inf if compressed else start + length
        base = max(0, start - 1)  # the byte before tells whether a line starts at `start`
        with open(path, "rb") as file:
            file.seek(base)
            data = decompressed(path, file) if compressed else chunks(file)
            for position, line, ended in positioned_lines(data, base):
                if position > end:
                    return
                if start > 0 and position <= start:
                    continue  # the previous split's
                if position == 0 and line.startswith(bom):
                    line = line[len(bom) :]
                    if not line and not ended:
                        return  # Hadoop reads a file of just a byte order mark as no line
                yield line.decode("utf-8", "replace")

    def read(splits: Iterable[tuple[str, int, int]]) -> Iterator[str]:
        for path, start, length in splits:
            yield from read_split(path, start, length)

    return read


class SplitReading:
    r"""Makes the RDD of a batch's splits' lines, as a rule without a call to the JVM.

    `sc.parallelize(splits)` would cost about six round trips to the JVM and a temporary file
    per batch, before the output function could start. Instead partition `i` of an RDD of `n`
    partitions holding their index (made once for each `n`, the last `KEEP` of them kept)
    reads split `i`, the splits travelling inside the function the job ships; Spark builds the
    batch's RDD in the JVM when an action runs it. Every task gets that function whole, so a
    batch of more than `SHIPPED` splits is parallelized instead, a split to each partition; an
    empty batch is `sc.emptyRDD()`. One partition per split, as `sc.textFile(path, 1)`.

    Examples:
        >>> import tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "part")
        >>> with open(path, "w") as file:
        ...     _ = file.write("one\ntwo\n")
        >>> SplitReading(sc).lines(text_splits([path])).collect()
        ['one', 'two']
    """

    #: How many partition counts keep their RDD of indices.
    KEEP = 16
    #: The most splits that travel inside the job's function (a few kilobytes).
    SHIPPED = 64

    def __init__(self, sc: SparkContext) -> None:
        self._sc = sc
        self._made: OrderedDict[int, RDD[int]] = OrderedDict()

    def lines(self, splits: list[TextSplit], format: LineFormat = DEFAULT_FORMAT) -> RDD[str]:
        """An RDD of the lines of `splits`, one partition per split (`split_reader` reads them)."""
        if not splits:
            return self._sc.emptyRDD()
        # plain tuples: no class of ours to import on the executors
        plain = [(split.path, split.start, split.length) for split in splits]
        read = split_reader(format)
        if len(plain) > self.SHIPPED:
            return self._sc.parallelize(plain, len(plain)).mapPartitions(read)

        def read_splits(indices: Iterable[int]) -> Iterator[str]:
            return read(plain[index] for index in indices)

        return self._indices(len(plain)).mapPartitions(read_splits)

    def _indices(self, count: int) -> RDD[int]:
        """`count` partitions, partition `i` holding `i`, made once for each `count`.

        A `PipelinedRDD`: a map of it is made in Python alone (Spark pipelines the two
        functions into one, in the JVM when an action runs it).
        """
        indices = self._made.pop(count, None)
        if indices is None:
            indices = self._sc.parallelize(range(count), count)
        self._made[count] = indices  # last: the most recently used
        while len(self._made) > self.KEEP:
            self._made.popitem(last=False)
        return indices
