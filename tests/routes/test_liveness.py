"""Unregistration, connection close and expiry (behaviour.md §4-§6, BrokerHousekeepingServiceTest)."""

import pytest
from twisted.internet.task import Clock

from namesrv.routes.model import PERM_READ, PERM_WRITE, DataVersion
from tests.routes.helpers import (
    BROKER, CLUSTER, MASTER_ADDR, SLAVE_ADDR, FakeConnection, addrs_of, new_routes, perm_of, register)


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def routes(clock):
    routes = new_routes(clock)
    yield routes
    routes.check_invariants()


def test_unregister_master_removes_all_its_routes(routes):
    register(routes, "TestTopic", "TestTopic1", "TestTopic2")
    assert routes.unregister_broker(CLUSTER, MASTER_ADDR, BROKER, 0)
    for name in ("TestTopic", "TestTopic1", "TestTopic2", "baseTopic"):
        assert routes.pickup_topic_route(name) is None
    assert routes.broker_addr_table == {} and routes.cluster_addr_table == {} and routes.broker_live_table == {}


def test_unregister_slave_keeps_master_route(routes):
    register(routes, "TestTopic", acting=True)
    register(routes, "TestTopic", addr=SLAVE_ADDR, broker_id=1, acting=True)
    routes.unregister_broker(CLUSTER, SLAVE_ADDR, BROKER, 1)
    assert addrs_of(routes, "TestTopic") == {0: MASTER_ADDR}


def test_unregister_master_of_acting_group_makes_queues_read_only(routes):
    register(routes, "TestTopic", acting=True)
    register(routes, "TestTopic", addr=SLAVE_ADDR, broker_id=1, acting=True)
    routes.unregister_broker(CLUSTER, MASTER_ADDR, BROKER, 0)
    assert addrs_of(routes, "TestTopic", support_acting_master=True) == {0: SLAVE_ADDR}
    assert addrs_of(routes, "TestTopic", support_acting_master=False) == {1: SLAVE_ADDR}
    assert perm_of(routes, "TestTopic") == PERM_READ


def test_unregister_master_of_old_version_group_keeps_perm(routes):
    register(routes, "TestTopic", acting=False)
    register(routes, "TestTopic", addr=SLAVE_ADDR, broker_id=1, acting=False)
    routes.unregister_broker(CLUSTER, MASTER_ADDR, BROKER, 0)
    assert addrs_of(routes, "TestTopic") == {1: SLAVE_ADDR}
    assert perm_of(routes, "TestTopic") == PERM_READ | PERM_WRITE


def test_unregister_several_brokers(routes):
    register(routes, "TestTopic1")
    register(routes, "TestTopic2", name="broker-b", addr="127.0.0.1:10912")
    routes.unregister_broker(CLUSTER, MASTER_ADDR, BROKER, 0)
    routes.unregister_broker(CLUSTER, "127.0.0.1:10912", "broker-b", 0)
    assert routes.pickup_topic_route("TestTopic1") is None and routes.pickup_topic_route("TestTopic2") is None


def test_unregister_of_unknown_broker_changes_nothing(routes):
    register(routes, "T")
    assert not routes.unregister_broker(CLUSTER, "127.0.0.1:1", "nobody", 0)
    assert not routes.unregister_broker("nocluster", MASTER_ADDR + "x", BROKER, 0)
    assert routes.pickup_topic_route("T") is not None


def test_unregister_with_expected_live_entry_refuses_a_newer_registration(routes):
    register(routes, "T", conn=FakeConnection())
    decided_on = routes.broker_live_table[(CLUSTER, MASTER_ADDR)]
    register(routes, "T", conn=FakeConnection(), counter=2)  # re-registered meanwhile
    assert not routes.unregister_broker(CLUSTER, MASTER_ADDR, BROKER, 0, expected=decided_on)
    assert routes.pickup_topic_route("T") is not None


def test_closing_the_registration_connection_removes_the_broker(routes):
    conn = FakeConnection()
    register(routes, "TestTopic", "TestTopic1", conn=conn)
    removed = routes.on_connection_closed(conn)
    assert [(r.cluster, r.broker_name, r.broker_id, r.broker_addr) for r in removed] == [
        (CLUSTER, BROKER, 0, MASTER_ADDR)]
    assert routes.pickup_topic_route("TestTopic") is None and routes.pickup_topic_route("TestTopic1") is None


def test_closing_master_then_slave_connection(routes):
    master_conn, slave_conn = FakeConnection(), FakeConnection()
    register(routes, "TestTopic", conn=master_conn, acting=False)
    register(routes, "TestTopic", addr=SLAVE_ADDR, broker_id=1, conn=slave_conn, acting=False)
    routes.on_connection_closed(master_conn)
    assert addrs_of(routes, "TestTopic") == {1: SLAVE_ADDR}
    register(routes, "TestTopic", addr=SLAVE_ADDR, broker_id=0, conn=slave_conn, counter=2, acting=False)
    assert addrs_of(routes, "TestTopic") == {0: SLAVE_ADDR}
    routes.on_connection_closed(slave_conn)
    assert routes.pickup_topic_route("TestTopic") is None


def test_other_connections_closing_change_nothing(routes):
    register(routes, "T", conn=FakeConnection())
    assert routes.on_connection_closed(FakeConnection()) == []
    assert routes.on_connection_closed(None) == []
    assert routes.pickup_topic_route("T") is not None


