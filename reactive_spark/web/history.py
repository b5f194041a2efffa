"""What the console shows: recent events, batches and jobs, kept by a streaming listener.

`History` listens to a context (it is a `StreamingListener`): it keeps the last `limit` events
and batches as JSON-ready records, counts what every source fired, feeds the Prometheus metrics
and pushes every event, batch and job transition to the live viewers (`live.Broadcast`).
Listener callbacks arrive on the event loop and in the scheduler's worker threads; records are
guarded by a lock, messages are encoded where they arise and handed to the loop.

The records of events of token-protected REST triggers, and of every source derived from one
(`filter`, `map`, `join`, ...: they carry the request in `parent`, `left`/`right` or `value`),
are marked `"protected"`. Authenticated viewers see them whole; for everyone else `redacted`
keeps only which event it is (and a request's method and path), in the event and in every event
it derives from: in `/api/events`, `/api/batches` and the live stream alike.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reactive_spark.errors import ContextStateError
from reactive_spark.events import Event, EventSource
from reactive_spark.failures import SourceErrorInfo, UserError
from reactive_spark.jobs import BatchInfo, JobInfo
from reactive_spark.listener import (
    DeadlineMissed,
    EventsDropped,
    HoldsUntilStop,
    ReceiverInfo,
    StreamingListener,
)
from reactive_spark.sources.derived import parent_events
from reactive_spark.sources.manual import ManualEventSource
from reactive_spark.sources.rest import RestEventSource
from reactive_spark.time import Time, now_ms
from reactive_spark.web.live import Broadcast, Message, frame
from reactive_spark.web.metrics import ConsoleMetrics
from reactive_spark.web.values import kept, kept_tail, relative_paths

if TYPE_CHECKING:
    from reactive_spark.context import StreamingContext

__all__ = ["EventMergedError", "History", "not_accepted", "protected", "redacted"]

Record = dict[str, Any]
#: What replaces what a protected event carries, for unauthenticated viewers.
HIDDEN = "(hidden: sign in to the console to see it)"
#: The fields of a protected event, and of each event it derives from, that every viewer sees:
#: which event it is and, for a request, its method and route (no query string).
PUBLIC_FIELDS = frozenset({"source", "index", "time", "instanceId", "method", "path", "standsFor"})
#: The fields that hold the events an event derives from (`DerivedEvent`, `JoinEvent`).
DERIVED_FROM = frozenset({"parent", "left", "right"})


def _when(milliseconds: int | float | None) -> str | None:
    return None if milliseconds is None else Time(int(milliseconds)).isoformat()


def error_record(error: UserError | None) -> Record | None:
    """The user's exception as JSON: type, message, where, traceback (no library paths)."""
    if error is None:
        return None
    return {
        "type": error.type,
        "message": kept(relative_paths(error.message)),
        "location": error.location,
        "traceback": kept_tail(relative_paths(error.traceback)),
    }


def _fields(event: Event) -> dict[str, Any]:
    """`event.describe()`, or the event's own attributes when that fails on a value.

    A value nested too deeply for `json` must not keep its event out of the console.
    """
    try:
        return event.describe()
    except Exception:
        names = [name for cls in type(event).__mro__ for name in getattr(cls, "__slots__", ())]
        return {name: getattr(event, name, None) for name in names if name != "source"}


def event_record(event: Event, firedBy: str | None = None) -> Record:
    """An accepted event as JSON; `firedBy` names who fired it from outside (the console)."""
    fields = _fields(event)
    return {
        "instanceId": event.instanceId,
        "source": event.source.name,
        "index": event.index,
        "time": event.time.milliseconds,
        "timeUtc": event.time.isoformat(),
        "kind": type(event).__name__,
        "fields": kept(fields),
        "protected": protected(event.source),
        "firedBy": firedBy,
    }


