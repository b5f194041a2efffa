"""Input streams: where data enters the lineage. Each input says exactly what it read.

`describeRead(event)` returns what the input consumed for an event (queue positions, file
paths), so a batch can be planned, logged and re-created with the same inputs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pyspark import RDD

from reactive_spark._validation import require_int
from reactive_spark.dstream.base import DStream
from reactive_spark.errors import InvalidArgumentError
from reactive_spark.events import Event, FileEvent
from reactive_spark.time import Time

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext

__all__ = ["FileInputDStream", "InputDStream", "QueueInputDStream"]


class InputDStream(DStream[Any]):
    """A stream with no parents; it reads data for each event it reacts to."""

    def __init__(self, ssc: StreamingContext, operation: str) -> None:
        super().__init__(ssc, [], operation)
        ssc._graph.addInput(self)

    def _compute(self, event: Event) -> RDD[Any] | None:
        replayed = self._ssc._graph.replayedRead(self)
        if replayed is None:
            rdd, read = self._read(event)
        else:
            rdd, read = self._replay(event, replayed), replayed
        self._recordRead(event, read)
        return rdd

    def start(self) -> None:
        """Called once when the context starts, before any event (default: nothing)."""

    def _read(self, event: Event) -> tuple[RDD[Any] | None, dict[str, Any]]:
        raise NotImplementedError

    def _replay(self, event: Event, read: dict[str, Any]) -> RDD[Any] | None:
        """The RDD of a read recorded in a checkpoint, read again the same way."""
        raise NotImplementedError


class QueueInputDStream(InputDStream):
    """RDDs taken from a queue: one per event (`oneAtATime`) or all that wait, united.

    Once the queue is empty every event gets `default` (if given) or an empty RDD, as Spark's
    queueStream does.
    """

    def __init__(
        self,
        ssc: StreamingContext,
        rdds: Iterable[RDD[Any] | Iterable[Any]],
        oneAtATime: bool = True,
        default: RDD[Any] | Iterable[Any] | None = None,
    ) -> None:
        super().__init__(ssc, "queueStream")
        sc = ssc.sparkContext
        # consumed RDDs stay listed, so a batch re-planned after a restart takes the same ones
        self._items: list[RDD[Any]] = [_as_rdd(sc, item, "rdds") for item in rdds]
        self._oneAtATime = oneAtATime
        self._default = None if default is None else _as_rdd(sc, default, "default")
        self._taken = 0

    def _read(self, event: Event) -> tuple[RDD[Any] | None, dict[str, Any]]:
        first = self._taken
        if first < len(self._items):
            self._taken = first + 1 if self._oneAtATime else len(self._items)
            return self._take(first, self._taken), {"queue": [first, self._taken]}
        return self._fallback(), {"queue": [first, first], "default": True}

    def _replay(self, event: Event, read: dict[str, Any]) -> RDD[Any] | None:
        first, last = read["queue"]
        if read.get("default"):
            return self._fallback()
        if last > len(self._items):
            raise InvalidArgumentError(
                f"{self.name} recorded RDDs {first}..{last - 1} of its queue, but the queue "
                f"holds {len(self._items)}; re-create it with the same RDDs after a restart",
            )
        self._taken = max(self._taken, last)
        return self._take(first, last)

    def _take(self, first: int, last: int) -> RDD[Any]:
        items = self._items[first:last]
        return items[0] if len(items) == 1 else self._ssc.sparkContext.union(items)

    def _fallback(self) -> RDD[Any]:
        if self._default is None:
            self._default = self._ssc.sparkContext.emptyRDD()  # one serves every later event
        return self._default


def _as_rdd(sc: Any, item: RDD[Any] | Iterable[Any], argument: str) -> RDD[Any]:
    if isinstance(item, RDD):
        return item
    if isinstance(item, str | bytes) or not isinstance(item, Iterable):
        raise InvalidArgumentError(
            f"{argument} must hold RDDs or lists of elements, got {item!r}",
        )
    return sc.parallelize(list(item))  # type: ignore[no-any-return]


class FileInputDStream(InputDStream):
    """Text lines (or fixed-length binary records) of new files in a directory.

    Bound to a file watcher, it reads exactly the files of the event. Otherwise it reads the
    files whose modification time lies in (previous event of this stream, this event]; the
    first event reads files modified after the context's zero time. Hidden files (`.` or `_`)
    are ignored, as Hadoop does. With `recordLength` every file is read as records of that many
    bytes (`ssc.binaryRecordsStream`), else as lines of text (`ssc.textFileStream`).
    """

    def __init__(
        self, ssc: StreamingContext, directory: str, recordLength: int | None = None
    ) -> None:
        if not isinstance(directory, str) or not directory:
            raise InvalidArgumentError(f"directory must be a non-empty str, got {directory!r}")
        if recordLength is not None:
            require_int(recordLength, "recordLength")
        operation = "textFileStream" if recordLength is None else "binaryRecordsStream"
        super().__init__(ssc, f"{operation}({directory})")
        self.directory = os.path.abspath(directory)
        self.recordLength = recordLength
        self._lastTime: Time | None = None

    def _read(self, event: Event) -> tuple[RDD[Any] | None, dict[str, Any]]:
        if isinstance(event, FileEvent):
            paths = sorted(
                path
                for path in event.paths
                if _inside(path, self.directory) and os.path.isfile(path)
            )
        else:
            since = self._ssc.zeroTime if self._lastTime is None else self._lastTime
            paths = modified_between(self.directory, since, event.time)
            self._lastTime = event.time
        return self._load(paths), {"files": paths}

    def _replay(self, event: Event, read: dict[str, Any]) -> RDD[Any] | None:
        if not isinstance(event, FileEvent):
            self._lastTime = event.time
        return self._load(list(read["files"]))

    def _load(self, paths: list[str]) -> RDD[Any]:
        sc = self._ssc.sparkContext
        if self.recordLength is None:
            return _text_files(sc, paths)
        if not paths:
            return sc.emptyRDD()
        return sc.union([sc.binaryRecords(path, self.recordLength) for path in paths])


def modified_between(directory: str, after: Time, upTo: Time) -> list[str]:
    """Visible files directly in `directory` whose mtime (ms) lies in `(after, upTo]`."""
    found = []
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return []
    for entry in entries:
        if entry.name.startswith((".", "_")) or not entry.is_file():
            continue
        modified = entry.stat().st_mtime_ns // 1_000_000
        if after.milliseconds < modified <= upTo.milliseconds:
            found.append(entry.path)
    return sorted(found)


def _inside(path: str, directory: str) -> bool:
    name = os.path.basename(path)
    return os.path.dirname(os.path.abspath(path)) == directory and not name.startswith((".", "_"))


def _text_files(sc: Any, paths: list[str]) -> RDD[Any]:
    if not paths:
        return sc.emptyRDD()  # type: ignore[no-any-return]
    if any("," in path for path in paths):
        return sc.union([sc.textFile(path) for path in paths])  # type: ignore[no-any-return]
    return sc.textFile(",".join(paths))  # type: ignore[no-any-return]
