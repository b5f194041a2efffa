"""The console is safe to expose: who may view and fire, cross-site requests, DNS rebinding,
security headers, what unauthenticated viewers see, and JSON that is always valid."""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from pyspark import SparkContext

from reactive_spark import (
    Days,
    InvalidArgumentError,
    StreamingContext,
    Time,
    VirtualClock,
)
from reactive_spark.errors import DirectoryNotFoundError, ListenError
from reactive_spark.web import BearerToken, Console, create_app, setup
from reactive_spark.web.keys import HISTORY_KEY

from .raw_http import exchange, served_as_if

T0 = Time.fromDatetime(datetime(2026, 4, 6, tzinfo=UTC))
JSON = {"Content-Type": "application/json"}
CONSOLE_TOKEN = "console-token"
TRIGGER_TOKEN = "trigger-token"
Client = TestClient[Any, Any]


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


def strict_json(text: str) -> Any:
    """`json.loads` that refuses NaN and Infinity, as browsers' JSON.parse does."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


async def answer(response: Any, status: int) -> Any:
    assert response.status == status, await response.text()
    assert response.content_type == "application/json"
    return strict_json(await response.text())


async def fire(client: Client, name: str, body: Any = None, **headers: str) -> Any:
    return await client.post(
        f"/api/sources/{name}/fire", data=json.dumps(body), headers={**JSON, **headers}
    )


def bearer(token: str, scheme: str = "Bearer") -> dict[str, str]:
    return {"Authorization": f"{scheme} {token}"}


@pytest.fixture
async def make_console(
    sc: SparkContext,
) -> AsyncIterator[Callable[..., Awaitable[tuple[StreamingContext, Client]]]]:
    """Consoles made with `create_app(ssc, **options)`, served by aiohttp's test server."""
    opened: list[Client] = []

    async def make(**options: Any) -> tuple[StreamingContext, Client]:
        ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
        build(ssc)
        client: Client = TestClient(TestServer(create_app(ssc, **options)))
        await client.start_server()
        opened.append(client)
        return ssc, client

    yield make
    for client in opened:
        await client.close()


# -- authentication --------------------------------------------------------------------------
async def test_a_token_console_lets_in_only_its_token(make_console: Any) -> None:
    ssc, client = await make_console(auth=BearerToken(CONSOLE_TOKEN))
    for path in ("/api/sources", "/api/events", "/api/batches", "/api/graph", "/metrics"):
        refused = await client.get(path)
        error = await answer(refused, 401)
        assert "sign in" in error["error"]
        assert refused.headers["WWW-Authenticate"].startswith("Bearer")
        assert (await client.get(path, headers=bearer("wrong"))).status == 401
    assert (await client.get("/api/events/stream")).status == 401
    await answer(await fire(client, "rerun"), 401)
    for scheme in ("Bearer", "bearer", "BEARER"):
        await answer(await client.get("/api/sources", headers=bearer(CONSOLE_TOKEN, scheme)), 200)
    fired = await answer(await fire(client, "rerun", {"n": 1}, **bearer(CONSOLE_TOKEN)), 202)
    await ssc.advanceTo(T0)
    batch = await answer(await client.get(fired["status"], headers=bearer(CONSOLE_TOKEN)), 200)
    assert batch["status"] == "succeeded" and batch["event"]["firedBy"] == "console"
    for public in ("/", "/static/console.js", "/api/openapi.json"):  # no data in them
        assert (await client.get(public)).status == 200


async def test_the_view_scope_does_not_fire(make_console: Any) -> None:
    ssc, client = await make_console(auth=BearerToken("reader", scopes={"view"}))
    await answer(await client.get("/api/batches", headers=bearer("reader")), 200)
    error = await answer(await fire(client, "rerun", **bearer("reader")), 403)
    assert error["error"] == "this needs the control scope"
    await ssc.advanceTo(T0)
    assert (await answer(await client.get("/api/events", headers=bearer("reader")), 200)) == []


