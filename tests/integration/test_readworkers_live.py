"""Read workers as operators run them: ``twistd namesrv`` with routeReadWorkers, real sockets.

Exclusive mode puts every client connection on a worker, so each test below exercises
the worker path (local answers, forwarding, housekeeping through forwarded connections).
"""

import json
import os
import re
import signal
import time

from namesrv.protocol.codec import encode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from tests.brokers import register_request, route_request
from tests.integration.workers import (
    WORKERS, answered_by_workers, reads_reach_the_workers, until_the_route_is_gone, wait_for_log)


def test_reads_see_every_acknowledged_write_at_once(make_namesrv):
    server = make_namesrv(WORKERS).start()
    clients = [server.client() for _ in range(6)]
    broker = clients[0]
    try:
        for round_index in range(5):
            topic = "ReadAfterWrite%d" % round_index
            answer = broker.call(register_request("DefaultCluster", "broker-a", "127.0.0.1:10911",
                                                  topics=[topic, "Stable"], counter=round_index + 1))
            assert answer.code == ResponseCode.SUCCESS
            # right after the acknowledgement, on every other connection: the new topic is there
            for client in clients[1:]:
                route = client.call(route_request(topic))
                assert route.code == ResponseCode.SUCCESS, route.remark
                assert json.loads(route.body)["queueDatas"][0]["brokerName"] == "broker-a"
        for _ in range(50):   # steady state: answered by the worker from its replica
            for client in clients[1:]:
                assert client.call(route_request("Stable")).code == ResponseCode.SUCCESS
        cluster = clients[1].call(make_request(RequestCode.GET_BROKER_CLUSTER_INFO))
        assert b'"clusterAddrTable":{"DefaultCluster":["broker-a"]}' in cluster.body   # fastjson: int keys
    finally:
        for client in clients:
            client.close()
    # the 250 steady reads, less the few that came while the last publication was applied
    # (the worker forwards those), plus the cluster info
    assert answered_by_workers(server) >= 200
    assert "Traceback" not in server.log()


def test_closing_a_brokers_connection_on_a_worker_forgets_the_broker(make_namesrv):
    server = make_namesrv(WORKERS).start()
    with server.client() as producer:
        broker = server.client()
        assert broker.call(register_request("DefaultCluster", "broker-b", "127.0.0.1:10912",
                                            topics=["Leaving", "Other"])).code == ResponseCode.SUCCESS
        assert producer.call(route_request("Leaving")).code == ResponseCode.SUCCESS
        broker.close()
        # the worker closes its forwarded connection; the main process's housekeeping runs
        until_the_route_is_gone(producer, "Leaving")
    assert "its connection" in server.log() and "closed" in server.log()


def test_kv_and_config_changes_reach_the_workers_answers(make_namesrv):
    server = make_namesrv(WORKERS).start()
    with server.client() as admin, server.client() as producer:
        assert admin.call(register_request("DefaultCluster", "broker-c", "127.0.0.1:10913",
                                           topics=["Ordered", "Plain"])).code == ResponseCode.SUCCESS
        assert "orderTopicConf" not in json.loads(producer.call(route_request("Ordered")).body)
        put = make_request(RequestCode.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "Ordered",
                                                      "value": "broker-c:4"})
        assert admin.call(put).code == ResponseCode.SUCCESS
        update = make_request(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true")
        assert admin.call(update).code == ResponseCode.SUCCESS
        route = json.loads(producer.call(route_request("Ordered")).body)
        assert route["orderTopicConf"] == "broker-c:4"
        # forwarded requests answer as the main process would
        get = producer.call(make_request(RequestCode.GET_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG",
                                                                     "key": "Ordered"}))
        assert get.code == ResponseCode.SUCCESS and get.ext["value"] == "broker-c:4"
        unknown = producer.call(make_request(9999))
        assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


def test_main_and_worker_share_the_port(make_namesrv):
    server = make_namesrv({"routeReadWorkers": "1"}).start()
    wait_for_log(server, "read worker 0 listening")   # the main process listens first
    clients = [server.client() for _ in range(24)]
    def register(client):
        answer = client.call(register_request("DefaultCluster", "broker-d", "127.0.0.1:10914", topics=["Shared", "Other"]))
        assert answer.code == ResponseCode.SUCCESS

    # 24 connections on the one socket both processes accept from: the worker takes some
    reads_reach_the_workers(server, clients, register)


