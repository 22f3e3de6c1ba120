"""Route answers, topic lists, permissions, delete/register topic (behaviour.md §7-§11)."""

import pytest

from namesrv.codec import fastjson
from namesrv.protocol.codec import decode_frame
from namesrv.routes.bodies import decode
from namesrv.routes.model import PERM_READ, PERM_WRITE, QueueData
from namesrv.routes.queries import filter_by_zone
from tests.routes.helpers import (
    BROKER, CLUSTER, MASTER_ADDR, SLAVE_ADDR, FakeConnection, new_routes, perm_of, register, topic)
from tests.vectors import vector


@pytest.fixture
def routes():
    routes = new_routes()
    yield routes
    routes.check_invariants()


def test_pickup_route_of_one_and_two_brokers(routes):
    register(routes, "TestTopic")
    route = routes.pickup_topic_route("TestTopic")
    assert [(bd.broker_name, bd.broker_addrs) for bd in route.broker_datas] == [(BROKER, {0: MASTER_ADDR})]
    qd = route.queue_datas[0]
    assert (qd.broker_name, qd.read_queue_nums, qd.write_queue_nums, qd.perm) == (BROKER, 8, 8, 6)
    register(routes, "TestTopic", name="AnotherBroker", addr="127.0.0.1:10999")
    route = routes.pickup_topic_route("TestTopic")
    assert route.broker_names() == ["AnotherBroker", BROKER]
    assert sorted(qd.broker_name for qd in route.queue_datas) == ["AnotherBroker", BROKER]
    assert routes.pickup_topic_route("unit_test") is None


def test_answers_are_copies(routes):
    register(routes, "T", acting=True)
    route = routes.pickup_topic_route("T")
    register(routes, "T", addr=SLAVE_ADDR, broker_id=1, acting=True)
    routes.wipe_write_perm_of_broker(BROKER)
    assert route.broker_datas[0].broker_addrs == {0: MASTER_ADDR}
    assert route.queue_datas[0].perm == 6
    route.broker_datas[0].broker_addrs[7] = "x"
    assert 7 not in routes.broker_addr_table[BROKER].broker_addrs


@pytest.mark.parametrize("queues", [8, 1], ids=["partition-order", "global-order"])
def test_order_topic_routes_with_acting_master(routes, queues):
    """pickupPartitionOrderTopicRouteData / pickupGlobalOrderTopicRouteData."""
    t = topic("OrderTopic", queues=queues)

    def reg(name=BROKER, addr=MASTER_ADDR, broker_id=0):
        register(routes, t, name=name, addr=addr, broker_id=broker_id, acting=True)

    reg(addr=SLAVE_ADDR, broker_id=1)
    first = routes.pickup_topic_route("OrderTopic", support_acting_master=True)
    assert first.broker_datas[0].broker_addrs == {0: SLAVE_ADDR}
    assert not first.queue_datas[0].perm & PERM_WRITE
    routes.unregister_broker(CLUSTER, SLAVE_ADDR, BROKER, 1)

    reg(addr=SLAVE_ADDR, broker_id=1)
    reg()
    routes.unregister_broker(CLUSTER, MASTER_ADDR, BROKER, 0)
    route = routes.pickup_topic_route("OrderTopic", support_acting_master=True)
    assert route.broker_datas[0].broker_addrs == {0: SLAVE_ADDR}
    assert not route.queue_datas[0].perm & PERM_WRITE
    assert first.broker_datas[0].broker_addrs == {0: SLAVE_ADDR}  # an old answer never changes
    routes.unregister_broker(CLUSTER, SLAVE_ADDR, BROKER, 1)

    reg(addr=SLAVE_ADDR, broker_id=1)
    reg()
    reg(name="broker-b", addr="127.0.0.1:11911")
    reg(name="broker-b", addr="127.0.0.1:31911", broker_id=1)
    routes.unregister_broker(CLUSTER, MASTER_ADDR, BROKER, 0)
    route = routes.pickup_topic_route("OrderTopic", support_acting_master=True)
    assert [bd.broker_addrs for bd in route.broker_datas] == [
        {0: SLAVE_ADDR}, {0: "127.0.0.1:11911", 1: "127.0.0.1:31911"}]
    assert len(route.queue_datas) == 2


