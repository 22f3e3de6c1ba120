"""RouteProcessor: every request code as requests.md describes it, and the captured Java answers."""

import json

import pytest
from zope.interface.verify import verifyObject

from namesrv.codec import fastjson
from namesrv.interfaces import IRequestProcessor
from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode, SerializeType
from namesrv.protocol.command import HeaderFieldError
from processors.route import RouteProcessor
from tests.brokers import compressed_body, crc32, plain_body, register_request, route_request, topic_config
from tests.fakes import FakeConnection, topic_changes
from tests.processors.world import req, world  # noqa: F401 (fixtures)
from tests.vectors import vector


C = RequestCode


BROKER_EXT = {"brokerName": "broker", "brokerAddr": "10.10.1.1", "clusterName": "cluster", "brokerId": "2333"}


def test_provides_the_interface_and_declares_its_codes(world):
    verifyObject(IRequestProcessor, world.processor)
    assert world.processor.name == "route"
    assert C.REGISTER_BROKER in world.processor.codes and C.PUT_KV_CONFIG not in world.processor.codes
    assert world.processor.reject_request(route_request("x")) is None


# -- REGISTER_BROKER --------------------------------------------------------------------

def test_register_master_answers_empty_typed_header_and_routes(world):
    answer = world.call(register_request("DefaultCluster", "broker-a", "127.0.0.1:10911", topics=["A", "B"]))
    assert (answer.code, answer.remark, answer.ext, answer.body) == (ResponseCode.SUCCESS, None, {}, None)
    route = world.call(route_request("A"))
    assert route.code == ResponseCode.SUCCESS
    assert json.loads(route.body)["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.1:10911"}


def test_register_slave_gets_master_and_ha_address(world):
    world.call(register_request("C", "broker-a", "127.0.0.1:10911", topics=["A", "B"], ha_addr="127.0.0.1:10912"))
    answer = world.call(register_request("C", "broker-a", "127.0.0.1:10921", broker_id=1, topics=["A", "B"]),
                        FakeConnection(connection_id=2))
    assert answer.ext == {"haServerAddr": "127.0.0.1:10912", "masterAddr": "127.0.0.1:10911"}


def test_register_compressed(world):
    answer = world.call(register_request("C", "broker-z", "127.0.0.1:10999", topics=["Zed", "Zee"], compressed=True))
    assert answer.code == ResponseCode.SUCCESS
    assert world.routes.topic_broker_names("Zed") == ["broker-z"]


def test_register_returns_order_topic_config(world):
    world.context.kv.table["ORDER_TOPIC_CONFIG"] = {"A": "broker-a:4"}
    answer = world.call(register_request("C", "broker-a", "127.0.0.1:10911", topics=["A", "B"]))
    assert answer.body == b'{"table":{"A":"broker-a:4"}}'
    world.context.config.update({"returnOrderTopicConfigToBroker": "false"})
    assert world.call(register_request("C", "broker-a", "127.0.0.1:10911", topics=["A", "B"])).body is None


def test_register_with_sample_java_header_files_topics_under_their_keys(world):
    """RequestProcessorTest.testProcessRequest_RegisterBroker: TopicConfigs without topicName."""
    body = (b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":0,"stateVersion":0,'
            b'"timestamp":1},"topicConfigTable":{"unit-test1":{"order":false,"perm":6,"readQueueNums":16,'
            b'"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"writeQueueNums":16},"unit-test2":{}}}}')
    ext = dict(BROKER_EXT, haServerAddr="10.10.2.1", bodyCrc32=str(crc32(body)))
    answer = world.call(req(C.REGISTER_BROKER, ext, body))
    assert answer.code == ResponseCode.SUCCESS and answer.remark is None
    assert world.routes.broker_addr_table["broker"].broker_addrs == {2333: "10.10.1.1"}
    # A 4.x slave (no enableActingMaster header) writes no queue data.
    assert world.routes.topic_names() == []
    answer = world.call(req(C.UNREGISTER_BROKER, BROKER_EXT))
    assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, None)
    assert world.routes.broker_addr_table == {}  # applied before answering (5.x queues it)


def test_crc_mismatch_changes_nothing(world):
    request = register_request("C", "broker-a", "127.0.0.1:10911", topics=["A", "B"])
    request.ext["bodyCrc32"] = str(int(request.ext["bodyCrc32"]) ^ 1)
    answer = world.call(request)
    assert answer.code == ResponseCode.SYSTEM_ERROR and answer.remark.startswith("crc32 not match: the body's CRC32 is")
    assert world.routes.broker_addr_table == {}
    request.ext["bodyCrc32"] = "0"  # 0: not checked
    assert world.call(request).code == ResponseCode.SUCCESS


