"""Running a planned batch: its hooks around its jobs, the jobs in Spark, listeners told.

The scheduler's worker thread hands each planned batch to `BatchRunner.run`: the batch hooks
(the checkpoint's write-ahead log) go before and after its jobs, which run at most
`maxConcurrentJobs` at once, each in a Spark job group of its own, all under one job tag a stop
cancels. Listeners hear of the batch and every job as PySpark's would; failures are reported.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TYPE_CHECKING

from reactive_spark.errors import JobSkippedError
from reactive_spark.jobs import Batch, BatchInfo, Job, JobInfo
from reactive_spark.listener import ListenerBus, OutputOperationInfo
from reactive_spark.time import now_ms

if TYPE_CHECKING:
    from pyspark import SparkContext

__all__ = ["BatchHook", "BatchRunner", "describe_batch"]

log = logging.getLogger(__name__)

BatchHook = Callable[[Batch], None]


class BatchRunner:
    """Runs planned batches, one at a time, their jobs at most `max_concurrent_jobs` at once."""

    def __init__(
        self, sparkContext: SparkContext, listeners: ListenerBus, max_concurrent_jobs: int
    ) -> None:
        self._sc = sparkContext
        self._listeners = listeners
        self.max_concurrent_jobs = max_concurrent_jobs
        self._before_jobs: list[BatchHook] = []
        self._after_jobs: list[BatchHook] = []
        self._job_threads: ThreadPoolExecutor | None = None
        # jobs run at once tell listeners one at a time, as PySpark's one listener thread does
        self._telling = threading.RLock()
        #: Every job's Spark jobs carry this tag (a stop cancels them) and a group of their own.
        self.job_group = f"reactive-spark-{id(self):x}"
        #: A stop that does not wait says so: jobs not started yet never start, and a job that
        #: fails meanwhile was cancelled.
        self.dropping = False
        #: A stop left the running batch to end in its thread: nothing more is told or recorded.
        self.abandoned = False

    def add_hooks(self, before: BatchHook | None = None, after: BatchHook | None = None) -> None:
        """Call `before(batch)` before a batch's jobs, `after(batch)` once they are done."""
        if before is not None:
            self._before_jobs.append(before)
        if after is not None:
            self._after_jobs.append(after)

    @property
    def has_hooks(self) -> bool:
        """Whether batch hooks want every batch, those with no job included."""
        return bool(self._before_jobs or self._after_jobs)

    def start(self, job_thread_started: Callable[[int], None]) -> None:
        """Make the threads jobs run in, with more than one at once; each says its ident."""
        if self.max_concurrent_jobs > 1:
            self._job_threads = ThreadPoolExecutor(
                self.max_concurrent_jobs,
                thread_name_prefix="reactive-spark-job",
                initializer=lambda: job_thread_started(threading.get_ident()),
            )

    def shutdown(self, *, wait: bool) -> None:
        """End the job threads (waiting for the running jobs if `wait`)."""
        if self._job_threads is not None:
            self._job_threads.shutdown(wait=wait)
            self._job_threads = None

    def run(self, batch: Batch) -> None:
        """Report planning failures, call the batch hooks around the jobs, run the jobs.

        The batch counts as submitted now, once planned (as a JobSet in Spark).
        """
        if not (batch.jobs or batch.failures):  # a batch with neither is not reported
            for hook in self._before_jobs:
                hook(batch)
            for hook in self._after_jobs:
                hook(batch)
            return
        info = BatchInfo(batch.event, batch.inputs, now_ms(), inputInfos=batch.inputInfos)
        info.planned = [
            JobInfo(
                job.stream.name,
                batch.event,
                job.kind,
                info.plannedTime,
                function=job.stream.functionName,
                streamId=job.stream.id,
                outputId=job.stream.outputId,
                sparkJobGroup=f"{self.job_group}-{batch.event.instanceId}-{job.stream.id}",
            )
            for job in batch.jobs
        ]
        if self._listeners.active:  # each callback gets the batch as it is then, as in PySpark
            self._listeners.tell("onBatchSubmitted", _snapshot(info))
        for hook in self._before_jobs:
            hook(batch)
        info.startedTime = now_ms()
        if self._listeners.active:
            self._listeners.tell("onBatchStarted", _snapshot(info))
        for failure in batch.failures:
            info.jobs.append(failure)
            self._listeners.report(failure)
        if batch.jobs:
            self._run_jobs(batch, info)
        if self.abandoned:  # the stop went on without it: nothing more is told or recorded
            return
        info.completedTime = now_ms()
        for hook in self._after_jobs:
            hook(batch)
        self._listeners.tell("onBatchCompleted", info)
        if log.isEnabledFor(logging.INFO):
            log.info("%s", describe_batch(info))

    def _run_jobs(self, batch: Batch, info: BatchInfo) -> None:
        """Run the batch's jobs, at most `maxConcurrentJobs` at once; report each outcome."""
        infos = info.planned
        pairs = list(zip(batch.jobs, infos, strict=True))
        info_of = {id(job): job_info for job, job_info in pairs}
        if any(job.stream.commitsFirst for job in batch.jobs):
            # commits run first, one at a time; a job reading a failed one is skipped
            for job, job_info in pairs:
                if job.stream.commitsFirst:
                    self._execute_after(job, job_info, info_of)
            pairs = [(job, job_info) for job, job_info in pairs if not job.stream.commitsFirst]
        if self._job_threads is None or len(pairs) <= 1:
            for job, job_info in pairs:
                self._execute_after(job, job_info, info_of)
        else:
            running = [
                self._job_threads.submit(self._execute_after, job, job_info, info_of)
                for job, job_info in pairs
            ]
            wait(running)
            for future in running:  # a BaseException (a simulated crash) is never swallowed
                crash = future.exception()
                if crash is not None:
                    raise crash
        if self.abandoned:  # the stop went on without it: nothing more is told or recorded
            return
        batch.cancelled = any(job_info.cancelled for job_info in infos)
        info.jobs.extend(infos)

    def _execute_after(self, job: Job, info: JobInfo, info_of: dict[int, JobInfo]) -> None:
        """Run `job`, unless a commit it reads (`job.after`) failed: then report it skipped.

        What became of it is told as soon as it ends, as PySpark tells each output operation's
        end before the next one starts.
        """
        for commit in job.after:
            commit_error = info_of[id(commit)].error
            if commit_error is not None:
                info.startTime = info.endTime = now_ms()
                info.error = JobSkippedError(job.stream.name, commit.stream.name, commit_error)
                break
        else:
            self._execute(job, info)
        if self.abandoned:  # the stop went on without it: nothing more is told or recorded
            return
        with self._telling:
            if info.failed:
                self._listeners.report(info)
            else:
                self._listeners.tell("onJobCompleted", info)
            if self._listeners.active:
                completed = OutputOperationInfo(copy.copy(info))
                self._listeners.tell("onOutputOperationCompleted", completed)

    def _execute(self, job: Job, info: JobInfo) -> None:
        if self.dropping:  # a stop that does not wait came first: it never starts
            info.startTime = info.endTime = now_ms()
            info.cancelled = True
            return
        info.startTime = now_ms()
        if self._listeners.active:
            with self._telling:
                self._listeners.tell("onJobStarted", info)
                started = OutputOperationInfo(copy.copy(info))
                self._listeners.tell("onOutputOperationStarted", started)
        try:
            self._sc.setJobGroup(info.sparkJobGroup or self.job_group, job.description, True)
            self._sc.addJobTag(self.job_group)
            job.action()
        except Exception as exc:
            info.error = exc
            if self.dropping:  # the context is stopping: Spark cancelled the job
                info.cancelled = True
                log.info("reactive-spark: cancelled %s (the context is stopping)", job.description)
            else:
                info.traceback = "".join(traceback.format_exception(exc))
        finally:
            info.endTime = now_ms()
            # the thread runs other blocking work next: none of it is this job's, or cancellable
            self._sc.clearJobTags()
            self._sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]

    def cancel_spark_jobs(self) -> bool:
        """Cancel the running Spark jobs of this context's jobs (in a blocking-call thread).

        A SparkContext the host stopped first has cancelled them itself: nothing is left to do,
        now or later (returns False; True when Spark may still run jobs to cancel).
        """
        try:
            self._sc.cancelJobsWithTag(self.job_group)
        except Exception as exc:
            if not _spark_stopped(exc):
                raise
            log.info("reactive-spark: the SparkContext was stopped first: no Spark job to cancel")
            return False
        return True


