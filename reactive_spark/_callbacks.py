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
    """Raise `InvalidCallbackError` naming the argument unless `func` is a plain callable.

    An async function is refused: it runs in a batch's thread, or is called by the engine as
    a plain function, so nothing would await what it returns and its body would never run.

    Examples:
        >>> async def save(rdd):
        ...     pass
        >>> require_callable(save, "func", "foreachRDD")
        Traceback (most recent call last):
        ...
        reactive_spark.errors.InvalidCallbackError: foreachRDD: func must be a plain function, \
got the async function save: nothing would await it, so its body would never run; make it a \
def, and start what must run on the event loop without waiting for it \
(asyncio.run_coroutine_threadsafe from a batch's thread, asyncio.create_task on the loop)
    """
    if not callable(func):
        raise InvalidCallbackError(f"{operation}: {argument} must be callable, got {func!r}")
    if _is_async(func):
        raise InvalidCallbackError(
            f"{operation}: {argument} must be a plain function, got the async function "
            f"{callable_name(func)}: nothing would await it, so its body would never run; "
            "make it a def, and start what must run on the event loop without waiting for it "
            "(asyncio.run_coroutine_threadsafe from a batch's thread, asyncio.create_task on "
            "the loop)"
        )


def _is_async(func: object) -> bool:
    """Whether calling `func` makes a coroutine or an async generator, which runs nothing.

    An async function, a partial of one, or an object whose `__call__` is one (a class is
    called to make an instance: only what it is counts).
    """
    call = None if isinstance(func, type) else inspect.getattr_static(type(func), "__call__", None)
    targets = (func,) if call is None else (func, call)
    return any(
        inspect.iscoroutinefunction(target) or inspect.isasyncgenfunction(target)
        for target in targets
    )


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
