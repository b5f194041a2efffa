"""Blocking calls off the event loop: the threads a context runs them in, which end with it.

Everything a context does that may block (Spark through Py4J, files, a checkpoint's writes)
runs in its `BlockingCalls`, except its batches, which the scheduler's worker thread runs
(`scheduler.py`). See docs/architecture.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["BlockingCalls"]

R = TypeVar("R")


class BlockingCalls:
    """The threads a context runs blocking calls in, off the event loop; they end with it.

    Threads are made when first needed (at most `threads` at once) and joined by `close()`,
    so a stopped context leaves none behind in the host's process.

    Examples:
        >>> import asyncio
        >>> calls = BlockingCalls()
        >>> async def main():
        ...     try:
        ...         return await calls.run(sum, [1, 2, 3])
        ...     finally:
        ...         await calls.close()
        >>> asyncio.run(main())
        6
    """

    def __init__(self, threads: int = 4) -> None:
        self._threads = threads
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    async def run(self, func: Callable[..., R], *args: Any) -> R:
        """`func(*args)` in one of the threads, in the caller's context variables."""
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    self._threads, thread_name_prefix="reactive-spark-blocking"
                )
            executor = self._executor
        call = functools.partial(contextvars.copy_context().run, func, *args)
        return await asyncio.get_running_loop().run_in_executor(executor, call)

    async def close(self) -> None:
        """Wait for the calls that run, and end the threads (a later `run` makes new ones).

        The loop goes on meanwhile: a thread of its own waits for them, and has ended too.
        """
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is None:
            return
        loop = asyncio.get_running_loop()
        ended = loop.create_future()

        def shut_down() -> None:
            executor.shutdown(wait=True)
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
                loop.call_soon_threadsafe(ended.set_result, None)

        closer = threading.Thread(target=shut_down, name="reactive-spark-blocking-close")
        closer.start()
        await ended
        closer.join()  # it has only to return
