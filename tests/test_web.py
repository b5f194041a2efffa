"""The web console: JSON API, server-sent events, metrics, embedding in a host application."""

from __future__ import annotations

import asyncio
import errno
import json
import socket
import threading
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from pyspark import SparkContext

from reactive_spark import (
    Days,
    EventSource,
    Hours,
    InvalidArgumentError,
    Seconds,
    StreamingContext,
    StreamingListener,
    Time,
    VirtualClock,
)
from reactive_spark.errors import ListenError
from reactive_spark.web import Console, create_app, setup, wait_for_stop
from reactive_spark.web.app import PORT_ATTEMPTS

from .raw_http import Answer, address

T0 = Time.fromDatetime(datetime(2026, 2, 2, tzinfo=UTC))


def parse(value: str) -> int:
    if value == "bad":
        raise ValueError(f"unparseable record {value!r}")
    return int(value)


def build(ssc: StreamingContext) -> dict[str, Any]:
    daily = ssc.timer(T0 + Days(1), None, Days(1), "daily")
    rerun = ssc.manualSource("rerun")
    rest = ssc.restServer(None, name="triggers").post("/report")
    numbers = ssc.queueStream([["1", "2"], ["3", "bad"]], default=["7"])
    numbers.map(parse).foreachRDD(lambda rdd: rdd.count()).bind(daily)
    numbers.count().foreachRDD(lambda rdd: rdd.collect()).bind(rerun).bind(rest)
    return {"daily": daily, "rerun": rerun, "rest": rest}


@pytest.fixture
async def console(sc: SparkContext) -> AsyncIterator[tuple[StreamingContext, TestClient[Any, Any]]]:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    build(ssc)
    async with TestClient(TestServer(create_app(ssc))) as client:
        assert ssc.state == "active"  # the app's startup started it
        yield ssc, client
    assert ssc.state == "stopped"  # and its cleanup stopped it


async def ok(response: Any, status: int = 200) -> Any:
    assert response.status == status, await response.text()
    return await response.json()


JSON = {"Content-Type": "application/json"}


async def fire(client: TestClient[Any, Any], path: str, body: Any = None) -> Any:
    """POST `body` as JSON to the console's `path` (what the dashboard sends)."""
    return await client.post(path, data=json.dumps(body), headers=JSON)


async def test_sources_graph_events_and_batches(console: Any) -> None:
    ssc, client = console
    await ssc.advanceTo(T0 + Days(2) + Hours(1))
    sources = {s["name"]: s for s in await ok(await client.get("/api/sources"))}
    assert sources["daily"]["kind"] == "timer" and sources["daily"]["events"] == 2
    assert sources["daily"]["nextFireUtc"] == (T0 + Days(3)).isoformat()
    assert sources["daily"]["catchUp"] == "all" and not sources["daily"]["fireable"]
    assert sources["rerun"]["fireable"] and sources["triggers"]["fireable"]

    graph = await ok(await client.get("/api/graph"))
    names = [stream["name"] for stream in graph["streams"]]
    assert names[0] == "queueStream[0]" and any(name.startswith("map[1]") for name in names)
    bound = {s["name"]: s["boundTo"] for s in graph["streams"]}
    assert ["rerun", "triggers"] in bound.values()

    events = await ok(await client.get("/api/events?limit=1"))
    assert [e["source"] for e in events] == ["daily"] and events[0]["index"] == 1
    batches = await ok(await client.get("/api/batches"))
    assert [b["status"] for b in batches] == ["failed", "succeeded"]  # newest first
    failed = await ok(await client.get(f"/api/batches/{batches[0]['instanceId']}"))
    [job] = failed["jobs"]
    assert job["status"] == "failed" and job["function"] is not None
    assert job["error"]["type"] == "ValueError"
    assert job["error"]["message"] == "unparseable record 'bad'"
    assert job["error"]["location"].startswith("parse (test_web.py:")
    assert "inputs" in failed and failed["event"]["source"] == "daily"


async def test_a_source_of_yours_named_like_a_fireable_kind_offers_no_fire(
    sc: SparkContext,
) -> None:
    """The console offers firing for the sources it can fire, by class: a source of one's own
    whose `kind` reads "manual" is listed under that kind, without a fire button (its fire
    answered 409)."""

    class Feed(EventSource):
        kind = "manual"

        def start(self) -> None:
            pass

        def stop(self) -> None:
            pass

        def toProduct(self) -> tuple[Any, ...]:
            return (self.name,)

    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    feed = Feed(ssc, "feed")
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(feed)
    async with TestClient(TestServer(create_app(ssc))) as client:
        sources = {s["name"]: s for s in await ok(await client.get("/api/sources"))}
        assert sources["feed"]["kind"] == "manual" and not sources["feed"]["fireable"]
        refused = await fire(client, "/api/sources/feed/fire")
        assert refused.status == 409


