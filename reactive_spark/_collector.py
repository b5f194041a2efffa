"""`freezeHeap`: keeping CPython's cyclic garbage collector off the heap a context starts with.

Opt-in, because `gc` is the process's, not the library's: a program that owns its process (the
`reactive-spark` command does) may ask for it; a service that embeds a context decides itself
(docs/concepts.md says when and what it gains).

A full collection walks every tracked object of the process: Spark's and py4j's, every imported
module's, the application's. With PySpark loaded that is some 60,000 objects and over ten
milliseconds in which no event moves. While a context that asked for it runs, the heap it
started with is frozen (`gc.freeze`), so collections walk only what was made since. The last
such context to stop undoes that freeze, unless the application froze objects itself since
(`gc.freeze` before forking workers, say): then the heap is left as the application made it.
A heap the application had frozen before the context started is never touched.

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
import logging
import threading

__all__ = ["hold_heap", "release_heap"]

log = logging.getLogger(__name__)


class _Marker:
    """Made right after our freeze: a later `gc.freeze()` by anyone freezes it too."""


_lock = threading.Lock()
_holders: set[object] = set()  # the running contexts that asked for the freeze
_marker: _Marker | None = None  # set while our freeze is in place


def hold_heap(holder: object) -> None:
    """Freeze the heap as it is now while `holder` runs (see the module docs)."""
    global _marker
    with _lock:
        if not _holders:
            if gc.get_freeze_count():  # frozen by the application: its business
                return
            gc.freeze()
            _marker = _Marker()
        _holders.add(holder)


def release_heap(holder: object) -> None:
    """`holder` stopped: undo our freeze if it was the last holder and nobody froze since."""
    global _marker
    with _lock:
        if holder not in _holders:
            return
        _holders.discard(holder)
        if _holders or _marker is None:
            return
        marker, _marker = _marker, None
        if _frozen(marker):
            log.info(
                "leaving the heap frozen: objects were frozen (gc.freeze) after the "
                "StreamingContext started, and unfreezing would undo that freeze too"
            )
            return
        gc.unfreeze()


def _frozen(marker: _Marker) -> bool:
    """Whether `marker` sits in the permanent generation (frozen), not in a collected one."""
    return not any(
        any(candidate is marker for candidate in gc.get_objects(generation))
        for generation in range(3)
    )
