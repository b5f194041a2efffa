"""The input streams a StreamingContext makes (`ssc.queueStream`, ...), and `union`, `transform`.

A mixin of `StreamingContext`, as the operations of DStream are mixins of DStream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from pyspark import RDD, StorageLevel

from reactive_spark._callbacks import adapt_callback
from reactive_spark._validation import require_bool
from reactive_spark.dependencies import EventDependency
from reactive_spark.dstream.base import (
    DStream,
    TransformedDStream,
    UnionDStream,
    require_same_slide,
    require_stream,
)
from reactive_spark.dstream.inputs import FileInputDStream, QueueInputDStream
from reactive_spark.dstream.socket import SocketInputDStream
from reactive_spark.errors import InvalidArgumentError
from reactive_spark.log.stream import DirectLogInputDStream

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext
    from reactive_spark.log.backend import LogBackend, LogRecord
    from reactive_spark.log.sinks import TransactionalSink

__all__ = ["InputStreamDefinitions"]


class InputStreamDefinitions:
    """The methods of `StreamingContext` that make input streams (a mixin)."""

    def queueStream(
        self,
        rdds: Iterable[RDD[Any] | Iterable[Any]],
        oneAtATime: bool = True,
        default: RDD[Any] | Iterable[Any] | None = None,
    ) -> DStream[Any]:
        """A stream of RDDs (or lists) from a queue, one per event or all at once.

        Once the queue is empty each event gets `default`, or an empty RDD.

        Examples:
            >>> counts = ssc.queueStream([[1, 2], [3]]).count()
        """
        if isinstance(rdds, str | bytes) or not isinstance(rdds, Iterable):
            raise InvalidArgumentError(f"rdds must be a sequence of RDDs or lists, got {rdds!r}")
        require_bool(oneAtATime, "oneAtATime")
        return QueueInputDStream(_context(self), rdds, oneAtATime, default)

    def textFileStream(self, directory: str) -> DStream[str]:
        """Lines of the files that appear in `directory`.

        Bound to a file watcher it reads the event's files; otherwise the files modified
        between the stream's previous event and this one.

        Examples:
            >>> errors = ssc.textFileStream("logs").filter(lambda line: "ERROR" in line)
        """
        return FileInputDStream(_context(self), directory)

    def socketTextStream(
        self,
        hostname: str,
        port: int,
        storageLevel: StorageLevel = StorageLevel.MEMORY_AND_DISK_2,
    ) -> DStream[str]:
        """UTF-8 lines received over TCP from `hostname:port`, as in pyspark.streaming.

        A receiver on the event loop connects (and reconnects after a failure); each line is
        stamped with its arrival, and a batch reads the lines that arrived in (previous event,
        this event]. `storageLevel` is accepted for PySpark's signature: lines wait on the driver
        until their batch.

        Examples:
            >>> words = ssc.socketTextStream("127.0.0.1", 9999).flatMap(lambda line: line.split())
        """
        return SocketInputDStream(_context(self), hostname, port, storageLevel)

    def binaryRecordsStream(self, directory: str, recordLength: int) -> DStream[bytes]:
        """Fixed-length records (`recordLength` bytes) of the files that appear in `directory`.

        Files are picked as by `textFileStream`.

        Examples:
            >>> headers = ssc.binaryRecordsStream("frames", 16).map(lambda record: record[:4])
        """
        return FileInputDStream(_context(self), directory, recordLength)

    def directStream(
        self,
        log: LogBackend,
        topics: Iterable[str],
        fromOffsets: Mapping[tuple[str, int], int] | None = None,
        startingOffsets: str = "latest",
        maxRatePerPartition: float | None = None,
        messageHandler: Callable[[LogRecord], Any] | None = None,
        *,
        maxRecordsPerBatch: int | None = None,
        backpressure: bool = False,
        initialRate: float | None = None,
        minRate: float = 100,
        commitsTo: TransactionalSink | None = None,
    ) -> DirectLogInputDStream:
        """Records of `topics` in `log`, each batch an exact offset range per partition.

        Each batch reads, per partition, from where the previous one stopped (first from
        `fromOffsets[(topic, partition)]`, else where `commitsTo` committed, else the
        `startingOffsets` end of the log) up to the latest offset, or `maxRatePerPartition`
        records per second since the previous batch, and at most `maxRecordsPerBatch` records
        in all, split among the partitions in proportion to their backlogs. With
        `backpressure=True`, Spark's PID rate estimator (at least `minRate` records per
        second) learns from each completed batch how many records per second the batches
        sustain, and bounds the next batch by that rate times the time it covers;
        `initialRate` bounds the batches before its first estimate (without backpressure: the
        first batch after a start or a recovery). See docs/logs.md, "Rate control". Elements
        are `messageHandler(record)`, by default `(key, value)`; the batch's RDD has
        `offsetRanges()`.

        `commitsTo` is the `TransactionalSink` the stream's batches commit their ranges to:
        the stream starts where its commits stopped (where `fromOffsets` does not say), and
        before each batch goes back to them, so a batch whose commit failed is read again by
        the next one, in this run and after a restart. See docs/logs.md, "Delivery".

        Examples:
            >>> import os, tempfile
            >>> from reactive_spark import Minutes
            >>> from reactive_spark.log import FileLog
            >>> log = FileLog(tempfile.mkdtemp())
            >>> log.create_topic("clicks", partitions=2)
            >>> every_minute = ssc.timer(t0, None, Minutes(1), "minutely")
            >>> clicks = ssc.directStream(log, ["clicks"]).bind(every_minute)
            >>> capped = ssc.directStream(log, ["clicks"], maxRecordsPerBatch=10_000)
            >>> paced = ssc.directStream(log, ["clicks"], backpressure=True, initialRate=1_000)
            >>> from reactive_spark.log import Database, TransactionalSink
            >>> sink = TransactionalSink(Database.sqlite(os.path.join(tempfile.mkdtemp(), "t.db")))
            >>> counted = ssc.directStream(log, "clicks", commitsTo=sink)
        """
        return DirectLogInputDStream(
            _context(self),
            log,
            topics,
            fromOffsets,
            startingOffsets,
            maxRatePerPartition,
            messageHandler,
            maxRecordsPerBatch=maxRecordsPerBatch,
            backpressure=backpressure,
            initialRate=initialRate,
            minRate=minRate,
            commitsTo=commitsTo,
        )

    def union(self, *dstreams: DStream[Any]) -> DStream[Any]:
        """The elements of all `dstreams`, for each event, in argument order.

        The streams must slide alike, as in PySpark (`InvalidArgumentError`, a ValueError,
        otherwise). A union of direct log streams merges their records in a recorded order
        (inputs in argument order, then partition, then offset) and its RDDs have
        `offsetRanges()`; see `UnionDStream`.

        Examples:
            >>> lines = ssc.queueStream([["ERROR a", "WARN b", "INFO c"]])
            >>> errors = lines.filter(lambda line: "ERROR" in line)
            >>> warnings = lines.filter(lambda line: "WARN" in line)
            >>> both = ssc.union(errors, warnings)
        """
        if not dstreams:
            raise InvalidArgumentError("union needs at least one DStream, got none")
        if len(dstreams) == 1 and isinstance(dstreams[0], list | tuple):
            raise InvalidArgumentError(
                f"union takes the streams themselves, got a {type(dstreams[0]).__name__} of "
                "them: call ssc.union(*streams)"
            )
        streams = self._own_streams(dstreams)
        return UnionDStream(_context(self), streams, "All DStreams should have same slide duration")

    def _own_streams(self, dstreams: Sequence[DStream[Any]]) -> list[DStream[Any]]:
        """`dstreams` as a list, if it holds at least one DStream, all of this context."""
        if isinstance(dstreams, DStream):
            raise InvalidArgumentError(
                f"dstreams must be a list of DStreams, got the DStream {dstreams.name}: pass "
                "[stream] (or call stream.transform(func))"
            )
        streams = list(dstreams)
        if not streams:
            raise InvalidArgumentError("dstreams must hold at least one DStream, got none")
        return [
            require_stream(stream, f"dstreams[{position}]", _context(self))
            for position, stream in enumerate(streams)
        ]

    def transform(
        self, dstreams: Sequence[DStream[Any]], transformFunc: Callable[..., Any]
    ) -> DStream[Any]:
        """A stream of `transformFunc(rdds)` over the RDDs of several streams.

        `transformFunc` may take `(rdds)`, `(time, rdds)` or `(time, rdds, event)`; `rdds` is
        in the order of `dstreams` (an empty RDD for a stream without one for the event). The
        streams must slide alike, as in PySpark (`InvalidArgumentError`, a ValueError,
        otherwise), and the result slides as they do.

        Examples:
            >>> a, b = ssc.queueStream([[1, 2, 3]]), ssc.queueStream([[2]])
            >>> only_a = ssc.transform([a, b], lambda rdds: rdds[0].subtract(rdds[1]))
        """
        streams = self._own_streams(dstreams)
        adapted = adapt_callback(transformFunc, 1, "transformFunc", "StreamingContext.transform")
        require_same_slide(streams, _TRANSFORM_SLIDES)
        transformed = TransformedDStream(
            _context(self),
            [EventDependency(stream) for stream in streams],
            lambda rdds, event: adapted((list(rdds),), event),
            "transform",
            transformFunc,
        )
        transformed.same_slide = _TRANSFORM_SLIDES
        return transformed


#: What PySpark (Spark's `TransformedDStream`) says of `ssc.transform` over different slides.
_TRANSFORM_SLIDES = "Some of the DStreams have different slide durations"


def _context(definitions: InputStreamDefinitions) -> StreamingContext:
    """The context these definitions are methods of (the mixin is only ever one)."""
    return cast("StreamingContext", definitions)
