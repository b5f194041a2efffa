"""Exactly-once sinks on SQLite and on the real PostgreSQL of this machine."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark import SparkContext

from reactive_spark import Minutes, StreamingContext, Time
from reactive_spark.errors import InvalidArgumentError
from reactive_spark.log import FileLog, LogBackend, OffsetRange, StateStore
from reactive_spark.log.sinks import Database, IdempotentSink, OffsetCommitError, TransactionalSink

from .helpers import virtual

T0 = Time(1_700_000_000_000)
POSTGRES_DSN = "host=127.0.0.1 port=5432 dbname=test user=postgres connect_timeout=3"


def postgres_or_skip() -> Database:
    psycopg = pytest.importorskip("psycopg")
    try:
        psycopg.connect(POSTGRES_DSN).close()
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL is not reachable at 127.0.0.1:5432 ({exc})")
    return Database.postgres(POSTGRES_DSN)


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        yield Database.sqlite(str(tmp_path / "sink.db"))
    else:
        yield postgres_or_skip()


def unique(name: str) -> str:
    return f"{name}_{uuid.uuid4().hex[:10]}"


def rows(database: Database, sql: str) -> list[tuple[Any, ...]]:
    with database.transaction() as cursor:
        cursor.execute(sql)
        return sorted(tuple(row) for row in cursor.fetchall())


def test_idempotent_sink_skips_keys_it_has(sc: SparkContext, database: Database) -> None:
    table = unique("events")
    sink = IdempotentSink(database, table, {"id": "TEXT", "n": "INTEGER"}, key=["id"])
    assert sink.write([("a", 1), ("b", 2)]) == 2
    assert sink.write([("b", 20), ("c", 3)]) == 1
    sink.save(sc.parallelize([("c", 30), ("d", 4)], 2))
    sink.save(sc.parallelize([("c", 30), ("d", 4)], 2))  # a retried batch
    assert rows(database, f"SELECT id, n FROM {table}") == [
        ("a", 1),
        ("b", 2),
        ("c", 3),
        ("d", 4),
    ]
    with pytest.raises(ValueError, match="key must name some of the columns"):
        IdempotentSink(database, table, {"id": "TEXT"}, key=["nope"])
    with pytest.raises(ValueError, match="table must be a plain SQL identifier"):
        IdempotentSink(database, "x; DROP TABLE y", {"id": "TEXT"}, key=["id"])


def test_a_sink_whose_table_names_a_database_would_cut_is_refused(database: Database) -> None:
    """PostgreSQL cuts names past 63 characters without a word, so that a long offsets table's
    `_batches` table would be the offsets table itself: every table a sink derives from a name
    must fit. The longest names that fit work."""
    offsets = unique("o" * 44)  # + "_batches": 63
    sink = TransactionalSink(database, offsets)
    assert sink.commit([OffsetRange("clicks", 0, 0, 10)], lambda cursor: None)
    assert TransactionalSink(database, offsets).committedOffsets() == {("clicks", 0): 10}
    with pytest.raises(InvalidArgumentError, match=r"offsetsTable must be at most 55 bytes"):
        TransactionalSink(database, offsets + "x")
    with pytest.raises(InvalidArgumentError, match=r"at most 55 bytes .* got 56: '\u00f6"):
        TransactionalSink(database, "\u00f6" * 28)  # 28 letters, 56 bytes
    store = unique("s" * 38)  # + "_commit_ranges": 63
    assert StateStore(database, store).position() is None
    with pytest.raises(InvalidArgumentError, match=rf"the table {store}x_commit_ranges must fit"):
        StateStore(database, store + "x")


def test_transactional_sink_commits_results_and_offsets_together(database: Database) -> None:
    offsets, totals = unique("offsets"), unique("totals")
    sink = TransactionalSink(database, offsets)
    with database.transaction() as cursor:
        cursor.execute(f"CREATE TABLE {totals} (name TEXT PRIMARY KEY, n INTEGER)")
        cursor.execute(f"INSERT INTO {totals} VALUES ('clicks', 0)")
    mark = database.placeholder

    def add(count: int) -> Any:
        return lambda cursor: cursor.execute(
            f"UPDATE {totals} SET n = n + {mark} WHERE name = 'clicks'", (count,)
        )

    first = [OffsetRange("clicks", 0, 0, 5), OffsetRange("clicks", 1, 0, 2)]
    assert sink.commit(first, add(7)) is True
    assert sink.commit(first, add(7)) is False  # the same batch again: nothing happens
    with pytest.raises(OffsetCommitError, match="committed offset 5 is not the batch's start 3"):
        sink.commit([OffsetRange("clicks", 0, 3, 9), OffsetRange("clicks", 1, 2, 3)], add(7))
    with pytest.raises(OffsetCommitError, match=r"\(a gap\)"):
        sink.commit([OffsetRange("clicks", 0, 6, 9)], add(3))
    assert sink.commit([OffsetRange("clicks", 0, 5, 9), OffsetRange("clicks", 1, 2, 3)], add(5))
    assert rows(database, f"SELECT n FROM {totals}") == [(12,)]
    assert sink.committedOffsets() == {("clicks", 0): 9, ("clicks", 1): 3}
    assert sink.committedOffsets("clicks") == sink.committedOffsets()
    assert sink.committedOffsets("views") == {}
    # a batch that read nothing from one partition, run again after a crash: nothing happens
    partly_idle = [OffsetRange("clicks", 0, 9, 12), OffsetRange("clicks", 1, 3, 3)]
    assert sink.commit(partly_idle, add(1)) is True
    assert sink.commit(partly_idle, add(1)) is False
    assert rows(database, f"SELECT n FROM {totals}") == [(13,)]
    # outside an output's job no batch is known: empty ranges are a new batch each time
    idle = [OffsetRange("clicks", 0, 12, 12)]
    assert sink.commit(idle, add(0)) is True
    assert sink.commit(idle, add(0)) is True


async def test_a_direct_stream_into_a_transactional_sink_counts_each_record_once(
    sc: SparkContext, tmp_path: Path, log: LogBackend
) -> None:
    database = Database.sqlite(str(tmp_path / "totals.db"))
    checkpoint = str(tmp_path / "checkpoint")
    with database.transaction() as cursor:
        cursor.execute("CREATE TABLE totals (name TEXT PRIMARY KEY, n INTEGER)")
        cursor.execute("INSERT INTO totals VALUES ('clicks', 0)")

    class Crash(BaseException):
        pass

    def build(ssc: StreamingContext, crash: bool) -> None:
        sink = TransactionalSink(database)
        tick = ssc.timer(T0 + Minutes(1), None, Minutes(1), "tick")
        clicks = ssc.directStream(
            log, ["clicks"], fromOffsets=sink.committedOffsets(), startingOffsets="earliest"
        )

        def store(rdd: Any) -> None:
            count = rdd.count()
            sink.commit(
                rdd.offsetRanges(),
                lambda cursor: cursor.execute("UPDATE totals SET n = n + ?", (count,)),
            )
            if crash:
                raise Crash("died after committing, before the batch completed")

        clicks.foreachRDD(store).bind(tick)

    for n in range(5):
        log.append("clicks", n, key=n)
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, crash=True)
    await first.start()
    with pytest.raises(Crash):
        await first.advanceTo(T0 + Minutes(1))
    await first.stop(stopSparkContext=False)
    for n in range(5, 8):
        log.append("clicks", n, key=n)
    second = virtual(sc, start=T0 + Minutes(1) + Minutes(0.5), checkpoint=checkpoint)
    build(second, crash=False)
    await second.start()
    failures = await second.advanceTo(T0 + Minutes(3))
    await second.stop(stopSparkContext=False)
    assert failures == []
    assert rows(database, "SELECT n FROM totals") == [(8,)]


class Outage:
    """A write that raises while the database is `down`, as one that cannot reach it."""

    def __init__(self) -> None:
        self.down = False

    def check(self) -> None:
        if self.down:
            raise ConnectionError("the database is unreachable")


def summed(
    ssc: StreamingContext,
    log: FileLog,
    database: Database,
    names: tuple[str, str],
    outage: Outage,
    **starts: Any,
) -> None:
    """`clicks` summed into the row of table `names[1]` every minute, committed through a sink
    on offsets table `names[0]` that the stream commits to."""
    offsets, totals = names
    sink = TransactionalSink(database, offsets)
    tick = ssc.timer(T0 + Minutes(1), None, Minutes(1), "tick")
    clicks = ssc.directStream(log, ["clicks"], commitsTo=sink, **starts)
    mark = database.placeholder

    def store(rdd: Any) -> None:
        total = sum(value for _, value in rdd.collect())

        def write(cursor: Any) -> None:
            outage.check()
            cursor.execute(f"UPDATE {totals} SET n = n + {mark}", (total,))

        sink.commit(rdd.offsetRanges(), write)

    clicks.foreachRDD(store).bind(tick)


def totals_table(database: Database) -> str:
    totals = unique("totals")
    with database.transaction() as cursor:
        cursor.execute(f"CREATE TABLE {totals} (n INTEGER)")
        cursor.execute(f"INSERT INTO {totals} VALUES (0)")
    return totals


def two_partitions(directory: Path) -> FileLog:
    log = FileLog(str(directory))
    log.create_topic("clicks", partitions=2)
    return log


async def test_a_batch_whose_commit_failed_is_read_again_by_the_next(
    sc: SparkContext, tmp_path: Path, database: Database
) -> None:
    log = two_partitions(tmp_path / "log")
    names = (unique("offsets"), totals_table(database))
    outage = Outage()
    ssc = virtual(sc, start=T0)
    summed(ssc, log, database, names, outage, startingOffsets="earliest")
    await ssc.start()
    failures = []
    for minute, down in enumerate([False, True, False, True, False], start=1):
        for n in range(3):
            log.append("clicks", 10 * minute + n, partition=n % 2)
        outage.down = down
        failures += await ssc.advanceTo(T0 + Minutes(minute))
    await ssc.stop(stopSparkContext=False)
    assert [str(failure.error) for failure in failures] == ["the database is unreachable"] * 2
    assert rows(database, f"SELECT n FROM {names[1]}") == [
        (sum(10 * minute + n for minute in range(1, 6) for n in range(3)),)
    ]
    assert TransactionalSink(database, names[0]).committedOffsets() == {
        ("clicks", 0): 10,
        ("clicks", 1): 5,
    }


async def test_a_batch_that_cannot_reach_the_database_loses_nothing(
    sc: SparkContext, tmp_path: Path
) -> None:
    """The database's directory moved away for a batch: the stream cannot read the commits
    it goes back to, so the batch fails before it reads, and the next reads its records."""
    log = two_partitions(tmp_path / "log")
    (tmp_path / "db").mkdir()
    database = Database.sqlite(str(tmp_path / "db" / "sink.db"))
    names = ("offsets", totals_table(database))
    ssc = virtual(sc, start=T0)
    summed(ssc, log, database, names, Outage(), startingOffsets="earliest")
    await ssc.start()
    failures = []
    for minute in range(1, 4):
        log.append("clicks", minute, partition=minute % 2)
        if minute == 2:
            (tmp_path / "db").rename(tmp_path / "away")
        failures += await ssc.advanceTo(T0 + Minutes(minute))
        if minute == 2:
            (tmp_path / "away").rename(tmp_path / "db")
    await ssc.stop(stopSparkContext=False)
    [failure] = failures
    assert "cannot open the SQLite database" in str(failure.error)
    assert rows(database, f"SELECT n FROM {names[1]}") == [(1 + 2 + 3,)]


@pytest.mark.parametrize(
    "starts",
    [{"startingOffsets": "earliest"}, {"startingOffsets": "latest"}, {"fromOffsets": {}}],
    ids=["earliest", "latest", "fromOffsets"],
)
async def test_a_restart_after_a_failed_commit_reads_what_the_commit_left(
    sc: SparkContext, tmp_path: Path, database: Database, starts: dict[str, Any]
) -> None:
    """The last batch before the stop failed its commit: the restart goes on from the reads
    its checkpoint recorded, then back to the sink's commits, whatever the stream starts from."""
    log = two_partitions(tmp_path / "log")
    names = (unique("offsets"), totals_table(database))
    checkpoint = str(tmp_path / "checkpoint")
    outage = Outage()
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    summed(first, log, database, names, outage, **starts)
    await first.start()
    log.append("clicks", 1, partition=0)
    assert await first.advanceTo(T0 + Minutes(1)) == []
    log.append("clicks", 2, partition=1)
    outage.down = True
    [failure] = await first.advanceTo(T0 + Minutes(2))
    await first.stop(stopSparkContext=False)
    assert isinstance(failure.error, ConnectionError)

    log.append("clicks", 4, partition=0)
    second = virtual(sc, start=T0 + Minutes(2), checkpoint=checkpoint)
    summed(second, log, database, names, Outage(), **starts)
    await second.start()
    assert await second.advanceTo(T0 + Minutes(4)) == []  # no gap: it reads from the commits
    await second.stop(stopSparkContext=False)
    assert rows(database, f"SELECT n FROM {names[1]}") == [(7,)]