async def test_a_service_plugs_in_its_own_auth(sc: SparkContext) -> None:
    """The service's middleware authenticates; the console's authenticator reads what it
    stored (here a coroutine function: it could look the user up)."""
    user_key = web.RequestKey("user", str)

    @web.middleware
    async def service_auth(request: web.Request, handler: Any) -> web.StreamResponse:
        user = request.headers.get("X-Service-User")
        if user is not None:
            request[user_key] = user
        return await handler(request)

    async def console_scopes(request: web.Request) -> set[str]:
        return {"ops": {"view", "control"}, "analyst": {"view"}}.get(
            request.get(user_key, ""), set()
        )

    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    build(ssc)
    service = web.Application(middlewares=[service_auth])
    setup(service, ssc, prefix="/reactive", auth=console_scopes)
    async with TestClient(TestServer(service)) as client:
        assert (await client.get("/reactive/api/sources")).status == 401
        analyst = {"X-Service-User": "analyst"}
        assert (await client.get("/reactive/api/sources", headers=analyst)).status == 200
        as_analyst = await client.post(
            "/reactive/api/sources/rerun/fire", data="null", headers={**JSON, **analyst}
        )
        assert as_analyst.status == 403
        as_ops = await client.post(
            "/reactive/api/sources/rerun/fire",
            data="null",
            headers={**JSON, "X-Service-User": "ops"},
        )
        assert as_ops.status == 202


async def test_a_link_from_another_site_opens_a_mounted_console_with_or_without_its_slash(
    sc: SparkContext,
) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    build(ssc)
    service = web.Application()
    setup(service, ssc, prefix="/reactive")
    link = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}
    async with TestClient(TestServer(service)) as client:
        for path in ("/reactive?x=1", "/reactive/?x=1"):
            page = await client.get(path, headers=link)
            assert page.status == 200 and page.content_type == "text/html", path
        assert (await client.get("/reactive/api/sources", headers=link)).status == 403


# -- a console without auth answers this machine only -------------------------------------------
async def mounted_console_answers(
    sc: SparkContext, peer: str, requests: list[tuple[str, str, dict[str, str]]], **options: Any
) -> tuple[list[tuple[int, Any]], int]:
    """Mount a console (`setup(service, ssc, **options)`) in a service listening on 0.0.0.0;
    send each `(method, path, headers)` from a client at `peer`, to the service's address
    `192.0.2.2`. Returns each answer's status and JSON, and how many events fired."""
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    build(ssc)
    service = web.Application()
    console = setup(service, ssc, **options)
    answers = []
    async with (
        served_as_if(service, peer=peer, local="192.0.2.2") as base,
        aiohttp.ClientSession() as http,
    ):
        for method, path, headers in requests:
            body = b"null" if method == "POST" else None
            sent = {"Host": "127.0.0.1", **JSON, **headers}  # a loopback name: spoofed
            async with http.request(method, base + path, data=body, headers=sent) as response:
                shown = (
                    await response.json() if response.content_type == "application/json" else None
                )
                answers.append((response.status, shown))
        await ssc.advanceTo(T0)
        fired = len(console[HISTORY_KEY].events(100))
    return answers, fired


EVERY_KIND = [
    ("GET", "/reactive/", {}),
    ("GET", "/reactive/api/sources", {}),
    ("GET", "/reactive/metrics", {}),
    ("POST", "/reactive/api/sources/rerun/fire", {}),
]


@pytest.mark.parametrize("peer", ["192.0.2.7", "2001:db8::7"])
async def test_a_console_without_auth_refuses_other_machines(sc: SparkContext, peer: str) -> None:
    answers, fired = await mounted_console_answers(sc, peer, EVERY_KIND)
    assert [status for status, _ in answers] == [403] * 4 and fired == 0
    for _, error in answers:
        assert error["error"].startswith(
            "this console has no auth; it answers loopback clients only"
        )
        assert "auth=BearerToken(token)" in error["error"] and "insecure=True" in error["error"]


async def test_a_console_with_auth_or_insecure_answers_other_machines(sc: SparkContext) -> None:
    answers, fired = await mounted_console_answers(sc, "192.0.2.7", EVERY_KIND, insecure=True)
    assert [status for status, _ in answers] == [200, 200, 200, 202] and fired == 1
    signed = bearer(CONSOLE_TOKEN)
    requests = [*EVERY_KIND, ("GET", "/reactive/api/sources", signed)]
    requests.append(("POST", "/reactive/api/sources/rerun/fire", signed))
    auth = BearerToken(CONSOLE_TOKEN)
    answers, fired = await mounted_console_answers(sc, "192.0.2.7", requests, auth=auth)
    assert [status for status, _ in answers] == [200, 401, 401, 401, 200, 202] and fired == 1
    loopback = await mounted_console_answers(sc, "::ffff:127.0.0.1", EVERY_KIND)
    assert [status for status, _ in loopback[0]] == [200, 200, 200, 202] and loopback[1] == 1
    proxied = [(method, path, {"Via": "1.1 proxy"}) for method, path, _ in EVERY_KIND]
    through_a_proxy = await mounted_console_answers(sc, "127.0.0.1", proxied)
    assert [status for status, _ in through_a_proxy[0]] == [403] * 4 and through_a_proxy[1] == 0


