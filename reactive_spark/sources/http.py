"""What every HTTP endpoint of reactive-spark does with a request: REST triggers and the console.

Posting a request's event within its source's bound (`offer`; under `"block"` requests wait
for room in line, first come first served, at most the bound of them: `RoomLine`), JSON errors
(`{"error": ...}` with a 4xx status), bearer tokens (scheme case-insensitive, as RFC 7235
says), strict JSON bodies (no NaN or Infinity, nested at most `MAX_JSON_DEPTH` deep, read
within `BODY_TIMEOUT` seconds) and the browser's cross-site markers (`Origin`,
`Sec-Fetch-Site`).

Examples:
    >>> parse_json(b'{"day": "2024-01-01"}')
    {'day': '2024-01-01'}
    >>> parse_json(b'{"v": NaN}')
    Traceback (most recent call last):
    ...
    aiohttp.web_exceptions.HTTPBadRequest: Bad Request
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import math
import sys
import zlib
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError

from reactive_spark.errors import InvalidArgumentError, QueueFullError
from reactive_spark.events import Event, EventSource
from reactive_spark.runtime import Runtime

__all__ = [
    "BODY_TIMEOUT",
    "MAX_JSON_DEPTH",
    "RAW_BODIES_KEY",
    "RETRY_AFTER",
    "SERVER",
    "RoomLine",
    "bearer_token",
    "cross_site",
    "expect_within",
    "is_loopback",
    "json_error",
    "json_errors",
    "offer",
    "parse_json",
    "read_json",
    "require_token",
    "same_token",
    "stopped_answer",
]

#: How deeply a JSON body may nest (objects and arrays); deeper bodies are refused with 400.
MAX_JSON_DEPTH = 256
#: Seconds a client has to send a whole request body; a slower one gets 408 and is closed.
BODY_TIMEOUT = 10.0
#: Seconds a caller refused for a full queue is told to wait before trying again.
RETRY_AFTER = 1
#: Seconds between looks at whether the client of a request waiting for room went away.
CLIENT_CHECK = 0.25
#: The `Server` header of every answer (no aiohttp or Python version).
SERVER = "reactive-spark"
#: The `Content-Encoding`s aiohttp decodes before a handler reads the body (by default).
DECODED = frozenset({"identity", "gzip", "x-gzip", "deflate", "br", "zstd"})
#: The ones `read_json` decodes itself, for a server made with `auto_decompress=False`.
OWN_DECODING = {"gzip": 47, "x-gzip": 47, "deflate": 15}
#: Set on an application served with `auto_decompress=False`: `read_json` decompresses
#: (bounded, and every bad body is a JSON 400, where aiohttp's parser answers text/plain).
RAW_BODIES_KEY: web.AppKey[bool] = web.AppKey("reactive_spark_raw_bodies", bool)


def json_error(
    kind: type[web.HTTPException], message: str, *, close: bool = False, **kwargs: Any
) -> web.HTTPException:
    """An HTTP error whose body is `{"error": message}`.

    `close=True` closes the connection after it (for a request whose body was not read whole).

    Examples:
        >>> json_error(web.HTTPNotFound, "no trigger at /x").text
        '{"error": "no trigger at /x"}'
    """
    error = kind(text=json.dumps({"error": message}), content_type="application/json", **kwargs)
    if close:
        error.force_close()
    return error


def refuse(kind: type[web.HTTPException], message: str) -> NoReturn:
    """Raise `json_error(kind, message)`."""
    raise json_error(kind, message)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Aiohttp middleware: its own errors (404 for an unknown path, 405, ...) as `{"error": ...}`.

    Errors already in JSON and redirects pass through unchanged.
    """
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.content_type == "application/json" or exc.status < 400:
            raise
        answer = web.json_response({"error": exc.reason}, status=exc.status)
        if exc.status == 405 and "Allow" in exc.headers:
            answer.headers["Allow"] = exc.headers["Allow"]
        return answer


