"""The log backends every direct-stream test runs on: the file log, Redis and Kafka (a real
broker: the session's Tansu, or `REACTIVE_SPARK_KAFKA_BOOTSTRAP`). A pytest plugin of the root
conftest, so the `log` fixture is everyone's."""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reactive_spark.log import FileLog, LogBackend

REDIS_URL = "redis://127.0.0.1:6379/0"
KAFKA_TURN_SECONDS = 600  # the longest a test waits for its turn on a shared broker


def redis_log_or_skip() -> Any:
    redis = pytest.importorskip("redis")
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis is not reachable at {REDIS_URL} ({exc})")
    from reactive_spark.log.redis import RedisLog

    return RedisLog(REDIS_URL, prefix=f"test-{uuid.uuid4().hex[:10]}")


def kafka_log(bootstrap: str) -> Any:
    """A KafkaLog on the session's broker, without a `clicks` topic left from an earlier test."""
    from reactive_spark.log.kafka import KafkaLog

    log = KafkaLog(bootstrap)
    if log.partitions("clicks"):
        log.delete_topic("clicks")
        deadline = time.monotonic() + 30
        while log.partitions("clicks") and time.monotonic() < deadline:
            time.sleep(0.5)
    return log


@pytest.fixture
def kafka_broker(kafka_bootstrap: str) -> Iterator[str]:
    """The session's Kafka broker, for one test that names its topics (`clicks`, ...).

    Each pytest worker starts its own Tansu, but a broker named by
    `REACTIVE_SPARK_KAFKA_BOOTSTRAP` is shared: the runs sharing this temp directory (the
    workers of one run, and other runs of the same user on this machine) take turns on it, one
    test at a time, through a lock file there; runs elsewhere sharing the broker are not kept
    apart.
    """
    if not os.environ.get("REACTIVE_SPARK_KAFKA_BOOTSTRAP"):
        yield kafka_bootstrap
        return
    name = "".join(c if c.isalnum() else "-" for c in kafka_bootstrap)
    lock = Path(tempfile.gettempdir()) / f"reactive-spark-tests-kafka-{name}.lock"
    with lock.open("a") as held:
        deadline = time.monotonic() + KAFKA_TURN_SECONDS
        while True:
            try:
                fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released as the file closes
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    pytest.fail(
                        f"waited {KAFKA_TURN_SECONDS} s for a turn on the shared Kafka broker "
                        f"{kafka_bootstrap} (lock file {lock})"
                    )
                time.sleep(0.1)
        yield kafka_bootstrap


@pytest.fixture(params=["file", "redis", "kafka"])
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LogBackend]:
    """Every backend holds to the same contract; the file log in segments of 4 records."""
    if request.param == "file":
        made: Any = FileLog(str(tmp_path / "log"), segmentRecords=4)
    elif request.param == "redis":
        made = redis_log_or_skip()
    else:
        made = kafka_log(request.getfixturevalue("kafka_broker"))
    made.create_topic("clicks", partitions=2)
    yield made
    if request.param != "file":
        made.delete_topic("clicks")