async def test_any_host_name_needs_auth_or_insecure(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    build(ssc)
    refusal = r"allowed_hosts=\['\*'\] without auth lets a page rebound to this machine"
    with pytest.raises(InvalidArgumentError, match=refusal):
        create_app(ssc, allowed_hosts=["*"])
    with pytest.raises(InvalidArgumentError, match=refusal):
        setup(web.Application(), ssc, allowed_hosts=["localhost", "*"])
    with pytest.raises(InvalidArgumentError, match=refusal):
        Console(ssc, allowed_hosts=["*"])
    with pytest.raises(InvalidArgumentError, match="insecure must be a bool, got 'yes'"):
        create_app(ssc, insecure="yes")  # type: ignore[arg-type]
    create_app(ssc, allowed_hosts=["*"], insecure=True)
    create_app(ssc, allowed_hosts=["*"], auth=BearerToken(CONSOLE_TOKEN))


# -- token-protected REST triggers through the console ------------------------------------------
async def test_a_console_without_auth_cannot_fire_a_protected_trigger(make_console: Any) -> None:
    ssc, client = await make_console()
    error = await answer(await fire(client, "guarded", {"body": {"x": 1}}), 403)
    assert "'guarded' is token-protected" in error["error"]
    assert "this console has none configured" in error["error"]
    wrong = await fire(client, "guarded", {"body": {"x": 1}}, **bearer("guess"))
    assert wrong.status == 403
    await ssc.advanceTo(T0)
    assert await answer(await client.get("/api/events"), 200) == []
    own = await answer(
        await fire(client, "guarded", {"body": {"x": 2}}, **bearer(TRIGGER_TOKEN)), 202
    )
    await ssc.advanceTo(T0)
    event = (await answer(await client.get(own["status"]), 200))["event"]
    assert event["firedBy"] == "console" and event["protected"]


async def test_control_scope_fires_a_protected_trigger(make_console: Any) -> None:
    ssc, client = await make_console(auth=BearerToken(CONSOLE_TOKEN))
    signed_in = bearer(CONSOLE_TOKEN)
    fired = await answer(await fire(client, "guarded", {"body": {"x": 1}}, **signed_in), 202)
    by_own_token = await fire(client, "guarded", {"body": {"x": 2}}, **bearer(TRIGGER_TOKEN))
    assert by_own_token.status == 202
    await ssc.advanceTo(T0)
    batch = await answer(await client.get(fired["status"], headers=signed_in), 200)
    assert batch["status"] == "succeeded"
    assert batch["event"]["fields"]["body"] == {"x": 1} and batch["event"]["firedBy"] == "console"


async def test_protected_requests_are_shown_to_authenticated_viewers_only(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    build(ssc)
    guarded = next(source for source in ssc.sources if source.name == "guarded")
    open_console = create_app(ssc)
    token_console = create_app(ssc, auth=BearerToken(CONSOLE_TOKEN))
    service = web.Application()
    service.add_subapp("/open", open_console)
    service.add_subapp("/signed", token_console)
    service.add_subapp("/triggers", guarded.app)  # type: ignore[attr-defined]
    async with TestClient(TestServer(service)) as client:
        stream = await client.get("/open/api/events/stream")
        assert await stream.content.readline() == b": connected\n"
        posted = await client.post(
            "/triggers/run?account=zebra",
            json={"secret": "s3-hidden"},
            headers=bearer(TRIGGER_TOKEN),
        )
        assert posted.status == 202
        await ssc.advanceTo(T0)
        [hidden] = await answer(await client.get("/open/api/events"), 200)
        assert hidden["protected"] and hidden["fields"]["path"] == "/run"
        assert "s3-hidden" not in json.dumps(hidden) and "zebra" not in json.dumps(hidden)
        assert hidden["fields"]["body"].startswith("(hidden: sign in")
        [batch] = await answer(await client.get("/open/api/batches"), 200)
        assert "s3-hidden" not in json.dumps(batch) and "zebra" not in json.dumps(batch)
        single = await answer(await client.get(f"/open/api/batches/{batch['instanceId']}"), 200)
        assert "s3-hidden" not in json.dumps(single)
        shown = await client.get("/signed/api/events", headers=bearer(CONSOLE_TOKEN))
        [full] = await answer(shown, 200)
        assert full["fields"]["body"] == {"secret": "s3-hidden"}
        assert full["fields"]["query"] == {"account": "zebra"}
        live = b""
        while b"event: batch" not in live:
            live += await stream.content.readany()
        assert b"event: event" in live and b"s3-hidden" not in live and b"zebra" not in live
        stream.close()


# -- cross-site requests and DNS rebinding ---------------------------------------------------------
@pytest.mark.parametrize(
    ("headers", "body", "status", "message"),
    [
        ({**JSON, "Origin": "http://evil.example"}, "null", 403, "Origin http://evil.example"),
        ({**JSON, "Origin": "null"}, "null", 403, "Origin null is not"),
        ({**JSON, "Sec-Fetch-Site": "cross-site"}, "null", 403, "Sec-Fetch-Site is cross-site"),
        ({"Content-Type": "text/plain"}, "null", 415, "send Content-Type: application/json"),
        ({"Content-Type": "application/x-www-form-urlencoded"}, "a=1", 415, "application/json"),
        ({"Content-Type": "multipart/form-data; boundary=x"}, "--x--", 415, "application/json"),
        ({}, None, 415, "application/json"),
        ({**JSON, "Host": "evil.example"}, "null", 421, "Host 'evil.example' is not a name"),
        ({**JSON, "Host": "evil.example:4040"}, "null", 421, "allowed_hosts: 127.0.0.1, ::1"),
    ],
)
async def test_cross_site_and_rebound_requests_fire_nothing(  # type: ignore[no-untyped-def]
    make_console, headers, body, status, message
) -> None:
    ssc, client = await make_console()
    refused = await client.post("/api/sources/rerun/fire", data=body, headers=headers)
    assert message in (await answer(refused, status))["error"]
    await ssc.advanceTo(T0)
    assert await answer(await client.get("/api/events"), 200) == []


READS = [
    "/api/sources",
    "/api/graph",
    "/api/events",
    "/api/events/stream",
    "/api/batches",
    "/api/batches/0",
    "/api/deadlines",
    "/api/openapi.json",
    "/metrics",
]


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        ({"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}, "Sec-Fetch-Site is"),
        ({"Sec-Fetch-Site": "same-site"}, "Sec-Fetch-Site is same-site"),
        ({"Origin": "http://evil.example"}, "Origin http://evil.example is not"),
        ({"Origin": "null"}, "Origin null is not"),
    ],
)
async def test_other_sites_read_nothing_but_the_page(  # type: ignore[no-untyped-def]
    make_console, headers, reason
) -> None:
    """A page of another site (in the operator's browser) reads no data, nor the live
    stream; the dashboard itself may be opened from a link anywhere."""
    _, client = await make_console()
    for path in READS:
        error = await answer(await client.get(path, headers=headers), 403)
        assert error["error"].startswith(f"refused a cross-site request ({reason}"), path
    for page in ("/", "/static/console.js", "/static/favicon.svg"):
        assert (await client.get(page, headers=headers)).status == 200, page
    own = f"http://127.0.0.1:{client.port}"
    for same in ({"Sec-Fetch-Site": "same-origin", "Origin": own}, {"Sec-Fetch-Site": "none"}):
        await answer(await client.get("/api/events", headers=same), 200)


async def test_same_origin_requests_and_allowed_hosts_are_served(make_console: Any) -> None:
    _, client = await make_console()
    own = f"http://127.0.0.1:{client.port}"
    same_origin = {"Origin": own, "Sec-Fetch-Site": "same-origin"}
    await answer(await fire(client, "rerun", None, **same_origin), 202)
    for host in ("localhost:4040", "[::1]:4040", "127.0.0.1"):
        assert (await client.get("/api/sources", headers={"Host": host})).status == 200
    assert (await client.get("/api/sources", headers={"Host": "evil.example"})).status == 421
    _, named = await make_console(allowed_hosts=["reports.example.com"])
    assert (await named.get("/api/sources", headers={"Host": "reports.example.com"})).status == 200
    assert (await named.get("/api/sources")).status == 421  # 127.0.0.1 was not listed
    _, anyone = await make_console(allowed_hosts=["*"], insecure=True)
    assert (await anyone.get("/api/sources", headers={"Host": "evil.example"})).status == 200


# -- headers and the page ------------------------------------------------------------------------
async def test_every_answer_carries_security_headers(make_console: Any) -> None:
    _, client = await make_console()
    for path in ("/", "/api/sources", "/static/console.js", "/api/nothing"):
        response = await client.get(path)
        csp = response.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["Referrer-Policy"] == "no-referrer"
        assert response.headers["Server"] == "reactive-spark"


async def test_the_page_has_no_inline_script_or_style_and_a_favicon(make_console: Any) -> None:
    _, client = await make_console()
    page = await (await client.get("/")).text()
    scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", page, re.S)
    assert scripts and all('src="' in attrs and not body.strip() for attrs, body in scripts)
    assert "<style" not in page and " style=" not in page and " on" + "click=" not in page
    assert 'rel="icon"' in page and "static/favicon.svg" in page
    icon = await client.get("/static/favicon.svg")
    assert icon.status == 200 and icon.content_type == "image/svg+xml"


@pytest.mark.parametrize(
    "path",
    [
        "/static/" + "a" * 300,
        "/static/",
        "/static/%00",
        "/static/..%2fapp.py",
        "/static/nothing.js",
    ],
)
async def test_a_static_file_that_is_not_there_is_a_json_404(make_console: Any, path: str) -> None:
    _, client = await make_console()
    await answer(await client.get(path), 404)  # not 500 (file name too long), 403 or 200
    for name, kind in (("console.js", "javascript"), ("console.css", "text/css")):
        served = await client.get(f"/static/{name}")
        assert served.status == 200 and kind in served.content_type


async def test_the_console_answers_what_the_http_parser_rejects_in_json(sc: SparkContext) -> None:
    """On its own port, as REST triggers do: not aiohttp's text/plain with its version."""
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    build(ssc)
    console = await Console(ssc, port=0, token=CONSOLE_TOKEN).start()
    try:
        for request in (
            b"GE T / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            b"GET /api/sources HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n",
            b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        ):
            refused = await exchange(console.url, request)  # read until the server closes
            assert refused.status == 400 and refused.headers["server"] == "reactive-spark"
            assert refused.json()["error"].startswith("the request is not valid HTTP (")
    finally:
        await console.stop()
    assert ssc.state == "stopped"


# -- valid JSON whatever the events hold; no library paths ----------------------------------------
async def test_non_finite_and_deep_values_keep_the_json_valid(make_console: Any) -> None:
    ssc, client = await make_console()
    stream = await client.get("/api/events/stream")
    assert await stream.content.readline() == b": connected\n"
    rerun = next(source for source in ssc.sources if source.name == "rerun")
    deep: Any = 1
    for _ in range(980):
        deep = [deep]
    values_in = (float("nan"), {"v": float("inf"), "w": [-float("inf")]}, deep, object())
    for value in values_in:
        rerun.trigger(value)  # type: ignore[attr-defined]
    await ssc.advanceTo(T0)
    events = await answer(await client.get("/api/events"), 200)
    values = [event["fields"]["value"] for event in reversed(events)]
    assert values[0] == "NaN" and values[1] == {"v": "Infinity", "w": ["-Infinity"]}
    assert "nested deeper than 256" in json.dumps(values[2])
    assert values[3].startswith("<object object at")
    await answer(await client.get("/api/batches"), 200)
    received = b""
    while received.count(b"event: event") < 4:
        received += await stream.content.readany()
    for block in received.decode().split("\n\n"):
        for line in block.splitlines():
            if line.startswith("data: "):
                strict_json(line[len("data: ") :])
    stream.close()


async def test_failures_show_no_absolute_library_paths(make_console: Any) -> None:
    ssc, client = await make_console()
    fired = await answer(await fire(client, "broken"), 202)
    await ssc.advanceTo(T0)
    batch = await answer(await client.get(fired["status"]), 200)
    [job] = batch["jobs"]
    traceback = job["error"]["traceback"]
    assert "ValueError: bad line 'x'" in traceback
    assert "site-packages" not in traceback and os.getcwd() + os.sep not in traceback
    assert re.search(r'File "pyspark/[^"]+\.py"', traceback), traceback
    assert 'File "tests/test_security.py"' in traceback or 'File "test_security.py"' in traceback


# -- arguments -----------------------------------------------------------------------------------
async def test_console_arguments_are_checked(sc: SparkContext, caplog: Any) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    build(ssc)
    with pytest.raises(InvalidArgumentError, match="ssc must be a StreamingContext, got None"):
        Console(None)  # type: ignore[arg-type]
    with pytest.raises(
        InvalidArgumentError, match=r"app must be an aiohttp web\.Application, got None"
    ):
        setup(None, ssc)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=r"host '0\.0\.0\.0' is not a loopback address"):
        Console(ssc, "0.0.0.0")
    with pytest.raises(InvalidArgumentError, match="token must be printable ASCII"):
        Console(ssc, token="two words")
    with pytest.raises(InvalidArgumentError, match="auth must be a callable"):
        create_app(ssc, auth="s3cret")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="scopes must be some of"):
        BearerToken("t", scopes={"admin"})
    with pytest.raises(InvalidArgumentError, match="allowed_hosts must be a list"):
        create_app(ssc, allowed_hosts="localhost")
    assert "t0ken" not in repr(BearerToken("t0ken"))
    signed = Console(ssc, "0.0.0.0", 0, token="t0ken")
    assert signed.loginUrl.endswith("/?token=t0ken")
    insecure = Console(ssc, "0.0.0.0", 0, insecure=True)
    with caplog.at_level(logging.INFO, logger="reactive_spark"):
        await insecure.start()
        await insecure.stop()
    assert "has no authentication (insecure=True)" in caplog.text
    assert "t0ken" not in caplog.text


