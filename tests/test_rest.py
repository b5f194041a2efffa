"""REST triggers over real HTTP: the standalone server and a source mounted in a host app."""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.http_exceptions import LineTooLong
from aiohttp.test_utils import TestClient, TestServer
from pyspark import SparkContext

from reactive_spark import (
    ContextStateError,
    InvalidArgumentError,
    RestEvent,
    StreamingContext,
    Time,
    VirtualClock,
)
from reactive_spark.errors import ListenError
from reactive_spark.sources.http_server import HttpServer
from reactive_spark.sources.rest import SOURCE_KEY, RestEventSource

from .helpers import gather
from .raw_http import Answer, address, exchange, served_as_if

T0 = Time(1_000_000)


@pytest.fixture
async def standalone(sc: SparkContext) -> AsyncIterator[tuple[StreamingContext, str, list]]:  # type: ignore[type-arg]
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    rest = ssc.restServer("127.0.0.1", 0, "triggers", token="s3cret", maxBodySize=64)
    rest.post("/jobs/report").get("/jobs/status").post("/jobs/other")
    report = rest.filter(lambda e: e.path == "/jobs/report")
    out, seen = gather(ssc.queueStream([], default=[1, 2, 3]).count())
    out.bind(report)
    await ssc.start()
    yield ssc, f"http://127.0.0.1:{rest.port}", seen
    await ssc.stop(stopSparkContext=False)


AUTH = {"Authorization": "Bearer s3cret"}


async def test_post_fires_an_event_and_answers_202(standalone) -> None:  # type: ignore[no-untyped-def]
    ssc, base, seen = standalone
    async with aiohttp.ClientSession() as http:
        async with http.post(
            f"{base}/jobs/report?day=2024-01-01&x=1", json={"force": True}, headers=AUTH
        ) as response:
            assert response.status == 202
            answer = await response.json()
        async with http.get(f"{base}/jobs/status", headers=AUTH) as response:
            assert response.status == 202
            second = await response.json()
    assert answer == {
        "source": "triggers",
        "index": 0,
        "time": T0.milliseconds,
        "instanceId": 0,
        "status": "/api/batches/0",
    }
    assert second["index"] == 1 and second["instanceId"] > answer["instanceId"]
    await ssc.advanceTo(T0)
    assert len(seen) == 1
    event, counted = seen[0]
    assert counted == [3]
    parent = event.parent
    assert isinstance(parent, RestEvent)
    assert (parent.method, parent.path, parent.query, parent.body) == (
        "POST",
        "/jobs/report",
        {"day": "2024-01-01", "x": "1"},
        {"force": True},
    )
    assert event.path == "/jobs/report"


@pytest.mark.parametrize(
    ("method", "path", "headers", "body", "status", "message"),
    [
        ("POST", "/jobs/report", {}, None, 401, "bearer token"),
        ("POST", "/jobs/report", {"Authorization": "Bearer wrong"}, None, 401, "bearer token"),
        ("POST", "/nope", AUTH, None, 404, "no trigger at /nope"),
        ("GET", "/jobs/report", AUTH, None, 405, "/jobs/report takes POST"),
        ("POST", "/jobs/report", AUTH, b"{not json", 400, "not valid JSON"),
        ("POST", "/jobs/report", AUTH, b"[" + b"1," * 40 + b"1]", 413, "larger than 64 bytes"),
    ],
)
async def test_bad_requests_get_json_errors_and_fire_nothing(  # type: ignore[no-untyped-def]
    standalone, method, path, headers, body, status, message
) -> None:
    ssc, base, seen = standalone
    fired: list[object] = []
    for source in ssc.sources:
        source.addListener(fired.append)
    url = f"{base}{path}"
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, url, data=body, headers=headers) as response,
    ):
        assert response.status == status
        assert response.content_type == "application/json"
        assert message in (await response.json())["error"]
    await ssc.advanceTo(T0)
    assert fired == []
    assert seen == []