# -- posting within the bound -------------------------------------------------------------------
async def offer(source: EventSource, event: Event, request: web.Request | None = None) -> None:
    """Post a request's `event` to `source` within its bound, as its overflow policy says.

    Under `"block"` the request waits for room in its source's `RoomLine` (the loop goes on),
    and leaves it if its client goes away; under `"reject"` a full queue is a 503 with
    `Retry-After`. A request answered 202 has its event queued, never merged or dropped behind
    its back, so these are the only two policies an HTTP source has.

    Raises:
        web.HTTPServiceUnavailable: the queue is full under `"reject"`, as many requests as
            the bound wait already under `"block"` (both with `Retry-After`), or the context
            stopped before the event could be posted.
    """
    if source.overflowPolicy == "block":
        lines = Runtime.of(source.context).room_lines
        line = lines.get(source)
        if line is None:
            line = lines[source] = RoomLine()
        await line.post(source, event, request)
        return
    try:
        source.post(event)
    except QueueFullError as full:
        raise _retry_later(str(full)) from None


def _retry_later(message: str) -> web.HTTPException:
    return json_error(
        web.HTTPServiceUnavailable, message, headers={"Retry-After": str(RETRY_AFTER)}
    )


def stopped_answer() -> web.HTTPException:
    """503: the context stopped before the request's event was accepted (it never runs)."""
    return json_error(web.HTTPServiceUnavailable, "the StreamingContext stopped")


class RoomLine:
    """The requests waiting for room in one `"block"` source, served first come, first served.

    A request waits in line with its event. The line registers one wake-up with the runtime
    (`Runtime.when_room`); when room frees, the wake-up posts the waiting events itself, in
    arrival order, while the source has room, resolves each request's future, and registers
    again if some still wait. So a freed slot resumes as many requests as it has room for, not
    every one, and a request that arrives while others wait goes behind them even when there
    happens to be room. Requests whose client went away leave the line: cancelled (a server
    with `handler_cancellation`), or seen gone by a look at the whole line every
    `CLIENT_CHECK` seconds (aiohttp's default lets their handlers run on).

    At most the source's bound (`maxQueued`) requests wait, each holding its parsed body: one
    more is refused with 503 and `Retry-After`. Once the context stops accepting, the next
    wake-up (a stop calls it) answers every waiting request 503.

    Each context keeps its sources' lines (`Runtime.room_lines`).
    """

    def __init__(self) -> None:
        self._waiting: deque[tuple[Event, asyncio.Future[None], web.Request | None]] = deque()
        self._wake_registered = False
        self._sweep: asyncio.TimerHandle | None = None  # the next look for clients gone

    async def post(
        self, source: EventSource, event: Event, request: web.Request | None = None
    ) -> None:
        """Post `event` to `source` now if it has room and no request waits, else in turn.

        Returns once the event is posted. Waiting, it leaves the line if `request`'s client
        goes away.

        Raises:
            web.HTTPServiceUnavailable: the context stopped (before or while it waited), or
                `source.maxQueued` requests wait already (with `Retry-After`).
        """
        runtime = Runtime.of(source.context)
        if not runtime.accepting:
            raise stopped_answer()
        if not self._waiting and runtime.has_room(source):
            source.post(event)
            return
        if len(self._waiting) >= source.maxQueued:
            raise _retry_later(
                f"requests already waiting for room in {source.name!r}: {len(self._waiting)}, "
                "as many as its bound; retry later, or raise the bound with "
                ".overflow(maxQueued, 'block')"
            )
        entry = (event, asyncio.get_running_loop().create_future(), request)
        self._waiting.append(entry)
        if not self._wake_registered:
            self._wake_when_room(runtime, source)
        if self._sweep is None and request is not None:
            self._sweep = asyncio.get_running_loop().call_later(CLIENT_CHECK, self._leave_gone)
        try:
            await entry[1]
        except asyncio.CancelledError:  # its client went away, or the server stopped
            with contextlib.suppress(ValueError):  # unless it was posted already
                self._waiting.remove(entry)
            raise

    def _leave_gone(self) -> None:
        """Take the requests whose client went away out of the line (every `CLIENT_CHECK` s).

        aiohttp lets their handlers run on (unless a server asks for `handler_cancellation`):
        one look at the whole line, rather than a wake-up per waiting request.
        """
        self._sweep = None
        staying = deque[tuple[Event, asyncio.Future[None], web.Request | None]]()
        for entry in self._waiting:
            _, answer, request = entry
            if not answer.done() and request is not None and request.transport is None:
                answer.set_exception(json_error(web.HTTPBadRequest, "the client went away"))
            else:
                staying.append(entry)
        self._waiting = staying
        if any(request is not None for *_, request in staying):
            self._sweep = asyncio.get_running_loop().call_later(CLIENT_CHECK, self._leave_gone)

    def _wake_when_room(self, runtime: Runtime, source: EventSource) -> None:
        self._wake_registered = True  # first: `when_room` calls at once if there is room
        runtime.when_room(source, lambda: self._wake(runtime, source))

    def _wake(self, runtime: Runtime, source: EventSource) -> None:
        """Room freed, or the context stopped: post what waits, in order, while there is room."""
        self._wake_registered = False
        waiting = self._waiting
        while waiting:
            event, answer, _ = waiting[0]
            if answer.done():  # cancelled: it leaves the line itself
                waiting.popleft()
            elif not runtime.accepting:
                waiting.popleft()
                answer.set_exception(stopped_answer())
            elif runtime.has_room(source):
                waiting.popleft()
                try:
                    source.post(event)
                except Exception as exc:  # its request says why (not this loop callback)
                    answer.set_exception(exc)
                else:
                    answer.set_result(None)
            else:
                self._wake_when_room(runtime, source)
                return


