"""Lone UTF-16 surrogates ("\\udfff" escapes in JSON) must not poison shared state.

JSON lets a peer write "\\ud800" (half of a surrogate pair); Python decodes it into a str
that cannot be encoded as UTF-8. Java's encoders write '?' for it and move on. Here, one
such request must not break the answers or the files that every other client depends on.
Found by tools/fuzz.py (a SYSTEM_ERROR naming UnicodeEncodeError).
"""

import json
import socket
import struct

from namesrv.client import recv_exactly
from namesrv.protocol.codec import decode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from tests.brokers import crc32, register_request

REASON = ("lone surrogates from JSON escapes are stored as is; encoding them as UTF-8 later fails "
          "(fix: replace them when decoding headers and bodies)")


def call_raw(sock, header, body=b""):
    """Send a hand-written JSON header (so it can hold escapes our encoder would never write)."""
    h = json.dumps(header).encode()  # ensure_ascii: "\ud800" travels as the escape \\ud800
    sock.sendall(struct.pack(">ii", 4 + len(h) + len(body), len(h)) + h + body)
    (length,) = struct.unpack(">i", recv_exactly(sock, 4))
    return decode_frame(recv_exactly(sock, length))


def test_lone_surrogate_in_a_kv_value_does_not_break_later_kv_writes(start_server):
    server = start_server()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        call_raw(sock, {"code": 100, "opaque": 1, "extFields": {"namespace": "ns", "key": "bad", "value": "a\udfffb"}})
    with server.client() as client:
        put = client.call(make_request(RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"}))
        assert put.code == ResponseCode.SUCCESS, put.remark
        listing = client.call(make_request(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ns"}))
        assert listing.code == ResponseCode.SUCCESS, listing.remark


def test_lone_surrogate_in_a_broker_name_does_not_break_cluster_info(start_server):
    server = start_server()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        call_raw(sock, {"code": 103, "opaque": 1, "version": 409, "extFields": {
            "brokerName": "b\ud800", "brokerAddr": "127.0.0.1:1", "clusterName": "C", "brokerId": "0",
            "haServerAddr": "127.0.0.1:1"}})
        with server.client() as client:  # while the broker's connection is open
            info = client.call(make_request(RequestCode.GET_BROKER_CLUSTER_INFO))
            assert info.code == ResponseCode.SUCCESS, info.remark


def test_lone_surrogate_in_a_topic_name_does_not_break_topic_lists(start_server):
    server = start_server()
    topics = {t: {"topicName": t, "readQueueNums": 4, "writeQueueNums": 4, "perm": 6} for t in ("Fine", "T\udfff")}
    body = json.dumps({"filterServerList": [], "topicConfigSerializeWrapper": {
        "dataVersion": {"counter": 1, "timestamp": 1}, "topicConfigTable": topics}}).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        call_raw(sock, {"code": 103, "opaque": 1, "version": 409, "extFields": {
            "brokerName": "b", "brokerAddr": "127.0.0.1:1", "clusterName": "C", "brokerId": "0",
            "haServerAddr": "127.0.0.1:1", "bodyCrc32": str(crc32(body))}}, body)
        with server.client() as client:
            for code in (RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, RequestCode.GET_BROKER_CLUSTER_INFO):
                answer = client.call(make_request(code))
                assert answer.code == ResponseCode.SUCCESS, answer.remark
            answer = client.call(make_request(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "C"}))
            assert answer.code == ResponseCode.SUCCESS, answer.remark


def test_lone_surrogate_in_an_order_topic_config_does_not_stop_broker_registration(start_server):
    """Every REGISTER_BROKER answer carries the ORDER_TOPIC_CONFIG table: one bad value there
    must not make every broker's registration fail (the whole cluster would lose its routes)."""
    server = start_server()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        call_raw(sock, {"code": 100, "opaque": 1, "extFields": {
            "namespace": "ORDER_TOPIC_CONFIG", "key": "SomeTopic", "value": "broker-a:\udfff"}})
    with server.client() as broker:
        answer = broker.call(register_request("C", "broker-a", "127.0.0.1:10911", topics=["A", "B"]))
        assert answer.code == ResponseCode.SUCCESS, answer.remark


def test_a_surrogate_pair_escape_is_an_ordinary_character(start_server):
    """The valid case must keep working: "\\ud83d\\ude00" is one emoji."""
    server = start_server()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        put = call_raw(sock, {"code": 100, "opaque": 1,
                              "extFields": {"namespace": "ns", "key": "smile", "value": "\U0001F600"}})
        assert put.code == ResponseCode.SUCCESS
    with server.client() as client:
        got = client.call(make_request(RequestCode.GET_KV_CONFIG, {"namespace": "ns", "key": "smile"}))
        assert got.ext["value"] == "\U0001F600"
        broker = client.call(register_request("C", "b", "127.0.0.1:1", topics=["A", "B"]))
        assert broker.code == ResponseCode.SUCCESS
