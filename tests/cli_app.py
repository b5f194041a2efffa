"""A small program for `reactive-spark run` and `reactive-spark graph` in the CLI tests."""

from __future__ import annotations

from reactive_spark import Seconds, StreamingContext


def build(ssc: StreamingContext) -> None:
    tick = ssc.timer(ssc.clock.now(), None, Seconds(1), "tick")
    rerun = ssc.manualSource("rerun")
    counts = ssc.queueStream([], default=["a b", "a"]).flatMap(str.split).countByValue()
    counts.pprint().bind(tick).bind(rerun)
    counts.tailWindow(3, 3).count().pprint().bind(tick)
