"""Every `pyspark.streaming` method reactive-spark shares takes PySpark's parameters: the same
names, in the same order, of the same kind and with the same defaults, so a ported program's
keywords (`window(30, slideDuration=10)`) keep working. Ours may add parameters after them."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from pyspark import streaming

import reactive_spark

#: PySpark's own, which ours do not take: Py4J handles of the JVM objects.
JVM_HANDLES = {("StreamingContext", "__init__"): {"jssc"}}
#: Constructors users call (a DStream is made by operations, a listener takes no arguments).
CONSTRUCTED = {"StreamingContext"}

PAIRS = [
    (streaming.DStream, reactive_spark.DStream),
    (streaming.StreamingContext, reactive_spark.StreamingContext),
    (streaming.StreamingListener, reactive_spark.StreamingListener),
]


def shared_methods() -> list[tuple[str, str, Any, Any]]:
    found = []
    for theirs, ours in PAIRS:
        for name, member in vars(theirs).items():
            if name.startswith("_") and (name != "__init__" or theirs.__name__ not in CONSTRUCTED):
                continue
            if isinstance(member, property) or not hasattr(ours, name):
                continue
            found.append((theirs.__name__, name, getattr(theirs, name), getattr(ours, name)))
    return found


def parameters(function: Any) -> list[inspect.Parameter]:
    return [p for p in inspect.signature(function).parameters.values() if p.name != "self"]


def test_the_comparison_covers_the_api() -> None:
    names = {(owner, name) for owner, name, _, _ in shared_methods()}
    assert len(names) > 60  # DStream's operations, the context's, the listener's callbacks
    for expected in [("DStream", "window"), ("StreamingContext", "stop"), ("DStream", "map")]:
        assert expected in names


@pytest.mark.parametrize(
    ("owner", "name", "theirs", "ours"),
    shared_methods(),
    ids=[f"{owner}.{name}" for owner, name, _, _ in shared_methods()],
)
def test_pyspark_parameters_come_first_unchanged(
    owner: str, name: str, theirs: Any, ours: Any
) -> None:
    skipped = JVM_HANDLES.get((owner, name), set())
    expected = [p for p in parameters(theirs) if p.name not in skipped]
    actual = parameters(ours)
    assert [p.name for p in actual[: len(expected)]] == [p.name for p in expected]
    for their, our in zip(expected, actual, strict=False):
        assert our.kind == their.kind or (
            their.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
            and our.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        ), f"{their.name}: {their.kind} in PySpark, {our.kind} here"
        if their.default is not inspect.Parameter.empty:
            assert our.default == their.default, f"{their.name} defaults to {their.default!r}"
    for extra in actual[len(expected) :]:
        assert (
            extra.default is not inspect.Parameter.empty
            or extra.kind is inspect.Parameter.VAR_POSITIONAL
        ), f"our extra parameter {extra.name} must be optional"


async def test_ported_keywords_work(sc: Any) -> None:
    ssc = reactive_spark.StreamingContext(
        sc, 1, clock=reactive_spark.VirtualClock(reactive_spark.Time(0))
    )
    pairs = ssc.queueStream([[("a", 1)]])
    pairs.window(2, slideDuration=1).pprint()
    pairs.reduceByKeyAndWindow(max, None, 2, slideDuration=1).pprint()
    pairs.countByWindow(2, slideDuration=1).pprint()
    ssc.addStreamingListener(streamingListener=reactive_spark.StreamingListener())
    await ssc.start()
    with pytest.raises(reactive_spark.InvalidArgumentError, match="disagree"):
        await ssc.stop(False, True, stopGracefully=False)
    await ssc.stop(False, stopGraceFully=True)
    assert ssc.state == "stopped"