def test_acting_master_rewrite_skips_sync_member_topics(routes):
    register(routes, "rmq_sys_SYNC_BROKER_MEMBER_x", addr=SLAVE_ADDR, broker_id=1, acting=True)
    route = routes.pickup_topic_route("rmq_sys_SYNC_BROKER_MEMBER_x", support_acting_master=True)
    assert route.broker_datas[0].broker_addrs == {1: SLAVE_ADDR}


def test_wipe_and_add_write_perm_count_every_topic(routes):
    register(routes, "TestTopic", "ReadOnly")
    routes.wipe_write_perm_of_broker(BROKER)
    assert perm_of(routes, "TestTopic") == PERM_READ
    assert routes.wipe_write_perm_of_broker(BROKER) == 3  # counted even when already clear
    assert routes.add_write_perm_of_broker(BROKER) == 3
    assert perm_of(routes, "ReadOnly") == PERM_READ | PERM_WRITE
    assert routes.wipe_write_perm_of_broker("unknown") == 0 and routes.add_write_perm_of_broker("unknown") == 0


def test_add_write_perm_overwrites_rather_than_or(routes):
    register(routes, topic("Inherit", perm=7))
    register(routes, "Other", name="broker-b", addr="127.0.0.1:2")
    routes.add_write_perm_of_broker(BROKER)
    assert perm_of(routes, "Inherit") == 6


def test_delete_topic_everywhere_and_per_cluster(routes):
    register(routes, "TestTopic")
    register(routes, "TestTopic", cluster="AnotherCluster", name="AnotherBroker", addr="127.0.0.1:2")
    routes.delete_topic("TestTopic", CLUSTER)
    assert routes.topic_broker_names("TestTopic") == ["AnotherBroker"]
    routes.delete_topic("TestTopic", "NoSuchCluster")
    assert routes.topic_broker_names("TestTopic") == ["AnotherBroker"]
    routes.delete_topic("TestTopic", "AnotherCluster")
    assert "TestTopic" not in routes.topic_queue_table
    register(routes, "X", counter=2)
    routes.delete_topic("X")
    routes.delete_topic("never-there")
    assert routes.pickup_topic_route("X") is None


def test_register_topic_rules(routes):
    register(routes, "T")
    assert routes.register_topic("New", [QueueData("unknown", 1, 1, 6)]) == 0
    assert "New" not in routes.topic_queue_table
    assert routes.register_topic("New", [QueueData(BROKER, 2, 2, 6), QueueData("unknown", 1, 1, 6)]) == 0
    assert routes.register_topic("New", []) == 0
    assert routes.register_topic("New", [QueueData(BROKER, 2, 2, 6)]) == 1
    register(routes, "T", name="broker-b", addr="127.0.0.1:2")
    # Existing topic: stored in order until the first unknown broker.
    stored = routes.register_topic("New", [QueueData("broker-b", 3, 3, 6), QueueData("ghost", 1, 1, 6),
                                           QueueData(BROKER, 9, 9, 6)])
    assert stored == 1
    assert routes.topic_queue_table["New"][BROKER].read_queue_nums == 2
    assert routes.topic_queue_table["New"]["broker-b"].read_queue_nums == 3


def test_topic_lists(routes):
    register(routes, topic("Unit", sys_flag=1), topic("UnitSub", sys_flag=3), topic("SubOnly", sys_flag=2), "Plain")
    register(routes, "Other", cluster="C2", name="broker-b", addr="127.0.0.1:2")
    assert routes.topic_names() == ["Other", "Plain", "SubOnly", "Unit", "UnitSub", "baseTopic"]
    assert routes.unit_topics() == ["Unit", "UnitSub"]
    assert routes.has_unit_sub_topics() == ["SubOnly", "UnitSub"]
    assert routes.has_unit_sub_ununit_topics() == ["SubOnly"]
    assert routes.topics_by_cluster("C2") == ["Other", "baseTopic"]
    assert routes.topics_by_cluster("nope") == []
    topics, addr = routes.system_topic_list()
    assert topics == sorted([CLUSTER, "C2", BROKER, "broker-b"]) and addr == MASTER_ADDR
    assert fastjson.loads(routes.all_topic_list_body())["topicList"] == routes.topic_names()


