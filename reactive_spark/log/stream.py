"""Direct log streams: each batch reads an exact offset range per partition (docs/logs.md).

No receiver buffers records: on each event the stream takes, for every partition, the records
from where the previous batch stopped up to the log's latest offset (at most
`maxRatePerPartition` per second since the previous batch, and in all `maxRecordsPerBatch` and
the backpressure rate's worth, split among the partitions by `rate.split_records`), and the
batch's RDD reads those ranges on the executors, one Spark partition per range. The ranges go
into the checkpoint's write-ahead log, so a batch re-run after a crash reads exactly the same
records. With `backpressure=True` the stream listens to its context's completed batches and
feeds those it read to a `PIDRateEstimator`.

In a backfill the stream reads by time instead: each batch takes, per partition, the records
whose timestamps fall after the previous batch's time (the first: the context's zero time) and
at or before its own, found with `LogBackend.offset_for_time`, unlimited by any rate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pyspark import RDD, SparkContext

from reactive_spark._validation import require_bool, require_int
from reactive_spark.dstream.inputs import InputDStream
from reactive_spark.errors import InvalidArgumentError, OffsetOutOfRangeError
from reactive_spark.events import Event, EventSource
from reactive_spark.listener import StreamingListener
from reactive_spark.log.backend import LogBackend, LogRecord
from reactive_spark.log.rate import PIDRateEstimator, require_rate, split_records
from reactive_spark.log.sinks import TransactionalSink
from reactive_spark.offsets import LogRDD, OffsetRange
from reactive_spark.time import Milliseconds, Time

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext
    from reactive_spark.jobs import BatchInfo

__all__ = ["DirectLogInputDStream", "createRDD"]

MessageHandler = Callable[[LogRecord], Any]
TopicPartition = tuple[str, int]


def key_and_value(record: LogRecord) -> tuple[Any, Any]:
    """The default message handler: `(key, value)`, as Kafka's direct stream gives."""
    return (record.key, record.value)


def createRDD(
    sc: SparkContext,
    log: LogBackend,
    offsetRanges: Iterable[OffsetRange],
    messageHandler: MessageHandler | None = None,
) -> LogRDD:
    """An RDD of the records of `offsetRanges`, one partition per range.

    Raises `OffsetOutOfRangeError` if the log no longer (or not yet) holds a range.

    Examples:
        >>> import tempfile
        >>> from reactive_spark.log import FileLog, OffsetRange
        >>> log = FileLog(tempfile.mkdtemp())
        >>> log.create_topic("clicks")
        >>> _ = [log.append("clicks", {"page": f"/p{n}"}) for n in range(3)]
        >>> createRDD(sc, log, [OffsetRange("clicks", 0, 1, 3)]).values().collect()
        [{'page': '/p1'}, {'page': '/p2'}]
    """
    if isinstance(offsetRanges, OffsetRange) or not isinstance(offsetRanges, Iterable):
        raise InvalidArgumentError(
            f"offsetRanges must be a list of OffsetRanges, got {offsetRanges!r}"
            + (f" (write [{offsetRanges!r}])" if isinstance(offsetRanges, OffsetRange) else "")
        )
    ranges = list(offsetRanges)
    for offsets in ranges:
        if not isinstance(offsets, OffsetRange):
            raise InvalidArgumentError(f"offsetRanges must hold OffsetRanges, got {offsets!r}")
        log.check(offsets)
    return _log_rdd(sc, log, ranges, messageHandler or key_and_value)


def _log_rdd(
    sc: SparkContext, log: LogBackend, ranges: list[OffsetRange], handler: MessageHandler
) -> LogRDD:
    if not ranges:
        return LogRDD(sc.emptyRDD(), [])

    def read(index: int, _: Iterable[int]) -> Iterator[Any]:
        for record in log.read(ranges[index]):
            yield handler(record)

    return LogRDD(
        sc.parallelize(range(len(ranges)), len(ranges)).mapPartitionsWithIndex(read), ranges
    )


