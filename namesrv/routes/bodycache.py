"""Encoded answer pieces and bodies kept between changes: route pieces, some routes, the whole-table bodies.

Clients poll GET_ROUTEINFO_BY_TOPIC every 30 s per topic; Java deep-copies and encodes each
answer under a lock (PITFALLS 8). Here the pieces a route body is joined from (each broker's
BrokerData, each shared QueueData) are encoded once and kept while they hold, so a route is
joined, not encoded, whatever the number of topics; only routes that need more than a join
(acting master, static-topic mappings, filter servers) are kept whole, per topic, within a
byte budget. A joined body is kept per topic too (``joined``), so a topic asked again after an
unrelated change costs a lookup: topics on the same brokers share one copy of it (``_interned``),
and the distinct bodies are held within the same byte budget (past it, all of them start over).
The change tracker (changes.py) says what changed; this object only forgets.
"""

from __future__ import annotations

from collections import deque
from itertools import repeat
from typing import TYPE_CHECKING, Callable, Collection, Iterable, Optional, Sequence

if TYPE_CHECKING:   # types only
    from namesrv.routes.model import BrokerData, QueueData
    from namesrv.routes.topiclists import TooLarge

#: how a whole route is asked: (standard JSON?, acting master?, orderTopicConf)
RouteKey = tuple[bool, bool, Optional[str]]
#: how a joined route is asked: (standard JSON?, acting master?)
JoinedKey = tuple[bool, bool]

#: a topic's route is asked in a few shapes at most (standard JSON?, acting master?, order conf)
MAX_VARIANTS_PER_TOPIC = 8
#: bytes a kept route costs beside its body (dict slots, the variants dict, the key tuple)
ROUTE_OVERHEAD = 300
#: bytes a topic's joined body costs beside the (shared) body: its dict slot and its key
JOINED_ENTRY_OVERHEAD = 100
#: distinct QueueData pieces kept (a fleet has a few per broker); past it they start over
MAX_QUEUE_PIECES = 1 << 16
DEFAULT_MAX_BYTES = 32 << 20


