"""Rate control for direct log streams (docs/logs.md, "Rate control").

`split_records` divides what a batch may read (`maxRecordsPerBatch`) among the partitions.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["split_records"]


def split_records(limit: int, backlogs: Sequence[int], rotation: int = 0) -> list[int]:
    """How many of at most `limit` records each partition gives, fairly and deterministically.

    Each partition gives at most its backlog. When the backlogs hold more than `limit`, every
    partition with a backlog gives one record and the rest of `limit` is shared in proportion
    to what remains of the backlogs, the records left by rounding going to the largest
    remainders (ties: the first partitions). With fewer records than partitions waiting, one
    record goes to each of `limit` partitions in turn, starting at the `rotation`-th one with
    a backlog: no partition waits forever.

    Examples:
        >>> split_records(100, [900, 90, 10])
        [88, 10, 2]
        >>> split_records(100, [30, 0, 20])
        [30, 0, 20]
        >>> split_records(2, [5, 5, 5], rotation=2)
        [1, 0, 1]
    """
    if sum(backlogs) <= limit:
        return list(backlogs)
    taken = [0] * len(backlogs)
    waiting = [partition for partition, backlog in enumerate(backlogs) if backlog > 0]
    if limit < len(waiting):
        start = rotation % len(waiting)
        for partition in (waiting[start:] + waiting[:start])[:limit]:
            taken[partition] = 1
        return taken
    rest = limit - len(waiting)
    remaining = [max(0, backlog - 1) for backlog in backlogs]
    whole = sum(remaining)  # > rest, since the backlogs hold more than limit
    remainders = []
    for partition in waiting:
        share, remainder = divmod(rest * remaining[partition], whole)
        taken[partition] = 1 + share
        remainders.append((-remainder, partition))
    for _, partition in sorted(remainders)[: limit - sum(taken)]:
        taken[partition] += 1
    return taken
