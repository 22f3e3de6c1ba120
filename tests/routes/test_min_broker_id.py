"""NOTIFY_MIN_BROKER_ID_CHANGE (905): when a group's lowest id changes and whom 5.x's RouteInfoManager tells.

Java (5.3.3 RouteInfoManager): a registration with a lower id than the group's lowest tells the other members
(the one registering, when it is alone), with its HA address, whatever ``enableActingMaster`` says; the lowest id
leaving (unregistered, closed, expired) a group that allows acting masters and keeps members tells every one
left, with the address that went. Then ``MinBrokerIdNotifier`` sends Java's one-way frame to each, only while
``notifyMinBrokerIdChanged`` is on.
"""

import pytest
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactor, StringTransport

from namesrv.config import NamesrvConfig
from namesrv.protocol.codec import decode_frame
from namesrv.protocol.codes import RequestCode
from namesrv.routes.model import MinBrokerIdChange
from namesrv.server.housekeeping import BrokerHousekeeping
from namesrv.server.minbrokerid import MinBrokerIdNotifier
from tests.routes.helpers import (BROKER, CLUSTER, MASTER_ADDR, MASTER_HA, SLAVE_ADDR, SLAVE_HA, FakeConnection,
                                  RecordingEventLog, new_routes, register)

SLAVE2_ADDR = "127.0.0.1:50911"


@pytest.fixture
def routes():
    clock = Clock()
    routes = new_routes(clock)
    routes.changes_seen = []
    routes.add_min_broker_id_listener(routes.changes_seen.append)
    yield routes
    routes.check_invariants()


def group(routes, acting=True):
    """A master (0) and two slaves (1, 2), each on a connection of its own."""
    conns = {0: FakeConnection("127.0.0.1:1"), 1: FakeConnection("127.0.0.1:2"), 2: FakeConnection("127.0.0.1:3")}
    register(routes, "T", ha=MASTER_HA, acting=acting, conn=conns[0], timeout=10000)
    register(routes, "T", addr=SLAVE_ADDR, broker_id=1, ha=SLAVE_HA, acting=acting, conn=conns[1], timeout=30000)
    register(routes, "T", addr=SLAVE2_ADDR, broker_id=2, acting=acting, conn=conns[2], timeout=30000)
    return conns


def test_registrations_that_do_not_lower_the_lowest_id_change_nothing(routes):
    group(routes)
    register(routes, "T", ha=MASTER_HA, acting=True, counter=2)            # the master again
    register(routes, "T", addr="127.0.0.1:60911", broker_id=3, acting=True)
    assert routes.changes_seen == []


def test_the_master_leaving_tells_every_member_left_with_its_address(routes):
    conns = group(routes)
    BrokerHousekeeping(routes, RecordingEventLog()).connection_closed(conns[0])
    assert routes.changes_seen == [MinBrokerIdChange(BROKER, 1, SLAVE_ADDR, MASTER_ADDR, None,
                                                     (SLAVE_ADDR, SLAVE2_ADDR))]


def test_the_master_coming_back_tells_the_others_with_its_ha_address(routes):
    conns = group(routes)
    routes.on_connection_closed(conns[0])
    routes.changes_seen.clear()
    register(routes, "T", ha=MASTER_HA, acting=True, counter=5, conn=FakeConnection("127.0.0.1:9"))
    assert routes.changes_seen == [MinBrokerIdChange(BROKER, 0, MASTER_ADDR, None, MASTER_HA,
                                                     (SLAVE_ADDR, SLAVE2_ADDR))]


def test_an_expired_master_and_an_unregistered_one_tell_the_same(routes):
    group(routes)
    routes.clock.advance(11)                           # the master's 10 s timeout passed, not the slaves' 30 s
    assert [b.broker_addr for b in routes.scan_not_active_brokers()] == [MASTER_ADDR]
    register(routes, "T", ha=MASTER_HA, acting=True, counter=5)
    routes.unregister_broker(CLUSTER, MASTER_ADDR, BROKER, 0)
    offline = [c for c in routes.changes_seen if c.offline_broker_addr is not None]
    assert offline == [MinBrokerIdChange(BROKER, 1, SLAVE_ADDR, MASTER_ADDR, None, (SLAVE_ADDR, SLAVE2_ADDR))] * 2


