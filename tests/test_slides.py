"""A stream's slide, as pyspark.streaming's: a stream of two parents slides as its first
parent does, streams of different slides are not united, and `updateStateByKey` gives its
state again at a slide its parent has no RDD for.

The expected outputs are what pyspark.streaming printed for the same programs, on 1 s batches
of the same queues (batch times here in seconds from the zero time)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark import RDD, SparkContext

from reactive_spark import DStream, Event, InvalidArgumentError, Seconds, StreamingContext, Time

from .helpers import gather, ran, virtual

T0 = Time(0)

WORDS = [["a"], ["a", "b"], ["b"], ["a", "c"], ["c"], ["a"], ["b"], ["a"], [], ["c"]]
#: Every batch pairs each word with its batch number: which batch a join read shows.
NUMBERS = [[("a", n), ("b", n), ("c", n)] for n in range(1, 11)]

Seen = list[tuple[Event, list[Any]]]


def by_second(seen: Seen) -> dict[int, list[Any]]:
    return {e.time.milliseconds // 1000: sorted(items, key=repr) for e, items in seen}


async def run_seconds(ssc: StreamingContext, seconds: int) -> None:
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(seconds))
    await ssc.stop(stopSparkContext=False)


def windowed_and_numbers(ssc: StreamingContext) -> tuple[DStream[Any], DStream[Any]]:
    """The words of `window(4, 2)` paired with 1, and the numbered pairs of every batch."""
    pairs = ssc.queueStream(WORDS).window(4, 2).map(lambda word: (word, 1))
    return pairs, ssc.queueStream(NUMBERS)


#: pyspark.streaming's `pairs.join(numbers)`: at the window's slides only, each window joined
#: with the numbers of its own batch.
JOINED = {
    2: [("a", (1, 2))] * 2 + [("b", (1, 2))],
    4: [("a", (1, 4))] * 3 + [("b", (1, 4))] * 2 + [("c", (1, 4))],
    6: [("a", (1, 6))] * 2 + [("b", (1, 6))] + [("c", (1, 6))] * 2,
    8: [("a", (1, 8))] * 2 + [("b", (1, 8)), ("c", (1, 8))],
    10: [("a", (1, 10)), ("b", (1, 10)), ("c", (1, 10))],
    12: [],
}


async def test_two_parent_operations_after_a_window_run_at_its_slides(sc: SparkContext) -> None:
    """They ran every second, the window's side empty between its slides."""
    ssc = virtual(sc, Seconds(1))
    pairs, numbers = windowed_and_numbers(ssc)
    operations: dict[str, Callable[[], DStream[Any]]] = {
        "join": lambda: pairs.join(numbers),
        "leftOuterJoin": lambda: pairs.leftOuterJoin(numbers),
        "rightOuterJoin": lambda: pairs.rightOuterJoin(numbers),
        "fullOuterJoin": lambda: pairs.fullOuterJoin(numbers),
        "cogroup": lambda: pairs.cogroup(numbers).mapValues(lambda vs: tuple(map(sorted, vs))),
        "transformWith": lambda: pairs.transformWith(lambda a, b: a.union(b), numbers),
        "count": lambda: pairs.join(numbers).count(),
        "union": lambda: pairs.union(numbers.window(2, 2)),
        "ssc.union": lambda: ssc.union(pairs, numbers.window(2, 2)),
    }
    seen = {name: gather(build())[1] for name, build in operations.items()}
    await run_seconds(ssc, 12)
    got = {name: by_second(items) for name, items in seen.items()}
    assert all(list(times) == [2, 4, 6, 8, 10, 12] for times in got.values()), got
    assert got["join"] == JOINED
    assert got["leftOuterJoin"] == {**JOINED, 12: [("c", (1, None))]}
    assert got["rightOuterJoin"] == {**JOINED, 2: [*JOINED[2], ("c", (None, 2))]}
    assert got["fullOuterJoin"] == {**got["rightOuterJoin"], 12: [("c", (1, None))]}
    assert got["cogroup"][2] == [("a", ([1, 1], [2])), ("b", ([1], [2])), ("c", ([], [2]))]
    assert got["cogroup"][12] == [("c", ([1], []))]
    assert got["transformWith"][4] == sorted(
        [("a", 1)] * 3 + [("b", 1)] * 2 + [("c", 1), ("a", 4), ("b", 4), ("c", 4)], key=repr
    )
    assert got["count"] == {2: [3], 4: [6], 6: [5], 8: [4], 10: [3], 12: [0]}
    assert got["union"] == got["ssc.union"]
    assert got["union"][4] == sorted(
        [("a", 1)] * 3
        + [("b", 1)] * 2
        + [("c", 1), ("a", 3), ("b", 3), ("c", 3)]
        + [("a", 4), ("b", 4), ("c", 4)],
        key=repr,
    )


