"""What every HTTP endpoint of reactive-spark does with a request: REST triggers and the console.

JSON errors (`{"error": ...}` with a 4xx status).

Examples:
    >>> json_error(web.HTTPNotFound, "no trigger at /x").text
    '{"error": "no trigger at /x"}'
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from aiohttp import web

__all__ = ["json_error", "json_errors"]


def json_error(kind: type[web.HTTPException], message: str) -> web.HTTPException:
    """An HTTP error whose body is `{"error": message}`.

    Examples:
        >>> json_error(web.HTTPNotFound, "no trigger at /x").text
        '{"error": "no trigger at /x"}'
    """
    return kind(text=json.dumps({"error": message}), content_type="application/json")


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
