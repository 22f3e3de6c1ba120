"""namesrv-admin reading the answers a Java 4.9.8 NameServer sent (tests/data/vectors), byte for byte.

A one-thread fake server replays the captured response for each request code, with the
request's opaque: the bodies (fastjson's unquoted ``{0:"ip:port"}`` keys included) and
the remarks are Java's own.
"""

import io
import json
import socket
import struct
import threading

from namesrv.admin.cli import main
from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.codes import RequestCode
from tests.vectors import vector

ANSWERS = {
    RequestCode.GET_BROKER_CLUSTER_INFO: "resp_cluster_info_json",
    RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: "resp_all_topics_json",
    RequestCode.GET_KVLIST_BY_NAMESPACE: "resp_kvlist_json",
    RequestCode.GET_KV_CONFIG: "resp_get_kv_missing_json",
}


class JavaReplay:
    """Answers each request with the captured Java answer for its code."""

    def __init__(self, answers):
        self.answers = {code: decode_frame(vector(name)[4:]) for code, name in answers.items()}
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.listener.settimeout(10)
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:   # one connection per namesrv-admin run, until close()
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.answer(conn)

    def answer(self, conn):
        with conn:
            conn.settimeout(10)
            reader = conn.makefile("rb")
            while True:
                head = reader.read(4)
                if len(head) < 4:
                    return
                request = decode_frame(reader.read(struct.unpack(">i", head)[0]))   # namesrv-admin's own frame
                answer = self.answers[request.code].with_changes(opaque=request.opaque)
                conn.sendall(encode_frame(answer))

    def close(self):
        try:
            self.listener.shutdown(socket.SHUT_RDWR)   # wakes the blocked accept() (Linux)
        except OSError:
            pass
        self.listener.close()
        self.thread.join(10)


def admin(server, *argv):
    out, err = io.StringIO(), io.StringIO()
    status = main([*argv, "-n", server.address], stdout=out, stderr=err, environ={})
    return status, out.getvalue(), err.getvalue()


def test_cluster_list_reads_fastjson_unquoted_keys():
    server = JavaReplay(ANSWERS)
    try:
        status, out, _ = admin(server, "--json", "clusterList")
    finally:
        server.close()
    assert status == 0
    assert json.loads(out) == [
        {"cluster": "VecCluster", "brokerName": "vec-broker-a", "brokerId": 0, "addr": "127.0.0.1:10911"},
        {"cluster": "VecCluster", "brokerName": "vec-broker-a", "brokerId": 1, "addr": "127.0.0.1:10921"},
        {"cluster": "VecCluster", "brokerName": "vec-broker-b", "brokerId": 0, "addr": "127.0.0.1:11911"}]


def test_topics_kv_list_and_a_java_not_found():
    server = JavaReplay(ANSWERS)
    try:
        assert admin(server, "topicList")[:2] == (0, "VecTopicA\nVecTopicB\n")
        assert json.loads(admin(server, "--json", "getKvConfig", "-s", "ORDER_TOPIC_CONFIG")[1]) == {
            "VecTopicA": "vec-broker-a:4"}
        status, out, err = admin(server, "getKvConfig", "-s", "ns", "-k", "nokey")
    finally:
        server.close()
    assert status == 1 and err == ("namesrv-admin: getKvConfig: %s: QUERY_NOT_FOUND (22) No config item, "
                                   "Namespace: ns Key: nokey\n" % server.address)


def test_route_and_topic_not_exist_from_java():
    server = JavaReplay({RequestCode.GET_ROUTEINFO_BY_TOPIC: "resp_route_json"})
    try:
        status, out, _ = admin(server, "topicRoute", "-t", "VecTopicA", "-l")
    finally:
        server.close()
    assert status == 0
    assert [line.split()[:2] for line in out.splitlines()[1:3]] == [["VecCluster", "vec-broker-a"],
                                                                     ["VecCluster", "vec-broker-b"]]
    server = JavaReplay({RequestCode.GET_ROUTEINFO_BY_TOPIC: "resp_route_unknown_topic_json"})
    try:
        status, _, err = admin(server, "topicRoute", "-t", "NoSuchTopic")
    finally:
        server.close()
    assert status == 1 and err == ("namesrv-admin: topicRoute: %s: TOPIC_NOT_EXIST (17) No topic route info in "
                                   "name server for the topic: NoSuchTopic\n" % server.address)
