"""`twistd namesrv` as operators run it: a real process, real sockets, 127.0.0.1 only."""

import json
import os
import signal
import subprocess

from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from tests.brokers import register_request, route_request
from tests.dropins import processor_source, write_dropin
from tests.integration.server import NamesrvProcess, TWISTD, register_and_read_route


def assert_clean_stop(server):
    """twistd stops the reactor on SIGTERM, then exits by re-raising the signal (status -15)."""
    assert server.stop(signal.SIGTERM) in (0, -signal.SIGTERM)
    log = server.log()
    assert "The Name Server stopped" in log and "Main loop terminated" in log
    assert "Traceback" not in log and "Unhandled" not in log


def test_twistd_help_lists_namesrv(tmp_path):
    server = NamesrvProcess(tmp_path)
    out = subprocess.run([TWISTD, "--help"], env=server.env(), capture_output=True, text=True, timeout=60)
    assert "namesrv" in out.stdout


def test_broker_registers_and_route_is_served(namesrv):
    with namesrv.client() as broker, namesrv.client() as producer:
        data = register_and_read_route(broker, producer, "broker-a", ["TopicA", "TopicB"])
        assert data["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.1:10911"}
        assert data["queueDatas"][0]["brokerName"] == "broker-a"
        missing = producer.call(route_request("NoSuchTopic"))
        assert missing.code == ResponseCode.TOPIC_NOT_EXIST
        assert missing.remark.startswith("No topic route info in name server for the topic: NoSuchTopic")


def test_compressed_registration_is_served(namesrv):
    with namesrv.client() as client:
        answer = client.call(register_request("C", "broker-z", "127.0.0.1:10999", topics=["Zed", "Zed2"], compressed=True))
        assert answer.code == ResponseCode.SUCCESS
        route = client.call(route_request("Zed"))
        assert json.loads(route.body)["brokerDatas"][0]["brokerName"] == "broker-z"


def test_broker_is_forgotten_when_its_connection_closes(namesrv):
    broker = namesrv.client()
    broker.call(register_request("C", "broker-gone", "127.0.0.1:10777", topics=["Bye", "Bye2"]))
    with namesrv.client() as client:
        assert client.call(route_request("Bye")).code == ResponseCode.SUCCESS
        broker.close()
        for _ in range(200):  # bounded: the close is seen within a few reactor turns
            if client.call(route_request("Bye")).code == ResponseCode.TOPIC_NOT_EXIST:
                break
        assert client.call(route_request("Bye")).code == ResponseCode.TOPIC_NOT_EXIST


def test_bad_frame_closes_only_that_connection(namesrv):
    import socket
    with namesrv.client() as good:
        bad = socket.create_connection(("127.0.0.1", namesrv.port))
        bad.sendall(b"\x00\x00\x00\x08\x00\x00\x00\x04{{{{")
        assert bad.recv(10) == b""
        bad.close()
        assert good.call(route_request("x")).code == ResponseCode.TOPIC_NOT_EXIST


def test_unknown_code_answers_not_supported(namesrv):
    with namesrv.client() as client:
        answer = client.call(make_request(4242))
        assert answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert answer.remark == " request type 4242 not supported"


