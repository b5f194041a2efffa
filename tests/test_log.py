"""Direct log streams on every log backend (file, Redis, Kafka): offset ranges, exactly-once
re-runs."""

from __future__ import annotations

import pickle
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark import SparkContext

from reactive_spark import Hours, Milliseconds, Minutes, Seconds, StreamingContext, Time
from reactive_spark.errors import InvalidArgumentError, InvalidCallbackError
from reactive_spark.log import (
    FileLog,
    MissingTimestampError,
    OffsetOutOfRangeError,
    OffsetRange,
    createRDD,
)

from .helpers import virtual
from .log_backends import redis_log_or_skip

T0 = Time(1_700_000_000_000)


@pytest.fixture(scope="session")
def kafka_deletes_records(kafka_bootstrap: str) -> bool:
    """Whether the broker implements DeleteRecords (Tansu's memory storage drops the connection)."""
    from kafka.errors import KafkaConnectionError

    from reactive_spark.log.kafka import KafkaLog

    probe = KafkaLog(kafka_bootstrap)
    topic = f"probe-{uuid.uuid4().hex[:8]}"
    probe.create_topic(topic)
    probe.append(topic, 1)
    try:
        probe.delete_before(topic, 0, 1)
    except KafkaConnectionError:
        return False
    finally:
        KafkaLog(kafka_bootstrap).delete_topic(topic)
    return True


def require_retention(request: pytest.FixtureRequest, log: Any) -> None:
    """Skip a retention case on a Kafka broker that cannot delete records, saying so."""
    if type(log).__name__ == "KafkaLog" and not request.getfixturevalue("kafka_deletes_records"):
        pytest.skip(
            f"the Kafka broker at {log.bootstrap} answers DeleteRecords by dropping the "
            "connection (Tansu's memory storage): retention cannot be tested on it"
        )


def test_offset_range_validation() -> None:
    assert OffsetRange("t", 1, 3, 7).count() == 4
    assert OffsetRange.fromList(OffsetRange("t", 1, 3, 7).toList()) == OffsetRange("t", 1, 3, 7)
    with pytest.raises(ValueError, match="untilOffset must not be below fromOffset 5, got 4"):
        OffsetRange("t", 0, 5, 4)
    with pytest.raises(ValueError, match="partition must be an int >= 0, got -1"):
        OffsetRange("t", -1, 0, 0)
    with pytest.raises(ValueError, match="topic must be a non-empty str"):
        OffsetRange("", 0, 0, 0)


def test_log_appends_and_reads(log: Any) -> None:
    for n in range(10):
        assert log.append("clicks", {"n": n}, partition=0) == (0, n)
    assert log.latest_offset("clicks", 0) == 10 and log.latest_offset("clicks", 1) == 0
    assert [r.value["n"] for r in log.read(OffsetRange("clicks", 0, 3, 9))] == list(range(3, 9))
    assert [r.offset for r in log.read(OffsetRange("clicks", 0, 3, 9))] == list(range(3, 9))
    key_partition = log.append("clicks", "x", key="user-1")[0]
    assert log.append("clicks", "y", key="user-1")[0] == key_partition
    with pytest.raises(ValueError, match="unknown topic 'views'"):
        log.append("views", 1)
    with pytest.raises(ValueError, match="partition must be one of \\[0, 1\\]"):
        log.append("clicks", 1, partition=5)
    with pytest.raises(ValueError, match=r"topic 'clicks' exists with 2 partitions in .*, not 5"):
        log.create_topic("clicks", partitions=5)  # left as it is: keys keep their partitions
    log.create_topic("clicks", partitions=2)  # as it is: nothing to say
    assert log.partitions("clicks") == [0, 1]
    assert log.append("clicks", "z", key="user-1")[0] == key_partition
    assert repr(pickle.loads(pickle.dumps(log))) == repr(log)


