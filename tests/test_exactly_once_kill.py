"""Exactly-once merging and state under real crashes: three topics with several partitions on
the file log, Redis and Kafka, merged into an order-sensitive fold and a keyed count committed
to SQLite and to PostgreSQL, in a child process killed with SIGKILL at seeded random points
(five per backend) and restarted after some downtime until the logs are drained. The four
stores end exactly as an uninterrupted run's: no record lost, counted twice or reordered."""

from __future__ import annotations

import json
import random
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark import SparkContext

from reactive_spark import Minutes, StreamingContext, VirtualClock

from .exactly_once_app import MINUTES, T0, build, stores, write_records
from .helpers import ChildProcess
from .log_backends import REDIS_URL, redis_log_or_skip
from .test_sinks import POSTGRES_DSN, postgres_or_skip

# each kill starts a driver JVM; the file log, whose commit protocol is ours end to end, takes
# the most (kills between and inside its commits); the brokers' backends one kill and recovery
KILLS = {"file": 3, "redis": 1, "kafka": 1}
SEEDS = {"file": 41, "redis": 42, "kafka": 43}


def configuration(backend: str, workdir: Path, request: pytest.FixtureRequest) -> dict[str, Any]:
    """Where one run's log, stores and checkpoint are (names unique to the run)."""
    workdir.mkdir(parents=True)
    prefix = f"eo-{uuid.uuid4().hex[:8]}"
    if backend == "file":
        log = str(workdir / "log")
    elif backend == "redis":
        redis_log_or_skip()
        log = REDIS_URL
    else:
        log = request.getfixturevalue("kafka_bootstrap")
    return {
        "backend": backend,
        "log": log,
        "prefix": prefix,
        "workdir": str(workdir),
        "sqlite": str(workdir / "state.db"),
        "postgres": POSTGRES_DSN,
    }


def snapshot(config: dict[str, Any]) -> dict[str, Any]:
    """Every store's values, offsets and position, by store kind (not by its unique name)."""
    return {
        kind: (store.items(), store.committedOffsets(), store.position())
        for kind, store in stores(config).items()
    }


async def uninterrupted(sc: SparkContext, config: dict[str, Any]) -> dict[str, Any]:
    ssc = StreamingContext(sc, None, clock=VirtualClock(T0))
    build(ssc, config)
    await ssc.start()
    await ssc.runUntil(T0 + Minutes(MINUTES))
    await ssc.stop(stopSparkContext=False)
    return snapshot(config)


def run_until_killed(child: ChildProcess, rng: random.Random, seen: list[str]) -> bool:
    """Kill the child a random moment after it started and ran 0-2 batches; False if it
    finished first."""
    target, started, done = rng.randint(0, 2), False, 0
    while not (started and done >= target):
        line = child.next_line()
        seen.append(line)
        if line in ("finished", "exited"):
            return False
        started = started or line == "started"
        done += started and line.startswith("done ")
    time.sleep(rng.uniform(0, 0.4))  # inside the next batch (between commits), or between
    child.kill()
    return True


@pytest.mark.parametrize("backend", ["file", "redis", "kafka"])
async def test_random_sigkills_neither_lose_nor_repeat_nor_reorder_records(
    sc: SparkContext, tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    postgres_or_skip()
    reference = configuration(backend, tmp_path / "reference", request)
    written = write_records(reference)
    expected = await uninterrupted(sc, reference)
    for database in ("sqlite", "postgres"):
        counts, _, position = expected[f"{database}_count"]
        assert sum(counts.values()) == written  # every record counted once
        assert position is not None and position[1] == MINUTES

    crashed = configuration(backend, tmp_path / "crashed", request)
    assert write_records(crashed) == written
    path = tmp_path / "crashed.json"
    path.write_text(json.dumps(crashed))
    rng = random.Random(SEEDS[backend])
    restart_at, minute, kills = T0, 0, 0
    while kills < KILLS[backend]:
        child = ChildProcess("tests.exactly_once_app", str(path), str(restart_at.milliseconds))
        seen: list[str] = []
        assert run_until_killed(child, rng, seen), f"finished before kill {kills + 1}: {seen}"
        kills += 1
        minute = max([minute, *(int(line.split()[1]) for line in seen if line[:5] == "done ")])
        downtime = rng.choice([0, 1, 2])  # minutes missed, caught up after the restart
        restart_at = min(T0 + Minutes(minute + downtime) + Minutes(0.5), T0 + Minutes(MINUTES))
    child = ChildProcess("tests.exactly_once_app", str(path), str(restart_at.milliseconds))
    seen = [child.next_line()]
    while seen[-1] not in ("finished", "exited"):
        seen.append(child.next_line())
    child.process.wait(timeout=60)
    assert seen[-1] == "finished", seen

    actual = snapshot(crashed)
    for kind in expected:
        values, offsets, position = actual[kind]
        assert values == expected[kind][0], kind
        assert sorted(offsets.values()) == sorted(expected[kind][1].values()), kind
        assert position == expected[kind][2], kind
