"""The controller inside a real `twistd namesrv`, and alone as `twistd controller`, with fake brokers
speaking the real frames over TCP on 127.0.0.1."""

import json
import os
import subprocess

from namesrv.codec.fastjson import loads
from namesrv.protocol.codes import RequestCode, ResponseCode
from tests.controller.wire import WireBroker, controller_ports, controller_properties
from tests.integration.server import TWISTD, NamesrvProcess, free_port


def test_embedded_controller_fails_a_group_over_and_a_restart_keeps_ids_and_epochs(tmp_path):
    (port,) = controller_ports(1)
    server = NamesrvProcess(tmp_path, controller_properties(tmp_path, port)).start()
    brokers = []
    try:
        a1, a2 = WireBroker(port), WireBroker(port)
        brokers += [a1, a2]
        assert a1.start().code == ResponseCode.SUCCESS and a1.broker_id == 1
        assert a1.elect().code == ResponseCode.SUCCESS
        answer = a2.start()
        assert a2.broker_id == 2 and answer.ext["masterAddress"] == a1.address
        altered = a1.call(RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET,
                          {"brokerName": "broker-a", "masterBrokerId": 1, "masterEpoch": 1},
                          json.dumps({"syncStateSet": [1, 2], "syncStateSetEpoch": 1}).encode())
        assert altered.code == ResponseCode.SUCCESS
        # the name server's own port still answers its own codes, and not the controller's
        with server.client() as namesrv:
            assert namesrv.call(_request(RequestCode.GET_BROKER_CLUSTER_INFO)).code == ResponseCode.SUCCESS
            assert namesrv.call(_request(RequestCode.CONTROLLER_GET_REPLICA_INFO, {"brokerName": "broker-a"})).code \
                == ResponseCode.REQUEST_CODE_NOT_SUPPORTED

        a1.die()                                   # the master's connection closes
        assert a2.notifications.arrived.wait(20), "no NOTIFY_BROKER_ROLE_CHANGED reached the survivor"
        (notice,) = a2.notifications.received
        assert notice.code == RequestCode.NOTIFY_BROKER_ROLE_CHANGED and notice.is_oneway
        assert notice.ext == {"masterAddress": a2.address, "masterEpoch": "2", "syncStateSetEpoch": "3",
                              "masterBrokerId": "2"}
        assert loads(notice.body) == {"syncStateSet": [2], "syncStateSetEpoch": 3}
        info = a2.call(RequestCode.CONTROLLER_GET_REPLICA_INFO, {"brokerName": "broker-a"})
        assert info.ext["masterBrokerId"] == "2" and info.ext["masterEpoch"] == "2"

        server.stop()
        assert "Server Shut Down." in server.log()
        server.start()
        a3 = WireBroker(port)
        brokers.append(a3)
        info = a3.call(RequestCode.CONTROLLER_GET_REPLICA_INFO, {"brokerName": "broker-a"})
        assert (info.ext["masterBrokerId"], info.ext["masterEpoch"]) == ("2", "2")
        assert loads(info.body) == {"syncStateSet": [2], "syncStateSetEpoch": 3}
        assert a3.call(RequestCode.CONTROLLER_GET_NEXT_BROKER_ID, {"clusterName": "ClusterW",
                                                                   "brokerName": "broker-a"}).ext["nextBrokerId"] == "3"
        events = [json.loads(line)["event"] for line in open(tmp_path / "logs" / os.listdir(tmp_path / "logs")[0])]
        assert "controller_master_inactive" in events and "controller_master_elected" in events
    finally:
        for broker in brokers:
            broker.close()
        server.stop()


def test_standalone_controller_serves_and_refuses_a_bad_configuration(tmp_path):
    (port,) = controller_ports(1)
    conf = tmp_path / "controller.properties"
    metrics_port = free_port()
    conf.write_text("controllerDLegerGroup=alone\ncontrollerDLegerPeers=n0-127.0.0.1:%d\ncontrollerDLegerSelfId=n0\n"
                    "controllerStorePath=%s\nlogDir=%s\nprometheusListenPort=%d\n"
                    % (port, tmp_path / "store", tmp_path / "logs", metrics_port))
    printed = subprocess.run([TWISTD, "--pidfile=", "controller", "-c", str(conf), "-p"], capture_output=True,
                             text=True, timeout=60)
    assert printed.returncode == 0 and "controllerDLegerGroup=alone\n" in printed.stdout

    bad = tmp_path / "bad.properties"
    bad.write_text("controllerDLegerPeers=n0-127.0.0.1:%d\ncontrollerDLegerSelfId=n7\n" % port)
    refused = subprocess.run([TWISTD, "-n", "--pidfile=", "controller", "-c", str(bad)], capture_output=True,
                             text=True, timeout=60)
    assert refused.returncode != 0
    assert "controllerDLegerSelfId=n7 is not in controllerDLegerPeers (n0)" in refused.stdout + refused.stderr

    process = subprocess.Popen([TWISTD, "-n", "--pidfile=", "--logfile", str(tmp_path / "c.log"), "controller",
                                "-c", str(conf)], cwd=str(tmp_path))
    broker = None
    try:
        broker = _connect_when_listening(port)
        _bad_frames_are_closed(port)
        answer = broker.call(RequestCode.CONTROLLER_GET_METADATA_INFO)
        assert answer.ext == {"group": "alone", "controllerLeaderId": "n0", "controllerLeaderAddress":
                              "127.0.0.1:%d" % port, "isLeader": "true", "peers": "n0:127.0.0.1:%d;" % port}
        assert broker.start().code == ResponseCode.SUCCESS and broker.elect().code == ResponseCode.SUCCESS
        from urllib.request import urlopen
        scraped = urlopen("http://127.0.0.1:%d/metrics" % metrics_port, timeout=10).read().decode()
        assert 'rocketmq_namesrv_controller_is_leader{controller_group="alone",controller_id="n0"} 1.0' in scraped
        assert 'rocketmq_namesrv_controller_group_has_master{broker_name="broker-s",cluster="ClusterW"} 1.0' \
            in scraped
        assert 'name="CONTROLLER_ELECT_MASTER"' in scraped
    finally:
        if broker is not None:
            broker.close()
        process.terminate()
        process.wait(30)


def _request(code, ext=None):
    from namesrv.protocol.command import make_request
    return make_request(code, ext=ext)


def _connect_when_listening(port, attempts=600):
    import time
    for _ in range(attempts):
        try:
            return WireBroker(port, name="broker-s")
        except ConnectionRefusedError:
            time.sleep(0.05)
    raise AssertionError("the standalone controller did not listen on %d" % port)


def _bad_frames_are_closed(port):
    """A huge length, a garbage header and a truncated frame each close only their own connection."""
    import socket
    import struct
    for data in (struct.pack(">I", 0x7FFFFFFF) + b"x" * 16, struct.pack(">II", 12, 8) + b"not json",
                 struct.pack(">I", 100) + b"short"):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            raw.sendall(data)
            if data.endswith(b"short"):
                raw.shutdown(socket.SHUT_WR)      # the peer goes away mid-frame
            assert raw.recv(4096) == b""          # closed, nothing answered
