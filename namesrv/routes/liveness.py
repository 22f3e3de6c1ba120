"""A deadline-ordered index of live entries, so that the expiry scan costs what expires.

Java walks the whole brokerLiveTable every 5-10 s (PITFALLS 9). Here each BrokerLiveInfo
is pushed once, at its deadline, when it is bound. Refreshing an entry (QUERY_DATA_VERSION,
BROKER_HEARTBEAT) only moves ``last_update``: the stale heap item is noticed when it comes
due and re-pushed at the real deadline (lazy deletion). A replaced or removed entry's
item is simply dropped when it comes due. The heap therefore holds about one item per
registration within the last timeout window.
"""

import heapq
import itertools


class DeadlineQueue:
    def __init__(self):
        self._heap = []
        self._seq = itertools.count()

    def __len__(self):
        return len(self._heap)

    def push(self, key, live):
        heapq.heappush(self._heap, (live.deadline(), next(self._seq), key, live))

    def clear(self):
        del self._heap[:]

    def pop_expired(self, now, current):
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
