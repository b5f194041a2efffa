"""Reaches: per source, the earliest batch a restart must plan again to rebuild an RDD.

`ReachWindow` keeps the reaches of the RDDs a stream remembers, oldest first, and what they
reach back to together, at a constant cost per RDD whatever the stream keeps
(docs/architecture.md, "Recovery").
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

__all__ = ["Reach", "ReachWindow", "merge_reach"]

#: Per source name, the instance id of the source's earliest batch that a restart must plan
#: again (with all its later ones) to rebuild an RDD.
Reach = dict[str, int]


def merge_reach(into: Reach, other: Reach) -> None:
    """Make `into` reach back as far as `other` too.

    Examples:
        >>> reach = {"daily": 7}
        >>> merge_reach(reach, {"daily": 3, "hourly": 40})
        >>> reach
        {'daily': 3, 'hourly': 40}
    """
    for name, first in other.items():
        if first < into.get(name, first + 1):
            into[name] = first


class ReachWindow:
    """The reaches of a stream's remembered RDDs, oldest first, and how far back they reach.

    Added at the newest end and dropped from the oldest, as a stream remembers and forgets its
    RDDs. Per source it keeps, besides the reaches, the candidates for its earliest batch: a
    reach's batch stays a candidate while no newer reach goes back as far (a sliding minimum),
    so `reach_back` costs one step per source, not one per remembered RDD.

    Examples:
        >>> window = ReachWindow()
        >>> window.append({"daily": 5})
        >>> window.append({"daily": 2, "weekly": 1})
        >>> window.append({"daily": 6})
        >>> window.reach_back({})
        {'daily': 2, 'weekly': 1}
        >>> window.popleft()
        {'daily': 5}
        >>> window.popleft()
        {'daily': 2, 'weekly': 1}
        >>> window.reach_back({})
        {'daily': 6}
    """

    __slots__ = ("_added", "_earliest", "_reaches")

    def __init__(self) -> None:
        self._reaches: deque[Reach] = deque()
        self._added = 0  # reaches ever appended: the position of the next one
        #: Per source, (position, first batch) of each candidate, oldest and earliest first.
        self._earliest: dict[str, deque[tuple[int, int]]] = {}

    def append(self, reach: Reach) -> None:
        """Add the reach of the newest remembered RDD (kept as it is: never change it after)."""
        position = self._added
        self._added += 1
        self._reaches.append(reach)
        for name, first in reach.items():
            candidates = self._earliest.get(name)
            if candidates is None:
                candidates = self._earliest[name] = deque()
            while candidates and candidates[-1][1] >= first:
                candidates.pop()  # this newer reach goes back as far: it outlives them
            candidates.append((position, first))

    def popleft(self) -> Reach:
        """Drop the reach of the oldest remembered RDD, and return it."""
        position = self._added - len(self._reaches)
        reach = self._reaches.popleft()
        for name in reach:
            candidates = self._earliest[name]
            if candidates and candidates[0][0] == position:
                candidates.popleft()
                if not candidates:
                    del self._earliest[name]
        return reach

    def reach_back(self, into: Reach) -> Reach:
        """Make `into` reach back as far as any remembered RDD does; returns it."""
        for name, candidates in self._earliest.items():
            first = candidates[0][1]
            if first < into.get(name, first + 1):
                into[name] = first
        return into

    def __getitem__(self, index: int) -> Reach:
        return self._reaches[index]

    def __iter__(self) -> Iterator[Reach]:
        return iter(self._reaches)

    def __len__(self) -> int:
        return len(self._reaches)
