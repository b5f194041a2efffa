"""Exactly-once keyed state, committed with the offsets it consumed, in SQLite or PostgreSQL.

A `StateStore` keeps, in one database, the state of an aggregation unified with its sources
(docs/exactly-once.md): the upstream offsets per input partition, the downstream position
(the batches committed) and the value per key. Each batch of
`aggregateExactlyOnce` changes all three in one transaction, so after a crash they always
agree: a restart resumes from the stored offsets and folds only later records, and a batch
re-run after its commit changes nothing.

Rather than one frame `(key, partition) -> (upstream, downstream, value)`, which would repeat
the offsets in every value row, the value rows carry only the number of the batch that last
wrote them, the offsets have a row per partition and the position one row.

Tables, for a store named `counts`: `counts_values (key, value, batch)` with keys and values as
JSON, `counts_offsets (topic, part, off)` and `counts_position` (one row: the last committed
batch's time, source and index, how many batches were committed, and their offset ranges).
Two more keep what every commit wrote, so that a batch re-run, or reading ranges committed
before, in any run, yields what its commit wrote: `counts_commits (batch, batch_time, source,
event_index, ranges, pairs)` and `counts_commit_ranges (batch, topic, part, from_off,
until_off)`, the ranges that held records.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from reactive_spark.errors import InvalidArgumentError, ReactiveSparkError
from reactive_spark.log.sinks import (
    BatchIdentity,
    Database,
    OffsetCommitError,
    identifier,
    read_offsets,
)
from reactive_spark.offsets import OffsetRange
from reactive_spark.time import Time, to_time

__all__ = ["BatchIdentity", "PreparedBatch", "StateStore", "StateValueError"]

#: Keys read per query (SQLite allows 32,766 parameters; PostgreSQL more).
KEYS_PER_QUERY = 500
#: What `StateStore`'s tables add to its name: values, offsets, position, commits, ranges.
_TABLES = ("_values", "_offsets", "_position", "_commits", "_commit_ranges")


class StateValueError(ReactiveSparkError, TypeError):
    """A key or a folded value cannot be stored as JSON."""


@dataclass
class PreparedBatch:
    """A batch's fold, planned and not yet committed (`StateStore.prepare`).

    `pairs` are the `(key, value)` pairs its commit writes (or wrote, for a re-run), in the
    order their keys first appear in the batch; `baseBatches` how many batches were committed
    when it was planned. `verdict` is `"continues"` (a new batch), `"rerun"` (a committed
    batch again: same event, same ranges), `"covered"` (ranges committed before) or why the
    ranges conflict with the stored offsets.
    """

    identity: BatchIdentity
    ranges: list[OffsetRange]
    pairs: list[tuple[Any, Any]]
    baseBatches: int
    verdict: str


def encode_key(key: Any) -> str:
    """A key as JSON text (tuples as arrays); raises `StateValueError` if JSON cannot hold it.

    Examples:
        >>> encode_key(("page", 3))
        '["page", 3]'
    """
    try:
        return json.dumps(key, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StateValueError(f"key {key!r} cannot be stored as JSON: {exc}") from None


def decode_key(text: str) -> Any:
    """The key `encode_key` wrote; arrays come back as tuples, so keys stay hashable.

    Examples:
        >>> decode_key('["page", 3]')
        ('page', 3)
    """
    return _tuples(json.loads(text))


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(item) for item in value)
    return value


class StateStore:
    """Keyed state committed with the offsets it consumed, for `aggregateExactlyOnce`.

    `database` is `Database.sqlite(path)` or `Database.postgres(dsn)`; `name` prefixes the
    store's five tables (created if missing). Values are stored as JSON: use JSON-compatible
    values (a tuple comes back as a list).

    Examples:
        >>> import os, tempfile
        >>> from reactive_spark.log import Database, StateStore
        >>> store = StateStore(Database.sqlite(os.path.join(tempfile.mkdtemp(), "s.db")), "counts")
        >>> store.get("/docs", 0), store.items(), store.committedOffsets(), store.position()
        (0, {}, {}, None)
    """

    def __init__(self, database: Database, name: str) -> None:
        if not isinstance(database, Database):
            raise InvalidArgumentError(f"database must be a Database, got {database!r}")
        self.database = database
        self.name = identifier(name, "name", _TABLES)
        (
            self.valuesTable,
            self.offsetsTable,
            self.positionTable,
            self.commitsTable,
            self.commitRangesTable,
        ) = (f"{self.name}{suffix}" for suffix in _TABLES)
        with database.transaction() as cursor:
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {self.valuesTable} "
                "(key TEXT PRIMARY KEY, value TEXT NOT NULL, batch BIGINT NOT NULL)"
            )
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {self.offsetsTable} "
                "(topic TEXT NOT NULL, part INTEGER NOT NULL, off BIGINT NOT NULL, "
                "PRIMARY KEY (topic, part))"
            )
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {self.positionTable} "
                "(id INTEGER PRIMARY KEY, batch_time BIGINT NOT NULL, source TEXT NOT NULL, "
                "event_index BIGINT NOT NULL, batches BIGINT NOT NULL, ranges TEXT NOT NULL)"
            )
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {self.commitsTable} "
                "(batch BIGINT PRIMARY KEY, batch_time BIGINT NOT NULL, source TEXT NOT NULL, "
                "event_index BIGINT NOT NULL, ranges TEXT NOT NULL, pairs TEXT NOT NULL)"
            )
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {self.commitRangesTable} "
                "(batch BIGINT NOT NULL, topic TEXT NOT NULL, part INTEGER NOT NULL, "
                "from_off BIGINT NOT NULL, until_off BIGINT NOT NULL)"
            )
            cursor.execute(
                f"CREATE INDEX IF NOT EXISTS {self.commitRangesTable}_by_offsets "
                f"ON {self.commitRangesTable} (topic, part, until_off)"
            )

    def __repr__(self) -> str:
        return f"StateStore({self.database.kind}:{self.database.target!r}, {self.name!r})"

    # -- reading back ------------------------------------------------------------------------
    def get(self, key: Any, default: Any = None) -> Any:
        """The committed value of `key`, else `default`."""
        with self.database.transaction() as cursor:
            found = self._values(cursor, [encode_key(key)])
        return found.get(encode_key(key), default)

    def items(self) -> dict[Any, Any]:
        """Every committed `key: value`."""
        with self.database.transaction() as cursor:
            cursor.execute(f"SELECT key, value FROM {self.valuesTable}")
            rows = cursor.fetchall()
        return {decode_key(key): json.loads(value) for key, value in rows}

    def committedOffsets(self, *topics: str) -> dict[tuple[str, int], int]:
        """Where the committed batches stopped, per `(topic, partition)` (for `fromOffsets`).

        With `topics`, only theirs: what one of several merged streams starts from.
        """
        with self.database.transaction() as cursor:
            return read_offsets(cursor, self.offsetsTable, topics)

    def position(self) -> tuple[datetime, int] | None:
        """`(batchTime, batches)`, the downstream position; None before the first commit.

        `batchTime` is the last committed batch's time (a UTC datetime), `batches` how many
        batches were committed.
        """
        with self.database.transaction() as cursor:
            row = self._position(cursor)
        return None if row is None else (Time(row[0]).toDatetime(), int(row[3]))

    def committedAt(self, times: Iterable[Time | datetime]) -> list[Time]:
        """Which of `times` are the times of committed batches, in time order.

        Examples:
            >>> import os, tempfile
            >>> store = StateStore(Database.sqlite(os.path.join(tempfile.mkdtemp(), "s.db")), "n")
            >>> store.committedAt([t0])
            []
        """
        wanted = sorted({to_time(time, "times").milliseconds for time in times})
        found: set[int] = set()
        mark = self.database.placeholder
        with self.database.transaction() as cursor:
            for first in range(0, len(wanted), KEYS_PER_QUERY):
                chunk = wanted[first : first + KEYS_PER_QUERY]
                marks = ", ".join([mark] * len(chunk))
                cursor.execute(
                    f"SELECT DISTINCT batch_time FROM {self.commitsTable} "
                    f"WHERE batch_time IN ({marks})",
                    chunk,
                )
                found.update(int(row[0]) for row in cursor.fetchall())
            position = self._position(cursor)
        if position is not None and int(position[0]) in wanted:
            found.add(int(position[0]))  # committed before commits were logged
        return [Time(milliseconds) for milliseconds in sorted(found)]

    # -- one batch ---------------------------------------------------------------------------
    def prepare(
        self,
        identity: BatchIdentity,
        ranges: Sequence[OffsetRange],
        records: Iterable[tuple[Any, Any]],
        zeroValue: Any,
        fold: Callable[[Any, Any], Any],
    ) -> PreparedBatch:
        """Fold the batch's `(key, value)` records, in order, onto the committed state.

        `records` are only read for a batch that continues the committed offsets. A re-run of
        the last commit, and ranges the stored offsets already cover (in this run or another),
        get the pairs their commit wrote; ranges that leave a gap or partly overlap, none and a
        conflict that fails the commit.
        """
        ranges = list(ranges)
        with self.database.transaction() as cursor:
            position = self._position(cursor)
            base = 0 if position is None else int(position[3])
            again = self._same_batch(cursor, identity, ranges)
            if again is None and position is not None and _identity(position) == identity:
                again = base  # committed before commits were logged
            if again is not None:
                written = self._written(cursor, [again])
                return PreparedBatch(identity, ranges, written, base, "rerun")
            verdict = self._verdict(ranges, read_offsets(cursor, self.offsetsTable))
            if verdict == "covered":
                written = self._written(cursor, self._commits_within(cursor, ranges))
                return PreparedBatch(identity, ranges, written, base, verdict)
            if verdict != "continues":
                return PreparedBatch(identity, ranges, [], base, verdict)
            batch = [(key, encode_key(key), value) for key, value in records]
            stored = self._values(cursor, list(dict.fromkeys(code for _, code, _ in batch)))
        states: dict[str, tuple[Any, Any]] = {}
        for key, code, value in batch:
            state = states[code][1] if code in states else stored.get(code, zeroValue)
            states[code] = (key, fold(state, value))
        pairs = [(key, _json_round_trip(key, state)) for key, state in states.values()]
        return PreparedBatch(identity, ranges, pairs, base, "continues")

    def commit(self, batch: PreparedBatch) -> bool:
        """Commit a prepared batch: values, offsets and position in one transaction.

        Returns False, changing nothing, for a re-run of the last commit and for ranges the
        stored offsets already cover. Raises `OffsetCommitError`, changing nothing, for ranges
        that leave a gap or partly overlap the stored offsets, or if another batch committed
        since this one was prepared.
        """
        mark = self.database.placeholder
        if batch.verdict == "rerun":
            return False
        with self.database.transaction() as cursor:
            position = self._position(cursor)
            committed = 0 if position is None else int(position[3])
            if position is not None and _identity(position) == batch.identity:
                return False
            stored = read_offsets(cursor, self.offsetsTable)
            verdict = self._verdict(batch.ranges, stored)
            if verdict == "covered":
                return False
            if verdict != "continues":
                raise OffsetCommitError(verdict)
            if batch.verdict != "continues" or committed != batch.baseBatches:
                raise OffsetCommitError(
                    f"store {self.name!r}: {committed - batch.baseBatches} batch(es) were "
                    "committed since this one was planned; nothing written"
                )
            number = committed + 1
            cursor.executemany(
                f"INSERT INTO {self.valuesTable} (key, value, batch) VALUES ({mark}, {mark}, "
                f"{mark}) ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
                "batch = excluded.batch",
                [(encode_key(key), json.dumps(value), number) for key, value in batch.pairs],
            )
            moved = [
                (r.topic, r.partition, r.untilOffset)
                for r in batch.ranges
                if stored.get((r.topic, r.partition), -1) < r.untilOffset
            ]
            cursor.executemany(
                f"INSERT INTO {self.offsetsTable} (topic, part, off) VALUES ({mark}, {mark}, "
                f"{mark}) ON CONFLICT (topic, part) DO UPDATE SET off = excluded.off",
                moved,
            )
            identity = batch.identity
            cursor.execute(
                f"INSERT INTO {self.commitsTable} "
                "(batch, batch_time, source, event_index, ranges, pairs) "
                f"VALUES ({mark}, {mark}, {mark}, {mark}, {mark}, {mark})",
                (
                    number,
                    identity.time,
                    identity.source,
                    identity.index,
                    json.dumps([r.toList() for r in batch.ranges]),
                    json.dumps([[encode_key(key), value] for key, value in batch.pairs]),
                ),
            )
            cursor.executemany(
                f"INSERT INTO {self.commitRangesTable} "
                f"(batch, topic, part, from_off, until_off) "
                f"VALUES ({mark}, {mark}, {mark}, {mark}, {mark})",
                [
                    (number, r.topic, r.partition, r.fromOffset, r.untilOffset)
                    for r in batch.ranges
                    if r.count()
                ],
            )
            cursor.execute(
                f"INSERT INTO {self.positionTable} "
                "(id, batch_time, source, event_index, batches, ranges) "
                f"VALUES (0, {mark}, {mark}, {mark}, {mark}, {mark}) ON CONFLICT (id) DO UPDATE "
                "SET batch_time = excluded.batch_time, source = excluded.source, "
                "event_index = excluded.event_index, batches = excluded.batches, "
                "ranges = excluded.ranges",
                (
                    identity.time,
                    identity.source,
                    identity.index,
                    number,
                    json.dumps([r.toList() for r in batch.ranges]),
                ),
            )
        return True

    def _verdict(self, ranges: list[OffsetRange], stored: dict[tuple[str, int], int]) -> str:
        """`"continues"`, `"covered"` (already committed) or what is wrong with the ranges.

        A range continues its partition if the stored offset is its start (or there is none).
        Empty ranges at or before the stored offset read nothing and move nothing. A batch
        with records is covered when the stored offsets reach the end of every range.
        """
        read = [r for r in ranges if r.count()]
        if read and all(stored.get((r.topic, r.partition), -1) >= r.untilOffset for r in read):
            return "covered"
        for offsets in ranges:
            committed = stored.get((offsets.topic, offsets.partition))
            if committed is None or committed == offsets.fromOffset:
                continue
            if not offsets.count() and committed > offsets.fromOffset:
                continue
            kind = "a gap" if committed < offsets.fromOffset else "a partial overlap"
            return (
                f"store {self.name!r}: topic {offsets.topic!r} partition {offsets.partition} "
                f"is committed up to {committed}, the batch reads {offsets.fromOffset}.."
                f"{offsets.untilOffset} ({kind}); nothing written. Start the streams from "
                "store.committedOffsets()"
            )
        return "continues"

    # -- queries -----------------------------------------------------------------------------
    def _position(self, cursor: Any) -> tuple[Any, ...] | None:
        cursor.execute(
            f"SELECT batch_time, source, event_index, batches FROM {self.positionTable} "
            "WHERE id = 0"
        )
        row = cursor.fetchone()
        return None if row is None else tuple(row)

    def _same_batch(
        self, cursor: Any, identity: BatchIdentity, ranges: list[OffsetRange]
    ) -> int | None:
        """The commit of this batch (same event, same ranges) if it was committed before."""
        mark = self.database.placeholder
        cursor.execute(
            f"SELECT batch, ranges FROM {self.commitsTable} WHERE batch_time = {mark} AND "
            f"source = {mark} AND event_index = {mark}",
            (identity.time, identity.source, identity.index),
        )
        read = [r.toList() for r in ranges]
        for number, recorded in cursor.fetchall():
            if json.loads(recorded) == read:
                return int(number)
        return None

    def _commits_within(self, cursor: Any, ranges: list[OffsetRange]) -> list[int]:
        """The commits whose records all lie within `ranges`, oldest first."""
        mark = self.database.placeholder
        inside: set[int] = set()
        for offsets in ranges:
            if not offsets.count():
                continue
            cursor.execute(
                f"SELECT batch FROM {self.commitRangesTable} WHERE topic = {mark} AND "
                f"part = {mark} AND from_off >= {mark} AND until_off <= {mark}",
                (offsets.topic, offsets.partition, offsets.fromOffset, offsets.untilOffset),
            )
            inside.update(int(row[0]) for row in cursor.fetchall())
        found = []
        for number in sorted(inside):
            cursor.execute(
                f"SELECT topic, part, from_off, until_off FROM {self.commitRangesTable} "
                f"WHERE batch = {mark}",
                (number,),
            )
            if all(
                any(
                    r.topic == topic
                    and r.partition == int(part)
                    and r.fromOffset <= int(first)
                    and int(until) <= r.untilOffset
                    for r in ranges
                )
                for topic, part, first, until in cursor.fetchall()
            ):
                found.append(number)
        return found

    def _written(self, cursor: Any, numbers: list[int]) -> list[tuple[Any, Any]]:
        """The pairs the commits `numbers` wrote, a later commit's value for a key winning.

        Commits made before the commit log existed left none: then the value rows they still
        hold.
        """
        mark = self.database.placeholder
        written: dict[str, tuple[Any, Any]] = {}
        for number in numbers:
            cursor.execute(f"SELECT pairs FROM {self.commitsTable} WHERE batch = {mark}", (number,))
            row = cursor.fetchone()
            if row is not None:
                pairs = json.loads(row[0])
            else:
                cursor.execute(
                    f"SELECT key, value FROM {self.valuesTable} WHERE batch = {mark}", (number,)
                )
                pairs = [[key, json.loads(value)] for key, value in cursor.fetchall()]
            for code, value in pairs:
                written[code] = (decode_key(code), value)
        return list(written.values())

    def _values(self, cursor: Any, codes: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for first in range(0, len(codes), KEYS_PER_QUERY):
            chunk = codes[first : first + KEYS_PER_QUERY]
            marks = ", ".join([self.database.placeholder] * len(chunk))
            cursor.execute(
                f"SELECT key, value FROM {self.valuesTable} WHERE key IN ({marks})", chunk
            )
            found.update((key, json.loads(value)) for key, value in cursor.fetchall())
        return found


def _identity(position: tuple[Any, ...]) -> BatchIdentity:
    return BatchIdentity(int(position[0]), str(position[1]), int(position[2]))


def _json_round_trip(key: Any, value: Any) -> Any:
    """`value` as a later batch will read it back (tuples become lists)."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise StateValueError(
            f"the state of key {key!r}, {value!r}, cannot be stored as JSON: {exc}"
        ) from None
