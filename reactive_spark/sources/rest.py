"""REST triggers: every accepted HTTP request fires a `RestEvent(method, path, query, body)`.

The source owns an aiohttp application (`source.app`). It serves it on its own port
(`host`/`port`), or, with `host=None`, only as a sub-application that a service mounts:
`service.add_subapp("/triggers", source.app)`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import TYPE_CHECKING, Any

from aiohttp import web

from reactive_spark.errors import (
    InvalidArgumentError,
    ListenError,
)
from reactive_spark.events import Event, EventSource, RestEvent
from reactive_spark.sources.http import (
    BodyReads,
    bearer_token,
    cross_site,
    expect_within,
    host_name,
    is_loopback,
    json_error,
    json_errors,
    offer,
    require_token,
    same_token,
    stopped_answer,
)
from reactive_spark.sources.http_server import HttpServer
from reactive_spark.sources.peers import arrived_on_loopback, from_this_machine
from reactive_spark.time import Time

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext

__all__ = ["SOURCE_KEY", "RestEventSource", "json_errors", "require_reachable_path"]

log = logging.getLogger(__name__)

SOURCE_KEY: web.AppKey[RestEventSource] = web.AppKey("reactive_spark_rest_source")
DEFAULT_MAX_BODY = 1024 * 1024
# W3C trace context: version-traceid-parentid-flags, lowercase hex
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}")


class RestEventSource(EventSource):
    """An HTTP trigger: every accepted request fires on this one source.

    `.get(path)` / `.post(path)` add routes (chainable). An accepted request is answered `202`
    with `{"source", "index", "time", "instanceId"}`.

    Bad requests fire nothing and get a JSON `{"error": ...}`: 401 without the right
    `Authorization: Bearer <token>` (when a token is set; the scheme in any case), 404 for an
    unknown path (an encoded slash, `%2F`, is not a separator), 405 for a method the path does
    not take, 413 for a body over `maxBodySize`, 408 for a body slower than
    `http.BODY_TIMEOUT`, 400 for a body that is not strict JSON (NaN, Infinity, nesting deeper
    than `http.MAX_JSON_DEPTH`, bad compression). Without a token, a request a browser marks
    as coming from another site's page is refused (403), a client on another machine is
    refused (403: its connection's address is not a loopback one), and a request that arrived
    on a loopback address must be addressed to a loopback name (`Host`; else 421), against
    DNS rebinding; this holds on its own port and mounted in a service (`host=None`), where
    each request's connection says where it came from. Listening on another address needs a
    token, or `insecure=True` (`start()` refuses otherwise). `insecure=True` lets in any
    client but a browser's cross-site request (and, on a loopback port of its own, a request
    for another `Host` name).

    Examples:
        >>> rest = ssc.restServer("127.0.0.1", 4140, "triggers").post("/jobs/report")
        >>> report = rest.filter(lambda e: e.path == "/jobs/report")
        >>> job = ssc.queueStream([], default=[1]).count().pprint().bind(report)
    """

    kind = "rest"
    defaultOverflow = "reject"  # the caller is told: 503 with Retry-After

    def __init__(
        self,
        context: StreamingContext,
        host: str | None = "127.0.0.1",
        port: int = 4140,
        name: str = "rest",
        *,
        token: str | None = None,
        maxBodySize: int = DEFAULT_MAX_BODY,
        insecure: bool = False,
    ) -> None:
        if host is not None and (not isinstance(host, str) or not host):
            raise InvalidArgumentError(f"host must be a non-empty str or None, got {host!r}")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise InvalidArgumentError(f"port must be an int from 0 to 65535, got {port!r}")
        token = require_token(token)
        if isinstance(maxBodySize, bool) or not isinstance(maxBodySize, int) or maxBodySize <= 0:
            raise InvalidArgumentError(f"maxBodySize must be a positive int, got {maxBodySize!r}")
        if not isinstance(insecure, bool):
            raise InvalidArgumentError(f"insecure must be a bool, got {insecure!r}")
        super().__init__(context, name)
        self.host = host
        self.port = port
        self._token = token
        self.insecure = insecure
        self.maxBodySize = maxBodySize
        self._routes: dict[str, set[str]] = {}
        self._accepted: dict[int, asyncio.Future[Event]] = {}
        self._bodies = BodyReads()  # bodies still arriving (see `stop`)
        self._server: HttpServer | None = None
        self.app = web.Application(middlewares=[json_errors])
        """The aiohttp application answering the routes: with `host=None`, mount it in a
        service's own (`service.add_subapp("/triggers", rest.app)`)."""
        self.app[SOURCE_KEY] = self
        self.app.router.add_route(
            "*", "/{tail:.*}", self._handle, expect_handler=expect_within(maxBodySize)
        )
        self.addListener(self._answer)  # first: the 202 goes out before other listeners run

    def overflow(self, maxQueued: int | None = None, policy: str | None = None) -> EventSource:
        """As `EventSource.overflow`; a REST trigger's policy is `"reject"` or `"block"`.

        Each request waits for its own event (202 means it runs), so its event is refused
        (503 with `Retry-After`) or waited for, never merged or dropped behind its back. Under
        `"block"` requests wait for room first come, first served, at most `maxQueued` of
        them: one more is refused (503 with `Retry-After`).

        Examples:
            >>> rest = ssc.restServer(None, name="jobs").post("/run").overflow(100, "block")
            >>> rest.overflowPolicy
            'block'
        """
        if policy is not None and policy not in ("reject", "block"):
            raise InvalidArgumentError(
                f"policy of a REST trigger must be 'reject' or 'block', got {policy!r}: a "
                "request answered 202 must run",
            )
        return super().overflow(maxQueued, policy)

    # -- routes ------------------------------------------------------------------------------
    def _route(self, method: str, path: str) -> RestEventSource:
        require_reachable_path(path)
        self._runtime.require_not_started(f"add route {method} {path}")
        self._routes.setdefault(path, set()).add(method)
        return self

    def get(self, path: str) -> RestEventSource:
        """Accept `GET path`; returns the source."""
        return self._route("GET", path)

    def post(self, pathOrEvent: str | Event) -> Any:
        """With a path: accept `POST path` and return the source. With an event: fire it."""
        if isinstance(pathOrEvent, Event):
            EventSource.post(self, pathOrEvent)
            return None
        return self._route("POST", pathOrEvent)

    @property
    def routes(self) -> dict[str, set[str]]:
        """Accepted methods per path."""
        return {path: set(methods) for path, methods in self._routes.items()}

    @property
    def requiresToken(self) -> bool:
        """Whether requests need `Authorization: Bearer <token>`."""
        return self._token is not None

    def acceptsToken(self, token: str | None) -> bool:
        """Whether `token` is this source's token (compared in constant time)."""
        return self._token is not None and same_token(token, self._token)

    # -- serving -----------------------------------------------------------------------------
    @property
    def _answers_this_machine_only(self) -> bool:
        """Whether requests without a token must come from, and name, this machine.

        Unless `insecure`: then only on a port of its own on a loopback address, where no
        other machine reaches it anyway and the `Host` check is what stops DNS rebinding.
        Mounted (`host=None`), it cannot know where the service listens: each request's
        socket says where it came from and arrived.
        """
        return not self.insecure or (self.host is not None and is_loopback(self.host))

    def _refuse_strangers(self, request: web.Request) -> None:
        if self._token is not None:
            if not self.acceptsToken(bearer_token(request)):
                raise json_error(
                    web.HTTPUnauthorized,
                    "missing or wrong bearer token",
                    headers={"WWW-Authenticate": "Bearer"},
                )
            return
        if self._answers_this_machine_only:
            if not from_this_machine(request):
                raise json_error(
                    web.HTTPForbidden,
                    f"the REST trigger {self.name!r} has no token: it answers clients on this "
                    "machine only (give it a token, or insecure=True on a network you trust)",
                )
            if arrived_on_loopback(request) and not is_loopback(host_name(request.host)):
                raise json_error(
                    web.HTTPMisdirectedRequest,
                    f"Host {request.host!r} is not a loopback name: this server only answers "
                    "requests addressed to 127.0.0.1, localhost or ::1",
                )
        reason = cross_site(request)
        if reason is not None:
            raise json_error(
                web.HTTPForbidden, f"refused a cross-site request from a browser ({reason})"
            )

    async def _handle(self, request: web.Request) -> web.Response:
        self._refuse_strangers(request)
        path = "/" + request.match_info["tail"]
        methods = self._routes.get(path)
        if methods is None:
            raise json_error(web.HTTPNotFound, f"no trigger at {path}")
        if "%2f" in request.rel_url.raw_path.lower():  # `/jobs%2Fx` is not `/jobs/x`
            raise json_error(web.HTTPNotFound, f"no trigger at {request.rel_url.raw_path}")
        if request.method not in methods:
            raise web.HTTPMethodNotAllowed(
                request.method,
                sorted(methods),
                text=json.dumps({"error": f"{path} takes {', '.join(sorted(methods))}"}),
                content_type="application/json",
            )
        body = await self._read_body(request)
        if not self._runtime.accepting:
            state = "stopped" if self._runtime.state == "active" else self._runtime.state
            raise json_error(web.HTTPServiceUnavailable, f"the StreamingContext is {state}")
        event = RestEvent(
            self,
            None,
            self.context.clock.now(),
            request.method,
            path,
            dict(request.query),
            body,
            traceparent=valid_traceparent(request.headers.get("traceparent")),
        )
        accepted = asyncio.get_running_loop().create_future()
        self._accepted[id(event)] = accepted
        try:
            await offer(self, event, request)
            await accepted
        finally:
            self._accepted.pop(id(event), None)
            if accepted.done() and not accepted.cancelled():
                accepted.exception()  # a stop's 503 is answered once, whichever way it came
        fields = {key: event.describe()[key] for key in ("source", "index", "time", "instanceId")}
        fields["status"] = f"{self._runtime.console_prefix}/api/batches/{event.instanceId}"
        return web.json_response(fields, status=202)

    async def _read_body(self, request: web.Request) -> Any:
        """The request's JSON body; a stop meanwhile answers 503 at once (see `stop`)."""
        return await self._bodies.read(request, self.maxBodySize)

    def _answer(self, event: Event) -> None:
        """Answer the request whose event was accepted (202)."""
        accepted = self._accepted.get(id(event))
        if accepted is not None and not accepted.done():
            accepted.set_result(event)

    def _refuse_unaccepted(self) -> None:
        """Answer 503 to the requests whose events were not accepted: they never will be."""
        for accepted in self._accepted.values():
            if not accepted.done():
                accepted.set_exception(stopped_answer())

    async def start(self) -> None:
        """Serve on `host:port` (unless `host` is None: then only mounted in another app).

        Raises:
            ListenError: `host` does not resolve, `port` cannot be bound (names both), or
                `host` is not a loopback address and the source has no token (and is not
                `insecure`).
        """
        # a crash of the scheduler drops what waits to be accepted
        self._runtime.when_closed(self._refuse_unaccepted)
        if self.host is None:
            return
        if not is_loopback(self.host) and self._token is None and not self.insecure:
            raise ListenError(
                f"refusing to listen on host {self.host!r} without a token: it is not a "
                "loopback address (give the triggers a token, or insecure=True on a network "
                "you trust)"
            )
        if not is_loopback(self.host) and self._token is None:
            log.warning("REST triggers of %r take requests from anyone (insecure)", self.name)
        self._server = HttpServer(self.app)
        self.port = await self._server.start(self.host, self.port)
        log.info("REST triggers of %r on http://%s:%d", self.name, self.host, self.port)

    async def stop(self) -> None:
        """Stop serving; requests whose events were not accepted get 503 (they never run).

        So do requests whose body is still arriving, at once (also mounted in a service, whose
        shutdown would wait for them). Other requests still running on the trigger's own port
        are cancelled after `http_server.SHUTDOWN_TIMEOUT` seconds: no client can make a stop
        wait.
        """
        self._bodies.stop()  # bodies still arriving hold no stop, nor a service's shutdown
        self._refuse_unaccepted()
        if self._server is not None:
            await self._server.stop()
            self._server = None

    def eventFromRecord(self, fields: dict[str, Any]) -> RestEvent:
        """The `RestEvent` a checkpoint recorded."""
        return RestEvent(
            self,
            fields["index"],
            Time(fields["time"]),
            fields["method"],
            fields["path"],
            fields.get("query"),
            fields.get("body"),
            fields.get("instanceId"),
        )

    def toProduct(self) -> tuple[Any, ...]:
        """`(host, port, name)`."""
        return (self.host, self.port, self.name)


