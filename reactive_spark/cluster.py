"""A Spark standalone cluster on this machine: one master and one worker bound to 127.0.0.1.

Started from the installed pyspark (its `bin/spark-class`), with executors in JVMs and Python
workers of their own: what tests, benchmarks and a first try of `--master spark://...` need
before a real cluster. Also `reactive-spark cluster` on the command line.

Examples:
    >>> from reactive_spark.cluster import StandaloneCluster
    >>> cluster = StandaloneCluster("/tmp/spark-cluster", cores=2, memory="1g")
    >>> # with cluster:  # starts both, waits until the worker registered; stops both after
    >>> #     run("app.py", master=cluster.masterUrl)
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import pyspark
from pyspark import SparkConf

from reactive_spark.errors import ContextStateError, InvalidArgumentError, ReactiveSparkError

__all__ = ["ClusterStartError", "StandaloneCluster"]

HOST = "127.0.0.1"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


class ClusterStartError(ReactiveSparkError):
    """The master or the worker did not come up; the message ends with the tail of its log."""


def spark_home() -> Path:
    """The installed pyspark's directory: the wheel is a Spark home (`bin/`, `jars/`, `sbin/`).

    Examples:
        >>> (spark_home() / "bin" / "spark-class").is_file()
        True
    """
    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now.

    Examples:
        >>> 0 < free_port() < 65536
        True
    """
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


