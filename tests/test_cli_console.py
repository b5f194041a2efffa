"""`reactive-spark run --ui`: a console behind a fresh token, its login URL printed (never
logged), and a non-loopback host refused without one."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "tests" / "cli_app.py")


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "reactive_spark", "-v", "run", f"{APP}:build", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        start_new_session=True,
    )


async def test_run_ui_prints_a_login_url_and_never_logs_the_token() -> None:
    child = start("--master", "local[1]", "--ui", "--port", "0", "--until", "60s")
    assert child.stdout is not None
    seen: list[str] = []
    try:
        for line in child.stdout:
            seen.append(line)
            if "console: http" in line:
                break
        login = re.search(r"(http://127\.0\.0\.1:\d+/)\?token=([\w-]+)", "".join(seen))
        assert login is not None, "".join(seen)
        url, token = login.groups()
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{url}api/sources") as refused:
                assert refused.status == 401
            headers = {"Authorization": f"Bearer {token}"}
            async with http.get(f"{url}api/sources", headers=headers) as allowed:
                assert allowed.status == 200
                assert "rerun" in {source["name"] for source in await allowed.json()}
    finally:
        os.killpg(child.pid, signal.SIGINT)
        rest, _ = child.communicate(timeout=60)
    output = "".join(seen) + rest
    assert output.count(token) == 1  # in the login URL, nowhere else


def test_a_console_on_a_public_address_needs_a_token_or_insecure() -> None:
    options = ["--ui", "--host", "0.0.0.0", "--port", "0", "--until", "1s", "--master", "local[1]"]
    program = [sys.executable, "-m", "reactive_spark", "run", f"{APP}:build", *options]
    env = {**os.environ, "COLUMNS": "300"}
    done = subprocess.run(
        [*program, "--insecure"], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "has no authentication (insecure=True)" in done.stderr
    assert "?token=" not in done.stderr