async def test_a_window_second_runs_every_batch_and_slides_as_its_first_parent(
    sc: SparkContext,
) -> None:
    """With the window second, the join slides as its first parent: every second, the window
    empty between its slides; a window over the join counts its batches by that slide."""
    ssc = virtual(sc, Seconds(1))
    pairs, numbers = windowed_and_numbers(ssc)
    _, joined = gather(numbers.join(pairs).count())
    _, rolled = gather(numbers.join(pairs).window(2, 2).count())
    await run_seconds(ssc, 12)
    assert by_second(joined) == {second: [len(JOINED.get(second, []))] for second in range(1, 13)}
    assert by_second(rolled) == {2: [3], 4: [6], 6: [5], 8: [4], 10: [3], 12: [0]}


async def test_a_tail_window_does_not_hold_a_union_after_it_to_its_slides(
    sc: SparkContext,
) -> None:
    """Only a legacy `window` has PySpark's slides: a `tailWindow` (as a `timeWindow`) emits at
    its own events, and a union after it emits every batch, as before. It lost the other
    side's batches between the tail window's."""
    ssc = virtual(sc, Seconds(1))
    xs = ssc.queueStream([[f"x{n}"] for n in range(1, 7)])
    _, seen = gather(
        ssc.union(xs.tailWindow(2, 2), ssc.queueStream([[f"y{n}"] for n in range(1, 7)]))
    )
    await run_seconds(ssc, 6)
    assert by_second(seen) == {
        1: ["y1"],
        2: ["x1", "x2", "y2"],
        3: ["y3"],
        4: ["x3", "x4", "y4"],
        5: ["y5"],
        6: ["x5", "x6", "y6"],
    }


async def test_a_union_or_transform_of_different_slides_is_refused_as_pyspark_does(
    sc: SparkContext,
) -> None:
    """Spark's TransformedDStream (`ssc.transform`) requires its streams to slide alike, as a
    union does: `ssc.transform` was accepted."""
    ssc = virtual(sc, Seconds(1))
    words = ssc.queueStream(WORDS)
    windowed = words.window(2, 2)
    with pytest.raises(
        ValueError, match="the two DStream should have same slide duration"
    ) as raised:
        words.union(windowed)
    assert isinstance(raised.value, InvalidArgumentError)
    assert "1000 ms" in str(raised.value) and "2000 ms" in str(raised.value)
    with pytest.raises(InvalidArgumentError, match="All DStreams should have same slide duration"):
        ssc.union(words, windowed)
    with pytest.raises(InvalidArgumentError, match="All DStreams should have same slide duration"):
        ssc.union(windowed, words.map(str), words)
    with pytest.raises(
        InvalidArgumentError, match="Some of the DStreams have different slide durations"
    ) as raised:
        ssc.transform([words, windowed], lambda rdds: rdds[0])
    assert "1000 ms" in str(raised.value) and "2000 ms" in str(raised.value)
    ssc.transform([windowed, words.window(4, 2)], lambda rdds: rdds[0])
    # the same slides are united, as are streams on different sources (no pyspark program has
    # those: each slides with its own source's events)
    windowed.union(words.window(4, 2))
    ssc.union(words, words.map(str))
    daily = ssc.timer(T0 + Seconds(1), None, Seconds(1), "daily")
    weekly = ssc.timer(T0 + Seconds(7), None, Seconds(7), "weekly")
    ssc.queueStream([[1]]).bind(daily).union(ssc.queueStream([[2]]).bind(weekly))


@pytest.mark.parametrize("operation", ["union", "ssc.union", "ssc.transform"])
async def test_a_binding_made_later_that_makes_slides_differ_is_refused_at_start(
    sc: SparkContext, operation: str
) -> None:
    """Both streams slid every 2 s on the default timer when united; the output bound to a
    1 s timer afterwards drives them both, the window still sliding every 2 s: PySpark would
    have refused them, so the start does."""
    ssc = virtual(sc, Seconds(2))
    windowed = ssc.queueStream(WORDS).window(4, 2)
    words = ssc.queueStream(WORDS)
    both = {
        "union": lambda: windowed.union(words),
        "ssc.union": lambda: ssc.union(windowed, words),
        "ssc.transform": lambda: ssc.transform([windowed, words], lambda rdds: rdds[0]),
    }[operation]()
    fast = ssc.timer(T0 + Seconds(1), None, Seconds(1), "fast")
    both.foreachRDD(lambda rdd: None).bind(fast)
    with pytest.raises(InvalidArgumentError, match="slide duration") as raised:
        await ssc.start()
    message = str(raised.value)
    assert both.name in message and "2000 ms" in message and "1000 ms" in message