def test_a_brokers_connection_moves_to_the_main_process_with_what_followed(make_namesrv):
    """REGISTER_BROKER, a KV read and a route read in one write: the connection is handed over
    after the first, and the main process answers all three on it (route reads first, as its
    scheduler does for any connection)."""
    server = make_namesrv(WORKERS).start()
    requests = [register_request("DefaultCluster", "broker-e", "127.0.0.1:10915", topics=["Moved", "Other"],
                                 opaque=1),
                make_request(RequestCode.GET_KV_CONFIG, {"namespace": "N", "key": "k"}, opaque=2),
                route_request("Moved", opaque=3)]
    with server.client() as broker:
        broker.sock.sendall(b"".join(encode_frame(r) for r in requests))
        answers = {a.opaque: a.code for a in (broker.receive() for _ in requests)}
        assert answers[1] == ResponseCode.SUCCESS and answers[2] == ResponseCode.QUERY_NOT_FOUND
        assert answers[3] in (ResponseCode.SUCCESS, ResponseCode.TOPIC_NOT_EXIST)
        assert broker.call(route_request("Moved", opaque=5)).code == ResponseCode.SUCCESS
        heartbeat = broker.call(register_request("DefaultCluster", "broker-e", "127.0.0.1:10915",
                                                 topics=["Moved", "Other"], opaque=4))
        assert heartbeat.code == ResponseCode.SUCCESS
    with server.client() as producer:   # the broker's connection closed: wait for the housekeeping
        for _ in range(200):
            if producer.call(route_request("Moved")).code == ResponseCode.TOPIC_NOT_EXIST:
                break
    server.stop(signal.SIGTERM)
    log = server.log()
    assert "1 broker connections handed over (0 of them before their first frame was all read)" in log
    # the main process served the broker's connection itself: its close ran the housekeeping there
    assert re.search(r"broker 127.0.0.1:10915 \(broker-e\) removed: its connection 127.0.0.1:\d+ closed", log)


def test_a_large_first_registration_moves_with_its_header_and_the_main_process_reads_the_rest(make_namesrv):
    """The worker hands the connection over once the header is in; the body's remaining bytes are read
    from the socket by the main process, which answers the whole registration."""
    server = make_namesrv(WORKERS).start()
    topics = ["Big%04d" % i for i in range(3000)]
    frame = encode_frame(register_request("DefaultCluster", "broker-g", "127.0.0.1:10917", topics=topics, opaque=1))
    header_end = 8 + (int.from_bytes(frame[4:8], "big") & 0xFFFFFF)
    with server.client() as broker:
        broker.sock.sendall(frame[:header_end + 100])
        time.sleep(0.3)   # let the worker read the start alone (the answer is the same if it reads more)
        broker.sock.sendall(frame[header_end + 100:])
        assert broker.receive().code == ResponseCode.SUCCESS
        with server.client() as producer:
            assert producer.call(route_request("Big2999")).code == ResponseCode.SUCCESS
    server.stop(signal.SIGTERM)
    assert "1 broker connections handed over (1 of them before their first frame was all read)" in server.log()


def test_a_killed_worker_is_replaced_and_catches_up(make_namesrv):
    server = make_namesrv(WORKERS).start()
    broker = server.client()
    try:
        assert broker.call(register_request("DefaultCluster", "broker-f", "127.0.0.1:10916",
                                            topics=["Before", "Other"])).code == ResponseCode.SUCCESS
        children = open("/proc/%d/task/%d/children" % (server.process.pid, server.process.pid)).read().split()
        os.kill(int(children[0]), signal.SIGKILL)
        wait_for_log(server, "route read worker 0 exited")
        deadline = time.monotonic() + 30
        while server.log().count("read worker 0 listening") < 2:
            assert time.monotonic() < deadline, server.log()[-3000:]
            time.sleep(0.05)
        # the broker's connection was handed to the main process: it outlived the worker
        assert broker.call(register_request("DefaultCluster", "broker-f", "127.0.0.1:10916",
                                            topics=["Before", "Other", "After"], counter=2)).code == 0
        with server.client() as producer:   # a new worker, with a full copy and what changed since
            for topic in ("Before", "After"):
                assert producer.call(route_request(topic)).code == ResponseCode.SUCCESS
    finally:
        broker.close()


def test_a_restarted_server_serves_its_snapshot_at_once_and_its_worker_restores_the_file_itself(make_namesrv):
    properties = dict(WORKERS, routeSnapshotEnable="true", routeSnapshotPath="routes.snapshot")
    first = make_namesrv(properties).start()
    wait_for_log(first, "read worker 0 listening")
    broker = first.client()
    try:
        topics = ["Kept%04d" % i for i in range(3000)]
        assert broker.call(register_request("DefaultCluster", "broker-a", "127.0.0.1:10911", topics=topics)).code == 0
        first.stop(signal.SIGTERM)   # the broker still connected: the snapshot holds it
    finally:
        broker.close()
    again = make_namesrv(properties, workdir=first.workdir, port=first.port).start()
    try:
        # the main process accepts at once (its worker restores the file meanwhile): never a TOPIC_NOT_EXIST
        # for a topic the snapshot holds, whichever answers
        with again.client() as reader:
            for topic in ("Kept0000", "Kept2999"):
                route = reader.call(route_request(topic))
                assert route.code == ResponseCode.SUCCESS, route.remark
            assert reader.call(route_request("NeverRegistered")).code == ResponseCode.TOPIC_NOT_EXIST
        wait_for_log(again, "3000 topics restored from the route snapshot")
        wait_for_log(again, "read worker 0 listening")
        log = again.log()
        assert "routes restored from routes.snapshot: 3000 topics" in log
        with again.client() as reader:
            for _ in range(20):
                assert reader.call(route_request("Kept1234")).code == ResponseCode.SUCCESS
    finally:
        again.stop()
    assert "full copy" not in again.log()
