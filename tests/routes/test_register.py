"""REGISTER_BROKER semantics (behaviour.md §3), scenarios of RouteInfoManagerNewTest & co."""

import pytest

from namesrv.routes.model import PERM_READ, PERM_WRITE, DataVersion
from tests.routes.helpers import (
    BROKER, CLUSTER, MASTER_ADDR, MASTER_HA, SLAVE_ADDR, SLAVE_HA, FakeConnection, addrs_of, new_routes, perm_of, register,
    wrapper)


@pytest.fixture
def routes():
    routes = new_routes()
    yield routes
    routes.check_invariants()


def master(routes, *topics, **kw):
    kw.setdefault("ha", MASTER_HA)
    kw.setdefault("acting", True)
    return register(routes, *topics, **kw)


def slave(routes, *topics, **kw):
    kw.setdefault("ha", SLAVE_HA)
    kw.setdefault("acting", True)
    return register(routes, *topics, addr=SLAVE_ADDR, broker_id=1, **kw)


def test_master_then_slave_result_carries_master_addresses(routes):
    result = master(routes, "TestTopic")
    assert (result.master_addr, result.ha_server_addr, result.first, result.changed) == (None, None, True, True)
    result = slave(routes, "TestTopic")
    assert (result.master_addr, result.ha_server_addr) == (MASTER_ADDR, MASTER_HA)


def test_slave_without_live_master_gets_no_master_address(routes):
    master(routes, "T")
    routes.broker_live_table.pop((CLUSTER, MASTER_ADDR))  # the master's liveness vanished
    routes.tables.by_connection.clear()
    result = slave(routes, "T")
    assert result.master_addr is None and result.ha_server_addr is None


NEW_MASTER = "127.0.0.1:50911"
NEW_MASTER_HA = "127.0.0.1:50912"


def controller_group(routes, hinted):
    """A controller-mode group as a name server cut off from its new master sees it: the new master is
    live here only as the slave it was (id 2), no id 0; the process's controller names ``hinted``."""
    register(routes, "T", addr=NEW_MASTER, broker_id=2, ha=NEW_MASTER_HA)
    asked = []
    routes.registrations.master_hint = lambda name: asked.append(name) or hinted
    return asked


def test_a_slave_with_no_master_here_is_told_the_one_its_controller_committed(routes):
    asked = controller_group(routes, NEW_MASTER)
    result = slave(routes, "T")
    assert (result.master_addr, result.ha_server_addr) == (NEW_MASTER, NEW_MASTER_HA)
    assert asked == [BROKER]
    result = slave(routes, "T")   # unchanged: the short path answers the same
    assert (result.first, result.changed, result.master_addr) == (False, False, NEW_MASTER)


def test_the_controllers_master_is_not_named_to_itself_nor_without_a_live_entry_here(routes):
    controller_group(routes, SLAVE_ADDR)   # a member behind the log: the asker was the master
    assert slave(routes, "T").master_addr is None
    routes.registrations.master_hint = lambda name: "127.0.0.1:60911"   # never registered here
    result = slave(routes, "T", counter=2)
    assert result.master_addr is None and result.ha_server_addr is None


def test_a_master_registered_here_is_named_whatever_the_controller_says(routes):
    master(routes, "T")
    controller_group(routes, NEW_MASTER)
    assert slave(routes, "T").master_addr == MASTER_ADDR


def test_without_a_controller_in_the_process_a_slave_with_no_master_here_gets_none(routes):
    register(routes, "T", addr=NEW_MASTER, broker_id=2, ha=NEW_MASTER_HA)
    result = slave(routes, "T")
    assert result.master_addr is None and result.ha_server_addr is None


def test_slave_registration_adds_its_address_not_queue_data(routes):
    master(routes, "TestTopic")
    assert set(addrs_of(routes, "TestTopic")) == {0}
    slave(routes, "TestTopic", acting=None)  # a 4.x slave never writes queue data
    assert addrs_of(routes, "TestTopic") == {0: MASTER_ADDR, 1: SLAVE_ADDR}
    assert list(routes.topic_queue_table["TestTopic"]) == [BROKER]


def test_new_topic_of_master_is_routed_to_the_whole_group(routes):
    master(routes, "TestTopic")
    slave(routes, "TestTopic")
    master(routes, "TestTopic", "TestTopic1", counter=2)
    assert addrs_of(routes, "TestTopic1") == {0: MASTER_ADDR, 1: SLAVE_ADDR}