def test_records_keep_the_time_they_were_appended_with(sc: SparkContext, log: Any) -> None:
    day = Time(1_767_225_600_000)  # 2026-01-01
    log.append("clicks", "a", partition=0, timestamp=day)
    log.append("clicks", "b", partition=0, timestamp=(day + Hours(1)).toDatetime())
    log.append("clicks", "c", partition=0, timestamp=day.milliseconds + 7)
    before = int(time.time() * 1000)
    log.append("clicks", "d", partition=0)  # by default: the wall-clock time of the append
    after = int(time.time() * 1000)
    records = list(log.read(OffsetRange("clicks", 0, 0, 4)))
    stamps = [record.timestamp for record in records]
    assert stamps[:3] == [day.milliseconds, day.milliseconds + 3_600_000, day.milliseconds + 7]
    assert before <= stamps[3] <= after
    assert records[0] == ("clicks", 0, 0, None, "a", day.milliseconds)
    handled = createRDD(sc, log, [OffsetRange("clicks", 0, 0, 3)], lambda r: (r.value, r.timestamp))
    assert handled.collect() == [("a", stamps[0]), ("b", stamps[1]), ("c", stamps[2])]
    with pytest.raises(
        ValueError,
        match=r"timestamp must be a Time, a datetime or epoch milliseconds \(int\), got '2026'",
    ):
        log.append("clicks", "x", timestamp="2026")
    with pytest.raises(ValueError, match="timestamp must not be before 1970-01-01, got -1"):
        log.append("clicks", "x", timestamp=-1)
    assert log.latest_offset("clicks", 0) == 4  # a refused record is not appended


def test_offset_for_time_finds_the_first_record_at_or_after_a_time(log: Any) -> None:
    day = Time(1_767_225_600_000)
    stamps = [day, day + Seconds(1), day + Seconds(1), day + Seconds(1), day + Seconds(3)]
    for n, stamp in enumerate(stamps):
        log.append("clicks", n, partition=0, timestamp=stamp)

    def find(time: Any) -> int:
        return int(log.offset_for_time("clicks", 0, time))

    assert find(day - Seconds(1)) == 0  # before the first record
    assert find(0) == 0 and find(Time(-5)) == 0
    assert find(day) == 0
    assert find(day + Milliseconds(1)) == 1  # the first of three equal timestamps
    assert find(day + Seconds(1)) == 1
    assert find((day + Seconds(2)).toDatetime()) == 4
    assert find(day + Seconds(3)) == 4
    assert find(day.milliseconds + 3_001) == 5  # after the last: the latest offset
    assert log.offset_for_time("clicks", 1, day) == 0  # an empty partition: its latest offset
    from_two = log.offset_for_time("clicks", 0, day + Seconds(1), fromOffset=2)
    assert from_two == 2  # records before `fromOffset` are not looked at
    assert log.offset_for_time("clicks", 0, day, fromOffset=4) == 4
    assert log.offset_for_time("clicks", 0, day + Seconds(9), fromOffset=3) == 5
    with pytest.raises(ValueError, match=r"fromOffset must be an int >= 0, got -1"):
        log.offset_for_time("clicks", 0, day, fromOffset=-1)
    with pytest.raises(
        ValueError, match=r"partition must be one of \[0, 1\] for topic 'clicks', got 2"
    ):
        log.offset_for_time("clicks", 2, day)
    with pytest.raises(ValueError, match="unknown topic 'views'"):
        log.offset_for_time("views", 0, day)
    with pytest.raises(ValueError, match=r"time must be a Time, a datetime or epoch milliseconds"):
        log.offset_for_time("clicks", 0, "yesterday")


def test_a_backend_whose_append_takes_no_time_is_refused_where_it_is_defined() -> None:
    with pytest.raises(InvalidCallbackError, match=r"OldLog\._append must take .*timestamp"):

        class OldLog(FileLog):
            def _append(self, topic: str, partition: int, key: Any, value: Any) -> int:
                return 0


def test_a_file_log_refuses_a_record_json_cannot_hold(tmp_path: Path) -> None:
    log = FileLog(str(tmp_path / "log"))
    log.create_topic("clicks")
    with pytest.raises(InvalidArgumentError, match=r"value \{1, 2\} is not .* a set to a list"):
        log.append("clicks", {1, 2})
    assert log.append("clicks", [1, 2]) == (0, 0)  # nothing half-written before it


