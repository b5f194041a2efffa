"""Exactly-once merging and state, on virtual time: the merged order of
direct log streams, `aggregateExactlyOnce` on SQLite and PostgreSQL, re-runs, gaps and
overlaps, and `merge()` of event sources replayed after a restart."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark import SparkContext

from reactive_spark import Minutes, Seconds, StreamingContext, Time
from reactive_spark.errors import (
    ContextStateError,
    InvalidArgumentError,
    InvalidCallbackError,
    JobSkippedError,
)
from reactive_spark.log import (
    Database,
    FileLog,
    OffsetCommitError,
    OffsetRange,
    StateStore,
    StateValueError,
)
from reactive_spark.log.state import BatchIdentity

from .helpers import virtual
from .test_sinks import postgres_or_skip

T0 = Time(1_700_000_000_000)


class Crash(BaseException):
    """A simulated crash: the process dies here (a BaseException is never caught as a failure)."""


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        yield Database.sqlite(str(tmp_path / "state.db"))
    else:
        yield postgres_or_skip()


def store_name() -> str:
    return f"state_{uuid.uuid4().hex[:10]}"


def chain(state: str, value: Any) -> str:
    """An order-sensitive fold: a hash chain over the values in the order they come."""
    return hashlib.sha256(f"{state}|{value}".encode()).hexdigest()[:16]


def three_topic_log(directory: Path) -> FileLog:
    """Topics a (2 partitions), b (2) and c (1), with records `topic-partition-n`."""
    log = FileLog(str(directory))
    for topic, partitions in (("a", 2), ("b", 2), ("c", 1)):
        log.create_topic(topic, partitions=partitions)
        for partition in range(partitions):
            for n in range(3):
                log.append(topic, f"{topic}{partition}-{n}", key=n, partition=partition)
    return log


async def test_a_union_of_direct_streams_merges_inputs_in_order_then_partition_then_offset(
    sc: SparkContext, tmp_path: Path
) -> None:
    log = three_topic_log(tmp_path / "log")
    ssc = virtual(sc, start=T0)
    tick = ssc.timer(T0 + Seconds(1), None, Seconds(1), "tick")
    ab = ssc.directStream(log, ["b", "a"], startingOffsets="earliest")  # topics as given
    c = ssc.directStream(log, "c", startingOffsets="earliest")
    seen: list[tuple[list[Any], list[OffsetRange]]] = []
    ssc.union(c, ab).foreachRDD(
        lambda rdd: seen.append((rdd.values().collect(), rdd.offsetRanges()))
    ).bind(tick)
    await ssc.start()
    await ssc.advanceTo(T0 + Seconds(1))
    await ssc.stop(stopSparkContext=False)
    [(values, ranges)] = seen
    assert values == [
        *[f"c0-{n}" for n in range(3)],
        *[f"b{p}-{n}" for p in range(2) for n in range(3)],
        *[f"a{p}-{n}" for p in range(2) for n in range(3)],
    ]
    assert [(r.topic, r.partition) for r in ranges] == [
        ("c", 0),
        ("b", 0),
        ("b", 1),
        ("a", 0),
        ("a", 1),
    ]


async def crash_then_restart(
    sc: SparkContext, log: FileLog, checkpoint: str, swap_on_restart: bool
) -> tuple[list[list[Any]], list[list[Any]], list[Any]]:
    """Merge topics a and b, crash in the first batch's job, restart (the union swapped or not).

    Returns what the crashed run and the restarted run saw, and the restart's failures.
    """

    def build(ssc: StreamingContext, swapped: bool, crash: bool) -> list[list[Any]]:
        tick = ssc.timer(T0 + Minutes(1), None, Minutes(1), "tick")
        a = ssc.directStream(log, "a", startingOffsets="earliest")
        b = ssc.directStream(log, "b", startingOffsets="earliest")
        merged = b.union(a) if swapped else a.union(b)
        seen: list[list[Any]] = []

        def keep(rdd: Any) -> None:
            seen.append(rdd.values().collect())
            if crash:
                raise Crash

        merged.foreachRDD(keep).bind(tick)
        return seen

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    before = build(first, swapped=False, crash=True)
    await first.start()
    with pytest.raises(Crash):
        await first.advanceTo(T0 + Minutes(1))
    await first.stop(stopSparkContext=False)
    second = virtual(sc, start=T0 + Minutes(1) + Seconds(1), checkpoint=checkpoint)
    after = build(second, swapped=swap_on_restart, crash=False)
    await second.start()  # re-runs the interrupted batch
    failures = await second.advanceTo(T0 + Minutes(1) + Seconds(1))
    await second.stop(stopSparkContext=False)
    return before, after, failures


async def test_a_rerun_merges_as_recorded_and_a_changed_union_fails_loudly(
    sc: SparkContext, tmp_path: Path
) -> None:
    log = three_topic_log(tmp_path / "log")
    before, after, failures = await crash_then_restart(
        sc, log, str(tmp_path / "same"), swap_on_restart=False
    )
    assert failures == [] and after == before  # the same records in the same order

    _, after, failures = await crash_then_restart(
        sc, log, str(tmp_path / "swapped"), swap_on_restart=True
    )
    assert [failure.kind for failure in failures] == ["plan"]
    assert isinstance(failures[0].error, ContextStateError)
    assert "the program's union changed" in str(failures[0].error)
    assert after == []  # nothing ran on a different merge


def folds(
    ssc: StreamingContext, log: FileLog, chained: StateStore, counted: StateStore
) -> tuple[Any, Any, Any]:
    """Topics a, b, c merged; an order-sensitive fold and a keyed count, both exactly once."""
    tick = ssc.timer(T0 + Minutes(1), None, Minutes(1), "tick")
    streams = [
        ssc.directStream(
            log,
            topic,
            chained.committedOffsets(topic),
            startingOffsets="earliest",
            maxRatePerPartition=2 / 60,  # two records per partition and minute
        )
        for topic in "abc"
    ]
    pairs = ssc.union(*streams).map(lambda kv: (kv[0], kv[1]))
    hashed = pairs.aggregateExactlyOnce(chained, "", chain).bind(tick)
    counts = pairs.mapValues(lambda _: 1).aggregateExactlyOnce(
        counted, 0, lambda total, one: total + one
    )
    counts.bind(tick)
    return tick, hashed, counts


async def run_folds(
    sc: SparkContext, log: FileLog, database: Database, names: tuple[str, str], minutes: int
) -> tuple[StateStore, StateStore]:
    chained, counted = StateStore(database, names[0]), StateStore(database, names[1])
    ssc = virtual(sc, start=T0)
    folds(ssc, log, chained, counted)
    await ssc.start()
    assert await ssc.advanceTo(T0 + Minutes(minutes)) == []
    await ssc.stop(stopSparkContext=False)
    return chained, counted


async def test_an_order_sensitive_fold_survives_a_crash_after_its_commit(
    sc: SparkContext, tmp_path: Path, database: Database
) -> None:
    log = three_topic_log(tmp_path / "log")
    reference = await run_folds(sc, log, database, (store_name(), store_name()), 2)
    assert reference[1].items() == {0: 5, 1: 5, 2: 5}  # 15 records, each counted once
    assert reference[0].position() is not None and reference[0].position()[1] == 2

    names = (store_name(), store_name())
    checkpoint = str(tmp_path / "checkpoint")
    chained, counted = StateStore(database, names[0]), StateStore(database, names[1])
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    tick, hashed, _ = folds(first, log, chained, counted)

    def die_once_committed(rdd: Any) -> None:
        raise Crash("killed after both commits, before the batch completed")

    hashed.foreachRDD(die_once_committed).bind(tick)
    await first.start()
    with pytest.raises(Crash):
        await first.advanceTo(T0 + Minutes(1))
    await first.stop(stopSparkContext=False)
    assert chained.position() is not None and chained.position()[1] == 1  # committed

    chained, counted = StateStore(database, names[0]), StateStore(database, names[1])
    second = virtual(sc, start=T0 + Minutes(1), checkpoint=checkpoint)
    folds(second, log, chained, counted)
    await second.start()  # re-runs the batch: its commits are no-ops
    assert await second.advanceTo(T0 + Minutes(2)) == []
    await second.stop(stopSparkContext=False)
    assert chained.items() == reference[0].items()
    assert counted.items() == reference[1].items()
    assert chained.position()[1] == 2 and counted.committedOffsets() == {  # type: ignore[index]
        ("a", 0): 3,
        ("a", 1): 3,
        ("b", 0): 3,
        ("b", 1): 3,
        ("c", 0): 3,
    }


async def test_a_rerun_yields_what_its_commit_wrote(sc: SparkContext, tmp_path: Path) -> None:
    log = FileLog(str(tmp_path / "log"))
    log.create_topic("clicks")
    for page in ["/", "/docs", "/"]:
        log.append("clicks", page)
    checkpoint = str(tmp_path / "checkpoint")
    database = Database.sqlite(str(tmp_path / "state.db"))

    def build(ssc: StreamingContext, crash: bool) -> list[list[Any]]:
        store = StateStore(database, "views")
        tick = ssc.timer(T0 + Minutes(1), None, Minutes(1), "tick")
        clicks = ssc.directStream(log, "clicks", store.committedOffsets(), "earliest")
        views = clicks.map(lambda kv: (kv[1], 1)).aggregateExactlyOnce(
            store, 0, lambda total, n: total + n
        )
        views.bind(tick)
        seen: list[list[Any]] = []

        def keep(rdd: Any) -> None:
            seen.append(sorted(rdd.collect()))
            if crash:
                raise Crash

        views.foreachRDD(keep).bind(tick)
        return seen

    first = virtual(sc, start=T0, checkpoint=checkpoint)
    before = build(first, crash=True)
    await first.start()
    with pytest.raises(Crash):
        await first.advanceTo(T0 + Minutes(1))
    await first.stop(stopSparkContext=False)
    second = virtual(sc, start=T0 + Minutes(1), checkpoint=checkpoint)
    after = build(second, crash=False)
    await second.start()
    await second.advanceTo(T0 + Minutes(1))
    await second.stop(stopSparkContext=False)
    assert before == after == [[("/", 2), ("/docs", 1)]]
    assert StateStore(database, "views").items() == {"/": 2, "/docs": 1}


async def rerun_from(
    sc: SparkContext, log: FileLog, store: StateStore, fromOffsets: dict[Any, int] | None
) -> tuple[list[Any], list[Any]]:
    """A later run reading `clicks` from `fromOffsets` (else the earliest): its failures, and
    what a job reading the aggregate saw."""
    ssc = virtual(sc, start=T0 + Minutes(5))
    tick = ssc.timer(T0 + Minutes(6), None, Minutes(1), "tick")
    clicks = ssc.directStream(log, "clicks", fromOffsets, startingOffsets="earliest")
    totals = clicks.map(lambda kv: ("all", kv[1])).aggregateExactlyOnce(
        store, 0, lambda total, n: total + n
    )
    totals.bind(tick)
    printed: list[Any] = []
    totals.foreachRDD(lambda rdd: printed.append(rdd.collect())).bind(tick)
    await ssc.start()
    failures = await ssc.advanceTo(T0 + Minutes(6))
    await ssc.stop(stopSparkContext=False)
    return failures, printed


async def test_ranges_committed_before_change_nothing_and_a_gap_or_overlap_fails_the_commit(
    sc: SparkContext, tmp_path: Path, database: Database
) -> None:
    log = FileLog(str(tmp_path / "log"))
    log.create_topic("clicks")
    for n in range(4):
        log.append("clicks", n)
    name = store_name()
    await run_store(sc, log, StateStore(database, name), T0)
    store = StateStore(database, name)
    assert store.items() == {"all": 6} and store.committedOffsets() == {("clicks", 0): 4}

    # fromOffsets forgotten: reads 0..4 again, which the store has committed: nothing changes,
    # and the batch yields what the commit of those ranges wrote
    failures, printed = await rerun_from(sc, log, store, None)
    assert failures == [] and printed == [[("all", 6)]]
    assert store.items() == {"all": 6} and store.position()[1] == 1  # type: ignore[index]

    log.append("clicks", 10)
    for start, kind in [(2, "a partial overlap"), (5, "a gap")]:
        failures, printed = await rerun_from(sc, log, store, {("clicks", 0): start})
        assert [type(failure.error) for failure in failures] == [
            OffsetCommitError,
            JobSkippedError,
        ]
        assert f"committed up to 4, the batch reads {start}..5 ({kind})" in str(failures[0].error)
        assert "failed to commit" in str(failures[1].error)
        assert printed == []  # nothing downstream saw values that were not committed
        assert store.items() == {"all": 6} and store.position()[1] == 1  # type: ignore[index]

    failures, printed = await rerun_from(sc, log, store, store.committedOffsets())
    assert failures == [] and printed == [[("all", 16)]]


async def run_store(
    sc: SparkContext, log: FileLog, store: StateStore, start: Time, minutes: int = 1
) -> None:
    """Sum the `clicks` topic into `store` with one batch a minute for `minutes` minutes."""
    ssc = virtual(sc, start=start)
    tick = ssc.timer(start + Minutes(1), None, Minutes(1), "tick")
    clicks = ssc.directStream(log, "clicks", store.committedOffsets(), "earliest")
    clicks.map(lambda kv: ("all", kv[1])).aggregateExactlyOnce(
        store, 0, lambda total, n: total + n
    ).bind(tick)
    await ssc.start()
    assert await ssc.advanceTo(start + Minutes(minutes)) == []
    await ssc.stop(stopSparkContext=False)


async def test_a_new_context_reading_committed_ranges_yields_what_their_commits_wrote(
    sc: SparkContext, tmp_path: Path, database: Database
) -> None:
    """No checkpoint: a second run over the same log, at the same batch times and rate, reads
    the ranges the first committed. Each batch yields the pairs its commit wrote, an idle batch
    included, and the store does not change."""
    log = FileLog(str(tmp_path / "log"))
    log.create_topic("clicks")
    store = StateStore(database, store_name())
    pages = [["/", "/docs"], ["/", "/"], ["/docs", "/"], []]

    async def run(appending: bool) -> list[list[Any]]:
        ssc = virtual(sc, start=T0)
        tick = ssc.timer(T0 + Minutes(1), None, Minutes(1), "tick")
        # two records a minute at most: the second run's batches read the first run's ranges
        clicks = ssc.directStream(log, "clicks", None, "earliest", maxRatePerPartition=1 / 30)
        views = clicks.map(lambda kv: (kv[1], 1)).aggregateExactlyOnce(
            store, 0, lambda total, n: total + n
        )
        views.bind(tick)
        yielded: list[list[Any]] = []
        views.foreachRDD(lambda rdd: yielded.append(sorted(rdd.collect()))).bind(tick)
        await ssc.start()
        for minute, batch in enumerate(pages, start=1):
            if appending:
                for page in batch:
                    log.append("clicks", page)
            assert await ssc.advanceTo(T0 + Minutes(minute)) == []
        await ssc.stop(stopSparkContext=False)
        return yielded

    first = await run(appending=True)
    assert first == [[("/", 1), ("/docs", 1)], [("/", 3)], [("/", 4), ("/docs", 2)], []]
    committed = (store.items(), store.position(), store.committedOffsets())
    assert await run(appending=False) == first
    assert (store.items(), store.position(), store.committedOffsets()) == committed


async def test_an_idle_batch_moves_the_position_only(sc: SparkContext, tmp_path: Path) -> None:
    log = FileLog(str(tmp_path / "log"))
    log.create_topic("clicks")
    log.append("clicks", 5)
    store = StateStore(Database.sqlite(str(tmp_path / "state.db")), "totals")
    await run_store(sc, log, store, T0, minutes=3)
    assert store.items() == {"all": 5}
    assert store.position() == ((T0 + Minutes(3)).toDatetime(), 3)
    assert store.get("all") == 5 and store.get("none", "default") == "default"
    assert store.committedOffsets("clicks") == {("clicks", 0): 1}
    assert store.committedOffsets("views") == {}


async def test_states_must_be_json(sc: SparkContext, tmp_path: Path) -> None:
    log = FileLog(str(tmp_path / "log"))
    log.create_topic("clicks")
    log.append("clicks", 5)
    store = StateStore(Database.sqlite(str(tmp_path / "state.db")), "sets")
    ssc = virtual(sc, start=T0)
    tick = ssc.timer(T0 + Minutes(1), None, Minutes(1), "tick")
    ssc.directStream(log, "clicks", startingOffsets="earliest").aggregateExactlyOnce(
        store, set(), lambda seen, value: seen | {value}
    ).bind(tick)
    await ssc.start()
    failures = await ssc.advanceTo(T0 + Minutes(1))
    await ssc.stop(stopSparkContext=False)
    assert [failure.kind for failure in failures] == ["plan"]
    assert isinstance(failures[0].error, StateValueError)
    assert "the state of key None, {5}, cannot be stored as JSON" in str(failures[0].error)
    assert store.items() == {} and store.position() is None


def test_aggregate_arguments_are_checked(sc: SparkContext, tmp_path: Path) -> None:
    log = FileLog(str(tmp_path / "log"))
    log.create_topic("clicks")
    store = StateStore(Database.sqlite(str(tmp_path / "state.db")), "checked")
    ssc = virtual(sc, start=T0)
    clicks = ssc.directStream(log, "clicks")
    with pytest.raises(InvalidArgumentError, match=r"reduceByKey\[\d+\]\(.*\) is not one"):
        clicks.reduceByKey(lambda a, b: a).aggregateExactlyOnce(store, 0, max)
    with pytest.raises(InvalidArgumentError, match=r"tailWindow\[\d+\] is not one"):
        clicks.tailWindow(2).aggregateExactlyOnce(store, 0, max)
    with pytest.raises(InvalidArgumentError, match=r"queueStream\[\d+\] is not one"):
        clicks.union(ssc.queueStream([[1]])).aggregateExactlyOnce(store, 0, max)
    with pytest.raises(InvalidArgumentError, match="both read topic 'clicks' partition 0"):
        clicks.union(ssc.directStream(log, "clicks")).aggregateExactlyOnce(store, 0, max)
    with pytest.raises(InvalidArgumentError, match="store must be a StateStore, got 'db'"):
        clicks.aggregateExactlyOnce("db", 0, max)  # type: ignore[arg-type]
    with pytest.raises(InvalidCallbackError, match=r"fold must take \(state, value\)"):
        clicks.aggregateExactlyOnce(store, 0, lambda total: total)
    with pytest.raises(InvalidArgumentError, match="name must be a plain SQL identifier"):
        StateStore(Database.sqlite(str(tmp_path / "state.db")), "drop table")


def test_keys_round_trip_through_json(tmp_path: Path) -> None:
    store = StateStore(Database.sqlite(str(tmp_path / "state.db")), "keys")
    batch = store.prepare(
        BatchIdentity(1000, "tick", 0),
        [OffsetRange("t", 0, 0, 2)],
        [(("page", 1), 1), (("page", 1), 2)],
        0,
        lambda total, n: total + n,
    )
    assert batch.pairs == [(("page", 1), 3)]
    assert store.commit(batch) is True
    assert store.commit(batch) is False  # a re-run of the last commit
    assert store.items() == {("page", 1): 3}
    with pytest.raises(StateValueError, match="key"):
        store.prepare(BatchIdentity(2000, "tick", 1), [], [({1, 2}, 1)], 0, max)


async def test_a_merge_of_event_sources_replays_in_the_same_order_after_a_restart(
    sc: SparkContext, tmp_path: Path
) -> None:
    """Events missed while the driver was down come back through `between`, merged as live."""

    def build(ssc: StreamingContext) -> list[tuple[int, str, int]]:
        b = ssc.timer(T0 + Minutes(2), None, Minutes(2), "b")  # created first
        a = ssc.timer(T0 + Minutes(1), None, Minutes(1), "a")
        c = ssc.timer(T0 + Minutes(3), None, Minutes(3), "c")
        merged = a.merge(b, c, name="abc")
        seen: list[tuple[int, str, int]] = []
        ssc.queueStream([], default=[0]).foreachRDD(
            lambda time, rdd, event: seen.append(
                (event.time.milliseconds, event.parent.source.name, event.index)
            )
        ).bind(merged)
        return seen

    uninterrupted = virtual(sc, start=T0)
    expected = build(uninterrupted)
    await uninterrupted.start()
    await uninterrupted.advanceTo(T0 + Minutes(12))
    await uninterrupted.stop(stopSparkContext=False)

    checkpoint = str(tmp_path / "checkpoint")
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    seen = build(first)
    await first.start()
    await first.advanceTo(T0 + Minutes(4))
    await first.stop(stopSparkContext=False)
    second = virtual(sc, start=T0 + Minutes(12), checkpoint=checkpoint)  # down 8 minutes
    caught_up = build(second)
    await second.start()  # catches up through between(), as one merged sequence
    await second.advanceTo(T0 + Minutes(12))
    await second.stop(stopSparkContext=False)
    assert seen + caught_up == expected
    assert [name for _, name, _ in expected[:5]] == ["a", "a", "b", "a", "c"]


class Outage:
    """A fold that raises while the database is `down`, as one whose store cannot be reached."""

    def __init__(self) -> None:
        self.down = False

    def __call__(self, total: int, value: int) -> int:
        if self.down:
            raise ConnectionError("the database is unreachable")
        return total + value


def summed_clicks(
    ssc: StreamingContext, log: FileLog, store: StateStore, fold: Outage, start: str = "commits"
) -> list[list[int]]:
    """`clicks` summed into `store` every minute, the stream started from the store's commits
    (else from the log's end, `start="latest"`); returns what a second output of the same
    stream sees, batch by batch."""
    tick = ssc.timer(T0 + Minutes(1), None, Minutes(1), "tick")
    if start == "commits":
        clicks = ssc.directStream(log, "clicks", store.committedOffsets(), "earliest")
    else:
        clicks = ssc.directStream(log, "clicks", startingOffsets="latest")
    clicks.map(lambda kv: ("all", kv[1])).aggregateExactlyOnce(store, 0, fold).bind(tick)
    seen: list[list[int]] = []
    clicks.foreachRDD(lambda rdd: seen.append(sorted(v for _, v in rdd.collect()))).bind(tick)
    return seen


async def test_a_batch_that_fails_before_its_commit_is_read_again_by_the_next(
    sc: SparkContext, tmp_path: Path, database: Database
) -> None:
    log = FileLog(str(tmp_path / "log"))
    log.create_topic("clicks")
    store, fold = StateStore(database, store_name()), Outage()
    ssc = virtual(sc, start=T0)
    seen = summed_clicks(ssc, log, store, fold)
    await ssc.start()
    failures = []
    for minute, down in enumerate([True, False, True, False], start=1):  # the first and third
        for n in range(3):
            log.append("clicks", 10 * minute + n)
        fold.down = down
        failures += await ssc.advanceTo(T0 + Minutes(minute))
    await ssc.stop(stopSparkContext=False)
    assert [str(failure.error) for failure in failures] == ["the database is unreachable"] * 2
    assert store.items() == {"all": sum(10 * m + n for m in range(1, 5) for n in range(3))}
    assert store.committedOffsets() == {("clicks", 0): 12}
    # the stream's other output sees a failed batch's records again (at least once)
    assert seen == [[10, 11, 12], [10, 11, 12, 20, 21, 22], [30, 31, 32], [30, 31, 32, 40, 41, 42]]


@pytest.mark.parametrize("start", ["commits", "latest"])
async def test_a_restart_after_a_failed_commit_folds_what_it_missed(
    sc: SparkContext, tmp_path: Path, database: Database, start: str
) -> None:
    """Whatever the stream starts from, the restart goes back to the commit: the checkpoint's
    reads say where the restarted run starts, not the log's end."""
    log = FileLog(str(tmp_path / "log"))
    log.create_topic("clicks")
    name, checkpoint = store_name(), str(tmp_path / "checkpoint")
    fold = Outage()
    first = virtual(sc, start=T0, checkpoint=checkpoint)
    summed_clicks(first, log, StateStore(database, name), fold, start)
    await first.start()
    log.append("clicks", 1)
    assert await first.advanceTo(T0 + Minutes(1)) == []
    log.append("clicks", 2)
    fold.down = True
    [failure] = await first.advanceTo(T0 + Minutes(2))  # the last batch before the stop
    await first.stop(stopSparkContext=False)
    assert isinstance(failure.error, ConnectionError)

    log.append("clicks", 4)
    store = StateStore(database, name)
    second = virtual(sc, start=T0 + Minutes(2), checkpoint=checkpoint)
    summed_clicks(second, log, store, Outage(), start)
    await second.start()
    assert await second.advanceTo(T0 + Minutes(3)) == []  # no gap: it reads from the commit
    await second.stop(stopSparkContext=False)
    assert store.items() == {"all": 7}


async def test_batches_of_other_sources_do_not_go_back_to_an_aggregates_commit(
    sc: SparkContext, tmp_path: Path
) -> None:
    """The stream also feeds an output bound to a faster timer, whose batches read it too: it
    never goes back, so that output sees each record once. The aggregate, whose batches then
    miss what the others read, fails with a gap, as it did before it followed its commits."""
    log = FileLog(str(tmp_path / "log"))
    log.create_topic("clicks")
    store = StateStore(Database.sqlite(str(tmp_path / "state.db")), "totals")
    ssc = virtual(sc, start=T0)
    minutely = ssc.timer(T0 + Minutes(1), None, Minutes(1), "minutely")
    hourly = ssc.timer(T0 + Minutes(60), None, Minutes(60), "hourly")
    clicks = ssc.directStream(log, "clicks", startingOffsets="earliest")
    clicks.map(lambda kv: ("all", kv[1])).aggregateExactlyOnce(
        store, 0, lambda total, n: total + n
    ).bind(hourly)
    seen: list[int] = []
    clicks.foreachRDD(lambda rdd: seen.extend(v for _, v in rdd.collect())).bind(minutely)
    await ssc.start()
    failures = []
    for minute in range(1, 121):
        log.append("clicks", minute)
        failures += await ssc.advanceTo(T0 + Minutes(minute))
    await ssc.stop(stopSparkContext=False)
    assert seen == list(range(1, 121))  # each once: nothing went back
    assert failures and all("(a gap)" in str(failure.error) for failure in failures)