def test_4x_slave_alone_writes_no_queue_data(routes):
    slave(routes, "T", acting=None)
    assert routes.pickup_topic_route("T") is None


def test_only_slave_broker_becomes_read_only_prime_slave(routes):
    """registerOnlySlaveBroker."""
    slave(routes, "TestTopic")
    route = routes.pickup_topic_route("TestTopic", support_acting_master=True)
    assert route is not None and not route.queue_datas[0].perm & PERM_WRITE
    assert routes.unregister_broker(CLUSTER, SLAVE_ADDR, BROKER, 1)

    master(routes, "TestTopic")
    slave(routes, "TestTopic")
    assert perm_of(routes, "TestTopic") & PERM_WRITE
    routes.unregister_broker(CLUSTER, MASTER_ADDR, BROKER, 0)
    assert not perm_of(routes, "TestTopic") & PERM_WRITE
    master(routes, "TestTopic")  # the master is back: registerFirst for id 0 rewrites perm
    assert perm_of(routes, "TestTopic") & PERM_WRITE


def test_5x_prime_slave_without_acting_master_keeps_its_own_perm(routes):
    slave(routes, "T", acting=False)
    assert perm_of(routes, "T") == 6


def test_switch_broker_role(routes):
    master(routes, "TestTopic", acting=False)
    slave(routes, "TestTopic", acting=False)
    routes.unregister_broker(CLUSTER, MASTER_ADDR, BROKER, 0)
    assert addrs_of(routes, "TestTopic") == {1: SLAVE_ADDR}
    register(routes, "TestTopic", addr=SLAVE_ADDR, broker_id=0, counter=2, acting=False)
    assert addrs_of(routes, "TestTopic") == {0: SLAVE_ADDR}
    register(routes, "TestTopic", addr=MASTER_ADDR, broker_id=1, counter=2, acting=False)
    assert addrs_of(routes, "TestTopic") == {0: SLAVE_ADDR, 1: MASTER_ADDR}


def test_master_change_from_slave_address(routes):
    """RouteInfoManagerBrokerRegisterTest.testMasterChangeFromSlave: id 1's address becomes id 0."""
    for broker_id in range(3):
        register(routes, "t0", addr="cluster-broker-0:%d" % broker_id, broker_id=broker_id, acting=False)
    register(routes, "t0", addr="cluster-broker-0:1", broker_id=0, acting=False)
    assert addrs_of(routes, "t0") == {0: "cluster-broker-0:1", 2: "cluster-broker-0:2"}


def test_unchanged_data_version_skips_topics_it_already_has(routes):
    master(routes, "A", counter=1)
    routes.add_write_perm_of_broker(BROKER)
    routes.wipe_write_perm_of_broker(BROKER)
    result = master(routes, "A", counter=1)
    assert not result.changed and not result.first
    assert perm_of(routes, "A") == PERM_READ  # not re-applied: cheap heartbeat
    master(routes, "A", counter=2)
    assert perm_of(routes, "A") == 6


def test_split_registrations_with_one_data_version_merge(routes):
    """5.x enableSplitRegistration: parts carry the same DataVersion and must all land."""
    part1 = wrapper(*["P%d" % i for i in range(3)], counter=7)
    part2 = wrapper(*["P%d" % i for i in range(3, 6)], counter=7)
    routes.register_broker(CLUSTER, MASTER_ADDR, BROKER, 0, MASTER_HA, part1, [], None, enable_acting_master=False)
    routes.register_broker(CLUSTER, MASTER_ADDR, BROKER, 0, MASTER_HA, part2, [], None, enable_acting_master=False)
    assert routes.topic_names() == ["P%d" % i for i in range(6)]


def test_deleted_topic_comes_back_with_the_next_registration(routes):
    master(routes, "TestTopic")
    routes.delete_topic("TestTopic")
    assert routes.pickup_topic_route("TestTopic") is None
    master(routes, "TestTopic")  # same DataVersion: 5.x adds topics missing for this broker
    assert routes.pickup_topic_route("TestTopic") is not None