#: How a SparkContext stopped in the JVM answers every call (Java's `toString` of the error).
_STOPPED_IN_THE_JVM = (
    "java.lang.IllegalStateException: Cannot call methods on a stopped SparkContext"
)


def _spark_stopped(error: Exception) -> bool:
    """Whether `error`, raised by a `SparkContext` method, says that context was stopped.

    PySpark has no public way to ask. Its `stop()` drops the context's handle on the JVM, so a
    later call fails on that `None` (an `AttributeError` naming the JVM method, on `None`); a
    context stopped in the JVM alone (Spark stops itself after a fatal error) answers with
    Java's `IllegalStateException`. Any other failure is not one of these.

    Examples:
        >>> try:
        ...     None.cancelJobsWithTag("tag")  # what a stopped SparkContext's method runs
        ... except AttributeError as exc:
        ...     _spark_stopped(exc)
        True
        >>> _spark_stopped(AttributeError("'Job' object has no attribute 'cancelJobsWithTag'"))
        False
    """
    if isinstance(error, AttributeError):
        return error.obj is None and error.name == "cancelJobsWithTag"
    java = getattr(error, "java_exception", None)  # a Py4JJavaError
    if java is None:
        return False
    try:
        text = str(java)
    except Exception:  # a Py4J call that fails once the JVM is gone
        return False
    return text.startswith(_STOPPED_IN_THE_JVM)


def _snapshot(info: BatchInfo) -> BatchInfo:
    """A copy of `info` that later changes to the batch do not touch."""
    planned = [copy.copy(job) for job in info.planned]
    return dataclasses.replace(info, jobs=list(info.jobs), planned=planned)


def describe_batch(info: BatchInfo) -> str:
    """One line for the log: source, UTC time, jobs, duration and each output's outcome."""
    event = info.event
    seconds = ((info.completedTime or 0) - (info.startedTime or info.plannedTime)) / 1000
    outcomes = ", ".join(
        f"{job.streamName} {job.status}" if job.status != "succeeded" else job.streamName
        for job in info.jobs
    )
    return (
        f"batch {event.source.name}#{event.index} at {event.time.isoformat()}: "
        f"{len(info.jobs)} job(s) in {seconds:.2f} s: {outcomes}"
    )