# -- validation gaps -----------------------------------------------------------------------------
def test_paths_no_database_or_checkpoint_can_use_are_named(sc: SparkContext, tmp_path: Any) -> None:
    from reactive_spark.log import Database, StateStore

    with pytest.raises(InvalidArgumentError, match=r"path '.*' is a directory: give the path of"):
        StateStore(Database.sqlite(str(tmp_path)), "counts")
    with pytest.raises(InvalidArgumentError, match=r"checkpoint must be a directory path, got"):
        StreamingContext(sc, None, clock=VirtualClock(T0), checkpoint=str(tmp_path) + "/a\0b")


def test_flags_that_are_not_bools_are_refused_at_definition(
    sc: SparkContext, tmp_path: Any
) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    with pytest.raises(InvalidArgumentError, match="recursive must be a bool, got 'no'"):
        ssc.fileWatcher(str(tmp_path), "uploads", recursive="no")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="oneAtATime must be a bool, got 'yes'"):
        ssc.queueStream([[1]], oneAtATime="yes")  # type: ignore[arg-type]


async def test_a_file_where_a_directory_belongs_is_named_at_start(
    sc: SparkContext, tmp_path: Any
) -> None:
    regular = tmp_path / "regular"
    regular.write_text("not a directory")
    watching = StreamingContext(sc, None, clock=VirtualClock(T0))
    watcher = watching.fileWatcher(str(regular), "uploads")
    watching.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(watcher)
    with pytest.raises(InvalidArgumentError, match=r"path of the file watcher 'uploads' must be"):
        await watching.start()
    await watching.stop(stopSparkContext=False)
    reading = StreamingContext(sc, None, clock=VirtualClock(T0))
    daily = reading.timer(T0, None, Days(1), "daily")
    reading.textFileStream(str(regular)).foreachRDD(lambda rdd: None).bind(daily)
    with pytest.raises(DirectoryNotFoundError, match=r"regular is not a directory; create it"):
        await reading.start()
    await reading.stop(stopSparkContext=False)
    checkpointed = StreamingContext(sc, None, clock=VirtualClock(T0), checkpoint=str(regular))
    ticks = checkpointed.timer(T0, None, Days(1), "ticks")
    checkpointed.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(ticks)
    with pytest.raises(InvalidArgumentError, match=r"checkpoint directory '.*regular' is a file"):
        await checkpointed.start()
    await checkpointed.stop(stopSparkContext=False)


async def test_a_rest_server_on_the_network_needs_a_token_or_insecure(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    open_ = ssc.restServer("0.0.0.0", 0, "open").post("/run")
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(open_)
    with pytest.raises(ListenError, match="without a token: it is not a loopback address"):
        await ssc.start()
    await ssc.stop(stopSparkContext=False)
    trusting = StreamingContext(sc, None, clock=VirtualClock(T0))
    rest = trusting.restServer("0.0.0.0", 0, "open", insecure=True).post("/run")
    trusting.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(rest)
    await trusting.start()
    assert rest.port
    await trusting.stop(stopSparkContext=False)