async def test_firing_a_manual_and_a_rest_trigger_links_to_the_batch(console: Any) -> None:
    ssc, client = console
    fired = await ok(await fire(client, "/api/sources/rerun/fire", {"day": 1}), 202)
    assert fired["source"] == "rerun" and fired["status"] == f"/api/batches/{fired['instanceId']}"
    await ssc.advanceTo(T0)
    batch = await ok(await client.get(fired["status"]))
    assert batch["status"] == "succeeded" and batch["event"]["fields"]["value"] == {"day": 1}
    rest = await ok(await fire(client, "/api/sources/triggers/fire", {"body": {"x": 1}}), 202)
    await ssc.advanceTo(T0)
    batch = await ok(await client.get(rest["status"]))
    assert batch["event"]["fields"]["path"] == "/report"
    assert batch["event"]["fields"]["body"] == {"x": 1}
    assert batch["event"]["firedBy"] == "console" and not batch["event"]["protected"]


async def test_a_trigger_s_status_lists_the_batches_of_the_events_derived_from_it(
    sc: SparkContext,
) -> None:
    """The job runs on the trigger's filter (then a map of that): the 202's link names the
    trigger's own event, which has no batch; its page lists the events derived from it and
    their batches, and an event the filter refused lists none."""
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    rest = ssc.restServer(None, name="triggers").post("/report").post("/other")
    report = rest.filter(lambda e: e.path == "/report", name="report").map(
        lambda e: e.body, name="body"
    )
    ssc.queueStream([], default=[1]).count().foreachRDD(lambda rdd: rdd.collect()).bind(report)
    async with TestClient(TestServer(create_app(ssc))) as client:
        fired = await ok(await fire(client, "/api/sources/triggers/fire", {"path": "/report"}), 202)
        other = await ok(await fire(client, "/api/sources/triggers/fire", {"path": "/other"}), 202)
        await ssc.advanceTo(T0)
        batch = await ok(await client.get(fired["status"]))
        assert batch["status"] == "no jobs"
        assert [(d["source"], d["status"]) for d in batch["derived"]] == [
            ("report", "no jobs"),
            ("body", "succeeded"),
        ]
        [_, mapped] = batch["derived"]
        ran = await ok(await client.get(f"/api/batches/{mapped['instanceId']}"))
        assert ran["status"] == "succeeded" and ran["event"]["source"] == "body"
        assert ran["derived"] == []
        assert (await ok(await client.get(other["status"])))["derived"] == []


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "message"),
    [
        ("GET", "/api/batches?limit=0", None, 400, "limit must be an integer from 1 to 1000"),
        ("GET", "/api/events?limit=x", None, 400, "limit must be an integer"),
        ("GET", "/api/batches/abc", None, 400, "instanceId must be a non-negative integer"),
        ("GET", "/api/batches/%C2%B2", None, 400, "instanceId must be a non-negative integer"),
        ("GET", "/api/batches/" + "9" * 19, None, 400, "integer of at most 18 digits, got '99"),
        ("GET", "/api/batches?limit=%C2%B2", None, 400, "limit must be an integer"),
        ("GET", "/api/events?limit=%EF%BC%95", None, 400, "limit must be an integer"),
        ("GET", "/api/batches/99999", None, 404, "no event 99999"),
        ("GET", "/api/nothing", None, 404, "Not Found"),
        ("DELETE", "/api/sources", None, 405, "Method Not Allowed"),
        ("POST", "/api/sources/nope/fire", None, 404, "no event source named 'nope'"),
        ("POST", "/api/sources/daily/fire", None, 409, "only REST and manual fire"),
        ("POST", "/api/sources/rerun/fire", b"{bad json", 400, "not valid JSON"),
        ("POST", "/api/sources/rerun/fire", b"[" * 100_000, 400, "nested too deeply"),
        ("POST", "/api/sources/triggers/fire", b'{"path": "/x"}', 400, "path must be one of"),
        ("POST", "/api/sources/triggers/fire", b"[1]", 400, "body must be an object"),
        ("POST", "/api/sources/triggers/fire", b'{"path": ["/report"]}', 400, "path must be"),
        ("POST", "/api/sources/rerun/fire", b'{"v": NaN}', 400, "NaN is not a JSON number"),
        ("POST", "/api/sources/rerun/fire", b"[" * 257 + b"]" * 257, 400, "more than 256"),
    ],
)
async def test_bad_requests_get_a_json_4xx(  # type: ignore[no-untyped-def]
    console, method, path, body, status, message
) -> None:
    _, client = console
    response = await client.request(
        method, path, data=body, headers=JSON if method == "POST" else {}
    )
    assert response.status == status
    assert message in (await response.json())["error"]