def test_every_log_refuses_nan_and_infinity_which_json_readers_refuse(log: Any) -> None:
    name = type(log).__name__
    for bad in (float("nan"), float("inf"), {"ms": float("-inf")}):
        with pytest.raises(InvalidArgumentError, match=rf"a {name} record holds JSON: .* is not"):
            log.append("clicks", bad, partition=0)
        with pytest.raises(InvalidArgumentError, match=rf"a {name} record holds JSON: .* is not"):
            log.append("clicks", 1, key=bad, partition=0)
    assert log.append("clicks", {"ms": 1.5}, partition=0) == (0, 0)  # none of them was written
    [record] = log.read(OffsetRange("clicks", 0, 0, 1))
    assert record.value == {"ms": 1.5}


def test_file_log_lines_written_before_records_had_times_have_none(tmp_path: Path) -> None:
    log = FileLog(str(tmp_path / "log"), segmentRecords=1)
    log.create_topic("clicks")
    segment = Path(log.directory) / "clicks" / "0" / f"{0:020d}.jsonl"
    segment.write_text('{"k":null,"v":"old"}\n')  # as a file log wrote them before
    log.append("clicks", "new", timestamp=Time(5_000))
    records = list(log.read(OffsetRange("clicks", 0, 0, 2)))
    assert [(r.value, r.timestamp) for r in records] == [("old", None), ("new", 5_000)]
    with pytest.raises(
        MissingTimestampError,
        match="topic 'clicks' partition 0: the record at offset 0 has no timestamp",
    ):
        log.offset_for_time("clicks", 0, Time(1_000))
    assert log.delete_before("clicks", 0, 1) == 1  # retention drops the old segment
    assert log.offset_for_time("clicks", 0, Time(1_000)) == 1


def test_redis_entries_written_before_records_had_times_have_none() -> None:
    log = redis_log_or_skip()
    log.create_topic("clicks")
    stream = f"{log.prefix}:clicks:0"
    log.client.incr(f"{stream}:next")  # an entry as a Redis log appended them before
    log.client.xadd(stream, {"k": "null", "v": '"old"'}, id="0-1")
    try:
        log.append("clicks", "new", timestamp=Time(5_000))
        records = list(log.read(OffsetRange("clicks", 0, 0, 2)))
        assert [(r.value, r.timestamp) for r in records] == [("old", None), ("new", 5_000)]
        with pytest.raises(
            MissingTimestampError, match="'clicks' partition 0: the record at offset 0"
        ):
            log.offset_for_time("clicks", 0, Time(1_000))
    finally:
        log.delete_topic("clicks")


def test_log_retention(log: Any, request: pytest.FixtureRequest) -> None:
    require_retention(request, log)
    for n in range(10):
        log.append("clicks", {"n": n}, partition=0)
    assert log.delete_before("clicks", 0, 8) == 8
    assert log.offset_for_time("clicks", 0, 0) == 8  # the records still held
    with pytest.raises(OffsetOutOfRangeError, match=r"'clicks' partition 0: offsets 3\.\.9"):
        list(log.read(OffsetRange("clicks", 0, 3, 9)))
    with pytest.raises(OffsetOutOfRangeError, match=r"outside the retained 8\.\.10"):
        list(log.read(OffsetRange("clicks", 0, 9, 11)))


def test_file_log_segments_and_half_written_records(tmp_path: Path) -> None:
    log = FileLog(str(tmp_path / "log"), segmentRecords=4)
    log.create_topic("clicks", partitions=2)
    for n in range(10):
        log.append("clicks", n, partition=0)
    assert len(list((Path(log.directory) / "clicks" / "0").glob("*.jsonl"))) == 3
    assert log.delete_before("clicks", 0, 6) == 4  # whole segments of 4 records go
    log.append("clicks", "x", partition=1)
    segment = Path(log.directory) / "clicks" / "1"
    latest = log.latest_offset("clicks", 1)
    with open(sorted(segment.glob("*.jsonl"))[-1], "a") as file:
        file.write('{"k":null,"v":"half')  # a record being written is not visible yet
    assert log.latest_offset("clicks", 1) == latest


def test_createRDD_reads_ranges_on_the_executors(sc: SparkContext, log: Any) -> None:
    for n in range(6):
        log.append("clicks", n, key=f"k{n}", partition=n % 2)
    ranges = [OffsetRange("clicks", 0, 1, 3), OffsetRange("clicks", 1, 0, 2)]
    rdd = createRDD(sc, log, ranges)
    assert rdd.getNumPartitions() == 2
    assert rdd.offsetRanges() == ranges
    assert rdd.glom().collect() == [[("k2", 2), ("k4", 4)], [("k1", 1), ("k3", 3)]]
    handled = createRDD(sc, log, ranges[:1], messageHandler=lambda r: (r.partition, r.offset))
    assert handled.collect() == [(0, 1), (0, 2)]
    with pytest.raises(OffsetOutOfRangeError):
        createRDD(sc, log, [OffsetRange("clicks", 0, 0, 99)])


