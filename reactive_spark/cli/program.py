"""The user's program: loading `MODULE[:FUNC]` (and `--py-files`) before Spark, building it.

A mistake in the command line, the module or its function answers at once, in one line, as an
`InvalidArgumentError`, before Spark starts.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from reactive_spark._callbacks import callable_name
from reactive_spark.context import StreamingContext
from reactive_spark.errors import InvalidArgumentError
from reactive_spark.failures import is_library_file


def load(target: str) -> Callable[..., Any]:
    """The function `MODULE[:FUNC]` names (`FUNC` defaults to `build`), checked before Spark.

    A missing file or module, a module whose import raises, a missing function or one that
    cannot be called as `FUNC(ssc)` is an `InvalidArgumentError` of one line.

    Examples:
        >>> load("reactive_spark.time:Seconds").__name__
        'Seconds'
        >>> try:  # doctest: +NORMALIZE_WHITESPACE
        ...     load("reactive_spark.demo:generate_logs")
        ... except InvalidArgumentError as error:
        ...     print(error)
        reactive_spark.demo:generate_logs takes (directory, start, days, day=None);
        reactive-spark calls generate_logs(ssc) with a StreamingContext
    """
    module_name, _, function = target.partition(":")
    function = function or "build"
    if module_name.endswith(".py") or os.sep in module_name:
        path = Path(module_name).resolve()
        if not path.is_file():
            raise InvalidArgumentError(f"MODULE {module_name!r} is not a file")
        sys.path.insert(0, str(path.parent))
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        loader = spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        importing(module_name, lambda: loader.exec_module(module))
    else:
        sys.path.insert(0, os.getcwd())
        module = importing(module_name, lambda: importlib.import_module(module_name))
    found = getattr(module, function, None)
    if found is None:
        raise InvalidArgumentError(f"{module_name} has no function {function!r}")
    if not callable(found):
        raise InvalidArgumentError(
            f"{module_name}:{function} must be a function, got {type(found).__name__} {found!r}"
        )
    require_one_argument(found, f"{module_name}:{function}", function)
    return found  # type: ignore[no-any-return]


def importing(module_name: str, load_module: Callable[[], Any]) -> Any:
    """`load_module()`, an import failure being one line: the exception and where it was raised."""
    try:
        return load_module()
    except ModuleNotFoundError as exc:
        if exc.name is not None and f"{module_name}.".startswith(f"{exc.name}."):
            raise InvalidArgumentError(
                f"no module named {module_name!r} (MODULE is a dotted module name or a .py file)"
            ) from None
        raise InvalidArgumentError(f"importing {module_name} failed: {one_line(exc)}") from None
    except Exception as exc:
        raise InvalidArgumentError(f"importing {module_name} failed: {one_line(exc)}") from None


def one_line(exc: BaseException) -> str:
    """`Type: message`, and the file and line of the user's that raised it.

    The innermost frame of the user's code (`failures.is_library_file`), else the innermost:
    a `build(ssc)` whose call into reactive-spark raised names the line of `build`.

    A `SyntaxError` in a file is where the parser found it: importing the file, its frames
    are the import system's (one of `compile` or `ast.literal_eval` on a string has the
    user's frame that called it).

    Examples:
        >>> one_line(ValueError("no"))
        'ValueError: no'
        >>> one_line(SyntaxError("expected ':'", (__file__, 1, 15, "def build(ssc)")))
        "SyntaxError: expected ':' (.../program.py:1)"
    """
    if isinstance(exc, SyntaxError) and exc.filename and os.path.isfile(exc.filename):
        return f"{type(exc).__name__}: {exc.msg} ({exc.filename}:{exc.lineno or 1})"
    frames = traceback.extract_tb(exc.__traceback__)
    users = [frame for frame in frames if not is_library_file(frame.filename)] or frames
    where = f" ({users[-1].filename}:{users[-1].lineno})" if users else ""
    return f"{type(exc).__name__}: {exc}{where}"


def require_one_argument(function: Callable[..., Any], shown: str, name: str) -> None:
    """Raise `InvalidArgumentError` unless `function(ssc)` is a call it accepts."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without one: let the call tell
        return
    try:
        signature.bind(None)
    except TypeError:
        bare = signature.replace(
            parameters=[
                parameter.replace(annotation=inspect.Parameter.empty)
                for parameter in signature.parameters.values()
            ],
            return_annotation=inspect.Signature.empty,
        )
        raise InvalidArgumentError(
            f"{shown} takes {bare}; reactive-spark calls {name}(ssc) with a StreamingContext"
        ) from None


def on_path(pyFiles: Sequence[str]) -> None:
    """Put `--py-files` on this process's path (a `.py` file's folder, a `.zip` or `.egg` itself).

    As Spark does once it runs; the user's module may import from them before. A missing file
    is an `InvalidArgumentError`.
    """
    for path in pyFiles:
        if not Path(path).is_file():
            raise InvalidArgumentError(f"--py-files names no file: {path!r}")
        entry = Path(path).resolve()
        sys.path.insert(1, str(entry.parent if entry.suffix.lower() == ".py" else entry))


async def build(function: Callable[..., Any], ssc: StreamingContext) -> None:
    """Call the user's `build(ssc)`, awaiting it if it is a coroutine function.

    What it raises is an `InvalidArgumentError` saying so in a line, with where it was raised,
    as an import that fails is: the command's own frames are no help to its reader.
    """
    try:
        result = function(ssc)
        if inspect.isawaitable(result):
            await result
    except Exception as exc:
        raise InvalidArgumentError(
            f"{callable_name(function)}(ssc) failed: {one_line(exc)}"
        ) from None
