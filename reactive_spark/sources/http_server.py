"""Serving an aiohttp application on a port so that no client can hold it: REST triggers, console.

- A connection that has not sent a whole request head within `IDLE_TIMEOUT` seconds (or sits
  idle that long between requests) is closed; bodies have `http.BODY_TIMEOUT`.
- `stop()` gives running requests `SHUTDOWN_TIMEOUT` seconds, then cancels them and aborts
  every connection still open: one whose client does not read its answers would otherwise
  stay open, and on Python 3.12+ hold `stop()` (`asyncio.Server.wait_closed` waits for every
  connection). The rest of a refused body is read for `LINGERING_TIME` seconds at most
  (aiohttp's default is 10).
- Bodies are decompressed by `http.read_json` (gzip, deflate; bounded by the body limit), not
  by aiohttp's parser, so that a body that is not what its `Content-Encoding` says gets a JSON
  400 like every other client error.
- Every answer says `Server: reactive-spark`, without versions, and is JSON: also a request
  aiohttp's HTTP parser rejects before any application code runs (a malformed request line or
  header) gets `{"error": "the request is not valid HTTP (...)"}` with its 400, the connection
  closed. Connections are served by a `web.Server` whose protocol, a `web.RequestHandler`,
  answers `handle_error` so; the application's handler and request factory are the ones its
  `AppRunner` made, so middlewares, signals and the lifecycle are aiohttp's.

Examples:
    ```python
    # a fragment, inside a coroutine; app is an aiohttp web.Application
    server = HttpServer(app)
    port = await server.start("127.0.0.1", 0)
    await server.stop()
    ```
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from reactive_spark.errors import ListenError
from reactive_spark.sources.http import RAW_BODIES_KEY, SERVER

__all__ = [
    "IDLE_TIMEOUT",
    "SHUTDOWN_TIMEOUT",
    "HttpServer",
    "JsonErrorHandler",
    "JsonErrorServer",
    "server_header",
]

log = logging.getLogger(__name__)

#: Seconds a connection may take to send a request head, or stay idle between requests.
IDLE_TIMEOUT = 15.0
#: Seconds running requests get to finish when the server stops; then they are cancelled.
SHUTDOWN_TIMEOUT = 1.0
#: Seconds the rest of a refused body is still read (so the client sees the answer), at most.
LINGERING_TIME = 1.0
#: Connections the kernel holds for the server before it accepts them (asyncio's default).
BACKLOG = 128


async def server_header(request: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare` signal: `Server: reactive-spark` instead of aiohttp's version."""
    response.headers["Server"] = SERVER