async def test_a_fire_past_the_body_limit_is_refused_before_its_body_is_sent(
    console: Any,
) -> None:
    """aiohttp answered `Expect: 100-continue` first, so the body was uploaded, then refused:
    the 413 comes now with no 100 Continue before it."""
    _, client = console
    host, port = address(str(client.make_url("/")))
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(
            f"POST /api/sources/rerun/fire HTTP/1.1\r\nHost: {host}:{port}\r\n"
            "Content-Type: application/json\r\nExpect: 100-continue\r\n"
            f"Content-Length: {2 * 1024 * 1024}\r\n\r\n".encode()
        )
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        answer = Answer(head + await reader.readexactly(Answer(head).content_length))
    finally:
        writer.close()  # aiohttp lingers for the body it refused: the client ends it
    assert answer.status == 413 and "larger than" in answer.json()["error"]


async def test_server_sent_events_follow_every_transition(console: Any) -> None:
    ssc, client = console
    response = await client.get("/api/events/stream")
    assert response.headers["Content-Type"] == "text/event-stream"
    assert await response.content.readline() == b": connected\n"
    await ok(await fire(client, "/api/sources/rerun/fire"), 202)
    await ssc.advanceTo(T0)
    seen: list[tuple[str, Any]] = []
    fields: dict[str, str] = {}
    while not any(kind == "batch" and data["status"] == "succeeded" for kind, data in seen):
        line = (await asyncio.wait_for(response.content.readline(), 10)).decode().rstrip("\n")
        if line.startswith(":"):  # a comment: connected, keep-alive
            continue
        if line:
            name, _, value = line.partition(": ")
            fields[name] = value
            continue
        if fields:
            seen.append((fields["event"], json.loads(fields["data"])))
            fields = {}
    kinds = [kind for kind, _ in seen]
    assert kinds[0] == "event" and "job" in kinds
    assert [d["status"] for k, d in seen if k == "batch"] == ["planned", "running", "succeeded"]
    response.close()


async def test_a_head_of_the_event_stream_is_refused_and_the_connection_goes_on(
    console: Any,
) -> None:
    """HEAD of the live stream ran the stream: a body after the headers, and no end, so the
    next request on that keep-alive connection was never answered."""
    _, client = console
    head = await asyncio.wait_for(client.head("/api/events/stream"), 10)
    assert head.status == 405 and head.headers["Allow"] == "GET"
    assert (await asyncio.wait_for(client.get("/api/sources"), 10)).status == 200


async def test_metrics_in_prometheus_text(console: Any) -> None:
    ssc, client = console
    await ssc.advanceTo(T0 + Days(2))
    response = await client.get("/metrics")
    assert response.status == 200 and response.content_type == "text/plain"
    text = await response.text()
    assert 'reactive_spark_events_total{source="daily"} 2.0' in text
    assert 'status="failed"' in text and 'status="succeeded"' in text
    assert "reactive_spark_job_duration_seconds_count 2.0" in text
    assert 'reactive_spark_queue_depth{source="daily"} 0.0' in text
    assert "reactive_spark_scheduling_lag_seconds" in text


async def test_a_login_link_to_the_bare_prefix_reaches_the_page(sc: SparkContext) -> None:
    """`/reactive?token=...` goes to `/reactive/?token=...` without the token being checked
    on the way (the page is public, as the redirect); the data still needs it."""
    from reactive_spark.web import BearerToken

    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    build(ssc)
    host = web.Application()
    setup(host, ssc, auth=BearerToken("s3cret"))
    async with TestClient(TestServer(host)) as client:
        sent = await client.get("/reactive?token=s3cret", allow_redirects=False)
        assert sent.status == 307 and sent.headers["Location"] == "reactive/?token=s3cret"
        assert (await client.get("/reactive/api/sources")).status == 401
    # mounted by hand, the console told no prefix: the redirect still goes to where it is
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    build(ssc)
    host = web.Application()
    host.add_subapp("/ops", create_app(ssc))
    async with TestClient(TestServer(host)) as client:
        sent = await client.get("/ops", allow_redirects=False)
        assert sent.status == 307 and sent.headers["Location"] == "ops/"