@pytest.mark.parametrize("body,compressed", [
    (b'{"topicConfigSerializeWrapper":', False),
    (b"\x78\xda garbage", True),
    (compressed_body([topic_config("A"), topic_config("B")])[:20], True),
    (b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"A":{"perm":"x"}}}}', False),
])
def test_undecodable_body_answers_system_error_and_changes_nothing(world, body, compressed):
    ext = {"brokerName": "b", "brokerAddr": "h:1", "clusterName": "c", "haServerAddr": "h:2", "brokerId": "0",
           "compressed": "true" if compressed else "false", "bodyCrc32": str(crc32(body))}
    answer = world.call(req(C.REGISTER_BROKER, ext, body, version=409))
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark.startswith("Failed to decode RegisterBrokerBody")
    assert world.routes.broker_addr_table == {} and world.routes.cluster_addr_table == {}


@pytest.mark.parametrize("missing", ["brokerName", "brokerAddr", "clusterName", "haServerAddr", "brokerId"])
def test_missing_required_register_field_is_named(world, missing):
    request = register_request("C", "broker-a", "127.0.0.1:10911", topics=["A", "B"])
    del request.ext[missing]
    with pytest.raises(HeaderFieldError) as error:
        world.call(request)
    assert error.value.field == missing and missing in str(error.value)
    assert world.routes.broker_addr_table == {}


def test_non_numeric_broker_id_is_an_error(world):
    request = register_request("C", "broker-a", "127.0.0.1:10911", topics=["A", "B"])
    request.ext["brokerId"] = "master"
    with pytest.raises(HeaderFieldError, match="brokerId"):
        world.call(request)
    request.ext["brokerId"] = "0"
    request.ext["bodyCrc32"] = "abc"
    with pytest.raises(HeaderFieldError, match="bodyCrc32"):
        world.call(request)
    assert world.routes.broker_addr_table == {}


def test_single_topic_registration_of_unregistered_broker_fails(world):
    answer = world.call(register_request("C", "broker-a", "127.0.0.1:10911", topics=["Only"]))
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark.startswith("register broker failed: broker broker-a id 0 at 127.0.0.1:10911 is not "
                                    "registered here and sent a registration with a single topic")
    assert world.routes.broker_addr_table == {}


def test_absent_body_registers_an_empty_broker(world):
    ext = {"brokerName": "b", "brokerAddr": "h:1", "clusterName": "c", "haServerAddr": "h:2", "brokerId": "0"}
    assert world.call(req(C.REGISTER_BROKER, ext)).code == ResponseCode.SUCCESS
    assert world.routes.broker_addr_table["b"].broker_addrs == {0: "h:1"}


def test_legacy_version_reads_a_bare_wrapper(world):
    body = b'{"dataVersion":{"counter":1,"timestamp":2},"topicConfigTable":{"A":{"topicName":"A"},"B":{}}}'
    ext = {"brokerName": "b", "brokerAddr": "h:1", "clusterName": "c", "haServerAddr": "h:2", "brokerId": "0"}
    assert world.call(req(C.REGISTER_BROKER, ext, body, version=36)).code == ResponseCode.SUCCESS
    assert world.routes.topic_names() == ["A", "B"]


def test_5x_headers_acting_master_zone_and_timeout(world):
    request = register_request("C", "broker-a", "127.0.0.1:10921", broker_id=1, topics=["A", "B"], version=479,
                               extra_ext={"enableActingMaster": "true", "__ZONE_NAME": "zone-1",
                                          "heartbeatTimeoutMillis": "10000"})
    assert world.call(request).code == ResponseCode.SUCCESS
    broker_data = world.routes.broker_addr_table["broker-a"]
    assert broker_data.enable_acting_master and broker_data.zone_name == "zone-1"
    assert world.routes.topic_queue_table["A"]["broker-a"].perm == 4  # prime slave, read-only
    world.clock.advance(11)
    assert len(world.routes.scan_not_active_brokers()) == 1


