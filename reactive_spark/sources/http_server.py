"""Serving an aiohttp application on a port so that no client can hold it: REST triggers, console.

- A connection that has not sent a whole request head within `IDLE_TIMEOUT` seconds (or sits
  idle that long between requests) is closed; bodies have `http.BODY_TIMEOUT`.
- `stop()` gives running requests `SHUTDOWN_TIMEOUT` seconds, then cancels them; the rest of
  a refused body is read for `LINGERING_TIME` seconds at most (aiohttp's default is 10).
- Bodies are decompressed by `http.read_json` (gzip, deflate; bounded by the body limit), not
  by aiohttp's parser, so that a body that is not what its `Content-Encoding` says gets a JSON
  400 like every other client error.
- Every answer of the application says `Server: reactive-spark`, without versions. Requests
  aiohttp's HTTP parser rejects before any application code runs (a malformed request line or
  header) keep aiohttp's own answer: 400, `text/plain`, its `Server` header, the connection
  closed; aiohttp offers no hook for it short of replacing its protocol class.

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

from aiohttp import web

from reactive_spark.errors import ListenError
from reactive_spark.sources.http import RAW_BODIES_KEY, SERVER

__all__ = ["IDLE_TIMEOUT", "SHUTDOWN_TIMEOUT", "HttpServer", "server_header"]

log = logging.getLogger(__name__)

#: Seconds a connection may take to send a request head, or stay idle between requests.
IDLE_TIMEOUT = 15.0
#: Seconds running requests get to finish when the server stops; then they are cancelled.
SHUTDOWN_TIMEOUT = 1.0
#: Seconds the rest of a refused body is still read (so the client sees the answer), at most.
LINGERING_TIME = 1.0


async def server_header(request: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare` signal: `Server: reactive-spark` instead of aiohttp's version."""
    response.headers["Server"] = SERVER


class HttpServer:
    """`app` served on a port with bounded timeouts and no version in `Server` (see module)."""

    def __init__(self, app: web.Application) -> None:
        app.on_response_prepare.append(server_header)
        app[RAW_BODIES_KEY] = True  # read_json decompresses: bad bodies get JSON errors
        self._runner = web.AppRunner(
            app,
            access_log=None,
            auto_decompress=False,
            shutdown_timeout=SHUTDOWN_TIMEOUT,
            keepalive_timeout=IDLE_TIMEOUT,
            lingering_time=LINGERING_TIME,
        )
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

        Raises:
            ListenError: `host` does not resolve, or no port could be bound; names them.
        """
        await self._runner.setup()
        loop = asyncio.get_running_loop()
        factory = self._runner.server
        assert factory is not None
        tries = attempts if port else 1
        attempt = 0
        while True:
            wanted = port + attempt if port else 0
            try:
                self._server = await loop.create_server(
                    factory, host, wanted, reuse_address=True, backlog=128
                )
            except socket.gaierror as exc:
                await self._runner.cleanup()
                raise ListenError(f"cannot listen on host {host!r}: {exc.strerror}") from exc
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE and attempt < tries - 1:
                    attempt += 1
                    continue
                await self._runner.cleanup()
                raise ListenError(
                    f"cannot listen on {host}:{wanted} (host {host!r}, port {wanted}): "
                    f"{exc.strerror or exc}"
                ) from exc
            return self.port or wanted

    async def stop(self) -> None:
        """Stop listening; running requests get `SHUTDOWN_TIMEOUT` seconds, then are cancelled."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        await self._runner.cleanup()
        if server is not None:
            await server.wait_closed()
