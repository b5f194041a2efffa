"""Prometheus metrics of a context (prometheus-client, a registry per console, no globals).

| metric | type | labels |
| --- | --- | --- |
| `reactive_spark_events_total` | counter | `source` |
| `reactive_spark_jobs_total` | counter | `stream`, `status` |
| `reactive_spark_job_duration_seconds` | histogram | |
| `reactive_spark_queue_depth` | gauge | |
| `reactive_spark_scheduling_lag_seconds` | gauge | |

The scheduling lag is the time from an event's acceptance to its batch's start, in seconds
of wall time (so it means the same on a virtual clock).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

from reactive_spark.jobs import JobInfo

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
        queue = Gauge(
            "reactive_spark_queue_depth",
            "Events waiting to be accepted or processed.",
            registry=self.registry,
        )
        queue.set_function(lambda: ssc.queueDepth)
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

    def lag(self, seconds: float) -> None:
        """The latest scheduling lag."""
        self._lag.set(seconds)

    def render(self) -> bytes:
        """The metrics in Prometheus' text format."""
        return generate_latest(self.registry)