def protected(source: EventSource | None) -> bool:
    """Whether `source` is a token-protected REST trigger, or derives from one (`parents`).

    Its events may carry a protected request (or what a function made of it).
    """
    seen: set[int] = set()
    waiting = [source]
    while waiting:
        current = waiting.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if getattr(current, "requiresToken", False):
            return True
        waiting.extend(getattr(current, "parents", ()))
    return False


def redacted(record: Record) -> Record:
    """`record` (an event's, or a batch's with its event) as unauthenticated viewers see it.

    A protected event keeps its `PUBLIC_FIELDS`, and those of the events it derives from; any
    other field (`query`, `body`, `value`, yours) is `HIDDEN`. Other records are `record`.
    """
    if "event" in record:
        event = redacted(record["event"])
        return record if event is record["event"] else {**record, "event": event}
    if not record.get("protected"):
        return record
    return {**record, "fields": _hidden(record.get("fields", {}))}


def _hidden(fields: Any) -> Any:
    """An event's `fields` with only `PUBLIC_FIELDS` shown, recursively into `DERIVED_FROM`."""
    if not isinstance(fields, dict):
        return HIDDEN
    return {
        key: value if key in PUBLIC_FIELDS else _hidden(value) if key in DERIVED_FROM else HIDDEN
        for key, value in fields.items()
    }


def job_record(job: JobInfo) -> Record:
    """A job as JSON: its stream, status, timing and error."""
    return {
        "stream": job.streamName,
        "streamId": job.streamId,
        "kind": job.kind,
        "function": job.function,
        "status": job.status,
        "started": job.startTime,
        "ended": job.endTime,
        "duration": job.duration,
        "error": error_record(job.userError) if job.failed else None,
        "sparkJobGroup": job.sparkJobGroup,
    }


def deadline_record(missed: DeadlineMissed) -> Record:
    """A missed deadline as JSON."""
    return {
        "kind": missed.kind,
        "name": missed.name,
        "periodStartUtc": Time.fromDatetime(missed.periodStart).isoformat(),
        "deadlineUtc": Time.fromDatetime(missed.deadline).isoformat(),
        "duringDowntime": missed.duringDowntime,
        "periodsMissed": missed.periodsMissed,
        "description": missed.describe(),
    }


@dataclass
class SourceStats:
    """How many events a source fired, when the last one was, and what it dropped."""

    events: int = 0
    last: int | None = None
    dropped: int = 0
    coalesced: int = 0


class EventMergedError(ContextStateError):
    """A fired event was merged into a later one of its source (overflow policy `"coalesce"`).

    It runs as part of that one (whose `standsFor` counts it), which a later fire was answered
    for: the console answers 409, so that a client does not fire it again.
    """


def not_accepted(reason: str) -> ContextStateError:
    """The exception a fire's wait raises when its event was dropped for `reason`, unaccepted.

    `reason` is an `EventsDropped` reason; the message says whether the event runs.
    """
    if reason == "coalesce":
        return EventMergedError(
            "the event was merged into a later one of its source (its overflow policy is "
            "coalesce): it runs as part of that one; do not fire it again"
        )
    if reason == "stop":  # a stop, or a crash of the scheduler
        return ContextStateError(
            "the StreamingContext stopped accepting events before this one was accepted: it "
            "will not run"
        )
    return ContextStateError(
        f"the event was dropped before it was accepted ({reason}): it will not run"
    )