def test_single_topic_registration_of_unknown_broker_is_refused_without_a_trace(routes):
    result = routes.register_broker(CLUSTER, MASTER_ADDR, BROKER, 0, MASTER_HA, wrapper("Only"), [], FakeConnection())
    assert result is None
    assert routes.broker_addr_table == {} and routes.cluster_addr_table == {} and routes.broker_live_table == {}
    master(routes, "X")
    assert routes.register_broker(CLUSTER, MASTER_ADDR, BROKER, 0, MASTER_HA, wrapper("Only"), [], None) is not None
    assert routes.register_broker(CLUSTER, SLAVE_ADDR, BROKER, 1, SLAVE_HA, wrapper("Only"), [], None) is None


def test_stale_address_guard_keeps_the_newer_member(routes):
    register(routes, "T", addr="new:1", state=5, acting=True)
    result = register(routes, "T", addr="old:1", state=3, acting=True, conn=FakeConnection())
    assert result.stale and result.master_addr is None
    assert addrs_of(routes, "T") == {0: "new:1"}
    assert (CLUSTER, "old:1") not in routes.broker_live_table
    result = register(routes, "T", addr="newest:1", state=6, acting=True)
    assert not result.stale and addrs_of(routes, "T") == {0: "newest:1"}


def test_same_address_in_two_clusters_is_two_live_entries(routes):
    """RouteInfoManagerTest.testQueryBrokerTopicConfig."""
    routes.register_broker("default-cluster", "127.0.0.1:10911", "default-broker", 1234, "127.0.0.1:1001",
                           wrapper("unit-test-0", "unit-test-1", counter=10, timestamp=100), [], None,
                           enable_acting_master=False)
    routes.register_broker("default-cluster-1", "127.0.0.1:10911", "default-broker-1", 1234, "127.0.0.1:1001",
                           wrapper("unit-test-0", "unit-test-1", counter=20, timestamp=200), [], None,
                           enable_acting_master=False)
    assert routes.query_broker_data_version("default-cluster", "127.0.0.1:10911") == DataVersion(100, 10)
    assert routes.query_broker_data_version("default-cluster-1", "127.0.0.1:10911") == DataVersion(200, 20)
    routes.unregister_broker("default-cluster-1", "127.0.0.1:10911", "default-broker-1", 1234)
    assert routes.query_broker_data_version("default-cluster", "127.0.0.1:10911") is not None
    assert routes.query_broker_data_version("default-cluster-1", "127.0.0.1:10911") is None


def test_is_broker_topic_config_changed(routes):
    master(routes, "TestTopic", counter=1)
    stored = routes.query_broker_data_version(CLUSTER, MASTER_ADDR)
    assert not routes.is_broker_topic_config_changed(CLUSTER, MASTER_ADDR, stored)
    assert routes.is_broker_topic_config_changed(CLUSTER, MASTER_ADDR, DataVersion(stored.timestamp + 1, 1))
    assert routes.is_broker_topic_config_changed(CLUSTER, MASTER_ADDR, DataVersion(stored.timestamp, 2))
    assert routes.is_broker_topic_config_changed(CLUSTER, MASTER_ADDR,
                                                 DataVersion(stored.timestamp, 1, state_version=1))
    assert routes.is_broker_topic_config_changed(CLUSTER, "unknown:1", stored)


def test_delete_topic_with_broker_registration(routes):
    master(routes, "TestTopic", "TestTopic1", delete_topics=True)
    master(routes, "TestTopic1", delete_topics=True)
    assert routes.pickup_topic_route("TestTopic") is None
    assert routes.pickup_topic_route("TestTopic1") is not None


def test_keep_topic_without_delete_option(routes):
    master(routes, "TestTopic", "TestTopic1")
    master(routes, "TestTopic1")
    assert routes.pickup_topic_route("TestTopic") is not None


def test_delete_topic_with_broker_registration_two_brokers(routes):
    master(routes, "TestTopic", "TestTopic1", delete_topics=True)
    master(routes, "TestTopic", "TestTopic1", name="broker-b", addr="127.0.0.1:10919", delete_topics=True)
    master(routes, "TestTopic1", delete_topics=True)
    assert routes.topic_broker_names("TestTopic") == ["broker-b"]
    assert routes.topic_broker_names("TestTopic1") == [BROKER, "broker-b"]
    master(routes, "TestTopic1", name="broker-b", addr="127.0.0.1:10919", delete_topics=True)
    assert routes.pickup_topic_route("TestTopic") is None


