"""Who may use the console: an authenticator grants each request scopes, *view* and *control*.

An authenticator is any callable `(request) -> scopes` (a collection of `"view"` and
`"control"`; it may be a coroutine function): `BearerToken(token)` is the built-in one, and a
service plugs its own auth in by writing one, reading what its own middleware stored on the
request. What needs which scope:

| scope | requests |
| --- | --- |
| none | the dashboard page and its static files, `/api/openapi.json` |
| view | `GET /api/...` (sources, graph, events, batches, the event stream), `/metrics` |
| control | `POST /api/sources/{name}/fire` |

Without an authenticator (`auth=None`) every request has both scopes but is not
*authenticated*: such a console answers clients on this machine only (403 for a client whose
connection is not from a loopback address, whatever its `Host` says; `insecure=True` lets any
client in), cannot fire token-protected REST triggers, and hides the bodies and queries of
their requests.

Examples:
    >>> auth = BearerToken("s3cret-token")
    >>> sorted(auth.scopes)
    ['control', 'view']
    >>> readers = BearerToken("read-only-token", scopes={"view"})
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Literal

from aiohttp import web
from aiohttp.typedefs import Middleware

from reactive_spark.errors import InvalidArgumentError
from reactive_spark.sources.http import bearer_token, json_error, require_token, same_token
from reactive_spark.sources.peers import from_this_machine

__all__ = [
    "ALL_SCOPES",
    "GRANT_KEY",
    "Authenticator",
    "BearerToken",
    "Grant",
    "Scope",
    "authentication",
    "refuse_without",
    "require_authenticator",
]

Scope = Literal["view", "control"]
ALL_SCOPES: frozenset[str] = frozenset({"view", "control"})
Authenticator = Callable[[web.Request], Collection[str] | Awaitable[Collection[str]]]
"""What a service's own auth plugs in (`auth=`): the scopes a request has, `"view"` and
`"control"` (none: not authenticated); it may be a coroutine function."""
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: Routes anyone may get (they hold no data), and routes that change state.
PUBLIC_ROUTES = frozenset({"index", "prefix", "static", "openapi"})
CONTROL_ROUTES = frozenset({"fire"})


def _scopes(value: object, name: str) -> frozenset[str]:
    if isinstance(value, str) or not isinstance(value, Collection) or not value:
        raise InvalidArgumentError(f"{name} must be a non-empty set of {sorted(ALL_SCOPES)}")
    scopes = frozenset(value)
    if not scopes <= ALL_SCOPES:
        raise InvalidArgumentError(f"{name} must be some of {sorted(ALL_SCOPES)}, got {value!r}")
    return scopes


@dataclass(frozen=True)
class BearerToken:
    """Grants `scopes` (both by default) to requests with `Authorization: Bearer <token>`.

    Examples:
        >>> BearerToken("a token with spaces")
        Traceback (most recent call last):
        ...
        reactive_spark.errors.InvalidArgumentError: token must be printable ASCII without ...
    """

    token: str = field(repr=False)
    scopes: Collection[str] = ALL_SCOPES

    def __post_init__(self) -> None:
        if require_token(self.token) is None:
            raise InvalidArgumentError("token must be a non-empty str, got None")
        object.__setattr__(self, "scopes", _scopes(self.scopes, "scopes"))

    def __call__(self, request: web.Request) -> frozenset[str]:
        """The scopes of `request`: all of `scopes` with the token, none without."""
        if same_token(bearer_token(request), self.token):
            return frozenset(self.scopes)
        return frozenset()


@dataclass(frozen=True)
class Grant:
    """What a request may do: its `scopes`, and whether an authenticator gave them."""

    scopes: frozenset[str]
    authenticated: bool


#: The `Grant` of a request, for the console's handlers.
GRANT_KEY: web.RequestKey[Grant] = web.RequestKey("reactive_spark_grant", Grant)


def require_authenticator(value: object, name: str = "auth") -> Authenticator | None:
    """Return `value` if it is an authenticator (a callable) or None, else raise naming `name`."""
    if value is not None and not callable(value):
        raise InvalidArgumentError(
            f"{name} must be a callable (request) -> scopes, such as BearerToken(token), or "
            f"None; got {value!r}"
        )
    return value


def refuse_without(grant: Grant, scope: str) -> None:
    """Raise 401 (nothing granted: sign in) or 403 (too little) unless `grant` has `scope`."""
    if scope in grant.scopes:
        return
    if not grant.scopes:
        raise json_error(
            web.HTTPUnauthorized,
            "sign in: send Authorization: Bearer <token> (or open the console's login URL)",
            headers={"WWW-Authenticate": 'Bearer realm="reactive-spark"'},
        )
    raise json_error(web.HTTPForbidden, f"this needs the {scope} scope")


def _required(request: web.Request) -> str | None:
    """The scope a route needs before its handler runs.

    Control routes check it themselves: a token-protected trigger also takes its own token.
    """
    match = request.match_info
    if match.http_exception is not None:  # 404, 405: nothing to protect
        return None
    name = match.route.name
    return None if name in PUBLIC_ROUTES or name in CONTROL_ROUTES else "view"


#: Why a console without auth refused a client on another machine, and what to do.
LOOPBACK_ONLY = (
    "this console has no auth; it answers loopback clients only (give it auth, such as "
    "auth=BearerToken(token), or insecure=True to let any client view and fire)"
)


def authentication(auth: Authenticator | None, *, insecure: bool = False) -> Middleware:
    """Aiohttp middleware: grant each request its scopes; refuse what they do not cover.

    401 (with `WWW-Authenticate: Bearer`) when the authenticator grants nothing, 403 when it
    grants too little; both `{"error": ...}`. Without an authenticator every request gets
    both scopes, but only from a client on this machine (its connection's address is a
    loopback one; else 403 on every route), unless `insecure`.
    """

    @web.middleware
    async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
        if auth is None:
            if not insecure and not from_this_machine(request):
                raise json_error(web.HTTPForbidden, LOOPBACK_ONLY)
            grant = Grant(ALL_SCOPES, authenticated=False)
        else:
            scopes = auth(request)
            if inspect.isawaitable(scopes):
                scopes = await scopes
            granted = frozenset(scopes) & ALL_SCOPES
            grant = Grant(granted, authenticated=bool(granted))
        request[GRANT_KEY] = grant
        required = _required(request)
        if required is not None:
            refuse_without(grant, required)
        return await handler(request)

    return authenticate
