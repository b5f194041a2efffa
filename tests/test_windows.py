"""Windows and cascaded jobs across time, and the legacy window family against the
expected outputs of pyspark's own test_dstream.py window tests."""

from __future__ import annotations

import operator
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark import SparkContext

from reactive_spark import (
    Days,
    DStream,
    Event,
    EventSource,
    Hours,
    InvalidArgumentError,
    Seconds,
    StreamingContext,
    Time,
)
from reactive_spark.backfill import Backfill
from reactive_spark.checkpoint import Checkpoint
from reactive_spark.testing import run_batches

from .helpers import Recorder, gather, ran, virtual

T0 = Time(0)


async def test_tail_window_design_example(sc: SparkContext) -> None:
    ssc = virtual(sc)
    timer = ssc.timer(T0 + Seconds(1), T0 + Seconds(9), Seconds(1), "events")
    numbered = ssc.queueStream([[k] for k in range(1, 10)])
    out, seen = gather(numbered.tailWindow(4, 3, 2))
    out.bind(timer)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(9))
    await ssc.stop(stopSparkContext=False)
    assert [(e.index + 1, sorted(items)) for e, items in seen] == [
        (3, [1]),
        (6, [1, 2, 3, 4]),
        (9, [4, 5, 6, 7]),
    ]


async def test_tail_window_arguments(sc: SparkContext) -> None:
    stream = virtual(sc).queueStream([[1]])
    with pytest.raises(InvalidArgumentError, match="windowLength must be a positive int, got 0"):
        stream.tailWindow(0)
    with pytest.raises(InvalidArgumentError, match="slideLength must be a positive int, got -1"):
        stream.tailWindow(3, -1)
    with pytest.raises(InvalidArgumentError, match="skipLength must be an int >= 0, got -2"):
        stream.tailWindow(3, 1, -2)
    with pytest.raises(InvalidArgumentError, match="windowLength"):
        stream.tailWindow(2.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="windowDuration must be positive"):
        stream.timeWindow(Seconds(0))
    with pytest.raises(InvalidArgumentError, match="slideDuration must be positive"):
        stream.timeWindow(Seconds(2), -1)
    with pytest.raises(InvalidArgumentError, match="origin must be a Time"):
        stream.timeWindow(Seconds(2), origin=3)  # type: ignore[arg-type]


async def test_time_window_with_regular_events(sc: SparkContext) -> None:
    ssc = virtual(sc)
    timer = ssc.timer(T0 + Seconds(1), T0 + Seconds(6), Seconds(1), "tick")
    numbered = ssc.queueStream([[k] for k in range(1, 7)])
    out, seen = gather(numbered.timeWindow(Seconds(2)))
    out.bind(timer)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(6))
    await ssc.stop(stopSparkContext=False)
    assert [(e.time, sorted(items)) for e, items in seen] == [
        (T0 + Seconds(2), [1]),
        (T0 + Seconds(4), [2, 3]),
        (T0 + Seconds(6), [4, 5]),
    ]


async def test_time_window_with_sparse_events_emits_latest_complete_window_once(
    sc: SparkContext,
) -> None:
    ssc = virtual(sc)
    fast = ssc.timer(T0 + Seconds(1), None, Seconds(1), "fast")
    slow = ssc.timer(T0 + Seconds(5), None, Seconds(5), "slow")
    produced = ssc.queueStream([[k] for k in range(1, 20)]).foreachRDD(lambda rdd: None)
    produced.bind(fast)
    out, seen = gather(produced.timeWindow(Seconds(2), Seconds(2)))
    out.bind(slow)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(11))
    await ssc.stop(stopSparkContext=False)
    assert [(e.time, sorted(items)) for e, items in seen] == [
        (T0 + Seconds(5), [2, 3]),
        (T0 + Seconds(10), [8, 9]),
    ]


async def test_sliding_time_window_with_origin(sc: SparkContext) -> None:
    ssc = virtual(sc)
    timer = ssc.timer(T0 + Seconds(1), T0 + Seconds(6), Seconds(1), "tick")
    numbered = ssc.queueStream([[k] for k in range(1, 7)])
    out, seen = gather(numbered.timeWindow(Seconds(3), Seconds(2), origin=T0 + Seconds(1)))
    out.bind(timer)
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(6))
    await ssc.stop(stopSparkContext=False)
    # ends at 1, 3, 5 (+k*2); windows [end-3, end)
    assert [(e.time, sorted(items)) for e, items in seen] == [
        (T0 + Seconds(3), [1, 2]),
        (T0 + Seconds(5), [2, 3, 4]),
    ]


def daily_and_weekly(ssc: StreamingContext, weekly_first: bool) -> tuple[EventSource, EventSource]:
    """A daily and a weekly timer, created in the order given."""
    if weekly_first:
        weekly = ssc.timer(T0 + Days(7), None, Days(7), "weekly")
        return ssc.timer(T0 + Days(1), None, Days(1), "daily"), weekly
    daily = ssc.timer(T0 + Days(1), None, Days(1), "daily")
    return daily, ssc.timer(T0 + Days(7), None, Days(7), "weekly")


@pytest.mark.parametrize("weekly_first", [True, False])
async def test_daily_weekly_cascade(sc: SparkContext, weekly_first: bool) -> None:
    days = 21
    logs = [[f"day{d} INFO a", f"day{d} ERROR b", f"day{d} WARN c"] for d in range(1, days + 1)]
    ssc = virtual(sc)
    daily, weekly = daily_and_weekly(ssc, weekly_first)
    daily_out, daily_seen = gather(
        ssc.queueStream(logs).filter(lambda line: "WARN" in line or "ERROR" in line)
    )
    daily_out.bind(daily)
    weekly_out, weekly_seen = gather(
        daily_out.tailWindow(7, 7, 0).filter(lambda line: "ERROR" in line)
    )
    weekly_out.bind(weekly)
    await ssc.start()
    await ssc.runUntil(T0 + Days(days))
    await ssc.stop(stopSparkContext=False)
    assert len(daily_seen) == days
    assert [e.time for e, _ in weekly_seen] == [T0 + Days(7 * w) for w in (1, 2, 3)]
    for week, (_, items) in enumerate(weekly_seen):
        first = 7 * week + 1
        expected = [f"day{d} ERROR b" for d in range(first, first + 7)]
        assert sorted(items) == sorted(expected)


