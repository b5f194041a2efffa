"""Tracing: spans event -> batch -> jobs in the SDK's in-memory exporter, a REST caller's
trace continued, and nothing of OpenTelemetry loaded when tracing is off."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from pyspark import SparkContext

from reactive_spark import Days, StreamingContext, Time, tracing
from reactive_spark.errors import InvalidArgumentError
from reactive_spark.listener import EventsDropped
from reactive_spark.tracing import END, Tracing
from reactive_spark.web import BearerToken, create_app

from .helpers import ROOT, virtual

T0 = Time.fromDatetime(datetime(2026, 3, 2, tzinfo=UTC))


def traced(ssc: StreamingContext) -> InMemorySpanExporter:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    ssc.addStreamingListener(Tracing(provider))
    return spans


def two_jobs_one_failing(ssc: StreamingContext, source: Any) -> None:
    def count(rdd: Any) -> None:
        rdd.count()

    def fail(rdd: Any) -> None:
        raise ValueError("bad record")

    numbers = ssc.queueStream([], default=[1, 2, 3])
    numbers.foreachRDD(count).bind(source)
    numbers.foreachRDD(fail).bind(source)


def by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, ReadableSpan]:
    return {span.name: span for span in spans}


def assert_tree(spans: tuple[ReadableSpan, ...], source: str) -> dict[str, ReadableSpan]:
    """One event, one batch, two jobs (the second failing), parented event -> batch -> jobs."""
    named = by_name(spans)
    event, batch = named[f"event {source}"], named[f"batch {source}"]
    jobs = [span for span in spans if span.name.startswith("job ")]
    assert len(spans) == 4 and len(jobs) == 2
    assert batch.parent is not None and batch.parent.span_id == event.context.span_id
    for job in jobs:
        assert job.parent is not None and job.parent.span_id == batch.context.span_id
        assert job.context.trace_id == event.context.trace_id
    ok, failed = sorted(jobs, key=lambda span: span.attributes["reactive_spark.stream"])
    assert str(ok.attributes["reactive_spark.function"]).endswith("count")
    assert ok.attributes["reactive_spark.job.status"] == "succeeded"
    assert ok.status.status_code is StatusCode.OK
    assert ok.attributes["spark.job.ids"]  # count() ran a Spark job
    assert str(ok.attributes["spark.job.group"]).startswith("reactive-spark-")
    assert str(failed.attributes["reactive_spark.function"]).endswith("fail")
    assert failed.attributes["reactive_spark.job.status"] == "failed"
    assert failed.attributes["error.type"] == "ValueError"
    assert failed.status.status_code is StatusCode.ERROR
    assert "bad record" in str(failed.status.description)
    assert [event.name for event in failed.events] == ["exception"]
    assert batch.status.status_code is StatusCode.ERROR
    assert event.end_time is not None and batch.end_time is not None
    return named


async def test_a_batch_with_two_jobs_one_failing_is_a_tree_of_spans(sc: SparkContext) -> None:
    async with virtual(sc, start=T0) as ssc:
        daily = ssc.timer(T0, None, Days(1), "daily")
        two_jobs_one_failing(ssc, daily)
        spans = traced(ssc)
        await ssc.start()
        failures = await ssc.advanceTo(T0)
    assert len(failures) == 1
    named = assert_tree(spans.get_finished_spans(), "daily")
    assert named["event daily"].parent is None  # a timer starts a trace of its own


CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


async def test_a_rest_triggered_batch_continues_the_callers_trace(sc: SparkContext) -> None:
    async with virtual(sc, start=T0) as ssc:
        rest = ssc.restServer(None, name="triggers", token="s3cret").post("/report")
        two_jobs_one_failing(ssc, rest)
        spans = traced(ssc)
        host = web.Application()
        host.add_subapp("/triggers", rest.app)
        await ssc.start()
        async with TestClient(TestServer(host)) as client:
            headers = {
                "Authorization": "Bearer s3cret",
                "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01",
            }
            response = await client.post("/triggers/report", json={"day": 1}, headers=headers)
            assert response.status == 202
            await ssc.advanceTo(T0)
    named = assert_tree(spans.get_finished_spans(), "triggers")
    event = named["event triggers"]
    assert f"{event.context.trace_id:032x}" == CALLER_TRACE
    assert event.parent is not None and f"{event.parent.span_id:016x}" == CALLER_SPAN
    assert event.parent.is_remote
    assert event.kind is SpanKind.SERVER
    assert event.attributes["http.route"] == "/report"


async def test_a_trigger_fired_from_the_console_continues_the_callers_trace(
    sc: SparkContext,
) -> None:
    async with virtual(sc, start=T0) as ssc:
        rest = ssc.restServer(None, name="triggers", token="s3cret").post("/report")
        two_jobs_one_failing(ssc, rest)
        spans = traced(ssc)
        await ssc.start()
        async with TestClient(TestServer(create_app(ssc, auth=BearerToken("console")))) as client:
            headers = {
                "Authorization": "Bearer console",
                "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01",
            }
            response = await client.post("/api/sources/triggers/fire", json={}, headers=headers)
            assert response.status == 202, await response.text()
            await ssc.advanceTo(T0)
    event = assert_tree(spans.get_finished_spans(), "triggers")["event triggers"]
    assert f"{event.context.trace_id:032x}" == CALLER_TRACE
    assert event.parent is not None and f"{event.parent.span_id:016x}" == CALLER_SPAN


@pytest.mark.parametrize(
    "traceparent",
    [
        f"00-{CALLER_TRACE}-{CALLER_SPAN}-01-extra",  # version 00 has nothing after the flags
        f"00-{'0' * 32}-{CALLER_SPAN}-01",  # an all-zero trace id
        f"00-{CALLER_TRACE.upper()}-{CALLER_SPAN}-01",  # uppercase
        f"00-{CALLER_TRACE}-{CALLER_SPAN}-01" + "0" * 8000,  # oversized
    ],
    ids=["trailing", "zero-trace", "uppercase", "oversized"],
)
async def test_a_bad_traceparent_starts_a_new_trace(sc: SparkContext, traceparent: str) -> None:
    async with virtual(sc, start=T0) as ssc:
        rest = ssc.restServer(None, name="triggers", token="s3cret").post("/report")
        ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(rest)
        spans = traced(ssc)
        host = web.Application()
        host.add_subapp("/triggers", rest.app)
        seen: list[Any] = []
        rest.addListener(seen.append)
        await ssc.start()
        async with TestClient(TestServer(host)) as client:
            headers = {"Authorization": "Bearer s3cret", "traceparent": traceparent}
            response = await client.post("/triggers/report", json={}, headers=headers)
            assert response.status == 202
            assert await ssc.advanceTo(T0) == []
    assert [event.traceparent for event in seen] == [None]  # not kept on the event
    event = by_name(spans.get_finished_spans())["event triggers"]
    assert event.parent is None and event.kind is SpanKind.INTERNAL
    assert f"{event.context.trace_id:032x}" != CALLER_TRACE


async def test_an_event_without_a_batch_ends_its_span_the_last_at_the_stop(
    sc: SparkContext,
) -> None:
    async with virtual(sc, start=T0) as ssc:
        daily = ssc.timer(T0, None, Days(1), "daily")
        ssc.timer(T0, None, Days(1), "unbound")
        ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(daily)
        spans = traced(ssc)
        await ssc.start()
        await ssc.advanceTo(T0 + Days(1))
        finished = spans.get_finished_spans()
        assert [span.name for span in finished].count("event unbound") == 1  # at the 2nd batch
    finished = spans.get_finished_spans()
    names = sorted(span.name for span in finished)
    assert names.count("event unbound") == 2 and names.count("batch daily") == 2
    assert names.count("event daily") == 2
    at_stop = [span for span in finished if span.attributes.get(END) == "stop"]
    assert [span.name for span in at_stop] == ["event unbound"]  # open until the stop
    assert at_stop[0].status.status_code is StatusCode.UNSET
    assert at_stop[0].attributes["reactive_spark.event.time"] == (T0 + Days(1)).isoformat()


async def test_an_evicted_event_span_is_still_its_batchs_parent(
    sc: SparkContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over MAX_OPEN_EVENTS waiting, an event's span ends early; no second one is made."""
    monkeypatch.setattr(tracing, "MAX_OPEN_EVENTS", 0)  # every event's span ends on arrival
    async with virtual(sc, start=T0) as ssc:
        daily = ssc.timer(T0, None, Days(1), "daily")
        ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: rdd.count()).bind(daily)
        spans = traced(ssc)
        await ssc.start()
        assert await ssc.advanceTo(T0 + Days(2)) == []
    finished = spans.get_finished_spans()
    events = [span for span in finished if span.name == "event daily"]
    batches = [span for span in finished if span.name == "batch daily"]
    assert len(events) == 3 and len(batches) == 3
    assert {span.attributes[END] for span in events} == {"evicted"}
    parents = {batch.parent.span_id for batch in batches if batch.parent is not None}
    assert parents == {event.context.span_id for event in events}
    assert not [span for span in finished if END in span.attributes and span not in events]


