"""A deadline-ordered index of live entries, so that an expiry check costs what expires.

Java walks its whole live table every few seconds. Here each entry (a name server's
BrokerLiveInfo, a controller's broker heartbeat) is pushed once, at its deadline, when it
is bound. Refreshing an entry only moves what its ``deadline()`` returns: the stale heap item
is noticed when it comes due and re-pushed at the real deadline (lazy deletion). A replaced
or removed entry's item is simply dropped when it comes due. The heap therefore holds about
one item per entry bound within the last timeout window.

Shared by the route tables (namesrv/routes) and the controller (namesrv/controller), which
know nothing of each other.
"""

import heapq
import itertools
from typing import Callable, Generic, Iterator, Optional, Protocol, TypeVar


class Expiring(Protocol):
    """What the queue holds: an entry that says when it expires (it may say later after a refresh)."""

    def deadline(self) -> float: ...


Key = TypeVar("Key")
Live = TypeVar("Live", bound=Expiring)


class DeadlineQueue(Generic[Key, Live]):
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Key, Live]] = []
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, key: Key, live: Live) -> None:
        heapq.heappush(self._heap, (live.deadline(), next(self._seq), key, live))

    def clear(self) -> None:
        del self._heap[:]

    def pop_expired(self, now: float, current: Callable[[Key], Optional[Live]]) -> Iterator[tuple[Key, Live]]:
        """Yield ``(key, live)`` for every entry whose deadline is before ``now``.

        ``current(key)`` returns the live entry now bound to ``key``; items for entries
        that were replaced or removed are dropped, refreshed ones are re-queued.
        """
        heap = self._heap
        while heap and heap[0][0] < now:
            _, _, key, live = heapq.heappop(heap)
            if current(key) is not live:
                continue
            deadline = live.deadline()
            if deadline < now:
                yield key, live
            else:
                heapq.heappush(heap, (deadline, next(self._seq), key, live))

    def next_deadline(self) -> Optional[float]:
        """The earliest deadline queued (maybe of an entry since refreshed: then it is re-queued later), or None."""
        return self._heap[0][0] if self._heap else None
