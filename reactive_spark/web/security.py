"""What the console refuses before any handler runs, and the headers every answer carries.

- `Host` must be one of `allowed_hosts` (loopback names by default, any port): a page of
  `evil.example` whose name was rebound to 127.0.0.1 (DNS rebinding) is refused with 421.
- No request but for the page and its static files may come from another site's page
  (`Origin`, `Sec-Fetch-Site`; else 403): another site can neither fire nor read the API,
  the live stream or the metrics through the operator's browser, while a link from anywhere
  still opens the dashboard.
- A state-changing request (`POST`) must be JSON (`Content-Type: application/json`, else 415:
  an HTML form cannot send it).
- Answers carry a Content-Security-Policy without inline script and `frame-ancestors 'none'`,
  `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer` (the login URL's token
  stays on the page) and `Server: reactive-spark`.

Examples:
    >>> sorted(answered_hosts(None))
    ['127.0.0.1', '::1', 'localhost']
    >>> sorted(answered_hosts(["reports.example.com"]))
    ['reports.example.com']
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from aiohttp import web
from aiohttp.typedefs import Middleware

from reactive_spark.errors import InvalidArgumentError
from reactive_spark.sources.http import SERVER, cross_site, host_name, json_error

__all__ = ["LOOPBACK_NAMES", "PAGE_ROUTES", "answered_hosts", "guard", "security_headers"]

#: The `Host` names a console answers to unless told otherwise (with any port).
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
#: Methods that only read.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Routes a browser may load from another site's page: the dashboard and its files (no data),
#: and, mounted, the prefix alone, which sends it on to the dashboard.
PAGE_ROUTES = frozenset({"index", "prefix", "static"})
#: What the dashboard may load: its own files, nothing inline, nothing from elsewhere.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def answered_hosts(value: Iterable[str] | None) -> frozenset[str]:
    """The `Host` names to answer (lower case; `"*"` for any), loopback names for None."""
    if value is None:
        return LOOPBACK_NAMES
    if isinstance(value, str):
        raise InvalidArgumentError(f"allowed_hosts must be a list of host names, got {value!r}")
    names = list(value)
    if not names or not all(isinstance(name, str) and name.strip() for name in names):
        raise InvalidArgumentError(
            f"allowed_hosts must be a non-empty list of host names (or ['*']), got {value!r}"
        )
    return frozenset(host_name(name) if name != "*" else name for name in names)


def guard(hosts: frozenset[str]) -> Middleware:
    """Aiohttp middleware refusing other `Host` names, cross-site requests and non-JSON writes.

    Cross-site requests are refused on every route but `PAGE_ROUTES` (see module).
    """

    @web.middleware
    async def refuse_strangers(request: web.Request, handler: Handler) -> web.StreamResponse:
        name = host_name(request.host)
        if "*" not in hosts and name not in hosts:
            raise json_error(
                web.HTTPMisdirectedRequest,
                f"Host {request.host!r} is not a name this console answers to "
                f"(allowed_hosts: {', '.join(sorted(hosts))})",
            )
        match = request.match_info
        if match.http_exception is not None:  # 404, 405 as they are
            return await handler(request)
        if match.route.name not in PAGE_ROUTES:
            reason = cross_site(request)
            if reason is not None:
                raise json_error(web.HTTPForbidden, f"refused a cross-site request ({reason})")
        if request.method not in SAFE_METHODS and request.content_type != "application/json":
            raise json_error(
                web.HTTPUnsupportedMediaType,
                f"send Content-Type: application/json (got {request.content_type!r})",
            )
        return await handler(request)

    return refuse_strangers


async def security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare` signal: the headers of every console answer (see module)."""
    headers = response.headers
    headers["Server"] = SERVER
    headers["X-Content-Type-Options"] = "nosniff"
    headers["Referrer-Policy"] = "no-referrer"
    headers["X-Frame-Options"] = "DENY"
    headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
    if response.content_type == "application/json":
        headers.setdefault("Cache-Control", "no-store")
