"""The dashboard in a real headless Chromium (Debian's `chromium`, driven by Playwright's
Python API with `executable_path`; no browser download): it loads, a click on a fire button
makes a batch appear live, and the lineage SVG has a node per stream."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark import SparkContext

from reactive_spark import Days, StreamingContext, SystemClock
from reactive_spark.web import Console

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium: `make test` installs Debian's chromium package when it can (apt-get)",
)


def explode(line: str) -> str:
    raise ValueError(f"cannot parse {line!r}")


async def test_the_dashboard_shows_a_fired_batch_live(sc: SparkContext, tmp_path: Path) -> None:
    from playwright.async_api import async_playwright

    ssc = StreamingContext(sc, None, clock=SystemClock())
    daily = ssc.timer(ssc.clock.now() + Days(1), None, Days(1), "daily")
    rerun = ssc.manualSource("rerun")
    lines = ssc.queueStream([], default=["ERROR disk full", "INFO ok"])
    errors = lines.filter(lambda line: "ERROR" in line)
    errors.count().foreachRDD(lambda rdd: rdd.collect()).bind(rerun)
    errors.saveAsTextFiles(str(tmp_path / "errors")).bind(daily)
    broken = ssc.manualSource("broken")
    lines.map(explode).foreachRDD(lambda rdd: rdd.count()).bind(broken)
    console = await Console(ssc, port=0).start()
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=CHROMIUM,
                args=[
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--no-first-run",
                ],
            )
            page = await browser.new_page(viewport={"width": 1400, "height": 1000})
            await page.goto(console.url)
            await page.wait_for_selector("#connection.online")
            assert await page.locator("#sources tbody tr").count() == 3
            streams = await page.locator("#lineage g.node.stream").count()
            assert streams == len(ssc.graph.streams) == 7
            assert await page.locator("#lineage g.node.source").count() == 3
            await page.click('button.fire[data-source="broken"]')
            problem = page.locator("#problems li.clickable").first
            await problem.wait_for(timeout=30_000)
            assert "ValueError: cannot parse" in await problem.inner_text()
            assert "raised in explode (test_browser.py:" in await problem.inner_text()
            await page.locator("#batches tbody tr.failed").first.wait_for()
            await page.click('button.fire[data-source="rerun"]')
            row = page.locator("#batches tbody tr").first
            await row.locator("td.status.succeeded").wait_for(timeout=30_000)
            assert "rerun#0" in await row.inner_text()
            await row.click()
            await page.wait_for_selector("#detail:not([hidden]) #jobs tbody tr")
            assert await page.locator("#lineage g.node.highlight").count() == 1
            await page.screenshot(path=str(tmp_path / "console.png"), full_page=True)
            await browser.close()
    finally:
        await console.stop()
    assert (tmp_path / "console.png").stat().st_size > 10_000
    assert ssc.state == "stopped"