def test_rebinding_to_a_new_connection_makes_the_old_one_harmless(routes):
    old, new = FakeConnection(), FakeConnection()
    register(routes, "T", conn=old)
    register(routes, "T", conn=new)
    assert routes.on_connection_closed(old) == []
    assert routes.pickup_topic_route("T") is not None
    assert len(routes.on_connection_closed(new)) == 1


def test_one_connection_carrying_two_registrations_removes_both(routes):
    conn = FakeConnection()
    register(routes, "A", conn=conn)
    register(routes, "B", name="broker-b", addr="127.0.0.1:10912", conn=conn)
    assert sorted(r.broker_name for r in routes.on_connection_closed(conn)) == [BROKER, "broker-b"]
    assert routes.topic_names() == []


def test_broker_expires_after_120_seconds(routes, clock):
    conn = FakeConnection()
    register(routes, "T", conn=conn)
    clock.advance(120)
    assert routes.scan_not_active_brokers() == []  # Java: last + 120000 < now, strictly
    clock.advance(1)
    expired = routes.scan_not_active_brokers()
    assert [(e.broker_name, e.broker_id, e.broker_addr, e.age_ms, e.connection) for e in expired] == [
        (BROKER, 0, MASTER_ADDR, 121000, conn)]
    assert routes.pickup_topic_route("T") is None
    assert routes.scan_not_active_brokers() == []
    assert routes.on_connection_closed(conn) == []  # the caller closes it: nothing left to do


def test_heartbeats_keep_a_broker_alive(routes, clock):
    register(routes, "T")
    for _ in range(5):
        clock.advance(100)
        assert routes.broker_heartbeat(CLUSTER, MASTER_ADDR)
        assert routes.scan_not_active_brokers() == []
    clock.advance(60)
    changed, stored = routes.query_data_version(CLUSTER, MASTER_ADDR, DataVersion(1700000000000, 1))
    assert not changed and stored == DataVersion(1700000000000, 1)
    clock.advance(100)
    assert routes.scan_not_active_brokers() == []
    clock.advance(21)
    assert len(routes.scan_not_active_brokers()) == 1


def test_query_data_version_of_unknown_broker(routes):
    assert routes.query_data_version(CLUSTER, MASTER_ADDR, DataVersion(1, 1)) == (True, None)
    assert not routes.broker_heartbeat(CLUSTER, MASTER_ADDR)
    register(routes, "T")
    assert routes.query_data_version(CLUSTER, MASTER_ADDR, None)[0] is True
    assert routes.query_data_version(CLUSTER, MASTER_ADDR, DataVersion(1, 1))[0] is True


def test_per_broker_heartbeat_timeout(routes, clock):
    register(routes, "T", timeout=10000)
    register(routes, "U", name="broker-b", addr="127.0.0.1:10912")
    clock.advance(11)
    assert [e.broker_name for e in routes.scan_not_active_brokers()] == [BROKER]
    assert routes.topic_names() == ["U", "baseTopic"]


def test_re_registration_resets_the_deadline(routes, clock):
    register(routes, "T", timeout=30000)
    clock.advance(25)
    register(routes, "T", timeout=30000)
    clock.advance(25)
    assert routes.scan_not_active_brokers() == []
    clock.advance(6)
    assert len(routes.scan_not_active_brokers()) == 1


def test_expired_member_whose_address_was_taken_over_only_loses_its_live_entry(routes, clock):
    register(routes, "t0", addr="m:1", acting=False)
    register(routes, "t0", addr="s:1", broker_id=1, acting=False)
    clock.advance(60)
    register(routes, "t0", addr="s:1", broker_id=0, acting=False)  # slave takes over id 0
    clock.advance(61)
    expired = routes.scan_not_active_brokers()
    assert [(e.broker_addr, e.broker_id) for e in expired] == [("m:1", 0)]
    assert addrs_of(routes, "t0") == {0: "s:1"}
    assert (CLUSTER, "m:1") not in routes.broker_live_table


def test_scan_does_not_walk_the_live_table(routes, clock):
    """PITFALLS 9: the scan's cost follows what expires, not the fleet."""
    for i in range(200):
        register(routes, "T%d" % i, name="b%d" % i, addr="127.0.0.1:%d" % (20000 + i))

    class NoWalk(dict):
        armed = True

        def __iter__(self):
            if self.armed:
                raise AssertionError("scan walked the live table")
            return dict.__iter__(self)

        def items(self):
            if self.armed:
                raise AssertionError("scan walked the live table")
            return dict.items(self)
        values = keys = items

    table = routes.broker_live_table = NoWalk(routes.broker_live_table)
    clock.advance(60)
    assert routes.scan_not_active_brokers() == []
    table.armed = False
    routes.broker_live_table = dict(dict.items(table))


def test_heap_stays_bounded_under_frequent_re_registration(routes, clock):
    for _ in range(100):
        register(routes, "T")
        clock.advance(30)
        routes.scan_not_active_brokers()
    assert len(routes.tables.deadlines) <= 6


def test_restored_broker_without_connection_expires(routes, clock):
    register(routes, "T", conn=None)
    clock.advance(121)
    expired = routes.scan_not_active_brokers()
    assert len(expired) == 1 and expired[0].connection is None
