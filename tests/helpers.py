"""Small helpers shared by the tests."""

from __future__ import annotations

from typing import Any

from reactive_spark import (
    DStream,
    Duration,
    Event,
    StreamingContext,
    StreamingListener,
    Time,
    VirtualClock,
)
from reactive_spark.scheduler import BatchInfo, JobInfo


class Recorder(StreamingListener):
    """Records everything the scheduler reports."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.batches: list[BatchInfo] = []
        self.started: list[JobInfo] = []
        self.jobs: list[JobInfo] = []

    def onEventFired(self, event: Event) -> None:
        self.events.append(event)

    def onBatchCompleted(self, batch: BatchInfo) -> None:
        self.batches.append(batch)

    def onJobStarted(self, job: JobInfo) -> None:
        self.started.append(job)

    def onJobCompleted(self, job: JobInfo) -> None:
        self.jobs.append(job)


def gather(stream: DStream[Any]) -> tuple[DStream[Any], list[tuple[Event, list[Any]]]]:
    """Attach an output collecting `(event, elements)`; returns the output and the list."""
    seen: list[tuple[Event, list[Any]]] = []
    output = stream.foreachRDD(lambda time, rdd, event: seen.append((event, rdd.collect())))
    return output, seen


def virtual(
    sc: Any, batch: Duration | None = None, start: Time | None = None, **options: Any
) -> StreamingContext:
    """A StreamingContext on a virtual clock starting at `start` (default: the epoch)."""
    return StreamingContext(sc, batch, clock=VirtualClock(start), **options)
