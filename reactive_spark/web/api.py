"""The console's JSON API (docs/console.md); `openapi.py` describes it.

Every client error is a 4xx answer with `{"error": "..."}`; a handler never answers 500 for
what a client sent.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from aiohttp import web

from reactive_spark.errors import ContextStateError
from reactive_spark.events import Event, RestEvent
from reactive_spark.runtime import Runtime
from reactive_spark.sources.http import bearer_token, expect_within, json_error, offer
from reactive_spark.sources.manual import ManualEventSource
from reactive_spark.sources.rest import RestEventSource, valid_traceparent
from reactive_spark.web.auth import GRANT_KEY, Grant, refuse_without
from reactive_spark.web.history import EventMergedError, Record, redacted
from reactive_spark.web.keys import BODIES_KEY, CONTEXT_KEY, HISTORY_KEY, PREFIX_KEY
from reactive_spark.web.metrics import CONTENT_TYPE
from reactive_spark.web.values import json_response

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext

__all__ = ["add_routes"]

log = logging.getLogger(__name__)

MAX_LIMIT = 1000
DEFAULT_LIMIT = 100
#: The largest body `POST /api/sources/{name}/fire` takes.
MAX_FIRE_BODY = 1024 * 1024
#: Seconds between keep-alive comments on an idle server-sent-event stream.
KEEPALIVE = 15.0
_DIGITS = re.compile(r"[0-9]{1,18}")  # ASCII digits only: "²".isdigit() is true


def _number(raw: str) -> int | None:
    return int(raw) if _DIGITS.fullmatch(raw) else None


def _limit(request: web.Request) -> int:
    raw = request.query.get("limit", str(DEFAULT_LIMIT))
    limit = _number(raw)
    if limit is None or not 1 <= limit <= MAX_LIMIT:
        raise json_error(
            web.HTTPBadRequest, f"limit must be an integer from 1 to {MAX_LIMIT}, got {raw!r}"
        )
    return limit


def _shown(request: web.Request, records: list[Record]) -> list[Record]:
    """`records` as the viewer may see them: protected requests' data for the signed-in only."""
    if request[GRANT_KEY].authenticated:
        return records
    return [redacted(record) for record in records]


async def sources(request: web.Request) -> web.Response:
    """`GET /api/sources`: every source, what it fired, when it fires next, its catch-up."""
    return json_response(request.app[HISTORY_KEY].sources())


async def graph(request: web.Request) -> web.Response:
    """`GET /api/graph`: streams, their dependencies, bindings and outputs; the sources."""
    ssc = request.app[CONTEXT_KEY]
    return json_response(ssc.graph.describe(ssc.sources))


async def events(request: web.Request) -> web.Response:
    """`GET /api/events?limit=`: the latest events, newest first."""
    return json_response(_shown(request, request.app[HISTORY_KEY].events(_limit(request))))


async def batches(request: web.Request) -> web.Response:
    """`GET /api/batches?limit=`: the latest batches, newest first."""
    return json_response(_shown(request, request.app[HISTORY_KEY].batches(_limit(request))))


async def deadlines(request: web.Request) -> web.Response:
    """`GET /api/deadlines?limit=`: the latest missed deadlines (`expect`), newest first."""
    return json_response(request.app[HISTORY_KEY].deadlines(_limit(request)))


async def batch(request: web.Request) -> web.Response:
    """`GET /api/batches/{instanceId}`: an event's batch, its jobs, their errors."""
    raw = request.match_info["instanceId"]
    instance_id = _number(raw)
    if instance_id is None:
        raise json_error(
            web.HTTPBadRequest,
            f"instanceId must be a non-negative integer of at most 18 digits, got {raw!r}",
        )
    record = request.app[HISTORY_KEY].batch(instance_id)
    if record is None:
        raise json_error(web.HTTPNotFound, f"no event {raw} in the console's history")
    ssc = request.app[CONTEXT_KEY]
    if record["jobs"] and ssc.state == "active":  # once stopped, Spark is not asked
        record["jobs"] = await Runtime.of(ssc).run_blocking(_with_spark_jobs, ssc, record["jobs"])
    return json_response(_shown(request, [record])[0])


def _with_spark_jobs(ssc: StreamingContext, jobs: list[Record]) -> list[Record]:
    """`jobs` with their Spark jobs and the address of each one's page in Spark's UI.

    Spark's status tracker finds them by the job's own job group, as long as Spark remembers
    them (`spark.ui.retainedJobs`). Without Spark's UI, or if Spark cannot say (it stopped
    meanwhile), `jobs` as they are.
    """
    sc = ssc.sparkContext
    try:
        ui = sc.uiWebUrl
        if not ui:
            return jobs
        tracker = sc.statusTracker()
        return _linked(jobs, str(ui).rstrip("/"), tracker)
    except Exception:  # the batch is shown without links rather than not at all
        log.debug("no Spark jobs for the console", exc_info=True)
        return jobs


def _linked(jobs: list[Record], ui: str, tracker: Any) -> list[Record]:
    shown = []
    for job in jobs:
        group = job.get("sparkJobGroup")
        ids = sorted(tracker.getJobIdsForGroup(group)) if group else []
        links = [{"id": id_, "url": f"{ui}/jobs/job/?id={id_}"} for id_ in ids]
        shown.append({**job, "sparkJobs": links})
    return shown


