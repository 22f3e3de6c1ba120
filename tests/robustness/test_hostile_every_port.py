"""Every port of a real `twistd namesrv` (remoting, a read worker behind it, the controller and its
Raft members, the status page, /metrics and the address service, the UNIX sockets of the workers
and of the takeover) sent pickles that would run code, garbage, oversize lengths and replayed member
frames: nothing runs, the connection is dropped, the refusal is logged at most once per kind, and the
server keeps answering routes and controller requests."""

import glob
import os
import pickle
import socket
import struct
import time

from namesrv.client import BlockingRemotingClient, recv_until_closed
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from tests.brokers import register_request, route_request
from tests.controller.wire import controller_ports, group_credentials
from tests.integration.server import free_port

MARKER_DIR = "/tmp"


class _RunsCode:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch %s" % self.marker,))


def _attacks(marker):
    bomb = pickle.dumps(_RunsCode(marker), protocol=2)
    return {
        "pickle": bomb,
        "framed pickle": struct.pack(">I", len(bomb) + 4) + struct.pack(">I", len(bomb)) + bomb,
        "member magic then pickle": b"RMQCTRL\x01" + bomb.ljust(80, b"\0"),
        "oversize length": struct.pack(">I", 0x7FFFFFF0) + b"\0" * 64,
        "garbage": os.urandom(2048),
        "http with pickle body": b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(bomb) + bomb,
    }


def _send(address, data, family=socket.AF_INET):
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(3)
        s.connect(address)
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            while s.recv(65536):
                pass
        except OSError:
            pass


def _replayed_member_frames(port, secret):
    """A handshake by someone holding the group's secret (but not n1's key) and its first frame, captured, then
    replayed on a new connection: neither finishes the handshake (no signature of n1's; the acceptor's nonce
    is new), so nothing after it is read."""
    import hashlib
    import hmac
    from namesrv.controller.replication import members
    nonce = os.urandom(32)
    hello = (members.MAGIC + bytes([members.MODE_SECRET]) + b"n1".ljust(32, b"\0") + nonce + os.urandom(32)
             + members.GroupState().pack())
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        s.sendall(hello)
        challenge = b""
        while len(challenge) < members.CHALLENGE_SIZE:
            chunk = s.recv(members.CHALLENGE_SIZE - len(challenge))
            if not chunk:
                return False
            challenge += chunk
        proof = hmac.new(secret, b"dial" + hello + challenge, hashlib.sha256).digest() + bytes(64)
        s.sendall(proof)
        captured = hello + proof
    # the same bytes again: the acceptor answers a fresh challenge, the old proof does not match it
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        s.sendall(captured + struct.pack(">I", 4) + b"\0" * 36)
        s.settimeout(3)
        recv_until_closed(s)
    return True


def test_nothing_any_port_receives_runs_and_the_server_serves_on(start_server, tmp_path):
    marker = os.path.join(MARKER_DIR, "namesrv-hostile-%d" % os.getpid())
    if os.path.exists(marker):
        os.remove(marker)
    controller, *others = controller_ports(3)
    credentials = group_credentials(tmp_path)
    secret_path = credentials["controllerPeerSecretFile"]
    ports = {"status": free_port(), "metrics": free_port()}
    server = start_server({
        "routeReadWorkers": "1", "statusListenPort": str(ports["status"]),
        "prometheusListenPort": str(ports["metrics"]), "addressServiceNamesrvAddr": "127.0.0.1:1",
        "enableControllerInNamesrv": "true", "controllerDLegerSelfId": "n0", "controllerDLegerGroup": "g",
        "controllerDLegerPeers": ";".join("n%d-127.0.0.1:%d" % item for item in enumerate([controller, *others])),
        "controllerStorePath": str(tmp_path / "controller"), **credentials})
    with BlockingRemotingClient("127.0.0.1", server.port) as broker:
        assert broker.call(register_request("C", "broker-h", "127.0.0.1:10911",
                                            topics=["Hostile1", "Hostile2"])).code == ResponseCode.SUCCESS
        tcp = {"remoting": server.port, "controller": controller, **ports}
        for name, port in tcp.items():
            for attack, data in _attacks(marker).items():
                _send(("127.0.0.1", port), data)
        sockets = glob.glob(os.path.join(str(tmp_path), "**", "*.sock"), recursive=True)
        assert sockets, "no UNIX socket found to attack"
        for path in sockets:
            for attack, data in _attacks(marker).items():
                try:
                    _send(path, data, socket.AF_UNIX)
                except OSError:
                    pass
        assert _replayed_member_frames(controller, open(secret_path, "rb").read().strip())
        time.sleep(1.0)
        assert not os.path.exists(marker), "a pickle sent to a port ran code in the server"
        assert server.process.poll() is None
        with BlockingRemotingClient("127.0.0.1", server.port) as reader:
            route = reader.call(route_request("Hostile1"))
            assert route.code == ResponseCode.SUCCESS
        with BlockingRemotingClient("127.0.0.1", controller) as admin:
            meta = admin.call(make_request(RequestCode.CONTROLLER_GET_METADATA_INFO))
            assert meta.code == ResponseCode.SUCCESS and meta.ext["group"] == "g"
    log = server.log()
    refusals = [line for line in log.splitlines() if "member link from" in line]
    assert refusals, "the controller port's refusals were not logged"
    assert len(refusals) == len(set(line.split("closed: ", 1)[1] for line in refusals)), \
        "one refusal reason was logged more than once"
    assert "Traceback" not in log