async def test_a_stream_starts_where_its_sink_committed(sc: SparkContext, tmp_path: Path) -> None:
    log = two_partitions(tmp_path / "log")
    for n in range(6):
        log.append("clicks", n, partition=n % 2)
    sink = TransactionalSink(Database.sqlite(str(tmp_path / "sink.db")))
    assert sink.commit([OffsetRange("clicks", 0, 0, 2), OffsetRange("clicks", 1, 0, 1)], print)
    ssc = virtual(sc, start=T0)
    committed = ssc.directStream(log, ["clicks"], commitsTo=sink)
    told = ssc.directStream(log, ["clicks"], {("clicks", 1): 3}, "earliest", commitsTo=sink)
    with pytest.raises(
        InvalidArgumentError, match="commitsTo must be a TransactionalSink, got 'db'"
    ):
        ssc.directStream(log, ["clicks"], commitsTo="db")  # type: ignore[arg-type]
    tick = ssc.timer(T0 + Minutes(1), None, Minutes(1), "tick")
    for stream in (committed, told):
        stream.foreachRDD(lambda rdd: None).bind(tick)
    await ssc.start()
    await ssc.stop(stopSparkContext=False)
    assert committed.positions() == {("clicks", 0): 2, ("clicks", 1): 1}
    assert told.positions() == {("clicks", 0): 2, ("clicks", 1): 3}  # fromOffsets first