def test_print_config_and_exit(tmp_path):
    server = NamesrvProcess(tmp_path, {"orderMessageEnable": "true"})
    out = subprocess.run(server.command("-p"), env=server.env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    assert lines["listenPort"] == str(server.port)
    assert lines["orderMessageEnable"] == "true"
    assert lines["serverChannelMaxIdleTimeSeconds"] == "120"


def test_malformed_property_refuses_to_start(tmp_path):
    server = NamesrvProcess(tmp_path, {"serverChannelMaxIdleTimeSeconds": "soon"})
    out = subprocess.run(server.command(), env=server.env(), capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "serverChannelMaxIdleTimeSeconds" in out.stdout + out.stderr


def test_corrupt_kv_file_refuses_to_start_and_is_kept(tmp_path):
    kv = tmp_path / "kvConfig.json"
    kv.write_text("{not json")
    server = NamesrvProcess(tmp_path)
    out = subprocess.run(server.command(), env=server.env(), capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "kvConfig.json" in out.stdout + out.stderr
    assert kv.read_text() == "{not json"


def test_kv_value_survives_restart_and_sigterm_is_clean(tmp_path):
    server = NamesrvProcess(tmp_path).start()
    with server.client() as client:
        put = make_request(RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v1"})
        assert client.call(put).code == ResponseCode.SUCCESS
    assert_clean_stop(server)
    assert json.loads((tmp_path / "kvConfig.json").read_text()) == {"configTable": {"ns": {"k": "v1"}}}
    server = NamesrvProcess(tmp_path, port=server.port).start()
    try:
        with server.client() as client:
            got = client.call(make_request(RequestCode.GET_KV_CONFIG, {"namespace": "ns", "key": "k"}))
            assert got.code == ResponseCode.SUCCESS and got.ext["value"] == "v1"
    finally:
        server.stop()


def test_routes_survive_restart_until_brokers_expire(tmp_path):
    server = NamesrvProcess(tmp_path).start()
    broker = server.client()
    broker.call(register_request("C", "broker-w", "127.0.0.1:10888", topics=["Warm", "Warm2"], counter=2))
    assert_clean_stop(server)
    broker.close()
    server = NamesrvProcess(tmp_path, port=server.port).start()
    try:
        with server.client() as client:
            route = client.call(route_request("Warm"))
            assert route.code == ResponseCode.SUCCESS, route.remark
            assert json.loads(route.body)["brokerDatas"][0]["brokerName"] == "broker-w"
    finally:
        server.stop()


def test_third_party_processor_dropin_reached_over_tcp(tmp_path):
    extra = write_dropin(tmp_path / "extra", "hello_processor", "hello", "Hello", processor_source("Hello", "hello", 7777, """
        topics = len(self.context.routes.topic_names()) if hasattr(self.context.routes, "topic_names") else 0
        return request.make_response(0, remark="hello " + request.get("who", "nobody"))
    """))
    server = NamesrvProcess(tmp_path, extra_pythonpath=[extra]).start()
    try:
        with server.client() as client:
            answer = client.call(make_request(7777, {"who": "operator"}))
            assert (answer.code, answer.remark) == (0, "hello operator")
    finally:
        server.stop()


def test_conflicting_third_party_processor_refuses_to_start(tmp_path):
    # 105 is GET_ROUTEINFO_BY_TOPIC, the route processor's
    source = processor_source("Thief", "thief", 105, "return None")
    extra = write_dropin(tmp_path / "extra", "thief", "thief", "Thief", source)
    server = NamesrvProcess(tmp_path, extra_pythonpath=[extra])
    out = subprocess.run(server.command(), env=server.env(), capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "'route'" in out.stdout + out.stderr and "'thief'" in out.stdout + out.stderr


def test_event_log_records_what_happened(tmp_path):
    server = NamesrvProcess(tmp_path).start()
    broker = server.client()
    broker.call(register_request("C", "broker-e", "127.0.0.1:10666", topics=["Ev1", "Ev2"]))
    broker.call(register_request("C", "broker-e", "127.0.0.1:10666", topics=["Ev1", "Ev2"]))
    with server.client() as client:
        for _ in range(20):
            client.call(route_request("Ev1"))
    broker.close()
    with server.client() as client:  # the close is housekept before this answer
        client.call(route_request("Ev1"))
    assert_clean_stop(server)
    with open(tmp_path / "logs" / ("namesrv-events-%d.log" % server.port)) as f:
        events = [json.loads(line) for line in f]
    kinds = [e["event"] for e in events]
    assert kinds.count("broker_registered") == 1 and kinds.count("broker_heartbeat") == 1
    assert "channel_closed" in kinds and "topic_route_changed" in kinds
    assert all(e["server"] == "127.0.0.1:%d" % server.port for e in events)
    routes = [e for e in events if e["event"] == "request" and e["code"] == 105 and e["resp"] == 0]
    assert sum(e["count"] for e in routes) >= 20
