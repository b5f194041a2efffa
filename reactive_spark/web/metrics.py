"""Prometheus metrics of a context (prometheus-client, a registry per console, no globals).

| metric | type | labels |
| --- | --- | --- |
| `reactive_spark_events_total` | counter | `source` |
| `reactive_spark_jobs_total` | counter | `stream`, `status` |
| `reactive_spark_job_duration_seconds` | histogram | |
| `reactive_spark_queue_depth` | gauge | `source` |
| `reactive_spark_events_dropped_total` | counter | `source`, `policy` |
| `reactive_spark_events_coalesced_total` | counter | `source`, `policy` |
| `reactive_spark_estimated_rate` | gauge | `stream` |
| `reactive_spark_deadlines_missed_total` | counter | `source` |
| `reactive_spark_output_deadlines_missed_total` | counter | `stream` |
| `reactive_spark_scheduling_lag_seconds` | gauge | |

The queue depth is a source's events waiting: posted and not accepted, or not processed yet.
Dropped events are counted by the overflow policy that dropped them (`drop-oldest`,
`drop-newest`), or `stop` for those a stop did not wait for; coalesced ones by `coalesce`.
The estimated rate is a direct log stream's backpressure estimate, in records per second (only
streams with `backpressure=True` that have one). The scheduling lag is the time from an
event's acceptance to its batch's start, in seconds of wall time (so it means the same on a
virtual clock). A missed deadline (`expect`) counts once per period, for the source, or for
the stream whose job did not succeed by it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest

from reactive_spark.jobs import JobInfo
from reactive_spark.log.stream import DirectLogInputDStream
from reactive_spark.runtime import Runtime

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext

__all__ = ["CONTENT_TYPE", "ConsoleMetrics"]

#: The content type of the text `ConsoleMetrics.render` returns.
CONTENT_TYPE = CONTENT_TYPE_LATEST


class ConsoleMetrics:
    """The metrics of one context, in their own registry.

    Examples:
        >>> metrics = ConsoleMetrics(ssc)
        >>> metrics.event("daily")
        >>> b'reactive_spark_events_total{source="daily"} 1.0' in metrics.render()
        True
    """

    def __init__(self, ssc: StreamingContext) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._events = Counter(
            "reactive_spark_events",
            "Events accepted, by source.",
            ["source"],
            registry=self.registry,
        )
        self._jobs = Counter(
            "reactive_spark_jobs",
            "Jobs ended, by stream and status (succeeded, failed, cancelled).",
            ["stream", "status"],
            registry=self.registry,
        )
        self._durations = Histogram(
            "reactive_spark_job_duration_seconds",
            "How long jobs ran.",
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
            registry=self.registry,
        )
        self._dropped = Counter(
            "reactive_spark_events_dropped",
            "Events dropped past their source's bound, or by a stop, by source and policy.",
            ["source", "policy"],
            registry=self.registry,
        )
        self._coalesced = Counter(
            "reactive_spark_events_coalesced",
            "Events merged into a later one past their source's bound, by source and policy.",
            ["source", "policy"],
            registry=self.registry,
        )
        self._deadlines = {
            "source": Counter(
                "reactive_spark_deadlines_missed",
                "Periods in which a source fired nothing by its deadline (expect).",
                ["source"],
                registry=self.registry,
            ),
            "output": Counter(
                "reactive_spark_output_deadlines_missed",
                "Periods in which no job of a stream succeeded by its deadline (expect).",
                ["stream"],
                registry=self.registry,
            ),
        }
        self.registry.register(_Gauges(ssc))
        self._lag = Gauge(
            "reactive_spark_scheduling_lag_seconds",
            "Seconds from the latest batch's event acceptance to its jobs' start.",
            registry=self.registry,
        )

    def event(self, source: str) -> None:
        """Count an accepted event of `source`."""
        self._events.labels(source=source).inc()

    def job(self, job: JobInfo) -> None:
        """Count an ended job, and how long it ran."""
        self._jobs.labels(stream=job.streamName, status=job.status).inc()
        if job.duration is not None:
            self._durations.observe(job.duration)

    def dropped(self, source: str, policy: str, count: int) -> None:
        """Count `count` events of `source` dropped (or coalesced, by `"coalesce"`)."""
        counter = self._coalesced if policy == "coalesce" else self._dropped
        counter.labels(source=source, policy=policy).inc(count)

    def deadline_missed(self, kind: str, name: str, count: int = 1) -> None:
        """Count `count` missed deadlines of the source (`kind="source"`) or stream `name`."""
        counter = self._deadlines[kind]
        counter.labels(name).inc(count)

    def lag(self, seconds: float) -> None:
        """The latest scheduling lag."""
        self._lag.set(seconds)

    def render(self) -> bytes:
        """The metrics in Prometheus' text format."""
        return generate_latest(self.registry)


class _Gauges:
    """What is read when the metrics are: each source's queue depth, each estimated rate."""

    def __init__(self, ssc: StreamingContext) -> None:
        self._ssc = ssc

    def collect(self) -> Iterator[Metric]:
        runtime = Runtime.of(self._ssc)
        depth = GaugeMetricFamily(
            "reactive_spark_queue_depth",
            "Events of a source waiting to be accepted or processed.",
            labels=["source"],
        )
        for source in runtime.sources:
            depth.add_metric([source.name], runtime.queue_depth(source))
        yield depth
        rate = GaugeMetricFamily(
            "reactive_spark_estimated_rate",
            "A direct log stream's backpressure estimate, in records per second.",
            labels=["stream"],
        )
        for stream in self._ssc.graph.streams:
            if isinstance(stream, DirectLogInputDStream) and stream.estimatedRate is not None:
                rate.add_metric([stream.name], stream.estimatedRate)
        yield rate