def none_when_empty(rdd: RDD[Any]) -> RDD[Any] | None:
    return None if rdd.isEmpty() else rdd


async def test_update_state_by_key_gives_its_state_again_when_its_parent_gives_none(
    sc: SparkContext,
) -> None:
    """A transform that returns None before updateStateByKey: pyspark gives the last state,
    unchanged (the update function is not called), at every batch after the first update."""
    ssc = virtual(sc, Seconds(1))
    batches = [[("a", 1)], [], [("a", 2), ("b", 1)], [], [], [("b", 5)], []]
    kept = ssc.queueStream(batches).transform(none_when_empty)
    _, totals = gather(kept.updateStateByKey(lambda new, old: sum(new) + (old or 0)))
    _, updates = gather(kept.updateStateByKey(lambda new, old: (old or 0) + 1))
    initial = sc.parallelize([("z", 9)])
    late = ssc.queueStream([[], [("a", 1)], []]).transform(none_when_empty)
    _, seeded = gather(
        late.updateStateByKey(lambda new, old: sum(new) + (old or 0), initialRDD=initial)
    )
    await run_seconds(ssc, 8)
    assert by_second(totals) == {
        1: [("a", 1)],
        2: [("a", 1)],
        **{second: [("a", 3), ("b", 1)] for second in (3, 4, 5)},
        **{second: [("a", 3), ("b", 6)] for second in (6, 7, 8)},
    }
    assert by_second(updates) == {
        1: [("a", 1)],
        2: [("a", 1)],
        **{second: [("a", 2), ("b", 1)] for second in (3, 4, 5)},
        **{second: [("a", 3), ("b", 2)] for second in (6, 7, 8)},
    }
    # nothing before the first update, not even the initial state
    assert by_second(seeded) == {second: [("a", 1), ("z", 9)] for second in range(2, 9)}


async def test_a_state_between_its_window_slides_still_gives_nothing(sc: SparkContext) -> None:
    """Between the window's slides the state has no RDD, even where the transform between
    them gives None at a slide (there it gives the last state again)."""
    ssc = virtual(sc, Seconds(1))
    words = ssc.queueStream([["a"], ["a"], [], [], ["b"], ["b"]])
    counted = (
        words.window(2, 2)
        .map(lambda word: (word, 1))
        .transform(none_when_empty)
        .updateStateByKey(lambda new, old: sum(new) + (old or 0))
    )
    _, seen = gather(counted)
    await run_seconds(ssc, 8)
    assert by_second(seen) == {
        2: [("a", 2)],
        4: [("a", 2)],
        6: [("a", 2), ("b", 2)],
        8: [("a", 2), ("b", 2)],
    }


async def test_a_window_slides_with_time_over_batches_without_rdds(sc: SparkContext) -> None:
    """The transform gives no RDD at seconds 3 to 6 and from 9 on: the window counted its
    parent's RDDs, so it emitted at 2 and then only at 8, over seconds 1, 2, 7 and 8, and never
    again. PySpark's slides with time: a window every 2 s, empty where no batch gave data, as
    pyspark.streaming printed for this program."""
    ssc = virtual(sc, Seconds(1))
    batches = [[1], [2], [], [], [], [], [7], [8]]
    kept = ssc.queueStream(batches).transform(none_when_empty)
    _, windows = gather(kept.window(4, 2))
    await run_seconds(ssc, 12)
    assert by_second(windows) == {2: [1, 2], 4: [1, 2], 6: [], 8: [7, 8], 10: [7, 8], 12: []}


async def test_a_window_over_batches_without_rdds_slides_on_after_a_restart(
    sc: SparkContext, tmp_path: Path
) -> None:
    """The batches without an RDD before the restart count as they did."""
    checkpoint = str(tmp_path / "checkpoint")

    def windows(ssc: StreamingContext) -> Seen:
        batches = [[1], [2], [], [], [], [], [7], [8]]
        return gather(ssc.queueStream(batches).transform(none_when_empty).window(4, 2))[1]

    first = virtual(sc, Seconds(1), checkpoint=checkpoint)
    before = windows(first)
    await ran(first, T0 + Seconds(5), graceful=True)
    second = virtual(sc, Seconds(1), start=T0 + Seconds(5), checkpoint=checkpoint)
    after = windows(second)
    await ran(second, T0 + Seconds(12))
    assert by_second(before) == {2: [1, 2], 4: [1, 2]}
    assert by_second(after) == {6: [], 8: [7, 8], 10: [7, 8], 12: []}