async def test_the_console_embeds_in_a_host_application(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    build(ssc)
    host = web.Application()
    calls: list[str] = []

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"ok": True, "state": ssc.state})

    async def host_lifecycle(app: web.Application) -> AsyncIterator[None]:
        calls.append("host up")
        yield
        calls.append("host down")

    host.router.add_get("/health", health)
    host.cleanup_ctx.append(host_lifecycle)
    setup(host, ssc, prefix="/reactive")
    async with TestClient(TestServer(host)) as client:
        assert (await ok(await client.get("/health"))) == {"ok": True, "state": "active"}
        page = await client.get("/reactive/")
        assert page.status == 200 and "reactive-spark" in await page.text()
        # the prefix alone goes to the page, its query as it was sent (a token may hold %23)
        bare = await client.get("/reactive?token=a%23b&v=1", allow_redirects=False)
        assert bare.status == 307 and bare.headers["Location"] == "reactive/?token=a%23b&v=1"
        assert bare.headers["Cache-Control"] == "no-store"  # not kept: it may carry a token
        assert bare.headers["Referrer-Policy"] == "no-referrer"  # the console's own headers
        assert (await client.get("/reactive")).url.path == "/reactive/"
        foreign = await client.get("/reactive", headers={"Host": "elsewhere.example"})
        assert foreign.status == 421  # the console's guard answers, as for its pages
        script = await client.get("/reactive/static/console.js")
        assert script.status == 200
        fired = await ok(await fire(client, "/reactive/api/sources/rerun/fire"), 202)
        assert fired["status"].startswith("/reactive/api/batches/")
        spec = await ok(await client.get("/reactive/api/openapi.json"))
        assert spec["servers"] == [{"url": "/reactive"}] and "/api/batches" in spec["paths"]
        # a REST trigger's answer links to the console where it is mounted
        rest = await ok(await fire(client, "/reactive/api/sources/triggers/fire"), 202)
        assert rest["status"] == f"/reactive/api/batches/{rest['instanceId']}"
    assert ssc.state == "stopped" and calls == ["host up", "host down"]
    for bad in ("", "/", "reactive", "//elsewhere"):  # aiohttp mounts nothing at the root
        with pytest.raises(InvalidArgumentError, match=f"prefix must be a path under .*{bad!r}"):
            setup(web.Application(), StreamingContext(sc, None), prefix=bad)
    for unreachable in ("/a b", "/caf\u00e9", "/a/../b", "/a//b", "/50%"):  # every request 404
        with pytest.raises(InvalidArgumentError, match=f"prefix {unreachable!r} cannot be"):
            setup(web.Application(), StreamingContext(sc, None), prefix=unreachable)
    running = web.Application()
    running.freeze()  # what aiohttp does as it starts: it raised its own RuntimeError
    with pytest.raises(InvalidArgumentError, match=r"is frozen .* call setup while building it"):
        setup(running, StreamingContext(sc, None))
    host = web.Application()
    setup(host, StreamingContext(sc, None), prefix="/ops/reactive")
    host.router.add_get("/jobs/{name}", ok_handler)
    host.add_subapp("/admin", web.Application())
    for taken, there in [
        ("/ops/reactive/", "/ops/reactive"),  # a console mounted there
        ("/jobs", "/jobs/{name}"),  # a route under it
        ("/admin/reactive", "/admin"),  # a sub-application above it, which takes its requests
    ]:
        refused = f"prefix {taken!r} is taken in app already \\({there!r} is there\\)"
        with pytest.raises(InvalidArgumentError, match=refused):
            setup(host, StreamingContext(sc, None), prefix=taken)
    setup(host, StreamingContext(sc, None), prefix="/ops/other")  # beside the first: fine


async def ok_handler(request: web.Request) -> web.Response:
    return web.Response()


async def test_a_context_started_elsewhere_is_left_running_until_the_host_stops(
    sc: SparkContext,
) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    build(ssc)
    await ssc.start()
    async with TestClient(TestServer(create_app(ssc))) as client:
        assert (await client.get("/api/sources")).status == 200
    assert ssc.state == "stopped"


async def test_a_console_fire_is_either_accepted_or_refused_never_both(sc: SparkContext) -> None:
    """Fired while the sources downstream are full, the event waits for room as a REST
    request does, and the answer is 202 once it is accepted: after 30 s the console answered
    503 and the event ran all the same. A stop before it is accepted answers 503, and then
    it never runs."""
    import threading

    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    manual = ssc.manualSource("m")
    passed = manual.filter(lambda event: True).overflow(maxQueued=1)
    gates = {"first": threading.Event(), "second": threading.Event()}  # each batch waits
    ran: list[Any] = []

    def job(time: Any, rdd: Any, event: Any) -> None:
        ran.append(event.value)
        gates[event.value].wait(30)

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(passed)
    app = create_app(ssc)
    async with TestClient(TestServer(app)) as client:
        await ok(await fire(client, "/api/sources/m/fire", "first"), 202)
        while not ran:  # the first batch runs: the filter's queue is full until it ends
            await asyncio.sleep(0.01)
        second = asyncio.ensure_future(fire(client, "/api/sources/m/fire", "second"))
        await asyncio.sleep(0.5)
        assert not second.done()  # waiting for room, not refused
        gates["first"].set()
        await ok(await second, 202)
        while len(ran) < 2:  # the second batch holds the queue now
            await asyncio.sleep(0.01)
        third = asyncio.ensure_future(fire(client, "/api/sources/m/fire", "third"))
        await asyncio.sleep(0.3)
        assert not third.done()
        threading.Timer(0.3, gates["second"].set).start()  # it ends as the stop begins
        await ssc.stop(stopSparkContext=False)
        error = await ok(await third, 503)
        assert error["error"].endswith("before this one was accepted: it will not run")
    assert ran == ["first", "second"]