async def test_direct_stream_reads_what_arrived_between_events(sc: SparkContext, log: Any) -> None:
    log.append("clicks", "before start", partition=0)
    ssc = virtual(sc, start=T0)
    minute = ssc.timer(T0 + Minutes(1), None, Minutes(1), "minute")
    seen: list[tuple[list[Any], list[OffsetRange]]] = []
    stream = ssc.directStream(log, ["clicks"])
    stream.foreachRDD(
        lambda rdd: seen.append((sorted(v for _, v in rdd.collect()), rdd.offsetRanges()))
    ).bind(minute)
    await ssc.start()
    log.append("clicks", "a", partition=0)
    log.append("clicks", "b", partition=1)
    await ssc.advanceTo(T0 + Minutes(1))
    await ssc.advanceTo(T0 + Minutes(2))
    log.append("clicks", "c", partition=1)
    await ssc.advanceTo(T0 + Minutes(3))
    await ssc.stop(stopSparkContext=False)
    assert [values for values, _ in seen] == [["a", "b"], [], ["c"]]
    assert seen[0][1] == [OffsetRange("clicks", 0, 1, 2), OffsetRange("clicks", 1, 0, 1)]
    assert seen[2][1] == [OffsetRange("clicks", 0, 2, 2), OffsetRange("clicks", 1, 1, 2)]


async def test_direct_stream_options(sc: SparkContext, log: Any) -> None:
    for n in range(10):
        log.append("clicks", n, partition=0)
    ssc = virtual(sc, start=T0)
    tick = ssc.timer(T0 + Seconds(2), None, Seconds(2), "tick")
    sizes: list[int] = []
    earliest = ssc.directStream(log, "clicks", startingOffsets="earliest", maxRatePerPartition=2)
    earliest.count().foreachRDD(lambda rdd: sizes.append(rdd.first())).bind(tick)
    chosen = ssc.directStream(log, ["clicks"], fromOffsets={("clicks", 0): 7})
    picked: list[list[int]] = []
    chosen.map(lambda kv: kv[1]).foreachRDD(lambda rdd: picked.append(rdd.collect())).bind(tick)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(6))
    await ssc.stop(stopSparkContext=False)
    assert sizes == [4, 4, 2]  # 2 records/s per partition over 2 s batches
    assert picked == [[7, 8, 9], [], []]
    assert earliest.positions() == {("clicks", 0): 10, ("clicks", 1): 0}