def require_reachable_path(path: object) -> str:
    """Return `path` if a request can reach it as a route, else raise naming it.

    A route is an absolute, normalised path: no query string or fragment, no `.` or `..`
    segments, no empty segments, no percent-escapes or control characters (requests arrive
    decoded and normalised, so such a route would never match).

    Examples:
        >>> require_reachable_path("/jobs/report")
        '/jobs/report'
        >>> require_reachable_path("/q?x=1")
        Traceback (most recent call last):
        ...
        reactive_spark.errors.InvalidArgumentError: path '/q?x=1' can never match a request: ...
    """
    if not isinstance(path, str) or not path.startswith("/"):
        raise InvalidArgumentError(f"path must be a str starting with '/', got {path!r}")
    segments = path[1:].split("/")
    problem = None
    if any(char in path for char in "?#"):
        problem = "a query string or fragment is not part of the path"
    elif "%" in path:
        problem = "requests are matched decoded; write the path without percent-escapes"
    elif any(ord(char) < 32 or ord(char) == 127 for char in path):
        problem = "it holds control characters"
    elif any(segment in (".", "..") for segment in segments):
        problem = "'.' and '..' segments are normalised away before routing"
    elif any(not segment for segment in segments[:-1]):
        problem = "it has an empty segment ('//')"
    if problem is not None:
        raise InvalidArgumentError(f"path {path!r} can never match a request: {problem}")
    return path


def valid_traceparent(header: str | None) -> str | None:
    """A W3C `traceparent` header's 55 characters if it is valid, else None (kept on the event).

    Version (2 hex digits, not `ff`), trace id (32, not all zero), parent id (16, not all
    zero), flags (2), lowercase; version `00` is exactly 55 characters, a later one may add
    `-...`, which is not kept. Traced batches continue the caller's trace from it.

    Examples:
        >>> valid_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
        >>> valid_traceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01") is None
        True
    """
    if header is None or len(header) < 55:
        return None
    match = _TRACEPARENT.fullmatch(header, 0, 55)
    if match is None:
        return None
    version, trace_id, parent_id = match.groups()
    if version == "ff" or trace_id == "0" * 32 or parent_id == "0" * 16:
        return None
    if len(header) > 55 and (version == "00" or header[55] != "-"):
        return None
    return header[:55]
