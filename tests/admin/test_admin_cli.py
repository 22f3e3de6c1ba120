"""namesrv-admin against real `twistd namesrv` processes on 127.0.0.1, as an operator runs it."""

import json
import os
import socket
import subprocess
import sys
import threading

import pytest

from namesrv.protocol.codes import ResponseCode
from tests.admin.cli import admin
from tests.brokers import register_request, route_request, topic_config
from tests.integration.server import REPO, NamesrvProcess, free_port


ACL = """
accounts:
  - accessKey: operator
    secretKey: ops-secret-1
    admin: true
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server with two clusters: broker-a (master + slave) and broker-b, kept registered."""
    proc = NamesrvProcess(tmp_path_factory.mktemp("admin")).start()
    brokers = [proc.client() for _ in range(3)]
    for client, (cluster, name, addr, broker_id, topics) in zip(brokers, [
            ("ClusterA", "broker-a", "127.0.0.1:10911", 0, ["TopicA", topic_config("Ordered", queues=8, perm=4)]),
            ("ClusterA", "broker-a", "127.0.0.1:10921", 1, ["TopicA", "Ordered"]),
            ("ClusterB", "broker-b", "127.0.0.1:10931", 0, ["TopicA", "TopicB"])]):
        assert client.call(register_request(cluster, name, addr, broker_id, topics)).code == ResponseCode.SUCCESS
    yield proc
    for client in brokers:
        client.close()
    proc.stop()


def addr(proc):
    return "127.0.0.1:%d" % proc.port


def test_cluster_list_table_and_json(server):
    status, out, err = admin("clusterList", "-n", addr(server))
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["#Cluster", "Name", "#Broker", "Name", "#BID", "#Addr"]
    assert [line.split() for line in lines[1:]] == [
        ["ClusterA", "broker-a", "0", "127.0.0.1:10911"],
        ["ClusterA", "broker-a", "1", "127.0.0.1:10921"],
        ["ClusterB", "broker-b", "0", "127.0.0.1:10931"]]
    status, out, _ = admin("--json", "clusterList", "-n", addr(server))
    assert json.loads(out)[1] == {"cluster": "ClusterA", "brokerName": "broker-a", "brokerId": 1,
                                  "addr": "127.0.0.1:10921"}


def test_topic_route_is_the_servers_answer(server):
    with server.client() as client:
        expected = json.loads(client.call(route_request("Ordered")).body)
    status, out, _ = admin("topicRoute", "-t", "Ordered", "-n", addr(server))
    assert status == 0 and json.loads(out) == expected
    status, out, _ = admin("topicRoute", "-t", "TopicA", "-l", "-n", addr(server))
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm"]
    assert rows[1] == ["ClusterA", "broker-a", "{0=127.0.0.1:10911,", "1=127.0.0.1:10921}", "4", "4", "6"]
    assert rows[-1] == ["Total:", "2", "8", "8"]


def test_unknown_topic_is_one_line_topic_not_exist(server):
    status, out, err = admin("topicRoute", "-t", "NoSuchTopic", "-n", addr(server))
    assert status == 1 and out == ""
    assert err == ("namesrv-admin: topicRoute: %s: TOPIC_NOT_EXIST (17) No topic route info in name server "
                   "for the topic: NoSuchTopic\n" % addr(server))


def test_topic_list_plain_and_by_cluster(server):
    status, out, _ = admin("topicList", "-n", addr(server))
    assert status == 0 and out.split() == ["Ordered", "TopicA", "TopicB"]
    status, out, _ = admin("--json", "topicList", "-c", "-n", addr(server))
    assert json.loads(out) == [{"cluster": "ClusterA", "topic": "Ordered"}, {"cluster": "ClusterA", "topic": "TopicA"},
                               {"cluster": "ClusterB", "topic": "TopicA"}, {"cluster": "ClusterB", "topic": "TopicB"}]


def test_kv_config_round_trip(server):
    n = addr(server)
    assert admin("updateKvConfig", "-s", "ORDER_TOPIC_CONFIG", "-k", "TopicA", "-v", "broker-a:4", "-n", n) == (
        0, "create or update kv config to namespace success.\n", "")
    status, out, _ = admin("getKvConfig", "-s", "ORDER_TOPIC_CONFIG", "-k", "TopicA", "-n", n)
    assert status == 0 and out.splitlines()[1].split() == ["TopicA", "broker-a:4"]
    status, out, _ = admin("--json", "getKvConfig", "-s", "ORDER_TOPIC_CONFIG", "-n", n)
    assert json.loads(out) == {"TopicA": "broker-a:4"}
    assert admin("deleteKvConfig", "-s", "ORDER_TOPIC_CONFIG", "-k", "TopicA", "-n", n)[0] == 0
    status, out, err = admin("getKvConfig", "-s", "ORDER_TOPIC_CONFIG", "-k", "TopicA", "-n", n)
    assert status == 1 and err.endswith("QUERY_NOT_FOUND (22) No config item, Namespace: ORDER_TOPIC_CONFIG "
                                        "Key: TopicA\n")


