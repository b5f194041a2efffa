"""What the console shows of values it did not make: always valid JSON, no absolute library paths.

Events carry whatever their sources produced (an observable may emit `float("nan")`, a tuple, an
object, a structure nested a thousand deep); tracebacks name files where the driver and the
executors installed their libraries. `shown` turns any value into JSON the dashboard can parse,
`dumps` refuses anything else, and `relative_paths` shortens the paths of a traceback.

Examples:
    >>> shown({"v": float("nan"), "when": (1, 2), 3: float("-inf")})
    {'v': 'NaN', 'when': [1, 2], '3': '-Infinity'}
    >>> relative_paths('File "/opt/venv/lib/python3.11/site-packages/pyspark/worker.py", line 1')
    'File "pyspark/worker.py", line 1'
"""

from __future__ import annotations

import json
import math
import os
import re
import sysconfig
from typing import Any

from aiohttp import web

__all__ = [
    "MAX_KEPT",
    "MAX_SHOWN_DEPTH",
    "dumps",
    "json_response",
    "kept",
    "kept_tail",
    "relative_paths",
    "shown",
]

#: How deeply a shown value nests; deeper parts are replaced by a note.
MAX_SHOWN_DEPTH = 256
#: How long the text of a value JSON cannot hold (its repr) may be.
MAX_REPR = 1000
#: About how many characters of JSON the console keeps of one event's fields (or of what one
#: batch read): the rest of a bigger value is cut, so the history and the live streams are
#: bounded in bytes, not only in records (a 1 MB request body is kept as its first 8 KB).
MAX_KEPT = 8192
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


def kept(value: Any) -> Any:
    """`shown(value)` cut to about `MAX_KEPT` characters: what the console keeps of a value.

    A long string keeps its start and says how long it was; a long list or dict keeps its first
    items and says how many more it had.

    Examples:
        >>> kept({"body": "x" * 10_000})["body"][-21:]
        'x… (10000 characters)'
        >>> kept(list(range(5000)))[-1]
        '… (3671 more items)'
    """
    budget = [MAX_KEPT]
    return _cut(shown(value), budget)


def _cut(value: Any, budget: list[int]) -> Any:
    """`value` (as `shown` made it) within what is left of `budget` (characters), which it uses.

    Every part costs at least a character (an empty list or dict too), a key as its text.
    """
    if isinstance(value, str):
        left = budget[0]
        budget[0] -= len(value) + 2
        if len(value) <= left:
            return value
        return f"{value[: max(left, 0)]}… ({len(value)} characters)"
    if isinstance(value, list):
        budget[0] -= 2
        items = []
        for position, item in enumerate(value):
            if budget[0] <= 0:
                items.append(f"… ({len(value) - position} more items)")
                break
            budget[0] -= 2  # ", "
            items.append(_cut(item, budget))
        return items
    if isinstance(value, dict):
        budget[0] -= 2
        fields = {}
        for position, (key, item) in enumerate(value.items()):
            if budget[0] <= 0:
                fields["…"] = f"{len(value) - position} more keys"
                break
            budget[0] -= 4  # ": ", ", "
            name = _cut(key, budget)  # before its value, which may use up the budget
            fields[name] = _cut(item, budget)
        return fields
    if isinstance(value, int) and value.bit_length() > 1000:  # str() refuses past 4,300 digits
        digits = int(value.bit_length() * 0.30103) + 1
        budget[0] -= 40
        return f"(an int of about {digits} digits)"
    budget[0] -= len(str(value)) + 1  # a number, a bool, None
    return value


def kept_tail(text: str) -> str:
    """`text` cut to about `MAX_KEPT` characters from its end (a traceback ends with its error).

    Examples:
        >>> kept_tail("x" * 10_000 + " ValueError: bad")[:30]
        '(10016 characters) …xxxxxxxxxx'
    """
    if len(text) <= MAX_KEPT:
        return text
    return f"({len(text)} characters) …{text[-MAX_KEPT:]}"


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


def _library_roots() -> list[str]:
    paths = sysconfig.get_paths()
    roots = {
        paths[name] for name in ("purelib", "platlib", "stdlib", "platstdlib") if name in paths
    }
    return sorted((root.rstrip(os.sep) + os.sep for root in roots), key=len, reverse=True)


#: A path up to an installed library; it starts a token (after a quote, a space or the start),
#: which keeps the search linear: from every position of a long word it would be quadratic
#: (a 100 KB error message took 52 s).
_INSTALLED = re.compile(r"(?<![^\"'\s])[^\"'\s]*[/\\](?:site|dist)-packages[/\\]")


def relative_paths(text: str) -> str:
    """`text` with no absolute path of an installed library or of the working directory.

    Library paths become relative to where libraries are installed (`pyspark/worker.py`),
    paths in the working directory relative to it, so the user's own files can still be found.
    """
    text = _INSTALLED.sub("", text)
    for root in _library_roots():
        text = text.replace(root, "")
    cwd = os.getcwd().rstrip(os.sep) + os.sep
    return text.replace(cwd, "") if cwd != os.sep else text
