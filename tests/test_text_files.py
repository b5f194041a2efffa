"""Text file streams read exactly what Spark's `textFile` reads: an oracle on tricky files."""

from __future__ import annotations

import bz2
import gzip
import random
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from pyspark import SparkContext, cloudpickle

from reactive_spark.dstream import text_files
from reactive_spark.dstream.text_files import (
    LineFormat,
    SplitReading,
    line_format,
    split_reader,
    text_splits,
)
from reactive_spark.errors import InvalidArgumentError

TRICKY = {
    "plain": b"a\nb\nc\n",
    "no-final-end": b"a\nb",
    "crlf": b"one\r\ntwo\r\n\r\nfour",
    "cr-only": b"one\rtwo\r\rfour\r",
    "mixed": b"a\r\n\rb\n\r\n\n\rc",
    "blank-lines": b"\n\n\nx\n\n",
    "bom": b"\xef\xbb\xbfhead\nbody\n",
    "bom-only": b"\xef\xbb\xbf",
    "not-utf8": b"ok\n\xff\xfe bad \xc3\x28 \xe2\x82\nend\xf0\x9f\x98\n",
    "unicode": "zürich\n東京\r\n😀\n\u2028inside\x0bvtab\x0cff\n".encode(),
    "empty": b"",
    "one-newline": b"\n",
}


def spark_lines(sc: SparkContext, paths: list[str]) -> list[list[str]]:
    return sc.textFile(",".join(paths), 1).glom().collect()


def spark_split_lines(sc: SparkContext, paths: list[str], block: int) -> list[list[str]]:
    """What Spark reads with `fs.local.block.size` at `block`."""
    conf = sc._jsc.hadoopConfiguration()
    conf.set("fs.local.block.size", str(block))
    conf.set("fs.file.impl.disable.cache", "true")  # else Spark's file system keeps its size
    try:
        return spark_lines(sc, paths)
    finally:
        conf.unset("fs.local.block.size")
        conf.unset("fs.file.impl.disable.cache")


def our_lines(sc: SparkContext, paths: list[str], format: LineFormat) -> list[list[str]]:
    return SplitReading(sc).lines(text_splits(paths, format), format).glom().collect()


def hadoop_format(sc: SparkContext) -> LineFormat:
    return line_format(sc._jsc.hadoopConfiguration().get)


def test_tricky_files_read_as_spark_reads_them(sc: SparkContext, tmp_path: Path) -> None:
    paths = []
    for name, data in TRICKY.items():
        path = tmp_path / f"{name}.txt"
        path.write_bytes(data)
        paths.append(str(path))
    assert our_lines(sc, paths, hadoop_format(sc)) == spark_lines(sc, paths)
    for path in paths:  # and each on its own
        assert our_lines(sc, [path], hadoop_format(sc)) == spark_lines(sc, [path]), path


@pytest.mark.parametrize("seed", range(4))
def test_split_files_read_every_line_once_as_spark_does(
    sc: SparkContext, tmp_path: Path, seed: int
) -> None:
    """Small blocks force many splits; line ends fall on, before and after their edges."""
    rng = random.Random(seed)
    pieces = [b"\n", b"\r\n", b"\r", b"x", b"yz", b"\xef\xbb\xbf", b"\xc3\xa9", b"\xff"]
    paths = []
    for name in ("first.txt", "second.txt"):  # the block is cut from both files' total size
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(50, 400)))
        (tmp_path / name).write_bytes(data)
        paths.append(str(tmp_path / name))
    block = rng.randint(6, 37)  # a few hundred splits at most: one Spark task each
    expected = spark_split_lines(sc, paths, block)
    assert len(expected) > 2
    assert our_lines(sc, paths, LineFormat(block_size=block)) == expected


def test_a_long_line_starting_at_a_split_end_is_read_whole(
    sc: SparkContext, tmp_path: Path
) -> None:
    block = 70_000
    path = tmp_path / "long.txt"
    path.write_bytes(b"x" * (block - 1) + b"\n" + b"y" * 200_000 + b"\r\nend\r")
    expected = spark_split_lines(sc, [str(path)], block)
    assert [len(lines) for lines in expected] == [2, 0, 0, 1]
    assert our_lines(sc, [str(path)], LineFormat(block_size=block)) == expected


def test_compressed_files_are_decompressed_as_spark_does(sc: SparkContext, tmp_path: Path) -> None:
    text = b"first\r\nsecond\nthird"
    files = {
        "a.gz": gzip.compress(text) + gzip.compress(b"\nmore"),  # two members
        "b.bz2": bz2.compress(text),
        "c.deflate": zlib.compress(text),
    }
    paths = []
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        paths.append(str(tmp_path / name))
    assert our_lines(sc, paths, hadoop_format(sc)) == spark_lines(sc, paths)


def test_a_custom_record_delimiter_is_honoured(sc: SparkContext, tmp_path: Path) -> None:
    path = tmp_path / "records.txt"
    path.write_bytes(b"a||b\n||||c||")
    conf = sc._jsc.hadoopConfiguration()
    conf.set("textinputformat.record.delimiter", "||")
    try:
        format = hadoop_format(sc)
        expected = spark_lines(sc, [str(path)])
    finally:
        conf.unset("textinputformat.record.delimiter")
    assert format.delimiter == b"||"
    assert our_lines(sc, [str(path)], format) == expected == [["a", "b\n", "", "c"]]


def test_a_codec_python_cannot_read_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "data.snappy"
    path.write_bytes(b"\x00")
    with pytest.raises(InvalidArgumentError, match=r"data\.snappy"):
        text_splits([str(path)])