async def test_source_mounted_in_a_host_application(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    rest = ssc.restServer(None, name="embedded").post("/run")
    out, seen = gather(ssc.queueStream([], default=["x"]))
    out.bind(rest)

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    host = web.Application()
    host.router.add_get("/health", health)
    host.add_subapp("/triggers", rest.app)
    assert rest.app[SOURCE_KEY] is rest
    await ssc.start()
    async with TestClient(TestServer(host)) as client:
        assert (await (await client.get("/health")).json()) == {"ok": True}
        response = await client.post("/triggers/run", json={"n": 1})
        assert response.status == 202
        assert (await response.json())["source"] == "embedded"
        missing = await client.post("/triggers/absent")
        assert missing.status == 404
        assert (await missing.json())["error"] == "no trigger at /absent"
    await ssc.advanceTo(T0)
    await ssc.stop(stopSparkContext=False)
    assert [(event.body, items) for event, items in seen] == [({"n": 1}, ["x"])]
    assert rest.toProduct() == (None, 4140, "embedded")


async def test_rest_arguments(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    with pytest.raises(ValueError, match="port must be an int from 0 to 65535"):
        ssc.restServer(port=70000)
    with pytest.raises(ValueError, match="maxBodySize must be a positive int"):
        ssc.restServer(port=0, maxBodySize=0)
    rest = ssc.restServer(port=0, name="r")
    with pytest.raises(ValueError, match="path must be a str starting with '/'"):
        rest.post("jobs")
    rest.post("/ok")
    ssc.queueStream([]).bind(rest)
    await ssc.start()
    with pytest.raises(ContextStateError, match="cannot add route GET /late"):
        rest.get("/late")
    await ssc.stop(stopSparkContext=False)


async def test_a_source_that_cannot_start_stops_the_context(sc: SparkContext) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
        rest = ssc.restServer("127.0.0.1", port, "busy").post("/x")
        ssc.queueStream([]).bind(rest)
        with pytest.raises(OSError):
            await ssc.start()
    assert ssc.state == "stopped"


async def raw_request(base: str, request: bytes) -> tuple[int, dict[str, str]]:
    """Send bytes no HTTP client would send; returns the status and the JSON answer."""
    host, port = base.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(request)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


async def test_hostile_input_gets_a_4xx_json_error_never_500(standalone) -> None:  # type: ignore[no-untyped-def]
    ssc, base, seen = standalone
    deep = b"[" * 100_000
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{base}/jobs/report", data=deep, headers=AUTH) as response,
    ):
        assert response.status in (400, 413)
        assert "error" in await response.json()
    status, answer = await raw_request(
        base,
        b"POST /jobs/report HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xff\xfe\r\n"
        b"Content-Length: 0\r\nConnection: close\r\n\r\n",
    )
    assert status == 401 and "bearer token" in answer["error"]
    await ssc.advanceTo(T0)
    assert seen == []


async def test_a_deeply_nested_body_is_a_bad_request(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    rest = ssc.restServer(None, name="nested", maxBodySize=1_000_000).post("/run")
    ssc.queueStream([]).bind(rest)
    await ssc.start()
    async with TestClient(TestServer(rest.app)) as client:
        response = await client.post("/run", data=b"[" * 100_000)
        assert response.status == 400
        assert (await response.json())["error"] == "body is nested too deeply (more than 256)"
    await ssc.stop(stopSparkContext=False)


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/q?x=1", "query string"),
        ("/jobs#top", "query string or fragment"),
        ("/a/../admin", "'..' segments"),
        ("/a/./b", "'.' and '..'"),
        ("/a//b", "empty segment"),
        ("/a%20b", "percent-escapes"),
        ("/a\nb", "control characters"),
    ],
)
def test_routes_no_request_can_reach_raise_at_definition(
    sc: SparkContext, path: str, reason: str
) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    rest = ssc.restServer(None, name="routes")
    with pytest.raises(ValueError, match=re.escape(reason)):
        rest.post(path)
    rest.post("/jobs/").get("/a/b.c")  # a trailing slash and dots inside names are fine