def test_a_dropped_events_span_ends_when_it_is_reported() -> None:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    listener = Tracing(provider)
    source = SimpleNamespace(name="uploads")
    accepted = SimpleNamespace(source=source, index=0, instanceId=7, time=T0)
    waiting = SimpleNamespace(source=source, index=None, instanceId=None, time=T0)
    listener.onEventFired(accepted)  # type: ignore[arg-type]
    listener.onEventsDropped(EventsDropped("uploads", "stop", 2, (accepted, waiting)))  # type: ignore[arg-type]
    (span,) = spans.get_finished_spans()
    assert span.attributes[END] == "dropped"
    assert span.attributes["reactive_spark.event.dropped_by"] == "stop"
    listener.context_stopped()  # nothing left open: nothing ends twice
    assert len(spans.get_finished_spans()) == 1


def test_tracing_needs_a_tracer_provider() -> None:
    with pytest.raises(InvalidArgumentError, match="tracerProvider must be"):
        Tracing("jaeger")  # type: ignore[arg-type]


def test_without_tracing_nothing_of_opentelemetry_is_imported() -> None:
    """Importing the package and running a batch (no Tracing listener) loads no OpenTelemetry."""
    code = """
import asyncio, sys
from datetime import UTC, datetime
from types import SimpleNamespace
from pyspark import SparkConf, SparkContext
import reactive_spark
from reactive_spark import Days, StreamingContext, Time, VirtualClock

assert not [m for m in sys.modules if m.startswith("opentelemetry")], "on import"
t0 = Time.fromDatetime(datetime(2026, 3, 2, tzinfo=UTC))
sc = SparkContext(conf=SparkConf().setMaster("local[1]").setAppName("no-otel"))

async def main():
    async with StreamingContext(sc, None, clock=VirtualClock(t0)) as ssc:
        daily = ssc.timer(t0, None, Days(1), "daily")
        ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: rdd.count()).bind(daily)
        await ssc.start()
        assert await ssc.advanceTo(t0) == []

asyncio.run(main())
sc.stop()
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert shown.stdout.strip().splitlines()[-1] == "[]"