def test_a_slave_leaving_or_the_last_member_leaving_tells_nobody(routes):
    conns = group(routes)
    routes.on_connection_closed(conns[2])              # not the lowest id
    routes.on_connection_closed(conns[0])
    routes.on_connection_closed(conns[1])              # the group is gone: nobody to tell
    assert [c.notify for c in routes.changes_seen] == [(SLAVE_ADDR,)]


def test_without_acting_masters_a_leaving_master_tells_nobody_as_in_java(routes):
    conns = group(routes, acting=False)
    routes.on_connection_closed(conns[0])
    assert routes.changes_seen == []
    register(routes, "T", ha=MASTER_HA, acting=False, counter=5)    # a registration tells regardless
    assert [c.min_broker_id for c in routes.changes_seen] == [0]


def test_a_slave_becoming_master_alone_is_told_itself(routes):
    register(routes, "T", addr=SLAVE_ADDR, broker_id=1, ha=SLAVE_HA, acting=True)
    register(routes, "T", addr=SLAVE_ADDR, broker_id=0, ha=SLAVE_HA, acting=True, counter=2)
    assert routes.changes_seen == [MinBrokerIdChange(BROKER, 0, SLAVE_ADDR, None, SLAVE_HA, (SLAVE_ADDR,))]


# -- the notifier: Java's frame, one-way, to each member told, on a connection of its own --------------------------
def notifier(enabled=True):
    routes, config, reactor, events = new_routes(Clock()), NamesrvConfig(), MemoryReactor(), RecordingEventLog()
    config.update({"notifyMinBrokerIdChanged": "true" if enabled else "false"})
    return routes, config, reactor, events, MinBrokerIdNotifier(routes, config, reactor, events)


def delivered(reactor, since=0):
    """(host, port, the one frame written, closed) of every connection the notifier opened from the ``since``-th."""
    sent = []
    for host, port, factory, timeout, _ in reactor.tcpClients[since:]:
        assert timeout == 3.0
        protocol = factory.buildProtocol(None)
        transport = StringTransport()
        protocol.makeConnection(transport)
        sent.append((host, port, decode_frame(transport.value()[4:]), transport.disconnecting))
    return sent


def test_the_notifier_sends_java_s_one_way_905_to_each_member_told():
    routes, config, reactor, events, sender = notifier()
    conns = group(routes)
    routes.on_connection_closed(conns[0])
    sent = delivered(reactor)
    assert [(host, port) for host, port, _, _ in sent] == [("127.0.0.1", 30911), ("127.0.0.1", 50911)]
    for _, _, request, closed in sent:
        assert request.code == RequestCode.NOTIFY_MIN_BROKER_ID_CHANGE and request.is_oneway and closed
        assert request.ext == {"minBrokerId": "1", "minBrokerAddr": SLAVE_ADDR, "offlineBrokerAddr": MASTER_ADDR}
    assert events.named("min_broker_id_changed") == [{
        "brokerName": BROKER, "minBrokerId": 1, "minBrokerAddr": SLAVE_ADDR, "offlineBrokerAddr": MASTER_ADDR,
        "notified": [SLAVE_ADDR, SLAVE2_ADDR]}]
    register(routes, "T", ha=MASTER_HA, acting=True, counter=5)
    (_, _, back, _), _ = delivered(reactor, since=2)
    assert back.ext == {"minBrokerId": "0", "minBrokerAddr": MASTER_ADDR, "haBrokerAddr": MASTER_HA}


def test_the_notifier_is_quiet_while_the_property_is_off_and_follows_an_update():
    routes, config, reactor, events, sender = notifier(enabled=False)
    conns = group(routes)
    routes.on_connection_closed(conns[0])
    assert reactor.tcpClients == [] and events.named("min_broker_id_changed") == []
    config.update({"notifyMinBrokerIdChanged": "true"})
    register(routes, "T", ha=MASTER_HA, acting=True, counter=5)
    assert [(h, p) for h, p, *_ in reactor.tcpClients] == [("127.0.0.1", 30911), ("127.0.0.1", 50911)]


def test_an_address_that_is_not_host_port_is_counted_not_raised():
    routes, config, reactor, events, sender = notifier()
    sender.changed(MinBrokerIdChange(BROKER, 1, "nowhere", MASTER_ADDR, None, ("nowhere", SLAVE_ADDR)))
    assert sender.failed == 1 and len(reactor.tcpClients) == 1