@pytest.mark.parametrize("with_time_window", [False, True])
@pytest.mark.parametrize("weekly_first", [True, False])
async def test_a_roll_up_over_the_stream_an_output_bound_to_daily_reads(
    sc: SparkContext, weekly_first: bool, with_time_window: bool
) -> None:
    """The daily output is bound, not the stream the weekly window reads: the weekly tick still
    goes after the daily tick of its instant, so the roll-up holds that day. A time window
    bound to the daily timer over what the weekly one computes reads only the days before
    its own: it asks for no order, so it cannot undo that one."""
    ssc = virtual(sc)
    daily, weekly = daily_and_weekly(ssc, weekly_first)

    def day(time, rdd, event):  # type: ignore[no-untyped-def]
        if event.source is daily:
            return rdd.context.parallelize([(event.time - T0).milliseconds // Days(1).milliseconds])
        return rdd.context.parallelize([])

    days = ssc.queueStream([], default=[0]).transform(day)
    days.foreachRDD(lambda rdd: None).bind(daily)
    roll_ups, seen = gather(days.tailWindow(7, 7))
    roll_ups.bind(weekly)
    if with_time_window:  # the daily report shows the weekly marks of the days before it
        marks = ssc.queueStream([], default=[1])
        marks.foreachRDD(lambda rdd: None).bind(weekly)
        marks.timeWindow(Days(14), Days(1)).foreachRDD(lambda rdd: None).bind(daily)
    # under backpressure, and on the system clock, the weekly tick waits for the daily one
    assert ssc.graph.accepted_after([daily, weekly]) == {daily: {daily, weekly}, weekly: {weekly}}
    await ssc.start()
    await ssc.runUntil(T0 + Days(14))
    await ssc.stop(stopSparkContext=False)
    assert [e.time for e, _ in seen] == [T0 + Days(7), T0 + Days(14)]
    assert [max(items) for _, items in seen] == [7, 14]  # the day of its instant included


def weekly_over_mapped_days(
    ssc: StreamingContext, *names: str, weekly_first: bool = False
) -> tuple[EventSource, EventSource, dict[str, DStream[Any]]]:
    """Days 1..28 bound to a daily timer, mapped, and the named weekly windows of them."""
    daily, weekly = daily_and_weekly(ssc, weekly_first)
    days = ssc.queueStream([[d] for d in range(1, 29)]).bind(daily)
    mapped = days.map(lambda d: ("k", d))
    values = mapped.map(lambda kv: kv[1])
    windows: dict[str, Callable[[], DStream[Any]]] = {
        "window": lambda: mapped.window(Days(7), Days(7)).map(lambda kv: kv[1]),
        "reduceByKeyAndWindow": lambda: mapped.reduceByKeyAndWindow(
            operator.add, None, Days(7), Days(7)
        ).map(lambda kv: kv[1]),
        "reduceByWindow": lambda: values.reduceByWindow(operator.add, None, Days(7), Days(7)),
        "countByWindow": lambda: mapped.countByWindow(Days(7), Days(7)),
        "tailWindow": lambda: mapped.tailWindow(7, 7).map(lambda kv: kv[1]),
        "timeWindow": lambda: mapped.timeWindow(Days(7), Days(7)).map(lambda kv: kv[1]),
        "window of windows": lambda: (
            values.window(Days(1), Days(1)).map(lambda d: d).window(Days(7), Days(7))
        ),
    }
    return daily, weekly, {name: windows[name]() for name in names or windows}


async def test_weekly_windows_over_streams_derived_from_bound_days(sc: SparkContext) -> None:
    """`days` is bound to the daily timer and a window over `days.map(...)` is read weekly:
    the map reacted to the weekly events only, where `days` has no RDD, and every window was
    empty, silently (a reducing window too: its per-batch reduction is such a stream). The map
    now computes on the daily events too, as every stream of a PySpark program computes every
    batch, and so does a window of windows; nothing is bound anew."""
    ssc = virtual(sc)
    daily, weekly, windows = weekly_over_mapped_days(ssc)
    seen = {}
    for name, windowed in windows.items():
        out, seen[name] = gather(windowed)
        out.bind(weekly)
    await ran(ssc, T0 + Days(14))
    got = {name: [sorted(items) for _, items in batches] for name, batches in seen.items()}
    weeks = [list(range(1, 8)), list(range(8, 15))]
    assert got == {
        "window": weeks,
        "reduceByKeyAndWindow": [[28], [77]],
        "reduceByWindow": [[28], [77]],
        "countByWindow": [[7], [7]],
        "tailWindow": weeks,
        # a time window ends just after the day it last read: days 1..6 end the first week
        "timeWindow": [list(range(1, 7)), list(range(7, 14))],
        "window of windows": weeks,
    }
    assert all(e.source is weekly for batches in seen.values() for e, _ in batches)
    assert [s.boundSources for s in ssc.graph.streams] == [
        [daily] if s.id == 0 else [weekly] if s.isOutput else [] for s in ssc.graph.streams
    ]


async def test_a_weekly_roll_up_of_derived_days_that_a_monthly_window_reads(
    sc: SparkContext,
) -> None:
    """The weekly roll-up computes on weekly and monthly events; the monthly window over it
    reads its four weekly windows, and the weekly output still sees each week."""
    ssc = virtual(sc)
    _, weekly, windows = weekly_over_mapped_days(ssc, "window")
    rolled = windows["window"]
    monthly = ssc.timer(T0 + Days(28), None, Days(28), "monthly")
    weeks, each_week = gather(rolled)
    weeks.bind(weekly)
    months, each_month = gather(rolled.window(Days(28), Days(28)))
    months.bind(monthly)
    await ran(ssc, T0 + Days(28))
    assert [sorted(items) for _, items in each_week] == [
        list(range(first, first + 7)) for first in (1, 8, 15, 22)
    ]
    assert [sorted(items) for _, items in each_month] == [list(range(1, 29))]


def days_of_both_timers(ssc: StreamingContext) -> tuple[EventSource, DStream[Any]]:
    """Days 1..28 bound to a daily and a weekly timer; returns the weekly one and the days."""
    daily, weekly = daily_and_weekly(ssc, weekly_first=False)
    return weekly, ssc.queueStream([[d] for d in range(1, 29)]).bind(daily).bind(weekly)


async def test_a_window_whose_parent_has_rdds_at_its_events_holds_the_other_events_too(
    sc: SparkContext,
) -> None:
    """`days` is bound to both timers: it pops its queue at the daily and the weekly events,
    and `days.map(...)` has new data at both. A window of the map read weekly was fed nothing,
    as the map computed at the weekly events already: it held the weekly batches only ([80],
    [160]), and what `days` read at the daily events went nowhere. The map now computes at the
    daily events too, so a week's window holds all the map made that week, as a PySpark window
    holds every batch of its duration, and a state of the map counts every day (it counted
    the weekly batches only). Driven by two timers, the map has no one regular slide: a legacy
    `window(...)` over it raises at start, as one over `days` itself does."""
    ssc = virtual(sc)
    weekly, days = days_of_both_timers(ssc)
    out, seen = gather(days.map(lambda d: d * 10).tailWindow(8, 8))
    out.bind(weekly)
    totals = days.map(lambda d: ("total", d)).updateStateByKey(
        lambda new, old: sum(new) + (old or 0)
    )
    out, states = gather(totals)
    out.bind(weekly)
    await ran(ssc, T0 + Days(14))
    # a week is 8 batches: 7 daily ones, and the weekly one after the daily one of its instant
    assert [sorted(items) for _, items in seen] == [
        list(range(10, 90, 10)),
        list(range(90, 170, 10)),
    ]
    assert [items for _, items in states] == [[("total", 36)], [("total", 136)]]  # 1..8, 1..16
    legacy = virtual(sc)
    weekly, days = days_of_both_timers(legacy)
    days.map(lambda d: d * 10).window(Days(7), Days(7)).foreachRDD(lambda rdd: None).bind(weekly)
    with pytest.raises(InvalidArgumentError, match=r"driven by one regular timer, but map\[1\]"):
        await legacy.start()


async def test_a_daily_window_of_a_union_holds_what_its_hourly_side_made(
    sc: SparkContext,
) -> None:
    """`hours.union(days)`, the one bound to an hourly timer, the other to a daily one, has new
    data at both timers' events; a daily output reads a daily time window of it. The union was
    fed nothing, as it computed at the daily events already: every window lacked the hours,
    silently. It now computes at the hourly events too, and each window holds its hours."""
    ssc = virtual(sc)
    hourly = ssc.timer(T0 + Hours(1), None, Hours(1), "hourly")
    daily = ssc.timer(T0 + Days(1), None, Days(1), "daily")
    hours = ssc.queueStream([[h] for h in range(1, 49)]).bind(hourly)
    days = ssc.queueStream([[100], [200]]).bind(daily)
    out, seen = gather(hours.union(days).timeWindow(Days(1)))
    out.bind(daily)
    await ran(ssc, T0 + Days(2))
    # a time window ends at its instant: what the instant's hour and day made is the next one's
    assert [(e.time, sorted(items)) for e, items in seen] == [
        (T0 + Days(1), list(range(1, 24))),
        (T0 + Days(2), [*range(24, 48), 100]),
    ]


@pytest.mark.parametrize("join", ["join", "leftOuterJoin"])
async def test_a_weekly_window_of_days_joined_with_names_bound_to_nothing_holds_every_day(
    sc: SparkContext, join: str
) -> None:
    """`days`, bound to a daily timer, joined with `names`, bound to nothing, read weekly
    through a window and a state. The join was fed nothing, as `names` reads at any event, so
    its new data seemed to come from anywhere: it computed at the weekly events only, where
    `days` has nothing, and every window was empty and the state counted nothing, silently.
    An inner join has new data only where both sides do, a left outer join where its left
    side does: at the daily events, where it now computes, reading `names` there as a join
    bound to the daily timer would."""
    ssc = virtual(sc)
    daily, weekly = daily_and_weekly(ssc, weekly_first=False)
    days = ssc.queueStream([[d] for d in range(1, 15)]).bind(daily)
    names = ssc.queueStream([], default=[("k", "day")])
    joined = getattr(days.map(lambda d: ("k", d)), join)(names)
    out, seen = gather(joined.window(Days(7), Days(7)))
    out.bind(weekly)
    out, states = gather(
        joined.map(lambda kv: ("days", 1)).updateStateByKey(lambda new, old: sum(new) + (old or 0))
    )
    out.bind(weekly)
    await ran(ssc, T0 + Days(14))
    assert [sorted(items) for _, items in seen] == [
        [("k", (d, "day")) for d in range(first, first + 7)] for first in (1, 8)
    ]
    assert [items for _, items in states] == [[("days", 7)], [("days", 14)]]


async def test_a_join_read_where_a_side_it_needs_has_no_data_has_no_rdd_there(
    sc: SparkContext,
) -> None:
    """The same join is also read every six hours, where `days` has nothing: it gave an empty
    RDD at every such event, which ran the six-hourly output for nothing, filled a tail window
    with empty quarter-days, and pushed the days out of a legacy window's memory (a week held
    only its last day, silently). It now has no RDD there, as `days.map(f)` has none, and each
    window holds its week; a right outer join, which keeps the side read six-hourly, still
    joins there."""
    ssc = virtual(sc)
    daily, weekly = daily_and_weekly(ssc, weekly_first=False)
    # from the last two days of the first week to the end of the second one: 4 ticks a day
    six_hourly = ssc.timer(T0 + Days(6), None, Hours(6), "six-hourly")
    days = ssc.queueStream([[d] for d in range(1, 15)]).bind(daily)
    names = ssc.queueStream([], default=[("k", "day")])
    joined = days.map(lambda d: ("k", d)).join(names)
    out, quarters = gather(joined)
    out.bind(six_hourly)
    out, kept = gather(days.map(lambda d: ("k", d)).rightOuterJoin(names))
    out.bind(six_hourly)
    windows = {"window": joined.window(Days(7), Days(7)), "tailWindow": joined.tailWindow(7, 7)}
    seen = {}
    for name, windowed in windows.items():
        out, seen[name] = gather(windowed.map(lambda kv: kv[1][0]))
        out.bind(weekly)
    await ran(ssc, T0 + Days(14))
    assert quarters == []
    assert len(kept) == 8 * 4 + 1 and {items[0] for _, items in kept} == {("k", (None, "day"))}
    for name in windows:
        assert [sorted(items) for _, items in seen[name]] == [
            list(range(1, 8)),
            list(range(8, 15)),
        ], name


@pytest.mark.parametrize("side", ["window", "tailWindow", "updateStateByKey"])
async def test_a_daily_join_with_a_window_or_state_of_six_hourly_data_joins_every_day(
    sc: SparkContext, side: str
) -> None:
    """`days.join(hours.window(...))` bound daily, `hours` bound to a timer that ticks every six
    hours (4 batches a day): the window has new data at those events, yet it has an RDD
    wherever it is read, as a state does. Taken for a side with data at the sub-daily events
    only, it left the join with no source where both sides have data: the join had no RDD at
    all (review). A window or state side does not narrow where a join has data."""
    ssc = virtual(sc)
    daily = ssc.timer(T0 + Days(1), None, Days(1), "daily")
    six_hourly = ssc.timer(T0 + Hours(6), None, Hours(6), "six-hourly")
    days = ssc.queueStream([[("k", f"day{d}")] for d in range(1, 4)]).bind(daily)
    hours = ssc.queueStream([[("k", 1)] for _ in range(1, 13)]).bind(six_hourly)
    other = {
        "window": lambda: hours.window(Days(1), Days(1)),
        "tailWindow": lambda: hours.tailWindow(4),
        "updateStateByKey": lambda: hours.updateStateByKey(lambda new, old: sum(new) + (old or 0)),
    }[side]()
    joined = days.join(other).map(lambda kv: (kv[1][0], kv[1][1])).reduceByKey(operator.add)
    out, seen = gather(joined)
    out.bind(daily)
    await ran(ssc, T0 + Days(3))
    # a day's window holds its 4 quarter-days; the state counts every quarter-day so far
    per_day = [4, 4, 4] if side != "updateStateByKey" else [4, 8, 12]
    assert [items for _, items in seen] == [
        [(f"day{d}", count)] for d, count in zip((1, 2, 3), per_day, strict=True)
    ]


def _latest(new: list[Any], old: Any) -> Any:
    return new[-1] if new else old


async def test_a_weekly_window_of_a_map_of_a_daily_state_reads_every_week(
    sc: SparkContext,
) -> None:
    """A weekly window over `state.map(f)`, the state of a daily stream: the window keeps a
    week of the map's RDDs, but the state forgot (and unpersisted) its own older RDDs, whose
    lineage its cuts had ended: from the second week every window's job failed with Spark's
    CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND. What a stream must remember, its parents remember too,
    as Spark's `remember` passes on to a stream's dependencies. Two weeks: the second one's
    window reads days on both sides of the state's cut at the tenth."""
    ssc = virtual(sc)
    daily, weekly = daily_and_weekly(ssc, weekly_first=False)
    days = ssc.queueStream([[("k", d)] for d in range(1, 15)]).bind(daily)
    latest = days.updateStateByKey(_latest).map(lambda kv: kv[1])
    out, weeks = gather(latest.window(Days(7), Days(7)))
    out.bind(weekly)
    await ran(ssc, T0 + Days(14))
    assert [sorted(items) for _, items in weeks] == [
        list(range(first, first + 7)) for first in (1, 8)
    ]


@pytest.mark.parametrize("sides", ["states", "windows"])
async def test_a_join_of_two_windows_or_states_of_daily_streams_is_read_weekly(
    sc: SparkContext, sides: str
) -> None:
    """Both sides of the join repeat (a state or a window of a daily stream): neither narrows
    where the join has data, which left it with data anywhere, so it was fed nothing and a
    weekly window of it held the weekly instants only (review). It has new data where its
    parents do, the daily events; read weekly directly, it joins the sides' latest RDDs."""
    ssc = virtual(sc)
    daily, weekly = daily_and_weekly(ssc, weekly_first=False)
    days = ssc.queueStream([[("k", d)] for d in range(1, 15)]).bind(daily)
    names = ssc.queueStream([[("k", f"n{d}")] for d in range(1, 15)]).bind(daily)
    if sides == "states":
        joined = days.updateStateByKey(_latest).join(names.updateStateByKey(_latest))
    else:
        joined = days.window(Days(1), Days(1)).join(names.window(Days(1), Days(1)))
    out, weeks = gather(joined.window(Days(7), Days(7)).map(lambda kv: kv[1]))
    out.bind(weekly)
    out, at_weeks = gather(joined.map(lambda kv: kv[1]))
    out.bind(weekly)
    await ran(ssc, T0 + Days(14))
    assert [sorted(items) for _, items in weeks] == [
        [(d, f"n{d}") for d in range(first, first + 7)] for first in (1, 8)
    ]
    assert [items for _, items in at_weeks] == [[(7, "n7")], [(14, "n14")]]


async def test_the_order_of_a_fed_window_is_known_before_the_start(sc: SparkContext) -> None:
    """The daily batches compute what the weekly window reads (the map, fed to it at the daily
    events): at their shared instants the daily tick goes first in a backfill's plan, made
    before the start knows what is fed, as in its run, though the weekly timer came first; and
    each week's window holds the day of its instant."""
    ssc = virtual(sc)
    _, weekly, windows = weekly_over_mapped_days(ssc, "tailWindow", weekly_first=True)
    out, seen = gather(windows["tailWindow"])
    out.bind(weekly)
    recorder = Recorder()
    ssc.addStreamingListener(recorder)
    first, last = T0 + Days(1), T0 + Days(14)
    plan = Backfill(ssc, first, last).batches
    report = await ssc.backfill(first, last)
    assert report.failures == []
    at_a_week = [batch.source for batch in plan if batch.time == (T0 + Days(7)).toDatetime()]
    assert at_a_week == ["daily", "weekly"]
    assert [(e.source.name, e.time.toDatetime()) for e in recorder.events] == [
        (batch.source, batch.time) for batch in plan
    ]
    assert [sorted(items) for _, items in seen] == [list(range(1, 8)), list(range(8, 15))]


async def test_a_fed_window_emits_as_before_after_a_restart(
    sc: SparkContext, tmp_path: Path
) -> None:
    """The daily batches a restart plans again compute the mapped stream, as live ones do."""
    checkpoint = str(tmp_path / "checkpoint")
    first = virtual(sc, checkpoint=checkpoint)
    _, weekly, windows = weekly_over_mapped_days(first, "window")
    out, before = gather(windows["window"])
    out.bind(weekly)
    await ran(first, T0 + Days(10), graceful=True)
    second = virtual(sc, start=T0 + Days(10), checkpoint=checkpoint)
    _, weekly, windows = weekly_over_mapped_days(second, "window")
    out, after = gather(windows["window"])
    out.bind(weekly)
    await ran(second, T0 + Days(14))
    assert [sorted(items) for _, items in before + after] == [
        list(range(1, 8)),
        list(range(8, 15)),
    ]


async def test_every_reader_of_a_window_at_one_instant_reads_the_same_window(
    sc: SparkContext,
) -> None:
    """Two timers tick weekly at the same instants and read the same windows: the second got
    an empty window (it was not due again). Every reader of an instant now reads the one
    window of that instant, as every output of a PySpark batch does; a stream both read is
    remembered once per instant, so a window over it counts each week once."""
    ssc = virtual(sc)
    daily, weekly = daily_and_weekly(ssc, weekly_first=False)
    also_weekly = ssc.timer(T0 + Days(7), None, Days(7), "also weekly")
    days = ssc.queueStream([[d] for d in range(1, 15)]).foreachRDD(lambda rdd: None).bind(daily)
    windows = {
        "window": days.window(Days(7), Days(7)),
        "tailWindow": days.tailWindow(7, 7),
        "timeWindow": days.timeWindow(Days(7)),
    }
    first, second = {}, {}
    for name, windowed in windows.items():
        out, first[name] = gather(windowed)
        out.bind(weekly)
        out, second[name] = gather(windowed.map(lambda d: d))
        out.bind(also_weekly)
    shared = windows["window"].map(lambda d: d)
    shared.foreachRDD(lambda rdd: None).bind(weekly)
    shared.foreachRDD(lambda rdd: None).bind(also_weekly)
    out, fortnights = gather(shared.window(Days(14), Days(14)))
    out.bind(also_weekly)
    await ran(ssc, T0 + Days(14))
    weeks = [list(range(1, 8)), list(range(8, 15))]
    for name in windows:
        # a time window ends at the instant, so it holds the days before it
        expected = [list(range(1, 7)), list(range(7, 14))] if name == "timeWindow" else weeks
        assert [sorted(items) for _, items in first[name]] == expected, name
        assert [sorted(items) for _, items in second[name]] == expected, name
        assert [e.source for e, _ in second[name]] == [also_weekly, also_weekly]
    assert [sorted(items) for _, items in fortnights] == [list(range(1, 15))]


async def test_an_output_bound_to_two_sources_of_one_instant_runs_once_per_instant(
    sc: SparkContext,
) -> None:
    """One output over a window (and one over a state) bound to two timers that tick at the
    same instants: the second event of the instant got the instant's RDD again, and the
    output ran twice on it (saveAsTextFiles wrote `-<ms>` and `-<ms>_2`). One output runs
    once per instant, as once per PySpark batch."""
    ssc = virtual(sc)
    daily, weekly = daily_and_weekly(ssc, weekly_first=False)
    also_weekly = ssc.timer(T0 + Days(7), None, Days(7), "also weekly")
    days = ssc.queueStream([[d] for d in range(1, 15)]).foreachRDD(lambda rdd: None).bind(daily)
    out, windows = gather(days.tailWindow(7, 7))
    out.bind(weekly).bind(also_weekly)
    states = days.map(lambda d: ("n", d)).updateStateByKey(lambda new, old: sum(new) + (old or 0))
    out, totals = gather(states)
    out.bind(weekly).bind(also_weekly)
    await ran(ssc, T0 + Days(14))
    assert [sorted(items) for _, items in windows] == [list(range(1, 8)), list(range(8, 15))]
    assert [items for _, items in totals] == [[("n", sum(range(1, 8)))], [("n", sum(range(1, 15)))]]


def test_windows_reading_each_others_batches_keep_creation_order(sc: SparkContext) -> None:
    """Each timer's window reads what the other's ticks generate: neither can go first, so
    neither waits for the other, as when nothing relates them."""
    ssc = virtual(sc)
    second = ssc.timer(T0 + Days(3), None, Days(3), "every third day")
    first = ssc.timer(T0 + Days(2), None, Days(2), "every other day")
    shared = ssc.queueStream([], default=[0]).map(lambda n: n)
    shared.tailWindow(2, 2).foreachRDD(lambda rdd: None).bind(first)
    shared.tailWindow(3, 3).foreachRDD(lambda rdd: None).bind(second)
    assert ssc.graph.accepted_after([first, second]) == {first: {first}, second: {second}}


def test_a_window_edge_against_the_lineage_is_left_out(sc: SparkContext) -> None:
    """A map of the daily timer goes after it; a window in the daily batches over what the
    map's batches compute would put the daily timer after the map: a cycle, so that edge is
    left out and the lineage's order holds."""
    ssc = virtual(sc)
    daily = ssc.timer(T0 + Days(1), None, Days(1), "daily")
    mapped = daily.map(lambda e: e.index)
    shared = ssc.queueStream([], default=[0]).map(lambda n: n)
    shared.foreachRDD(lambda rdd: None).bind(mapped)
    shared.tailWindow(2, 2).foreachRDD(lambda rdd: None).bind(daily)
    assert ssc.graph.lineage_ranks([mapped, daily]) == {daily: 0, mapped: 1}
    assert ssc.graph.accepted_after([daily, mapped]) == {daily: {daily}, mapped: {mapped}}


async def test_daily_weekly_example(sc: SparkContext, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import sys
    from pathlib import Path

    examples = Path(__file__).resolve().parent.parent / "examples"
    sys.path.insert(0, str(examples))
    try:
        import daily_weekly_logs
    finally:
        sys.path.remove(str(examples))
    summary = await daily_weekly_logs.run(tmp_path, weeks=2)
    assert summary["days processed"] == 14
    assert summary["weekly files"] == 2
    logs = sorted((tmp_path / "logs").glob("*.log"))
    lines = [line for path in logs for line in path.read_text().splitlines()]
    kept = [line for line in lines if "WARN" in line or "ERROR" in line]
    assert summary["lines kept daily"] == len(kept)
    assert summary["weekly errors"] == len([line for line in kept if "ERROR" in line])


# -- the legacy window family, batch duration 0.5 s as in pyspark's WindowFunctionTests ----------


async def legacy(sc: SparkContext, build, batches, expected, sort=False, ticks=None):  # type: ignore[no-untyped-def]
    ticks = len(expected) if ticks is None else ticks
    out = await run_batches(sc, build, batches, numBatches=ticks, batchDuration=0.5, sort=sort)
    assert out == expected


async def test_window(sc: SparkContext) -> None:
    await legacy(
        sc,
        lambda s: s.window(1.5, 0.5).count(),
        [list(range(n)) for n in (1, 2, 3, 4, 5)],
        [[1], [3], [6], [9], [12], [9], [5]],
    )


async def test_window_with_slide(sc: SparkContext) -> None:
    await legacy(
        sc,
        lambda s: s.window(1.5, 1.0),
        [[k] for k in range(1, 7)],
        [[1, 2], [2, 3, 4], [4, 5, 6]],
        sort=True,
        ticks=6,
    )


async def test_a_window_without_a_slide_slides_by_its_parents(sc: SparkContext) -> None:
    """As in PySpark: one window per parent batch, also over a window with a slide of its own."""
    await legacy(sc, lambda s: s.window(1.0), [[1], [2], [3]], [[1], [1, 2], [2, 3], [3]], True)
    await legacy(
        sc,
        lambda s: s.reduceByKeyAndWindow(operator.add, operator.sub, 1.0),
        [[("a", 1)], [("a", 2)], [("a", 3)]],
        [[("a", 1)], [("a", 3)], [("a", 5)], [("a", 3)]],
    )
    await legacy(
        sc,
        lambda s: s.window(1.0, 1.0).window(2.0),
        [[k] for k in range(1, 7)],
        [[1, 2], [1, 2, 3, 4], [3, 4, 5, 6]],
        sort=True,
        ticks=6,
    )


async def test_count_by_window(sc: SparkContext) -> None:
    await legacy(
        sc,
        lambda s: s.countByWindow(1.5, 0.5),
        [list(range(n)) for n in (1, 2, 3, 4, 5)],
        [[1], [3], [6], [9], [12], [9], [5]],
    )


async def test_count_by_window_large(sc: SparkContext) -> None:
    await legacy(
        sc,
        lambda s: s.countByWindow(2.5, 0.5),
        [list(range(n)) for n in (1, 2, 3, 4, 5, 6)],
        [[1], [3], [6], [10], [15], [20], [18], [15], [11], [6]],
    )


async def test_count_by_value_and_window(sc: SparkContext) -> None:
    await legacy(
        sc,
        lambda s: s.countByValueAndWindow(2.5, 0.5),
        [list(range(n)) for n in (1, 2, 3, 4, 5, 6)],
        [
            [(0, 1)],
            [(0, 2), (1, 1)],
            [(0, 3), (1, 2), (2, 1)],
            [(0, 4), (1, 3), (2, 2), (3, 1)],
            [(0, 5), (1, 4), (2, 3), (3, 2), (4, 1)],
            [(0, 5), (1, 5), (2, 4), (3, 3), (4, 2), (5, 1)],
            [(0, 4), (1, 4), (2, 4), (3, 3), (4, 2), (5, 1)],
            [(0, 3), (1, 3), (2, 3), (3, 3), (4, 2), (5, 1)],
            [(0, 2), (1, 2), (2, 2), (3, 2), (4, 2), (5, 1)],
            [(0, 1), (1, 1), (2, 1), (3, 1), (4, 1), (5, 1)],
        ],
        sort=True,
    )


async def test_group_by_key_and_window(sc: SparkContext) -> None:
    await legacy(
        sc,
        lambda s: s.groupByKeyAndWindow(1.5, 0.5).mapValues(sorted),
        [[("a", i)] for i in range(5)],
        [
            [("a", [0])],
            [("a", [0, 1])],
            [("a", [0, 1, 2])],
            [("a", [1, 2, 3])],
            [("a", [2, 3, 4])],
            [("a", [3, 4])],
            [("a", [4])],
        ],
    )


async def test_reduce_by_key_and_window_with_inverse(sc: SparkContext) -> None:
    await legacy(
        sc,
        lambda s: s.reduceByKeyAndWindow(operator.add, operator.sub, 1.5, 0.5),
        [[("a", i)] for i in range(5)],
        [[("a", 0)], [("a", 1)], [("a", 3)], [("a", 6)], [("a", 9)], [("a", 7)], [("a", 4)]],
    )


async def test_reduce_by_key_and_window_drops_keys_that_left(sc: SparkContext) -> None:
    batches = [[("a", 1)], [("b", 2)], [("a", 3)], [], []]
    direct = [[("a", 1)], [("a", 1), ("b", 2)], [("a", 3), ("b", 2)], [("a", 3)], []]
    await legacy(
        sc,
        lambda s: s.reduceByKeyAndWindow(operator.add, operator.sub, 1.0, 0.5),
        batches,
        direct,
        sort=True,
    )
    await legacy(
        sc,
        lambda s: s.reduceByKeyAndWindow(
            operator.add, operator.sub, 1.0, 0.5, 2, lambda kv: kv[1] > 1
        ),
        batches,
        [[], [("b", 2)], [("a", 3), ("b", 2)], [("a", 3)], []],
        sort=True,
    )
    await legacy(  # PySpark ignores filterFunc without an invFunc
        sc,
        lambda s: s.reduceByKeyAndWindow(operator.add, None, 1.0, 0.5, 2, lambda kv: kv[1] > 1),
        batches,
        direct,
        sort=True,
    )


async def test_reduce_by_window(sc: SparkContext) -> None:
    await legacy(
        sc,
        lambda s: s.reduceByWindow(operator.add, operator.sub, 1.0, 0.5),
        [[1, 2], [3], [4, 5]],
        [[3], [6], [12], [9]],
    )


async def test_legacy_window_durations_must_be_multiples(sc: SparkContext) -> None:
    ssc = virtual(sc, Seconds(0.5))
    stream = ssc.queueStream([[1]])
    with pytest.raises(ValueError, match=r"windowDuration must be a multiple .* \(500 ms\)"):
        stream.window(1.2, 0.5)
    with pytest.raises(ValueError, match=r"slideDuration must be a multiple .* \(500 ms\)"):
        stream.window(1.5, 0.7)
    with pytest.raises(ValueError, match="slideDuration must be a multiple"):
        stream.window(2, 1).window(4, 1.5)


async def test_legacy_window_over_a_daily_timer(sc: SparkContext) -> None:
    ssc = virtual(sc)
    daily = ssc.timer(T0 + Days(1), None, Days(1), "daily")
    weekly = ssc.timer(T0 + Days(7), None, Days(7), "weekly")
    produced = ssc.queueStream([[d] for d in range(1, 15)]).foreachRDD(lambda rdd: None)
    produced.bind(daily)
    with pytest.raises(
        ValueError, match=r"multiple of the parent stream's slide duration \(86400000 ms\)"
    ):
        produced.window(Days(1.5))
    out, seen = gather(produced.window(Days(7), Days(7)))
    out.bind(weekly)
    await ssc.start()
    await ssc.runUntil(T0 + Days(14))
    await ssc.stop(stopSparkContext=False)
    assert [sorted(items) for _, items in seen] == [list(range(1, 8)), list(range(8, 15))]


async def test_legacy_window_without_a_regular_period_fails_at_start(sc: SparkContext) -> None:
    ssc = virtual(sc, Seconds(1))
    fast = ssc.timer(T0, None, Seconds(1), "fast")
    odd = ssc.timer(T0, None, Seconds(3), "odd")
    ssc.queueStream([[1]]).window(3, 1).foreachRDD(lambda rdd: None).bind(fast).bind(odd)
    with pytest.raises(ValueError, match=r"use tailWindow .* or timeWindow"):
        await ssc.start()


async def test_update_state_by_key(sc: SparkContext) -> None:
    def updater(values, state):  # type: ignore[no-untyped-def]
        return (state or []) + values

    out = await run_batches(
        sc, lambda s: s.updateStateByKey(updater), [[("k", i)] for i in range(5)]
    )
    assert out == [[("k", list(range(i + 1)))] for i in range(5)]


async def test_update_state_by_key_initial_rdd_and_removal(sc: SparkContext) -> None:
    initial = sc.parallelize([("k", [0, 1]), ("gone", [9])])

    def updater(values, state):  # type: ignore[no-untyped-def]
        if state == [9]:
            return None
        return state + values

    out = await run_batches(
        sc,
        lambda s: s.updateStateByKey(updater, initialRDD=initial),
        [[("k", i)] for i in range(2, 5)],
    )
    assert out == [[("k", [0, 1, 2])], [("k", [0, 1, 2, 3])], [("k", [0, 1, 2, 3, 4])]]


async def test_update_state_by_key_over_many_events_keeps_counting(sc: SparkContext) -> None:
    batches = [[("a", 1)] if k % 2 else [("b", 1), ("a", 1)] for k in range(25)]
    out = await run_batches(
        sc,
        lambda s: s.updateStateByKey(lambda values, total: sum(values) + (total or 0)),
        batches,
        numBatches=27,
        sort=True,
    )
    assert out[-1] == [("a", 25), ("b", 13)]
    assert out[-3] == out[-2] == out[-1]


async def test_update_state_by_key_after_a_window_updates_at_its_slides(sc: SparkContext) -> None:
    """What pyspark.streaming printed for this program: the state after `window(4, 2)` over 1 s
    batches is computed at the window's slides only, every 2 s, and so is what reads it."""
    ssc = virtual(sc, Seconds(1))
    words = ssc.queueStream(
        [["a"], ["a", "b"], ["b"], ["a", "c"], ["c"], ["a"], ["b"], ["a"], [], ["c"], ["a"], []]
    )
    pairs = words.window(4, 2).map(lambda word: (word, 1))
    updates = pairs.updateStateByKey(lambda new, old: (old or 0) + 1)
    _, counted = gather(pairs.updateStateByKey(lambda new, old: sum(new) + (old or 0)))
    _, updated = gather(updates)
    _, windowed = gather(updates.window(4, 4))
    await ssc.start()
    await ssc.runUntil(T0 + Seconds(12))
    await ssc.stop(stopSparkContext=False)

    def by_second(seen: list[tuple[Event, list[Any]]]) -> list[tuple[int, list[Any]]]:
        return [(e.time.milliseconds // 1000, sorted(items)) for e, items in seen]

    assert by_second(counted) == [
        (2, [("a", 2), ("b", 1)]),
        (4, [("a", 5), ("b", 3), ("c", 1)]),
        (6, [("a", 7), ("b", 4), ("c", 3)]),
        (8, [("a", 9), ("b", 5), ("c", 4)]),
        (10, [("a", 10), ("b", 6), ("c", 5)]),
        (12, [("a", 11), ("b", 6), ("c", 6)]),
    ]
    assert by_second(updated) == [
        (2, [("a", 1), ("b", 1)]),
        (4, [("a", 2), ("b", 2), ("c", 1)]),
        (6, [("a", 3), ("b", 3), ("c", 2)]),
        (8, [("a", 4), ("b", 4), ("c", 3)]),
        (10, [("a", 5), ("b", 5), ("c", 4)]),
        (12, [("a", 6), ("b", 6), ("c", 5)]),
    ]
    assert by_second(windowed) == [
        (4, [("a", 1), ("a", 2), ("b", 1), ("b", 2), ("c", 1)]),
        (8, [("a", 3), ("a", 4), ("b", 3), ("b", 4), ("c", 2), ("c", 3)]),
        (12, [("a", 5), ("a", 6), ("b", 5), ("b", 6), ("c", 4), ("c", 5)]),
    ]


async def test_update_state_by_key_moves_only_when_its_tail_window_emits(sc: SparkContext) -> None:
    out = await run_batches(
        sc,
        lambda s: s.tailWindow(3, 3).updateStateByKey(lambda new, old: (old or []) + [sum(new)]),
        [[("k", 1)], [("k", 2)], [("k", 3)], [("k", 4)], [], [("k", 6)], [("k", 7)]],
        numBatches=8,
    )
    assert out == [[("k", [6])], [("k", [6, 10])]]


def weekly_totals_of_days(ssc: StreamingContext) -> list[tuple[Event, list[Any]]]:
    """Days 1..28 bound to a daily timer, their running total read by a weekly output."""
    daily, weekly = daily_and_weekly(ssc, weekly_first=True)
    days = ssc.queueStream([[("total", d)] for d in range(1, 29)]).bind(daily)
    out, seen = gather(days.updateStateByKey(lambda new, old: sum(new) + (old or 0)))
    out.bind(weekly)
    return seen


async def test_update_state_by_key_over_days_read_weekly(sc: SparkContext) -> None:
    """`days` is bound to the daily timer, its state read weekly: the state reacted to the
    weekly events only, where `days` has no RDD, and was never updated: empty, silently. It
    now moves at the daily events (materialised there, so its lineage is cut past the tenth),
    and a weekly event reads the last state: two weeks, the second past the tenth day."""
    ssc = virtual(sc)
    seen = weekly_totals_of_days(ssc)
    await ran(ssc, T0 + Days(14))
    assert [(e.time, items) for e, items in seen] == [
        (T0 + Days(7 * week), [("total", sum(range(1, 7 * week + 1)))]) for week in (1, 2)
    ]


async def test_a_state_over_days_read_weekly_after_a_restart(
    sc: SparkContext, tmp_path: Path
) -> None:
    """Saved with the tenth day's batch, the state is loaded again and moves on."""
    checkpoint = str(tmp_path / "checkpoint")
    first = virtual(sc, checkpoint=checkpoint)
    before = weekly_totals_of_days(first)
    await ran(first, T0 + Days(11), graceful=True)
    second = virtual(sc, start=T0 + Days(11), checkpoint=checkpoint)
    after = weekly_totals_of_days(second)
    await ran(second, T0 + Days(14))
    assert [items for _, items in before + after] == [[("total", 28)], [("total", 105)]]


async def test_a_window_given_again_at_its_instant_reaches_back_as_when_it_was_made(
    sc: SparkContext, tmp_path: Path
) -> None:
    """With a checkpoint, what a window's RDD reaches back to is tracked for restarts. Given
    again to the weekly event of the instant the daily event made it at, it had no reach (the
    weekly event's own only, for what is made of it): a restart could lose the week."""
    ssc = virtual(sc, checkpoint=str(tmp_path))
    daily, weekly = daily_and_weekly(ssc, weekly_first=False)
    days = ssc.queueStream([[d] for d in range(1, 8)]).foreachRDD(lambda rdd: None).bind(daily)
    week = days.tailWindow(7, 7)
    week.foreachRDD(lambda rdd: None).bind(daily)
    out, seen = gather(week)
    out.bind(weekly)
    await ran(ssc, T0 + Days(7))
    [(event, _)] = seen
    assert event.source is weekly
    reach = week.latest_reach(event)
    assert reach is not None and reach["daily"] == 0, reach  # from the first day's batch on


async def test_a_state_fed_at_its_parents_events_updates_once_per_instant_after_a_crash(
    sc: SparkContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As below, with a checkpoint: the state is saved at the tenth orders event, and a
    restart re-plans that event from the save and then the daily event of its instant, which
    reads the same window again. It updated the state a second time there."""

    def build(ssc: StreamingContext) -> list[tuple[Any, list[Any]]]:
        daily = ssc.timer(T0 + Days(1), None, Days(1), "daily")
        arrivals = ssc.timer(T0 + Days(1), None, Days(1), "orders")
        orders = ssc.queueStream([[("a", 1)]] * 12).bind(arrivals)
        totals = orders.tailWindow(1).updateStateByKey(lambda new, old: sum(new) + (old or 0))
        out, seen = gather(totals)
        out.bind(daily)
        return seen

    with monkeypatch.context() as crash:  # as after a crash: no batch was recorded done
        crash.setattr(Checkpoint, "completed", lambda self, batch: None)
        first = virtual(sc, checkpoint=str(tmp_path))
        build(first)
        await ran(first, T0 + Days(12))
    again = virtual(sc, start=T0 + Days(12), checkpoint=str(tmp_path))
    seen = build(again)
    await ran(again, T0 + Days(12))
    assert [items for _, items in seen] == [[("a", day)] for day in range(1, 13)]


async def test_a_state_fed_at_its_parents_events_updates_once_per_instant(
    sc: SparkContext,
) -> None:
    """Orders arrive on their own timer at daily instants; the daily state reads them through
    `tailWindow(1)`. The state moves at the orders' events (its parent's new data), and the
    daily event of the same instant reads the same window again: it must not add it twice."""
    ssc = virtual(sc)
    daily = ssc.timer(T0 + Days(1), None, Days(1), "daily")
    arrivals = ssc.timer(T0 + Days(1), None, Days(3), "orders")
    orders = ssc.queueStream([[("a", 1)], [("a", 10)]]).bind(arrivals)
    totals = orders.tailWindow(1).updateStateByKey(lambda new, old: sum(new) + (old or 0))
    out, seen = gather(totals)
    out.bind(daily)
    await ran(ssc, T0 + Days(5))
    # between the tail window's emits the state has no RDD, as before
    assert [(e.time, items) for e, items in seen] == [
        (T0 + Days(1), [("a", 1)]),
        (T0 + Days(4), [("a", 11)]),
    ]