class StandaloneCluster:
    """A standalone master and one worker (`cores`, `memory`) on 127.0.0.1, stopped by PID.

    Everything they write (logs, the worker's directory with each executor's stdout and
    stderr) goes under `workdir`; executors run Python with `python` (default: this
    interpreter). Use it as a context manager, or call `start()` and `stop()`.

    Examples:
        >>> cluster = StandaloneCluster("/tmp/spark-cluster")
        >>> cluster.masterUrl.startswith("spark://127.0.0.1:")
        True
    """

    def __init__(
        self,
        workdir: str | os.PathLike[str],
        *,
        cores: int = 2,
        memory: str = "1g",
        python: str = sys.executable,
        startTimeout: float = 120.0,
    ) -> None:
        if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
            raise InvalidArgumentError(f"cores must be a positive int, got {cores!r}")
        if not isinstance(memory, str) or not memory[:-1].isdigit() or memory[-1] not in "mg":
            raise InvalidArgumentError(f"memory must look like '512m' or '1g', got {memory!r}")
        if not isinstance(startTimeout, int | float) or not startTimeout > 0:
            raise InvalidArgumentError(f"startTimeout must be positive, got {startTimeout!r}")
        self.workdir = Path(workdir)
        self.cores = cores
        self.memory = memory
        self.python = python
        self.startTimeout = float(startTimeout)
        self.masterPort, self.masterUiPort = free_port(), free_port()
        self.masterUrl = f"spark://{HOST}:{self.masterPort}"
        self.masterUiUrl = f"http://{HOST}:{self.masterUiPort}"
        self._processes: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def environment(self) -> dict[str, str]:
        """The variables the master, the worker and a driver of this cluster run with."""
        return {
            **os.environ,
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": HOST,
            "PYSPARK_PYTHON": self.python,
            "SPARK_LOG_DIR": str(self.workdir / "logs"),
            "SPARK_PID_DIR": str(self.workdir / "pids"),
            "SPARK_WORKER_DIR": str(self.workdir / "work"),
        }

    def conf(self, appName: str = "reactive-spark") -> SparkConf:
        """A SparkConf for a driver on this cluster.

        One executor gets all the worker's cores and memory; its Python workers run `python`;
        the driver listens on 127.0.0.1.

        Examples:
            >>> StandaloneCluster("/tmp/c", cores=2).conf("reports").get("spark.cores.max")
            '2'
        """
        return (
            SparkConf()
            .setMaster(self.masterUrl)
            .setAppName(appName)
            .set("spark.cores.max", str(self.cores))
            .set("spark.executor.memory", self.memory)
            .set("spark.driver.host", HOST)
            .set("spark.pyspark.python", self.python)
        )

    def start(self) -> StandaloneCluster:
        """Start the master, then the worker; return once the worker registered.

        Raises `ClusterStartError` (with the log's tail) if either exits or the worker has not
        registered within `startTimeout` seconds; whatever started is stopped again.
        """
        if self._processes:
            raise ContextStateError(f"the cluster at {self.masterUrl} is started already")
        for directory in ("logs", "pids", "work"):
            (self.workdir / directory).mkdir(parents=True, exist_ok=True)
        try:
            self._launch(
                "master",
                MASTER_CLASS,
                ["--host", HOST, "--port", str(self.masterPort)],
                ["--webui-port", str(self.masterUiPort)],
            )
            self._launch(
                "worker",
                WORKER_CLASS,
                [self.masterUrl, "--host", HOST, "--port", str(free_port())],
                [
                    "--webui-port",
                    str(free_port()),
                    "--cores",
                    str(self.cores),
                    "--memory",
                    self.memory,
                    "--work-dir",
                    str(self.workdir / "work"),
                ],
            )
            self._await_worker()
        except BaseException:
            self.stop()
            raise
        return self

    def _launch(self, role: str, main_class: str, address: list[str], options: list[str]) -> None:
        spark_class = spark_home() / "bin" / "spark-class"
        log: IO[bytes] = (self.workdir / "logs" / f"{role}.log").open("wb")
        with log:
            process = subprocess.Popen(
                [str(spark_class), main_class, *address, *options],
                env=self.environment,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its executors share its group: stopped together
            )
        self._processes[role] = process
        (self.workdir / "pids" / f"{role}.pid").write_text(f"{process.pid}\n")

    def _await_worker(self) -> None:
        deadline = time.monotonic() + self.startTimeout
        while time.monotonic() < deadline:
            for role, process in self._processes.items():
                if process.poll() is not None:
                    raise ClusterStartError(
                        f"the {role} exited with status {process.returncode}:\n{self.logTail(role)}"
                    )
            if self.status().get("aliveworkers", 0) >= 1:
                return
            time.sleep(0.25)
        raise ClusterStartError(
            f"no worker registered with {self.masterUrl} within {self.startTimeout:g} s:\n"
            f"{self.logTail('worker')}"
        )

    def status(self) -> dict[str, Any]:
        """The master's status (`/json/`: workers, cores, applications); {} if it is not up."""
        try:
            with urllib.request.urlopen(f"{self.masterUiUrl}/json/", timeout=2) as answer:
                status: dict[str, Any] = json.load(answer)
                return status
        except (OSError, urllib.error.URLError, ValueError):
            return {}

    def logTail(self, role: str, lines: int = 20) -> str:
        """The last `lines` lines of the master's or the worker's log."""
        path = self.workdir / "logs" / f"{role}.log"
        if not path.exists():
            return "(no log)"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    @property
    def pids(self) -> dict[str, int]:
        """The master's and the worker's process ids, while they run."""
        return {role: p.pid for role, p in self._processes.items() if p.poll() is None}

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the worker (and its executors), then the master: SIGTERM, SIGKILL if need be.

        An interrupt (a second Ctrl-C) while waiting kills them at once instead.
        """
        try:
            self._stop("worker", timeout)
        finally:
            self._stop("master", timeout)

    def _stop(self, role: str, timeout: float) -> None:
        process = self._processes.pop(role, None)
        if process is None:
            return
        try:
            _signal_group(process, signal.SIGTERM)
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        finally:
            _signal_group(process, signal.SIGKILL)  # still running, or executors left behind
            process.wait()
            (self.workdir / "pids" / f"{role}.pid").unlink(missing_ok=True)

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.pids else "stopped"
        return f"StandaloneCluster({self.masterUrl}, cores={self.cores}, {state})"


def _signal_group(process: subprocess.Popen[bytes], number: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, number)
