"""Tracing with OpenTelemetry: a span per event, its batch and each job (the `otel` extra).

`ssc.addStreamingListener(Tracing(tracerProvider))` traces one context with the tracer
provider it is given: nothing process-wide (the global tracer provider and propagators are
left alone). Spans nest event -> batch -> job:

* `event <source>`: from the event's acceptance until its batch completed (an event without a
  batch ends when a later batch starts, or at the stop); a REST trigger's event continues the
  caller's trace when the request carried a valid W3C `traceparent` header.
* `batch <source>`: the batch's jobs, from its planning to its completion; an error status if
  a job failed.
* `job <stream>`: one job, with the stream, the user function, the job's kind and status, its
  Spark job group and the ids of its Spark jobs, and the error if it failed.

No span is left open: those of dropped events end when they are reported (`onEventsDropped`),
and whatever is still open when the context stops ends then, with `reactive_spark.span.end`
saying why (`"dropped"`, `"stop"`, or `"evicted"`: over `MAX_OPEN_EVENTS` events waited for
their batches, so the oldest span ended early; its batch's span is still its child).

Only this module imports OpenTelemetry: `import reactive_spark` and a context that is not
traced never load it (`pip install 'reactive-spark[otel]'` installs it).

Examples:
    >>> from opentelemetry.sdk.trace import TracerProvider
    >>> ssc.addStreamingListener(Tracing(TracerProvider()))
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.trace import (
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from reactive_spark.errors import InvalidArgumentError
from reactive_spark.listener import HoldsUntilStop, StreamingListener

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from pyspark import SparkContext, StatusTracker

    from reactive_spark.events import Event
    from reactive_spark.jobs import BatchInfo, JobInfo
    from reactive_spark.listener import EventsDropped

__all__ = ["Tracing"]

log = logging.getLogger(__name__)

#: Event spans waiting for their batch at most; beyond, the oldest end early ("evicted").
MAX_OPEN_EVENTS = 1024
#: Evicted event spans whose context is kept for their batch's span (~250 bytes each).
MAX_EVICTED_EVENTS = 16 * MAX_OPEN_EVENTS

#: The attribute saying why a span ended other than by its own end.
END = "reactive_spark.span.end"

_PROPAGATOR = TraceContextTextMapPropagator()


class Tracing(StreamingListener, HoldsUntilStop):
    """A streaming listener that turns events, batches and jobs into OpenTelemetry spans.

    Args:
        tracerProvider: Where the spans go (an `opentelemetry.sdk.trace.TracerProvider` with
            the exporters of your choice); only this context's spans use it.

    Examples:
        >>> from opentelemetry.sdk.trace import TracerProvider
        >>> from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        >>> from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
        ...     InMemorySpanExporter,
        ... )
        >>> spans = InMemorySpanExporter()
        >>> provider = TracerProvider()
        >>> provider.add_span_processor(SimpleSpanProcessor(spans))
        >>> ssc.addStreamingListener(Tracing(provider))
    """

    def __init__(self, tracerProvider: trace.TracerProvider) -> None:
        if not isinstance(tracerProvider, trace.TracerProvider):
            raise InvalidArgumentError(
                f"tracerProvider must be an opentelemetry TracerProvider, got {tracerProvider!r}"
            )
        self._tracer = tracerProvider.get_tracer("reactive_spark")
        self._lock = threading.Lock()  # events come on the loop, batches in worker threads
        self._events: OrderedDict[int, Span] = OrderedDict()  # by instanceId, waiting
        # by instanceId: the events whose span ended while they waited (over MAX_OPEN_EVENTS)
        self._evicted: OrderedDict[int, SpanContext] = OrderedDict()
        # instanceId -> (event, batch); the event's is None when it was evicted
        self._batches: dict[int, tuple[Span | None, Span]] = {}
        self._jobs: dict[int, Span] = {}  # id(JobInfo) -> span
        self._tracker: tuple[SparkContext, StatusTracker] | None = None  # the jobs' context's

    # -- events ----------------------------------------------------------------------------
    def onEventFired(self, event: Event) -> None:
        """Open the event's span, continuing a REST caller's `traceparent`."""
        if event.instanceId is None:
            return
        span = self._event_span(event)
        evicted = []
        with self._lock:
            self._events[event.instanceId] = span
            while len(self._events) > MAX_OPEN_EVENTS:
                instance_id, old = self._events.popitem(last=False)
                self._evicted[instance_id] = old.get_span_context()  # its batch's parent
                evicted.append(old)
            while len(self._evicted) > MAX_EVICTED_EVENTS:
                self._evicted.popitem(last=False)
        _end(evicted, "evicted")

    def _event_span(self, event: Event) -> Span:
        parent = _caller(getattr(event, "traceparent", None))
        attributes: dict[str, Any] = {
            "reactive_spark.source": event.source.name,
            "reactive_spark.event.index": -1 if event.index is None else event.index,
            "reactive_spark.event.instance_id": -1
            if event.instanceId is None
            else event.instanceId,
            "reactive_spark.event.time": event.time.isoformat(),
        }
        path = getattr(event, "path", None)
        if isinstance(path, str):
            attributes["http.route"] = path
            attributes["http.request.method"] = str(getattr(event, "method", ""))
        kind = SpanKind.INTERNAL if parent is None else SpanKind.SERVER
        return self._tracer.start_span(
            f"event {event.source.name}", context=parent, kind=kind, attributes=attributes
        )

    # -- batches ---------------------------------------------------------------------------
    def onBatchSubmitted(self, batchSubmitted: BatchInfo) -> None:
        """Open the batch's span under its event's; end the spans of events without a batch."""
        event = batchSubmitted.event
        instance_id = -1 if event.instanceId is None else event.instanceId
        ended = []
        with self._lock:
            while self._events and next(iter(self._events)) < instance_id:
                ended.append(self._events.popitem(last=False)[1])  # their batches had no job
            while self._evicted and next(iter(self._evicted)) < instance_id:
                self._evicted.popitem(last=False)
            event_span = self._events.pop(instance_id, None)
            evicted = self._evicted.pop(instance_id, None)
        for old in ended:
            old.end()
        parent: Span
        if event_span is not None:
            parent = event_span
        elif evicted is not None:  # its span ended early: the batch's is still its child
            parent = NonRecordingSpan(evicted)
        else:  # a batch re-run after a restart
            parent = event_span = self._event_span(event)
        batch_span = self._tracer.start_span(
            f"batch {event.source.name}",
            context=trace.set_span_in_context(parent),
            attributes={
                "reactive_spark.source": event.source.name,
                "reactive_spark.event.instance_id": instance_id,
                "reactive_spark.batch.time": event.time.isoformat(),
            },
        )
        with self._lock:
            self._batches[instance_id] = (event_span, batch_span)

    def onBatchCompleted(self, batchCompleted: BatchInfo) -> None:
        """End the batch's span (an error if a job failed), then its event's."""
        instance_id = batchCompleted.event.instanceId
        with self._lock:
            spans = self._batches.pop(-1 if instance_id is None else instance_id, None)
        if spans is None:
            return
        event_span, batch_span = spans
        failures = batchCompleted.failures
        batch_span.set_attribute("reactive_spark.batch.jobs", len(batchCompleted.jobs))
        batch_span.set_attribute("reactive_spark.batch.failed_jobs", len(failures))
        if failures:
            status = Status(StatusCode.ERROR, f"{len(failures)} of its jobs failed")
            batch_span.set_status(status)
            if event_span is not None:
                event_span.set_status(status)
        batch_span.end()
        if event_span is not None:
            event_span.end()

    # -- what will not run, and the stop ---------------------------------------------------
    def onEventsDropped(self, dropped: EventsDropped) -> None:
        """End the spans of accepted events that will not run (`reactive_spark.span.end`)."""
        spans = []
        with self._lock:
            for event in dropped.events:
                if event.instanceId is None:  # dropped before it was accepted: it has no span
                    continue
                self._evicted.pop(event.instanceId, None)
                span = self._events.pop(event.instanceId, None)
                if span is not None:
                    spans.append(span)
        for span in spans:
            span.set_attribute("reactive_spark.event.dropped_by", dropped.reason)
        _end(spans, "dropped")

    def context_stopped(self) -> None:
        """End every span still open: the context stopped, nothing more will end them."""
        with self._lock:
            jobs, self._jobs = list(self._jobs.values()), {}
            batches, self._batches = list(self._batches.values()), {}
            events, self._events = list(self._events.values()), OrderedDict()
            self._evicted.clear()
            self._tracker = None
        _end(jobs, "stop")
        for event_span, batch_span in batches:
            _end([batch_span], "stop")
            if event_span is not None:
                events.append(event_span)
        _end(events, "stop")

    # -- jobs ------------------------------------------------------------------------------
    def onJobStarted(self, job: JobInfo) -> None:
        """Open the job's span under its batch's."""
        span = self._job_span(job)
        with self._lock:
            self._jobs[id(job)] = span

    def _job_span(self, job: JobInfo) -> Span:
        instance_id = -1 if job.event.instanceId is None else job.event.instanceId
        with self._lock:
            spans = self._batches.get(instance_id)
        context = None if spans is None else trace.set_span_in_context(spans[1])
        attributes: dict[str, Any] = {
            "reactive_spark.stream": job.streamName,
            "reactive_spark.job.kind": job.kind,
        }
        if job.function:
            attributes["reactive_spark.function"] = job.function
        if job.sparkJobGroup:
            attributes["spark.job.group"] = job.sparkJobGroup
        return self._tracer.start_span(
            f"job {job.streamName}", context=context, attributes=attributes
        )

    def onJobCompleted(self, job: JobInfo) -> None:
        """End the job's span with its status, its Spark jobs and its error, if any."""
        with self._lock:
            span = self._jobs.pop(id(job), None)
        if span is None:  # a job that never started: a failed plan, a skipped job
            span = self._job_span(job)
        span.set_attribute("reactive_spark.job.status", job.status)
        spark_jobs = self._spark_job_ids(job)
        if spark_jobs:
            span.set_attribute("spark.job.ids", spark_jobs)
        if job.error is not None:
            user = job.userError
            span.set_attribute("error.type", user.type if user is not None else "")
            span.set_status(Status(StatusCode.ERROR, job.describe()))
            span.record_exception(job.error)
        else:
            span.set_status(Status(StatusCode.OK))
        span.end()

    def _spark_job_ids(self, job: JobInfo) -> list[int]:
        """The ids of the job's Spark jobs, as far as its SparkContext's tracker remembers.

        The SparkContext is the job's context's own (never one made anew); none once stopped.
        """
        if job.sparkJobGroup is None or job.startTime is None:
            return []
        sc = job.event.source.context.sparkContext
        try:  # a stopped SparkContext raises here
            with self._lock:
                tracker = self._tracker
            if tracker is None or tracker[0] is not sc:
                tracker = (sc, sc.statusTracker())
                with self._lock:
                    self._tracker = tracker
            return sorted(tracker[1].getJobIdsForGroup(job.sparkJobGroup))
        except Exception:  # it stopped meanwhile: the span goes without them
            log.debug("no Spark job ids for %s", job.sparkJobGroup, exc_info=True)
            return []


def _caller(traceparent: str | None) -> Context | None:
    """The caller's trace context from a `traceparent` header, or None if it is not valid."""
    if not traceparent:
        return None
    context = _PROPAGATOR.extract({"traceparent": traceparent})
    if not trace.get_current_span(context).get_span_context().is_valid:
        return None
    return context


def _end(spans: list[Span], why: str) -> None:
    """End `spans`, saying `why` (`reactive_spark.span.end`); their status is left unset."""
    for span in spans:
        span.set_attribute(END, why)
        span.end()
