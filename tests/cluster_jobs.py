"""Functions the cluster app's executors run: shipped to them in `deps.zip` (--py-files), and
found nowhere else on their path, as a user's own library would be."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

import reactive_spark


def words(line: str) -> list[str]:
    return line.split()


def page(record: tuple[Any, Any]) -> str:
    """The page of a `(key, {"page": ...})` click record."""
    return str(record[1]["page"])


def where_imported(_: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """Where this executor's Python worker imported this module and reactive_spark from."""
    yield {"pid": os.getpid(), "jobs": __file__, "reactive_spark": reactive_spark.__file__}
