"""What every HTTP endpoint of reactive-spark does with a request: REST triggers and the console.

JSON errors (`{"error": ...}` with a 4xx status) and bearer tokens (scheme case-insensitive,
as RFC 7235 says).

Examples:
    >>> json_error(web.HTTPNotFound, "no trigger at /x").text
    '{"error": "no trigger at /x"}'
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from reactive_spark.errors import InvalidArgumentError

__all__ = ["bearer_token", "json_error", "json_errors", "require_token", "same_token"]


def json_error(kind: type[web.HTTPException], message: str, **kwargs: Any) -> web.HTTPException:
    """An HTTP error whose body is `{"error": message}`.

    Examples:
        >>> json_error(web.HTTPNotFound, "no trigger at /x").text
        '{"error": "no trigger at /x"}'
    """
    return kind(text=json.dumps({"error": message}), content_type="application/json", **kwargs)


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
        return web.json_response({"error": exc.reason}, status=exc.status)


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
