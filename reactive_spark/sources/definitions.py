"""The event sources a StreamingContext makes: `ssc.timer(...)`, `ssc.fileWatcher(...)`, ...

A mixin of `StreamingContext`, as the operations of DStream are mixins of DStream.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from reactive_spark.sources.backlog import BacklogEventSource
from reactive_spark.sources.file_watcher import FileWatcherEventSource
from reactive_spark.sources.manual import ManualEventSource
from reactive_spark.sources.observable import ObservableEventSource
from reactive_spark.sources.timer import TimerEventSource
from reactive_spark.time import Duration, Time

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext
    from reactive_spark.log.stream import DirectLogInputDStream
    from reactive_spark.sources.rest import RestEventSource

__all__ = ["EventSourceDefinitions"]


class EventSourceDefinitions:
    """The methods of `StreamingContext` that make event sources (a mixin)."""

    def timer(
        self,
        start: Time | datetime,
        end: Time | datetime | None,
        period: Duration | timedelta | float,
        name: str,
    ) -> TimerEventSource:
        """A timer firing at `start + k * period` while `<= end` (`end=None`: forever).

        Examples:
            >>> from reactive_spark import Days
            >>> daily = ssc.timer(t0, None, Days(1), "daily")
            >>> [event.datetime.day for event in daily.between(t0, t0 + Days(2))]
            [1, 2, 3]
        """
        return TimerEventSource(_context(self), start, end, period, name)

    def fileWatcher(
        self,
        path: str,
        name: str,
        pattern: str | None = None,
        *,
        recursive: bool = True,
        settle: Duration | timedelta | float = 0.02,
        maxDelay: Duration | timedelta | float = 1.6,
    ) -> FileWatcherEventSource:
        """A source firing `FileEvent`s for files that appear or change under `path`.

        Examples:
            >>> uploads = ssc.fileWatcher("incoming", "uploads", pattern="*.csv")
            >>> uploads.accepts("incoming/day1.csv"), uploads.accepts("incoming/day1.csv.part")
            (True, False)
            >>> uploads.accepts("incoming/_temporary/0/day2.csv")
            False
        """
        return FileWatcherEventSource(
            _context(self),
            path,
            name,
            pattern=pattern,
            recursive=recursive,
            settle=settle,
            maxDelay=maxDelay,
        )

    def restServer(
        self,
        host: str | None = "127.0.0.1",
        port: int = 4140,
        name: str = "rest",
        *,
        token: str | None = None,
        maxBodySize: int = 1024 * 1024,
        insecure: bool = False,
    ) -> RestEventSource:
        """A source firing `RestEvent`s for HTTP requests on its routes (`.get` / `.post`).

        On a loopback `host` it answers local clients only; on any other address it needs a
        `token` that every request presents, or `insecure=True` to take requests from anyone
        (it warns at start). See docs/security.md.

        Examples:
            >>> rest = ssc.restServer(port=4140, name="triggers").post("/jobs/report")
            >>> rest.routes
            {'/jobs/report': {'POST'}}
        """
        # aiohttp loads when a REST trigger is made, not with the package
        from reactive_spark.sources.rest import RestEventSource  # noqa: PLC0415

        return RestEventSource(
            _context(self),
            host,
            port,
            name,
            token=token,
            maxBodySize=maxBodySize,
            insecure=insecure,
        )

    def rxEventSource(self, observable: Any, name: str) -> ObservableEventSource:
        """A source firing an `ObservableEvent` for every value `observable` emits.

        Examples:
            >>> import reactivex
            >>> minutely = ssc.rxEventSource(reactivex.interval(60.0), "minutely")
        """
        return ObservableEventSource(_context(self), observable, name)

    def manualSource(self, name: str) -> ManualEventSource:
        """A source that fires when triggered: `source.trigger(value)`, or the console's button.

        Examples:
            >>> rerun = ssc.manualSource("rerun")
            >>> rerun.kind
            'manual'
        """
        return ManualEventSource(_context(self), name)

    def backlogSource(
        self,
        stream: DirectLogInputDStream,
        threshold: int,
        name: str,
        *,
        interval: Duration | timedelta | float = 1.0,
    ) -> BacklogEventSource:
        """A source firing a `LogEvent` when `threshold` records wait for a direct stream.

        Examples:
            >>> import tempfile
            >>> from reactive_spark import Seconds
            >>> from reactive_spark.log import FileLog
            >>> log = FileLog(tempfile.mkdtemp())
            >>> log.create_topic("clicks")
            >>> clicks = ssc.directStream(log, ["clicks"])
            >>> full = ssc.backlogSource(clicks, 1000, "backlog", interval=Seconds(5))
            >>> clicks = clicks.bind(full)
        """
        return BacklogEventSource(_context(self), stream, threshold, name, interval)


def _context(definitions: EventSourceDefinitions) -> StreamingContext:
    """The context these definitions are methods of (the mixin is only ever one)."""
    return cast("StreamingContext", definitions)
