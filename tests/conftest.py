"""One SparkContext (local[2]) for the whole test session."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest
from pyspark import SparkConf, SparkContext


@pytest.fixture(scope="session")
def sc() -> Iterator[SparkContext]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    conf = (
        SparkConf()
        .setMaster("local[2]")
        .setAppName("reactive-spark-tests")
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.sql.shuffle.partitions", "2")
    )
    context = SparkContext(conf=conf)
    context.setLogLevel("ERROR")
    yield context
    context.stop()