async def test_a_console_stopping_answers_the_fires_still_waiting(sc: SparkContext) -> None:
    """A console on its own port stops the context before its server: a fire whose event was
    posted is answered 202 once the graceful stop accepts it, however long the batch before
    it takes, and one waiting for room in its source is refused. Both were cut off when the
    server gave running requests its second, before the context's stop began."""
    import threading

    import aiohttp

    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    manual = ssc.manualSource("m")
    passed = manual.filter(lambda event: True).overflow(maxQueued=1)
    blocking = ssc.manualSource("b").overflow(1, "block")
    gate = threading.Event()
    ran: list[Any] = []

    def job(time: Any, rdd: Any, event: Any) -> None:
        ran.append(event.value)
        gate.wait(30)

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(passed).bind(blocking)
    console = await Console(ssc, port=0).start()

    def fire(name: str, value: str) -> Any:
        return session.post(f"{console.url}api/sources/{name}/fire", json=value)

    async with aiohttp.ClientSession() as session:
        async with fire("m", "first") as first:
            assert first.status == 202
        while not ran:  # the first batch holds the worker: `passed` is full until it ends
            await asyncio.sleep(0.01)
        async with fire("b", "b1") as accepted:  # accepted, not processed: `b` is full
            assert accepted.status == 202
        waiting_for_room = asyncio.ensure_future(fire("b", "b2"))
        posted = asyncio.ensure_future(fire("m", "second"))  # waits to be accepted
        await asyncio.sleep(0.3)
        assert not waiting_for_room.done() and not posted.done()
        threading.Timer(2.0, gate.set).start()  # past the second the server gives requests
        await console.stop()
        refused = await waiting_for_room
        assert refused.status == 503, await refused.text()
        answer = await posted
        assert answer.status == 202, await answer.text()
    assert ran == ["first", "b1", "second"]


def stuck_job(sc: SparkContext) -> tuple[StreamingContext, Any, threading.Event, threading.Event]:
    """A context whose manual source's batches get stuck in a job of the user's.

    Returns the context, the source, `entered` (set once a batch runs the job) and `stuck`
    (set it to let the job end; it ends by itself after 60 s).
    """
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    manual = ssc.manualSource("m")
    stuck, entered = threading.Event(), threading.Event()

    def job(rdd: Any) -> None:
        entered.set()
        stuck.wait(60)

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(manual)
    return ssc, manual, entered, stuck


async def test_a_service_shutdown_stops_its_context_in_bounded_time(sc: SparkContext) -> None:
    """A batch stuck in a function of the user's held the service's shutdown for as long as it
    was stuck: the stop it made had no timeout. Now it is graceful for `stop_timeout` seconds,
    then it stops as a non-graceful stop does (which leaves a stuck batch after 2 s)."""
    import time

    from reactive_spark.errors import StopError

    ssc, manual, entered, stuck = stuck_job(sc)
    service = web.Application()
    setup(service, ssc, stop_timeout=0.5)
    runner = web.AppRunner(service, handle_signals=False)
    await runner.setup()
    try:
        manual.trigger(1)
        manual.trigger(2)  # queued behind the stuck one
        while not entered.is_set():
            await asyncio.sleep(0.01)
        began = time.perf_counter()
        with pytest.raises(StopError, match="did not end 2 s after its Spark jobs were cancelled"):
            await runner.cleanup()  # the stop's failure reaches the service
        took = time.perf_counter() - began
    finally:
        stuck.set()
    assert took < 10, took  # 0.5 s graceful, then 2 s for the stuck batch, and some slack
    assert ssc.state == "stopped"
    with pytest.raises(InvalidArgumentError, match="stop_timeout must be a non-negative"):
        create_app(StreamingContext(sc, None), stop_timeout=-1)


async def test_a_service_cleanup_registered_before_setup_waits_for_the_stop(
    sc: SparkContext,
) -> None:
    """QA: a service's `on_cleanup` handler registered before `setup` (as console.md says)
    runs while the graceful stop still runs batches, and closed what they used. Awaiting
    `wait_for_stop(console)` first closes it once the last batch ended, whatever a job raised
    before (`awaitTermination` would raise that at once, the stop still running)."""
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    manual = ssc.manualSource("m")
    entered, release = threading.Event(), threading.Event()
    seen: list[str] = []

    def job(time: Time, rdd: Any, event: Any) -> None:
        if event.value == "fail":
            raise ValueError("a job of yours failed")
        entered.set()
        release.wait(30)
        seen.append(f"batch {event.value} ended")

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(manual)
    service = web.Application()

    async def close_pool(app: web.Application) -> None:
        seen.append("cleanup began")
        release.set()  # the running batch ends only now, while the stop runs
        try:
            await wait_for_stop(console)
        finally:
            seen.append("pool closed")

    service.on_cleanup.append(close_pool)
    console = setup(service, ssc, stop_timeout=30)
    runner = web.AppRunner(service, handle_signals=False)
    await runner.setup()
    for value in ("fail", "a", "b"):  # b waits behind a: the graceful stop runs it
        manual.trigger(value)
    await asyncio.wait_for(asyncio.to_thread(entered.wait, 30), 60)
    await asyncio.wait_for(runner.cleanup(), 60)
    assert seen == ["cleanup began", "batch a ended", "batch b ended", "pool closed"]
    assert ssc.state == "stopped"


