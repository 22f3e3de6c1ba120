"""Body decoding and encoding, checked against the frames captured from Java (../shared/vectors)."""

import struct
import zlib

import pytest

from namesrv.codec import fastjson
from namesrv.protocol.codec import decode_frame
from namesrv.routes.bodies import decode, encode
from namesrv.routes.bodies.decode import BodyDecodeError
from namesrv.routes.model import DataVersion, QueueData, TopicConfig
from tests.vectors import vector


def request(name):
    return decode_frame(vector(name)[4:])


def test_plain_vector_decodes_with_every_field():
    req = request("req_register_plain_json")
    body = decode.decode_register_broker_body(req.body, req.get_bool("compressed"), req.version)
    assert body.filter_server_list == ["127.0.0.1:50001"]
    wrapper = body.topic_config_wrapper
    assert wrapper.data_version == DataVersion(1795359423769, 1, 0)
    a, b = wrapper.topic_config_table["VecTopicA"], wrapper.topic_config_table["VecTopicB"]
    assert (a.read_queue_nums, a.write_queue_nums, a.perm, a.topic_sys_flag, a.order) == (4, 4, 6, 0, False)
    assert (b.read_queue_nums, b.write_queue_nums, b.perm, b.topic_sys_flag, b.order) == (8, 8, 6, 1, True)


def test_compressed_vector_decodes_and_lacks_sys_flag_and_order():
    req = request("req_register_compressed_json")
    assert decode.crc32(req.body) == int(req.ext["bodyCrc32"]) == 1042672316
    body = decode.decode_register_broker_body(req.body, True, req.version)
    assert body.filter_server_list == ["127.0.0.1:50001"]
    assert body.topic_config_wrapper.data_version == DataVersion(1795359424069, 1)
    b = body.topic_config_wrapper.topic_config_table["VecTopicB"]
    assert (b.read_queue_nums, b.write_queue_nums, b.perm, b.topic_sys_flag, b.order) == (8, 8, 6, 0, False)
    assert sorted(body.topic_config_wrapper.topic_config_table) == ["VecTopicA", "VecTopicB"]


def test_crc_of_every_register_vector_matches_its_header():
    for name in ("req_register_plain_json", "req_register_compressed_json", "req_register_slave_rocketmq"):
        req = request(name)
        assert decode.crc32(req.body) == int(req.ext["bodyCrc32"])
    assert decode.crc32(None) == 0


def chunk(data):
    return struct.pack(">i", len(data)) + data


def test_5x_compressed_body_with_attributes_and_mapping_section():
    mapping = b'{"bname":"broker-a","currIdMap":{0:0,1:1},"dirty":false,"epoch":3,"scope":"__global__",' \
              b'"topic":"Static","totalQueues":2}'
    raw = (chunk(b'{"counter":2,"stateVersion":5,"timestamp":7}') + struct.pack(">i", 2)
           + chunk(b"Static 2 2 6 SINGLE_TAG {}") + chunk(b"Other 1 1 4 MULTI_TAG ")
           + chunk(b"[]") + struct.pack(">i", 1) + chunk(mapping))
    body = decode.decode_register_broker_body(zlib.compress(raw, 9), True, 479)
    wrapper = body.topic_config_wrapper
    assert wrapper.data_version == DataVersion(7, 2, 5)
    assert wrapper.topic_config_table["Static"].attributes == {}
    assert wrapper.topic_config_table["Other"].topic_filter_type == "MULTI_TAG"
    assert wrapper.topic_queue_mapping_info_map["Static"]["currIdMap"] == {0: 0, 1: 1}
    # A 4.9 requester's mapping section is never read (trailing bytes ignored).
    assert decode.decode_register_broker_body(zlib.compress(raw), True, 409).topic_config_wrapper \
        .topic_queue_mapping_info_map == {}


def broker_compressed_body(data_version, topic_configs, filter_servers=(), mappings=None):
    """A compressed RegisterBrokerBody (bodies.md §4.2) as a broker writes it: the decoder's inverse."""
    def chunk(data):
        return struct.pack(">i", len(data)) + data

    parts = [chunk(fastjson.dumps_plain(data_version).encode("utf-8")), struct.pack(">i", len(topic_configs))]
    for config in topic_configs:
        text = "%s %d %d %d %s" % (config.topic_name, config.read_queue_nums, config.write_queue_nums,
                                   config.perm, config.topic_filter_type)
        if config.attributes is not None:
            text += " " + fastjson.dumps_plain(config.attributes)
        parts.append(chunk(text.encode("utf-8")))
    parts.append(chunk(fastjson.dumps_plain(list(filter_servers)).encode("utf-8")))
    if mappings is not None:
        parts.append(struct.pack(">i", len(mappings)))
        for info in mappings:
            parts.append(chunk(fastjson.dumps_plain(info).encode("utf-8")))
    return zlib.compress(b"".join(parts), 9)


def test_compressed_round_trip_with_a_broker_side_encoder():
    configs = [TopicConfig("T%d" % i, 4, 4, 6) for i in range(50)]
    data = broker_compressed_body(DataVersion(1, 2, 3), configs, ["fs:1"], mappings=[])
    body = decode.decode_register_broker_body(data, True, 479)
    assert sorted(body.topic_config_wrapper.topic_config_table) == sorted(c.topic_name for c in configs)
    assert body.filter_server_list == ["fs:1"]