# -- bearer tokens ---------------------------------------------------------------------------
def require_token(value: object, name: str = "token") -> str | None:
    """Return `value` if a client can present it as a bearer token (or None), else raise.

    A token is printable ASCII without spaces (what an `Authorization` header carries intact).

    Examples:
        >>> require_token("s3cret")
        's3cret'
        >>> require_token(" s3cret")
        Traceback (most recent call last):
        ...
        reactive_spark.errors.InvalidArgumentError: token must be printable ASCII without ...
    """
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(f"{name} must be a non-empty str or None, got {value!r}")
    if not all("!" <= char <= "~" for char in value):
        raise InvalidArgumentError(
            f"{name} must be printable ASCII without spaces or control characters "
            f"(no client can send it otherwise), got {value!r}"
        )
    return value


def bearer_token(request: web.BaseRequest) -> str | None:
    """The token of an `Authorization: Bearer <token>` header (any case of `Bearer`), or None."""
    scheme, _, token = request.headers.get("Authorization", "").strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def same_token(given: str | None, expected: str) -> bool:
    """Whether `given` is `expected`, compared in constant time."""
    if given is None:
        return False
    return hmac.compare_digest(
        given.encode("utf-8", "surrogateescape"), expected.encode("utf-8", "surrogateescape")
    )


# -- JSON bodies -----------------------------------------------------------------------------
def _no_constant(name: str) -> NoReturn:
    refuse(web.HTTPBadRequest, f"body is not valid JSON: {name} is not a JSON number")


def _finite(number: str) -> float:
    value = float(number)
    if not math.isfinite(value):  # 1e999: valid JSON, but only Infinity as a float
        refuse(web.HTTPBadRequest, f"body holds {number}, a number too large for a float")
    return value


def _depth(value: Any) -> int:
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, depth)
            pending.extend((child, depth + 1) for child in item if isinstance(child, dict | list))
    return deepest


def parse_json(raw: bytes) -> Any:
    """The JSON value of `raw` (None when blank); 400 (JSON error) when it is not strict JSON.

    NaN and Infinity are refused (also written as a number too large for a float, `1e999`),
    and so are an integer of more digits than Python converts and nesting deeper than
    `MAX_JSON_DEPTH`.
    """
    if not raw.strip():
        return None
    try:
        value = json.loads(raw, parse_constant=_no_constant, parse_float=_finite)
    except (UnicodeDecodeError, ValueError) as exc:
        if "integer string conversion" in str(exc):  # Python's own limit, and its advice
            limit = sys.get_int_max_str_digits()
            refuse(web.HTTPBadRequest, f"body holds an integer of more than {limit} digits")
        raise json_error(web.HTTPBadRequest, f"body is not valid JSON: {exc}") from None
    except RecursionError:
        value = None
        depth = MAX_JSON_DEPTH + 1
    else:
        depth = _depth(value)
    if depth > MAX_JSON_DEPTH:
        refuse(web.HTTPBadRequest, f"body is nested too deeply (more than {MAX_JSON_DEPTH})")
    return value