# -- safe to expose: tokens, cross-site requests, DNS rebinding, strict bodies ------------------
async def test_the_bearer_scheme_is_case_insensitive(standalone) -> None:  # type: ignore[no-untyped-def]
    ssc, base, seen = standalone
    async with aiohttp.ClientSession() as http:
        for scheme in ("bearer", "BEARER", "Bearer"):
            headers = {"Authorization": f"{scheme}  s3cret "}
            async with http.post(f"{base}/jobs/report", headers=headers) as response:
                assert response.status == 202, await response.text()
    await ssc.advanceTo(T0)
    assert len(seen) == 3


@pytest.mark.parametrize("token", [" s3cret", "s3cret\n", "s3 cret", "s3cret\x00", "", "tök", 7])
def test_a_token_no_client_can_send_is_refused_at_definition(sc: SparkContext, token) -> None:  # type: ignore[no-untyped-def]
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    with pytest.raises(
        InvalidArgumentError, match=r"^token must be .*got " + re.escape(repr(token))
    ):
        ssc.restServer(None, name="triggers", token=token)


async def test_an_encoded_slash_is_not_a_separator(standalone) -> None:  # type: ignore[no-untyped-def]
    ssc, base, seen = standalone
    for path in ("/jobs%2Freport", "/jobs%2freport"):
        answer = await exchange(
            base,
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer s3cret\r\n"
            "Content-Length: 0\r\nConnection: close\r\n\r\n".encode(),
        )
        assert answer.status == 404 and answer.json() == {"error": f"no trigger at {path}"}
    await ssc.advanceTo(T0)
    assert seen == []


@pytest.fixture
async def open_trigger(sc: SparkContext) -> AsyncIterator[tuple[StreamingContext, str, list]]:  # type: ignore[type-arg]
    """A REST trigger without a token on a loopback port."""
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    rest = ssc.restServer("127.0.0.1", 0, "open").post("/run")
    out, seen = gather(ssc.queueStream([], default=[1]))
    out.bind(rest)
    await ssc.start()
    yield ssc, f"http://127.0.0.1:{rest.port}", seen
    await ssc.stop(stopSparkContext=False)


@pytest.mark.parametrize(
    ("headers", "status", "message"),
    [
        ({"Origin": "http://evil.example"}, 403, "Origin http://evil.example is not this"),
        ({"Origin": "null"}, 403, "Origin null is not this server's"),
        ({"Sec-Fetch-Site": "cross-site"}, 403, "Sec-Fetch-Site is cross-site"),
        ({"Sec-Fetch-Site": "same-site"}, 403, "Sec-Fetch-Site is same-site"),
        ({"Origin": "http://["}, 403, "Origin http://[ is not this server's"),
        ({"Host": "evil.example"}, 421, "Host 'evil.example' is not a loopback name"),
        ({"Host": "evil.example:80", "Origin": "http://evil.example"}, 421, "not a loopback"),
    ],
)
async def test_a_trigger_without_token_refuses_other_sites_and_rebound_names(  # type: ignore[no-untyped-def]
    open_trigger, headers, status, message
) -> None:
    ssc, base, seen = open_trigger
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{base}/run", data=b"{}", headers=headers) as response,
    ):
        assert response.status == status
        assert message in (await response.json())["error"]
    await ssc.advanceTo(T0)
    assert seen == []


async def test_a_trigger_without_token_answers_its_own_origin_and_loopback_names(  # type: ignore[no-untyped-def]
    open_trigger,
) -> None:
    ssc, base, seen = open_trigger
    port = base.rsplit(":", 1)[1]
    allowed = [
        {"Origin": base, "Sec-Fetch-Site": "same-origin"},
        {"Host": f"localhost:{port}"},
        {"Host": "[::1]"},
        {},
    ]
    async with aiohttp.ClientSession() as http:
        for headers in allowed:
            async with http.post(f"{base}/run", json={"n": 1}, headers=headers) as response:
                assert response.status == 202, (headers, await response.text())
                assert response.headers["Server"] == "reactive-spark"
    await ssc.advanceTo(T0)
    assert len(seen) == len(allowed)


