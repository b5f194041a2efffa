"""What a viewer who has not signed in sees of a token-protected REST trigger's requests: not
their query, body or anything derived from them, also through the operators on the trigger
(`filter`, `map`, chains, `join`), in events, batches and the live stream alike; a signed-in
viewer sees all of it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from pyspark import SparkContext

from reactive_spark import Seconds, StreamingContext, Time, VirtualClock
from reactive_spark.web import BearerToken, create_app

T0 = Time.fromDatetime(datetime(2026, 4, 6, tzinfo=UTC))
JSON = {"Content-Type": "application/json"}
CONSOLE_TOKEN = "console-token"
TRIGGER_TOKEN = "trigger-token"
SECRET = "s3-hidden"
ACCOUNT = "zebra"
SIGNED_IN = {"Authorization": f"Bearer {CONSOLE_TOKEN}"}
#: What stands for a hidden field.
HIDDEN = "(hidden: sign in"
#: The operators on the protected trigger: the name of each one's source.
KINDS = {"filter": "passed", "map": "bodies", "chain": "chained", "join": "paired"}
Client = TestClient[Any, Any]


@dataclass
class Scene:
    ssc: StreamingContext
    client: Client


@pytest.fixture
async def scene(sc: SparkContext) -> AsyncIterator[Scene]:
    """A protected trigger with operators bound to an output, an open and a signed-in console."""
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    guarded = ssc.restServer(None, name="guarded", token=TRIGGER_TOKEN).post("/run")
    rerun = ssc.manualSource("rerun")
    derived = [
        guarded.filter(lambda e: True, name=KINDS["filter"]),
        guarded.map(lambda e: e.body, name=KINDS["map"]),
        guarded.filter(lambda e: True).map(lambda e: {"seen": e.body}, name=KINDS["chain"]),
        guarded.join(rerun, Seconds(60), name=KINDS["join"]),
        rerun.map(lambda e: e.value, name="rerun-values"),  # type: ignore[attr-defined]
    ]
    output = ssc.queueStream([], default=["x"]).foreachRDD(lambda rdd: None)
    for source in derived:
        output.bind(source)
    service = web.Application()
    service.add_subapp("/open", create_app(ssc))
    service.add_subapp("/signed", create_app(ssc, auth=BearerToken(CONSOLE_TOKEN)))
    service.add_subapp("/triggers", guarded.app)
    async with TestClient(TestServer(service)) as client:
        yield Scene(ssc, client)
    await ssc.stop(stopSparkContext=False)


async def fire(scene: Scene) -> None:
    """An open value on `rerun`, then a protected request (joined with it), both at T0."""
    opened = await scene.client.post("/open/api/sources/rerun/fire", json={"n": 7}, headers=JSON)
    assert opened.status == 202, await opened.text()
    posted = await scene.client.post(
        f"/triggers/run?account={ACCOUNT}",
        json={"secret": SECRET},
        headers={"Authorization": f"Bearer {TRIGGER_TOKEN}"},
    )
    assert posted.status == 202, await posted.text()
    await scene.ssc.advanceTo(T0)


async def get(client: Client, path: str, **headers: str) -> Any:
    response = await client.get(path, headers=headers)
    assert response.status == 200, await response.text()
    return await response.json()


def nested(fields: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """`fields` and the fields of every event it derives from."""
    yield fields
    for key in ("parent", "left", "right"):
        if isinstance(fields.get(key), dict):
            yield from nested(fields[key])


def assert_hidden(record: dict[str, Any]) -> None:
    """An event record with nothing of the request in it, but where and when it fired."""
    text = json.dumps(record)
    assert SECRET not in text and ACCOUNT not in text
    assert record["protected"]
    request = None
    for fields in nested(record["fields"]):
        for key in ("query", "body", "value"):
            assert key not in fields or fields[key].startswith(HIDDEN), (key, fields)
        if fields["source"] == "guarded":
            request = fields
    assert request is not None and request["path"] == "/run" and request["method"] == "POST"
    assert request["body"].startswith(HIDDEN) and request["query"].startswith(HIDDEN)


def assert_full(record: dict[str, Any], kind: str) -> None:
    """An event record with the request's query and body, and what the operator made of it."""
    [request] = [f for f in nested(record["fields"]) if f["source"] == "guarded"]
    assert request["body"] == {"secret": SECRET}
    assert request["query"] == {"account": ACCOUNT}
    if kind == "map":
        assert record["fields"]["value"] == {"secret": SECRET}
    if kind == "chain":
        assert record["fields"]["value"] == {"seen": {"secret": SECRET}}
    if kind == "join":
        assert record["fields"]["right"]["value"] == {"n": 7}


