"""Input streams: where data enters the lineage. Each input says exactly what it read.

An input records what it consumed for an event (queue positions, file paths, offsets) with the
batch's `Reads`, so a batch can be planned, logged and re-created with the same inputs.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pyspark import RDD

from reactive_spark._validation import require_int
from reactive_spark.dependencies import Retention
from reactive_spark.dstream.base import DStream, ParentRDDs
from reactive_spark.dstream.files import hadoop_configuration
from reactive_spark.dstream.text_files import (
    DEFAULT_FORMAT,
    SplitReading,
    line_format,
    text_splits,
)
from reactive_spark.errors import DirectoryNotFoundError, InvalidArgumentError
from reactive_spark.events import Event, FileEvent
from reactive_spark.events.source import roots
from reactive_spark.sources.derived import DerivedEvent
from reactive_spark.sources.file_watcher import FileWatcherEventSource, visible_under
from reactive_spark.time import Duration, Time

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext
    from reactive_spark.planning import Reads

__all__ = ["FileInputDStream", "InputDStream", "QueueInputDStream", "ReceiverInputDStream"]


class InputDStream(DStream[Any]):
    """A stream with no parents; it reads data for each event it reacts to."""

    def __init__(self, ssc: StreamingContext, operation: str) -> None:
        super().__init__(ssc, [], operation)
        ssc.graph.add_input(self)

    def compute_rdd(self, event: Event, parents: ParentRDDs, reads: Reads) -> RDD[Any] | None:
        """Read for `event` (or what a re-planned batch read before), and record it.

        A re-planned batch in which the stream read nothing the first time (its read failed,
        or the stream is new) reads nothing again: read live, it would take what later batches
        read, and a rebuilt batch's would never be processed.
        """
        if reads.replayed is None:
            rdd, read = self._read(event)
        else:
            replayed = reads.replayed_read(self)
            if replayed is None:
                return None
            rdd, read = self._replay(event, replayed), replayed
        reads.recorded[self] = read
        return rdd

    def start(self) -> None:
        """Called once when the context starts, before any event (default: nothing)."""

    def span_floor(self, event: Event) -> Time:
        """Where the time an input's batches cover begins, for the batches of `event`'s source.

        The zero time; in a backfill, the tick of the event's timer before the range (where the
        live run's batch before the first backfilled one ran), so a stream bound to an hourly
        timer reads an hour in its first backfilled batch even beside a daily one.
        """
        while isinstance(event, DerivedEvent) and event.parent is not None:
            event = event.parent  # a derived source's batches follow its primary source's
        return self._runtime.ticks_before_backfill.get(event.source, self._ssc.zeroTime)

    def record_count(self, read: dict[str, Any]) -> int:
        """Records in a read: 0 unless the input counts them (as Spark's files and queues)."""
        return 0

    def _read(self, event: Event) -> tuple[RDD[Any] | None, dict[str, Any]]:
        raise NotImplementedError

    def _replay(self, event: Event, read: dict[str, Any]) -> RDD[Any] | None:
        """The RDD of a read recorded in a checkpoint, read again the same way."""
        raise NotImplementedError


class ReceiverInputDStream(InputDStream):
    """An input fed by a receiver that runs on the event loop while the context is active.

    What it received waits (`pending`) until a batch reads it.
    """

    def start_receiver(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start receiving on `loop` (when the context starts)."""
        raise NotImplementedError

    async def stop_receiver(self) -> None:
        """Stop receiving (when the context stops); what was received stays for batches."""
        raise NotImplementedError

    @property
    def pending(self) -> int:
        """Records received that no batch has read yet."""
        raise NotImplementedError

    def drop_unread(self) -> int:
        """Forget what no batch read (the context stopped), telling the listeners; how many."""
        raise NotImplementedError


class QueueInputDStream(InputDStream):
    """RDDs taken from a queue: one per event (`oneAtATime`) or all that wait, united.

    Once the queue is empty every event gets `default` (if given) or an empty RDD of one
    partition, as PySpark's queueStream does.
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
        self._one_at_atime = oneAtATime
        # what every event reads once the queue is empty: one RDD serves them all
        self._default = (
            sc.parallelize([], 1) if default is None else _as_rdd(sc, default, "default")
        )
        self._taken = 0
        self._exhausted: dict[str, Any] | None = None  # what every event reads once it is empty

    def _read(self, event: Event) -> tuple[RDD[Any] | None, dict[str, Any]]:
        first = self._taken
        if first < len(self._items):
            self._taken = first + 1 if self._one_at_atime else len(self._items)
            return self._take(first, self._taken), {"queue": [first, self._taken]}
        if self._exhausted is None or self._exhausted["queue"][0] != first:
            self._exhausted = {"queue": [first, first], "default": True}
        return self._default, self._exhausted

    def _replay(self, event: Event, read: dict[str, Any]) -> RDD[Any] | None:
        first, last = read["queue"]
        if read.get("default"):
            return self._default
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


def _as_rdd(sc: Any, item: RDD[Any] | Iterable[Any], argument: str) -> RDD[Any]:
    if isinstance(item, RDD):
        return item
    if isinstance(item, str | bytes) or not isinstance(item, Iterable):
        raise InvalidArgumentError(
            f"{argument} must hold RDDs or lists of elements, got {item!r}",
        )
    return sc.parallelize(list(item))  # type: ignore[no-any-return]


#: Spark's setting for how far back a file stream looks for files it has not read yet.
MIN_REMEMBER_SETTING = "spark.streaming.fileStream.minRememberDuration"
_TIME_UNITS = {"ms": 1, "s": 1000, "sec": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}


def min_remember_duration(sc: Any) -> Duration:
    """Spark's `spark.streaming.fileStream.minRememberDuration` (default 60 s).

    Examples:
        >>> min_remember_duration(sc)  # unless the SparkConf says otherwise
        Duration(60000 ms)
    """
    text = sc.getConf().get(MIN_REMEMBER_SETTING, "60s").strip().lower()
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = text[len(number) :] or "s"
    if unit not in _TIME_UNITS or not number.strip().isdigit():
        raise InvalidArgumentError(
            f"{MIN_REMEMBER_SETTING} must be a time such as 60s, 500ms or 2min, got {text!r}",
        )
    return Duration(int(number) * _TIME_UNITS[unit])


class FileInputDStream(InputDStream):
    """Text lines (or fixed-length binary records) of new files in a directory.

    Bound to a file watcher, it reads exactly the files of the event under its directory
    (subdirectories included: a recursive watcher fires for them). Otherwise it reads the
    files it has not read yet whose modification time lies in (previous event of this stream -
    `minRememberDuration`, this event] and after the context's zero time. So a file written
    elsewhere and moved in (it keeps its older modification time: Spark's own recipe) is read
    once, not dropped, if it arrives within `minRememberDuration` (Spark's
    `spark.streaming.fileStream.minRememberDuration`, default 60 s) of being written. Hidden
    files (`.` or `_`) are ignored, as Hadoop does. With `recordLength` every file is read as
    records of that many bytes (`binaryRecordsStream`), else as lines of text
    (`textFileStream`). The directory must exist when the context starts.
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
        self.minRememberDuration = min_remember_duration(ssc.sparkContext)
        self._last_time: Time | None = None
        self._read_files: dict[str, int] = {}  # path -> mtime (ms) of the files read recently
        self._format = DEFAULT_FORMAT
        self._reading = SplitReading(ssc.sparkContext)

    def start(self) -> None:
        """Check that the directory exists (a missing one would only give empty batches).

        Unless only file watchers of the directory make it read (directly, or through `filter`,
        `delay` and other operators): they create it as they start.
        Also reads how the Hadoop configuration splits files and ends lines.
        """
        self._format = line_format(hadoop_configuration(self._ssc.sparkContext).get)
        primaries = [root for source in self._ssc.graph.reaching(self) for root in roots(source)]
        if primaries and all(
            isinstance(source, FileWatcherEventSource) and source.path == self.directory
            for source in primaries
        ):
            return
        if not os.path.isdir(self.directory):
            found = "is not a directory" if os.path.exists(self.directory) else "does not exist"
            raise DirectoryNotFoundError(
                f"{self.name}: directory {self.directory} {found}; create it before "
                "starting the StreamingContext",
            )

    def recovery_retention(self) -> Retention:
        """The batches that read files a later batch must not read again."""
        return (
            super()
            .recovery_retention()
            .merge(Retention(count=1, duration=self.minRememberDuration))
        )

    def _read(self, event: Event) -> tuple[RDD[Any] | None, dict[str, Any]]:
        if isinstance(event, FileEvent):
            paths = sorted(
                path
                for path in event.paths
                if visible_under(path, self.directory) and os.path.isfile(path)
            )
        else:
            after = self.span_floor(event)  # files older than the start: never read, as Spark
            if self._last_time is not None:
                after = max(after, self._last_time - self.minRememberDuration)
            found = modified_between(self.directory, after, event.time)
            fresh = [(path, modified) for path, modified in found if path not in self._read_files]
            paths = [path for path, _ in fresh]
            self._remember(event, fresh)
        return self._load(paths), {"files": paths}

    def _remember(self, event: Event, fresh: list[tuple[str, int]]) -> None:
        """Keep the files read since the next event's horizon; forget the older ones."""
        self._last_time = event.time
        horizon = (event.time - self.minRememberDuration).milliseconds
        self._read_files.update(fresh)
        self._read_files = {p: m for p, m in self._read_files.items() if m > horizon}

    def _replay(self, event: Event, read: dict[str, Any]) -> RDD[Any] | None:
        paths = list(read["files"])
        if not isinstance(event, FileEvent):
            self._remember(event, [(path, _modified(path)) for path in paths])
        return self._load(paths)

    def _load(self, paths: list[str]) -> RDD[Any]:
        if self.recordLength is None:
            return self._reading.lines(text_splits(paths, self._format), self._format)
        sc = self._ssc.sparkContext
        if not paths:
            return sc.emptyRDD()
        return sc.union([sc.binaryRecords(path, self.recordLength) for path in paths])


def _modified(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns // 1_000_000
    except FileNotFoundError:  # deleted since it was read: it cannot be read twice
        return 0


def modified_between(directory: str, after: Time, upTo: Time) -> list[tuple[str, int]]:
    """`(path, mtime ms)` of the visible files directly in `directory`, mtime in `(after, upTo]`.

    Raises `DirectoryNotFoundError` if the directory is gone.
    """
    found = []
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        raise DirectoryNotFoundError(f"directory {directory} does not exist (any more)") from None
    for entry in entries:
        if entry.name.startswith((".", "_")) or not entry.is_file():
            continue
        modified = entry.stat().st_mtime_ns // 1_000_000
        if after.milliseconds < modified <= upTo.milliseconds:
            found.append((entry.path, modified))
    return sorted(found)