def test_namesrv_config_get_update_and_black_list(server):
    n = addr(server)
    status, out, _ = admin("getNamesrvConfig", "-n", n)
    assert out.splitlines()[0] == "============%s============" % n
    assert "%-50s=  %s" % ("listenPort", server.port) in out.splitlines()
    status, out, _ = admin("updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true", "-n", n)
    assert status == 0 and out == "update name server config success![%s]\norderMessageEnable : true\n" % n
    status, out, _ = admin("--json", "getNamesrvConfig", "-n", n)
    assert json.loads(out)[n]["config"]["orderMessageEnable"] == "true"
    status, out, err = admin("updateNamesrvConfig", "-k", "kvConfigPath", "-v", "/tmp/x", "-n", n)
    assert status == 1 and out == ""
    assert err.startswith("namesrv-admin: updateNamesrvConfig: %s: NO_PERMISSION (16) Can not update config in black "
                          "list. Refused keys: " % n) and err.count("\n") == 1


def test_write_perm_wipe_and_add(server):
    n = addr(server)
    status, out, _ = admin("wipeWritePerm", "-b", "broker-b", "-n", n)
    assert status == 0 and out == "wipe write perm of broker[broker-b] in name server[%s] OK, 2\n" % n
    route = json.loads(admin("topicRoute", "-t", "TopicB", "-n", n)[1])
    assert route["queueDatas"][0]["perm"] == 4
    status, out, _ = admin("--json", "addWritePerm", "-b", "broker-b", "-n", n)
    assert json.loads(out) == {n: {"ok": True, "addTopicCount": 2}}
    assert json.loads(admin("topicRoute", "-t", "TopicB", "-n", n)[1])["queueDatas"][0]["perm"] == 6


def test_delete_topic_from_one_cluster_then_everywhere(tmp_path):
    proc = NamesrvProcess(tmp_path).start()
    try:
        with proc.client() as a, proc.client() as b:
            a.call(register_request("C1", "b1", "127.0.0.1:10001", 0, ["Shared", "Other"]))
            b.call(register_request("C2", "b2", "127.0.0.1:10002", 0, ["Shared", "Other"]))
            n = addr(proc)
            assert admin("deleteTopic", "-t", "Shared", "-c", "C1", "-n", n) == (
                0, "delete topic [Shared] from NameServer success.\n", "")
            route = json.loads(admin("topicRoute", "-t", "Shared", "-n", n)[1])
            assert [q["brokerName"] for q in route["queueDatas"]] == ["b2"]
            assert admin("deleteTopic", "-t", "Shared", "-n", n)[0] == 0
            assert admin("topicRoute", "-t", "Shared", "-n", n)[0] == 1
    finally:
        proc.stop()


def test_writes_go_to_every_name_server_and_reads_to_the_first_that_answers(server, tmp_path):
    other = NamesrvProcess(tmp_path).start()
    try:
        both = "%s;%s" % (addr(server), addr(other))
        assert admin("updateKvConfig", "-s", "NS", "-k", "k", "-v", "v", "-n", both)[0] == 0
        for proc in (server, other):
            assert admin("getKvConfig", "-s", "NS", "-k", "k", "-n", addr(proc))[1].splitlines()[1].split() == ["k", "v"]
        dead = "127.0.0.1:%d" % free_port()
        status, out, _ = admin("clusterList", "-n", "%s;%s" % (dead, addr(server)))
        assert status == 0 and "broker-b" in out
        status, out, err = admin("updateKvConfig", "-s", "NS", "-k", "k", "-v", "w", "-n", "%s;%s" % (addr(other), dead))
        assert status == 1 and out == "create or update kv config to namespace success.\n"
        assert err.startswith("namesrv-admin: updateKvConfig: cannot reach name server %s: " % dead)
    finally:
        other.stop()