@pytest.mark.parametrize("damage", [
    lambda data: data[: len(data) // 2],          # truncated stream
    lambda data: b"not zlib at all",
    lambda data: zlib.compress(b"\x00\x00\x00\x05{}"),  # length beyond the data
    lambda data: zlib.compress(chunk(b"{}") + struct.pack(">i", 1) + chunk(b"T 1 2") + chunk(b"[]")),
    lambda data: zlib.compress(chunk(b"{}") + struct.pack(">i", 1) + chunk(b"T x 1 6 SINGLE_TAG") + chunk(b"[]")),
    lambda data: zlib.compress(chunk(b"{}") + struct.pack(">i", 1) + chunk(b"T 1 1 6 NO_TAG") + chunk(b"[]")),
    lambda data: zlib.compress(chunk(b"{]") + struct.pack(">i", 0) + chunk(b"[]")),
])
def test_damaged_compressed_bodies_raise(damage):
    good = request("req_register_compressed_json").body
    with pytest.raises(BodyDecodeError):
        decode.decode_register_broker_body(damage(good), True, 409)


def test_compressed_filter_list_that_does_not_parse_is_empty_like_java():
    raw = chunk(b'{"counter":1,"timestamp":1}') + struct.pack(">i", 0) + chunk(b"oops")
    assert decode.decode_register_broker_body(zlib.compress(raw), True, 409).filter_server_list == []


def test_plain_body_errors_raise():
    for bad in (b"{", b"[]", b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"perm":"rw"}}}}',
                b'{"filterServerList":"x"}', b"\xff\xfe"):
        with pytest.raises(BodyDecodeError):
            decode.decode_register_broker_body(bad, False, 409)


def test_missing_pieces_take_java_defaults():
    body = decode.decode_register_broker_body(b'{"topicConfigSerializeWrapper":{"topicConfigTable":'
                                              b'{"unit-test1":{},"T":{"topicName":"T","readQueueNums":"3"}}}}',
                                              False, 409)
    table = body.topic_config_wrapper.topic_config_table
    assert table["unit-test1"].read_queue_nums == 16 and table["unit-test1"].perm == 6  # keyed by the map key
    assert table["T"].read_queue_nums == 3  # numbers as strings, like fastjson
    assert body.filter_server_list == []


def test_absent_body_is_an_empty_table_with_version_zero():
    body = decode.decode_register_broker_body(None, False, 409)
    assert body.topic_config_wrapper.data_version == DataVersion(0, 0, 0)
    assert body.topic_config_wrapper.topic_config_table == {} and body.filter_server_list == []
    legacy = decode.decode_register_broker_body(None, False, 36)
    assert legacy.filter_server_list is None


def test_legacy_body_is_a_bare_wrapper_without_filter_servers():
    wrapper = b'{"dataVersion":{"counter":3,"timestamp":9},"topicConfigTable":{"Old":{"topicName":"Old"}}}'
    body = decode.decode_register_broker_body(wrapper, False, 36)
    assert body.filter_server_list is None
    assert list(body.topic_config_wrapper.topic_config_table) == ["Old"]
    assert body.topic_config_wrapper.data_version == DataVersion(9, 3)


def test_plain_5x_body_with_mapping_info():
    text = (b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"stateVersion":2,'
            b'"timestamp":3},"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1},'
            b'"topicConfigTable":{"S":{"attributes":{},"order":false,"perm":6,"readQueueNums":1,'
            b'"topicFilterType":"SINGLE_TAG","topicName":"S","topicSysFlag":0,"writeQueueNums":1}},'
            b'"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{"S":{"bname":"b","currIdMap":{0:0},'
            b'"dirty":false,"epoch":1,"scope":"__global__","topic":"S","totalQueues":1}}}}')
    wrapper = decode.decode_register_broker_body(text, False, 479).topic_config_wrapper
    assert wrapper.data_version == DataVersion(3, 1, 2)
    assert wrapper.topic_queue_mapping_info_map["S"]["currIdMap"] == {0: 0}


def test_data_version_body():
    assert decode.decode_data_version(None) is None
    assert decode.decode_data_version(b'{"counter":4,"timestamp":5}') == DataVersion(5, 4, 0)
    assert encode.encode_data_version(DataVersion(5, 4, 1)) == b'{"counter":4,"stateVersion":1,"timestamp":5}'
    with pytest.raises(BodyDecodeError):
        decode.decode_data_version(b"nope")


def test_register_topic_body():
    qds = decode.decode_queue_datas(b'{"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,'
                                    b'"topicSysFlag":0,"writeQueueNums":8}]}')
    assert qds == [QueueData("broker-a", 8, 8, 6, 0)]
    assert decode.decode_queue_datas(b"{}") == []
    with pytest.raises(BodyDecodeError):
        decode.decode_queue_datas(b'{"queueDatas":{}}')


def test_standard_json_rule_is_exactly_the_java_one():
    assert not encode.use_standard_json(400, False)
    assert encode.use_standard_json(401, False)
    assert encode.use_standard_json(37, True)


def test_small_bodies_match_java_bytes():
    assert encode.encode_topic_list(["VecTopicA", "VecTopicB"]) == request("resp_all_topics_json").body
    assert encode.encode_topic_list(["a"], "1.2.3.4:5") == b'{"brokerAddr":"1.2.3.4:5","topicList":["a"]}'
    assert encode.encode_broker_member_group("c", "b", {1: "x", 0: "y"}) == \
        b'{"brokerMemberGroup":{"brokerAddrs":{0:"y",1:"x"},"brokerName":"b","cluster":"c"}}'
    assert fastjson.loads(encode.encode_broker_member_group("c", "b", {}))["brokerMemberGroup"]["brokerAddrs"] == {}
