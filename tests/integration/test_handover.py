"""`twistd namesrv --takeover` replaces a running server on its port over real sockets: route
readers see no failure and no TOPIC_NOT_EXIST, a broker's open connection is served by the
new process, and the old one exits by itself."""

import os
import subprocess
import time

import pytest

from namesrv.client import BlockingRemotingClient, RouteReadLoop
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from tests.brokers import register_request, route_request
from tests.integration.server import NamesrvProcess, wait_for
from tests.integration.takeover import start_takeover


TOPIC = "HandoverTopic"
#: each reader stops after this many requests or seconds, whichever comes first
MAX_REQUESTS = 20000
MAX_SECONDS = 60.0


class RouteReader(RouteReadLoop):
    """Reads TOPIC's route in a loop; ``fresh``: a new connection per request (exercises the
    accept queue), else one connection kept open (as a Java client does)."""

    def __init__(self, port, fresh=False):
        RouteReadLoop.__init__(self, port, TOPIC, fresh, max_seconds=MAX_SECONDS, max_requests=MAX_REQUESTS)
        self.sent = self.failed = self.not_exist = 0
        self.slowest = 0.0

    def record(self, began, seconds, code, error):
        self.sent += 1
        self.slowest = max(self.slowest, seconds)
        if code == ResponseCode.TOPIC_NOT_EXIST:
            self.not_exist += 1
        elif code != ResponseCode.SUCCESS:
            self.failed += 1
            self.errors.append(error)


@pytest.mark.parametrize("workers", ["1", "0"])
def test_takeover_drops_no_request_and_keeps_the_broker(tmp_path, workers):
    old = NamesrvProcess(tmp_path, {"routeReadWorkers": workers}).start()
    new = None
    readers = []
    try:
        broker = BlockingRemotingClient("127.0.0.1", old.port)
        assert broker.call(register_request("C", "b-hand", "127.0.0.1:10911", topics=[TOPIC, "First"])).code == 0
        wait_for(lambda: BlockingRemotingClient("127.0.0.1", old.port).call(route_request(TOPIC)).code == 0,
                 30, "the route on the old process")
        readers = [RouteReader(old.port), RouteReader(old.port, fresh=True)]
        for reader in readers:
            reader.start()
        time.sleep(0.5)
        new = start_takeover(old)
        old.process.wait(30)   # the old process exits by itself once everything is handed over
        assert old.process.returncode == 0, old.log()
        time.sleep(0.5)
        for reader in readers:
            reader.stop_event.set()
            reader.join(MAX_SECONDS)
        # the broker's connection, opened on the old process, is served by the new one
        assert broker.call(register_request("C", "b-hand", "127.0.0.1:10911", topics=[TOPIC, "First", "Second"],
                                            counter=2)).code == 0
        answer = broker.call(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Second"}))
        assert answer.code == ResponseCode.SUCCESS
        # version 3: the first copy is a snapshot file, written while serving; the new workers restore it too,
        # and get what changed since (a client's read of the topic registered after the takeover finds it;
        # asked while the broker is still connected: its connection's close forgets its topics)
        assert "first copy of the tables restored from its file" in new.log()
        if workers != "0":
            wait_for(lambda: "topics restored from the route snapshot" in new.log(), 30, "the new worker's restore")
            wait_for(lambda: "read worker 0 listening" in new.log(), 30, "the new worker")
            assert BlockingRemotingClient("127.0.0.1", old.port).call(route_request("Second")).code == 0
        broker.close()
        assert new.process.poll() is None
        wait_for(lambda: "takeover complete" in new.log(), 10, "the new process's log")
        # the old process's files are the new one's once the old one has exited (namesrv/startup/ownership.py)
        wait_for(lambda: "kvConfigPath %s is this process's now" % old.properties["kvConfigPath"] in new.log(), 10,
                 "the new process's claim of the KV file")
    finally:
        for reader in readers:
            reader.stop_event.set()
        old.stop()
        if new is not None:
            new.stop()
    for reader in readers:
        assert reader.sent > 50
        assert (reader.failed, reader.not_exist) == (0, 0), (reader.fresh, reader.errors[:5])
    assert "handed over: exiting" in old.log()


def test_a_takeover_by_another_listen_address_is_refused_and_the_old_process_keeps_serving(tmp_path):
    old = NamesrvProcess(tmp_path, {"routeReadWorkers": "0"}).start()
    try:
        broker = BlockingRemotingClient("127.0.0.1", old.port)
        assert broker.call(register_request("C", "b-keep", "127.0.0.1:10911", topics=[TOPIC, "First"])).code == 0
        # the same KV file (so the same control socket) but another port: another instance, refused
        # before it asks (the KV file is the old process's: namesrv/startup/ownership.py)
        (tmp_path / "other").mkdir()
        other = NamesrvProcess(tmp_path / "other", {"kvConfigPath": os.path.join(old.workdir, "kvConfig.json")})
        refused = subprocess.run(other.command("--takeover"), cwd=other.workdir, env=other.env(),
                                 capture_output=True, text=True, timeout=30)
        assert refused.returncode == 1
        assert refused.stderr.startswith("namesrv: refusing to start: kvConfigPath %s belongs to the running "
                                         "server on 127.0.0.1:%d" % (os.path.join(old.workdir, "kvConfig.json"),
                                                                     old.port)), refused.stderr
        assert old.process.poll() is None
        assert broker.call(route_request(TOPIC)).code == ResponseCode.SUCCESS
        broker.close()
    finally:
        old.stop()