def test_unreachable_server_is_one_line():
    dead = "127.0.0.1:%d" % free_port()
    status, out, err = admin("clusterList", "-n", dead)
    assert status == 1 and out == ""
    assert err == "namesrv-admin: clusterList: cannot reach name server %s: Connection refused\n" % dead


def test_silent_server_is_a_timeout():
    with socket.socket() as silent:   # accepts connections (backlog) but never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        n = "127.0.0.1:%d" % silent.getsockname()[1]
        status, out, err = admin("--timeout", "0.3", "topicList", "-n", n)
    assert status == 1 and out == ""
    assert err == ("namesrv-admin: topicList: timeout: no answer to GET_ALL_TOPIC_LIST_FROM_NAMESERVER from %s "
                   "within 0.3s\n" % n)


def serve_once(answer):
    """A one-connection TCP server that reads a little, writes ``answer`` and closes; its address."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(10)

    def run():
        try:
            conn, _ = listener.accept()
            with conn:
                conn.settimeout(10)
                conn.recv(65536)
                conn.sendall(answer)
        finally:
            listener.close()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return "127.0.0.1:%d" % listener.getsockname()[1], thread


def test_a_dropped_connection_and_a_server_that_is_not_a_name_server():
    n, thread = serve_once(b"")
    status, _, err = admin("clusterList", "-n", n)
    thread.join(10)
    assert status == 1 and err == ("namesrv-admin: clusterList: connection to name server %s lost: "
                                   "connection closed by the server\n" % n)
    n, thread = serve_once(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
    status, _, err = admin("clusterList", "-n", n)
    thread.join(10)
    assert status == 1 and err == ("namesrv-admin: clusterList: unreadable answer from %s (is it a name server?): "
                                   "frame length 1213486160\n" % n)


def test_bad_address_and_missing_address():
    assert admin("clusterList", "-n", "localhost")[2] == (
        "namesrv-admin: clusterList: bad name server address 'localhost' (expected host:port)\n")
    assert admin("clusterList")[2] == (
        "namesrv-admin: clusterList: no name server address: give -n host:port or set NAMESRV_ADDR\n")


def test_acl_credentials_from_flags_or_environment(tmp_path):
    (tmp_path / "plain_acl.yml").write_text(ACL)
    proc = NamesrvProcess(tmp_path, {"aclEnable": "true", "aclFile": str(tmp_path / "plain_acl.yml"),
                                     "aclSignedClasses": "adminRead,adminWrite"}).start()
    try:
        n = addr(proc)
        status, _, err = admin("updateKvConfig", "-s", "NS", "-k", "k", "-v", "v", "-n", n)
        assert status == 1 and err.startswith("namesrv-admin: updateKvConfig: %s: NO_PERMISSION (16) No accessKey" % n)
        status, _, err = admin("topicList", "-n", n, "--accessKey", "operator", "--secretKey", "wrong")
        assert err.startswith("namesrv-admin: topicList: %s: NO_PERMISSION (16) Check signature failed for "
                              "accessKey=operator: request code 206 (GET_ALL_TOPIC_LIST_FROM_NAMESERVER) is admin_read"
                              % n)
        assert admin("updateKvConfig", "-s", "NS", "-k", "k", "-v", "v", "-n", n,
                     "--accessKey", "operator", "--secretKey", "ops-secret-1")[0] == 0
        env = {"ROCKETMQ_ACCESS_KEY": "operator", "ROCKETMQ_SECRET_KEY": "ops-secret-1", "NAMESRV_ADDR": n}
        status, out, _ = admin("getKvConfig", "-s", "NS", environ=env)
        assert status == 0 and out.splitlines()[1].split() == ["k", "v"]
    finally:
        proc.stop()


def test_python_dash_m_entry_point(server):
    env = dict(os.environ, PYTHONPATH=REPO)
    done = subprocess.run([sys.executable, "-m", "namesrv.admin", "topicList", "-n", addr(server)],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0 and done.stdout.split() == ["Ordered", "TopicA", "TopicB"]


def test_a_controller_command_sent_to_a_name_server_port_says_where_the_controller_listens(server):
    status, out, err = admin("getControllerMetaData", "-a", addr(server))
    assert (status, out) == (1, "")
    assert err == ("namesrv-admin: getControllerMetaData: %s: REQUEST_CODE_NOT_SUPPORTED (3) request type 1005 not "
                   "supported: %s is no controller (a name server's port?): the controller listens on its address in "
                   "controllerDLegerPeers (9878 by default), give that to -a\n" % (addr(server), addr(server)))