def test_registration_events(world):
    world.call(register_request("C", "broker-a", "127.0.0.1:10911", topics=["A", "B"], counter=3))
    world.call(register_request("C", "broker-a", "127.0.0.1:10911", topics=["A", "B"], counter=3))
    first, = world.events.named("broker_registered")
    again, = world.events.named("broker_heartbeat")
    assert {k: v for k, v in first.items() if k not in ("us", "bodyBytes")} == {
        "cluster": "C", "brokerName": "broker-a", "brokerId": 0, "brokerAddr": "127.0.0.1:10911", "topics": 2,
        "dataVersion": {"timestamp": 1700000000000, "counter": 3}, "changed": True, "compressed": False}
    assert first["bodyBytes"] > 100 and isinstance(first["us"], int) and first["us"] >= 0
    assert again["changed"] is False
    assert {e["topic"] for e in topic_changes(world.events.named("topic_route_changed"))} == {"A", "B"}


def test_a_registration_that_makes_a_new_master_logs_the_route_change(world):
    a, b = "127.0.0.1:10911", "127.0.0.1:10921"
    register = lambda addr, broker_id, epoch, counter, connection_id: world.call(  # noqa: E731
        register_request("C", "broker-a", addr, broker_id=broker_id, topics=["A", "B"], counter=counter,
                         state_version=epoch), FakeConnection(connection_id=connection_id))
    register(a, 0, 1, 1, 1)      # the group's first master
    register(a, 0, 1, 1, 1)      # its heartbeat: no change
    register(b, 1, 1, 1, 2)      # a slave: no change
    register(b, 0, 2, 2, 2)      # the slave, elected: the route names it
    register(a, 0, 1, 2, 1)      # the old master's late registration from epoch 1: refused, no change
    register(a, 1, 2, 3, 1)      # it comes back as the slave: no change
    assert [(e["masterAddress"], e["masterBrokerId"], e["masterEpoch"], e["trigger"])
            for e in world.events.named("route_master_changed")] == [(a, 0, 1, "registration"),
                                                                     (b, 0, 2, "registration")]
    assert world.events.named("route_master_changed")[0]["cluster"] == "C"


# -- UNREGISTER / connection ------------------------------------------------------------

def test_unregister_requires_fields_and_emits(world):
    world.call(register_request("C", "broker-a", "127.0.0.1:10911", topics=["A", "B"]))
    with pytest.raises(HeaderFieldError, match="brokerId"):
        world.call(req(C.UNREGISTER_BROKER, {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911",
                                             "clusterName": "C"}))
    assert world.routes.topic_names() == ["A", "B"]
    ext = {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "C", "brokerId": "0"}
    assert world.call(req(C.UNREGISTER_BROKER, ext)).code == ResponseCode.SUCCESS
    assert world.routes.topic_names() == []
    assert world.events.named("broker_unregistered") == [
        {"cluster": "C", "brokerName": "broker-a", "brokerId": 0, "brokerAddr": "127.0.0.1:10911",
         "reason": "request"}]
    assert world.call(req(C.UNREGISTER_BROKER, ext)).code == ResponseCode.SUCCESS
    assert len(world.events.named("broker_unregistered")) == 1


# -- GET_ROUTEINFO_BY_TOPIC -------------------------------------------------------------

def _registered(world):
    world.call(register_request("C", "broker-a", "127.0.0.1:10911", topics=["A", "B"]))
    return world


def test_route_encoding_follows_version_and_accept_standard_json_only(world):
    _registered(world)
    assert b'"brokerAddrs":{"0":"127.0.0.1:10911"}' in world.call(route_request("A", version=401)).body
    assert b'"brokerAddrs":{0:"127.0.0.1:10911"}' in world.call(route_request("A", version=400)).body
    accept = req(C.GET_ROUTEINFO_BY_TOPIC, {"topic": "A", "acceptStandardJsonOnly": "true"}, version=300)
    assert b'{"0":' in world.call(accept).body


def test_unknown_topic_answers_topic_not_exist(world):
    answer = world.call(route_request("test"))
    assert answer.code == ResponseCode.TOPIC_NOT_EXIST
    assert answer.remark.startswith("No topic route info in name server for the topic: test\nSee ")
    with pytest.raises(HeaderFieldError, match="topic"):
        world.call(req(C.GET_ROUTEINFO_BY_TOPIC, {}))


def test_order_topic_conf_only_when_enabled(world):
    _registered(world)
    world.context.kv.table["ORDER_TOPIC_CONFIG"] = {"A": "broker-a:8"}
    assert b"orderTopicConf" not in world.call(route_request("A")).body
    world.context.config.update({"orderMessageEnable": "true"})
    assert json.loads(world.call(route_request("A")).body)["orderTopicConf"] == "broker-a:8"
    assert b"orderTopicConf" not in world.call(route_request("B")).body


