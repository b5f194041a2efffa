"""What the console shows of values it did not make: always valid JSON.

Events carry whatever their sources produced (an observable may emit `float("nan")`, a tuple, an
object, a structure nested a thousand deep). `shown` turns any value into JSON the dashboard can
parse, and `dumps` refuses anything else.

Examples:
    >>> shown({"v": float("nan"), "when": (1, 2), 3: float("-inf")})
    {'v': 'NaN', 'when': [1, 2], '3': '-Infinity'}
"""

from __future__ import annotations

import json
import math
from typing import Any

from aiohttp import web

__all__ = ["MAX_SHOWN_DEPTH", "dumps", "json_response", "shown"]

#: How deeply a shown value nests; deeper parts are replaced by a note.
MAX_SHOWN_DEPTH = 256
#: How long the text of a value JSON cannot hold (its repr) may be.
MAX_REPR = 1000
_NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


def shown(value: Any, depth: int = 0) -> Any:
    """`value` as JSON can hold it, whatever it is.

    Non-finite numbers become strings (`"NaN"`, `"Infinity"`), tuples lists, keys strings,
    other objects their (shortened) repr; nesting is cut at `MAX_SHOWN_DEPTH`.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else _NON_FINITE[value]
    if depth >= MAX_SHOWN_DEPTH:
        return f"(nested deeper than {MAX_SHOWN_DEPTH})"
    if isinstance(value, dict):
        return {_key(key): shown(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [shown(item, depth + 1) for item in value]
    try:
        text = repr(value)
    except Exception as exc:  # a user's __repr__ may raise (or recurse): show that, not fail
        text = f"<{type(value).__name__}: repr raised {type(exc).__name__}>"
    return text if len(text) <= MAX_REPR else text[: MAX_REPR - 1] + "…"


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    converted = shown(key, MAX_SHOWN_DEPTH - 1)
    return converted if isinstance(converted, str) else json.dumps(converted)


def dumps(value: Any) -> str:
    """Strict JSON text of `value` (`allow_nan=False`): what the console answers."""
    return json.dumps(value, allow_nan=False)


def json_response(data: Any, status: int = 200) -> web.Response:
    """A JSON answer of `shown(data)`: valid JSON whatever `data` holds."""
    return web.json_response(shown(data), status=status, dumps=dumps)