async def test_a_stop_that_failed_after_wait_for_stop_is_raised_not_also_logged(
    sc: SparkContext, caplog: pytest.LogCaptureFixture
) -> None:
    """The console's cleanup raises the failed stop that a service's cleanup waited for with
    `wait_for_stop`; it was also logged as an error, as if nobody would hear of it."""
    import logging

    from reactive_spark.errors import StopError

    ssc, manual, entered, stuck = stuck_job(sc)
    service = web.Application()

    async def close_pool(app: web.Application) -> None:
        await wait_for_stop(console)

    service.on_cleanup.append(close_pool)
    console = setup(service, ssc, stop_timeout=0.5)
    runner = web.AppRunner(service, handle_signals=False)
    await runner.setup()
    try:
        manual.trigger(1)
        await asyncio.wait_for(asyncio.to_thread(entered.wait, 30), 60)
        with (
            caplog.at_level(logging.ERROR, logger="reactive_spark.web"),
            pytest.raises(StopError, match="did not end 2 s after its Spark jobs"),
        ):
            await asyncio.wait_for(runner.cleanup(), 60)
    finally:
        stuck.set()
    assert not [record for record in caplog.records if "stopping the console" in record.message]


async def test_wait_for_stop_begins_the_stop_and_returns_if_never_started(sc: SparkContext) -> None:
    """A service that skips its shutdown step (`app.cleanup()` alone) leaves the stop to the
    console's cleanup, which runs after the service's own: `wait_for_stop` begins it."""
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(ssc.manualSource("m"))
    service = web.Application()
    seen: list[str] = []

    async def close_pool(app: web.Application) -> None:
        await wait_for_stop(console)
        seen.append(ssc.state)

    service.on_cleanup.append(close_pool)
    console = setup(service, ssc)
    await asyncio.wait_for(wait_for_stop(console), 10)  # never started: nothing to wait for
    assert ssc.state == "initialized"
    service.freeze()
    await service.startup()
    assert ssc.state == "active"
    await asyncio.wait_for(service.cleanup(), 60)  # no shutdown step
    assert seen == ["stopped"]
    with pytest.raises(InvalidArgumentError, match="console must be the application setup"):
        await wait_for_stop(service)


async def test_what_the_console_keeps_of_a_big_event_is_bounded_in_bytes(sc: SparkContext) -> None:
    """The history and the live stream were bounded in records only: each kept a request's
    whole body (1,000 records of 1 MB bodies held gigabytes). Each keeps about `MAX_KEPT`
    characters of an event's fields now, saying what it cut."""
    from reactive_spark.failures import UserError
    from reactive_spark.web.history import error_record
    from reactive_spark.web.keys import HISTORY_KEY
    from reactive_spark.web.values import MAX_KEPT, kept

    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    manual = ssc.manualSource("m")
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(manual)
    app = create_app(ssc)
    rows = {"rows": [{"id": n, "text": "y" * 100} for n in range(10_000)], "more": 1}
    async with TestClient(TestServer(app)):
        for value in (rows, "z" * 100_000, rows):
            manual.trigger(value)
        await ssc.advanceTo(T0)
        history = app[HISTORY_KEY]
        records = history.events(10) + history.batches(10)
    assert len(records) == 6
    for record in records:
        assert len(json.dumps(record)) < MAX_KEPT + 2_000, len(json.dumps(record))
    cut_text, cut_rows = (
        event["fields"]["value"] for event in history.events(10)[1:]
    )  # newest first
    assert cut_rows["rows"][0] == {"id": 0, "text": "y" * 100}
    assert cut_rows["rows"][-1].startswith("… (") and cut_rows["rows"][-1].endswith(" more items)")
    assert cut_rows["…"] == "1 more keys"
    assert cut_text.startswith("zzz") and cut_text.endswith("… (100000 characters)")
    # what costs nothing to write still counts: empty lists, long keys
    assert len(json.dumps(kept({"body": [[]] * 300_000}))) < MAX_KEPT + 100
    assert len(json.dumps(kept({"k" * 100_000: 1}))) < MAX_KEPT + 100
    # a job's error: its message and traceback too
    error = UserError("ValueError", "bad record " + "r" * 100_000, "Traceback...\n" * 50_000)
    record = error_record(error)
    assert record is not None and len(json.dumps(record)) < 3 * MAX_KEPT  # JSON escapes "\n"
    ending = UserError("ValueError", "bad", "Traceback\n" + "  frame\n" * 5_000 + "ValueError: bad")
    cut = error_record(ending)
    assert cut is not None and cut["traceback"].endswith("ValueError: bad")  # its end is kept
    # an int too long for str() is described, not kept (it made recording the event raise)
    assert kept({"n": 10**5000}) == {"n": "(an int of about 5001 digits)"}


