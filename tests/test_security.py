"""The console is safe to expose: who may view and fire, cross-site requests, DNS rebinding,
security headers, what unauthenticated viewers see, and JSON that is always valid."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pyspark import SparkContext

from reactive_spark import Days, InvalidArgumentError, StreamingContext, Time, VirtualClock
from reactive_spark.web import Console, setup

T0 = Time.fromDatetime(datetime(2026, 4, 6, tzinfo=UTC))
TRIGGER_TOKEN = "trigger-token"


def fail(line: str) -> int:
    raise ValueError(f"bad line {line!r}")


def build(ssc: StreamingContext) -> None:
    ssc.timer(T0 + Days(1), None, Days(1), "daily")
    rerun = ssc.manualSource("rerun")
    guarded = ssc.restServer(None, name="guarded", token=TRIGGER_TOKEN).post("/run")
    lines = ssc.queueStream([], default=["x"])
    lines.count().foreachRDD(lambda rdd: rdd.collect()).bind(rerun).bind(guarded)
    broken = ssc.manualSource("broken")
    lines.map(fail).foreachRDD(lambda rdd: rdd.count()).bind(broken)


# -- arguments -----------------------------------------------------------------------------------
async def test_console_arguments_are_checked(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    build(ssc)
    with pytest.raises(InvalidArgumentError, match="ssc must be a StreamingContext, got None"):
        Console(None)  # type: ignore[arg-type]
    with pytest.raises(
        InvalidArgumentError, match=r"app must be an aiohttp web\.Application, got None"
    ):
        setup(None, ssc)  # type: ignore[arg-type]
