"""Server-sent events to the console's live viewers, so that no viewer can slow the pipeline.

Every message is encoded once (as an event-stream frame, plus a redacted frame when it holds a
token-protected request) and handed to each subscriber's bounded buffer; a subscriber that
falls `SUBSCRIBER_BACKLOG` messages behind (a client that does not read) is dropped and its
connection closed. `close()` ends every stream, so that a server can stop at once.

Examples:
    >>> frame("event", {"n": 1}).decode().splitlines()
    ['event: event', 'data: {"n": 1}', '']
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reactive_spark.web.values import dumps, shown

__all__ = ["SUBSCRIBER_BACKLOG", "Broadcast", "Message", "Subscriber", "frame"]

log = logging.getLogger(__name__)

#: How many messages a subscriber may fall behind before it is dropped.
SUBSCRIBER_BACKLOG = 1000


def frame(kind: str, data: Any) -> bytes:
    """One server-sent event: `event: kind` and its JSON `data`."""
    return f"event: {kind}\ndata: {dumps(shown(data))}\n\n".encode()


@dataclass(frozen=True)
class Message:
    """A message encoded for every viewer: `full`, and `redacted` for unauthenticated ones."""

    full: bytes
    redacted: bytes


class Subscriber:
    """One live viewer: the frames it has yet to receive, at most `backlog` of them."""

    def __init__(
        self, authenticated: bool, abort: Callable[[], None], backlog: int = SUBSCRIBER_BACKLOG
    ) -> None:
        self.authenticated = authenticated
        self.dropped = False
        self.closed = False
        self._abort = abort
        self._backlog = backlog
        self._frames: deque[bytes] = deque()
        self._ready = asyncio.Event()
        self._writing = False

    def push(self, message: Message) -> None:
        """Queue `message` (on the loop); past the backlog, drop this subscriber."""
        if self.closed:
            return
        if len(self._frames) >= self._backlog:
            self.dropped = True
            log.info("dropped a console viewer %d messages behind", len(self._frames))
            self.close()
            return
        self._frames.append(message.full if self.authenticated else message.redacted)
        self._ready.set()

    def close(self) -> None:
        """End the stream: at once when a write is blocked or the viewer was dropped."""
        self.closed = True
        if self.dropped:
            self._frames.clear()
        self._ready.set()
        if self._writing or self.dropped:
            self._abort()

    async def next(self, timeout: float) -> bytes | None:
        """The frames queued so far, joined (b"" after `timeout` without any); None at the end."""
        if not self._frames and not self.closed:
            try:
                await asyncio.wait_for(self._ready.wait(), timeout)
            except TimeoutError:
                return b""
        self._ready.clear()
        if not self._frames:
            return None if self.closed else b""
        frames = b"".join(self._frames)
        self._frames.clear()
        return frames

    def writing(self, active: bool) -> None:
        """Say whether a write to the viewer is under way (a blocked one is aborted at close)."""
        self._writing = active


class Broadcast:
    """The live viewers of one console; `publish` is called on the event loop."""

    def __init__(self) -> None:
        self._subscribers: set[Subscriber] = set()
        self.closed = False

    def __len__(self) -> int:
        return len(self._subscribers)

    def subscribe(self, authenticated: bool, abort: Callable[[], None]) -> Subscriber:
        """A new viewer (`abort` closes its connection at once); closed if the console is."""
        subscriber = Subscriber(authenticated, abort)
        if self.closed:
            subscriber.close()
        else:
            self._subscribers.add(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        """Stop feeding `subscriber`."""
        self._subscribers.discard(subscriber)

    def publish(self, message: Message) -> None:
        """Queue `message` for every viewer; drop those too far behind."""
        for subscriber in list(self._subscribers):
            subscriber.push(message)
            if subscriber.closed:
                self._subscribers.discard(subscriber)

    def close(self) -> None:
        """End every stream (the console stops); later subscribers end at once."""
        self.closed = True
        for subscriber in list(self._subscribers):
            subscriber.close()
        self._subscribers.clear()