def test_direct_stream_arguments(sc: SparkContext, log: Any) -> None:
    ssc = StreamingContext(sc, None)
    with pytest.raises(ValueError, match="unknown topic 'views'"):
        ssc.directStream(log, ["clicks", "views"])
    with pytest.raises(ValueError, match="startingOffsets must be 'latest' or 'earliest'"):
        ssc.directStream(log, ["clicks"], startingOffsets="smallest")
    with pytest.raises(ValueError, match="maxRatePerPartition must be a positive, finite number"):
        ssc.directStream(log, ["clicks"], maxRatePerPartition=0)
    with pytest.raises(ValueError, match="fromOffsets names 'clicks' partition 7"):
        ssc.directStream(log, ["clicks"], fromOffsets={("clicks", 7): 0})
    with pytest.raises(ValueError, match=r"fromOffsets must map \(topic, partition\) pairs .* 'cl"):
        ssc.directStream(log, ["clicks"], fromOffsets={"clicks": 0})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match=r"fromOffsets must map .*, got \[0, 1\]"):
        ssc.directStream(log, ["clicks"], fromOffsets=[0, 1])  # type: ignore[arg-type]
    ssc.directStream(log, ["clicks"], fromOffsets=[(("clicks", 0), 0)])  # type: ignore[arg-type]
    one = OffsetRange("clicks", 0, 0, 1)
    with pytest.raises(ValueError, match=r"offsetRanges must be a list of .* \(write \[Offset"):
        createRDD(sc, log, one)  # type: ignore[arg-type]
    for rate in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="maxRatePerPartition must be a positive, finite"):
            ssc.directStream(log, ["clicks"], maxRatePerPartition=rate)
    with pytest.raises(ValueError, match=r"topics must name each topic once, got \['clicks', 'c"):
        ssc.directStream(log, ["clicks", "clicks"])
    with pytest.raises(ValueError, match="log must be a LogBackend"):
        ssc.directStream("log", ["clicks"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="topics must be a list of topic names, got 5"):
        ssc.directStream(log, 5)  # type: ignore[arg-type]


async def test_records_deleted_before_they_are_read_fail_the_batch_loudly(
    sc: SparkContext, log: Any, request: pytest.FixtureRequest
) -> None:
    require_retention(request, log)
    ssc = virtual(sc, start=T0)
    tick = ssc.timer(T0 + Seconds(1), None, Seconds(1), "tick")
    ssc.directStream(log, ["clicks"], startingOffsets="earliest").foreachRDD(
        lambda rdd: rdd.count()
    ).bind(tick)
    await ssc.start()
    for n in range(9):
        log.append("clicks", n, partition=0)
    log.delete_before("clicks", 0, 8)
    failures = await ssc.advanceTo(T0 + Seconds(1))
    await ssc.stop(stopSparkContext=False)
    assert [failure.kind for failure in failures] == ["plan"]
    assert isinstance(failures[0].error, OffsetOutOfRangeError)
    assert "offsets 0..9 are outside the retained 8..9" in str(failures[0].error)


async def test_a_position_past_the_log_s_end_fails_the_batch_loudly(
    sc: SparkContext, log: Any
) -> None:
    """A topic truncated or recreated under the stream, or `fromOffsets` past its end: the
    stream's position is past the latest offset. Its batches read nothing, silently, and once
    the log grew back past it the records in between were skipped."""
    ssc = virtual(sc, start=T0)
    tick = ssc.timer(T0 + Seconds(1), None, Seconds(1), "tick")
    ssc.directStream(log, ["clicks"], fromOffsets={("clicks", 0): 100}).foreachRDD(
        lambda rdd: rdd.count()
    ).bind(tick)
    await ssc.start()
    for n in range(3):
        log.append("clicks", n, partition=0)
    failures = await ssc.advanceTo(T0 + Seconds(1))
    await ssc.stop(stopSparkContext=False)
    assert [failure.kind for failure in failures] == ["plan"]
    assert isinstance(failures[0].error, OffsetOutOfRangeError)
    assert "'clicks' partition 0: the stream's position 100 is past the log's latest offset 3" in (
        str(failures[0].error)
    )


async def test_a_rerun_batch_reads_the_same_offset_ranges(
    sc: SparkContext, log: Any, tmp_path: Path
) -> None:
    checkpoint, out = str(tmp_path / "checkpoint"), tmp_path / "out"

    class Crash(BaseException):
        pass

    def build(ssc: StreamingContext, crash: bool) -> None:
        tick = ssc.timer(T0 + Minutes(1), None, Minutes(1), "tick")
        values = ssc.directStream(log, ["clicks"]).map(lambda kv: kv[1])
        values.saveAsTextFiles(str(out / "clicks")).bind(tick)

        def after(rdd: Any) -> None:
            if crash:
                raise Crash

        values.foreachRDD(after).bind(tick)

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, crash=True)
    await first.start()
    for n in range(3):
        log.append("clicks", n, partition=0)
    with pytest.raises(Crash):
        await first.advanceTo(T0 + Minutes(1))
    await first.stop(stopSparkContext=False)
    for n in range(3, 5):  # arrive while the driver is down
        log.append("clicks", n, partition=0)

    second = virtual(sc, start=T0 + Minutes(1) + Seconds(30), checkpoint=checkpoint)
    build(second, crash=False)
    await second.start()
    await second.advanceTo(T0 + Minutes(2))
    await second.stop(stopSparkContext=False)
    batches = sorted(path for path in out.iterdir() if not path.name.startswith("."))
    contents = [
        sorted(int(line) for part in batch.glob("part-*") for line in part.read_text().split())
        for batch in batches
    ]
    assert contents == [[0, 1, 2], [3, 4]]  # no record lost, none read twice