class RouteBodyCache:
    """``routes``: topic -> {(standard, acting, orderTopicConf): bytes}, the whole routes, within
    ``max_bytes``; ``broker_pieces``: (brokerName, standard) -> its BrokerData's bytes, until that
    broker changes; ``queue_pieces``: id(QueueData) -> (the object, plain bytes, standard bytes);
    ``topic_list`` and ``cluster_info``: the whole-table bodies, or None until asked again;
    ``topic_list_refused``: the TooLarge the all-topic list last met (topiclists.py), and
    ``topic_set_generation``, which moves whenever ``topic_list`` is dropped, so that a list built
    over several reactor turns is kept only if no topic came or went meanwhile."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        #: (standard JSON?, acting master?) -> {topic: its joined route body} (no order conf)
        self.joined: dict[JoinedKey, dict[str, bytes]] = {
            (False, False): {}, (True, False): {}, (False, True): {}, (True, True): {}}
        self.topic_set_generation = 0
        self.clear()

    def set_max_bytes(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        if self.route_bytes > max_bytes:
            self._evict()

    def clear(self) -> None:
        """Forget every body (the tables were replaced)."""
        self.routes: dict[str, dict[RouteKey, bytes]] = {}
        self.route_bytes = 0
        self.forget_joined()
        self.broker_pieces: dict[tuple[str, bool], bytes] = {}
        self.queue_pieces: dict[int, tuple[QueueData, bytes, bytes]] = {}
        self.topic_list: Optional[bytes] = None
        self.topic_list_refused: Optional[TooLarge] = None
        self.topic_set_generation += 1
        self.cluster_info: Optional[bytes] = None

    def forget_joined(self) -> None:
        """Forget every topic's joined body (the dicts stay: readers may hold them)."""
        for topics in self.joined.values():
            topics.clear()
        self._interned: dict[bytes, bytes] = {}
        self.interned_bytes = 0

    def remember_joined(self, topic: str, key: JoinedKey, body: bytes) -> bytes:
        """Keep ``topic``'s joined body; returns the copy kept (shared with the topics on the same pieces).

        Counted in bytes: each distinct body once, each topic's entry at ``JOINED_ENTRY_OVERHEAD``
        (figures: bench/results/design-figures.md#body-cache); past ``max_bytes`` every
        joined body goes and the next reads join them again."""
        shared = self._interned.get(body)
        size = JOINED_ENTRY_OVERHEAD if shared is not None else JOINED_ENTRY_OVERHEAD + len(body) + ROUTE_OVERHEAD
        if self.interned_bytes + size > self.max_bytes:
            self.forget_joined()
            shared, size = None, JOINED_ENTRY_OVERHEAD + len(body) + ROUTE_OVERHEAD
        if shared is None:
            shared = self._interned[body] = body
        self.interned_bytes += size
        self.joined[key][topic] = shared
        return shared

    def route(self, topic: str, key: RouteKey) -> Optional[bytes]:
        variants = self.routes.get(topic)
        return variants.get(key) if variants is not None else None

    def remember_route(self, topic: str, key: RouteKey, body: bytes) -> None:
        routes = self.routes
        variants = routes.get(topic)
        if variants is None:
            variants = routes[topic] = {}
            self.route_bytes += ROUTE_OVERHEAD
        elif len(variants) >= MAX_VARIANTS_PER_TOPIC:
            self.route_bytes -= sum(len(old) for old in variants.values())
            variants.clear()
        old = variants.get(key)
        if old is not None:
            self.route_bytes -= len(old)
        variants[key] = body
        self.route_bytes += len(body)
        if self.route_bytes > self.max_bytes:
            self._evict()

    def _evict(self) -> None:
        """Forget the oldest routes until a quarter of the budget is free (one pass, not one per miss)."""
        routes, goal = self.routes, self.max_bytes * 3 // 4
        dropped = []
        for topic in routes:
            if self.route_bytes <= goal:
                break
            self.route_bytes -= ROUTE_OVERHEAD + sum(len(body) for body in routes[topic].values())
            dropped.append(topic)
        for topic in dropped:
            del routes[topic]

    def forget_routes(self, topics: Iterable[str]) -> None:
        for joined in self.joined.values():
            if joined:
                before = len(joined)
                deque(map(joined.pop, topics, repeat(None)), 0)   # a registration's 4,000 topics: in C
                # their bodies stay interned (other topics may share them) until the next reset
                self.interned_bytes -= (before - len(joined)) * JOINED_ENTRY_OVERHEAD
        routes = self.routes
        if routes:
            for topic in topics:
                variants = routes.pop(topic, None)
                if variants is not None:
                    self.route_bytes -= ROUTE_OVERHEAD + sum(len(body) for body in variants.values())

    def forget_routes_of(self, topic_sets: Sequence[Collection[str]]) -> None:
        """``forget_routes`` for each set of ``topic_sets`` (the topics of each broker that changed). When
        together they name at least as many topics as are kept, everything kept goes at once: a thousand
        brokers gone together would otherwise cost a lookup per (topic, broker), a million of them, all in
        one turn of a read worker's reactor when a fleet's connections drop."""
        named = sum(map(len, topic_sets))
        if not named:
            return
        if named >= sum(map(len, self.joined.values())) + len(self.routes):
            self.forget_joined()
            self.routes.clear()
            self.route_bytes = 0
            return
        for topics in topic_sets:
            self.forget_routes(topics)

    def queue_piece(self, queue_data: QueueData, standard: bool, encode: Callable[[QueueData, bool], bytes]) -> bytes:
        """The bytes of a shared (never changed) QueueData; ``encode(value, standard)`` builds them."""
        entry = self.queue_pieces.get(id(queue_data))
        if entry is None or entry[0] is not queue_data:
            if len(self.queue_pieces) >= MAX_QUEUE_PIECES:
                self.queue_pieces = {}
            entry = self.queue_pieces[id(queue_data)] = (queue_data, encode(queue_data, False),
                                                         encode(queue_data, True))
        return entry[2] if standard else entry[1]

    def broker_piece(self, broker_data: BrokerData, standard: bool,
                     encode: Callable[[BrokerData, bool], bytes]) -> bytes:
        key = (broker_data.broker_name, standard)
        piece = self.broker_pieces.get(key)
        if piece is None:
            piece = self.broker_pieces[key] = encode(broker_data, standard)
        return piece

    def topic_set_changed(self) -> None:
        self.topic_list = None
        self.topic_list_refused = None
        self.topic_set_generation += 1

    def brokers_changed(self, broker_name: Optional[str] = None) -> None:
        """The BrokerData (changed in place) or cluster membership of ``broker_name`` (None: of any
        broker) changed: the cluster info goes, and that broker's pieces."""
        self.cluster_info = None
        pieces = self.broker_pieces
        if broker_name is None:
            if pieces:
                self.broker_pieces = {}
            self.forget_joined()
        else:
            pieces.pop((broker_name, True), None)
            pieces.pop((broker_name, False), None)

    def stats(self) -> dict[str, int]:
        return {"routes": len(self.routes), "routeBytes": self.route_bytes, "brokerPieces": len(self.broker_pieces),
                "queuePieces": len(self.queue_pieces), "joinedRoutes": sum(map(len, self.joined.values())),
                "joinedBodies": len(self._interned), "joinedBytes": self.interned_bytes}
