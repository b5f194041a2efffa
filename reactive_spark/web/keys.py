"""What the console's aiohttp application keeps (typed `web.AppKey`s).

Examples:
    >>> from aiohttp import web
    >>> app = web.Application()
    >>> app[PREFIX_KEY] = "/reactive"
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext
    from reactive_spark.sources.http import BodyReads
    from reactive_spark.web.history import History
    from reactive_spark.web.lifecycle import ContextLifecycle

__all__ = ["BODIES_KEY", "CONTEXT_KEY", "HISTORY_KEY", "LIFECYCLE_KEY", "PREFIX_KEY"]

CONTEXT_KEY: web.AppKey[StreamingContext] = web.AppKey("reactive_spark_context")
HISTORY_KEY: web.AppKey[History] = web.AppKey("reactive_spark_history")
#: Where the console is mounted, for the links it gives (e.g. `"/reactive"`, or `""`).
PREFIX_KEY: web.AppKey[str] = web.AppKey("reactive_spark_prefix")
#: How the context starts and stops with the application (`web.lifecycle`).
LIFECYCLE_KEY: web.AppKey[ContextLifecycle] = web.AppKey("reactive_spark_lifecycle")
#: The fire bodies still arriving, which the application's shutdown answers 503 at once.
BODIES_KEY: web.AppKey[BodyReads] = web.AppKey("reactive_spark_bodies")