class History(StreamingListener, HoldsUntilStop):
    """Recent events, batches and jobs of `ssc`, and what every source fired (see module).

    Examples:
        >>> history = History(ssc, limit=100)
        >>> ssc.addStreamingListener(history)
        >>> history.batches(10)
        []
    """

    def __init__(self, ssc: StreamingContext, limit: int = 1000) -> None:
        self.ssc = ssc
        self.limit = limit
        self.metrics = ConsoleMetrics(ssc)
        self._lock = threading.Lock()
        self._events: deque[Record] = deque(maxlen=limit)
        self._batches: OrderedDict[int, Record] = OrderedDict()
        self._accepted: OrderedDict[int, float] = OrderedDict()  # instanceId -> wall ms
        #: instanceId -> the events derived from it, directly or not (a trigger's filter's)
        self._derived: OrderedDict[int, list[Record]] = OrderedDict()
        self._stats: dict[str, SourceStats] = {}
        self._deadlines: deque[Record] = deque(maxlen=limit)
        self.live = Broadcast()
        self._waiting: dict[int, asyncio.Future[Event]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- reading -----------------------------------------------------------------------------
    def events(self, limit: int) -> list[Record]:
        """The last `limit` events, newest first."""
        with self._lock:
            return list(self._events)[::-1][:limit]

    def deadlines(self, limit: int) -> list[Record]:
        """The last `limit` missed deadlines, newest first."""
        with self._lock:
            return list(self._deadlines)[::-1][:limit]

    def batches(self, limit: int) -> list[Record]:
        """The last `limit` batches (summaries, without inputs), newest first."""
        with self._lock:
            records = list(self._batches.values())[::-1][:limit]
        return [{key: value for key, value in r.items() if key != "inputs"} for r in records]

    def batch(self, instance_id: int) -> Record | None:
        """The batch of event `instance_id`, with its jobs and inputs, and `derived`.

        An accepted event without a batch record is `"queued"` until the scheduler reached it,
        then `"no jobs"`; None for an event the history never saw. `derived` lists the events
        derived from it (a REST trigger's `filter`, say), with their batches' status: the
        batches a request made run.
        """
        with self._lock:
            batch = self._batches.get(instance_id)
            event = self._event(instance_id) if batch is None else None
            derived = list(self._derived.get(instance_id, ()))
        if batch is not None:
            record = dict(batch)
        elif event is not None:
            record = {**_batch_head(event), "status": self._status(event), "jobs": [], "inputs": {}}
        else:
            return None
        record["derived"] = [{**head, "status": self._status(head)} for head in derived]
        return record

    def _status(self, record: Record) -> str:
        """The status of `record`'s batch: its record's, else `"queued"` or `"no jobs"`."""
        instance_id = record["instanceId"]
        with self._lock:
            batch = self._batches.get(instance_id)
        if batch is not None:
            return str(batch["status"])
        processed = self.ssc.processedThrough >= instance_id
        bound = self.ssc.graph.bound_streams(self._source(record["source"]))
        return "no jobs" if processed or not bound else "queued"

    def sources(self) -> list[Record]:
        """Every source with what it fired, its next fire time and its catch-up policy."""
        records = []
        for source in self.ssc.sources:
            with self._lock:
                stats = self._stats.get(source.name, SourceStats())
            next_fire = source.nextFireTime()
            next_ms = None if next_fire is None else next_fire.milliseconds
            records.append(
                {
                    "name": source.name,
                    "kind": source.kind,
                    "events": stats.events,
                    "lastFired": stats.last,
                    "lastFiredUtc": _when(stats.last),
                    "nextFire": next_ms,
                    "nextFireUtc": _when(next_ms),
                    "catchUp": source.catchUp,
                    "queueDepth": source.queueDepth,
                    "maxQueued": source.maxQueued,
                    "overflowPolicy": source.overflowPolicy,
                    "dropped": stats.dropped,
                    "coalesced": stats.coalesced,
                    "parents": [parent.name for parent in source.parents],
                    "boundStreams": [s.id for s in self.ssc.graph.bound_streams(source)],
                    "fireable": isinstance(source, ManualEventSource | RestEventSource),
                }
            )
        return records

    def _event(self, instance_id: int) -> Record | None:
        """The record of event `instance_id` (newest first: batches follow their events)."""
        return next((e for e in reversed(self._events) if e["instanceId"] == instance_id), None)

    def _source(self, name: str) -> EventSource:
        return next(source for source in self.ssc.sources if source.name == name)

    # -- waiting for an event's number -------------------------------------------------------
    def wait_numbered(self, event: Event) -> asyncio.Future[Event]:
        """A future that resolves once `event` was accepted (has its `instanceId`); on the loop.

        The event is recorded as fired by the console.
        """
        self._loop = loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._waiting[id(event)] = future
        return future

    def stop_waiting(self, event: Event) -> None:
        """Stop waiting for `event`'s number (it was accepted, refused or never will be)."""
        self._waiting.pop(id(event), None)

    def context_stopped(self) -> None:
        """Events still waiting for their number never get one (see `_never_numbered`)."""
        self._never_numbered(
            None,
            ContextStateError(
                "the StreamingContext stopped before the event was accepted: it will not run"
            ),
        )

    def _never_numbered(self, events: list[Event] | None, why: ContextStateError) -> None:
        """The futures of `events` (None: all) raise `why` (the console's fire answers it).

        Set on the loop, whichever thread tells.
        """
        loop = self._loop
        if not self._waiting or loop is None or loop.is_closed():
            return
        keys = list(self._waiting) if events is None else [id(event) for event in events]

        def fail() -> None:
            for key in keys:
                future = self._waiting.get(key)
                if future is not None and not future.done():
                    future.set_exception(why)

        loop.call_soon_threadsafe(fail)

    # -- live viewers ------------------------------------------------------------------------
    def listen_live(self) -> None:
        """Deliver live messages on the running loop (call on it, before subscribing)."""
        self._loop = asyncio.get_running_loop()

    def _publish(self, kind: str, data: Record) -> None:
        loop = self._loop
        if not len(self.live) or loop is None or loop.is_closed():
            return
        full = frame(kind, data)
        hidden = redacted(data)
        message = Message(full, full if hidden is data else frame(kind, hidden))
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self.live.publish(message)
        else:
            loop.call_soon_threadsafe(self.live.publish, message)

    # -- listener callbacks --------------------------------------------------------------------
    def onEventFired(self, event: Event) -> None:
        """Record the event; count it for its source."""
        waiting = self._waiting.pop(id(event), None)
        if waiting is not None and not waiting.done():
            waiting.set_result(event)  # first: its fire is answered whatever the rest does
        record = event_record(event, None if waiting is None else "console")
        assert event.instanceId is not None
        with self._lock:
            self._events.append(record)
            self._derived_from(event)
            stats = self._stats.setdefault(event.source.name, SourceStats())
            stats.events += 1
            stats.last = event.time.milliseconds
            self._accepted[event.instanceId] = now_ms()
            while len(self._accepted) > self.limit:
                self._accepted.popitem(last=False)
        self.metrics.event(event.source.name)
        self._publish("event", record)

    def _derived_from(self, event: Event) -> None:
        """List `event` under every event it derives from, directly or not (under the lock)."""
        head = {"instanceId": event.instanceId, "source": event.source.name}
        waiting = parent_events(event)
        while waiting:
            parent = waiting.pop()
            if parent.instanceId is not None:
                self._derived.setdefault(parent.instanceId, []).append(head)
                while len(self._derived) > self.limit:
                    self._derived.popitem(last=False)
            waiting.extend(parent_events(parent))

    def onBatchSubmitted(self, batchSubmitted: BatchInfo) -> None:
        """Record the planned batch."""
        self._batch(batchSubmitted, "planned")

    def onBatchStarted(self, batch: BatchInfo) -> None:
        """Record that its jobs started; feed the scheduling lag."""
        self._batch(batch, "running")
        with self._lock:
            accepted = self._accepted.get(batch.event.instanceId or -1)
        if accepted is not None and batch.startedTime is not None:
            self.metrics.lag(max(0.0, (batch.startedTime - accepted) / 1000))

    def onBatchCompleted(self, batch: BatchInfo) -> None:
        """Record the batch's outcome."""
        self._batch(batch, "failed" if batch.failures else "succeeded")

    def onJobStarted(self, job: JobInfo) -> None:
        """Show the job running in its batch."""
        self._job(job)

    def onJobCompleted(self, job: JobInfo) -> None:
        """Record the job's outcome; count it."""
        self._job(job)
        self.metrics.job(job)

    def onEventsDropped(self, dropped: EventsDropped) -> None:
        """Count the drops for their source; an accepted event's batch says `"dropped"`."""
        with self._lock:
            stats = self._stats.setdefault(dropped.sourceName, SourceStats())
            if dropped.reason == "coalesce":
                stats.coalesced += dropped.count
            else:
                stats.dropped += dropped.count
        self.metrics.dropped(dropped.sourceName, dropped.reason, dropped.count)
        self._publish(
            "dropped",
            {"source": dropped.sourceName, "reason": dropped.reason, "count": dropped.count},
        )
        for event in dropped.events:
            if event.instanceId is not None:  # accepted (a 202 pointed at its batch)
                self._batch_dropped(event)
            elif id(event) in self._waiting:  # fired here and never accepted
                self._never_numbered([event], not_accepted(dropped.reason))

    def onDeadlineMissed(self, missed: DeadlineMissed) -> None:
        """Keep the miss, count it, push it to the subscribers (a problem in the console)."""
        record = deadline_record(missed)
        with self._lock:
            self._deadlines.append(record)
        self.metrics.deadline_missed(missed.kind, missed.name, missed.periodsMissed)
        self._publish("deadline", record)

    def onSourceError(self, error: SourceErrorInfo) -> None:
        """Push a source's failure to the subscribers."""
        self._publish(
            "source-error",
            {
                "source": error.sourceName,
                "operation": error.operation,
                "function": error.function,
                "description": error.describe(),
                "error": error_record(error.userError),
            },
        )

    def onReceiverError(self, receiverError: ReceiverInfo) -> None:
        """Push a receiver's failure to the subscribers."""
        self._publish(
            "receiver",
            {
                "stream": receiverError.name(),
                "active": receiverError.active(),
                "error": kept(receiverError.lastErrorMessage()),
            },
        )

    def _batch(self, info: BatchInfo, status: str) -> None:
        instance_id = info.event.instanceId
        assert instance_id is not None
        started, completed = info.startedTime, info.completedTime
        duration = None
        if started is not None and completed is not None:
            duration = (completed - started) / 1000
        with self._lock:
            record = self._batches.get(instance_id)
            if record is None:
                event = self._event(instance_id) or event_record(info.event)
                record = {**_batch_head(event), "jobs": []}
                self._batches[instance_id] = record
                while len(self._batches) > self.limit:
                    self._batches.popitem(last=False)
            record.update(
                status=status,
                submitted=info.plannedTime,
                started=started,
                completed=completed,
                duration=duration,
                records=info.numRecords(),
                inputs=kept(info.inputs),
                jobs=[job_record(job) for job in info.jobs] or record["jobs"],
            )
            summary = {key: value for key, value in record.items() if key != "inputs"}
        self._publish("batch", summary)

    def _batch_dropped(self, event: Event) -> None:
        instance_id = event.instanceId
        assert instance_id is not None
        with self._lock:
            record = self._batches.get(instance_id)
            if record is None:
                head = self._event(instance_id) or event_record(event)
                record = {**_batch_head(head), "jobs": [], "inputs": {}}
                self._batches[instance_id] = record
                while len(self._batches) > self.limit:
                    self._batches.popitem(last=False)
            record["status"] = "dropped"
            summary = {key: value for key, value in record.items() if key != "inputs"}
        self._publish("batch", summary)

    def _job(self, job: JobInfo) -> None:
        record = job_record(job)
        instance_id = job.event.instanceId
        with self._lock:
            batch = self._batches.get(instance_id) if instance_id is not None else None
            if batch is not None:
                jobs = [j for j in batch["jobs"] if j["streamId"] != job.streamId]
                batch["jobs"] = [*jobs, record]
        self._publish("job", {**record, "instanceId": instance_id})


def _batch_head(event: Record) -> Record:
    return {
        "instanceId": event["instanceId"],
        "source": event["source"],
        "index": event["index"],
        "time": event["time"],
        "timeUtc": event["timeUtc"],
        "event": event,
    }