class BodyReads:
    """The request bodies still arriving at a server, which its stop cuts short (503 at once).

    A client sending its body slowly would otherwise hold the stop, or the shutdown of a
    service the server is mounted in, for up to `BODY_TIMEOUT` seconds.
    """

    def __init__(self) -> None:
        self._reading: set[asyncio.Task[Any]] = set()
        self._stopped = False  # bodies are refused from then on

    async def read(self, request: web.Request, max_size: int) -> Any:
        """`read_json(request, max_size)`, answered 503 if the stop comes first."""
        if self._stopped:
            raise stopped_answer()
        reading = asyncio.ensure_future(read_json(request, max_size))
        self._reading.add(reading)
        try:
            return await reading
        except asyncio.CancelledError:
            handler = asyncio.current_task()
            if self._stopped and not (handler is not None and handler.cancelling()):
                refused = stopped_answer()
                refused.force_close()  # the rest of its body is not waited for
                raise refused from None
            raise  # the request itself was cancelled (its client left, the server stops)
        finally:
            self._reading.discard(reading)

    def stop(self) -> None:
        """Answer every body still arriving 503 now, and every later one."""
        self._stopped = True
        for reading in self._reading:
            reading.cancel()


async def read_json(request: web.Request, max_size: int) -> Any:
    """The request's JSON body (see `parse_json`): at most `max_size` bytes, in time.

    The body must arrive within `BODY_TIMEOUT` seconds; every failure of the client's is a
    4xx JSON error (413 too large, 408 too slow, 415 an unknown `Content-Encoding`, 400 not
    strict JSON or not decompressible). A body the host's middleware read first is taken
    as `request.read()` kept it; one it read otherwise, in whole or in part, is a 500.
    """
    if request.content_length is not None and request.content_length > max_size:
        raise _too_large(max_size)
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    decode_here = request.config_dict.get(RAW_BODIES_KEY, False) and encoding != "identity"
    if encoding not in (OWN_DECODING if decode_here else DECODED) and encoding != "identity":
        raise json_error(
            web.HTTPUnsupportedMediaType,
            f"Content-Encoding {encoding!r} is not supported (gzip, deflate or none)",
            close=True,
        )
    if request.content.at_eof():  # nothing to stream: none, or a middleware read it
        raw = await _read_before(request, max_size)
    else:
        raw = await _read_body(request, max_size)
    return parse_json(_decompress(raw, encoding, max_size) if decode_here else raw)


def expect_within(max_size: int) -> Callable[[web.Request], Awaitable[None]]:
    """The `expect_handler` of routes that read a JSON body of at most `max_size` bytes.

    As aiohttp's own, it answers `Expect: 100-continue` with "100 Continue" before the
    application's middleware runs (a service's may read the body); but a body declared past
    `max_size` is refused first (a JSON 413, so it is never sent), and another expectation
    is a JSON 417, not aiohttp's text.
    """

    async def expect(request: web.Request) -> None:
        if request.version < (1, 1):
            return
        expected = request.headers.get("Expect", "")
        if expected.strip().lower() != "100-continue":
            raise json_error(
                web.HTTPExpectationFailed, f"Expect {expected!r} cannot be met", close=True
            )
        if request.content_length is not None and request.content_length > max_size:
            refused = _too_large(max_size)
            refused.force_close()  # its body is not read
            raise refused
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request.writer.output_size = 0  # the answer's own size starts after it

    return expect


