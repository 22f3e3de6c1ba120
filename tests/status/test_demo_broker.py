"""tools.demo_broker, the broker a new user starts to see the status page change, against a real twistd."""

import io
import json
import subprocess
import sys
from contextlib import redirect_stdout

from namesrv.admin.cli import main as admin
from tests.integration.server import REPO, NamesrvProcess
from tools import demo_broker


def cluster_list(addr):
    out = io.StringIO()
    assert admin(["--json", "clusterList", "-n", addr], stdout=out, environ={}) == 0
    return json.loads(out.getvalue())


def test_demo_broker_registers_then_leaves(tmp_path):
    server = NamesrvProcess(tmp_path).start()
    try:
        addr = "127.0.0.1:%d" % server.port
        broker = demo_broker.DemoBroker(demo_broker.parse_args(["-n", addr, "--name", "broker-x", "--topics", "3"]))
        broker.register()
        assert cluster_list(addr) == [{"cluster": "DefaultCluster", "brokerName": "broker-x", "brokerId": 0,
                                       "addr": "127.0.0.1:10911"}]
        broker.unregister()
        assert cluster_list(addr) == []
        with redirect_stdout(io.StringIO()) as printed:
            assert demo_broker.main(["-n", addr, "--name", "broker-y", "--rounds", "1"]) == 0
        assert printed.getvalue().splitlines() == [
            "registered broker-y (127.0.0.1:10911, id 0) with 5 topics on %s" % addr, "unregistered broker-y"]
    finally:
        server.stop()


def test_demo_broker_registers_again_at_once_when_its_name_server_restarts(tmp_path):
    """The README's tour restarts the server under the stand-in: it notices its connection close and
    registers again as soon as the new process answers, long before its next 30-s round."""
    server = NamesrvProcess(tmp_path).start()
    addr = "127.0.0.1:%d" % server.port
    broker = subprocess.Popen([sys.executable, "-m", "tools.demo_broker", "-n", addr, "--name", "broker-r",
                               "--topics", "2", "--period", "600"], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert broker.stdout.readline().startswith("registered broker-r")
        server.stop()
        assert broker.stdout.readline().startswith("name server %s closed the connection" % addr)
        server = NamesrvProcess(tmp_path, port=server.port).start()
        # A connection made while the old process stops can be accepted by its port and then reset (it closes
        # its connections before its port): the stand-in says so and tries again. Each such line is bounded
        # by the next read; the registration comes within a few of them.
        lines = [broker.stdout.readline()]
        while lines[-1].startswith("name server %s gone" % addr) and len(lines) < 20:
            lines.append(broker.stdout.readline())
        assert lines[-1] == "registered broker-r (127.0.0.1:10911, id 0) with 2 topics on %s again\n" % addr, lines
        assert cluster_list(addr)[0]["brokerName"] == "broker-r"
    finally:
        broker.terminate()
        broker.communicate(timeout=30)
        server.stop()
