"""HTTP as hostile clients speak it: raw bytes on a socket, trickled bodies, unread streams."""

from __future__ import annotations

import asyncio
import json
from typing import Any


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
