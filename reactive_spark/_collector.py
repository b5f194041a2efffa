"""Keeping CPython's cyclic garbage collector off the heap that exists when contexts start.

A full collection walks every tracked object of the process: Spark's and py4j's, every imported
module's, the application's. With PySpark loaded that is some 60,000 objects and over ten
milliseconds in which no event moves, and a burst of events that keeps objects alive brings
one about every 85,000 of them. So while contexts run, the heap they started with is frozen
(`gc.freeze`): collections walk only what was made since. It is unfrozen when the last of them
stops; garbage cycles among those objects are collected from then on. An application that
froze objects itself (`gc.freeze` before forking workers, say) is left alone.

Examples:
    >>> import gc
    >>> holder = object()
    >>> hold_heap(holder)
    >>> gc.get_freeze_count() > 0
    True
    >>> release_heap(holder)
    >>> gc.get_freeze_count()
    0
"""

from __future__ import annotations

import gc
import threading

__all__ = ["hold_heap", "release_heap"]

_lock = threading.Lock()
_holders: set[object] = set()  # what keeps the heap frozen: running contexts


def hold_heap(holder: object) -> None:
    """Keep the heap as it is now frozen while `holder` runs (see the module docs)."""
    with _lock:
        if not _holders:
            if gc.get_freeze_count():  # frozen by the application: its business
                return
            gc.freeze()
        _holders.add(holder)


def release_heap(holder: object) -> None:
    """`holder` stopped: unfreeze the heap if nothing else holds it frozen."""
    with _lock:
        if holder not in _holders:
            return
        _holders.discard(holder)
        if not _holders:
            gc.unfreeze()