class JsonErrorHandler(web.RequestHandler):
    """aiohttp's HTTP protocol, answering what it cannot hand to the application in JSON.

    `handle_error` answers requests the parser rejects (400) and handlers that raised (500);
    aiohttp's own answer is `text/plain` (echoing the request line) with its version. A
    rejected request is the client's error, answered: it is logged in one debug line, not as
    an error with a traceback that any client could make fill the log.
    """

    __slots__ = ("_answering",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._answering = 500  # the status `handle_error` answers with

    def log_exception(self, *args: Any, **kw: Any) -> None:
        """Log what `handle_error` reports: a handler's exception as aiohttp does (an error)."""
        exc = kw.get("exc_info")
        if self._answering < 500:
            said = exc.message if isinstance(exc, HttpProcessingError) else exc
            log.debug("answered %d to a request that is not valid HTTP: %r", self._answering, said)
            return
        super().log_exception(*args, **kw)

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """`{"error": ...}` with aiohttp's status; logged, and closing, as aiohttp does."""
        self._answering = status
        plain = super().handle_error(request, status, exc, message)  # logs; raises if sent
        if plain.status < 500 and exc is not None:
            error = f"the request is not valid HTTP ({type(exc).__name__})"
        else:
            error = HTTPStatus(plain.status).phrase
        answer = web.json_response({"error": error}, status=plain.status)
        answer.headers["Server"] = SERVER
        answer.force_close()
        return answer


class JsonErrorServer(web.Server):
    """aiohttp's low-level server of `template`'s application, with `JsonErrorHandler`s.

    `options` are the protocol's (`keepalive_timeout`, `lingering_time`, ...).
    """

    def __init__(self, template: web.Server, **options: Any) -> None:
        super().__init__(
            template.request_handler, request_factory=template.request_factory, **options
        )
        self.protocol_options = options
        # every connection until it is lost: `shutdown` forgets them while some are still open
        self._open: dict[web.RequestHandler, asyncio.Transport] = {}

    def connection_made(self, handler: web.RequestHandler, transport: asyncio.Transport) -> None:
        """A client connected (aiohttp's protocol tells its server)."""
        super().connection_made(handler, transport)
        self._open[handler] = transport

    def connection_lost(
        self, handler: web.RequestHandler, exc: BaseException | None = None
    ) -> None:
        """A client's connection ended."""
        self._open.pop(handler, None)
        super().connection_lost(handler, exc)

    def abort_connections(self) -> None:
        """Close every connection still open at once, dropping what its client did not read."""
        for transport in list(self._open.values()):
            transport.abort()

    def __call__(self) -> web.RequestHandler:
        """A protocol for a new connection (what `loop.create_server` calls)."""
        return JsonErrorHandler(self, loop=asyncio.get_running_loop(), **self.protocol_options)


class HttpServer:
    """`app` served on a port with bounded timeouts and JSON parser errors (see module)."""

    def __init__(self, app: web.Application) -> None:
        app.on_response_prepare.append(server_header)
        app[RAW_BODIES_KEY] = True  # read_json decompresses: bad bodies get JSON errors
        self._runner = web.AppRunner(app)  # the application's lifecycle; not its connections
        self._connections: JsonErrorServer | None = None  # kept: a late connection needs it
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int | None:
        """The port it listens on, once started."""
        if self._server is None or not self._server.sockets:
            return None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self, host: str, port: int, *, attempts: int = 1) -> int:
        """Listen on `host:port` (or, when taken, the next of `attempts` ports); the port.

        The port is bound and listened on before the application starts (a console's starts
        its context), so a port that cannot be had stops it first; connections wait in the
        backlog and are served once it has started.

        Raises:
            ListenError: `host` does not resolve, or no port could be bound; names them.
        """
        loop = asyncio.get_running_loop()
        tries = attempts if port else 1
        attempt = 0
        while True:
            wanted = port + attempt if port else 0
            try:
                server = await _listening(loop, self._connection, host, wanted)
            except socket.gaierror as exc:
                raise ListenError(f"cannot listen on host {host!r}: {exc.strerror}") from exc
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE and attempt < tries - 1:
                    attempt += 1
                    continue
                taken = ", all taken" if exc.errno == errno.EADDRINUSE else ""
                where, ports = (
                    (f"{port}-{wanted}", f"ports {port} to {wanted}{taken}")
                    if attempt
                    else (f"{wanted}", f"port {wanted}")
                )
                raise ListenError(
                    f"cannot listen on {host}:{where} (host {host!r}, {ports}): "
                    f"{exc.strerror or exc}"
                ) from exc
            break
        try:
            await self._runner.setup()
        except BaseException:
            server.close()
            raise
        assert self._runner.server is not None
        self._connections = JsonErrorServer(
            self._runner.server,
            access_log=None,
            auto_decompress=False,
            keepalive_timeout=IDLE_TIMEOUT,
            lingering_time=LINGERING_TIME,
        )
        self._server = server
        await server.start_serving()
        return self.port or wanted

    def _connection(self) -> web.RequestHandler:
        """A protocol for a new connection: `loop.create_server` asks once serving.

        Also for one accepted as the server stops: `stop` then ends it with the others.
        """
        assert self._connections is not None  # serving starts after it is made
        return self._connections()

    async def stop(self) -> None:
        """Stop listening; running requests get `SHUTDOWN_TIMEOUT` seconds, then are cancelled.

        Connections still open then are aborted (see module), so no client holds a stop.
        """
        server, self._server = self._server, None  # set once serving: a second stop skips
        connections = self._connections
        if server is not None and connections is not None:
            server.close()
            connections.pre_shutdown()  # idle keep-alive connections close now
            await connections.shutdown(SHUTDOWN_TIMEOUT)
            connections.abort_connections()
        await self._runner.cleanup()
        if server is not None:
            await server.wait_closed()


async def _listening(
    loop: asyncio.AbstractEventLoop,
    factory: Callable[[], asyncio.BaseProtocol],
    host: str,
    port: int,
) -> asyncio.Server:
    """A server bound and listening on `host:port` that serves nothing until `start_serving`.

    Listening at once holds the port: one only bound is free to a socket with `SO_REUSEADDR`.
    Connections wait in the backlog until served.
    """
    server = await loop.create_server(
        factory, host, port, reuse_address=True, backlog=BACKLOG, start_serving=False
    )
    try:
        for bound in server.sockets:
            with bound.dup() as listening:
                listening.listen(BACKLOG)
    except OSError:
        server.close()
        raise
    return server
