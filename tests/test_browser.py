"""The dashboard in a real headless Chromium (Debian's `chromium`, driven by Playwright's
Python API with `executable_path`; no browser download): a login URL signs it in, a click on a
fire button makes a batch appear live and brings the sources table count while its poll is held,
the lineage SVG has a node per stream, a missed deadline shows among the problems, the browser
reports no error, and a page of another origin cannot fire anything."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from pyspark import SparkContext

from reactive_spark import Days, Seconds, StreamingContext, SystemClock
from reactive_spark.web import Console
from reactive_spark.web.keys import HISTORY_KEY

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKEN = "browser-test-token"

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium: `make test` installs Debian's chromium package when it can (apt-get)",
)


def explode(line: str) -> str:
    raise ValueError(f"cannot parse {line!r}")


async def other_site(console_url: str) -> web.AppRunner:
    """A page on another origin (another port) that tries to fire the console's source."""
    page = """<!doctype html><title>elsewhere</title>
<script src="/attack.js"></script>"""
    script = f"""
const target = "{console_url}api/sources/rerun/fire";
Promise.allSettled([
  fetch(target, {{ method: "POST", mode: "no-cors", body: "null",
                  headers: {{ "Content-Type": "text/plain" }} }}),
  fetch(target, {{ method: "POST", body: "null",
                  headers: {{ "Content-Type": "application/json" }} }}),
]).then(() => {{ document.title = "tried"; }});
"""

    async def index(request: web.Request) -> web.Response:
        return web.Response(text=page, content_type="text/html")

    async def attack(request: web.Request) -> web.Response:
        return web.Response(text=script, content_type="text/javascript")

    app = web.Application()
    app.router.add_get("/", index)
    app.router.add_get("/attack.js", attack)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner


async def test_the_dashboard_signs_in_fires_and_refuses_other_sites(
    sc: SparkContext, tmp_path: Path
) -> None:
    from playwright.async_api import async_playwright

    ssc = StreamingContext(sc, None, clock=SystemClock())
    daily = ssc.timer(ssc.clock.now() + Days(1), None, Days(1), "daily")
    rerun = ssc.manualSource("rerun")
    lines = ssc.queueStream([], default=["ERROR disk full", "INFO ok"])
    errors = lines.filter(lambda line: "ERROR" in line)
    errors.count().foreachRDD(lambda rdd: rdd.collect()).bind(rerun)
    errors.saveAsTextFiles(str(tmp_path / "errors")).bind(daily)
    broken = ssc.manualSource("broken").expect(Seconds(2), within=Seconds(1))
    lines.map(explode).foreachRDD(lambda rdd: rdd.count()).bind(broken)
    console = await Console(ssc, port=0, token=TOKEN).start()
    elsewhere = await other_site(console.url)
    problems: list[str] = []
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = await browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on(
                "console",
                lambda message: problems.append(message.text) if message.type == "error" else None,
            )
            page.on("pageerror", lambda error: problems.append(str(error)))
            page.on("requestfailed", lambda request: problems.append(f"failed: {request.url}"))
            page.on(
                "response",
                lambda response: (
                    problems.append(f"{response.status}: {response.url}")
                    if response.status >= 400
                    else None
                ),
            )
            await page.goto(console.loginUrl)
            await page.wait_for_selector("#connection.online")
            assert "token=" not in page.url  # moved to sessionStorage
            assert await page.evaluate("sessionStorage.getItem('reactive-spark-token')") == TOKEN
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
            missed = page.locator("#problems li", has_text="source broken missed its deadline")
            await missed.first.wait_for(timeout=20_000)  # one comes every two seconds

            count = page.locator('#sources tr[data-source="rerun"] td.events')
            assert await count.inner_text() == "0"

            # the table's 2 s poll is held while the count is awaited: only the live stream
            # can bring it
            held, checked = asyncio.Event(), asyncio.Event()

            async def answer_after_the_check(route: Any) -> None:
                held.set()
                await checked.wait()
                await route.continue_()

            await page.route("**/api/sources", answer_after_the_check)
            try:
                await asyncio.wait_for(held.wait(), 30)  # a poll is pending, and held
                await page.click('button.fire[data-source="rerun"]')
                await page.wait_for_function(
                    """() => document.querySelector('#sources tr[data-source="rerun"] td.events')
                        .textContent === "1" """,
                    timeout=30_000,
                )
            finally:
                checked.set()
                await page.unroute_all(behavior="wait")  # once the held polls are released
            row = page.locator("#batches tbody tr").first
            await row.locator("td.status.succeeded").wait_for(timeout=30_000)
            assert "rerun#0" in await row.inner_text()
            await row.click()
            await page.wait_for_selector("#detail:not([hidden]) #jobs tbody tr")
            assert await page.locator("#lineage g.node.highlight").count() == 1
            await page.screenshot(path=str(tmp_path / "console.png"), full_page=True)
            assert problems == []  # no console error, no failed or refused request

            port = elsewhere.addresses[0][1]
            attacker = await browser.new_page()
            await attacker.goto(f"http://127.0.0.1:{port}/")
            await attacker.wait_for_function("document.title === 'tried'", timeout=10_000)
            await browser.close()
    finally:
        await elsewhere.cleanup()
        await console.stop()
    history = console.app[HISTORY_KEY]  # type: ignore[index]
    fired = [event for event in history.events(100) if event["source"] == "rerun"]
    assert len(fired) == 1  # the other origin's requests fired nothing
    assert (tmp_path / "console.png").stat().st_size > 10_000
    assert ssc.state == "stopped"
