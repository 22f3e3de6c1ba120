"""Two instances on one host: each restores its own routes only (files per instance, snapshot owner)."""

import os

from namesrv.protocol.codes import ResponseCode
from tests.brokers import register_request, route_request
from tests.integration.server import NamesrvProcess, free_port


class DefaultPathsNamesrv(NamesrvProcess):
    """A server that writes where a user's would by default: only HOME is ours (tmp_path)."""

    def __init__(self, home, workdir, port, properties=None):
        os.makedirs(workdir, exist_ok=True)
        NamesrvProcess.__init__(self, workdir, properties, port=port)
        with open(self.config_file, "w") as f:
            f.write("listenPort=%d\nbindAddress=127.0.0.1\n" % port)
            for key, value in (properties or {}).items():
                f.write("%s=%s\n" % (key, value))
        self.home = str(home)

    def env(self):
        return dict(NamesrvProcess.env(self), HOME=self.home)


def register_and_stop(server, broker_name, topic):
    """Register, then stop the server while the broker is still connected (a broker's close
    would forget it: the snapshot must hold a live broker for the test to mean anything)."""
    broker = server.client()
    try:
        answer = broker.call(register_request("C", broker_name, "127.0.0.1:10911", topics=[topic, topic + "2"]))
        assert answer.code == ResponseCode.SUCCESS
        assert route_code(server, topic) == ResponseCode.SUCCESS
    finally:
        server.stop()
        broker.close()


def route_code(server, topic):
    with server.client() as client:
        return client.call(route_request(topic)).code


def test_default_files_differ_per_port_and_each_instance_restores_only_its_own_routes(tmp_path):
    port_a, port_b = free_port(), free_port()
    a = DefaultPathsNamesrv(tmp_path, tmp_path / "a", port_a).start()
    register_and_stop(a, "inst-a", "OnlyOnA")
    home = os.listdir(tmp_path / "namesrv")
    assert "routeSnapshot-%d.msgpack" % port_a in home and "kvConfig-%d.json.instance" % port_a in home

    b = DefaultPathsNamesrv(tmp_path, tmp_path / "b", port_b).start()
    try:
        assert route_code(b, "OnlyOnA") == ResponseCode.TOPIC_NOT_EXIST
    finally:
        b.stop()

    again = DefaultPathsNamesrv(tmp_path, tmp_path / "a2", port_a).start()   # A's warm restart still works
    try:
        assert route_code(again, "OnlyOnA") == ResponseCode.SUCCESS
    finally:
        again.stop()
    logs = os.listdir(tmp_path / "logs" / "rocketmqlogs")
    assert {"namesrv-events-%d.log" % port_a, "namesrv-events-%d.log" % port_b} <= set(logs)


def test_a_snapshot_another_instance_wrote_is_logged_and_ignored(tmp_path):
    shared = str(tmp_path / "shared.snapshot")
    for name in ("a", "b"):
        os.makedirs(tmp_path / name)
    a = NamesrvProcess(tmp_path / "a", {"routeSnapshotPath": shared}).start()
    register_and_stop(a, "inst-a", "OnlyOnA")
    b = NamesrvProcess(tmp_path / "b", {"routeSnapshotPath": shared}).start()
    try:
        assert route_code(b, "OnlyOnA") == ResponseCode.TOPIC_NOT_EXIST
    finally:
        b.stop()
    assert "route snapshot %s ignored, starting empty: it was written by another instance" % shared in b.log()


def test_the_same_instance_moving_to_another_address_on_its_port_keeps_its_routes(tmp_path):
    """bindAddress changed, nothing else (the same KV file, so the same instance id, the same port): the
    brokers registered on that port still register here, so the routes come back at once."""
    port = free_port()
    first = NamesrvProcess(tmp_path, {"bindAddress": "127.0.0.1"}, port=port).start()
    register_and_stop(first, "inst-a", "Moved")
    moved = NamesrvProcess(tmp_path, {"bindAddress": "127.0.0.2"}, port=port).start()
    try:
        assert moved.host == "127.0.0.2" and route_code(moved, "Moved") == ResponseCode.SUCCESS
    finally:
        moved.stop()
    assert "written while this instance listened on 127.0.0.1:%d, restored on 127.0.0.2:%d" % (port, port) \
        in moved.log()


def test_the_same_instance_on_another_port_starts_empty_and_says_why(tmp_path):
    first = NamesrvProcess(tmp_path, port=free_port()).start()
    register_and_stop(first, "inst-a", "Stays")
    other = NamesrvProcess(tmp_path, port=free_port()).start()
    try:
        assert route_code(other, "Stays") == ResponseCode.TOPIC_NOT_EXIST
    finally:
        other.stop()
    assert ("ignored, starting empty: this instance wrote it while listening on port %d, and listens on port %d "
            "now" % (first.port, other.port)) in other.log()