async def mounted_trigger_answers(
    sc: SparkContext,
    options: dict[str, str | bool],
    requests: list[tuple[str, str, dict[str, str]]],
) -> tuple[list[tuple[int, str]], int]:
    """Mount a REST trigger made with `options` in a service; send each `(peer, local,
    headers)` request (the client at `peer`, the service at `local`) to it. Returns each
    answer's status and error, and how many events fired."""
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    rest = ssc.restServer(None, name="hooks", **options).post("/deploy")  # type: ignore[arg-type]
    out, seen = gather(ssc.queueStream([], default=["x"]))
    out.bind(rest)
    service = web.Application()
    service.add_subapp("/triggers", rest.app)
    await ssc.start()
    answers = []
    for peer, local, headers in requests:
        async with (
            served_as_if(service, peer=peer, local=local) as base,
            aiohttp.ClientSession() as http,
            http.post(f"{base}/triggers/deploy", data=b"{}", headers=headers) as response,
        ):
            assert response.content_type == "application/json"
            answers.append((response.status, (await response.json()).get("error", "")))
    await ssc.advanceTo(T0)
    await ssc.stop(stopSparkContext=False)
    return answers, len(seen)


#: A page of evil.example whose name was rebound to 127.0.0.1: same-origin as far as it knows.
REBOUND = {
    "Host": "evil.example:8080",
    "Origin": "http://evil.example:8080",
    "Sec-Fetch-Site": "same-origin",
}


@pytest.mark.parametrize(
    ("peer", "local", "headers", "status", "message"),
    [
        ("192.0.2.7", "192.0.2.2", {}, 403, "answers clients on this machine only"),
        ("192.0.2.7", "192.0.2.2", {"Host": "127.0.0.1"}, 403, "give it a token"),
        ("2001:db8::7", "2001:db8::2", {"Host": "[::1]"}, 403, "on this machine only"),
        # through a proxy on this machine: its connection is local, its client is not
        ("127.0.0.1", "127.0.0.1", {"X-Forwarded-For": "203.0.113.9"}, 403, "this machine"),
        ("127.0.0.1", "127.0.0.1", {"Forwarded": "for=203.0.113.9"}, 403, "this machine"),
        ("127.0.0.1", "127.0.0.1", REBOUND, 421, "Host 'evil.example:8080' is not a loopback"),
        ("::ffff:127.0.0.1", "::ffff:127.0.0.1", REBOUND, 421, "is not a loopback name"),
    ],
)
async def test_a_mounted_trigger_without_token_refuses_other_machines_and_rebound_names(
    sc: SparkContext, peer: str, local: str, headers: dict[str, str], status: int, message: str
) -> None:
    """Mounted in a service, it knows no host of its own: each request's socket decides."""
    [(answered, error)], fired = await mounted_trigger_answers(sc, {}, [(peer, local, headers)])
    assert (answered, fired) == (status, 0)
    assert message in error


