"""Output operations: `foreachRDD`, `pprint`/`print`, `saveAsTextFiles`, `saveAsObjectFiles`.

Every output operation returns a DStream that passes its parent's RDDs on unchanged, so jobs
cascade: `x.saveAsTextFiles("daily").bind(daily).tailWindow(7, 7).saveAsTextFiles("weekly")`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyspark import RDD

from reactive_spark._callbacks import adapt_callback
from reactive_spark.dstream.files import batch_directory, batch_marker, save_atomically
from reactive_spark.errors import InvalidArgumentError
from reactive_spark.runtime import Runtime

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext
    from reactive_spark.dstream.base import DStream

__all__ = ["OutputOperations"]


class OutputOperations:
    """The output operations of DStream (a mixin; DStream provides `_output`)."""

    if TYPE_CHECKING:

        def _output(
            self,
            adapted: Callable[[tuple[RDD[Any], ...], Any], Any],
            operation: str,
            user: object = None,
            target: tuple[str, str | None] | None = None,
        ) -> DStream[Any]: ...

        def context(self) -> StreamingContext:
            """The StreamingContext this stream belongs to."""

    def foreachRDD(self, func: Callable[..., Any]) -> DStream[Any]:
        """Run `func` on every RDD of this stream; returns the output stream.

        `func` may take `(rdd)`, `(time, rdd)` or `(time, rdd, event)`; `time` is a
        timezone-aware UTC datetime.

        Examples:
            >>> import asyncio
            >>> from reactive_spark import Seconds
            >>> job = ssc.queueStream([[1, 2]]).foreachRDD(lambda t, rdd: print(t, rdd.collect()))
            >>> async def run():
            ...     await ssc.start()
            ...     await ssc.advanceTo(t0 + Seconds(1))
            ...     await ssc.stop(stopSparkContext=False)
            >>> asyncio.run(run())
            2024-01-01 00:00:01+00:00 [1, 2]
        """
        adapted = adapt_callback(func, 1, "func", "foreachRDD")
        return self._output(adapted, "foreachRDD", func)

    def pprint(self, num: int = 10) -> DStream[Any]:
        """Print the first `num` elements of every RDD under a `Time: <UTC datetime>` header.

        As PySpark's, but the header's time is the event's, in UTC (PySpark prints the batch
        time in the local time zone, without one).

        Examples:
            >>> import asyncio
            >>> from reactive_spark import Seconds
            >>> printed = ssc.queueStream([["a", "b", "a"]]).countByValue().pprint()
            >>> async def run():
            ...     await ssc.start()
            ...     await ssc.advanceTo(t0 + Seconds(1))
            ...     await ssc.stop(stopSparkContext=False)
            >>> asyncio.run(run())  # doctest: +NORMALIZE_WHITESPACE
            -------------------------------------------
            Time: 2024-01-01 00:00:01+00:00
            -------------------------------------------
            ('b', 1)
            ('a', 2)
        """
        return self._print(num, "pprint")

    def print(self, num: int = 10) -> DStream[Any]:
        """Alias of `pprint`, as in Scala's DStream.

        Examples:
            >>> printed = ssc.queueStream([range(100)]).print(5)
        """
        return self._print(num, "print")

    def _print(self, num: int, operation: str) -> DStream[Any]:
        if isinstance(num, bool) or not isinstance(num, int) or num < 0:
            raise InvalidArgumentError(f"num must be a non-negative int, got {num!r}")

        def take_and_print(rdds: tuple[RDD[Any], ...], event: Any) -> None:
            taken = rdds[0].take(num + 1)
            lines = [
                "-------------------------------------------",
                f"Time: {event.datetime}",
                "-------------------------------------------",
                *(str(record) for record in taken[:num]),
            ]
            if len(taken) > num:
                lines.append("...")
            sys.stdout.write("\n".join(lines) + "\n\n")
            sys.stdout.flush()

        return self._output(take_and_print, operation)

    def saveAsTextFiles(self, prefix: str, suffix: str | None = None) -> DStream[Any]:
        """Save every RDD as text under `prefix-<time ms>[.suffix]`, exactly once.

        Each batch is written to a hidden temporary directory and renamed into place; a batch
        directory that already exists is not written again, but by a backfill, which swaps the
        new one in its place atomically (`StreamingContext.backfill`). A second batch of the
        same millisecond writes `prefix-<time ms>_2[.suffix]` (see docs/concepts.md, outputs).

        Examples:
            >>> import asyncio, tempfile
            >>> from pathlib import Path
            >>> from reactive_spark import Seconds
            >>> out = Path(tempfile.mkdtemp())
            >>> saved = ssc.queueStream([["ERROR x"]]).saveAsTextFiles(str(out / "errors"), "txt")
            >>> async def run():
            ...     await ssc.start()
            ...     await ssc.advanceTo(t0 + Seconds(1))
            ...     await ssc.stop(stopSparkContext=False)
            >>> asyncio.run(run())
            >>> [path.name for path in out.iterdir()]
            ['errors-1704067201000.txt']
        """
        return self._save(
            prefix, suffix, "saveAsTextFiles", lambda rdd, path: rdd.saveAsTextFile(path)
        )

    def saveAsObjectFiles(self, prefix: str, suffix: str | None = None) -> DStream[Any]:
        """Save every RDD as pickled objects (`RDD.saveAsPickleFile`), exactly once.

        Read a batch back with `sc.pickleFile(path)`.

        Examples:
            >>> saved = ssc.queueStream([[("a", 1)]]).saveAsObjectFiles("out/pairs")
        """
        return self._save(
            prefix, suffix, "saveAsObjectFiles", lambda rdd, path: rdd.saveAsPickleFile(path)
        )

    def _save(
        self,
        prefix: str,
        suffix: str | None,
        operation: str,
        write: Callable[[RDD[Any], str], None],
    ) -> DStream[Any]:
        if not isinstance(prefix, str) or not prefix:
            raise InvalidArgumentError(
                f"{operation}: prefix must be a non-empty str, got {prefix!r}"
            )
        if suffix is not None and not isinstance(suffix, str):
            raise InvalidArgumentError(f"{operation}: suffix must be a str or None, got {suffix!r}")

        runtime = Runtime.of(self.context())

        def save(rdds: tuple[RDD[Any], ...], event: Any) -> None:
            marker, replace = batch_marker(event), runtime.replaces_outputs
            path = batch_directory(
                rdds[0].context, prefix, suffix, event.time, marker, replacing=replace
            )
            save_atomically(rdds[0], path, write, replace=replace, marker=marker)

        return self._output(save, f"{operation}({prefix})", target=(prefix, suffix))
