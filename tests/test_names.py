"""Streams are named as the user wrote them: `countByValue[2]`, never an internal lambda.

An operation built from others names its stream after the user's call; the stream it reads
that reduces each batch once (the window family's) is named after what it does. A user's
function still shows (`map[1](parse)`). The graph, the console, logs and errors all show these
names.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import pytest
from pyspark import SparkContext

from reactive_spark import DStream, Seconds
from reactive_spark.lineage import render
from tests.helpers import virtual


def parse(line: str) -> tuple[str, int]:
    word, _, count = line.partition(" ")
    return word, int(count or 1)


def words(line: str) -> list[str]:
    return line.split()


#: A call on a stream of `(word, n)` pairs, and the names of the streams it adds, in order.
CALLS: dict[str, tuple[Callable[[DStream[Any]], DStream[Any]], list[str]]] = {
    "map": (lambda pairs: pairs.map(str), ["map[2](str)"]),
    "reduceByKey": (lambda pairs: pairs.reduceByKey(operator.add), ["reduceByKey[2](add)"]),
    "countByValue": (lambda pairs: pairs.countByValue(), ["countByValue[2]"]),
    "mapValues": (lambda pairs: pairs.mapValues(str), ["mapValues[2](str)"]),
    "flatMapValues": (lambda pairs: pairs.flatMapValues(range), ["flatMapValues[2](range)"]),
    "groupByKeyAndWindow": (
        lambda pairs: pairs.groupByKeyAndWindow(2, 1),
        ["groupByKeyAndWindow[2]"],
    ),
    "reduceByKeyAndWindow": (
        lambda pairs: pairs.reduceByKeyAndWindow(operator.add, operator.sub, 2, 1),
        ["reduceByKey[2](add)", "reduceByKeyAndWindow[3](add)"],
    ),
    "reduceByWindow": (
        lambda pairs: pairs.reduceByWindow(max, None, 2, 1),
        ["reduce[2](max)", "reduceByWindow[3](max)"],
    ),
    "countByWindow": (lambda pairs: pairs.countByWindow(2, 1), ["count[2]", "countByWindow[3]"]),
    "countByValueAndWindow": (
        lambda pairs: pairs.countByValueAndWindow(2, 1),
        ["countByValue[2]", "countByValueAndWindow[3]"],
    ),
    "pprint": (lambda pairs: pairs.pprint(), ["pprint[2]"]),
    "print": (lambda pairs: pairs.print(3), ["print[2]"]),
    "saveAsTextFiles": (
        lambda pairs: pairs.saveAsTextFiles("out/pairs"),
        ["saveAsTextFiles(out/pairs)[2]"],
    ),
    "saveAsObjectFiles": (
        lambda pairs: pairs.saveAsObjectFiles("out/pairs"),
        ["saveAsObjectFiles(out/pairs)[2]"],
    ),
}


@pytest.mark.parametrize("call", CALLS)
def test_a_stream_is_named_after_the_users_call(sc: SparkContext, call: str) -> None:
    ssc = virtual(sc, Seconds(1))
    pairs = ssc.queueStream([["a 1", "b 2"]]).map(parse)
    make, names = CALLS[call]
    made = make(pairs)
    streams = ssc.graph.describe(ssc.sources)["streams"]
    assert [stream["name"] for stream in streams] == ["queueStream[0]", "map[1](parse)", *names]
    assert made.name == names[-1]
    functions = [stream["function"] for stream in streams]
    assert not any("<lambda>" in f or "<locals>" in f for f in functions if f is not None)


def test_the_graph_shows_the_users_calls(sc: SparkContext) -> None:
    ssc = virtual(sc, Seconds(1))
    tick = ssc.timer(ssc.clock.now(), None, Seconds(1), "tick")
    counts = ssc.queueStream([["a b", "a"]]).flatMap(words).countByValue()
    counts.countByValueAndWindow(3, 1).pprint().bind(tick)
    assert render(ssc.graph.describe(ssc.sources), "text").splitlines()[3:] == [
        "  [0] queueStream[0]  (input)",
        "  [1] flatMap[1](words)  <- [0]",
        "  [2] countByValue[2]  <- [1]",
        "  [3] countByValue[3]  <- [2]",
        "  [4] countByValueAndWindow[4]  <- [3] LegacyWindowDependency(3000 ms, 1000 ms)",
        "  [5] pprint[5]  <- [4]  bound to tick  (output)",
    ]
