"""The program tests/test_cluster.py runs on the loopback standalone cluster, launched by
`reactive-spark run cluster_app.py --master spark://... --py-files deps.zip` or by
`spark-submit --master spark://... --py-files deps.zip cluster_app.py` (its `__main__` block).

Everything lives under `$CLUSTER_APP_DIR`: a file watcher on `incoming/` triggers a word count
saved by the executors under `out/words`, and a direct stream over the file log `log/` (topic
`clicks`) counts clicks per page into `totals.db` with a transactional sink, on a backlog
source. `master` holds the master the driver runs on, `started` is written once the context
runs (with the driver's pid), and `executors.json` says where executors imported
`cluster_jobs` and reactive_spark from.
"""

from __future__ import annotations

import json
import os
import sys
from operator import add
from pathlib import Path
from typing import Any

import cluster_jobs  # from deps.zip, on the driver too

from reactive_spark import Seconds, StreamingContext, StreamingListener
from reactive_spark.listener import StreamingStarted
from reactive_spark.log import Database, FileLog, TransactionalSink

WORKDIR = Path(os.environ["CLUSTER_APP_DIR"])


class Started(StreamingListener):
    def onStreamingStarted(self, started: StreamingStarted) -> None:
        (WORKDIR / "started").write_text(str(os.getpid()))


def build(ssc: StreamingContext) -> None:
    (WORKDIR / "master").write_text(ssc.sparkContext.master)  # the one it was launched with
    uploads = ssc.fileWatcher(str(WORKDIR / "incoming"), "uploads")
    (
        ssc.textFileStream(str(WORKDIR / "incoming"))
        .flatMap(cluster_jobs.words)
        .map(lambda word: (word, 1))
        .reduceByKey(add)
        .saveAsTextFiles(str(WORKDIR / "out" / "words"))
        .bind(uploads)
    )

    database = Database.sqlite(str(WORKDIR / "totals.db"))
    with database.transaction() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS pages (page TEXT PRIMARY KEY, n INTEGER)")
    sink = TransactionalSink(database)
    log = FileLog(str(WORKDIR / "log"))
    clicks = ssc.directStream(
        log, ["clicks"], fromOffsets=sink.committedOffsets(), startingOffsets="earliest"
    )

    def store(rdd: Any) -> None:
        counts = rdd.map(cluster_jobs.page).countByValue()  # read from the log by executors
        places = rdd.mapPartitions(cluster_jobs.where_imported).collect()
        (WORKDIR / "executors.json").write_text(json.dumps(places))

        def write(cursor: Any) -> None:
            cursor.executemany(
                "INSERT INTO pages VALUES (?, ?) "
                "ON CONFLICT (page) DO UPDATE SET n = n + excluded.n",
                sorted(counts.items()),
            )

        sink.commit(rdd.offsetRanges(), write)

    clicks.foreachRDD(store).bind(
        ssc.backlogSource(clicks, 1, "clicks-backlog", interval=Seconds(0.2))
    )
    ssc.addStreamingListener(Started())


if __name__ == "__main__":  # spark-submit cluster_app.py [reactive-spark run options]
    from reactive_spark.cli import main

    raise SystemExit(main(["run", "__main__:build", *sys.argv[1:]]))
