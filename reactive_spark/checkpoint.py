"""Checkpoints: a write-ahead log of batches, read back after a crash (docs/checkpoints.md).

The checkpoint directory holds data, never code, so an upgraded application restarts on it:

* `metadata.json`: the zero time and the `toProduct()` of every event source;
* `wal/segment-NNNNNN.jsonl`: one JSON record per line. Before an event's jobs run, a
  `planned` record holds the event (`describe()`), what every input read, and how far every
  source had fired when the event was accepted; a `completed` record follows the jobs;
* `rdds/`: Spark's RDD checkpoints (`DStream.checkpoint`);
* `state/`: `updateStateByKey`'s saves, deleted here once no batch the log keeps reads them;
* `lock`: held by the context started on the directory, until it stops (`checkpoint_lock.py`).

A `planned` record also says, per source, the earliest batch that what windows and states keep
reaches back to (`historyFrom`): the log keeps every batch from there. On restart the context
re-plans the completed batches that windows and states still need (without running their
jobs), re-runs the batches that were planned but not completed with the inputs they recorded,
fires what the sources missed during the downtime (`EventSource.between`, shaped
by each source's `catchUp` policy) and only then restarts the sources (`recovery.py`).

Examples:
    >>> import tempfile
    >>> from reactive_spark import StreamingContext, VirtualClock
    >>> recoverable = StreamingContext(sc, 1, clock=VirtualClock(t0), checkpoint=tempfile.mkdtemp())
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from reactive_spark.dependencies import Retention
from reactive_spark.dstream.state import STATE_SAVES
from reactive_spark.errors import InvalidArgumentError, ReactiveSparkError
from reactive_spark.events import EventSource
from reactive_spark.jobs import Batch
from reactive_spark.time import Time

__all__ = ["Checkpoint", "CheckpointError", "Recovered", "StopRecord", "product_of"]

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
#: Records in a log segment before the log is compacted into a new segment.
SEGMENT_RECORDS = 10_000
_SEGMENT = re.compile(r"^segment-(\d{6,})\.jsonl$")
#: A state save's name in `state/`: `<stream id>-<instance id>` (see `dstream/state.py`).
_STATE_SAVE = re.compile(r"^\d+-\d+$")

Record = dict[str, Any]
#: Where, in the directory, a context starting afresh sets an earlier run's checkpoint aside.
SET_ASIDE = "replaced"


class CheckpointError(ReactiveSparkError):
    """The checkpoint directory cannot be read or written."""


#: What a clean stop logs last: how far every source fired, and the last instance id.
StopRecord = tuple[dict[str, list[int]], int]


@dataclass
class Recovered:
    """What a checkpoint directory says about the run that wrote it.

    `completed` and `unfinished` hold `planned` records, oldest first: completed batches that
    windows may still need, and batches whose jobs may not all have run.

    Examples:
        >>> import tempfile
        >>> Checkpoint(tempfile.mkdtemp()).load() is None  # nothing checkpointed there yet
        True
    """

    zero_time: Time
    products: dict[str, Any]
    progress: dict[str, list[int]] = field(default_factory=dict)
    #: Per source, the times of events dropped past its bound: never fired again.
    dropped: dict[str, set[int]] = field(default_factory=dict)
    #: Per expectation (`source:name`, `output:name`), the state of its deadlines.
    deadlines: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_instance_id: int = -1
    #: Whether the run's stop left no accepted event without its batch (nothing underived;
    #: a batch it did not complete still runs again).
    stopped: bool = False
    completed: list[Record] = field(default_factory=list)
    unfinished: list[Record] = field(default_factory=list)
    #: Per source, the earliest batch the latest batch's history reached back to (see
    #: `Checkpoint.open`); None in a log written before batches said so.
    history_from: dict[str, int] | None = None


class Checkpoint:
    """A checkpoint directory: its metadata and write-ahead log (see the module docs).

    Writes come from the scheduler's worker thread (batch hooks); `load` and `open` run in a
    worker thread too, so the event loop never waits for the disk.
    """

    def __init__(self, directory: str) -> None:
        if os.path.exists(directory) and not os.path.isdir(directory):
            raise InvalidArgumentError(
                f"the checkpoint directory {directory!r} is a file: give the StreamingContext "
                "a directory (it is created if missing)"
            )
        self.directory = os.path.abspath(directory)
        self.wal_directory = os.path.join(self.directory, "wal")
        self._retention = Retention()
        self._history: Callable[[], dict[str, int]] | None = None
        self._history_from: dict[str, int] | None = None
        self._segment: TextIO | None = None
        self._segment_number = 0
        self._segment_records = 0
        self._planned: dict[int, Record] = {}
        self._recent: dict[int, Record] = {}
        self._progress: dict[str, list[int]] = {}
        self._dropped: dict[str, set[int]] = {}
        self._deadlines: dict[str, dict[str, Any]] = {}
        # the worker thread logs batches, the loop dropped events: one writes at a time
        self._writing = threading.Lock()
        #: The state saves kept batches read, once the log changed what it keeps: the saves
        #: not among them are deleted after the lock is let go (`_drop_unread_saves`).
        self._unread: set[str] | None = None
        self._last_instance_id = -1
        self._stopped = False  # see `Recovered.stopped`; until the next batch is planned

    # -- reading -----------------------------------------------------------------------------
    def exists(self) -> bool:
        """Whether the directory holds a checkpoint to recover from."""
        return os.path.exists(os.path.join(self.directory, "metadata.json"))

    def load(self) -> Recovered | None:
        """Read the directory; None when it holds no checkpoint yet."""
        path = os.path.join(self.directory, "metadata.json")
        if not os.path.exists(path):
            return None
        try:
            with open(path, encoding="utf-8") as file:
                metadata = json.load(file)
        except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
            raise CheckpointError(f"cannot read checkpoint metadata {path}: {exc}") from exc
        if not isinstance(metadata, dict):
            raise CheckpointError(f"checkpoint metadata {path} is not a JSON object")
        version = metadata.get("version")
        if version != FORMAT_VERSION:
            raise CheckpointError(
                f"checkpoint {self.directory} has format version {version!r}; "
                f"this reactive-spark reads version {FORMAT_VERSION}",
            )
        zero_time, sources = metadata.get("zeroTime"), metadata.get("sources")
        if isinstance(zero_time, bool) or not isinstance(zero_time, int):
            raise CheckpointError(f"checkpoint metadata {path} has no zeroTime (epoch ms)")
        if not isinstance(sources, dict):
            raise CheckpointError(f"checkpoint metadata {path} has no sources")
        with self._disk("read the write-ahead log"):
            return self._recover(Recovered(Time(zero_time), sources))

    def _recover(self, recovered: Recovered) -> Recovered:
        planned: dict[int, Record] = {}
        completed: dict[int, Record] = {}
        for number in self._segment_numbers():
            for line, record in self._read_segment(number):
                try:
                    self._take(record, recovered, planned, completed)
                except (KeyError, TypeError, ValueError, AttributeError, CheckpointError) as exc:
                    raise CheckpointError(
                        f"checkpoint record at {self._segment_path(number)} line {line} is not "
                        f"one reactive-spark writes ({exc!r}): restore the file, or start from "
                        "an empty checkpoint directory"
                    ) from exc
        recovered.completed = sorted(completed.values(), key=lambda record: record["id"])
        recovered.unfinished = sorted(planned.values(), key=lambda record: record["id"])
        batches = [*completed.values(), *planned.values()]
        if batches:
            latest = max(batches, key=lambda record: record["id"])
            recovered.history_from = _history_from(latest)
        return recovered

    @staticmethod
    def _take(
        record: Record,
        recovered: Recovered,
        planned: dict[int, Record],
        completed: dict[int, Record],
    ) -> None:
        """Apply one record of the log to what is recovered so far.

        A record of the wrong shape raises (`KeyError`, `CheckpointError`, ...): `_recover`
        says which record it was.
        """
        kind = record["kind"]
        if kind in ("planned", "done"):  # what recovery reads of a batch's record
            _require_fields(record, {"id": int, "source": str, "index": int, "time": int})
            _require_fields(record, {"event": dict, "inputs": dict})
            _history_from(record)
        if kind in ("planned", "progress"):
            _require_fields(record, {"progress": dict})
        if kind == "planned":
            planned[record["id"]] = record
            recovered.progress = record["progress"]
            recovered.stopped = False
            recovered.last_instance_id = max(recovered.last_instance_id, record["id"])
        elif kind == "completed" and record["id"] in planned:
            completed[record["id"]] = planned.pop(record["id"])
        elif kind == "done":
            completed.setdefault(record["id"], record)
            planned.pop(record["id"], None)
        elif kind == "dropped":
            recovered.dropped.setdefault(record["source"], set()).update(record["times"])
        elif kind == "deadline":
            recovered.deadlines[record["name"]] = record["state"]
        elif kind == "progress":
            recovered.progress = record["progress"]
            recovered.stopped = record.get("stopped", False)
            recovered.last_instance_id = max(recovered.last_instance_id, record["lastInstanceId"])

    def _segment_numbers(self) -> list[int]:
        try:
            names = os.listdir(self.wal_directory)
        except FileNotFoundError:
            return []
        return sorted(int(match[1]) for name in names if (match := _SEGMENT.match(name)))

    def _segment_path(self, number: int) -> str:
        return os.path.join(self.wal_directory, f"segment-{number:06d}.jsonl")

    def _read_segment(self, number: int) -> list[tuple[int, Record]]:
        """The records of segment `number`, each with its line number.

        A crash can tear the last record written, the segment's last line: it was never
        acknowledged, and is ignored. A line that cannot be read anywhere else is corruption,
        and recovering past it would lose what follows: `CheckpointError` names it.
        """
        path = self._segment_path(number)
        with open(path, "rb") as file:
            lines = [(n + 1, line) for n, line in enumerate(file.read().split(b"\n")) if line]
        records = []
        for position, (line, text) in enumerate(lines):
            try:
                records.append((line, json.loads(text.decode("utf-8"))))
            except ValueError as exc:  # UnicodeDecodeError is a ValueError
                if position == len(lines) - 1:
                    log.warning("checkpoint: ignoring a torn record at %s line %d", path, line)
                    break
                raise CheckpointError(
                    f"checkpoint record at {path} line {line} cannot be read ({exc}), and "
                    "records follow it: restore the file, or start from an empty checkpoint "
                    "directory"
                ) from None
        return records

    # -- writing -----------------------------------------------------------------------------
    def set_aside(self) -> str:
        """Move what an earlier run left to recover from into `<directory>/replaced/`.

        Its metadata, log and state saves: a context that starts afresh in the directory
        (`ssc.checkpoint` alone) writes its own, which must not be mistaken for theirs, and a
        checkpoint meant for recovery is not lost (move them back to recover from it). What an
        earlier fresh start set aside there is replaced. Returns where they went.
        """
        aside = os.path.join(self.directory, SET_ASIDE)
        with self._disk("set the earlier run's checkpoint aside"):
            shutil.rmtree(aside, ignore_errors=True)
            os.makedirs(aside)
            for name in ("metadata.json", os.path.basename(self.wal_directory), STATE_SAVES):
                path = os.path.join(self.directory, name)
                if os.path.exists(path):
                    os.replace(path, os.path.join(aside, name))
        return aside

    def open(
        self,
        zero_time: Time,
        sources: list[EventSource],
        retention: Retention,
        recovered: Recovered | None,
        history: Callable[[], dict[str, int]] | None = None,
    ) -> None:
        """Write the metadata and start a new log segment holding what is still needed.

        `retention` says how much completed history the windows need (see `Retention`);
        `history`, called as each batch is logged, per source the earliest batch that what
        windows and states keep reaches back to (`DStreamGraph.history_from`): the log keeps
        every batch from there, and the state saves they read.
        """
        with self._disk("open the write-ahead log"):
            self._open(zero_time, sources, retention, recovered, history)
        self._drop_unread_saves()

    def _disk(self, action: str) -> contextlib.AbstractContextManager[None]:
        """Turn an OSError of the block into a `CheckpointError` naming the directory."""
        return disk_errors(f"cannot {action} of checkpoint {self.directory}")

    def _open(
        self,
        zero_time: Time,
        sources: list[EventSource],
        retention: Retention,
        recovered: Recovered | None,
        history: Callable[[], dict[str, int]] | None,
    ) -> None:
        os.makedirs(self.wal_directory, exist_ok=True)
        self._retention = retention
        self._history = history
        metadata = {
            "version": FORMAT_VERSION,
            "zeroTime": zero_time.milliseconds,
            "sources": {source.name: product_of(source) for source in sources},
        }
        _write_atomically(os.path.join(self.directory, "metadata.json"), json.dumps(metadata))
        if recovered is not None:
            self._recent = {record["id"]: record for record in recovered.completed}
            self._planned = {record["id"]: record for record in recovered.unfinished}
            self._progress = dict(recovered.progress)
            self._dropped = {name: set(times) for name, times in recovered.dropped.items()}
            # the deadline states are those this run logged before the log opened: it logs
            # every expectation it watches, so those of expectations gone are dropped
            self._last_instance_id = recovered.last_instance_id
            self._stopped = recovered.stopped
            self._history_from = recovered.history_from
        self._roll()

    def _roll(self) -> None:
        """Start a new segment with what is still needed, then drop the older segments.

        That is the completed batches windows need, the unfinished ones, the progress and the
        dropped events catch-up could fire again (those after their source's progress).
        """
        older = self._segment_numbers()
        self._segment_number = (older[-1] if older else 0) + 1
        self._recent = {record["id"]: record for record in self._needed()}
        if self._segment is not None:
            self._segment.close()
        self._segment = open(self._segment_path(self._segment_number), "a", encoding="utf-8")  # noqa: SIM115
        self._segment_records = 0
        for record in self._recent.values():
            self._append({**record, "kind": "done"})
        for record in self._planned.values():  # unfinished until re-run
            self._append({**record, "kind": "planned"})
        self._append_progress()
        for name, times in list(self._dropped.items()):
            fired = self._progress.get(name, [-1])[0]
            later = sorted(time for time in times if time > fired)
            self._dropped[name] = set(later)
            if later:
                self._append({"kind": "dropped", "source": name, "times": later})
        for name, state in self._deadlines.items():
            self._append({"kind": "deadline", "name": name, "state": state})
        self._sync()
        for number in older:
            os.remove(self._segment_path(number))
        self._unread = self._saves_read()

    def _saves_read(self) -> set[str]:
        """The names of the state saves a batch the log keeps reads (under `_writing`)."""
        return {
            os.path.basename(path)
            for records in (self._recent, self._planned)
            for record in records.values()
            for path in _saves_read(record)
        }

    def _drop_unread_saves(self) -> None:
        """Delete the state saves no batch the log kept, when it last looked, reads.

        Only once the batches that read them are no longer kept: a restart plans the kept
        ones again, loading what they saved. Runs in the worker thread, between batches, when
        every save made was logged with its batch (a save no record reads is a crash's); not
        under `_writing`, which the event loop takes to log dropped events.
        """
        read, self._unread = self._unread, None
        if read is None:
            return
        directory = os.path.join(self.directory, STATE_SAVES)
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            return
        for name in names:
            if _STATE_SAVE.match(name) and name not in read:
                shutil.rmtree(os.path.join(directory, name), ignore_errors=True)

    def _needed(self) -> list[Record]:
        """The completed batches windows and states may need (see `open`).

        Every batch of a source from the earliest one the latest batch's history reaches
        back to; the last `count` of each source, every batch within the retention's
        `duration` of the latest one; and each input's last read: where it goes on from after
        a restart, even when its source's later batches read nothing of it (the read failed).
        """
        records = sorted(self._recent.values(), key=lambda record: record["id"])
        if not records:
            return []
        horizon = records[-1]["time"] - self._retention.duration.milliseconds
        keep = max(self._retention.count, 1)
        history = self._history_from or {}
        seen: dict[str, int] = {}
        read: set[str] = set()  # inputs whose last read is in a later record
        needed = []
        for record in reversed(records):
            source = record["source"]
            seen[source] = seen.get(source, 0) + 1
            inputs = record["inputs"].keys()
            if (
                seen[source] <= keep
                or record["time"] >= horizon
                or record["id"] >= history.get(source, record["id"] + 1)
                or inputs - read
            ):
                needed.append(record)
            read.update(inputs)
        return needed[::-1]

    def history(self) -> list[Record]:
        """The completed batches kept for the windows (`planned` records), oldest first."""
        return sorted(self._recent.values(), key=lambda record: record["id"])

    def planned(self, batch: Batch) -> None:
        """Log the batch durably before its jobs run (a batch hook)."""
        with self._writing, self._disk("log a planned batch"):
            self._log_planned(batch)
        self._drop_unread_saves()

    def _log_planned(self, batch: Batch) -> None:
        event = batch.event
        assert event.instanceId is not None
        # a batch re-run after a restart was accepted before the progress now known
        self._progress = batch.progress or self._progress
        record = {
            "kind": "planned",
            "id": event.instanceId,
            "source": event.source.name,
            "index": event.index,
            "time": event.time.milliseconds,
            "event": event.describe(),
            "inputs": batch.inputs,
            "progress": self._progress,
        }
        if self._history is not None:
            record["historyFrom"] = self._history_from = self._history()
        self._planned[event.instanceId] = record
        self._last_instance_id = max(self._last_instance_id, event.instanceId)
        self._stopped = False
        self._append(record)
        self._sync()
        if _saves_read(record):  # a state was saved or loaded: older saves may be unread now
            self._recent = {record["id"]: record for record in self._needed()}
            self._unread = self._saves_read()

    def completed(self, batch: Batch) -> None:
        """Log that the batch's jobs ended (a batch hook); compact the log now and then."""
        with self._writing, self._disk("log a completed batch"):
            self._log_completed(batch)
        self._drop_unread_saves()

    def _log_completed(self, batch: Batch) -> None:
        instance_id = batch.event.instanceId
        assert instance_id is not None
        if batch.cancelled:  # not completed: it stays planned, and a restart runs it again
            return
        record = self._planned.pop(instance_id)
        record["kind"] = "done"
        self._recent[instance_id] = record
        self._append({"kind": "completed", "id": instance_id})
        if self._segment is not None:
            self._segment.flush()  # made durable by the next planned record's sync
        if self._segment_records >= SEGMENT_RECORDS:
            self._roll()

    def dropped(self, source: str, times: list[int]) -> None:
        """Log that events of `source` at `times` were dropped past its bound (on the loop).

        Catch-up after a restart leaves them out, so a dropped event is never resurrected. The
        record is handed to the operating system at once, as a completed batch's is, so it
        survives the process being killed; the next planned batch's sync makes it durable.
        """
        with self._writing, self._disk("log dropped events"):
            self._dropped.setdefault(source, set()).update(times)
            self._append({"kind": "dropped", "source": source, "times": list(times)})
            if self._segment is not None:
                self._segment.flush()

    def deadline(self, name: str, state: dict[str, Any], durable: bool = False) -> None:
        """Log the state of the expectation `name`: the periods decided and met (any thread).

        So a missed deadline is reported at most once: a restart goes on from the last state
        logged. A `durable` state (a miss about to be told) is synced to disk first; any other
        is handed to the operating system, and made durable by the next sync.
        """
        with self._writing, self._disk("log a deadline"):
            self._deadlines[name] = state
            if self._segment is not None:  # else it is logged when the log opens
                self._append({"kind": "deadline", "name": name, "state": state})
                if durable:
                    self._sync()
                else:
                    self._segment.flush()

    def close(self, stopped: StopRecord | None = None) -> None:
        """Make everything written durable and close the log.

        `stopped` comes from a stop that left no accepted event without its batch
        (`stop_record`): logged last, it says so, with how far every source fired (a restart
        resumes every source from there, not from the last batch's progress).
        """
        with self._writing:
            if self._segment is not None:
                with self._disk("close the write-ahead log"):
                    if stopped is not None:
                        self._progress, last_instance_id = stopped
                        self._last_instance_id = max(self._last_instance_id, last_instance_id)
                        self._stopped = True
                        self._append_progress()
                    self._sync()
                    self._segment.close()
                self._segment = None

    def _append_progress(self) -> None:
        self._append(
            {
                "kind": "progress",
                "progress": self._progress,
                "lastInstanceId": self._last_instance_id,
                "stopped": self._stopped,
            }
        )

    def _append(self, record: Record) -> None:
        if self._segment is None:
            raise CheckpointError(f"the write-ahead log of {self.directory} is not open")
        self._segment.write(json.dumps(record, separators=(",", ":"), default=repr) + "\n")
        self._segment_records += 1

    def _sync(self) -> None:
        assert self._segment is not None
        self._segment.flush()
        os.fsync(self._segment.fileno())


def _history_from(record: Record) -> dict[str, int] | None:
    """The batch record's `historyFrom`, checked (None in records written before it was)."""
    history = record.get("historyFrom")
    if history is None:
        return None
    if not isinstance(history, dict) or not all(
        isinstance(first, int) and not isinstance(first, bool) for first in history.values()
    ):
        raise CheckpointError(f"historyFrom must map sources to instance ids, got {history!r:.80}")
    return history


def _saves_read(record: Record) -> list[str]:
    """The state saves a batch record says its states saved or loaded (`dstream/state.py`)."""
    return [
        read["state"]
        for read in record["inputs"].values()
        if isinstance(read, dict) and isinstance(read.get("state"), str)
    ]


def _require_fields(record: Record, types: dict[str, type]) -> None:
    """Raise `CheckpointError` unless `record` holds each field with a value of its type."""
    for name, kind in types.items():
        value = record[name]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise CheckpointError(f"{name} must be a {kind.__name__}, got {value!r:.80}")


@contextlib.contextmanager
def disk_errors(message: str) -> Iterator[None]:
    """An `OSError` inside as a `CheckpointError` saying `message` and the error."""
    try:
        yield
    except OSError as exc:
        raise CheckpointError(f"{message}: {exc}") from exc


def product_of(source: EventSource) -> Any:
    """`source.toProduct()` as the metadata records it (tuples become lists), to compare."""
    return json.loads(json.dumps(source.toProduct(), default=repr))


def _write_atomically(path: str, text: str) -> None:
    temporary = f"{path}.tmp"
    with open(temporary, "w", encoding="utf-8") as file:
        file.write(text)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    directory = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
