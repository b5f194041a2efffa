"""Output operations: files written exactly once, pprint's header, callback shapes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pyspark import SparkContext

from reactive_spark import Seconds, Time
from reactive_spark.dstream.files import batch_marker
from reactive_spark.events import Event, RestEvent
from reactive_spark.sources.derived import DerivedEvent

from .helpers import virtual

T0 = Time(5_000)


def read_text_dir(path: Path) -> list[str]:
    lines: list[str] = []
    for part in sorted(path.glob("part-*")):
        lines += part.read_text().splitlines()
    return lines


async def test_saveAsTextFiles_writes_one_directory_per_batch(
    sc: SparkContext, tmp_path: Path
) -> None:
    ssc = virtual(sc, Seconds(1), T0)
    prefix = str(tmp_path / "out")
    returned = ssc.queueStream([["a", "b"], ["c"]]).saveAsTextFiles(prefix, "txt")
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(2))
    await ssc.stop(stopSparkContext=False)
    assert sorted(os.listdir(tmp_path)) == ["out-6000.txt", "out-7000.txt"]
    assert read_text_dir(tmp_path / "out-6000.txt") == ["a", "b"]
    assert read_text_dir(tmp_path / "out-7000.txt") == ["c"]
    assert (tmp_path / "out-6000.txt" / "_SUCCESS").exists()
    assert returned.isOutput


async def test_existing_batch_directory_is_not_written_again(
    sc: SparkContext, tmp_path: Path
) -> None:
    committed = tmp_path / "out-6000"
    committed.mkdir()
    (committed / "part-00000").write_text("already\n")
    ssc = virtual(sc, Seconds(1), T0)
    ssc.queueStream([["new"], ["second"]]).saveAsTextFiles(str(tmp_path / "out"))
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(2))
    await ssc.stop(stopSparkContext=False)
    assert read_text_dir(committed) == ["already"]
    assert read_text_dir(tmp_path / "out-7000") == ["second"]
    assert sorted(os.listdir(tmp_path)) == ["out-6000", "out-7000"]


class NamedSource:
    """Stands for an event source in events built by hand: only its name is read."""

    def __init__(self, name: str) -> None:
        self.name = name


class Crash(BaseException):
    """A simulated crash: the process dies here (a BaseException is never caught as a failure)."""


async def test_batches_of_one_millisecond_each_get_a_directory_and_a_rerun_writes_none(
    sc: SparkContext, tmp_path: Path
) -> None:
    """Two uploads triggered in one millisecond (as two files caught up with one modification
    time): the second batch's output went nowhere, its directory name being the first's. The
    crash after both writes re-runs the second batch, which finds its own directory."""
    prefix, checkpoint = str(tmp_path / "out" / "o"), str(tmp_path / "checkpoint")

    def build(ssc: Any, crash: bool) -> Any:
        uploads = ssc.manualSource("uploads")
        batches = ssc.queueStream([["upload A"], ["upload B"]])
        batches.saveAsTextFiles(prefix).bind(uploads)

        def die_after_the_second(time: Any, rdd: Any, event: Any) -> None:
            if crash and event.value == "B":
                raise Crash("killed after the second batch's write")

        batches.foreachRDD(die_after_the_second).bind(uploads)
        return uploads

    first = virtual(sc, None, T0, checkpoint=checkpoint)
    uploads = build(first, crash=True)
    await first.start()
    uploads.trigger("A")
    uploads.trigger("B")
    with pytest.raises(Crash):
        await first.advanceTo(T0)
    await first.stop(stopSparkContext=False)
    written = {name: read_text_dir(tmp_path / "out" / name) for name in ["o-5000", "o-5000_2"]}
    assert written == {"o-5000": ["upload A"], "o-5000_2": ["upload B"]}

    second = virtual(sc, None, T0, checkpoint=checkpoint)
    build(second, crash=False)
    await second.start()  # re-runs the second batch: both directories are there already
    assert await second.advanceTo(T0) == []
    await second.stop(stopSparkContext=False)
    assert sorted(os.listdir(tmp_path / "out")) == ["o-5000", "o-5000_2"]
    assert read_text_dir(tmp_path / "out" / "o-5000_2") == ["upload B"]


async def test_failed_write_leaves_nothing_behind(sc: SparkContext, tmp_path: Path) -> None:
    ssc = virtual(sc, Seconds(1), T0)
    ssc.queueStream([[1, 0]]).map(lambda x: str(1 // x)).saveAsTextFiles(str(tmp_path / "o"))
    await ssc.start()
    failures = await ssc.advanceTo(T0 + Seconds(1))
    await ssc.stop(stopSparkContext=False)
    assert len(failures) == 1
    assert os.listdir(tmp_path) == []


async def test_saveAsObjectFiles_round_trips(sc: SparkContext, tmp_path: Path) -> None:
    ssc = virtual(sc, Seconds(1), T0)
    ssc.queueStream([[("a", 1), ("b", [2, 3])]]).saveAsObjectFiles(str(tmp_path / "obj"))
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(1))
    await ssc.stop(stopSparkContext=False)
    assert sorted(sc.pickleFile(str(tmp_path / "obj-6000")).collect()) == [
        ("a", 1),
        ("b", [2, 3]),
    ]


async def test_pprint_and_print(sc: SparkContext, capsys: pytest.CaptureFixture[str]) -> None:
    ssc = virtual(sc, Seconds(1), T0)
    stream = ssc.queueStream([list(range(12))])
    stream.pprint()
    stream.print(2)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(1))
    await ssc.stop(stopSparkContext=False)
    out = capsys.readouterr().out
    header = "-------------------------------------------\nTime: 1970-01-01 00:00:06+00:00\n"
    header += "-------------------------------------------\n"
    expected_full = header + "\n".join(str(i) for i in range(10)) + "\n...\n\n"
    expected_short = header + "0\n1\n...\n\n"
    assert out == expected_full + expected_short


async def test_foreachRDD_callback_shapes(sc: SparkContext) -> None:
    import functools

    ssc = virtual(sc, Seconds(1), T0)
    calls: list[tuple[str, object]] = []
    stream = ssc.queueStream([[1]])
    stream.foreachRDD(lambda rdd: calls.append(("rdd", rdd.collect())))
    stream.foreachRDD(lambda time, rdd: calls.append(("time", time.timestamp())))
    stream.foreachRDD(lambda time, rdd, event: calls.append(("event", event.index)))
    stream.foreachRDD(functools.partial(lambda tag, rdd: calls.append((tag, rdd.count())), "p"))

    class Sink:
        def __call__(self, time, rdd):  # type: ignore[no-untyped-def]
            calls.append(("callable", time.tzinfo is not None))

    stream.foreachRDD(Sink())
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(1))
    await ssc.stop(stopSparkContext=False)
    assert calls == [("rdd", [1]), ("time", 6.0), ("event", 0), ("p", 1), ("callable", True)]


def test_a_batch_marker_names_the_event_without_its_contents_or_numbering() -> None:
    """A backfill renumbers a derived event and its parents: the marker matches it but for the
    index. A value JSON cannot sort keeps no marker from being written, and a request's body
    is not copied into the output."""
    rest = NamedSource("triggers")
    tick = NamedSource("tick")
    live = DerivedEvent.of(rest, T0, Event(tick, 4, T0, 9), {1: "a", "b": float("nan")})
    live.index, live.instanceId = 7, 11
    backfilled = DerivedEvent.of(rest, T0, Event(tick, 0, T0, 2), {1: "a", "b": float("nan")})
    backfilled.index = 1
    marker, again = batch_marker(live), batch_marker(backfilled)
    assert marker["index"] == 7 and again["index"] == 1
    assert {**marker, "index": None} == {**again, "index": None}
    assert batch_marker(live) == marker  # the same each time (NaN included)
    request = RestEvent(rest, 0, T0, "POST", "/run", {}, {"password": "s3cret"})
    assert "s3cret" not in json.dumps(batch_marker(request))
