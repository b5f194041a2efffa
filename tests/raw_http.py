"""HTTP as hostile clients speak it: raw bytes on a socket, trickled bodies, unread streams."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web


def address(url: str) -> tuple[str, int]:
    """`(host, port)` of `http://host:port/...`."""
    authority = url.removeprefix("http://").split("/")[0]
    host, _, port = authority.rpartition(":")
    return host.strip("[]"), int(port)


class Answer:
    """A parsed HTTP answer: status, headers (lower-case names) and body."""

    def __init__(self, raw: bytes) -> None:
        head, _, self.body = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in lines[1:])
        }

    @property
    def content_length(self) -> int:
        """The `Content-Length` it declares (0 without one)."""
        return int(self.headers.get("content-length", 0))

    def json(self) -> Any:
        """The body as JSON (it must be JSON)."""
        assert self.headers.get("content-type", "").startswith("application/json"), self.headers
        return json.loads(self.body)


async def exchange(url: str, request: bytes, timeout: float = 10) -> Answer:
    """Send `request` as is to the server of `url`; read the answer until the server closes."""
    reader, writer = await asyncio.open_connection(*address(url))
    try:
        writer.write(request)
        await writer.drain()
        return Answer(await asyncio.wait_for(reader.read(), timeout))
    finally:
        writer.close()


async def half_sent(url: str, path: str, declared: int = 1000) -> asyncio.StreamWriter:
    """Open a POST to `path` declaring `declared` body bytes and send only one; the writer."""
    host, port = address(url)
    _, writer = await asyncio.open_connection(host, port)
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {declared}\r\n\r\n[".encode()
    )
    await writer.drain()
    return writer


async def trickle(writer: asyncio.StreamWriter) -> None:
    """Send a body byte every 0.1 s until the connection closes (run it as a task)."""
    with contextlib.suppress(ConnectionError):
        while not writer.is_closing():
            writer.write(b" ")
            await writer.drain()
            await asyncio.sleep(0.1)


async def unread_stream(url: str, path: str, headers: str = "") -> asyncio.StreamWriter:
    """Open a GET of `path` (an event stream) whose answer is never read; the writer.

    The socket's receive buffer is made small so that the server's writes soon block.
    """
    import socket

    host, port = address(url)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, port))
    _, writer = await asyncio.open_connection(sock=sock, limit=1024)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{headers}\r\n".encode())
    await writer.drain()
    return writer


class _Disguised:
    """A transport that reports other socket addresses (`extra`); the rest is `transport`'s."""

    def __init__(self, transport: asyncio.BaseTransport, extra: dict[str, Any]) -> None:
        self._transport = transport
        self._extra = extra

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name in self._extra:
            return self._extra[name]
        return self._transport.get_extra_info(name, default)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


@asynccontextmanager
async def served_as_if(
    app: web.Application, *, peer: str, local: str = "127.0.0.1"
) -> AsyncIterator[str]:
    """Serve `app` on 127.0.0.1 as if every client were at `peer` and the server at `local`.

    The server's connections report those addresses as their socket's two ends (`peername`,
    `sockname`); all else is real HTTP on a real socket. Yields the URL to send requests to.
    """
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()  # starts the app (and a console's context)
    template = runner.server
    assert template is not None
    ends: dict[str, Any] = {"peername": (peer, 40000), "sockname": (local, 8080)}

    class Handler(web.RequestHandler):
        __slots__ = ()

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(_Disguised(transport, ends))  # type: ignore[arg-type]

    class Server(web.Server):
        def __call__(self) -> web.RequestHandler:
            return Handler(self, loop=asyncio.get_running_loop())

    server = Server(template.request_handler, request_factory=template.request_factory)
    listener = await asyncio.get_running_loop().create_server(server, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}"
    finally:
        listener.close()
        await server.shutdown(1.0)
        await runner.cleanup()
        await listener.wait_closed()
