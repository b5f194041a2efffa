"""Exactly-once sinks for direct streams: idempotent and transactional writes (docs/logs.md).

* `IdempotentSink`: rows with a unique key; inserting a key again is a no-op, so a batch
  re-run after a crash writes nothing twice. Suits per-record results.
* `TransactionalSink`: a batch's results and its offset ranges are committed in one
  transaction, and the offsets only move if the stored offset of every partition is the
  range's `fromOffset`; a gap or a repeat rolls everything back. Suits aggregations. The same
  transaction records which batch last committed each partition, so that a batch re-run after
  a crash writes nothing, also when it read nothing.

Both work on SQLite (the embedded default) and PostgreSQL, through a `Database`, which is
picklable: executors open their own connections.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reactive_spark.errors import InvalidArgumentError, ReactiveSparkError
from reactive_spark.offsets import OffsetRange
from reactive_spark.running_output import running_output

if TYPE_CHECKING:
    from pyspark import RDD

    from reactive_spark.events import Event

__all__ = ["BatchIdentity", "Database", "IdempotentSink", "OffsetCommitError", "TransactionalSink"]


class OffsetCommitError(ReactiveSparkError):
    """A batch's offsets do not continue the committed ones: a gap or a repeat; rolled back."""


@dataclass(frozen=True)
class BatchIdentity:
    """Which batch a commit belongs to: its event's time (epoch ms), source and index.

    A batch re-run after a restart has the same identity (the write-ahead log records it).
    """

    time: int
    source: str
    index: int

    @classmethod
    def of(cls, event: Event) -> BatchIdentity:
        """The identity of `event`'s batch (an event not numbered yet has index -1)."""
        index = -1 if event.index is None else event.index
        return cls(event.time.milliseconds, event.source.name, index)


