"""Replay the requests captured from a Java 4.9.8 client on one connection and compare with the Java server's answers."""

import json

from namesrv.codec import fastjson
from namesrv.protocol.codec import decode_frame
from tests.vectors import vector

CONVERSATION = ["register_plain_json", "register_compressed_json", "register_slave_rocketmq", "route_json",
                "route_rocketmq", "cluster_info_json", "route_unknown_topic_json", "put_kv_json",
                "get_kv_missing_json", "kvlist_json", "all_topics_json", "namesrv_config_json",
                "register_missing_field_json"]


def normalized_body(name, body):
    if body is None:
        return None
    data = fastjson.loads(body)
    if name.startswith("route"):
        for broker in data["brokerDatas"]:
            broker.pop("enableActingMaster", None)
            broker["brokerAddrs"] = {int(k): v for k, v in broker["brokerAddrs"].items()}
        data["brokerDatas"].sort(key=lambda b: b["brokerName"])
        data["queueDatas"].sort(key=lambda q: q["brokerName"])
    if name == "cluster_info_json":
        for broker in data["brokerAddrTable"].values():
            broker.pop("enableActingMaster", None)
        data["clusterAddrTable"] = {k: sorted(v) for k, v in data["clusterAddrTable"].items()}
    return data


def test_java_conversation_gets_java_answers(namesrv):
    with namesrv.client() as client:
        for name in CONVERSATION:
            request = decode_frame(vector("req_" + name)[4:])
            ours = client.call(request)
            assert ours.opaque == request.opaque and ours.is_response
            assert ours.serialize_type == request.serialize_type, name
            if name == "namesrv_config_json":  # the Java answer was left out of the vectors (it held paths)
                keys = {line.split("=", 1)[0] for line in ours.body.decode().splitlines()}
                assert {"listenPort", "kvConfigPath", "serverChannelMaxIdleTimeSeconds"} <= keys
                continue
            java = decode_frame(vector("resp_" + name)[4:])
            assert ours.code == java.code, (name, ours.remark)
            if name == "register_missing_field_json":
                # Java answers with an NPE text about brokerId; we name the first missing field
                assert ours.remark in ("the custom field <%s> is null" % f for f in ("brokerAddr", "brokerId"))
                continue
            if name == "route_unknown_topic_json":
                assert ours.remark.split("\n")[0] == java.remark.split("\n")[0]
                continue
            assert ours.remark == java.remark, name
            assert ours.ext == java.ext, name
            assert normalized_body(name, ours.body) == normalized_body(name, java.body), name