def test_need_wait_for_service_grace_ends(world):
    _registered(world)
    world.context.config.update({"needWaitForService": "true"})
    world.context.config.update({"waitSecondsForService": "45"})
    processor = RouteProcessor(world.context)
    answer = processor.process_request(route_request("A"), world.conn)
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark.startswith("name server not ready: route queries are answered 45 s after start")
    world.clock.advance(44.9)
    assert processor.process_request(route_request("A"), world.conn).code == ResponseCode.SYSTEM_ERROR
    world.clock.advance(0.1)
    assert processor.process_request(route_request("A"), world.conn).code == ResponseCode.SUCCESS
    world.clock.advance(3600)
    assert processor.process_request(route_request("A"), world.conn).code == ResponseCode.SUCCESS
    world.context.config.update({"needWaitForService": "false"})
    assert RouteProcessor(world.context).process_request(route_request("A"), world.conn).code == 0


def test_zone_mode_filters_and_answers_plain_json(world):
    for name, addr, zone in (("a", "h:1", "z1"), ("b", "h:2", "z2")):
        world.call(register_request("C", name, addr, topics=["T", "U"], extra_ext={"__ZONE_NAME": zone}))
    request = req(C.GET_ROUTEINFO_BY_TOPIC, {"topic": "T", "__ZONE_MODE": "true", "__ZONE_NAME": "Z1"},
                  version=479)
    body = world.call(request).body
    assert b'"brokerAddrs":{0:"h:1"}' in body
    assert [bd["brokerName"] for bd in fastjson.loads(body)["brokerDatas"]] == ["a"]
    request.ext["__ZONE_MODE"] = "false"
    assert len(json.loads(world.call(request).body)["brokerDatas"]) == 2


def test_support_acting_master_is_read_live(world):
    world.call(register_request("C", "a", "h:2", broker_id=1, topics=["T", "U"],
                                extra_ext={"enableActingMaster": "true"}))
    assert json.loads(world.call(route_request("T")).body)["brokerDatas"][0]["brokerAddrs"] == {"1": "h:2"}
    world.context.config.update({"supportActingMaster": "true"})
    assert json.loads(world.call(route_request("T")).body)["brokerDatas"][0]["brokerAddrs"] == {"0": "h:2"}


# -- cluster info, permissions, topic lists -----------------------------------------------

def test_cluster_info(world):
    assert world.call(req(C.GET_BROKER_CLUSTER_INFO)).body == b'{"brokerAddrTable":{},"clusterAddrTable":{}}'
    _registered(world)
    info = fastjson.loads(world.call(req(C.GET_BROKER_CLUSTER_INFO)).body)
    assert info["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {0: "127.0.0.1:10911"}
    assert info["clusterAddrTable"] == {"C": ["broker-a"]}


def test_wipe_and_add_write_perm_counts(world):
    _registered(world)
    answer = world.call(req(C.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}))
    assert (answer.code, answer.ext) == (ResponseCode.SUCCESS, {"wipeTopicCount": "2"})
    assert json.loads(world.call(route_request("A")).body)["queueDatas"][0]["perm"] == 4
    answer = world.call(req(C.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}))
    assert answer.ext == {"addTopicCount": "2"}
    assert world.call(req(C.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "nobody"})).ext == {"wipeTopicCount": "0"}
    with pytest.raises(HeaderFieldError):
        world.call(req(C.ADD_WRITE_PERM_OF_BROKER, {}))


def test_all_topic_list_and_its_switch(world):
    _registered(world)
    answer = world.call(req(C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))
    assert (answer.code, answer.body) == (ResponseCode.SUCCESS, b'{"topicList":["A","B"]}')
    world.context.config.update({"enableAllTopicList": "false"})
    answer = world.call(req(C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))
    assert answer.code == ResponseCode.SYSTEM_ERROR and answer.remark.startswith("disable: topic lists are switched off")