@dataclass(frozen=True)
class Database:
    """Where a sink writes: `Database.sqlite(path)` or `Database.postgres(dsn)`.

    Examples:
        >>> Database.sqlite("results.db").placeholder
        '?'
    """

    kind: str
    target: str

    @classmethod
    def sqlite(cls, path: str) -> Database:
        """A SQLite file (the embedded default); created when first used.

        Examples:
            >>> import tempfile
            >>> Database.sqlite(tempfile.gettempdir())
            Traceback (most recent call last):
            ...
            reactive_spark.errors.InvalidArgumentError: path ... is a directory: ...
        """
        if not isinstance(path, str) or not path or "\0" in path:
            raise InvalidArgumentError(f"path must be a non-empty str, got {path!r}")
        if os.path.isdir(path):
            raise InvalidArgumentError(
                f"path {path!r} is a directory: give the path of a SQLite database file in it"
            )
        return cls("sqlite", path)

    @classmethod
    def postgres(cls, dsn: str) -> Database:
        """A PostgreSQL database: `dsn` is a libpq connection string (`"host=... dbname=..."`)."""
        if not isinstance(dsn, str) or not dsn:
            raise InvalidArgumentError(f"dsn must be a non-empty str, got {dsn!r}")
        return cls("postgres", dsn)

    @property
    def placeholder(self) -> str:
        """The parameter marker of the database's SQL (`?` or `%s`)."""
        return "?" if self.kind == "sqlite" else "%s"

    def connect(self) -> Any:
        """A new DB-API connection (not in autocommit mode)."""
        if self.kind == "sqlite":
            try:
                connection = sqlite3.connect(self.target, timeout=30)
            except sqlite3.OperationalError as exc:
                raise ReactiveSparkError(
                    f"cannot open the SQLite database {self.target!r}: {exc}"
                ) from exc
            connection.execute("PRAGMA journal_mode=WAL")
            return connection
        import psycopg  # noqa: PLC0415 (an optional dependency)

        return psycopg.connect(self.target)

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A cursor in one transaction: committed on success, rolled back on any error."""
        connection = self.connect()
        try:
            cursor = connection.cursor()
            yield cursor
            connection.commit()
        except BaseException:
            connection.rollback()
            raise
        finally:
            connection.close()


#: The longest identifier every supported database keeps whole: PostgreSQL cuts longer names
#: to 63 bytes without a word, so two tables could end up as one.
MAX_IDENTIFIER = 63


def identifier(name: str, argument: str, suffixes: Sequence[str] = ()) -> str:
    """`name` if it is a plain SQL identifier (letters, digits, underscores), else raise.

    `suffixes` are appended to `name` to name further tables: each such name must fit too.

    Examples:
        >>> identifier("totals", "table", ["_batches"])
        'totals'
    """
    if not isinstance(name, str) or not name.replace("_", "a").isalnum() or name[0].isdigit():
        raise InvalidArgumentError(f"{argument} must be a plain SQL identifier, got {name!r}")
    longest = max(("", *suffixes), key=len)
    size = len(name.encode())  # PostgreSQL counts bytes: a letter outside ASCII takes several
    if size + len(longest) > MAX_IDENTIFIER:
        also = f" (the table {name}{longest} must fit too)" if longest else ""
        raise InvalidArgumentError(
            f"{argument} must be at most {MAX_IDENTIFIER - len(longest)} bytes long{also}, "
            f"as PostgreSQL cuts longer names; got {size}: {name!r}"
        )
    return name


class IdempotentSink:
    """A table with a unique key; rows whose key is already there are skipped.

    `columns` are the table's columns (SQL types, e.g. `{"id": "TEXT", "n": "INTEGER"}`) and
    `key` the ones that identify a row: a message id, or topic, partition and offset.

    Examples:
        >>> import os, tempfile
        >>> database = Database.sqlite(os.path.join(tempfile.mkdtemp(), "out.db"))
        >>> sink = IdempotentSink(database, "events", {"id": "TEXT", "body": "TEXT"}, key=["id"])
        >>> sink.write([("e1", "hello"), ("e2", "world")]), sink.write([("e1", "again")])
        (2, 0)
        >>> sink.save(sc.parallelize([("e2", "twice"), ("e3", "new")]))  # in foreachRDD
    """

    def __init__(
        self, database: Database, table: str, columns: dict[str, str], key: Sequence[str]
    ) -> None:
        if not isinstance(database, Database):
            raise InvalidArgumentError(f"database must be a Database, got {database!r}")
        self.database = database
        self.table = identifier(table, "table")
        if not columns:
            raise InvalidArgumentError("columns must name at least one column")
        self.columns = {identifier(name, "columns"): str(kind) for name, kind in columns.items()}
        self.key = [identifier(name, "key") for name in key]
        unknown = [name for name in self.key if name not in self.columns]
        if not self.key or unknown:
            raise InvalidArgumentError(f"key must name some of the columns, got {list(key)!r}")
        with database.transaction() as cursor:
            described = ", ".join(f"{name} {kind}" for name, kind in self.columns.items())
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {self.table} ({described}, "
                f"PRIMARY KEY ({', '.join(self.key)}))"
            )

    def write(self, rows: Iterable[Sequence[Any]]) -> int:
        """Insert `rows` (values in column order) in one transaction; returns how many were new."""
        marks = ", ".join([self.database.placeholder] * len(self.columns))
        statement = (
            f"INSERT INTO {self.table} ({', '.join(self.columns)}) VALUES ({marks}) "
            f"ON CONFLICT ({', '.join(self.key)}) DO NOTHING"
        )
        written = 0
        with self.database.transaction() as cursor:
            for row in rows:
                cursor.execute(statement, tuple(row))
                written += max(cursor.rowcount, 0)
        return written

    def save(self, rdd: RDD[Sequence[Any]]) -> None:
        """Write every row of `rdd`, each partition from its executor (for `foreachRDD`)."""
        write = self.write

        def write_partition(rows: Iterable[Sequence[Any]]) -> None:
            write(rows)

        rdd.foreachPartition(write_partition)


class TransactionalSink:
    """Results and offsets committed together, with offsets that must continue exactly.

    Offsets live in `offsetsTable` (`topic`, `part`, `off`), and which batch last committed
    each partition in `<offsetsTable>_batches` (`topic`, `part`, `batch_time`, `source`,
    `event_index`). Give the sink to the direct stream whose batches commit to it,
    `ssc.directStream(..., commitsTo=sink)`: the stream starts where the commits stopped and
    goes back to them after a batch whose commit failed. Each batch calls
    `commit(rdd.offsetRanges(), write)`, where `write(cursor)` stores the batch's results with
    the same cursor.

    Examples:
        >>> import os, tempfile
        >>> from reactive_spark.log import OffsetRange
        >>> database = Database.sqlite(os.path.join(tempfile.mkdtemp(), "totals.db"))
        >>> with database.transaction() as cursor:
        ...     _ = cursor.execute("CREATE TABLE totals (n INTEGER)")
        ...     _ = cursor.execute("INSERT INTO totals VALUES (0)")
        >>> sink = TransactionalSink(database)
        >>> def add(total):  # what a foreachRDD function does with rdd.count()
        ...     return lambda cursor: cursor.execute("UPDATE totals SET n = n + ?", (total,))
        >>> sink.commit([OffsetRange("clicks", 0, 0, 10)], add(10))
        True
        >>> sink.commit([OffsetRange("clicks", 0, 0, 10)], add(10))  # a re-run: a no-op
        False
        >>> sink.committedOffsets()
        {('clicks', 0): 10}
    """

    def __init__(self, database: Database, offsetsTable: str = "reactive_spark_offsets") -> None:
        if not isinstance(database, Database):
            raise InvalidArgumentError(f"database must be a Database, got {database!r}")
        self.database = database
        self.offsetsTable = identifier(offsetsTable, "offsetsTable", ["_batches"])
        self.batchesTable = f"{self.offsetsTable}_batches"
        with database.transaction() as cursor:
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {self.offsetsTable} "
                "(topic TEXT NOT NULL, part INTEGER NOT NULL, off BIGINT NOT NULL, "
                "PRIMARY KEY (topic, part))"
            )
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {self.batchesTable} "
                "(topic TEXT NOT NULL, part INTEGER NOT NULL, batch_time BIGINT NOT NULL, "
                "source TEXT NOT NULL, event_index BIGINT NOT NULL, PRIMARY KEY (topic, part))"
            )

    def committedOffsets(self, *topics: str) -> dict[tuple[str, int], int]:
        """The offsets committed so far, per `(topic, partition)` (what `commitsTo` starts from).

        With `topics`, only theirs: what one stream of several should start from.
        """
        with self.database.transaction() as cursor:
            return read_offsets(cursor, self.offsetsTable, topics)

    def commit(self, offsetRanges: Iterable[OffsetRange], write: Callable[[Any], Any]) -> bool:
        """Run `write(cursor)` and move the offsets, in one transaction.

        Returns False, writing nothing, if these ranges were committed already (a batch re-run
        after a crash): every range ends at its stored offset, and one of them read records or
        the same batch committed them all. Called in an output's job (`foreachRDD`), the commit
        records its batch (`running_output`); called elsewhere, a batch whose ranges are all
        empty cannot be told from a new one, and writes. Raises `OffsetCommitError` (after
        rolling back) if a stored offset is neither the range's start nor its end: a gap or a
        repeat.
        """
        ranges = list(offsetRanges)
        event = running_output()
        batch = None if event is None else BatchIdentity.of(event)
        with self.database.transaction() as cursor:
            stored = {offsets: self._stored(cursor, offsets) for offsets in ranges}
            if self._committed(cursor, ranges, stored, batch):
                return False
            write(cursor)
            for offsets in ranges:
                self._advance(cursor, offsets, stored[offsets])
            if batch is not None:
                self._record(cursor, ranges, batch)
        return True

    def _stored(self, cursor: Any, offsets: OffsetRange) -> int | None:
        mark = self.database.placeholder
        cursor.execute(
            f"SELECT off FROM {self.offsetsTable} WHERE topic = {mark} AND part = {mark}",
            (offsets.topic, offsets.partition),
        )
        row = cursor.fetchone()
        return None if row is None else int(row[0])

    def _committed(
        self,
        cursor: Any,
        ranges: list[OffsetRange],
        stored: dict[OffsetRange, int | None],
        batch: BatchIdentity | None,
    ) -> bool:
        """Whether `ranges` were committed already (a re-run).

        They end where the offsets are, and one read records, or `batch` is the one that last
        committed each of their partitions.
        """
        if not ranges or any(stored[offsets] != offsets.untilOffset for offsets in ranges):
            return False
        if any(offsets.count() for offsets in ranges):
            return True
        return batch is not None and all(
            self._last_batch(cursor, offsets) == batch for offsets in ranges
        )

    def _last_batch(self, cursor: Any, offsets: OffsetRange) -> BatchIdentity | None:
        mark = self.database.placeholder
        cursor.execute(
            f"SELECT batch_time, source, event_index FROM {self.batchesTable} "
            f"WHERE topic = {mark} AND part = {mark}",
            (offsets.topic, offsets.partition),
        )
        row = cursor.fetchone()
        return None if row is None else BatchIdentity(int(row[0]), str(row[1]), int(row[2]))

    def _record(self, cursor: Any, ranges: list[OffsetRange], batch: BatchIdentity) -> None:
        """Record `batch` as the last to commit each partition of `ranges`."""
        mark = self.database.placeholder
        partitions = dict.fromkeys((offsets.topic, offsets.partition) for offsets in ranges)
        cursor.executemany(
            f"INSERT INTO {self.batchesTable} (topic, part, batch_time, source, event_index) "
            f"VALUES ({mark}, {mark}, {mark}, {mark}, {mark}) ON CONFLICT (topic, part) "
            "DO UPDATE SET batch_time = excluded.batch_time, source = excluded.source, "
            "event_index = excluded.event_index",
            [(topic, part, batch.time, batch.source, batch.index) for topic, part in partitions],
        )

    def _advance(self, cursor: Any, offsets: OffsetRange, stored: int | None) -> None:
        mark = self.database.placeholder
        if stored is None:
            cursor.execute(
                f"INSERT INTO {self.offsetsTable} (topic, part, off) "
                f"VALUES ({mark}, {mark}, {mark})",
                (offsets.topic, offsets.partition, offsets.untilOffset),
            )
            return
        cursor.execute(
            f"UPDATE {self.offsetsTable} SET off = {mark} "
            f"WHERE topic = {mark} AND part = {mark} AND off = {mark}",
            (offsets.untilOffset, offsets.topic, offsets.partition, offsets.fromOffset),
        )
        if cursor.rowcount != 1:
            raise OffsetCommitError(
                f"topic {offsets.topic!r} partition {offsets.partition}: committed offset "
                f"{stored} is not the batch's start {offsets.fromOffset} (a "
                f"{'gap' if stored < offsets.fromOffset else 'repeat'}); rolled back",
            )


def read_offsets(cursor: Any, table: str, topics: Sequence[str] = ()) -> dict[tuple[str, int], int]:
    """`(topic, partition) -> offset` from an offsets table, only `topics`' when given."""
    cursor.execute(f"SELECT topic, part, off FROM {table}")
    return {
        (topic, int(part)): int(off)
        for topic, part, off in cursor.fetchall()
        if not topics or topic in topics
    }
