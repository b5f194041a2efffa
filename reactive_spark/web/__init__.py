"""The web console: dashboard, JSON API, server-sent events and Prometheus metrics.

Examples:
    >>> from aiohttp import web
    >>> from reactive_spark.web import setup
    >>> service = web.Application()
    >>> console = setup(service, ssc, prefix="/reactive")  # GET /reactive/ is the dashboard
"""

from reactive_spark.web.app import Console, create_app, serve, setup
from reactive_spark.web.history import History
from reactive_spark.web.keys import CONTEXT_KEY, HISTORY_KEY, PREFIX_KEY
from reactive_spark.web.metrics import ConsoleMetrics

__all__ = [
    "CONTEXT_KEY",
    "HISTORY_KEY",
    "PREFIX_KEY",
    "Console",
    "ConsoleMetrics",
    "History",
    "create_app",
    "serve",
    "setup",
]