def test_topic_lists_and_their_switch(world):
    body = plain_body([topic_config("U", sys_flag=1), topic_config("S", sys_flag=2), topic_config("P")])
    world.call(req(C.REGISTER_BROKER, {"brokerName": "b", "brokerAddr": "h:1", "clusterName": "C",
                                       "haServerAddr": "h:2", "brokerId": "0"}, body, version=409))
    lists = {code: json.loads(world.call(req(code)).body)["topicList"]
             for code in (C.GET_UNIT_TOPIC_LIST, C.GET_HAS_UNIT_SUB_TOPIC_LIST, C.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST)}
    assert lists == {C.GET_UNIT_TOPIC_LIST: ["U"], C.GET_HAS_UNIT_SUB_TOPIC_LIST: ["S"],
                     C.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: ["S"]}
    by_cluster = world.call(req(C.GET_TOPICS_BY_CLUSTER, {"cluster": "C"}))
    assert json.loads(by_cluster.body) == {"topicList": ["P", "S", "U"]}
    assert json.loads(world.call(req(C.GET_TOPICS_BY_CLUSTER, {"cluster": "x"})).body) == {"topicList": []}
    system = json.loads(world.call(req(C.GET_SYSTEM_TOPIC_LIST_FROM_NS, {"cluster": "ignored"})).body)
    assert system == {"brokerAddr": "h:1", "topicList": ["C", "b"]}
    world.context.config.update({"enableTopicList": "false"})
    for code in (C.GET_UNIT_TOPIC_LIST, C.GET_HAS_UNIT_SUB_TOPIC_LIST, C.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
                 C.GET_TOPICS_BY_CLUSTER):
        answer = world.call(req(code))
        assert answer.code == ResponseCode.SYSTEM_ERROR and answer.remark.startswith("disable: topic lists are switched off")
    assert world.call(req(C.GET_SYSTEM_TOPIC_LIST_FROM_NS)).code == ResponseCode.SUCCESS


def test_delete_topic(world):
    _registered(world)
    world.call(register_request("C2", "broker-b", "h:9", topics=["A", "B"]))
    assert world.call(req(C.DELETE_TOPIC_IN_NAMESRV, {"topic": "A", "clusterName": "C"})).code == 0
    assert world.routes.topic_broker_names("A") == ["broker-b"]
    assert world.call(req(C.DELETE_TOPIC_IN_NAMESRV, {"topic": "A"})).code == 0
    assert world.call(route_request("A")).code == ResponseCode.TOPIC_NOT_EXIST
    assert world.call(req(C.DELETE_TOPIC_IN_NAMESRV, {"topic": "never"})).code == 0


def test_register_topic(world):
    _registered(world)
    body = b'{"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}'
    assert world.call(req(C.REGISTER_TOPIC_IN_NAMESRV, {"topic": "New"}, body)).code == ResponseCode.SUCCESS
    assert world.routes.topic_queue_table["New"]["broker-a"].read_queue_nums == 8
    unknown = body.replace(b"broker-a", b"ghost")
    assert world.call(req(C.REGISTER_TOPIC_IN_NAMESRV, {"topic": "Other"}, unknown)).code == ResponseCode.SUCCESS
    assert "Other" not in world.routes.topic_queue_table
    assert world.call(req(C.REGISTER_TOPIC_IN_NAMESRV, {"topic": "Other"})).code == ResponseCode.SUCCESS
    answer = world.call(req(C.REGISTER_TOPIC_IN_NAMESRV, {"topic": "Other"}, b"{oops"))
    assert answer.code == ResponseCode.SYSTEM_ERROR and "TopicRouteData" in answer.remark


# -- liveness requests ----------------------------------------------------------------------

def test_query_data_version(world):
    ext = {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "C", "brokerId": "0"}
    version = b'{"counter":1,"timestamp":1700000000000}'
    answer = world.call(req(C.QUERY_DATA_VERSION, ext, version))
    assert (answer.code, answer.ext, answer.body) == (ResponseCode.SUCCESS, {"changed": "true"}, None)
    _registered(world)
    answer = world.call(req(C.QUERY_DATA_VERSION, ext, version))
    assert answer.ext == {"changed": "false"}
    assert answer.body == b'{"counter":1,"stateVersion":0,"timestamp":1700000000000}'
    assert world.call(req(C.QUERY_DATA_VERSION, ext, b'{"counter":2,"timestamp":1}')).ext == {"changed": "true"}
    assert world.call(req(C.QUERY_DATA_VERSION, ext)).ext == {"changed": "true"}  # 5.x: no body = changed
    assert world.call(req(C.QUERY_DATA_VERSION, ext, b"nope")).code == ResponseCode.SYSTEM_ERROR
    with pytest.raises(HeaderFieldError):
        world.call(req(C.QUERY_DATA_VERSION, dict(ext, brokerId="x"), version))