def test_delete_option_is_off_while_static_topics_are_registered(routes):
    mapping = {"S": {"bname": BROKER, "currIdMap": {0: 0}, "topic": "S", "totalQueues": 1, "epoch": 1}}
    master(routes, "A", "S", delete_topics=True, mappings=mapping)
    master(routes, "S", delete_topics=True, mappings=mapping, counter=2)
    assert routes.pickup_topic_route("A") is not None


def test_register_single_topic_with_broker_registration(routes):
    routes.register_topic("TestTopic", [_qd()])
    assert routes.pickup_topic_route("TestTopic") is None
    master(routes, "TestTopic", delete_topics=True)
    routes.register_topic("TestTopic1", [_qd()])
    assert routes.pickup_topic_route("TestTopic1") is not None
    master(routes, "TestTopic", "TestTopic1", delete_topics=True)
    assert routes.pickup_topic_route("TestTopic1") is not None
    master(routes, "TestTopic", delete_topics=True)
    assert routes.pickup_topic_route("TestTopic1") is None
    routes.register_topic("TestTopic1", [_qd()])
    routes.unregister_broker(CLUSTER, MASTER_ADDR, BROKER, 0)
    assert routes.pickup_topic_route("TestTopic") is None and routes.pickup_topic_route("TestTopic1") is None


def _qd(name=BROKER):
    from namesrv.routes.model import QueueData
    return QueueData(name, 8, 8, 6, 0)


def test_static_topic_mapping_is_in_the_route(routes):
    info = {"bname": BROKER, "currIdMap": {0: 0, 1: 1}, "dirty": False, "epoch": 3, "scope": "__global__",
            "topic": "S", "totalQueues": 2}
    master(routes, "S", mappings={"S": info})
    route = routes.pickup_topic_route("S")
    assert route.topic_queue_mapping_by_broker == {BROKER: info}
    route.topic_queue_mapping_by_broker[BROKER]["currIdMap"][5] = 5
    assert 5 not in routes.topic_queue_mapping_info_table["S"][BROKER]["currIdMap"]
    assert b'"currIdMap":{0:0,1:1}' in routes.route_body("S", standard=False)
    assert b'"currIdMap":{"0":0,"1":1}' in routes.route_body("S", standard=True)


def test_registering_a_known_broker_under_another_cluster_keeps_its_cluster(routes):
    master(routes, "T")
    register(routes, "T", cluster="Other", counter=2)
    assert routes.broker_addr_table[BROKER].cluster == CLUSTER
    assert BROKER in routes.cluster_addr_table["Other"] and BROKER in routes.cluster_addr_table[CLUSTER]


def test_zone_and_acting_master_flags_follow_the_latest_registration(routes):
    register(routes, "T", acting=True, zone="zone-1")
    bd = routes.broker_addr_table[BROKER]
    assert bd.enable_acting_master and bd.zone_name == "zone-1"
    register(routes, "T")
    assert not bd.enable_acting_master and bd.zone_name is None


def test_cluster_of_three_groups(routes):
    """RouteInfoManagerStaticRegisterTest: 3 broker names x 3 members, 10 topics."""
    topics = ["topic-%d" % i for i in range(10)]
    for b in range(3):
        for broker_id in range(3):
            register(routes, *topics, name="broker-%d" % b, addr="cluster-broker-%d:%d" % (b, broker_id),
                     broker_id=broker_id, cluster="cluster", acting=False, base_topic=False)
    _, clusters = routes.get_all_cluster_info()
    assert clusters == {"cluster": {"broker-0", "broker-1", "broker-2"}}
    assert routes.topic_names() == sorted(topics)
    assert routes.topics_by_cluster("cluster") == sorted(topics)
    route = routes.pickup_topic_route("topic-0")
    assert [(bd.broker_name, bd.broker_addrs) for bd in route.broker_datas] == [
        ("broker-%d" % b, {i: "cluster-broker-%d:%d" % (b, i) for i in range(3)}) for b in range(3)]
    assert [(qd.read_queue_nums, qd.write_queue_nums, qd.perm) for qd in route.queue_datas] == [(8, 8, 6)] * 3
    routes.unregister_broker("cluster", "cluster-broker-0:2", "broker-0", 2)
    assert 2 not in routes.broker_addr_table["broker-0"].broker_addrs
