"""The web console as an aiohttp application, embeddable in a service (docs/console.md).

`create_app(ssc)` is a sub-application: mount it with `host.add_subapp("/reactive", app)`, or
call `setup(host, ssc, prefix="/reactive")`. The host application's start starts the context
(if it is not running yet), and its shutdown stops it (`web/lifecycle.py`).
`ssc.serve(port=4040)` (or `await Console(ssc).start()`) serves it on a port of its own.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

from aiohttp import web

from reactive_spark._validation import require_bool, require_timeout
from reactive_spark.context import StreamingContext
from reactive_spark.errors import InvalidArgumentError, JobFailedError
from reactive_spark.runtime import Runtime
from reactive_spark.sources.http import BodyReads, is_loopback, json_error, json_errors
from reactive_spark.sources.http_server import HttpServer
from reactive_spark.web import api
from reactive_spark.web.auth import (
    Authenticator,
    BearerToken,
    authentication,
    require_authenticator,
)
from reactive_spark.web.history import History
from reactive_spark.web.keys import (
    BODIES_KEY,
    CONTEXT_KEY,
    HISTORY_KEY,
    LIFECYCLE_KEY,
    PREFIX_KEY,
)
from reactive_spark.web.lifecycle import DEFAULT_STOP_TIMEOUT, ContextLifecycle
from reactive_spark.web.openapi import openapi
from reactive_spark.web.security import LOOPBACK_NAMES, answered_hosts, guard, security_headers
from reactive_spark.web.values import json_response

__all__ = ["Console", "create_app", "serve", "setup", "wait_for_stop"]

log = logging.getLogger(__name__)

STATIC = resources.files("reactive_spark.web") / "static"
#: The dashboard's files by name: a request names one of these, or gets 404 (nothing else is
#: ever opened, so no name it sends reaches the file system).
STATIC_FILES = {entry.name: Path(str(entry)) for entry in STATIC.iterdir() if entry.is_file()}
#: Ports tried from the one asked for, when it is taken (as Spark's UI does from 4040).
PORT_ATTEMPTS = 16
#: Addresses that mean "every interface".
WILDCARDS = frozenset({"0.0.0.0", "::", ""})


def _refuse_any_host_without_auth(
    hosts: frozenset[str], auth: Authenticator | None, insecure: bool
) -> None:
    """Refuse `allowed_hosts=["*"]` for a console without auth, unless `insecure`."""
    if "*" in hosts and auth is None and not insecure:
        raise InvalidArgumentError(
            "allowed_hosts=['*'] without auth lets a page rebound to this machine (DNS "
            "rebinding) read and fire through the console: give it auth, list the Host names "
            "it is reached by, or pass insecure=True on a network you trust"
        )


#: What a prefix's segments may hold: the characters a URL path carries unescaped (RFC 3986),
#: so that the requests for the console reach it.
_PREFIX_SEGMENT = re.compile(r"[A-Za-z0-9._~!$&'()*+,;=:@-]+")


def _prefix(prefix: str, *, mounted: bool = False) -> str:
    """`prefix` without its trailing slash; `mounted` (by `setup`) it may not be the root."""
    valid = isinstance(prefix, str) and (not prefix or prefix.startswith("/"))
    if not valid or prefix.startswith("//") or (mounted and not prefix.strip("/")):
        raise InvalidArgumentError(
            f"prefix must be a path under the host's root, such as '/reactive', got {prefix!r} "
            "(to serve the console at the root, serve create_app(ssc) itself)"
            if mounted
            else f"prefix must be '' or a path such as '/reactive', got {prefix!r}"
        )
    segments = prefix.rstrip("/")[1:].split("/") if prefix.rstrip("/") else []
    for segment in segments:
        if segment in (".", "..") or not _PREFIX_SEGMENT.fullmatch(segment):
            raise InvalidArgumentError(
                f"prefix {prefix!r} cannot be reached: each segment must be letters, digits "
                "or -._~!$&'()*+,;=:@ (what a URL path carries unescaped), neither '.' nor '..'"
            )
    return prefix.rstrip("/")


def create_app(
    ssc: StreamingContext,
    *,
    prefix: str = "",
    history: int = 1000,
    auth: Authenticator | None = None,
    allowed_hosts: Iterable[str] | None = None,
    insecure: bool = False,
    stop_timeout: float | None = DEFAULT_STOP_TIMEOUT,
) -> web.Application:
    """The console for `ssc`: dashboard at `/`, JSON API under `/api`, `/metrics`.

    `prefix` is where it will be mounted (for the links it gives, such as a REST trigger's
    `status`); `history` how many events and batches it keeps. `auth` grants each request its
    scopes (`BearerToken(token)`, or the service's own callable: see `web.auth`). Without it,
    the console answers clients on this machine only: a client whose connection is not from a
    loopback address gets 403, whatever address the service listens on; `insecure=True` lets
    any client view and fire. `allowed_hosts` are the `Host` names it answers to (loopback
    names by default, any port; `["*"]` for any, which without auth needs `insecure=True`):
    see docs/security.md. The service starts the context (unless it runs already) and stops
    it: the stop begins as the service's shutdown does, before it waits for its requests, and
    is graceful for at most `stop_timeout` seconds (None: until every queued batch ran).

    Raises:
        InvalidArgumentError: an argument is not what it should be, or `allowed_hosts` holds
            `"*"` without `auth` or `insecure=True`.

    Examples:
        >>> from aiohttp import web
        >>> service = web.Application()
        >>> console = create_app(ssc, prefix="/reactive", auth=BearerToken("s3cret-token"))
        >>> resource = service.add_subapp("/reactive", console)
    """
    if not isinstance(ssc, StreamingContext):
        raise InvalidArgumentError(f"ssc must be a StreamingContext, got {ssc!r}")
    if isinstance(history, bool) or not isinstance(history, int) or history < 1:
        raise InvalidArgumentError(f"history must be a positive int, got {history!r}")
    auth = require_authenticator(auth)
    insecure = require_bool(insecure, "insecure")
    stop_timeout = require_timeout(stop_timeout, "stop_timeout")
    hosts = answered_hosts(allowed_hosts)
    _refuse_any_host_without_auth(hosts, auth, insecure)
    app = web.Application(
        middlewares=[json_errors, guard(hosts), authentication(auth, insecure=insecure)]
    )
    app[CONTEXT_KEY] = ssc
    app[PREFIX_KEY] = _prefix(prefix)
    app[HISTORY_KEY] = recorder = History(ssc, history)
    ssc.addStreamingListener(recorder)
    Runtime.of(ssc).console_prefix = app[PREFIX_KEY]
    api.add_routes(app)
    app.router.add_get("/api/openapi.json", _openapi, name="openapi")
    app.router.add_get("/", _index, name="index")
    # mounted, the prefix alone ("/reactive"): aiohttp hands it to the console, which sends it on
    app.router.add_get("", _to_index, name="prefix")
    app.router.add_get("/static/{name}", _static, name="static")
    app.on_response_prepare.append(security_headers)
    app[BODIES_KEY] = BodyReads()
    app.on_shutdown.append(_release_clients)
    app[LIFECYCLE_KEY] = ContextLifecycle(ssc, stop_timeout)
    app[LIFECYCLE_KEY].attach(app)
    return app


def setup(
    app: web.Application,
    ssc: StreamingContext,
    prefix: str = "/reactive",
    *,
    auth: Authenticator | None = None,
    allowed_hosts: Iterable[str] | None = None,
    history: int = 1000,
    insecure: bool = False,
    stop_timeout: float | None = DEFAULT_STOP_TIMEOUT,
) -> web.Application:
    """Mount the console for `ssc` in `app` under `prefix`; returns the console application.

    `auth`, `allowed_hosts`, `history`, `insecure` and `stop_timeout` are `create_app`'s:
    without `auth` the console answers clients on this machine only, unless `insecure=True`;
    the service's shutdown stops the context, gracefully for at most `stop_timeout` seconds.

    Raises:
        InvalidArgumentError: `app` is frozen (it runs: aiohttp takes no sub-application
            then); `prefix` is not a path under the host's root (`''` and `'/'` included:
            aiohttp mounts no sub-application there), holds what a URL path carries escaped
            (no request would reach it), or is taken in `app` already; or as `create_app`.

    Examples:
        >>> from aiohttp import web
        >>> service = web.Application()
        >>> console = setup(service, ssc, prefix="/reactive", auth=BearerToken("s3cret-token"))
    """
    if not isinstance(app, web.Application):
        raise InvalidArgumentError(f"app must be an aiohttp web.Application, got {app!r}")
    if app.frozen:
        raise InvalidArgumentError(
            f"app {app!r} is frozen (it started, or is mounted in one that did): call setup "
            "while building it, before it runs"
        )
    mount = _prefix(prefix, mounted=True)
    for resource in app.router.resources():
        taken = resource.canonical
        shadows = isinstance(resource, web.PrefixedSubAppResource) and mount.startswith(f"{taken}/")
        if taken == mount or shadows or taken.startswith(f"{mount}/"):
            raise InvalidArgumentError(
                f"prefix {prefix!r} is taken in app already ({taken!r} is there): mount the "
                "console under another prefix"
            )
    console = create_app(
        ssc,
        prefix=prefix,
        history=history,
        auth=auth,
        allowed_hosts=allowed_hosts,
        insecure=insecure,
        stop_timeout=stop_timeout,
    )
    app.add_subapp(mount, console)
    return console


async def wait_for_stop(console: web.Application) -> None:
    """Wait for the stop of `console`'s context, beginning it if none began: for a cleanup.

    `console` is what `setup` returned. For a service's cleanup that closes something the
    batches use (a database pool): aiohttp runs the cleanup registered before `setup` before
    the console's, while a graceful stop may still run batches. The stop begins with the
    service's shutdown; this begins it if that step was skipped (so call it in a cleanup
    only: anywhere else it stops the context), and returns at once if the context never
    started. It waits as long as the stop takes: at most `stop_timeout` and what a stop that
    does not wait takes after it, for ever with `stop_timeout=None`. It raises nothing: what
    the stop raised reaches the service's `runner.cleanup()` from the console's cleanup.

    Raises:
        InvalidArgumentError: `console` is not an application `setup` or `create_app` made.

    Examples:
        >>> async def close_pool(app):  # registered before `setup`, as docs/console.md says
        ...     try:
        ...         await wait_for_stop(console)
        ...     finally:
        ...         await pool.close()
    """
    if not isinstance(console, web.Application) or LIFECYCLE_KEY not in console:
        raise InvalidArgumentError(
            f"console must be the application setup() or create_app() returned, got {console!r}"
        )
    await console[LIFECYCLE_KEY].ended()


async def _release_clients(app: web.Application) -> None:
    """`on_shutdown` (and `Console.stop`): let no client hold the stop.

    Every server-sent-event stream ends, and every fire whose body still arrives is answered
    503 at once.
    """
    app[HISTORY_KEY].live.close()
    app[BODIES_KEY].stop()


async def _index(request: web.Request) -> web.StreamResponse:
    page = (STATIC / "index.html").read_text(encoding="utf-8")
    return web.Response(text=page, content_type="text/html")


async def _to_index(request: web.Request) -> web.StreamResponse:
    """`GET /reactive`, the mount point without its slash: the page is `/reactive/`, query kept.

    Relative (`reactive/`), so it holds behind a proxy or in a host mounted under a path; from
    the path asked, so it holds whatever `prefix` the console was told.
    """
    page = request.rel_url.raw_path.rsplit("/", 1)[-1] + "/"
    query = request.rel_url.raw_query_string
    location = f"{page}?{query}" if query else page
    raise web.HTTPTemporaryRedirect(location, headers={"Cache-Control": "no-store"})  # a token


async def _static(request: web.Request) -> web.StreamResponse:
    """`GET /static/{name}`: one of `STATIC_FILES`, else 404 (JSON)."""
    name = request.match_info["name"]
    path = STATIC_FILES.get(name)
    if path is None:
        raise json_error(web.HTTPNotFound, f"no static file {name[:100]!r}")
    return web.FileResponse(path)


async def _openapi(request: web.Request) -> web.Response:
    return json_response(openapi(request.app[PREFIX_KEY]))


def _host_names(host: str) -> frozenset[str]:
    """The `Host` names a console listening on `host` answers to by default."""
    if host in WILDCARDS:
        return frozenset({"*"})
    return LOOPBACK_NAMES | {host.strip("[]").lower()}


class Console:
    """The console served on a port of its own (what `ssc.serve` uses).

    `token` (or `auth`, an authenticator: see `web.auth`) is what viewers sign in with;
    `console.loginUrl` carries the token for a browser, which keeps it in the tab's session
    storage. Without either, the console refuses a `host` that is not a loopback address, and
    `allowed_hosts=["*"]`, unless `insecure=True` (then anyone who reaches the port may view and
    fire).

    Examples:
        ```python
        # a fragment, inside a coroutine; ssc is a StreamingContext
        console = await Console(ssc, port=4040, token=secrets.token_urlsafe()).start()
        print(console.loginUrl)   # http://127.0.0.1:4040/?token=...  (also starts ssc)
        await ssc.awaitTermination()
        await console.stop()
        ```
    """

    def __init__(
        self,
        ssc: StreamingContext,
        host: str = "127.0.0.1",
        port: int = 4040,
        *,
        token: str | None = None,
        auth: Authenticator | None = None,
        allowed_hosts: Iterable[str] | None = None,
        insecure: bool = False,
    ) -> None:
        if not isinstance(ssc, StreamingContext):
            raise InvalidArgumentError(f"ssc must be a StreamingContext, got {ssc!r}")
        if not isinstance(host, str) or not host:
            raise InvalidArgumentError(f"host must be a non-empty str, got {host!r}")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise InvalidArgumentError(f"port must be an int from 0 to 65535, got {port!r}")
        require_bool(insecure, "insecure")
        if token is not None and auth is not None:
            raise InvalidArgumentError("give token or auth, not both")
        self.auth = BearerToken(token) if token is not None else require_authenticator(auth)
        if self.auth is None and not is_loopback(host) and not insecure:
            raise InvalidArgumentError(
                f"host {host!r} is not a loopback address and the console has no "
                "authentication: give it a token (or auth), or insecure=True on a network "
                "you trust"
            )
        self.ssc = ssc
        self.host = host
        self.port = port
        self.insecure = insecure
        self._token = token
        self._hosts = answered_hosts(allowed_hosts) if allowed_hosts is not None else None
        if self._hosts is not None:
            _refuse_any_host_without_auth(self._hosts, self.auth, insecure)
        self._server: HttpServer | None = None
        self._app: web.Application | None = None

    @property
    def app(self) -> web.Application | None:
        """The console's aiohttp application, once started."""
        return self._app

    @property
    def url(self) -> str:
        """`http://host:port/`."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    @property
    def loginUrl(self) -> str:
        """`url` with `?token=...` when the console has a token, else `url`.

        The page keeps the token in the tab's session storage and drops it from the address.
        """
        return self.url if self._token is None else f"{self.url}?token={self._token}"

    async def start(self) -> Console:
        """Serve; starts the context if it is not running. Returns this console.

        As Spark's UI does, when the port is taken the next ones are tried (up to
        `PORT_ATTEMPTS`); `url` says where it is.

        Raises:
            ListenError: `host` does not resolve, or no port could be bound.
        """
        hosts = self._hosts if self._hosts is not None else _host_names(self.host)
        # its owner says how long the context's stop may take: `stop()` is as graceful as ever
        self._app = create_app(
            self.ssc, auth=self.auth, allowed_hosts=hosts, insecure=self.insecure, stop_timeout=None
        )
        self._server = HttpServer(self._app)
        wanted = self.port
        self.port = await self._server.start(self.host, wanted, attempts=PORT_ATTEMPTS)
        if wanted and self.port != wanted:
            log.warning("port %d is taken: the console is on %s", wanted, self.url)
        if self.auth is None and not is_loopback(self.host):
            log.warning("the console on %s has no authentication (insecure=True)", self.url)
        log.info("reactive-spark console on %s", self.url)  # never the login URL: no token
        return self

    async def stop(self) -> None:
        """Stop the context (gracefully) if it runs, then serving.

        Live streams end at once, and fires whose bodies still arrive are answered 503.
        """
        if self._app is not None:
            await _release_clients(self._app)  # as a service's shutdown does, first
            # the server stays up while the context stops: a fire whose event was posted is
            # answered once it is accepted, and one waiting for room is refused (503), before
            # the server gives the requests still running its second and drops them
            lifecycle = self._app[LIFECYCLE_KEY]
            lifecycle.begin_stop()
            await lifecycle.stopped()
        if self._server is not None:
            await self._server.stop()
            self._server = None


async def serve(
    ssc: StreamingContext,
    host: str = "127.0.0.1",
    port: int = 4040,
    *,
    token: str | None = None,
    auth: Authenticator | None = None,
    allowed_hosts: Iterable[str] | None = None,
    insecure: bool = False,
) -> None:
    """Serve the console of `ssc` until the context stops (`ssc.serve` calls this).

    The keyword arguments are `Console`'s. Failed jobs do not end it (the console shows them);
    a scheduler crash does.

    Examples:
        ```python
        # a fragment, inside a coroutine; ssc is a StreamingContext
        await serve(ssc, port=4040, token=token)  # or: await ssc.serve(port=4040)
        ```
    """
    console = Console(
        ssc, host, port, token=token, auth=auth, allowed_hosts=allowed_hosts, insecure=insecure
    )
    await console.start()
    try:
        while True:
            try:
                await ssc.awaitTermination()
                return
            except JobFailedError:
                continue  # shown in the console, its event stream and the log; it goes on
    finally:
        await console.stop()