def test_query_data_version_and_heartbeat_refresh_liveness(world):
    _registered(world)
    ext = {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "C", "brokerId": "0"}
    world.clock.advance(100)
    world.call(req(C.QUERY_DATA_VERSION, ext, b'{"counter":9,"timestamp":9}'))  # 5.x refreshes even if changed
    world.clock.advance(100)
    assert world.call(req(C.BROKER_HEARTBEAT, {"clusterName": "C", "brokerAddr": "127.0.0.1:10911",
                                               "brokerName": "broker-a", "epoch": "3"}, oneway=True)).code == 0
    world.clock.advance(100)
    assert world.routes.scan_not_active_brokers() == []
    world.clock.advance(21)
    assert len(world.routes.scan_not_active_brokers()) == 1
    with pytest.raises(HeaderFieldError, match="brokerId"):
        world.call(req(C.BROKER_HEARTBEAT, {"clusterName": "C", "brokerAddr": "h", "brokerName": "b",
                                            "brokerId": "one"}))


def test_broker_member_group(world):
    _registered(world)
    world.call(register_request("C", "broker-a", "127.0.0.1:10921", broker_id=1, topics=["A", "B"]))
    answer = world.call(req(C.GET_BROKER_MEMBER_GROUP, {"clusterName": "cx", "brokerName": "broker-a"}))
    assert answer.body == (b'{"brokerMemberGroup":{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},'
                           b'"brokerName":"broker-a","cluster":"cx"}}')
    answer = world.call(req(C.GET_BROKER_MEMBER_GROUP, {"clusterName": "c", "brokerName": "none"}))
    assert answer.body == b'{"brokerMemberGroup":{"brokerAddrs":{},"brokerName":"none","cluster":"c"}}'


# -- the captured Java conversation --------------------------------------------------------

def _frame(name):
    return decode_frame(vector(name)[4:])


def _same_frame(ours, java_name, **patch):
    """Our answer, encoded with Java's version number (and any ``patch``), equals Java's bytes."""
    java = _frame(java_name)
    assert encode_frame(ours.with_changes(version=java.version, **patch)) == vector(java_name)


def test_replay_of_the_captured_conversation(world):
    conn = FakeConnection(connection_id=7)
    answers = {}
    for name in ("register_plain_json", "register_compressed_json", "register_slave_rocketmq", "route_json",
                 "route_rocketmq", "cluster_info_json", "route_unknown_topic_json", "all_topics_json"):
        answers[name] = world.call(_frame("req_" + name), conn)
    for name in ("register_plain_json", "register_compressed_json", "register_slave_rocketmq", "all_topics_json"):
        _same_frame(answers[name], "resp_" + name)
    java_remark = _frame("resp_route_unknown_topic_json").remark
    _same_frame(answers["route_unknown_topic_json"], "resp_route_unknown_topic_json", remark=java_remark)
    assert answers["route_rocketmq"].serialize_type == SerializeType.ROCKETMQ
    for name in ("route_json", "route_rocketmq", "cluster_info_json"):
        ours = answers[name].body.replace(b',"enableActingMaster":false', b"")
        java = _frame("resp_" + name).body
        assert sorted(ours) == sorted(java) and len(ours) == len(java)
        assert _canonical(fastjson.loads(ours)) == _canonical(fastjson.loads(java))


def _canonical(data):
    if isinstance(data, dict):
        return {str(k): _canonical(v) for k, v in data.items()}
    if isinstance(data, list):
        return sorted((_canonical(v) for v in data), key=repr)
    return data


def test_missing_field_vector_names_the_field(world):
    with pytest.raises(HeaderFieldError) as error:
        world.call(_frame("req_register_missing_field_json"))
    assert error.value.field in ("brokerAddr", "brokerId", "haServerAddr")
    assert world.routes.cluster_addr_table == {}


def test_through_the_registry_errors_become_answers_and_oneway_stays_silent(world):
    from namesrv.dispatch.registry import ProcessorRegistry

    registry = ProcessorRegistry([world.processor], events=world.events)
    request = register_request("C", "broker-a", "127.0.0.1:10911", topics=["A", "B"])
    del request.ext["brokerId"]
    answer = registry.dispatch(request, world.conn)
    assert answer.code == ResponseCode.SYSTEM_ERROR and "brokerId" in answer.remark
    heartbeat = req(C.BROKER_HEARTBEAT, {"clusterName": "C", "brokerAddr": "h:1", "brokerName": "b"}, oneway=True)
    assert registry.dispatch(heartbeat, world.conn) is None
