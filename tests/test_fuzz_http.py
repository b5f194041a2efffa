"""Hypothesis-made requests to the console and a REST trigger: none gets a 5xx, every refusal is
a JSON `{"error": ...}`, and nothing a refused request carried fires. Derandomized and bounded
so that it runs the same, in seconds, everywhere."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark import SparkContext

from reactive_spark import StreamingContext, Time, VirtualClock
from reactive_spark.sources.http import RAW_BODIES_KEY
from reactive_spark.web import BearerToken, create_app

T0 = Time(1_700_000_000_000)
TOKEN = "fuzz-token"

paths = st.sampled_from(
    [
        "/api/sources",
        "/api/sources/rerun/fire",
        "/api/sources/guarded/fire",
        "/api/sources/%C2%B2/fire",
        "/api/graph",
        "/api/events",
        "/api/batches",
        "/api/batches/0",
        "/api/batches/%C2%B2",
        "/api/batches/99999999999999999999",
        "/metrics",
        "/triggers/run",
        "/triggers/jobs%2Frun",
        "/triggers/%00",
        "/nothing",
    ]
)
queries = st.sampled_from(["", "?limit=5", "?limit=%C2%B2", "?limit=-1", "?limit=1e3", "?limit="])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
bodies = st.one_of(
    json_values.map(lambda value: json.dumps(value).encode()),  # NaN and Infinity too
    st.binary(max_size=64),
    st.integers(200, 400).map(lambda depth: b"[" * depth + b"]" * depth),
    st.just(b'{"path": "/run", "body": {"v": NaN}}'),
)
headers = st.fixed_dictionaries(
    {},
    optional={
        "Content-Type": st.sampled_from(
            ["application/json", "text/plain", "application/x-www-form-urlencoded", "x/y"]
        ),
        "Authorization": st.sampled_from(
            [f"Bearer {TOKEN}", f"bearer {TOKEN}", "Bearer", "Basic abc", "Bearer \u00e9"]
        ),
        "Origin": st.sampled_from(["http://evil.example", "null", "http://127.0.0.1"]),
        "Sec-Fetch-Site": st.sampled_from(["cross-site", "same-site", "same-origin", "none"]),
        "Content-Encoding": st.sampled_from(["gzip", "deflate", "identity", "x-zip"]),
        "Host": st.sampled_from(["evil.example", "localhost", "[::1]:1"]),
    },
)


def test_no_request_gets_a_server_error(sc: SparkContext) -> None:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    rerun = ssc.manualSource("rerun")
    guarded = ssc.restServer(None, name="guarded", token=TOKEN).post("/run")
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: None).bind(rerun).bind(guarded)
    console = create_app(ssc, auth=BearerToken(TOKEN))
    console.add_subapp("/triggers", guarded.app)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def run(coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result(timeout=60)

    async def serve() -> TestClient[Any, Any]:
        # served as Console and REST triggers serve themselves (sources.http_server)
        console[RAW_BODIES_KEY] = True
        server = TestServer(console)
        await server.start_server(auto_decompress=False)  # also starts the context
        client: TestClient[Any, Any] = TestClient(server)
        await client.start_server()
        return client

    client = run(serve())
    answers: list[int] = []

    @settings(
        max_examples=150,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "OPTIONS"]),
        path=paths,
        query=queries,
        body=bodies,
        sent=headers,
    )
    def one_request(method: str, path: str, query: str, body: bytes, sent: dict[str, str]) -> None:
        async def ask() -> tuple[int, str, str]:
            response = await client.request(
                method, path + query, data=body, headers=sent, skip_auto_headers=["Content-Type"]
            )
            return response.status, response.content_type, await response.text()

        status, content_type, text = run(ask())
        answers.append(status)
        assert status < 500, (method, path, query, body, sent, text)
        if status >= 400:
            assert content_type == "application/json", text
            assert isinstance(json.loads(text)["error"], str)

    try:
        one_request()
        run(ssc.advanceTo(T0))
        signed_in = {"Authorization": f"Bearer {TOKEN}"}

        async def fired() -> Any:
            return await (await client.get("/api/events?limit=1000", headers=signed_in)).json()

        for event in run(fired()):
            assert "NaN" not in json.dumps(event["fields"])  # refused bodies never fired
    finally:
        run(client.close())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
    assert len(answers) == 150 and {401, 404, 405, 415, 421} <= set(answers)