async def test_backlog_source_fires_when_enough_records_wait(sc: SparkContext, log: Any) -> None:
    ssc = virtual(sc, start=T0)
    clicks = ssc.directStream(log, ["clicks"])
    full = ssc.backlogSource(clicks, 3, "backlog", interval=Seconds(1))
    sizes: list[tuple[int, int]] = []
    clicks.foreachRDD(lambda t, rdd, e: sizes.append((e.backlog, rdd.count()))).bind(full)
    await ssc.start()
    log.append("clicks", 1, partition=0)
    log.append("clicks", 2, partition=1)
    await ssc.advanceTo(T0 + Seconds(3))  # two records wait: nothing fires
    log.append("clicks", 3, partition=0)
    await ssc.advanceTo(T0 + Seconds(10))
    for n in range(5):
        log.append("clicks", n, partition=n % 2)
    await ssc.advanceTo(T0 + Seconds(12))
    await ssc.stop(stopSparkContext=False)
    assert sizes == [(3, 3), (5, 5)]
    fresh = StreamingContext(sc, None)
    with pytest.raises(ValueError, match="belongs to another StreamingContext"):
        fresh.backlogSource(clicks, 1, "b")
    with pytest.raises(ValueError, match="threshold must be a positive int, got 0"):
        fresh.backlogSource(fresh.directStream(log, ["clicks"]), 0, "b")
    with pytest.raises(ValueError, match="stream must be a direct log stream"):
        fresh.backlogSource(fresh.queueStream([]), 1, "b")  # type: ignore[arg-type]


async def test_a_backlog_source_fires_again_after_a_batch_that_failed(
    sc: SparkContext, tmp_path: Path
) -> None:
    """After firing it waits until the stream has read; a batch whose read failed (the log
    unreachable a moment) never reads, and it never fired again while the backlog grew."""
    log = FileLog(str(tmp_path / "log"))
    log.create_topic("clicks")
    reachable = log.check
    failures_left = [1]

    def flaky(offsets: Any) -> None:
        if failures_left[0]:
            failures_left[0] -= 1
            raise ConnectionError("the log is unreachable")
        reachable(offsets)

    log.check = flaky  # type: ignore[method-assign]
    ssc = virtual(sc, start=T0)
    clicks = ssc.directStream(log, ["clicks"])
    full = ssc.backlogSource(clicks, 3, "backlog", interval=Seconds(1))
    sizes: list[int] = []
    clicks.foreachRDD(lambda rdd: sizes.append(rdd.count())).bind(full)
    await ssc.start()
    for n in range(3):
        log.append("clicks", n)
    failures = await ssc.advanceTo(T0 + Seconds(1))  # fires; its read fails
    assert [failure.kind for failure in failures] == ["plan"]
    log.append("clicks", 3)
    assert await ssc.advanceTo(T0 + Seconds(3)) == []
    await ssc.stop(stopSparkContext=False)
    assert sizes == [4]  # fired again, and read what waited


def test_kafka_log_without_a_broker() -> None:
    from reactive_spark.log.kafka import KafkaLog, _decode_json, _encode_json, _encode_raw

    log = KafkaLog("127.0.0.1:9", codec="raw", security_protocol="PLAINTEXT")
    copy = pickle.loads(pickle.dumps(log))
    assert repr(copy) == "KafkaLog('127.0.0.1:9', codec='raw')"
    assert copy.config == {"security_protocol": "PLAINTEXT"}
    assert _decode_json(_encode_json({"n": [1, 2]}, "value")) == {"n": [1, 2]}
    assert _encode_raw("é", "value") == "é".encode() and _encode_raw(None, "key") is None
    with pytest.raises(ValueError, match="a raw Kafka log takes bytes or str, got value 5"):
        _encode_raw(5, "value")
    # keys and values as json.dumps wrote them before: compaction and consumers key on bytes
    assert _encode_json({"user": 7}, "key") == b'{"user": 7}'
    with pytest.raises(ValueError, match="a KafkaLog record holds JSON: key nan is not"):
        _encode_json(float("nan"), "key")
    with pytest.raises(ValueError, match="codec must be 'json' or 'raw', got 'avro'"):
        KafkaLog("127.0.0.1:9092", codec="avro")
    with pytest.raises(ValueError, match="bootstrap must be 'host:port"):
        KafkaLog("")