async def test_a_mounted_trigger_answers_this_machine_or_a_token_or_insecure(
    sc: SparkContext,
) -> None:
    loopback = [
        ("127.0.0.1", "127.0.0.1", {"Host": "127.0.0.1:8080"}),
        ("::1", "::1", {"Host": "[::1]:8080"}),
        ("::ffff:127.0.0.1", "::ffff:127.0.0.1", {"Host": "localhost"}),
        ("127.0.0.1", "192.0.2.2", {"Host": "service.example"}),  # not arrived on loopback
    ]
    answers, fired = await mounted_trigger_answers(sc, {}, loopback)
    assert answers == [(202, "")] * 4 and fired == 4
    remote = ("192.0.2.7", "192.0.2.2", {"Host": "service.example"})
    signed = ("192.0.2.7", "192.0.2.2", {"Host": "service.example", **AUTH})
    answers, fired = await mounted_trigger_answers(sc, {"token": "s3cret"}, [remote, signed])
    assert [status for status, _ in answers] == [401, 202] and fired == 1
    trusting = [remote, ("127.0.0.1", "127.0.0.1", REBOUND)]
    answers, fired = await mounted_trigger_answers(sc, {"insecure": True}, trusting)
    assert answers == [(202, "")] * 2 and fired == 2


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"v": NaN}', "NaN is not a JSON number"),
        (b"[Infinity]", "Infinity is not a JSON number"),
        (b'{"v": -Infinity}', "-Infinity is not a JSON number"),
        (b'{"v": 1e999}', "1e999, a number too large for a float"),
        (b"[-1E+400]", "-1E+400, a number too large for a float"),
        (b"[" + b"9" * 5000 + b"]", "an integer of more than 4300 digits"),
        (b"[" * 257 + b"]" * 257, "nested too deeply (more than 256)"),
        (b'{"a":' * 300 + b"1" + b"}" * 300, "nested too deeply (more than 256)"),
        (b"[" * 980 + b"]" * 980, "nested too deeply (more than 256)"),
    ],
)
async def test_bodies_the_console_could_not_show_are_refused(  # type: ignore[no-untyped-def]
    open_trigger, body, message
) -> None:
    ssc, base, seen = open_trigger
    async with aiohttp.ClientSession() as http, http.post(f"{base}/run", data=body) as response:
        assert response.status == 400
        assert message in (await response.json())["error"]
    nested = b"[" * 256 + b"]" * 256  # the documented limit itself is fine
    async with aiohttp.ClientSession() as http, http.post(f"{base}/run", data=nested) as response:
        assert response.status == 202
    await ssc.advanceTo(T0)
    assert len(seen) == 1


@pytest.mark.parametrize(
    ("encoding", "status", "message"),
    [
        ("gzip", 400, "unreadable body: it is not valid gzip data"),
        ("deflate", 400, "unreadable body: it is not valid deflate data"),
        ("br", 415, "Content-Encoding 'br' is not supported"),
        ("x-unknown", 415, "Content-Encoding 'x-unknown' is not supported"),
    ],
)
async def test_bad_compression_is_a_json_4xx(open_trigger, encoding, status, message) -> None:  # type: ignore[no-untyped-def]
    ssc, base, seen = open_trigger
    answer = await exchange(
        base,
        b"POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Connection: close\r\nContent-Encoding: " + encoding.encode() + b"\r\n"
        b"Content-Length: 12\r\n\r\nnot zipped!!",
    )
    assert answer.status == status and message in answer.json()["error"]
    assert answer.headers["server"] == "reactive-spark"
    zipped = gzip.compress(b'{"n": 1}')
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{base}/run", data=zipped, headers={"Content-Encoding": "gzip"}) as response,
    ):
        assert response.status == 202  # a body that is what it says is read
    bomb = gzip.compress(b"[" + b"0," * 600_000 + b"0]")
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{base}/run", data=bomb, headers={"Content-Encoding": "gzip"}) as response,
    ):
        assert response.status == 413  # decompressed within the body limit
    await ssc.advanceTo(T0)
    assert len(seen) == 1  # the valid gzip body only


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GE T /run HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: x\r\n\r\n",
        b"POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # TLS to a plain HTTP port
        b"POST /" + b"x" * 9000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",  # too long a line
    ],
)
async def test_requests_the_http_parser_rejects_get_a_json_400_and_fire_nothing(  # type: ignore[no-untyped-def]
    open_trigger, request_bytes, caplog
) -> None:
    """aiohttp's parser rejects these before any handler; HttpServer answers them in JSON. Each
    was also logged as an error with aiohttp's traceback, which any client could make fill
    the log: the client got its answer, and a debug line says what it sent."""
    ssc, base, seen = open_trigger
    caplog.set_level(logging.DEBUG)
    answer = await exchange(base, request_bytes + b"\r\n\r\n")
    assert answer.status == 400  # and the server closed the connection (exchange reads to EOF)
    assert answer.json()["error"].startswith("the request is not valid HTTP (")
    assert answer.headers["server"] == "reactive-spark"
    await ssc.advanceTo(T0)
    assert seen == []
    assert [r.getMessage() for r in caplog.records if r.levelno > logging.DEBUG] == []


