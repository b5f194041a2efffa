"""Adapting user callbacks to the arguments an operation passes, by their signature.

PySpark lets `foreachRDD(f)` take `f(rdd)` or `f(time, rdd)`; reactive-spark also allows
`f(time, rdd, event)`. The shape is read with `inspect.signature`, which understands
`functools.partial`, bound methods and callables with `__call__`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from reactive_spark.errors import InvalidCallbackError

__all__ = ["adapt_callback", "callable_name", "require_callable"]

Adapted = Callable[[tuple[Any, ...], Any], Any]


def require_callable(func: object, argument: str, operation: str) -> None:
    """Raise `InvalidCallbackError` naming the argument when `func` is not callable."""
    if not callable(func):
        raise InvalidCallbackError(f"{operation}: {argument} must be callable, got {func!r}")


def require_positional(func: object, count: int, argument: str, operation: str) -> None:
    """Raise `InvalidCallbackError` unless `func` can be called with `count` positional arguments.

    A callable whose signature cannot be read is taken at its word.

    Examples:
        >>> require_positional(lambda done, total, time: None, 3, "progress", "backfill")
        >>> require_positional(print, 3, "progress", "backfill")
    """
    require_callable(func, argument, operation)
    shape = _positional_range(func)  # type: ignore[arg-type] # callable, checked above
    if shape is not None and not shape[0] <= count <= shape[1]:
        takes = (
            "has required keyword-only parameters" if shape[0] < 0 else f"takes {_describe(*shape)}"
        )
        raise InvalidCallbackError(
            f"{operation}: {argument} must take {count} positional arguments; "
            f"{callable_name(func)} {takes}"
        )


def callable_name(func: object) -> str:
    """A readable name for a user function (qualified name, or the partial's function)."""
    target = func
    while hasattr(target, "func") and not hasattr(target, "__qualname__"):
        target = target.func
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    return str(name) if name else repr(func)


def _positional_range(func: Callable[..., Any]) -> tuple[int, float] | None:
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    required = 0
    accepted: float = 0
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            accepted = float("inf")
        elif parameter.kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            accepted += 1
            if parameter.default is inspect.Parameter.empty:
                required += 1
        elif (
            parameter.kind is inspect.Parameter.KEYWORD_ONLY
            and parameter.default is inspect.Parameter.empty
        ):
            return (-1, -1)
    return (required, accepted)


def adapt_callback(func: Any, data_args: int, argument: str, operation: str) -> Adapted:
    """Wrap `func` so it can always be called as `adapted(data, event)`.

    `data` is a tuple of `data_args` values (RDDs). `func` may take `(*data)`,
    `(time, *data)` or `(time, *data, event)`, `time` being `event.datetime` (computed only for
    functions that take it); the shape is chosen by its signature, preferring the fewest
    arguments it can take. A callable whose signature cannot be read is given the data alone,
    as PySpark would.

    Examples:
        >>> adapted = adapt_callback(lambda rdd: rdd * 2, 1, "func", "transform")
        >>> adapted((21,), None)
        42
    """
    require_callable(func, argument, operation)
    shape = _positional_range(func)
    if shape is None:
        return lambda data, event: func(*data)
    required, accepted = shape
    for extra in (0, 1, 2):
        count = data_args + extra
        if required <= count <= accepted:
            if extra == 0:
                if data_args == 1:  # most operations: no tuple unpacking per call
                    return lambda data, event: func(data[0])
                return lambda data, event: func(*data)
            if extra == 1:
                return lambda data, event: func(event.datetime, *data)
            return lambda data, event: func(event.datetime, *data, event)
    data_names = ", ".join(["rdd"] * data_args) if data_args != 2 else "rdd_a, rdd_b"
    raise InvalidCallbackError(
        f"{operation}: {argument} must take ({data_names}), (time, {data_names}) or "
        f"(time, {data_names}, event); {callable_name(func)} takes "
        f"{_describe(required, accepted)} positional arguments",
    )


def _describe(required: int, accepted: float) -> str:
    if required < 0:
        return "required keyword-only"
    if accepted == float("inf"):
        return f"at least {required}"
    if required == accepted:
        return str(required)
    return f"{required} to {int(accepted)}"
