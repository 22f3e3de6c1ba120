"""NOTIFY_MIN_BROKER_ID_CHANGE (905): telling a group's brokers that its lowest live id changed.

5.x's slave-acting-master (``enableSlaveActingMaster`` in the brokers, no controller): when a group's
master leaves, the slave with the lowest id acts as master (it serves reads and runs the timers of
scheduled and transactional messages) until the master is back. The brokers learn it from their name
servers: with ``notifyMinBrokerIdChanged=true`` Java's RouteInfoManager sends 905 one-way to the
group's brokers when a registration brings a lower id, and when the lowest id leaves a group that allows
acting masters (its connection closed, its heartbeat expired, or it unregistered). The route tables
say when and to whom (``MinBrokerIdChange``); this sends it, with Java's header (``minBrokerId``,
``minBrokerAddr``, ``offlineBrokerAddr``, ``haBrokerAddr``), each on a connection of its own.

The property is read at each change, so an update at run time takes effect at the next one.
"""

from twisted.logger import Logger

from namesrv.protocol.codes import RequestCode
from namesrv.protocol.command import make_request
from namesrv.protocol.oneway import send_oneway


def min_broker_id_request(change):
    """The 905 request Java's RouteInfoManager sends for ``change`` (fields left out where Java's are null)."""
    ext = {"minBrokerId": str(change.min_broker_id), "minBrokerAddr": change.min_broker_addr,
           "offlineBrokerAddr": change.offline_broker_addr, "haBrokerAddr": change.ha_broker_addr}
    return make_request(RequestCode.NOTIFY_MIN_BROKER_ID_CHANGE, ext={k: v for k, v in ext.items() if v is not None},
                        oneway=True)


class MinBrokerIdNotifier:
    """Listens to the route tables (``routes.add_min_broker_id_listener``) and sends 905 while
    ``notifyMinBrokerIdChanged`` is on; counts what it sent and what failed."""

    log = Logger()

    def __init__(self, routes, config, reactor, events):
        self.config = config
        self.reactor = reactor
        self.events = events
        self.sent = 0
        self.failed = 0
        routes.add_min_broker_id_listener(self.changed)

    def changed(self, change):
        if not self.config.notifyMinBrokerIdChanged:
            return
        self.log.info("min broker id of {name} changed to {id} ({addr}), offline broker {offline}: telling {notify}",
                      name=change.broker_name, id=change.min_broker_id, addr=change.min_broker_addr,
                      offline=change.offline_broker_addr, notify=", ".join(change.notify))
        self.events.emit("min_broker_id_changed", brokerName=change.broker_name, minBrokerId=change.min_broker_id,
                         minBrokerAddr=change.min_broker_addr, offlineBrokerAddr=change.offline_broker_addr,
                         notified=list(change.notify))
        for address in change.notify:
            try:
                d = send_oneway(self.reactor, address, min_broker_id_request(change))
            except ValueError:
                self.failed += 1
                self.log.warn("cannot tell {addr} of {name}'s min broker id: not host:port", addr=address,
                              name=change.broker_name)
                continue
            d.addCallbacks(self._sent, self._failed, errbackArgs=(address, change.broker_name))

    def _sent(self, _):
        self.sent += 1

    def _failed(self, failure, address, broker_name):
        self.failed += 1
        self.log.warn("telling {addr} of {name}'s min broker id failed: {why}", addr=address, name=broker_name,
                      why=failure.getErrorMessage())