def one(records: list[dict[str, Any]], source: str) -> dict[str, Any]:
    [record] = [r for r in records if r["source"] == source]
    return record


@pytest.mark.parametrize("kind", KINDS)
async def test_events_of_operators_on_a_protected_trigger(scene: Scene, kind: str) -> None:
    await fire(scene)
    name = KINDS[kind]
    assert_hidden(one(await get(scene.client, "/open/api/events"), name))
    assert_full(one(await get(scene.client, "/signed/api/events", **SIGNED_IN), name), kind)


@pytest.mark.parametrize("kind", KINDS)
async def test_batches_of_operators_on_a_protected_trigger(scene: Scene, kind: str) -> None:
    await fire(scene)
    name = KINDS[kind]
    summary = one(await get(scene.client, "/open/api/batches"), name)
    assert summary["status"] == "succeeded"
    assert SECRET not in json.dumps(summary) and ACCOUNT not in json.dumps(summary)
    assert_hidden(summary["event"])
    batch = await get(scene.client, f"/open/api/batches/{summary['instanceId']}")
    assert SECRET not in json.dumps(batch) and ACCOUNT not in json.dumps(batch)
    assert_hidden(batch["event"])
    signed = one(await get(scene.client, "/signed/api/batches", **SIGNED_IN), name)
    assert_full(signed["event"], kind)
    batch = await get(scene.client, f"/signed/api/batches/{signed['instanceId']}", **SIGNED_IN)
    assert_full(batch["event"], kind)


async def subscribe(client: Client, path: str, **headers: str) -> Any:
    """The live stream at `path`, once the console has subscribed it (it said so)."""
    stream = await client.get(path, headers=headers)
    assert stream.status == 200, await stream.text()
    assert await stream.content.readline() == b": connected\n"
    return stream


async def read_until_done(stream: Any, source: str) -> list[tuple[str, Any]]:
    """The stream's messages until `source`'s batch succeeded (all of it was published)."""
    buffered = b""
    messages: list[tuple[str, Any]] = []
    async with asyncio.timeout(120):  # a hang fails the test, it does not pace it
        while not any(
            kind == "batch" and data["source"] == source and data["status"] == "succeeded"
            for kind, data in messages
        ):
            buffered += await stream.content.readany()
            *frames, buffered = buffered.split(b"\n\n")
            for text in frames:
                lines = dict(line.split(": ", 1) for line in text.decode().split("\n") if line)
                if "event" in lines:
                    messages.append((lines["event"], json.loads(lines["data"])))
    stream.close()
    return messages


@pytest.mark.parametrize("kind", KINDS)
async def test_the_live_stream_of_operators_on_a_protected_trigger(scene: Scene, kind: str) -> None:
    opened = await subscribe(scene.client, "/open/api/events/stream")
    signed = await subscribe(scene.client, "/signed/api/events/stream", **SIGNED_IN)
    await fire(scene)
    name = KINDS[kind]
    hidden = await read_until_done(opened, name)
    assert SECRET not in json.dumps(hidden) and ACCOUNT not in json.dumps(hidden)
    assert_hidden(one([data for k, data in hidden if k == "event"], name))
    batches = [data for k, data in hidden if k == "batch" and data["source"] == name]
    assert [batch["status"] for batch in batches] == ["planned", "running", "succeeded"]
    for batch in batches:
        assert_hidden(batch["event"])
    full = await read_until_done(signed, name)
    assert_full(one([data for k, data in full if k == "event"], name), kind)
    for k, data in full:
        if k == "batch" and data["source"] == name:
            assert_full(data["event"], kind)


async def test_operators_on_an_open_source_stay_in_view(scene: Scene) -> None:
    await fire(scene)
    values = one(await get(scene.client, "/open/api/events"), "rerun-values")
    assert not values["protected"]
    assert values["fields"]["value"] == {"n": 7} == values["fields"]["parent"]["value"]