async def test_a_console_fire_whose_event_is_dropped_is_refused(sc: SparkContext) -> None:
    """An event dropped before it was accepted never runs: past its source's bound
    (`"drop-newest"`), or when the scheduler crashed. Its fire is answered 503 then, not when
    (or if) the context stops."""
    import threading

    class Crash(BaseException):
        pass

    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    dropping = ssc.manualSource("dropping").overflow(maxQueued=1, policy="drop-newest")
    crashing = ssc.manualSource("crashing")
    passed = crashing.filter(lambda event: True).overflow(maxQueued=1)
    gates = {"dropping": threading.Event(), "passed": threading.Event()}
    ran: list[str] = []

    def job(time: Any, rdd: Any, event: Any) -> None:
        name = "passed" if event.source is passed else "dropping"
        ran.append(name)
        gates[name].wait(30)
        if name == "passed":
            raise Crash("the worker thread dies")

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(dropping).bind(passed)
    app = create_app(ssc)
    async with TestClient(TestServer(app)) as client:
        await ok(await fire(client, "/api/sources/dropping/fire", 1), 202)
        while not ran:  # its batch runs: its queue is full until it ends
            await asyncio.sleep(0.01)
        error = await ok(await fire(client, "/api/sources/dropping/fire", 2), 503)
        assert error["error"] == (
            "the event was dropped before it was accepted (drop-newest): it will not run"
        )
        gates["dropping"].set()
        await ok(await fire(client, "/api/sources/crashing/fire", 1), 202)
        while len(ran) < 2:
            await asyncio.sleep(0.01)
        waiting = asyncio.ensure_future(fire(client, "/api/sources/crashing/fire", 2))
        await asyncio.sleep(0.3)
        assert not waiting.done()  # waiting for room behind the running batch
        gates["passed"].set()  # the batch crashes the scheduler: what waits never runs
        error = await ok(await asyncio.wait_for(waiting, 10), 503)
        assert error["error"] == (
            "the StreamingContext stopped accepting events before this one was accepted: it "
            "will not run"
        )
        assert ssc.state == "active" and not ssc.acceptingEvents  # crashed, not stopped
    assert ran == ["dropping", "passed"]


async def test_a_service_shutdown_begins_the_stop_before_waiting_for_requests(
    sc: SparkContext,
) -> None:
    """aiohttp waits for the running requests before its cleanup: the stop begins before that
    (`on_shutdown`), so a request waiting for room is answered as the stop answers it (503,
    its event never runs) instead of holding the shutdown until room frees."""
    import threading
    import time

    import aiohttp

    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    rest = ssc.restServer(None, name="triggers").post("/run").overflow(maxQueued=1, policy="block")
    gate, ran = threading.Event(), []

    def job(rdd: Any) -> None:
        ran.append(1)
        gate.wait(30)

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(rest)
    service = web.Application()
    service.add_subapp("/triggers", rest.app)
    setup(service, ssc, stop_timeout=0.3)
    runner = web.AppRunner(service, handle_signals=False, shutdown_timeout=10)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/triggers/run"
    async with aiohttp.ClientSession() as session:
        first = await session.post(url, json={})
        assert first.status == 202
        while not ran:
            await asyncio.sleep(0.01)
        second = asyncio.ensure_future(session.post(url, json={}))
        await asyncio.sleep(0.3)
        assert not second.done()  # waiting for room
        threading.Timer(1.0, gate.set).start()  # the running batch ends after the stop's 0.3 s
        began = time.perf_counter()
        await runner.cleanup()
        assert time.perf_counter() - began < 5
        answer = await second
        assert answer.status == 503, await answer.text()
    assert ran == [1] and ssc.state == "stopped"


