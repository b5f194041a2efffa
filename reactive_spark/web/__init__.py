"""The web console: dashboard, JSON API, server-sent events and Prometheus metrics.

Examples:
    >>> from aiohttp import web
    >>> from reactive_spark.web import BearerToken, setup
    >>> service = web.Application()
    >>> console = setup(service, ssc, prefix="/reactive", auth=BearerToken("s3cret-token"))
"""

from reactive_spark.web.app import Console, create_app, serve, setup, wait_for_stop
from reactive_spark.web.auth import GRANT_KEY, Authenticator, BearerToken, Grant
from reactive_spark.web.history import History
from reactive_spark.web.keys import CONTEXT_KEY, HISTORY_KEY, PREFIX_KEY

__all__ = [
    "CONTEXT_KEY",
    "GRANT_KEY",
    "HISTORY_KEY",
    "PREFIX_KEY",
    "Authenticator",
    "BearerToken",
    "Console",
    "Grant",
    "History",
    "create_app",
    "serve",
    "setup",
    "wait_for_stop",
]