def test_where_reads_end_does_not_change_the_lines(
    sc: SparkContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading a few bytes at a time (here, in the driver) gives Spark's lines all the same."""
    paths = []
    for name, data in TRICKY.items():
        for extension, compress in (
            ("", bytes),
            (".gz", gzip.compress),
            (".deflate", zlib.compress),
        ):
            path = tmp_path / f"{name}.txt{extension}"
            path.write_bytes(compress(data))
            paths.append(str(path))
    expected = [line for lines in spark_split_lines(sc, paths, 5) for line in lines]
    format = LineFormat(block_size=5)
    for read_ahead in (1, 2, 3, 7):
        monkeypatch.setattr(text_files, "READ_AHEAD", read_ahead)
        assert list(split_reader(format)(text_splits(paths, format))) == expected, read_ahead


def test_a_bz2_or_delimited_file_larger_than_a_block_is_one_partition_of_sparks_lines(
    sc: SparkContext, tmp_path: Path
) -> None:
    text = b"".join(f"line {n}\r\n".encode() for n in range(2_000))
    (tmp_path / "big.bz2").write_bytes(bz2.compress(text))
    paths = [str(tmp_path / "big.bz2")]
    expected = spark_split_lines(sc, paths, 1_000)
    assert len(expected) > 1  # Hadoop splits bzip2 by blocks
    ours = our_lines(sc, paths, LineFormat(block_size=1_000))
    assert ours == [[line for lines in expected for line in lines]]


def test_executors_need_not_have_reactive_spark_to_read_a_file_stream(
    sc: SparkContext, tmp_path: Path
) -> None:
    """Spark ships the reader by value: a worker that cannot import reactive_spark runs it."""
    (tmp_path / "a.txt").write_bytes(b"x\r\ny")
    lines = SplitReading(sc).lines(text_splits([str(tmp_path / "a.txt")]))
    shipped = cloudpickle.dumps(lines.func)  # what a task runs, ours and Spark's pipelined
    worker = (
        "import pickle, sys\n"
        "sys.modules['reactive_spark'] = None  # any import of it fails\n"
        "run = pickle.load(sys.stdin.buffer)\n"
        "print(list(run(0, iter([]))))  # partition 0 (its index is made by the function)\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", worker], input=shipped, capture_output=True, check=True
    )
    assert ran.stdout.decode().strip() == "['x', 'y']"


def py4j_calls(sc: SparkContext, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The commands sent to the JVM from now on (this test's thread is the only sender)."""
    client = sc._gateway._gateway_client  # type: ignore[union-attr]
    sent: list[str] = []
    send = client.send_command

    def counted(command: str, *args: Any, **kwargs: Any) -> Any:
        sent.append(command)
        return send(command, *args, **kwargs)

    monkeypatch.setattr(client, "send_command", counted)
    return sent


def test_a_batch_of_a_split_count_seen_before_is_planned_without_the_jvm(
    sc: SparkContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = []
    for name, text in (("a", "a1\na2\n"), ("b", "b1\n"), ("c", "c1\nc2\nc3")):
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    reading = SplitReading(sc)
    first = reading.lines(text_splits(paths[:1]))
    sent = py4j_calls(sc, monkeypatch)
    second = reading.lines(text_splits(paths[1:2]))
    assert sent == []  # one split again: nothing asked of the JVM until an action
    monkeypatch.undo()
    # the two share the RDD of indices, nothing else: each reads its own split, and caching
    # one (as windows and `remember` do) leaves the other as it was
    first.cache()
    assert first.collect() == ["a1", "a2"]
    assert second.collect() == ["b1"] and not second.is_cached
    first.unpersist()
    assert second.collect() == ["b1"]
    assert sc.union([first, second]).collect() == ["a1", "a2", "b1"]
    both = reading.lines(text_splits([paths[2], paths[0]]))
    assert both.glom().collect() == [["c1", "c2", "c3"], ["a1", "a2"]]


def test_only_the_last_split_counts_keep_their_indices(
    sc: SparkContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in "abc":
        (tmp_path / name).write_text(f"{name}\n")
    paths = [str(tmp_path / name) for name in "abc"]
    monkeypatch.setattr(SplitReading, "KEEP", 2)
    reading = SplitReading(sc)
    for count in (1, 2, 3):  # 1 is forgotten when 3 comes
        assert reading.lines(text_splits(paths[:count])).collect() == list("abc"[:count])
    sent = py4j_calls(sc, monkeypatch)
    reading.lines(text_splits(paths))
    reading.lines(text_splits(paths[:2]))
    assert sent == []  # kept
    again = reading.lines(text_splits(paths[2:]))
    assert sent  # made again
    monkeypatch.undo()
    assert again.collect() == ["c"]


def test_a_large_batch_gives_each_task_its_own_split(
    sc: SparkContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # past SHIPPED the splits are parallelized: a task's function does not carry them all
    paths = []
    for index in range(3):
        (tmp_path / f"{index}").write_text(f"line {index}\n")
        paths.append(str(tmp_path / f"{index}"))
    monkeypatch.setattr(SplitReading, "SHIPPED", 2)
    reading = SplitReading(sc)
    shipped = reading.lines(text_splits(paths[:2]))
    parallelized = reading.lines(text_splits(paths))
    assert parallelized.glom().collect() == [["line 0"], ["line 1"], ["line 2"]]
    assert shipped.glom().collect() == [["line 0"], ["line 1"]]
    assert paths[0].encode() in cloudpickle.dumps(shipped.func)
    assert paths[0].encode() not in cloudpickle.dumps(parallelized.func)