async def test_a_console_fire_merged_by_coalesce_is_told_so(sc: SparkContext) -> None:
    """Under `"coalesce"` a waiting event is merged into a later one and runs as part of it:
    its fire is answered 409 (do not fire it again), not 503 (it will not run)."""
    import threading

    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    manual = ssc.manualSource("m").overflow(maxQueued=2, policy="coalesce")
    gate = threading.Event()
    ran: list[tuple[Any, int]] = []

    def job(time: Any, rdd: Any, event: Any) -> None:
        ran.append((event.value, event.standsFor))
        gate.wait(30)

    ssc.queueStream([], default=[1]).foreachRDD(job).bind(manual)
    app = create_app(ssc)
    async with TestClient(TestServer(app)) as client:
        await ok(await fire(client, "/api/sources/m/fire", 1), 202)
        while not ran:  # its batch runs, and holds the queue
            await asyncio.sleep(0.01)
        second = asyncio.ensure_future(fire(client, "/api/sources/m/fire", 2))
        await asyncio.sleep(0.3)
        third = asyncio.ensure_future(fire(client, "/api/sources/m/fire", 3))
        error = await ok(await asyncio.wait_for(second, 10), 409)
        assert error["error"].startswith("the event was merged into a later one of its source")
        gate.set()
        answer = await ok(await asyncio.wait_for(third, 10), 202)
        while len(ran) < 2:
            await asyncio.sleep(0.01)
        assert ran == [(1, 1), (3, 2)] and answer["index"] == 1


async def test_a_console_without_a_port_says_so_before_its_context_starts(
    sc: SparkContext,
) -> None:
    """The console bound its port after starting its context: with every port taken, recovery
    and batches ran, then "could not start" named the last port tried. The port comes first
    now, and the error names the ports tried."""
    held = []
    first = None
    while first is None:  # a run of free ports, held as another process would hold them
        probe = socket.create_server(("127.0.0.1", 0))
        start = probe.getsockname()[1]
        probe.close()
        try:
            held = [socket.create_server(("127.0.0.1", start + k)) for k in range(PORT_ATTEMPTS)]
            first = start
        except OSError:
            for taken in held:
                taken.close()
            held = []
    try:
        ssc = StreamingContext(sc, Seconds(1), clock=VirtualClock(T0))
        ssc.queueStream([[1]]).foreachRDD(lambda rdd: None)
        with pytest.raises(ListenError) as refused:
            await Console(ssc, "127.0.0.1", first, token="t").start()
        assert ssc.state == "initialized"  # never started: nothing recovered, nothing ran
        last = first + PORT_ATTEMPTS - 1
        assert str(refused.value).startswith(
            f"cannot listen on 127.0.0.1:{first}-{last} (host '127.0.0.1', ports {first} to "
            f"{last}, all taken)"
        )
    finally:
        for taken in held:
            taken.close()


async def test_a_console_holds_its_port_while_its_context_starts(sc: SparkContext) -> None:
    """Bound and not listened on, the port was free to a socket with SO_REUSEADDR while the
    context started; the console then failed to serve, after the start it meant to spare."""
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    tried: list[str] = []

    class TryThePort(StreamingListener):
        def onStreamingStarted(self, streamingStarted: Any) -> None:
            other = socket.socket()
            other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                other.bind(("127.0.0.1", port))
                other.listen()
                tried.append("taken by another")
            except OSError as exc:
                tried.append(errno.errorcode[exc.errno or 0])
            finally:
                other.close()

    ssc = StreamingContext(sc, Seconds(1), clock=VirtualClock(T0))
    ssc.queueStream([[1]]).foreachRDD(lambda rdd: None)
    ssc.addStreamingListener(TryThePort())
    console = await Console(ssc, "127.0.0.1", port, token="t").start()
    try:
        assert tried == ["EADDRINUSE"]
        assert console.port == port
    finally:
        await console.stop()


async def test_a_console_on_a_host_that_does_not_resolve_never_starts_its_context(
    sc: SparkContext,
) -> None:
    ssc = StreamingContext(sc, Seconds(1), clock=VirtualClock(T0))
    ssc.queueStream([[1]]).foreachRDD(lambda rdd: None)
    with pytest.raises(ListenError, match=r"cannot listen on host 'nosuch\.invalid'"):
        await Console(ssc, "nosuch.invalid", 0, token="t").start()
    assert ssc.state == "initialized"


async def test_a_port_taken_between_bind_and_listen_moves_the_console_to_the_next(
    sc: SparkContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sockets with SO_REUSEADDR may bind one port; the second to listen fails. Listening
    was outside the port loop: a bare OSError, no next port, the socket left open."""
    loop = asyncio.get_running_loop()
    real = loop.create_server
    rivals: list[socket.socket] = []

    async def bound_then_taken(*args: Any, **options: Any) -> asyncio.Server:
        server = await real(*args, **options)
        if not rivals:  # another console, binding the same port, listens first
            rival = socket.socket()
            rival.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            rival.bind(("127.0.0.1", server.sockets[0].getsockname()[1]))
            rival.listen()
            rivals.append(rival)
        return server

    monkeypatch.setattr(loop, "create_server", bound_then_taken)
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    ssc = StreamingContext(sc, Seconds(1), clock=VirtualClock(T0))
    ssc.queueStream([[1]]).foreachRDD(lambda rdd: None)
    try:
        console = await Console(ssc, "127.0.0.1", port, token="t").start()
        try:
            assert console.port == port + 1
        finally:
            await console.stop()
    finally:
        for rival in rivals:
            rival.close()