async def fire(request: web.Request) -> web.Response:
    """`POST /api/sources/{name}/fire`: fire a REST or manual trigger; 202 with its status link.

    A manual source's event carries the JSON body as its value; a REST source's body is
    `{"path": ..., "body": ...}` (`path` may be left out when the source has one route). It
    needs the control scope; a token-protected REST trigger needs an authenticated one, or
    the trigger's own token (`Authorization: Bearer <it>`). A REST trigger's event continues
    the request's valid `traceparent` header, as a request to the trigger itself does.
    """
    ssc, history = request.app[CONTEXT_KEY], request.app[HISTORY_KEY]
    name = request.match_info["name"]
    source = next((s for s in ssc.sources if s.name == name), None)
    grant = request[GRANT_KEY]
    if isinstance(source, RestEventSource) and source.requiresToken:
        _allow_protected(source, grant, bearer_token(request))
    else:
        refuse_without(grant, "control")
    if source is None:
        raise json_error(web.HTTPNotFound, f"no event source named {name!r}")
    body = await request.app[BODIES_KEY].read(request, MAX_FIRE_BODY)
    if isinstance(source, ManualEventSource):
        event: Event = source.event(body)
    elif isinstance(source, RestEventSource):
        event = _rest_event(source, body, valid_traceparent(request.headers.get("traceparent")))
    else:
        raise json_error(
            web.HTTPConflict, f"source {name!r} is a {source.kind}: only REST and manual fire"
        )
    if not ssc.acceptingEvents:
        raise json_error(web.HTTPServiceUnavailable, "the StreamingContext is not running")
    numbered = history.wait_numbered(event)
    try:
        await offer(source, event, request)  # 503 with Retry-After past the bound (see `offer`)
        # posted, it runs: as a request to a REST trigger, wait until it is accepted (202),
        # however long the sources downstream take to make room, unless the context stops
        await numbered
    except EventMergedError as merged:  # it runs, as part of a later event: not to be fired again
        raise json_error(web.HTTPConflict, str(merged)) from None
    except ContextStateError as stopped:
        raise json_error(web.HTTPServiceUnavailable, str(stopped)) from None
    finally:
        history.stop_waiting(event)
        if numbered.done() and not numbered.cancelled():
            numbered.exception()  # told above, or never waited for (`offer` refused first)
    log.info("the console fired %s (event %d)", source.name, event.instanceId)
    prefix = request.app[PREFIX_KEY]
    answer = {
        "source": source.name,
        "index": event.index,
        "time": event.time.milliseconds,
        "instanceId": event.instanceId,
        "status": f"{prefix}/api/batches/{event.instanceId}",
    }
    return json_response(answer, status=202)


def _allow_protected(source: RestEventSource, grant: Grant, token: str | None) -> None:
    if source.acceptsToken(token) or (grant.authenticated and "control" in grant.scopes):
        return
    if not grant.authenticated and not grant.scopes:
        refuse_without(grant, "control")  # 401: sign in
    why = (
        "a signed-in viewer with the control scope"
        if grant.authenticated
        else "authentication, and this console has none configured"
    )
    raise json_error(
        web.HTTPForbidden,
        f"REST trigger {source.name!r} is token-protected: firing it from the console needs "
        f"{why} (or the trigger's own token: Authorization: Bearer <token>)",
    )


def _rest_event(source: RestEventSource, body: Any, traceparent: str | None) -> Event:
    if body is not None and not isinstance(body, dict):
        raise json_error(web.HTTPBadRequest, 'body must be an object: {"path": ..., "body": ...}')
    fields = body or {}
    routes = source.routes
    path = fields.get("path")
    if path is None and len(routes) == 1:
        path = next(iter(routes))
    if not isinstance(path, str) or path not in routes:
        raise json_error(web.HTTPBadRequest, f"path must be one of {sorted(routes)}, got {path!r}")
    method = "POST" if "POST" in routes[path] else sorted(routes[path])[0]
    now = source.context.clock.now()
    return RestEvent(
        source, None, now, method, path, {}, fields.get("body"), traceparent=traceparent
    )


async def stream(request: web.Request) -> web.StreamResponse:
    """`GET /api/events/stream`: server-sent events of every event, batch and job transition.

    It ends when the console stops; a viewer that does not read is dropped (see `live`).
    """
    history = request.app[HISTORY_KEY]
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    await response.prepare(request)

    def abort() -> None:
        if request.transport is not None:
            request.transport.abort()

    history.listen_live()
    subscriber = history.live.subscribe(request[GRANT_KEY].authenticated, abort)
    try:
        await response.write(b": connected\n\n")
        while (frames := await subscriber.next(KEEPALIVE)) is not None:
            subscriber.writing(True)
            await response.write(frames or b": keep-alive\n\n")
            subscriber.writing(False)
    except ConnectionResetError:
        pass  # the viewer left, or was dropped
    finally:
        history.live.unsubscribe(subscriber)
    return response


async def metrics(request: web.Request) -> web.Response:
    """`GET /metrics`: Prometheus' text format."""
    body = request.app[HISTORY_KEY].metrics.render()
    content_type, _, charset = CONTENT_TYPE.partition("; charset=")
    return web.Response(body=body, content_type=content_type, charset=charset or None)


def add_routes(app: web.Application) -> None:
    """The API's routes (their names say which scope they need: `auth.CONTROL_ROUTES`)."""
    app.router.add_get("/api/sources", sources, name="sources")
    app.router.add_post(
        "/api/sources/{name}/fire", fire, name="fire", expect_handler=expect_within(MAX_FIRE_BODY)
    )
    app.router.add_get("/api/graph", graph, name="graph")
    app.router.add_get("/api/events", events, name="events")
    # no HEAD: a stream has no end for headers alone to stand for
    app.router.add_get("/api/events/stream", stream, name="stream", allow_head=False)
    app.router.add_get("/api/batches", batches, name="batches")
    app.router.add_get("/api/batches/{instanceId}", batch, name="batch")
    app.router.add_get("/api/deadlines", deadlines, name="deadlines")
    app.router.add_get("/metrics", metrics, name="metrics")