async def _read_body(request: web.Request, max_size: int) -> bytes:
    """The body as it arrives: 413 past `max_size`, 408 not in time, 400 unreadable."""
    chunks, size = [], 0
    try:
        async with asyncio.timeout(BODY_TIMEOUT):
            async for chunk in request.content.iter_chunked(64 * 1024):
                size += len(chunk)
                if size > max_size:
                    raise _too_large(max_size)
                chunks.append(chunk)
    except TimeoutError:
        raise json_error(
            web.HTTPRequestTimeout,
            f"the body did not arrive within {BODY_TIMEOUT:g} s",
            close=True,
        ) from None
    except RequestPayloadError as exc:
        request.content.feed_eof()  # nothing more to read: aiohttp need not drain it
        message = str(exc).split("message:", 1)[-1].strip()
        raise json_error(web.HTTPBadRequest, f"unreadable body: {message}", close=True) from None
    if request.content.total_bytes != size:  # a middleware read the start of it, not kept
        raise _read_elsewhere()
    return b"".join(chunks)


async def _read_before(request: web.Request, max_size: int) -> bytes:
    """The body when there is none to stream: empty, or one a host's middleware read already.

    `await request.read()` keeps what it read; a body read from `request.content` and not
    kept is gone: answered 500, as the host's doing.
    """
    raw = await request.read()
    if not raw and request.content.total_bytes:
        raise _read_elsewhere()
    if len(raw) > max_size:
        raise _too_large(max_size)
    return raw


def _read_elsewhere() -> web.HTTPException:
    return json_error(
        web.HTTPInternalServerError,
        "the request's body was read before the trigger got it, and not kept: read it "
        "with `await request.read()` (which keeps it) in the application's middleware",
    )


def _decompress(raw: bytes, encoding: str, max_size: int) -> bytes:
    """`raw` decoded as `encoding`; 413 past `max_size`, 400 when it is not that encoding."""
    for wbits in (OWN_DECODING[encoding], -15):  # deflate is zlib-wrapped, or raw in the wild
        decoder = zlib.decompressobj(wbits)
        try:
            data = decoder.decompress(raw, max_size + 1)
        except zlib.error:
            continue
        if len(data) > max_size or decoder.unconsumed_tail:
            raise _too_large(max_size)
        if decoder.eof:
            return data
    raise json_error(web.HTTPBadRequest, f"unreadable body: it is not valid {encoding} data")


def _too_large(limit: int) -> web.HTTPException:
    return web.HTTPRequestEntityTooLarge(
        max_size=limit,
        actual_size=limit + 1,
        text=json.dumps({"error": f"body is larger than {limit} bytes"}),
        content_type="application/json",
    )


# -- where a request comes from --------------------------------------------------------------
def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address, without port) is this machine only.

    Examples:
        >>> [is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "example.com")]
        [True, True, True, False, False]
    """
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(authority: str) -> str:
    """The host of a `Host` header or URL authority, without port, lower case.

    Examples:
        >>> host_name("[::1]:4040"), host_name("LocalHost:80"), host_name("example.com")
        ('::1', 'localhost', 'example.com')
    """
    authority = authority.strip().lower()
    if authority.startswith("["):
        return authority[1:].partition("]")[0]
    if authority.count(":") > 1:  # a bare IPv6 address
        return authority
    return authority.partition(":")[0]


def _authority(scheme: str, netloc: str) -> str:
    default = {"http": ":80", "https": ":443"}.get(scheme, "")
    netloc = netloc.lower()
    return netloc[: -len(default)] if default and netloc.endswith(default) else netloc


def cross_site(request: web.BaseRequest) -> str | None:
    """Why `request` comes from another site's page (a browser said so), or None.

    Browsers mark cross-origin requests with `Sec-Fetch-Site` and an `Origin` that is not the
    server's own (`Host`); clients that are not browsers send neither.
    """
    fetch_site = request.headers.get("Sec-Fetch-Site", "").lower()
    if fetch_site and fetch_site not in ("same-origin", "none"):
        return f"Sec-Fetch-Site is {fetch_site}"
    origin = request.headers.get("Origin")
    if origin is None:
        return None
    try:
        parts = urlsplit(origin)
    except ValueError:  # not a URL (`http://[`): no browser sends that for its own page
        return f"Origin {origin} is not this server's"
    own = _authority("https" if parts.scheme == "https" else "http", request.host)
    if origin == "null" or _authority(parts.scheme, parts.netloc) != own:
        return f"Origin {origin} is not this server's"
    return None
