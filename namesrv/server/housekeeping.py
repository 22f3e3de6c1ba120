"""Broker housekeeping: what happens when a broker's connection closes or its heartbeat is too old.

Java's BrokerHousekeepingService runs on connection close, error and idle; the
scan runs on a timer. Both only touch brokers whose live entry is bound to the
connection in question, so admin tools and clients closing never affect routes.
"""

from twisted.logger import Logger


class BrokerHousekeeping:
    log = Logger()

    def __init__(self, routes, events):
        self.routes = routes
        self.events = events

    def connection_closed(self, connection):
        removed = self.routes.on_connection_closed(connection)
        self.events.emit("channel_closed", peer=connection.peer,
                         brokerAddr=removed[0].broker_addr if removed else None)
        for broker in removed:
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
