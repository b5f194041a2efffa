"""The examples, run end to end: upload triggers, and the clickstream with a restart."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import aiohttp
from pyspark import SparkContext

from reactive_spark import StreamingContext

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


async def until(condition, timeout: float = 20) -> None:  # type: ignore[no-untyped-def]
    async def wait() -> None:
        while not condition():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(wait(), timeout)


async def test_upload_trigger(sc: SparkContext, tmp_path: Path) -> None:
    sys.path.insert(0, str(EXAMPLES))
    try:
        import upload_trigger
    finally:
        sys.path.remove(str(EXAMPLES))
    ssc = StreamingContext(sc)
    totals = upload_trigger.build(ssc, tmp_path, 0)
    await ssc.start()
    watcher = next(s for s in ssc.sources if s.name == "uploads")
    rest = next(s for s in ssc.sources if s.name == "triggers")
    await watcher.ready()  # type: ignore[attr-defined]
    (tmp_path / "incoming" / "a.txt").write_text("x y x\nz\n")
    await until(lambda: totals["files"] == 1)
    async with aiohttp.ClientSession() as http:
        url = f"http://127.0.0.1:{rest.port}/jobs/report"  # type: ignore[attr-defined]
        async with http.post(url) as response:
            assert response.status == 202
    await until(lambda: totals["reports"] == 1)
    await ssc.stop(stopSparkContext=False, stopGracefully=True)
    assert totals == {"files": 1, "lines": 2, "reports": 1}
    saved = list((tmp_path / "out").glob("words-*"))
    assert len(saved) == 1
    words = sorted(
        line for part in saved[0].glob("part-*") for line in part.read_text().splitlines()
    )
    assert words == ["('x', 2)", "('y', 1)", "('z', 1)"]


async def test_clickstream_counts_every_click_once_across_a_restart(
    sc: SparkContext, tmp_path: Path
) -> None:
    from reactive_spark.log import FileLog

    sys.path.insert(0, str(EXAMPLES))
    try:
        import clickstream
    finally:
        sys.path.remove(str(EXAMPLES))
    pages = await clickstream.main(sc, tmp_path)
    log = FileLog(str(tmp_path / "log"))
    appended = sum(log.latest_offset("clicks", p) for p in log.partitions("clicks"))
    assert appended > 1000
    assert sum(pages.values()) == appended
    assert set(pages) == set(clickstream.PAGES)