async def test_an_empty_batch_run_again_after_a_crash_writes_nothing(
    sc: SparkContext, tmp_path: Path, database: Database
) -> None:
    """Every batch inserts a row, also one that read nothing; the batch of minute 2 read
    nothing, committed, and died before it completed: its re-run inserts nothing."""
    log = two_partitions(tmp_path / "log")
    offsets, beats = unique("offsets"), unique("beats")
    with database.transaction() as cursor:
        cursor.execute(f"CREATE TABLE {beats} (at TEXT, n INTEGER)")
    checkpoint = str(tmp_path / "checkpoint")
    mark = database.placeholder

    class Crash(BaseException):
        pass

    def build(ssc: StreamingContext, crash: bool) -> None:
        sink = TransactionalSink(database, offsets)
        tick = ssc.timer(T0 + Minutes(1), None, Minutes(1), "tick")
        clicks = ssc.directStream(log, ["clicks"], sink.committedOffsets(), "earliest")

        def beat(time: Any, rdd: Any) -> None:
            row = (time.strftime("%H:%M"), rdd.count())
            insert = f"INSERT INTO {beats} VALUES ({mark}, {mark})"
            sink.commit(rdd.offsetRanges(), lambda cursor: cursor.execute(insert, row))
            if crash and time == (T0 + Minutes(2)).toDatetime():
                raise Crash("died after committing, before the batch completed")

        clicks.foreachRDD(beat).bind(tick)

    log.append("clicks", 1, partition=0)
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    build(first, crash=True)
    await first.start()
    with pytest.raises(Crash):
        await first.advanceTo(T0 + Minutes(2))
    await first.stop(stopSparkContext=False)
    second = virtual(sc, start=T0 + Minutes(2), checkpoint=checkpoint)
    build(second, crash=False)
    await second.start()  # re-runs minute 2
    assert await second.advanceTo(T0 + Minutes(3)) == []
    log.append("clicks", 2, partition=1)
    assert await second.advanceTo(T0 + Minutes(4)) == []
    await second.stop(stopSparkContext=False)
    minute = [(T0 + Minutes(n)).toDatetime().strftime("%H:%M") for n in range(1, 5)]
    assert rows(database, f"SELECT at, n FROM {beats}") == [
        (minute[0], 1),
        (minute[1], 0),  # once
        (minute[2], 0),  # the same empty ranges as minute 2's, in another batch
        (minute[3], 1),
    ]
