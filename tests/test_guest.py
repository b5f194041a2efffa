"""A context is a guest in its host's process: embedded in an aiohttp service, started and
stopped with it, it leaves no thread, task, signal handler, logging handler or garbage-collector
setting of its own behind, and a freeze the host made meanwhile stays in place. The demo run in
a host changes neither the host's SparkContext nor its environment."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from pyspark import SparkContext

from reactive_spark import Milliseconds, StreamingContext, SystemClock
from reactive_spark.demo import Demo
from reactive_spark.web import setup


def process_state() -> dict[str, Any]:
    """What a library could change in its host's process, as comparable values."""
    handlers = {}
    for number in signal.valid_signals():
        try:
            handlers[number] = signal.getsignal(number)
        except (OSError, ValueError):  # signals Python cannot look at
            continue
    library = logging.getLogger("reactive_spark")
    root = logging.getLogger()
    return {
        "threads": {(thread.ident, thread.name) for thread in threading.enumerate()},
        "tasks": {id(task) for task in asyncio.all_tasks()},
        "signals": handlers,
        "root logger": (list(root.handlers), root.level),
        "library logger": (list(library.handlers), library.level, library.propagate),
        "gc": (gc.isenabled(), gc.get_threshold()),
        "interpreter": (sys.getswitchinterval(), sys.getrecursionlimit()),
    }


async def test_a_context_in_a_service_leaves_the_process_as_it_found_it(
    sc: SparkContext, tmp_path: Path
) -> None:
    before = process_state()
    frozen_before = gc.get_freeze_count()
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    ran: list[str] = []

    ssc = StreamingContext(sc, None, clock=SystemClock())  # the defaults a service gets
    tick = ssc.timer(ssc.clock.now(), None, Milliseconds(200), "tick")
    uploads = ssc.fileWatcher(str(incoming), "uploads")
    triggers = ssc.restServer(None, name="triggers").post("/run")
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: ran.append("tick")).bind(tick)
    ssc.textFileStream(str(incoming)).foreachRDD(lambda rdd: ran.extend(rdd.collect())).bind(
        uploads
    )
    ssc.queueStream([], default=[1]).foreachRDD(lambda rdd: ran.append("rest")).bind(triggers)

    service = web.Application()
    setup(service, ssc, prefix="/reactive")  # starts and stops ssc with the service
    service.add_subapp("/triggers", triggers.app)
    runner = web.AppRunner(service)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        assert ssc.state == "active"
        await uploads.ready()  # type: ignore[attr-defined]
        (incoming / "a.txt").write_text("uploaded\n")
        async with (
            aiohttp.ClientSession() as client,
            client.post(f"http://127.0.0.1:{port}/triggers/run") as answer,
        ):
            assert answer.status == 202
        deadline = time.monotonic() + 30
        while not {"tick", "rest", "uploaded"} <= set(ran) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert {"tick", "rest", "uploaded"} <= set(ran)
        made_by_the_host = [object() for _ in range(10_000)]
        gc.freeze()  # the service freezes what it built, as before forking workers
        frozen_by_the_host = gc.get_freeze_count()
        assert frozen_by_the_host > frozen_before
    finally:
        await runner.cleanup()
    assert ssc.state == "stopped"

    after = process_state()
    assert after["threads"] - before["threads"] == set()
    assert after["tasks"] - before["tasks"] == set()
    for setting in ("signals", "root logger", "library logger", "gc", "interpreter"):
        assert after[setting] == before[setting], setting
    assert gc.get_freeze_count() > frozen_by_the_host * 0.9  # the host's freeze is in place
    assert made_by_the_host
    gc.unfreeze()


def test_the_demo_in_a_host_leaves_its_spark_context_and_environment_alone(
    sc: SparkContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo run inside a host uses the host's SparkContext as it is: it sets no log level
    on it, and no variable of the host's environment."""
    levels: list[str] = []
    monkeypatch.setattr(sc, "setLogLevel", levels.append)
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)  # a host that did not set it
    environment = dict(os.environ)
    assert Demo().spark() is sc
    assert levels == []
    assert dict(os.environ) == environment


def test_importing_the_package_starts_no_process() -> None:
    """A host's `import reactive_spark` runs no `ldconfig`, compiler or other program."""
    code = (
        "import sys\n"
        "started = []\n"
        "spawning = {'subprocess.Popen', 'os.posix_spawn', 'os.fork', 'os.forkpty', 'os.exec',"
        " 'os.spawn', 'os.system'}\n"
        "sys.addaudithook(lambda event, args: event in spawning and started.append(event))\n"
        "import reactive_spark\n"
        "print(started)"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert shown.strip() == "[]"
