"""Broker housekeeping: what happens when a broker's connection closes or its heartbeat is too old.

Java's BrokerHousekeepingService runs on connection close, error and idle; the
scan runs on a timer. Both only touch brokers whose live entry is bound to the
connection in question, so admin tools and clients closing never affect routes.
"""

from twisted.logger import Logger


class BrokerHousekeeping:
    """Forgets the brokers of closed connections and expired heartbeats.

    Closes are forgotten in batches: every connection closed in one reactor turn is handled in
    the next one, in one route-table operation. When a switch reboots and a thousand brokers'
    connections drop at once, their routes change once (one publication to the read workers,
    one answer-cache invalidation) instead of a thousand times. Java runs its channel-close
    housekeeping on another thread, so it is not synchronous there either. Without a reactor
    (some tests) a close is handled at once.
    """

    log = Logger()

    def __init__(self, routes, events, reactor=None):
        self.routes = routes
        self.events = events
        self.reactor = reactor
        self._closed = []
        self._flush_call = None

    def connection_closed(self, connection):
        if self.reactor is None:
            self._forget([connection])
            return
        self._closed.append(connection)
        if self._flush_call is None:
            self._flush_call = self.reactor.callLater(0, self.flush)

    def flush(self):
        """Forget the brokers of every connection closed so far (a takeover calls it before handing over)."""
        call, self._flush_call = self._flush_call, None
        if call is not None and call.active():
            call.cancel()
        closed, self._closed = self._closed, []
        if closed:
            self._forget(closed)

    def _forget(self, connections):
        removed = self.routes.on_connections_closed(connections)
        by_connection = {}
        for broker in removed:
            by_connection.setdefault(id(broker.connection), []).append(broker)
        for connection in connections:
            mine = by_connection.get(id(connection), ())
            self.events.emit("channel_closed", peer=connection.peer, brokerAddr=mine[0].broker_addr if mine else None)
            for broker in mine:
                self.log.info("broker {addr} ({name}) removed: its connection {peer} closed",
                              addr=broker.broker_addr, name=broker.broker_name, peer=connection.peer)
                self.events.emit("broker_unregistered", cluster=broker.cluster, brokerName=broker.broker_name,
                                 brokerId=broker.broker_id, brokerAddr=broker.broker_addr, reason="channel_closed")

    def scan_not_active_brokers(self):
        for broker in self.routes.scan_not_active_brokers():
            self.log.warn("The broker channel expired, {addr} {age}ms", addr=broker.broker_addr, age=broker.age_ms)
            self.events.emit("broker_expired", cluster=broker.cluster, brokerName=broker.broker_name,
                             brokerId=broker.broker_id, brokerAddr=broker.broker_addr, ageMs=broker.age_ms)
            self.events.emit("broker_unregistered", cluster=broker.cluster, brokerName=broker.broker_name,
                             brokerId=broker.broker_id, brokerAddr=broker.broker_addr, reason="expired")
            if broker.connection is not None:
                broker.connection.close()