@pytest.mark.parametrize(
    "raised", [RuntimeError("boom"), LineTooLong(b"a line", "8190")], ids=["error", "line"]
)
async def test_a_handler_that_raises_is_answered_500_and_logged_as_an_error(  # type: ignore[no-untyped-def]
    raised, caplog
) -> None:
    """Only the parser's rejections are the client's: a handler that raises is a 500 logged as
    an error with its traceback, also when what it raised is an HTTP parsing error of its own
    (a line too long read from a body)."""

    async def failing(request: web.Request) -> web.Response:
        raise raised

    app = web.Application()
    app.router.add_get("/", failing)
    server = HttpServer(app)
    port = await server.start("127.0.0.1", 0)
    try:
        answer = await exchange(f"http://127.0.0.1:{port}/", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    finally:
        await server.stop()
    assert answer.status == 500 and answer.json() == {"error": "Internal Server Error"}
    [logged] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert logged.exc_info is not None and logged.exc_info[1] is raised


async def test_a_host_that_cannot_be_resolved_is_named_at_start(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    rest = ssc.restServer("256.256.256.256", 0, "nowhere", token="t").post("/x")
    ssc.queueStream([]).bind(rest)
    with pytest.raises(ListenError, match=r"cannot listen on host '256\.256\.256\.256'"):
        await ssc.start()
    assert ssc.state == "stopped"


async def test_a_non_loopback_trigger_needs_a_token_or_insecure(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    public = ssc.restServer("0.0.0.0", 0, "public").post("/x")
    ssc.queueStream([]).bind(public)
    with pytest.raises(ListenError, match=r"refusing to listen on host '0\.0\.0\.0' without a"):
        await ssc.start()
    assert ssc.state == "stopped"
    with pytest.raises(InvalidArgumentError, match="insecure must be a bool, got 'yes'"):
        RestEventSource(ssc, "127.0.0.1", 0, "x", insecure="yes")  # type: ignore[arg-type]

    for options in ({"token": "t"}, {"insecure": True}):
        ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
        rest = RestEventSource(ssc, "0.0.0.0", 0, "open", **options).post("/x")  # type: ignore[arg-type]
        ssc.queueStream([]).bind(rest)
        await ssc.start()
        assert rest.port
        await ssc.stop(stopSparkContext=False)


async def test_a_body_the_hosts_middleware_read_reaches_the_trigger(sc: SparkContext) -> None:
    """A host middleware that reads the body (an audit log, a signature check) left the
    trigger an empty stream: it answered 202 and the job got `body=None`, invalid JSON was
    accepted too. The body aiohttp keeps for `request.read()` is the one parsed now; one
    read from `request.content` and not kept is a 500 saying so, never a silent None."""
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    rest = ssc.restServer(None, name="embedded").post("/run")
    out, seen = gather(ssc.queueStream([], default=["x"]))
    out.bind(rest)

    @web.middleware
    async def audit(request: web.Request, handler: Any) -> web.StreamResponse:
        if request.headers.get("X-Read") == "kept":
            await request.read()
        elif request.headers.get("X-Read") == "lost":
            await request.content.read()
        elif request.headers.get("X-Read") == "partly":
            await request.content.read(3)
        return await handler(request)  # type: ignore[no-any-return]

    host = web.Application(middlewares=[audit])
    host.add_subapp("/triggers", rest.app)
    await ssc.start()
    async with TestClient(TestServer(host)) as client:
        kept = {"X-Read": "kept", "Content-Type": "application/json"}
        ran = await client.post("/triggers/run", data=b'{"day": "2026-04-06"}', headers=kept)
        assert ran.status == 202, await ran.text()
        bad = await client.post("/triggers/run", data=b"{not json", headers=kept)
        assert bad.status == 400 and "error" in await bad.json()
        lost = {"X-Read": "lost", "Content-Type": "application/json"}
        gone = await client.post("/triggers/run", data=b'{"day": 1}', headers=lost)
        assert gone.status == 500 and "request.read()" in (await gone.json())["error"]
        partly = {"X-Read": "partly", "Content-Type": "application/json"}
        cut = await client.post("/triggers/run", data=b'{"day": 1}', headers=partly)
        assert cut.status == 500 and "request.read()" in (await cut.json())["error"]
        empty = await client.post("/triggers/run", headers=kept)
        assert empty.status == 202
        # a client waiting for 100 Continue: it comes before the middleware reads the body
        expecting = await asyncio.wait_for(
            client.post("/triggers/run", json={"n": 1}, headers=kept, expect100=True), 10
        )
        assert expecting.status == 202, await expecting.text()

        async def no_chunks() -> AsyncIterator[bytes]:
            return
            yield b""

        chunked = await client.post("/triggers/run", data=no_chunks(), headers=kept)
        assert chunked.status == 202, await chunked.text()  # empty: no body, none lost
    await ssc.advanceTo(T0)
    await ssc.stop(stopSparkContext=False)
    assert [event.body for event, _ in seen] == [{"day": "2026-04-06"}, None, {"n": 1}, None]


async def test_a_compressed_body_read_before_the_trigger_is_decompressed(
    sc: SparkContext,
) -> None:
    """On the trigger's own port bodies are decompressed by the trigger, within its limit:
    one a middleware of its application read first (an authenticator checking a signature)
    was parsed still compressed, a 400 "not valid JSON"."""
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    rest = ssc.restServer("127.0.0.1", 0, "own").post("/run")
    out, seen = gather(ssc.queueStream([], default=["x"]))
    out.bind(rest)

    @web.middleware
    async def signature(request: web.Request, handler: Any) -> web.StreamResponse:
        await request.read()
        return await handler(request)  # type: ignore[no-any-return]

    rest.app.middlewares.append(signature)
    await ssc.start()
    zipped = gzip.compress(b'{"n": 1}')
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"http://127.0.0.1:{rest.port}/run", data=zipped, headers={"Content-Encoding": "gzip"}
        ) as response,
    ):
        assert response.status == 202, await response.text()
    await ssc.advanceTo(T0)
    await ssc.stop(stopSparkContext=False)
    assert [event.body for event, _ in seen] == [{"n": 1}]


async def test_expect_is_answered_in_json_and_a_body_past_the_limit_is_never_asked_for(
    standalone,
) -> None:  # type: ignore[no-untyped-def]
    """aiohttp answered `Expect: 100-continue` at once, so a client declaring a body past the
    limit was told to upload it, then refused; an unknown expectation got a text/plain 417.
    The limit is checked first, and the 417 is JSON; a body within it is asked for, as
    before (a service's middleware may read it: that runs after)."""
    _, base, _ = standalone

    def head(length: int, expect: str = "100-continue") -> bytes:
        return (
            f"POST /jobs/report HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
            "\r\nConnection: close\r\nAuthorization: Bearer s3cret\r\n"
            f"Expect: {expect}\r\nContent-Length: {length}\r\n\r\n"
        ).encode()

    for request, status in [(head(1000), 413), (head(10, expect="200-ok"), 417)]:
        answer = await exchange(base, request)
        assert answer.status == status and "error" in answer.json(), answer.headers
    reader, writer = await asyncio.open_connection(*address(base))
    try:
        writer.write(head(8))
        await writer.drain()
        interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        assert interim.startswith(b"HTTP/1.1 100 Continue"), interim
        writer.write(b'{"n": 1}')
        answer = Answer(await asyncio.wait_for(reader.read(), 10))
        assert answer.status == 202, answer.body
    finally:
        writer.close()
