"""A job per file dropped into a folder, and a job per HTTP call.

    python examples/upload_trigger.py [workdir]
    reactive-spark run examples/upload_trigger.py  # workdir: reactive-spark-examples/upload_trigger
    # in another shell:
    cp some.csv <workdir>/incoming/
    curl -X POST http://127.0.0.1:4140/jobs/report

Each dropped file's lines are counted by word and saved under `out/words-<time ms>`; each POST
to /jobs/report prints how many files and lines have been seen so far. Ctrl-C stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from pathlib import Path

from _logs import WORKDIR, local_spark

from reactive_spark import StreamingContext


def build(
    ssc: StreamingContext, workdir: Path = WORKDIR / "upload_trigger", port: int = 4140
) -> dict[str, int]:
    """Bind the two jobs; returns the running totals the report job prints."""
    incoming = workdir / "incoming"
    incoming.mkdir(parents=True, exist_ok=True)
    uploads = ssc.fileWatcher(str(incoming), "uploads")
    rest = ssc.restServer("127.0.0.1", port, "triggers").post("/jobs/report")
    report = rest.filter(lambda event: event.path == "/jobs/report")
    totals = {"files": 0, "lines": 0, "reports": 0}

    def remember(time, rdd, event):  # type: ignore[no-untyped-def]
        totals["files"] += len(event.paths)
        totals["lines"] += rdd.count()

    lines = ssc.textFileStream(str(incoming))
    counted = lines.flatMap(str.split).countByValue()
    counted.saveAsTextFiles(str(workdir / "out" / "words")).bind(uploads)
    lines.foreachRDD(remember).bind(uploads)

    def print_report(rdd):  # type: ignore[no-untyped-def]
        totals["reports"] += 1
        print(f"report: {totals['files']} files, {totals['lines']} lines so far", flush=True)

    ssc.queueStream([], default=[0]).foreachRDD(print_report).bind(report)
    print(f"drop files into {incoming}; POST http://127.0.0.1:{port}/jobs/report", flush=True)
    return totals


async def main(workdir: Path, port: int = 4140) -> None:
    sc = local_spark("upload-trigger")
    async with StreamingContext(sc) as ssc:
        build(ssc, workdir, port)
        await ssc.start()
        await ssc.awaitTermination()


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp("-uploads"))
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(folder))
