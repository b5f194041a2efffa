"""`reactive_spark.testing` as a user's tests call it."""

from __future__ import annotations

from pyspark import SparkContext

from reactive_spark.testing import run_batches


async def test_sort_orders_items_that_do_not_compare_by_their_repr(sc: SparkContext) -> None:
    out = await run_batches(
        sc,
        lambda s: s.map(lambda x: {"v": x} if x % 2 else x),
        [[3, 2, 1], [5, 1]],
        sort=True,
    )
    assert out == [[2, {"v": 1}, {"v": 3}], [{"v": 1}, {"v": 5}]]


async def test_sort_keeps_the_natural_order_of_items_that_compare(sc: SparkContext) -> None:
    out = await run_batches(sc, lambda s: s.map(lambda x: x * 10), [[3, 20, 1]], sort=True)
    assert out == [[10, 30, 200]]  # not by repr, which puts "200" before "30"
