"""tools.demo_broker, the broker a new user starts to see the status page change, against a real twistd."""

import io
import json
from contextlib import redirect_stdout

from namesrv.admin.cli import main as admin
from tests.integration.server import NamesrvProcess
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