def test_empty_tables(routes):
    assert routes.cluster_info_body() == b'{"brokerAddrTable":{},"clusterAddrTable":{}}'
    assert routes.all_topic_list_body() == b'{"topicList":[]}'
    assert routes.system_topic_list() == ([], None)
    assert routes.broker_member_group("c", "b") == {}


def test_broker_member_group(routes):
    register(routes, "T")
    register(routes, "T", addr=SLAVE_ADDR, broker_id=1)
    group = routes.broker_member_group("any-cluster", BROKER)
    assert group == {0: MASTER_ADDR, 1: SLAVE_ADDR}
    group[5] = "x"
    assert 5 not in routes.broker_addr_table[BROKER].broker_addrs


def _replay_vectors(routes):
    conns = {}
    for name in ("req_register_plain_json", "req_register_compressed_json", "req_register_slave_rocketmq"):
        req = decode_frame(vector(name)[4:])
        body = decode.decode_register_broker_body(req.body, req.get_bool("compressed"), req.version)
        conns[name] = FakeConnection()
        result = routes.register_broker(req.ext["clusterName"], req.ext["brokerAddr"], req.ext["brokerName"],
                                        int(req.ext["brokerId"]), req.ext["haServerAddr"], body.topic_config_wrapper,
                                        body.filter_server_list, conns[name])
        assert result is not None
    return conns


def _normalise(data):
    """Drop 5.x's extra field, sort arrays, make map keys strings: order and quoting are not meaning."""
    if isinstance(data, dict):
        return {str(k): _normalise(v) for k, v in data.items() if k != "enableActingMaster"}
    if isinstance(data, list):
        return sorted((_normalise(v) for v in data), key=repr)
    return data


@pytest.mark.parametrize("response", ["resp_route_json", "resp_route_rocketmq"])
def test_route_answer_means_what_java_answered(routes, response):
    _replay_vectors(routes)
    java = decode_frame(vector(response)[4:]).body
    ours = routes.route_body("VecTopicA", standard=True)
    assert _normalise(fastjson.loads(ours)) == _normalise(fastjson.loads(java))
    # Without 5.x's extra field, the very same bytes (Java's array order is a HashMap's).
    assert sorted(ours.replace(b',"enableActingMaster":false', b"")) == sorted(java)
    assert b'"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10921"}' in ours


def test_cluster_info_means_what_java_answered(routes):
    _replay_vectors(routes)
    java = decode_frame(vector("resp_cluster_info_json")[4:]).body
    ours = routes.cluster_info_body()
    assert _normalise(fastjson.loads(ours)) == _normalise(fastjson.loads(java))
    assert b'"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"}' in ours
    assert sorted(ours.replace(b',"enableActingMaster":false', b"")) == sorted(java)


def test_plain_route_has_unquoted_keys_and_zone(routes):
    register(routes, "T", zone="z1")
    body = routes.route_body("T", standard=False)
    assert b'"brokerAddrs":{0:"127.0.0.1:10911"}' in body
    assert b'"enableActingMaster":false' in body and b'"zoneName":"z1"' in body
    assert b'"orderTopicConf"' not in body
    assert b'"orderTopicConf":"broker-a:8"' in routes.route_body("T", standard=False, order_topic_conf="broker-a:8")


def test_zone_filter_keeps_zone_and_masterless_groups(routes):
    register(routes, "T", name="a", addr="a:0", zone="zone-1", filters=["fa:1"])
    register(routes, "T", name="b", addr="b:0", zone="zone-2", filters=["fb:1"])
    register(routes, "T", name="c", addr="c:1", broker_id=1, zone="zone-2", acting=False)
    route = filter_by_zone(routes.pickup_topic_route("T"), "ZONE-1")
    assert route.broker_names() == ["a", "c"]
    assert sorted(qd.broker_name for qd in route.queue_datas) == ["a", "c"]
    assert route.filter_server_table == {"a:0": ["fa:1"]}


def test_filter_servers_are_routed_and_removed(routes):
    register(routes, "T", filters=["127.0.0.1:50001"])
    assert routes.pickup_topic_route("T").filter_server_table == {MASTER_ADDR: ["127.0.0.1:50001"]}
    register(routes, "T", filters=[])
    assert routes.pickup_topic_route("T").filter_server_table == {}
    assert routes.filter_server_table == {}
