"""The worked example of docs/custom-sources.md, run on virtual time."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pyspark import SparkContext

from reactive_spark import Days, Hours, StreamingContext, Time, VirtualClock

from .helpers import gather

DOC = Path(__file__).resolve().parent.parent / "docs" / "custom-sources.md"


def load_example() -> Any:
    code = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, str(DOC), "exec"), namespace)
    return namespace["BusinessHours"]


async def test_business_hours_source(sc: SparkContext) -> None:
    business_hours = load_example()
    t0 = Time(0) + Days(100)
    ssc = StreamingContext(sc, None, clock=VirtualClock(t0 + Hours(12)))
    hours = business_hours(ssc)
    out, seen = gather(ssc.queueStream([], default=[1]).count())
    out.bind(hours)
    await ssc.start()
    await ssc.runUntil(t0 + Days(2))
    await ssc.stop(stopSparkContext=False)
    assert [event.time for event, _ in seen] == [
        t0 + Hours(17),
        t0 + Days(1) + Hours(9),
        t0 + Days(1) + Hours(17),
    ]
    assert [event.index for event, _ in seen] == [0, 1, 2]
    assert [items for _, items in seen] == [[1], [1], [1]]
    assert [e.time for e in hours.between(t0, t0 + Days(1))] == [t0 + Hours(9), t0 + Hours(17)]
    day = (t0 + Days(1)).toDatetime()
    assert [e.time for e in hours.between(day, day)] == []  # datetimes too, as documented
    assert len(hours.between(day, (t0 + Days(2)).toDatetime())) == 2
    assert hours.toProduct() == ("business-hours", (9 * 3_600_000, 17 * 3_600_000))


async def test_business_hours_source_restarts_from_a_checkpoint(
    sc: SparkContext, tmp_path: Path
) -> None:
    business_hours = load_example()
    t0 = Time(0) + Days(100)
    seen: list[Any] = []
    for start, until in (
        (t0 + Hours(12), t0 + Days(1) + Hours(10)),
        (t0 + Days(2) + Hours(12), t0 + Days(2) + Hours(20)),
    ):
        ssc = StreamingContext(sc, None, clock=VirtualClock(start), checkpoint=str(tmp_path))
        out, run_seen = gather(ssc.queueStream([], default=[1]).count())
        out.bind(business_hours(ssc))
        await ssc.start()
        await ssc.runUntil(until)
        await ssc.stop(stopSparkContext=False, stopGracefully=True)
        seen += run_seen
    # day 1 at 17:00 and day 2 at 09:00 were missed while down, and caught up
    assert [(event.index, event.time) for event, _ in seen] == [
        (0, t0 + Hours(17)),
        (1, t0 + Days(1) + Hours(9)),
        (2, t0 + Days(1) + Hours(17)),
        (3, t0 + Days(2) + Hours(9)),
        (4, t0 + Days(2) + Hours(17)),
    ]


async def test_event_source_docstring_heartbeat_fires_on_the_clock(sc: SparkContext) -> None:
    from reactive_spark import EventSource, Seconds
    from reactive_spark.testing import collect

    class Heartbeat(EventSource):  # the example of EventSource's docstring
        def start(self):  # type: ignore[no-untyped-def]
            self._tick = self.context.clock.scheduleAt(
                self.context.clock.now() + Seconds(1), lambda: self.fire()
            )

        def stop(self):  # type: ignore[no-untyped-def]
            self._tick.dispose()

        def toProduct(self):  # type: ignore[no-untyped-def]
            return (self.name,)

    ssc = StreamingContext(sc, None, clock=VirtualClock(Time(0)))
    beat = Heartbeat(ssc, "heartbeat")
    results = collect(ssc.queueStream([[1], [2]]), source=beat)
    await ssc.start()
    await ssc.runUntil(Time(0) + Seconds(5))
    await ssc.stop(stopSparkContext=False)
    assert results == [[1]]
