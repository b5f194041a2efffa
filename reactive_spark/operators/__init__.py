"""Operators on event sources, RxPY style: each returns a function from source to source.

Examples:
    >>> from reactive_spark import operators as eops
    >>> rest = ssc.restServer(None, name="triggers").post("/job1").post("/job2")
    >>> job1 = eops.filter(lambda e: e.path == "/job1", name="job1")(rest)
    >>> job2 = rest.filter(lambda e: e.path == "/job2", name="job2")  # the same, as a method
"""

from reactive_spark.operators._delay import DelayedEventSource, delay
from reactive_spark.operators._filter import FilteredEventSource, filter
from reactive_spark.operators._join import JoinedEventSource, join
from reactive_spark.operators._map import MappedEventSource, map
from reactive_spark.operators._merge import MergedEventSource, merge
from reactive_spark.operators._pipe import PipedEventSource, pipe

__all__ = [
    "DelayedEventSource",
    "FilteredEventSource",
    "JoinedEventSource",
    "MappedEventSource",
    "MergedEventSource",
    "PipedEventSource",
    "delay",
    "filter",
    "join",
    "map",
    "merge",
    "pipe",
]