class DirectLogInputDStream(InputDStream):
    """Records of a log's topics, read by exact offset ranges (`ssc.directStream`).

    In a backfill each batch reads the records stamped in its span (docs/operations.md).

    Examples:
        >>> import asyncio, tempfile
        >>> from reactive_spark import Seconds
        >>> from reactive_spark.log import FileLog
        >>> log = FileLog(tempfile.mkdtemp())
        >>> log.create_topic("clicks", partitions=2)
        >>> _ = [log.append("clicks", n, partition=n % 2) for n in range(5)]
        >>> clicks = ssc.directStream(log, ["clicks"], startingOffsets="earliest")
        >>> job = clicks.foreachRDD(lambda rdd: print(rdd.count()))
        >>> async def run():
        ...     await ssc.start()
        ...     await ssc.advanceTo(t0 + Seconds(1))
        ...     await ssc.stop(stopSparkContext=False)
        >>> asyncio.run(run())
        5
        >>> clicks.positions()
        {('clicks', 0): 3, ('clicks', 1): 2}
    """

    def __init__(
        self,
        ssc: StreamingContext,
        log: LogBackend,
        topics: Iterable[str],
        fromOffsets: Mapping[TopicPartition, int] | None = None,
        startingOffsets: str = "latest",
        maxRatePerPartition: float | None = None,
        messageHandler: MessageHandler | None = None,
        *,
        maxRecordsPerBatch: int | None = None,
        backpressure: bool = False,
        initialRate: float | None = None,
        minRate: float = 100,
        commitsTo: TransactionalSink | None = None,
    ) -> None:
        if not isinstance(log, LogBackend):
            raise InvalidArgumentError(f"log must be a LogBackend, got {log!r}")
        if isinstance(topics, str):
            topics = [topics]
        if not isinstance(topics, Iterable):
            raise InvalidArgumentError(f"topics must be a list of topic names, got {topics!r}")
        self.topics = list(topics)
        if not self.topics or not all(isinstance(t, str) and t for t in self.topics):
            raise InvalidArgumentError(f"topics must be non-empty topic names, got {topics!r}")
        if len(set(self.topics)) != len(self.topics):  # each record would be read once per name
            raise InvalidArgumentError(f"topics must name each topic once, got {topics!r}")
        if startingOffsets not in ("latest", "earliest"):
            raise InvalidArgumentError(
                f"startingOffsets must be 'latest' or 'earliest', got {startingOffsets!r}",
            )
        if maxRatePerPartition is not None and (
            isinstance(maxRatePerPartition, bool)
            or not isinstance(maxRatePerPartition, int | float)
            or not 0 < maxRatePerPartition < math.inf  # NaN too
        ):
            raise InvalidArgumentError(
                "maxRatePerPartition must be a positive, finite number, got "
                f"{maxRatePerPartition!r}",
            )
        if maxRecordsPerBatch is not None:
            require_int(maxRecordsPerBatch, "maxRecordsPerBatch")
        require_bool(backpressure, "backpressure")
        initial = None if initialRate is None else require_rate(initialRate, "initialRate")
        estimator = PIDRateEstimator(minRate=require_rate(minRate, "minRate"))
        if messageHandler is not None and not callable(messageHandler):
            raise InvalidArgumentError(f"messageHandler must be callable, got {messageHandler!r}")
        if commitsTo is not None and not isinstance(commitsTo, TransactionalSink):
            raise InvalidArgumentError(f"commitsTo must be a TransactionalSink, got {commitsTo!r}")
        self.partitions = {topic: log.require_topic(topic) for topic in self.topics}
        try:
            starts = dict(fromOffsets or {})
        except (TypeError, ValueError):
            raise InvalidArgumentError(
                "fromOffsets must map (topic, partition) pairs to offsets, such as "
                f"{{('clicks', 0): 42}}, got {fromOffsets!r}"
            ) from None
        for key, offset in starts.items():
            if not (isinstance(key, tuple) and len(key) == 2):
                raise InvalidArgumentError(
                    f"fromOffsets must map (topic, partition) pairs to offsets, got key {key!r}"
                )
            topic, partition = key
            if partition not in self.partitions.get(topic, []):
                raise InvalidArgumentError(
                    f"fromOffsets names {topic!r} partition {partition!r}, which the stream "
                    "does not read",
                )
            OffsetRange(topic, partition, offset, offset)  # validates the offset
        super().__init__(ssc, f"directStream({', '.join(self.topics)})")
        self.log = log
        self._from_offsets = starts
        self._starting_offsets = startingOffsets
        self._max_rate = maxRatePerPartition
        self._max_records = maxRecordsPerBatch
        self._handler = messageHandler or key_and_value
        self._positions: dict[TopicPartition, int] = {}
        self._started_from: dict[TopicPartition, int] = {}  # this run's first positions
        self._commits: list[  # see `follow_commits`
            tuple[Callable[[], Mapping[TopicPartition, int]], Callable[[EventSource], bool]]
        ] = []
        self._last_time: Time | None = None
        self._live_reads = 0  # batches read since this context started (not replayed ones)
        self._initial_rate = initial
        self._estimator = estimator if backpressure else None
        self._last_live_read: tuple[int | None, int] | None = None  # (instanceId, span)
        if backpressure:  # the estimator learns from the batches that read this stream
            ssc.addStreamingListener(_CompletedBatches(self._batch_completed))
        #: Increases with every batch read: a backlog source waits for it to move.
        self.readCount = 0
        #: The sink this stream's batches commit their offset ranges to (`commitsTo`), or None.
        self.commitsTo = commitsTo
        if commitsTo is not None:  # a batch whose commit failed is read again by the next
            self.follow_commits(commitsTo.committedOffsets, _every_source)

    def start(self) -> None:
        """Fix where each partition starts.

        At `fromOffsets`, else where the sink of `commitsTo` committed, else at the
        `startingOffsets` end of the log.
        """
        committed = {} if self.commitsTo is None else self.commitsTo.committedOffsets(*self.topics)
        starts = {**committed, **self._from_offsets}
        for topic, partitions in self.partitions.items():
            for partition in partitions:
                if (topic, partition) in starts:
                    offset = starts[(topic, partition)]
                elif self._starting_offsets == "earliest":
                    offset = self.log.earliest_offset(topic, partition)
                else:
                    offset = self.log.latest_offset(topic, partition)
                self._positions[(topic, partition)] = offset
        self._started_from = dict(self._positions)

    def follow_commits(
        self,
        committed: Callable[[], Mapping[TopicPartition, int]],
        reacts: Callable[[EventSource], bool],
    ) -> None:
        """Before batches of sources `reacts` to, go back to the offsets `committed()` gives.

        What a consumer that commits offsets (`aggregateExactlyOnce`, the `TransactionalSink`
        of `commitsTo`, which every batch of the stream commits to) did not commit, because
        its batch failed, is read again by its next batch, in this run and after a restart;
        else every later batch would leave a gap that its commit refuses. With several, the
        furthest commit of each partition counts. Never before where this run started the
        partition (after a restart, where the batches it replays read from): a stream started
        past the commits leaves the gap it was told to. Nor when batches of sources it does
        not react to read the stream too: they would read again what they read.
        """
        self._commits.append((committed, reacts))

    def _back_to_commits(self, source: EventSource) -> None:
        furthest: dict[TopicPartition, int] = {}
        reading = self._ssc.graph.reaching(self)
        for committed, reacts in self._commits:
            if not reacts(source) or not all(reacts(other) for other in reading):
                continue
            offsets = committed()
            for partition, start in self._started_from.items():
                offset = max(offsets.get(partition, start), start)
                furthest[partition] = max(offset, furthest.get(partition, offset))
        for partition, offset in furthest.items():
            if offset < self._positions[partition]:
                self._positions[partition] = offset

    @property
    def estimatedRate(self) -> float | None:
        """The backpressure estimate in records per second; None before there is one.

        With `backpressure=True` the estimator's latest rate, which bounds the next batch; None
        without backpressure, and before the estimator has measured two batches with records
        (`initialRate` bounds the batches until then).

        Examples:
            >>> import tempfile
            >>> from reactive_spark.log import FileLog
            >>> log = FileLog(tempfile.mkdtemp())
            >>> log.create_topic("clicks")
            >>> clicks = ssc.directStream(log, ["clicks"], backpressure=True, initialRate=1000)
            >>> clicks.estimatedRate is None
            True
        """
        return None if self._estimator is None else self._estimator.latestRate

    def positions(self) -> dict[TopicPartition, int]:
        """Where the next batch starts reading, per `(topic, partition)`."""
        return dict(self._positions)

    def backlog(self) -> int:
        """How many records wait in the log past the stream's positions."""
        return sum(
            max(0, self.log.latest_offset(topic, partition) - position)
            for (topic, partition), position in self.positions().items()
        )

    def _read(self, event: Event) -> tuple[RDD[Any] | None, dict[str, Any]]:
        if self._runtime.backfilling:
            ranges = self._ranges_by_time(event)
            return self._take(event, ranges), {"offsetRanges": [r.toList() for r in ranges]}
        if self._commits:
            self._back_to_commits(event.source)
        span = self._span(event)
        partitions = [(topic, p) for topic in self.topics for p in self.partitions[topic]]
        starts = [self._positions[partition] for partition in partitions]
        backlogs = [
            self._backlog(topic, partition, start)
            for (topic, partition), start in zip(partitions, starts, strict=True)
        ]
        counts = self._limit(backlogs, event, span)
        ranges = [  # the topics in the order given, then partition
            OffsetRange(topic, partition, start, start + count)
            for (topic, partition), start, count in zip(partitions, starts, counts, strict=True)
        ]
        for offsets in ranges:
            self.log.check(offsets)
        self._live_reads += 1
        self._last_live_read = (event.instanceId, span)
        return self._take(event, ranges), {"offsetRanges": [r.toList() for r in ranges]}

    def _backlog(self, topic: str, partition: int, start: int) -> int:
        """How many records wait past `start`; `OffsetOutOfRangeError` if the log ends before it.

        A topic truncated or recreated under the stream, or `fromOffsets` past its end: reading
        on would skip the records the log holds again up to the position, silently.
        """
        latest = self.log.latest_offset(topic, partition)
        if latest < start:
            raise OffsetOutOfRangeError(
                f"topic {topic!r} partition {partition}: the stream's position {start} is past "
                f"the log's latest offset {latest} (was the topic truncated or recreated, or "
                "fromOffsets past its end?)"
            )
        return latest - start

    def _ranges_by_time(self, event: Event) -> list[OffsetRange]:
        """The ranges of `event`'s batch in a backfill: the records stamped in its span.

        Per partition, from the first record stamped after the previous batch (the first batch:
        after `span_floor`, where the live run's batch before the backfill's first one ran) to
        the first stamped after `event.time`: `[offset_for_time(p + 1 ms), offset_for_time(t +
        1 ms))`. A later batch starts where the previous range ended, which is the same offset
        as long as the log does not change, so the ranges never overlap or leave a gap. No rate
        limit applies: the batch reads its whole span (what a live run that kept up read).
        """
        after = event.time + Milliseconds(1)
        ranges = []
        for topic in self.topics:  # the topics in the order given, then partition
            for partition in self.partitions[topic]:
                if self._last_time is None:
                    begin = self.span_floor(event) + Milliseconds(1)
                    start = self.log.offset_for_time(topic, partition, begin)
                else:
                    start = self._positions[(topic, partition)]
                until = self.log.offset_for_time(topic, partition, after, fromOffset=start)
                offsets = OffsetRange(topic, partition, start, until)
                self.log.check(offsets)
                ranges.append(offsets)
        return ranges

    def _span(self, event: Event) -> int:
        """Milliseconds the batch of `event` covers: the event time since the previous batch.

        Event time, so that a batch caught up after a restart reads what it would have read
        without the stop (the previous batch may be one rebuilt from the checkpoint).
        """
        previous = self._last_time or self._ssc.zeroTime
        return max(0, int((event.time - previous).milliseconds))

    def _limit(self, backlogs: list[int], event: Event, span: int) -> list[int]:
        """How many records each partition gives to the batch of `event`, covering `span` ms."""
        counts = backlogs
        if self._max_rate is not None:
            allowed = max(1, int(self._max_rate * span / 1000))
            counts = [min(count, allowed) for count in counts]
        limit = None
        rate, rate_span = self._rate(event, span)
        if rate is not None:  # at least a record for each partition that waits, as Spark's
            limit = max(int(rate * rate_span / 1000), sum(1 for count in counts if count))
        if self._max_records is not None:
            limit = self._max_records if limit is None else min(limit, self._max_records)
        if limit is not None:  # the event's index turns with each event, restarts included
            counts = split_records(limit, counts, event.index or 0)
        return counts

    def _rate(self, event: Event, span: int) -> tuple[float | None, int]:
        """The rate that bounds the batch of `event` as a whole, if any, and over how long.

        The estimate; before there is one, `initialRate`: with backpressure until the estimator
        has one, without it for the first batch after a start or a recovery. That first batch
        covers at most the time since the context started, counted as at least a second (an
        event caught up after a restart comes before it): never the downtime.
        """
        estimate = self.estimatedRate
        if estimate is not None:
            return estimate, span
        if self._live_reads == 0:
            since_start = int((event.time - self._ssc.startedAt).milliseconds)
            return self._initial_rate, min(span, max(since_start, 1000))
        return (self._initial_rate if self._estimator is not None else None), span

    def _batch_completed(self, info: BatchInfo) -> None:
        """Feed the estimator a completed batch this stream read (not one re-run after a crash).

        Its records from this stream, its processing delay and scheduling delay, over the
        span it covered.
        """
        read, mine = self._last_live_read, info.streamIdToInputInfo().get(self.id)
        ended = info.processingEndTime()
        if self._estimator is None or read is None or mine is None or ended < 0:
            return
        if info.event.instanceId != read[0]:
            return
        self._estimator.compute(
            ended,
            mine.numRecords(),
            info.processingDelay(),
            info.schedulingDelay(),
            max(1, read[1]),
        )

    def _replay(self, event: Event, read: dict[str, Any]) -> RDD[Any] | None:
        ranges = [OffsetRange.fromList(item) for item in read["offsetRanges"]]
        for offsets in ranges:  # a restarted run starts where what it replays read from
            partition = (offsets.topic, offsets.partition)
            start = self._started_from.get(partition, offsets.fromOffset)
            self._started_from[partition] = min(start, offsets.fromOffset)
        return self._take(event, ranges)

    def record_count(self, read: dict[str, Any]) -> int:
        """Records in the read's offset ranges."""
        return sum(until - first for _, _, first, until in read["offsetRanges"])

    def _take(self, event: Event, ranges: list[OffsetRange]) -> LogRDD:
        for offsets in ranges:
            self._positions[(offsets.topic, offsets.partition)] = offsets.untilOffset
        self._last_time = event.time
        self.readCount += 1
        return _log_rdd(self._ssc.sparkContext, self.log, ranges, self._handler)


def _every_source(source: EventSource) -> bool:
    """Every batch that reads a stream with `commitsTo` commits through its sink."""
    return True


class _CompletedBatches(StreamingListener):
    """Hands each completed batch to a direct stream with backpressure (its `onBatchCompleted`)."""

    def __init__(self, completed: Callable[[BatchInfo], None]) -> None:
        self._completed = completed

    def onBatchCompleted(self, batchCompleted: BatchInfo) -> None:
        """Called in the scheduler's worker thread, as the stream's reads are."""
        self._completed(batchCompleted)
